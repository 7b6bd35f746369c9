"""The ``layersearch`` command: arguments → api → rich tables for people, JSON for machines.

Errors are one line on stderr (or a JSON object with ``--json``) and a non-zero
exit; a traceback only with LAYERSEARCH_DEBUG=1.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

# Before numpy loads (the CLI and the MCP server it starts begin here): one BLAS thread
# unless the user chose otherwise. Our matrix-vector products gain nothing from more, and
# OpenBLAS's spinning workers take the core the next step of a search needs (docs/vault.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from layersearch.errors import ConfigError, LayersearchError  # noqa: E402

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2
EXIT_INTERNAL = 1
EXIT_BROKEN_PIPE = 141


class Ctx:
    def __init__(
        self,
        store: str | None,
        verbose: bool,
        embedder: str | None = None,
        config: str | None = None,
    ) -> None:
        self.store = store
        self.verbose = verbose
        self.embedder = embedder
        self.embedder_options: dict[str, Any] | None = None
        self.config = config
        #: where the store setting came from, for --verbose
        self.store_origin = "--store or LAYERSEARCH_STORE" if store else "the default"
        self._ls: Any = None

    def settings(self) -> Any:
        """layersearch.toml (or --config / $LAYERSEARCH_CONFIG) under the command-line flags."""
        from layersearch.config import load_settings

        settings = load_settings(self.config)
        if self.store is None:
            self.store = settings.store
            self.store_origin = f"from {settings.source}" if settings.store else "the default"
        if self.embedder is None:
            self.embedder = settings.embedder
        if self.embedder == settings.embedder:
            self.embedder_options = dict(settings.embedder_options or {}) or None
        return settings

    def api(self, *, create: bool = False) -> Any:
        """The API on the configured store. Only commands that write pass ``create``: a
        read on a store that does not exist is an error naming it, and creates nothing."""
        if self._ls is None:
            from layersearch.api import Layersearch, resolve_store_location

            self.settings()
            location = resolve_store_location(self.store)
            self._ls = Layersearch(
                location,
                create=create,
                embedder=self.embedder,
                embedder_config=self.embedder_options,
            )
            shown = self._ls.store.location
            if "://" not in shown:
                shown = str(Path(shown).absolute())
            logging.getLogger("layersearch.cli").info("store %s (%s)", shown, self.store_origin)
        return self._ls

    def read_api(self) -> Any:
        """The API for a command that reads the semantic layer or memories: a store that
        holds neither is an error saying how to fill it."""
        ls = self.api()
        ls.require_content()
        return ls


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    width = _terminal_width()
    console = Console(stderr=stderr, soft_wrap=False, highlight=False, width=width)
    if not stderr:
        # rich's own handling exits with status 1; a closed pipe is not a failure.
        console.on_broken_pipe = _stdout_closed  # type: ignore[method-assign]
    return console


def _terminal_width() -> int:
    """$COLUMNS, else the terminal's width: stdout's, or stderr's when stdout is a pipe
    (``layersearch memory list | head`` is read in that terminal); else 160 (no terminal
    at all, as in CI: a wide fallback rather than rich's 80 columns)."""
    import shutil

    size = shutil.get_terminal_size(fallback=(0, 0)).columns  # $COLUMNS, then stdout
    if size > 0:
        return size
    try:
        return os.get_terminal_size(sys.__stderr__.fileno()).columns if sys.__stderr__ else 160
    except (OSError, ValueError):
        return 160


def _with_embedder(obj: Ctx) -> Any:
    """The API, for a command that cannot do anything without an embedder."""
    ls = obj.api()
    if ls.embedder is None:
        raise ConfigError(
            "no embedder configured: pass --embedder local|fake|litellm:<model> "
            "or set LAYERSEARCH_EMBEDDER"
        )
    return ls


def emit_json(obj: Any) -> None:
    """Pydantic models, lists of them, or plain data → one JSON document on stdout."""

    def plain(o: Any) -> Any:
        if hasattr(o, "model_dump"):
            return o.model_dump(mode="json")
        if isinstance(o, list):
            return [plain(x) for x in o]
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items()}
        return o

    sys.stdout.write(json.dumps(plain(obj), ensure_ascii=False, indent=2) + "\n")


def handle_errors(fn: F) -> F:
    """One clear line and a non-zero exit for every failure; never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return fn(*args, **kwargs)
        except LayersearchError as exc:
            _fail(exc.code, str(exc), as_json, EXIT_USER_ERROR)
        except KeyboardInterrupt:
            _fail("interrupted", "interrupted", as_json, 130)
        except (click.exceptions.Exit, click.ClickException, BrokenPipeError):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence for a CLI
            if os.environ.get("LAYERSEARCH_DEBUG"):
                raise
            from layersearch.errors import disk_full_error, is_disk_full

            if is_disk_full(exc):
                full = disk_full_error(getattr(exc, "filename", None) or "the store", exc)
                _fail(full.code, str(full), as_json, EXIT_USER_ERROR)
            _fail(
                "internal_error",
                f"internal error: {type(exc).__name__}: {exc} (set LAYERSEARCH_DEBUG=1 for a traceback)",
                as_json,
                EXIT_INTERNAL,
            )

    return wrapper  # type: ignore[return-value]


def _fail(code: str, message: str, as_json: bool, exit_code: int) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        first, *rest = message.splitlines() or [""]
        click.echo(f"error: {first}", err=True)
        for line in rest:
            click.echo(line, err=True)
    sys.exit(exit_code)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


def _parse_json_arg(text: str | None, what: str) -> Any:
    if text is None:
        return None
    from layersearch.jsonlimits import load_json

    try:
        return load_json(text, what)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what} is not valid JSON: {exc.msg} at column {exc.colno}") from exc


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; v is JSON when it parses (numbers, lists, true), else a string."""
    from layersearch.jsonlimits import load_json

    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--param '{pair}' must look like name=value")
        k, v = pair.split("=", 1)
        try:
            out[k.strip()] = load_json(v, f"--param {k.strip()}")
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out


class _Cli(click.Group):
    """The root group: usage errors click finds itself (a value that is not an integer, a
    choice that is not offered) follow the same contract as ours: exit 2 and one
    ``error: …`` line on stderr, or a JSON error object on stdout under ``--json``."""

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(argv, prog_name, complete_var, False, **extra)
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_closed()
        except click.UsageError as exc:
            _usage_error(_suggest_option(exc), "--json" in argv)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # Without standalone mode click returns --help/--version's exit code instead of exiting.
        sys.exit(rv if isinstance(rv, int) else 0)

    # A closed stdout is caught here, before click's main turns it into exit status 1.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            _stdout_closed()
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _stdout_closed()
            raise


def _stdout_closed() -> None:
    """The reader of stdout went away (``layersearch memory list | head``): stop quietly,
    with the exit status of a process killed by SIGPIPE (128 + 13), as ``git`` or ``cat``
    end in the same pipe. Python's own flush at exit would fail again on the closed pipe,
    so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (an in-process runner)
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def _suggest_option(exc: click.UsageError) -> click.UsageError:
    """The error with a "did you mean" for an unknown option click found no close match
    for: an abbreviation (``--max`` for ``--max-results``) or a looser misspelling."""
    if not isinstance(exc, click.NoSuchOption) or exc.possibilities or exc.ctx is None:
        return exc
    import difflib

    given = exc.option_name
    names = sorted(
        {
            opt
            for param in exc.ctx.command.get_params(exc.ctx)
            if isinstance(param, click.Option)
            for opt in (*param.opts, *param.secondary_opts)
            if opt.startswith("--")
        }
    )
    found = [n for n in names if n.startswith(given)] if given.startswith("--") else []
    found = found or difflib.get_close_matches(given, names, n=3, cutoff=0.5)
    if not found:
        return exc
    from click.exceptions import _format_possibilities  # click's own wording

    return click.UsageError(f"{exc.format_message()} {_format_possibilities(found)}", exc.ctx)


def _usage_error(exc: click.UsageError, as_json: bool) -> None:
    if as_json:
        _fail("usage", exc.format_message(), True, EXIT_USER_ERROR)
    click.echo(f"error: {exc.format_message()}", err=True)
    if exc.ctx is not None:
        click.echo(exc.ctx.get_usage(), err=True)
    sys.exit(EXIT_USER_ERROR)


@click.group(
    cls=_Cli,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--store",
    envvar="LAYERSEARCH_STORE",
    default=None,
    help="Store: a DuckDB file (default ./.layersearch/store.duckdb) or postgresql://… [env LAYERSEARCH_STORE]",
)
@click.option(
    "--embedder",
    envvar="LAYERSEARCH_EMBEDDER",
    default=None,
    help="Dense channel: local | local:<model> | litellm:<model> | fake [env LAYERSEARCH_EMBEDDER]",
)
@click.option(
    "--config",
    "config_path",
    envvar="LAYERSEARCH_CONFIG",
    default=None,
    help="Settings file (default ./layersearch.toml when present) [env LAYERSEARCH_CONFIG]",
)
@click.option("-v", "--verbose", is_flag=True, help="Log progress and details to stderr.")
@click.version_option(package_name="layersearch")
@click.pass_context
def main(
    ctx: click.Context,
    store: str | None,
    embedder: str | None,
    config_path: str | None,
    verbose: bool,
) -> None:
    """Find the right semantic-layer context before writing a query."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    ctx.obj = Ctx(store, verbose, embedder, config_path)


@main.command()
@json_option
@click.pass_obj
@handle_errors
def init(obj: Ctx, as_json: bool) -> None:
    """Create an empty store (nothing happens if it exists)."""
    ls = obj.api(create=True)
    gen = ls.store.generation()
    info = {"store": ls.store.location, "generation": gen}
    if as_json:
        emit_json(info)
    else:
        click.echo(f"store ready at {ls.store.location}")


@main.command()
@click.argument("path")
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    # layersearch.semantic.importers.FORMATS, spelled out so the CLI starts without
    # importing the importers (a test keeps the two equal)
    type=click.Choice(
        [
            "auto",
            "native",
            "slayer",
            "dbt",
            "dbt-manifest",
            "cube",
            "lookml",
            "osi",
            "spider",
            "database",
        ]
    ),
    help="Input format.",
)
@click.option(
    "--datasource", default=None, help="Datasource name for formats that do not carry one."
)
@click.option(
    "--sample-values",
    default=0,
    show_default=True,
    type=click.IntRange(0, 10_000),
    help="Databases: sample up to N distinct values per text column.",
)
@click.option("--no-embed", is_flag=True, help="Do not compute vectors even with an embedder.")
@json_option
@click.pass_obj
@handle_errors
def load(
    obj: Ctx,
    path: str,
    fmt: str,
    datasource: str | None,
    sample_values: int,
    no_embed: bool,
    as_json: bool,
) -> None:
    """Load or re-load a semantic layer; memories are kept.

    With an embedder configured, the vectors of what changed are computed then (as
    `layersearch embed` does)."""
    ls = obj.api(create=True)
    with _status(f"loading {path}", as_json):
        report = ls.load(path, fmt, datasource=datasource, sample_values=sample_values)
    embedded = None
    if ls.embedder is not None and not no_embed:
        with Progress("embedding", as_json) as progress:
            embedded = ls.embed(progress=progress)
    if as_json:
        # Without vectors computed, the report alone, as before.
        emit_json(report if embedded is None else {**report.model_dump(), "embedded": embedded})
        return
    click.echo(
        f"loaded {_datasources(report.datasources)}: {report.entities} entities in "
        f"{report.models} models; {report.memories_added} memories added"
    )
    for r in embedded or []:
        click.echo(
            f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged, {r.pruned} pruned, "
            f"{len(r.failed)} failed — {r.model}"
        )
        for f in r.failed:
            click.echo(f"failed: {f}", err=True)
    for s in report.skipped:
        click.echo(f"skipped: {s}", err=True)
    for t in report.unresolved_tags:
        click.echo(f"tag no longer resolves: {t}", err=True)


def _datasources(names: list[str]) -> str:
    """``finance, marketing, shop``; a long list as ``166 datasources (academic, …)``."""
    if len(names) <= 4:
        return ", ".join(names) or "no datasource"
    return f"{len(names)} datasources ({', '.join(names[:2])}, …)"


class _status:
    """A spinner on stderr for long work (people only; silent with --json or no TTY)."""

    def __init__(self, text: str, quiet: bool) -> None:
        self.text = text
        self.quiet = quiet or not sys.stderr.isatty()
        self._cm: Any = None

    def __enter__(self) -> None:
        if not self.quiet:
            self._cm = _console(stderr=True).status(self.text)
            self._cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)


@main.command()
@click.argument("question", required=False)
@click.option(
    "--question", "-q", "question_opt", default=None, help="The question (same as the argument)."
)
@click.option("--entity", "-e", "entities", multiple=True, help="Entity name or id (repeatable).")
@click.option(
    "--query", "query_json", default=None, help="Example-query JSON whose entities count."
)
@click.option("--datasource", "-d", default=None, help="Scope every channel to one datasource.")
@click.option(
    "--filter", "cypher", default=None, help="Read-only openCypher filter returning `id`."
)
@click.option("--param", "params", multiple=True, help="Filter parameter name=value (repeatable).")
@click.option("--max-results", "-n", default=10, show_default=True, type=int, help="How many hits.")
@click.option(
    "--max-entities", type=int, default=None, help="Also list this many entities, ranked alone."
)
@click.option(
    "--max-memories", type=int, default=None, help="Also list this many notes, ranked alone."
)
@click.option(
    "--max-example-queries",
    type=int,
    default=None,
    help="Also list this many example queries, ranked alone.",
)
@click.option("--channels", default=None, help="Comma-separated subset of bm25,fulltext,vector.")
@click.option("--full", is_flag=True, help="Show each hit's whole text.")
@click.option("--explain", is_flag=True, help="Show which channels ranked each hit.")
@json_option
@click.pass_obj
@handle_errors
def search(
    obj: Ctx,
    question: str | None,
    question_opt: str | None,
    entities: tuple[str, ...],
    query_json: str | None,
    datasource: str | None,
    cypher: str | None,
    params: tuple[str, ...],
    max_results: int,
    max_entities: int | None,
    max_memories: int | None,
    max_example_queries: int | None,
    channels: str | None,
    full: bool,
    explain: bool,
    as_json: bool,
) -> None:
    """Search entities and memories by question or entity names.

    Give a question, --entity names, or both."""
    from layersearch.types import SearchRequest

    if question is not None and question_opt is not None:
        raise ConfigError("give the question once: as the argument or with --question")
    question = question if question is not None else question_opt
    query = _parse_json_arg(query_json, "--query")
    if query is not None and not isinstance(query, dict):
        raise ConfigError('--query must be a JSON object, e.g. \'{"measures": ["total_revenue"]}\'')
    req = SearchRequest(
        entities=list(entities) or None,
        query=query,
        question=question,
        datasource=datasource,
        max_results=max_results,
        compact=not full,
        cypher_filter=cypher,
        params=_parse_params(params) or None,
        explain=explain,
        channels=[c.strip() for c in channels.split(",") if c.strip()] if channels else None,
        max_entities=max_entities,
        max_memories=max_memories,
        max_example_queries=max_example_queries,
    )
    resp = obj.read_api().search(req)
    if as_json:
        emit_json(resp)
        return
    _print_hits(resp, full=full, explain=explain)
    for title, bucket in (
        ("entities", resp.entities),
        ("memories", resp.memories),
        ("example queries", resp.example_queries),
    ):
        if bucket is not None:
            _console().print(f"\n[bold]{title}[/]", markup=True)
            _print_hits(
                type(resp)(results=bucket, warnings=[]), full=full, explain=explain, empty=title
            )


def _print_hits(resp: Any, *, full: bool, explain: bool, empty: str | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    from layersearch.ranking.explain import explain_text

    con = _console()
    err = _console(stderr=True)
    for w in resp.warnings:
        err.print(f"[yellow]warning:[/] {w}", markup=True, highlight=False)
    if not resp.results:
        err.print(f"no {empty}" if empty else "no results")
        return
    if full:
        for i, h in enumerate(resp.results, 1):
            con.print(f"[bold]{i}. {h.kind} {h.id}[/]  score {h.score:.4f}", markup=True)
            if explain and h.explanation:
                con.print(f"   why: {explain_text(h.explanation)}", markup=False)
            con.print(h.text or h.description, markup=False)
            con.print()
        return
    if con.width < WIDE:
        _print_narrow_hits(con, resp.results, explain=explain)
        return
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("description")
    if explain:
        table.add_column("why", no_wrap=True)
    for i, h in enumerate(resp.results, 1):
        row = [str(i), h.kind, h.id, f"{h.score:.4f}", _one_line(h.description)]
        if explain:
            row.append(_why(h))
        # Text, not markup: a description's "[decimal(18,2)]" is not a style tag.
        table.add_row(*(Text(cell) for cell in row))
    con.print(table)


#: Terminal width from which hit tables show every column and wrap long descriptions.
WIDE = 120


def _print_narrow_hits(con: Any, hits: list[Any], *, explain: bool) -> None:
    """One line per hit for a terminal narrower than WIDE: the score column (the least
    useful to a person: the order already says it) is dropped and the description cut
    with an ellipsis at the edge (``--full`` shows it whole); with ``explain`` the
    channels that ranked a hit go on the line below it."""
    from rich.cells import cell_len
    from rich.text import Text

    rows = [(str(i), h.kind, h.id, _one_line(h.description)) for i, h in enumerate(hits, 1)]
    w_num = max(len(r[0]) for r in rows)
    w_kind = max(len("kind"), *(len(r[1]) for r in rows))
    w_id = max(len(r[2]) for r in rows)
    indent = w_num + 2 + w_kind + 2

    def line(num: str, kind: str, ident: str, desc: str) -> str:
        head = f"{num:>{w_num}}  {kind:<{w_kind}}  {ident:<{w_id}}  "
        room = con.width - cell_len(head)
        if room < 8:  # an id as wide as the terminal: the description on its own
            return head.rstrip()
        return (head + _cut(desc, room)).rstrip()

    con.print(Text(line("#", "kind", "id", "description"), style="bold"), soft_wrap=True)
    for (num, kind, ident, desc), hit in zip(rows, hits, strict=True):
        con.print(line(num, kind, ident, desc), markup=False, soft_wrap=True)
        if explain:
            why = Text(f"why: {_why(hit)}", style="dim")
            for part in why.wrap(con, max(con.width - indent, 20)):
                con.print(Text(" " * indent) + part, soft_wrap=True)


def _cut(line: str, width: int) -> str:
    """``line`` cut with an ellipsis to ``width`` terminal cells."""
    from rich.cells import cell_len, set_cell_size

    return line if cell_len(line) <= width else set_cell_size(line, width - 1) + "…"


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _why(hit: Any) -> str:
    from layersearch.ranking.explain import explain_text

    return explain_text(hit.explanation or [])


@main.command()
@click.argument("ids", nargs=-1, required=True)
@json_option
@click.pass_obj
@handle_errors
def inspect(obj: Ctx, ids: tuple[str, ...], as_json: bool) -> None:
    """Full detail for entity ids and memory:<n> ids."""
    resp = obj.read_api().inspect(list(ids))
    if as_json:
        emit_json(resp)
        return
    con = _console()
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)
    for e in resp.entities:
        con.print(f"[bold]{e.kind} {e.id}[/]" + ("  (hidden)" if e.hidden else ""), markup=True)
        for key in ("label", "data_type", "description", "formula"):
            value = getattr(e, key)
            if value:
                _detail(con, f"  {key}: {value}")
        if e.primary_key:
            _detail(con, "  primary key")
        if e.values:
            _detail(con, "  values: " + ", ".join(e.values[:20]))
        for j in e.joins:
            _detail(con, f"  joins {j['target']} ({j.get('cardinality') or 'unknown'})")
        if e.references:
            _detail(con, "  references: " + ", ".join(e.references))
        if e.children:
            _detail(con, f"  contains {len(e.children)}: " + ", ".join(e.children[:30]))
        if e.memories:
            _detail(con, "  memories: " + ", ".join(e.memories))
    for m in resp.memories:
        _print_memory(m)


def _detail(con: Any, line: str) -> None:
    """An indented detail line wrapped at the terminal width, its continuation lines
    indented two more (the terminal's own wrap would start them at column 0)."""
    import textwrap

    indent = len(line) - len(line.lstrip(" "))
    for part in line.strip(" ").splitlines() or [""]:
        wrapped = textwrap.wrap(
            part,
            width=max(con.width, 40),
            initial_indent=" " * indent,
            subsequent_indent=" " * (indent + 2),
            break_long_words=False,
            break_on_hyphens=False,
        )
        for out in wrapped or [""]:
            con.print(out, markup=False, highlight=False, soft_wrap=True)


def _print_memory(m: Any) -> None:
    con = _console()
    con.print(f"[bold]{m.id}[/]  {m.created_at:%Y-%m-%d %H:%M}", markup=True)
    _detail(con, f"  {m.learning}")
    if m.description:
        _detail(con, f"  description: {m.description}")
    if m.entities:
        _detail(con, "  entities: " + ", ".join(m.entities))
    if m.query:
        _detail(con, "  query: " + json.dumps(m.query, sort_keys=True))


@main.group()
def memory() -> None:
    """Save, list, show and forget memories.

    A memory is a note or an example query saved against semantic-layer entities."""


@memory.command("add")
@click.argument("learning")
@click.option("--entity", "-e", "entities", multiple=True, help="Entity it is about (repeatable).")
@click.option("--description", default=None, help="Short description (≤ 500 characters).")
@click.option("--query", "query_json", default=None, help="Example query as JSON.")
@json_option
@click.pass_obj
@handle_errors
def memory_add(
    obj: Ctx,
    learning: str,
    entities: tuple[str, ...],
    description: str | None,
    query_json: str | None,
    as_json: bool,
) -> None:
    """Save a memory against entities."""
    query = _parse_json_arg(query_json, "--query")
    if query is not None and not isinstance(query, dict):
        raise ConfigError("--query must be a JSON object")
    m = obj.api(create=True).save_memory(
        learning, description=description, entities=list(entities), query=query
    )
    if as_json:
        emit_json(m)
    else:
        click.echo(f"saved {m.id}" + (f" on {', '.join(m.entities)}" if m.entities else ""))


@memory.command("list")
@click.option("--limit", default=50, show_default=True, type=int)
@click.option("--offset", default=0, show_default=True, type=int)
@json_option
@click.pass_obj
@handle_errors
def memory_list(obj: Ctx, limit: int, offset: int, as_json: bool) -> None:
    """Memories, newest first."""
    items = obj.read_api().list_memories(limit=limit, offset=offset)
    if as_json:
        emit_json(items)
        return
    if not items:
        click.echo("no memories", err=True)
    width = _console().width
    for m in items:
        ents = f"  [{', '.join(m.entities)}]" if m.entities else ""
        click.echo(_cut(f"{m.id:<12} {' '.join(m.learning.split())[:100]}{ents}", width))


@memory.command("show")
@click.argument("memory_id")
@json_option
@click.pass_obj
@handle_errors
def memory_show(obj: Ctx, memory_id: str, as_json: bool) -> None:
    """One memory in full."""
    m = obj.read_api().get_memory(memory_id)
    if as_json:
        emit_json(m)
    else:
        _print_memory(m)


@memory.command("forget")
@click.argument("memory_id")
@json_option
@click.pass_obj
@handle_errors
def memory_forget(obj: Ctx, memory_id: str, as_json: bool) -> None:
    """Delete a memory."""
    obj.read_api().forget_memory(memory_id)
    if as_json:
        emit_json({"forgotten": memory_id})
    else:
        click.echo(f"forgot {memory_id}")


def bundled_models() -> Path:
    """The sample semantic layer: ./models, else the one in the source checkout."""
    here = Path("models")
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "models"


DEMO_SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"entities": ["orders.order_total"], "question": "tax", "explain": True},
    {"entities": ["shop.orders.net_revenue"]},
    {"question": "which marketing campaigns brought signups"},
]


@main.command()
@click.option(
    "--models",
    "models_path",
    default=None,
    help="Semantic layer to demo on (default: the bundled models/).",
)
@json_option
@handle_errors
def demo(models_path: str | None, as_json: bool) -> None:
    """Run sample searches on the bundled models.

    Loads the sample semantic layer into a temporary store (yours is not touched) and
    prints a few searches with their results."""
    from layersearch.api import Layersearch
    from layersearch.types import SearchRequest

    path = Path(models_path) if models_path else bundled_models()
    if not path.exists():
        raise ConfigError(f"no models at {path}: pass --models PATH")
    out: list[dict[str, Any]] = []
    with Layersearch(":memory:") as ls:
        report = ls.load(path)
        if not as_json:
            click.echo(
                f"loaded {report.entities} entities, {report.memories_added} memories from {path} "
                "into a temporary store\n"
            )
        for kwargs in DEMO_SEARCHES:
            req = SearchRequest(**kwargs)
            resp = ls.search(req)
            out.append(
                {
                    "request": req.model_dump(exclude_none=True, exclude_defaults=True),
                    "response": resp,
                }
            )
            if not as_json:
                args = (
                    " ".join([f'"{req.question}"'] if req.question else [])
                    + "".join(f" --entity {e}" for e in req.entities or [])
                    + (" --explain" if req.explain else "")
                )
                click.echo(f"$ layersearch search {args.strip()}")
                _print_hits(resp, full=False, explain=req.explain)
                click.echo()
    if as_json:
        emit_json({"loaded": report, "searches": out})


# ----------------------------------------------------------------------------------------------
# embed command: dense vectors (layersearch embed)
# ----------------------------------------------------------------------------------------------


class Progress:
    """A rich progress bar on stderr for people; nothing with --json or without a terminal."""

    def __init__(self, label: str, quiet: bool) -> None:
        self.label = label
        self.quiet = quiet or not sys.stderr.isatty()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=_console(stderr=True),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None)
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


@main.command()
@json_option
@click.pass_obj
@handle_errors
def embed(obj: Ctx, as_json: bool) -> None:
    """Compute the stored vectors for the dense channel.

    Uses the configured embedder (--embedder); incremental and resumable."""
    ls = _with_embedder(obj)
    with Progress("embedding", as_json) as progress:
        reports = ls.embed(progress=progress)
    if as_json:
        emit_json(reports)
        return
    for r in reports:
        click.echo(
            f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged (skipped), "
            f"{r.pruned} pruned, {len(r.failed)} failed — {r.model}"
        )
        for f in r.failed:
            click.echo(f"failed: {f}", err=True)


# ----------------------------------------------------------------------------------------------
# eval commands: layersearch eval schema-linking | conversations
# ----------------------------------------------------------------------------------------------


@main.group("eval")
def eval_group() -> None:
    """Measure search quality on labelled questions."""


@contextlib.contextmanager
def _catalog_store(obj: Ctx, catalog_path: str, as_json: bool) -> Iterator[Any]:
    """A throwaway in-memory store holding the catalog (and, with an embedder, its
    vectors), for an evaluation."""
    from layersearch.api import Layersearch

    obj.settings()
    with Layersearch(":memory:", embedder=obj.embedder, embedder_config=obj.embedder_options) as ls:
        with _status(f"loading {catalog_path}", as_json):
            ls.load(catalog_path)
            ls.corpus()
        if ls.embedder is not None:
            with Progress("embedding the catalog", as_json) as progress:
                ls.embed(progress=progress)
        yield ls


@eval_group.command("schema-linking")
@click.option(
    "--catalog", "catalog_path", required=True, help="Catalog in any format `load` reads."
)
@click.option(
    "--questions",
    "questions_path",
    required=True,
    help="JSONL (question, db_id, gold_tables, gold_columns[, evidence]) or a Spider dev.json.",
)
@click.option(
    "--mode",
    default="catalog",
    show_default=True,
    type=click.Choice(["catalog", "scoped"]),
    help="catalog: no hint; scoped: the gold database as the datasource filter.",
)
@click.option(
    "--channels",
    "channel_sets",
    multiple=True,
    help="Comma list of bm25,fulltext,vector; repeat to compare sets (default: all that run).",
)
@click.option(
    "--half",
    default=None,
    type=click.Choice(["A", "B"], case_sensitive=False),
    help="Only half A (the first ceil(n/2) questions in file order) or half B (the rest).",
)
@click.option(
    "--limit",
    default=None,
    type=click.IntRange(1),
    help="Only the first N questions (of the half).",
)
@click.option("--details", "details_path", default=None, help="Write per-question JSONL here.")
@click.option("--plot", "plot_path", default=None, help="Draw recall@k curves to this PNG.")
@json_option
@click.pass_obj
@handle_errors
def eval_schema_linking(
    obj: Ctx,
    catalog_path: str,
    questions_path: str,
    mode: str,
    channel_sets: tuple[str, ...],
    half: str | None,
    limit: int | None,
    details_path: str | None,
    plot_path: str | None,
    as_json: bool,
) -> None:
    """Table and column recall of search on labelled questions."""
    from layersearch.eval.schema_linking import (
        parse_channel_sets,
        plot_recall,
        read_questions,
        run_schema_linking,
        select_half,
        write_details,
    )

    sets = parse_channel_sets(channel_sets)
    questions = select_half(read_questions(questions_path, catalog_path), half)[:limit]
    with (
        _catalog_store(obj, catalog_path, as_json) as ls,
        _eval_progress(len(questions) * len(sets), as_json) as advance,
    ):
        results = run_schema_linking(ls, questions, mode=mode, channel_sets=sets, progress=advance)
    if details_path:
        write_details(results, details_path)
    if plot_path:
        plot_recall(results, plot_path, title=f"{Path(catalog_path).name}, {mode} mode")
    if as_json:
        if len(results) == 1:
            emit_json({**results[0].summary(), "mode": mode})
        else:
            emit_json({"mode": mode, "runs": [r.summary() for r in results]})
        return
    _print_eval(results, mode)


@eval_group.command("examples")
@click.option(
    "--catalog", "catalog_path", required=True, help="Catalog in any format `load` reads."
)
@click.option(
    "--pairs",
    "pairs_path",
    required=True,
    help="JSONL: db_id, question, original_question, sql, gold_tables, gold_columns.",
)
@click.option(
    "--ask",
    default="question",
    show_default=True,
    type=click.Choice(["question", "original_question"]),
    help="Which text is asked (the saved example is always original_question).",
)
@click.option(
    "--channels", default=None, help="Comma list of bm25,fulltext,vector (default: all that run)."
)
@click.option(
    "--half", type=click.Choice(["A", "B"]), default=None, help="Even (A) or odd (B) pairs."
)
@click.option("--limit", default=None, type=click.IntRange(1), help="Only the first N pairs.")
@click.option("--details", "details_path", default=None, help="Write per-pair JSONL here.")
@json_option
@click.pass_obj
@handle_errors
def eval_examples(
    obj: Ctx,
    catalog_path: str,
    pairs_path: str,
    ask: str,
    channels: str | None,
    half: str | None,
    limit: int | None,
    details_path: str | None,
    as_json: bool,
) -> None:
    """Measure whether saved example queries come back."""
    from layersearch.eval.examples import read_pairs, run_examples
    from layersearch.eval.schema_linking import parse_channel_sets, select_half

    (chosen,) = parse_channel_sets([channels] if channels else None)
    pairs = select_half(read_pairs(pairs_path), half)[:limit]
    with (
        _catalog_store(obj, catalog_path, as_json) as ls,
        _eval_progress(len(pairs) * 2, as_json) as advance,
    ):
        result = run_examples(
            ls,
            pairs,
            ask=ask,
            channels=chosen,
            progress=lambda stage, done, total: advance(
                done + (total if stage.endswith("with memories") else 0)
            ),
        )
    if details_path:
        with Path(details_path).open("w", encoding="utf-8") as fh:
            for row in result.details:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {**result.summary(), "ask": ask, "channels": channels or "default"}
    if as_json:
        emit_json(summary)
        return
    from rich.table import Table

    table = Table(title=f"example queries, asked with {ask}", show_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    _console().print(table)


@eval_group.command("abbreviate-catalog")
@click.option("--catalog", "catalog_path", required=True, help="A Spider tables.json.")
@click.option(
    "--questions",
    "questions_path",
    default=None,
    help="Questions to map along: a Spider dev.json or JSONL (question, db_id, gold ids).",
)
@click.option("--out-catalog", required=True, help="Where to write the abbreviated tables.json.")
@click.option("--out-questions", default=None, help="Where to write the mapped questions (JSONL).")
@json_option
@click.pass_obj
@handle_errors
def eval_abbreviate_catalog(
    obj: Ctx,
    catalog_path: str,
    questions_path: str | None,
    out_catalog: str,
    out_questions: str | None,
    as_json: bool,
) -> None:
    """Write an abbreviated copy of a Spider catalog.

    Every word over 4 letters keeps its first letter, then its consonants, at most 4
    (facility -> fclt); the rule is in layersearch.eval.abbreviate."""
    from layersearch.eval.abbreviate import write_abbreviated

    n_db, n_q = write_abbreviated(catalog_path, questions_path, out_catalog, out_questions)
    if as_json:
        emit_json(
            {
                "databases": n_db,
                "catalog": out_catalog,
                "questions": n_q if out_questions else None,
                "questions_file": out_questions,
            }
        )
        return
    click.echo(
        f"wrote {n_db} databases to {out_catalog}"
        + (f" and {n_q} questions to {out_questions}" if out_questions else ""),
        err=True,
    )


@eval_group.command("layers")
@click.option("--data", "data_dir", required=True, help="The folder holding the samples.")
@click.option(
    "--questions",
    "questions_path",
    required=True,
    help="JSONL of {sample, question, gold}: e.g. tests/eval_data/semantic_layers.jsonl.",
)
@click.option(
    "--channels", default=None, help="Comma list of bm25,fulltext,vector (default: all that run)."
)
@click.option("--details", is_flag=True, help="List each question's rank and first hits.")
@json_option
@click.pass_obj
@handle_errors
def eval_layers(
    obj: Ctx,
    data_dir: str,
    questions_path: str,
    channels: str | None,
    details: bool,
    as_json: bool,
) -> None:
    """Measure column recall on imported semantic layers."""
    from layersearch.eval.layers import read_layer_questions, run_layers
    from layersearch.eval.schema_linking import parse_channel_sets

    (chosen,) = parse_channel_sets([channels] if channels else None)
    obj.settings()
    with _status("loading the samples and asking", as_json):
        result = run_layers(
            data_dir, read_layer_questions(questions_path), channels=chosen, embedder=obj.embedder
        )
    if as_json:
        emit_json(result if details else result["summary"])
        return
    from rich.table import Table

    table = Table(title="imported layers: column recall", show_edge=False)
    table.add_column("sample")
    table.add_column("questions", justify="right")
    keys = [k for k in next(iter(result["summary"].values())) if k != "questions"]
    for k in keys:
        table.add_column(k, justify="right")
    for sample, row in result["summary"].items():
        table.add_row(sample, str(row["questions"]), *(f"{row[k]:.3f}" for k in keys))
    _console().print(table)
    if details:
        for r in result["questions"]:
            click.echo(f"{r['sample']}  {r['rank']}  {r['question']}  {', '.join(r['top'])}")


class _eval_progress:
    """A rich progress bar on stderr for people; a no-op callback otherwise."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total = total
        self.quiet = quiet or not sys.stderr.isatty()
        self._progress: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if self.quiet:
            return lambda _done: None
        from rich.progress import Progress

        self._progress = Progress(console=_console(stderr=True), transient=True)
        self._progress.__enter__()
        task = self._progress.add_task("asking questions", total=self.total)
        return lambda done: self._progress.update(task, completed=done)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


def _print_eval(results: list[Any], mode: str) -> None:
    from rich.table import Table

    con = _console()
    for res in results:
        table = Table(title=f"{res.label or 'no channel'} ({mode} mode)", show_edge=False)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in res.summary().items():
            if key == "channels":
                continue
            shown = (
                "n/a"
                if value is None
                else (f"{value:.3f}" if isinstance(value, float) else str(value))
            )
            table.add_row(key, shown)
        con.print(table)
        for w in res.warnings:
            click.echo(f"warning: {w}", err=True)
        con.print()


# ----------------------------------------------------------------------------------------------
# conversations and summaries commands
# ----------------------------------------------------------------------------------------------


def _conversation_formats() -> list[str]:
    from layersearch.corpora.conversations import FORMATS

    return ["auto", *sorted(FORMATS)]


def _limit_option(default: int) -> Callable[[F], F]:
    return click.option(
        "--limit", "-n", default=default, show_default=True, type=int, help="How many results."
    )


def _print_problems(problems: list[str]) -> None:
    for p in problems:
        click.echo(f"skipped: {p}", err=True)


@main.group()
def conversations() -> None:
    """Import and search past conversations.

    Chat exports (ChatGPT, Claude, Cursor, Gemini, …), agent sessions and LoCoMo files."""


@conversations.command("import")
@click.argument("path")
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    help="Export format: auto, chatgpt, claude, claude_code, cursor, gemini, generic, locomo.",
)
@click.option("--no-embed", is_flag=True, help="Do not compute vectors even with an embedder.")
@json_option
@click.pass_obj
@handle_errors
def conversations_import(obj: Ctx, path: str, fmt: str, no_embed: bool, as_json: bool) -> None:
    """Import a file or folder of chat exports.

    Idempotent: a newer export of the same conversations adds only what is new."""
    if fmt not in _conversation_formats():
        raise ConfigError(
            f"unknown format '{fmt}': use one of {', '.join(_conversation_formats())}"
        )
    ls = obj.api(create=True)
    with _status(f"reading {path}", as_json):
        from layersearch.corpora.conversations import import_conversations

        parsed = import_conversations(path, fmt)
    with Progress("importing", as_json) as progress:
        report = ls.conversations.import_conversations(
            parsed.conversations, problems=parsed.problems, progress=progress
        )
    embedded = []
    if ls.embedder is not None and not no_embed:
        with Progress("embedding", as_json) as progress:
            embedded = ls.conversations.embed(progress=progress)
    if as_json:
        emit_json({"import": report, "embedded": embedded})
        return
    click.echo(
        f"{report.conversations} conversations, {report.messages} messages read: "
        f"{report.conversations_added} conversations and {report.messages_added} messages added, "
        f"{report.conversations_updated} conversations updated, "
        f"{report.messages_removed} superseded messages removed; "
        f"{report.injected} injected messages kept out of search"
    )
    for r in embedded:
        click.echo(f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged — {r.model}")
    _print_problems(report.problems)


@conversations.command("embed")
@json_option
@click.pass_obj
@handle_errors
def conversations_embed(obj: Ctx, as_json: bool) -> None:
    """Compute message and summary vectors (incremental).

    Uses the configured embedder (--embedder)."""
    ls = _with_embedder(obj)
    with Progress("embedding", as_json) as progress:
        reports = ls.conversations.embed(progress=progress)
    if as_json:
        emit_json(reports)
        return
    for r in reports:
        click.echo(
            f"{r.corpus}: {r.embedded} embedded, {r.unchanged} unchanged, {r.pruned} pruned — {r.model}"
        )


@conversations.command("search")
@click.argument("term", required=False, default="")
@click.option("--role", default=None, help="Only messages by user or assistant.")
@_limit_option(15)
@json_option
@click.pass_obj
@handle_errors
def conversations_search(obj: Ctx, term: str, role: str | None, limit: int, as_json: bool) -> None:
    """Messages containing TERM, newest first.

    TERM is matched with SQL ILIKE (% and _ are wildcards). With no TERM and
    --role user: the most recent questions asked."""
    result = obj.api().conversations.search_conversations(term, limit=limit, role=role)
    if as_json:
        emit_json(result)
    else:
        click.echo(result.markdown)


@conversations.command("semantic")
@click.argument("query")
@_limit_option(10)
@json_option
@click.pass_obj
@handle_errors
def conversations_semantic(obj: Ctx, query: str, limit: int, as_json: bool) -> None:
    """Messages nearest in meaning to QUERY.

    Needs an embedder (--embedder) and `conversations embed`."""
    result = obj.api().conversations.semantic_search(query, limit=limit)
    if as_json:
        emit_json(result)
    else:
        click.echo(result.markdown)


@main.group()
def summaries() -> None:
    """Import and search conversation summaries."""


@summaries.command("import")
@click.argument("path")
@json_option
@click.pass_obj
@handle_errors
def summaries_import(obj: Ctx, path: str, as_json: bool) -> None:
    """Import conversation summaries from JSONL.

    The format is in docs/conversations.md; bad lines are reported, not imported."""
    ls = obj.api(create=True)
    report = ls.conversations.import_summaries(path)
    embedded = []
    if ls.embedder is not None:
        with Progress("embedding", as_json) as progress:
            embedded = ls.conversations.embed(progress=progress)
    if as_json:
        emit_json({"import": report, "embedded": embedded})
        return
    click.echo(
        f"{report.summaries} summaries read: {report.added} added, {report.updated} updated"
        + (
            f"; {report.unknown_conversations} for conversations not imported yet"
            if report.unknown_conversations
            else ""
        )
    )
    _print_problems(report.problems)


@summaries.command("search")
@click.argument("query", required=False, default="")
@click.option(
    "--extract",
    default="summary",
    show_default=True,
    help="summary, questions, decisions or quotes.",
)
@_limit_option(10)
@click.option("--domain", default=None, help="Domain contains this text.")
@click.option("--importance", default=None, help="breakthrough, significant or routine.")
@click.option(
    "--thinking-stage", default=None, help="exploring, crystallizing, refining or executing."
)
@click.option("--source", default=None, help="Conversation source (claude, chatgpt, …).")
@click.option("--mode", default="hybrid", show_default=True, help="hybrid, fts or vector.")
@json_option
@click.pass_obj
@handle_errors
def summaries_search(
    obj: Ctx,
    query: str,
    extract: str,
    limit: int,
    domain: str | None,
    importance: str | None,
    thinking_stage: str | None,
    source: str | None,
    mode: str,
    as_json: bool,
) -> None:
    """Summaries matching QUERY, projected to one field (--extract)."""
    result = obj.api().conversations.search_summaries(
        query,
        extract=extract,
        limit=limit,
        domain=domain,
        importance=importance,
        thinking_stage=thinking_stage,
        source=source,
        mode=mode,
    )
    if as_json:
        emit_json(result)
    else:
        click.echo(result.markdown)


@click.command("conversations")
@click.option("--locomo", "locomo", required=True, help="A LoCoMo file or folder of LoCoMo files.")
@click.option(
    "--channels",
    default=None,
    help="Comma-separated channel sets: fulltext, vector, fulltext+vector (default: all).",
)
@click.option(
    "--cache",
    default=None,
    help="Keep the evaluation store (and its vectors) in this folder between runs.",
)
@click.option(
    "--conversations",
    "chosen",
    default=None,
    help="Comma-separated sample ids (26,30) or 1-based positions in file order (default: all).",
)
@click.option(
    "--details",
    "details_path",
    default=None,
    type=click.Path(dir_okay=False, writable=True),
    help="Write one JSON line per question and channel set (ranked turns, metrics) here.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a message search setting, e.g. --set resolve_dates=true (repeatable).",
)
@json_option
@click.pass_obj
@handle_errors
def eval_conversations_cmd(
    obj: Ctx,
    locomo: str,
    channels: str | None,
    cache: str | None,
    chosen: str | None,
    details_path: str | None,
    overrides: tuple[str, ...],
    as_json: bool,
) -> None:
    """Message search recall and MRR on LoCoMo questions.

    recall_any / recall_all / evidence recall at 5, 10, 20 and MRR, overall and per
    category; the dense channel uses --embedder, else the local MiniLM model."""
    import contextlib

    from layersearch.embed import make_embedder
    from layersearch.eval.conversations import (
        CHANNEL_SETS,
        evaluate_locomo,
        parse_channel_sets,
        parse_config,
    )

    sets = parse_channel_sets(channels)
    config = parse_config(overrides)
    embedder = None
    if any("vector" in CHANNEL_SETS[s] for s in sets):
        embedder = make_embedder(obj.embedder or "local")
    with contextlib.ExitStack() as stack:
        write: Callable[[dict[str, Any]], None] | None = None
        if details_path is not None:
            try:
                out = stack.enter_context(open(details_path, "w", encoding="utf-8"))
            except OSError as exc:
                raise ConfigError(f"--details {details_path}: {exc.strerror}") from exc

            def _write(record: dict[str, Any]) -> None:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")

            write = _write

        with Progress("evaluating", as_json) as progress:
            result = evaluate_locomo(
                locomo,
                channel_sets=sets,
                embedder=embedder,
                config=config,
                store_dir=cache,
                conversations=chosen,
                progress=lambda _name, done, total: progress(done, total),
                details=write,
            )
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"{result['questions']} questions over {len(result['conversations'])} conversations"
        + (f"; dense: {result['embedder']}" if result["embedder"] else "")
    )
    columns = [
        f"{m}@{k}" for m in ("recall_any", "recall_all", "evidence_recall") for k in (5, 10, 20)
    ] + ["mrr"]
    click.echo("| channels | " + " | ".join(columns) + " |")
    click.echo("|---" * (len(columns) + 1) + "|")
    for name, r in result["channel_sets"].items():
        click.echo(f"| {name} | " + " | ".join(f"{r[c]:.3f}" for c in columns) + " |")
    top = result["channel_sets"].get(result["channel_set"])
    if top:
        click.echo(f"\nper category ({result['channel_set']}):")
        click.echo("| category | questions | " + " | ".join(columns) + " |")
        click.echo("|---" * (len(columns) + 2) + "|")
        for cat, r in top["per_category"].items():
            click.echo(
                f"| {cat} | {r['questions']} | " + " | ".join(f"{r[c]:.3f}" for c in columns) + " |"
            )
    for w in result["warnings"]:
        click.echo(f"warning: {w}", err=True)


def _register_eval_conversations() -> None:
    """Join the `eval` group (created here when the eval section did not define it)."""
    group = main.commands.get("eval")
    if not isinstance(group, click.Group):

        @main.group("eval")
        def eval_group() -> None:
            """Measure retrieval quality on labelled data."""

        group = eval_group
    group.add_command(eval_conversations_cmd, "conversations")


_register_eval_conversations()


# ----------------------------------------------------------------------------------------------
# vault commands
# ----------------------------------------------------------------------------------------------


@main.group()
def vault() -> None:
    """Index, search and read a vault of markdown notes.

    An Obsidian-style folder of notes with YAML frontmatter (docs/vault.md)."""


class _VaultProgress:
    """Reading and embedding progress on stderr (silent with --json or without a terminal)."""

    def __init__(self, quiet: bool) -> None:
        self._bars = Progress("reading notes", quiet)
        self._stage = "reading"

    def __enter__(self) -> _VaultProgress:
        self._bars.__enter__()
        return self

    def __call__(self, stage: str, done: int, total: int) -> None:
        bar = self._bars._bar
        if bar is not None and stage != self._stage:
            self._stage = stage
            bar.update(self._bars._task, description=f"{stage} chunks", completed=0)
        self._bars(done, total)

    def __exit__(self, *exc: Any) -> None:
        self._bars.__exit__(*exc)


@vault.command("index")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--no-embed", is_flag=True, help="Do not compute vectors even with an embedder.")
@json_option
@click.pass_obj
@handle_errors
def vault_index(obj: Ctx, path: Path, no_embed: bool, as_json: bool) -> None:
    """Index or re-index the vault at PATH.

    Only added and changed notes are processed; deleted ones are removed."""
    ls = obj.api(create=True)
    with _VaultProgress(as_json) as progress:
        report = ls.vault.index(path, progress=progress, embed=not no_embed)
    if as_json:
        emit_json(report)
        return
    click.echo(
        f"{report.notes} notes in {report.root}: {report.added} added, {report.changed} changed, "
        f"{report.unchanged} unchanged, {report.deleted} deleted ({report.seconds:.2f}s)"
    )
    v = report.vectors
    if v is not None:
        click.echo(
            f"vectors: {v.embedded} embedded, {v.unchanged} unchanged, {v.pruned} pruned, "
            f"{len(v.failed)} failed — {v.model}"
        )
        for f in v.failed:
            click.echo(f"failed: {f}", err=True)
    for p in report.problems:
        click.echo(f"problem: {p}", err=True)
    for w in report.warnings:
        click.echo(f"warning: {w}", err=True)


@vault.command("search")
@click.argument("query")
@click.option("--tag", "tags", multiple=True, help="Notes carrying any of these tags (repeatable).")
@click.option("--domain", default=None, help="Only notes of this domain.")
@click.option("--status", "statuses", multiple=True, help="Any of these statuses (repeatable).")
@click.option("--type", "note_type", default=None, help="Only notes of this type.")
@click.option("--from", "date_from", default=None, help="Updated on or after YYYY-MM-DD.")
@click.option("--to", "date_to", default=None, help="Updated on or before YYYY-MM-DD.")
@click.option("--limit", "-n", default=10, show_default=True, type=int, help="How many notes.")
@click.option(
    "--mode",
    default="vector",
    show_default=True,
    type=click.Choice(["vector", "hybrid"]),
    help="vector similarity, or fused with full text (score is then the RRF score).",
)
@click.option("--min-score", default=None, type=float, help="Drop notes whose cosine is below it.")
@click.option("--explain", is_flag=True, help="Add which channels ranked each note.")
@json_option
@click.pass_obj
@handle_errors
def vault_search(
    obj: Ctx,
    query: str,
    tags: tuple[str, ...],
    domain: str | None,
    statuses: tuple[str, ...],
    note_type: str | None,
    date_from: str | None,
    date_to: str | None,
    limit: int,
    mode: str,
    min_score: float | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Notes most similar to QUERY, best first.

    A table of rank, score and slug (read a note with `vault get SLUG`); --json prints
    the list of {slug, title, path, score} that the MCP tool returns."""
    date_range = None
    if date_from is not None or date_to is not None:
        date_range = {"start": date_from, "end": date_to}
    warnings: list[str] = []
    hits = obj.api().vault.search(
        query,
        tags=list(tags) or None,
        domain=domain,
        status=list(statuses) or None,
        note_type=note_type,
        date_range=date_range,
        limit=limit,
        mode=mode,
        min_score=min_score,
        explain=explain,
        warnings=warnings,
    )
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        emit_json(hits)
        return
    _print_notes(hits, explain=explain)


def _print_notes(hits: list[Any], *, explain: bool) -> None:
    """Vault hits for people: rank, slug (``vault get`` reads it), score, one line each."""
    from rich.text import Text

    con = _console()
    if not hits:
        click.echo("no notes found", err=True)
        return
    w_num = len(str(len(hits)))
    w_score = 6
    w_slug = max(len("slug"), *(len(h.slug) for h in hits))
    head = f"{'#':>{w_num}}  {'score':>{w_score}}  {'slug':<{w_slug}}" + (
        "  why" if explain else ""
    )
    con.print(Text(head.rstrip(), style="bold"), soft_wrap=True)
    for i, h in enumerate(hits, 1):
        line = f"{i:>{w_num}}  {h.score:>{w_score}.4f}  {h.slug:<{w_slug}}"
        if explain and h.explanation:
            from layersearch.ranking.explain import explain_text

            line += f"  {explain_text(h.explanation)}"
        con.print(_cut(line.rstrip(), con.width), markup=False, soft_wrap=True)


@vault.command("get")
@click.argument("slug")
@json_option
@click.pass_obj
@handle_errors
def vault_get(obj: Ctx, slug: str, as_json: bool) -> None:
    """Print the note SLUG and its metadata.

    SLUG is the note's path in the vault without .md, as `vault search` prints it,
    for example "Metrics/Net revenue"."""
    note = obj.api().vault.get_note(slug)
    if as_json:
        emit_json(note)
        return
    con = _console()
    con.print(f"[bold]{note.title}[/]  ({note.path})", markup=True, highlight=False)
    for key in ("domain", "note_type", "status", "created", "updated"):
        value = getattr(note, key)
        if value is not None:
            _detail(con, f"  {key}: {value}")
    if note.tags:
        _detail(con, "  tags: " + ", ".join(note.tags))
    for p in note.problems:
        click.echo(f"problem: {p}", err=True)
    con.print()
    con.print(note.body, markup=False, highlight=False)


@click.command("vault")
@click.option("--vault", "vault_dir", default=None, help="Vault folder (default: fixtures/vault).")
@click.option(
    "--queries",
    default=None,
    help="Labelled queries JSONL (default: fixtures/vault_queries.jsonl).",
)
@click.option(
    "--mode", default="vector", show_default=True, type=click.Choice(["vector", "hybrid"])
)
@json_option
@click.pass_obj
@handle_errors
def eval_vault(
    obj: Ctx, vault_dir: str | None, queries: str | None, mode: str, as_json: bool
) -> None:
    """Vault search recall and MRR on labelled queries.

    Recall@5/@10 and MRR, in a temporary store."""
    from layersearch.eval.vault import evaluate_vault

    result = evaluate_vault(vault_dir, queries, mode=mode, embedder=obj.embedder or "fake")
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"{result['queries']} queries, {result['mode']} mode, {result['embedder']}: "
        f"recall@5 {result['recall@5']:.3f}  recall@10 {result['recall@10']:.3f}  "
        f"mrr {result['mrr']:.3f}"
    )
    for miss in result["misses"]:
        click.echo(f"  missed at 5: {miss['query']}  (wanted {', '.join(miss['missing'])})")


def _register_eval(command: click.Command) -> None:
    """Add ``command`` to the ``eval`` group, creating the group when no one else has."""
    group = main.commands.get("eval")
    if not isinstance(group, click.Group):

        @main.group("eval")
        def eval_group() -> None:
            """Evaluations on labelled data."""

        group = eval_group
    group.add_command(command)


_register_eval(eval_vault)


# ----------------------------------------------------------------------------------------------
# serve command: the MCP server
# ----------------------------------------------------------------------------------------------


@main.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port", default=8765, show_default=True, type=click.IntRange(1, 65535), help="HTTP: port."
)
@click.option(
    "--token",
    envvar="LAYERSEARCH_TOKEN",
    default=None,
    help="HTTP: require 'Authorization: Bearer TOKEN' (needed for a non-loopback host) "
    "[env LAYERSEARCH_TOKEN]",
)
@click.option(
    "--models",
    "models_path",
    default=None,
    help="Load this semantic layer at start when the store is empty [env LAYERSEARCH_MODELS]",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    help="Settings file (default ./layersearch.toml) [env LAYERSEARCH_CONFIG]",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Startup errors as a JSON object; with --http, the URL served as JSON on stdout.",
)
@click.pass_obj
@handle_errors
def serve(
    obj: Ctx,
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
    models_path: str | None,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Run the MCP server for agents (stdio, or --http).

    Logs go to stderr; on stdio, stdout carries only protocol."""
    from layersearch.config import load_settings

    settings = load_settings(config_path or obj.config).replace(
        store=obj.store,
        models=Path(models_path) if models_path else None,
        embedder=obj.embedder,
    )
    if use_http:
        from layersearch.config import check_token

        # Refused before the (slow) server import: a clear error, fast.
        check_token(host, token)
    from layersearch import server

    mcp_server = server.create_server(settings)
    if use_http:
        url = server.http_url(host, port)
        if as_json:
            emit_json({"transport": "streamable-http", "url": url})
            sys.stdout.flush()
        else:
            click.echo(f"serving MCP at {url} (Ctrl-C to stop)", err=True)
        server.run_http(
            mcp_server,
            host=host,
            port=port,
            token=token,
            log_level="info" if obj.verbose else "warning",
        )
    else:
        source = click.get_current_context().get_parameter_source("token")
        if token and source == click.core.ParameterSource.COMMANDLINE:
            logging.getLogger("layersearch.cli").warning("--token applies to --http only; ignored")
        server.run_stdio(mcp_server)


def run() -> None:  # pragma: no cover - console entry for python -m
    main()
