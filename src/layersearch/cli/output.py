"""What commands print for people (rich on a terminal sized to fit) and for machines
(one JSON document on stdout).

No character of stored or imported text reaches the terminal as a control: while a
command runs, ``sys.stdout`` and ``sys.stderr`` are :class:`TerminalText` streams
(:func:`terminal_streams`, entered once by the root group), which write every text
through :func:`terminal_safe`; rich consoles write their own styles to the stream
beneath and pass what they render through the same function first.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from layersearch.cli.errors import stdout_closed
from layersearch.errors import mask_secrets

#: Terminal width from which hit tables show every column and wrap long descriptions.
WIDE = 120

#: What a terminal takes as a control rather than text: C0 but tab and newline (ESC
#: starts CSI and OSC sequences, BEL ends a title), DEL, C1 (U+009B is a one-character
#: CSI), and the bidirectional formatting characters that reorder what is shown.
_CONTROL = re.compile(
    "[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character written as a visible ``\\uXXXX`` escape (a
    CRLF line end stays a line end). The escapes are JSON's own, so JSON text passed
    through this still parses to the same values."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


class TerminalText:
    """A text stream (``sys.stdout`` or ``sys.stderr`` while a command runs) that writes
    through :func:`terminal_safe`; with ``mask``, credentials in addresses are masked too
    (:func:`layersearch.errors.mask_secrets`: errors and logs go to stderr). Everything
    else (``buffer``, ``fileno``, ``isatty``, ``encoding``) is the wrapped stream's."""

    def __init__(self, inner: Any, *, mask: bool) -> None:
        self.inner = inner
        self._mask = mask

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        safe = terminal_safe(text)
        self.inner.write(mask_secrets(safe) if self._mask else safe)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def raw_stream(stream: Any) -> Any:
    """The stream beneath a :class:`TerminalText` (for rich, which sanitises itself)."""
    return stream.inner if isinstance(stream, TerminalText) else stream


@contextlib.contextmanager
def terminal_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`TerminalText` for the block. The
    process's own streams stay wrapped afterwards (what Python prints at exit, a
    ``LAYERSEARCH_DEBUG`` traceback, goes through them too); others (a test runner's)
    are restored."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, TerminalText):
        sys.stdout = TerminalText(sys.stdout, mask=False)  # type: ignore[assignment]
    if not isinstance(sys.stderr, TerminalText):
        sys.stderr = TerminalText(sys.stderr, mask=True)  # type: ignore[assignment]
    try:
        yield
    finally:
        if saved[0] is not sys.__stdout__ or saved[1] is not sys.__stderr__:
            sys.stdout, sys.stderr = saved


class _Sanitised:
    """A renderable whose text segments (not rich's own control segments) are cleaned."""

    def __init__(self, inner: Any, clean: Callable[[str], str]) -> None:
        self.inner = inner
        self.clean = clean

    def __rich_console__(self, con: Any, options: Any) -> Iterator[Any]:
        from rich.segment import Segment

        for seg in con.render(self.inner, options):
            if seg.control or not seg.text:
                yield seg
            else:
                yield Segment(self.clean(seg.text), seg.style)


class _SanitiseHook:
    """The render hook of every console: what is printed passes :func:`terminal_safe`."""

    def __init__(self, clean: Callable[[str], str]) -> None:
        self.clean = clean

    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Sanitised(r, self.clean) for r in renderables]


def _clean_stderr(text: str) -> str:
    return mask_secrets(terminal_safe(text))


def console(stderr: bool = False) -> Any:
    """A rich console on stdout (or stderr), writing to the stream beneath
    :class:`TerminalText` (its styles are its own) and cleaning what it renders; markup
    and emoji codes are off unless a call asks for markup (stored text is not markup)."""
    from rich.console import Console

    width = terminal_width()
    stream = raw_stream(sys.stderr if stderr else sys.stdout)
    con = Console(
        file=stream,
        soft_wrap=False,
        highlight=False,
        markup=False,
        emoji=False,
        width=width,
    )
    con.push_render_hook(_SanitiseHook(_clean_stderr if stderr else terminal_safe))  # type: ignore[arg-type]
    if not stderr:
        # rich's own handling exits with status 1; a closed pipe is not a failure.
        con.on_broken_pipe = stdout_closed  # type: ignore[method-assign]
    return con


#: The width of output that goes to no terminal at all (a file, a pipe read by a program)
#: when $COLUMNS does not say: the width text files and mail are written for.
NO_TERMINAL_WIDTH = 80


def terminal_width() -> int:
    """$COLUMNS, else the terminal's width: stdout's, or stderr's when stdout is a pipe
    (``layersearch memory list | head`` is read in that terminal); else
    :data:`NO_TERMINAL_WIDTH` (no terminal at all, as in CI or a script's capture)."""
    import shutil

    size = shutil.get_terminal_size(fallback=(0, 0)).columns  # $COLUMNS, then stdout
    if size > 0:
        return size
    try:
        if sys.__stderr__ is not None:
            return os.get_terminal_size(sys.__stderr__.fileno()).columns
    except (OSError, ValueError):
        pass
    return NO_TERMINAL_WIDTH


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

    # JSON escapes C0 itself; C1, DEL and the bidirectional controls become \\u escapes
    # too, so the document is exact (the same values) and safe on a terminal.
    sys.stdout.write(terminal_safe(json.dumps(plain(obj), ensure_ascii=False, indent=2)) + "\n")


def escape(text: str) -> str:
    """``text`` for a markup string: its brackets shown, never read as styles."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def print_hits(resp: Any, *, full: bool, explain: bool, empty: str | None = None) -> None:
    from rich.markup import escape

    from layersearch.ranking.explain import explain_text, stages_text

    con = console()
    err = console(stderr=True)
    for w in resp.warnings:
        # one line each, however long: the terminal wraps it, not rich
        err.print(f"[yellow]warning:[/] {escape(w)}", markup=True, highlight=False, soft_wrap=True)
    if not resp.results:
        err.print(f"no {empty}" if empty else "no results")
        return
    if full:
        for i, h in enumerate(resp.results, 1):
            con.print(f"[bold]{i}. {h.kind} {escape(h.id)}[/]  score {h.score:.4f}", markup=True)
            if explain and h.explanation:
                con.print(f"   why: {explain_text(h.explanation)}", markup=False)
            if explain and getattr(h, "stages", None):
                con.print(f"   moved: {stages_text(h.stages)}", markup=False)
            con.print(h.text or h.description, markup=False)
            if h.physical:
                con.print(f"physical: {h.physical}", markup=False)
            con.print()
        return
    if con.width < WIDE or (explain and _cramped(con.width, resp.results)):
        _print_narrow_hits(con, resp.results, explain=explain)
        return
    _print_wide_hits(con, resp.results, explain=explain)


#: The least a wide table gives its description and "why" columns together; below it,
#: explained hits are printed as on a narrow terminal (the channels under each hit).
EXPLAIN_MIN = 70
#: Ids are never shortened below this many cells.
ID_MIN = 20


def print_plan(plan: Any, *, explain: bool) -> None:
    """A query plan for people: one line per measure, grouping, time grain and join;
    with ``explain``, the words that chose each item and the runners-up."""
    con = console()
    con.print("\n[bold]plan[/]", markup=True)

    def item(role: str, p: Any) -> None:
        why = f'  "{p.words}"' if explain else ""
        more = f"  (or {', '.join(p.alternatives)})" if explain and p.alternatives else ""
        detail(con, f"  {role:<9} {p.id}{why}{more}")

    for m in plan.measures:
        item("measure", m)
    for d in plan.dimensions:
        item("by", d)
    if plan.time is not None:
        on = f" on {plan.time.dimension}" if plan.time.dimension else ""
        why = f'  "{plan.time.words}"' if explain else ""
        detail(con, f"  {'time':<9} {plan.time.grain}{on}{why}")
    for j in plan.joins:
        keys = ", ".join(f"{a} = {b}" for a, b in j.keys) or "keys not stated"
        detail(con, f"  {'join':<9} {j.source} -> {j.target} on {keys}")
    for w in plan.warnings or []:
        detail(con, f"  note: {w}")


def description_min(width: int) -> int:
    """The least a hit's description gets before ids are shortened in the middle: 40 cells
    in a wide table (where it wraps), else two fifths of the terminal, at least 30."""
    return 40 if width >= WIDE else max(30, width * 2 // 5)


def _columns(width: int, hits: list[Any], *, score: int) -> tuple[int, int, int]:
    """The widths of the #, kind and id columns (``score``: the score column's width, 0
    when not shown): ids get what the description can spare above :func:`description_min`,
    at least :data:`ID_MIN`."""
    from rich.cells import cell_len

    w_num = len(str(len(hits)))
    w_kind = max(len("kind"), *(cell_len(h.kind) for h in hits))
    fixed = w_num + 2 + w_kind + 2 + 2 + (score + 2 if score else 0)
    longest = max(len("id"), *(cell_len(h.id) for h in hits))
    return w_num, w_kind, min(longest, max(ID_MIN, width - fixed - description_min(width)))


def _score_width(hits: list[Any]) -> int:
    return max(len("score"), *(len(f"{h.score:.4f}") for h in hits))


def _cramped(width: int, hits: list[Any]) -> bool:
    """Whether the fixed columns (#, kind, id, score) leave the description and "why"
    columns less than :data:`EXPLAIN_MIN` cells (long ids: a scoped search's messages)."""
    w_score = _score_width(hits)
    w_num, w_kind, w_id = _columns(width, hits, score=w_score)
    return width - (w_num + w_kind + w_id + w_score + 4 * 2) < EXPLAIN_MIN + 2


def _print_wide_hits(con: Any, hits: list[Any], *, explain: bool) -> None:
    """A table for a terminal of WIDE columns or more: #, kind, id, score and the whole
    description wrapped in its column; with ``explain`` the channels that ranked each hit
    wrap in a "why" column beside it, the two sharing the width."""
    from rich.text import Text

    w_score = _score_width(hits)
    w_num, w_kind, w_id = _columns(con.width, hits, score=w_score)
    left = w_num + 2 + w_kind + 2 + w_id + 2 + w_score + 2
    w_desc = con.width - left
    if explain:
        w_desc = max(40, (w_desc - 2) // 2)
    w_why = con.width - left - w_desc - 2

    def row(cells: tuple[str, str, str, str], desc: list[str], reason: list[str]) -> list[str]:
        num, kind, ident, score = cells
        head = f"{num:>{w_num}}  {pad(kind, w_kind)}  {pad(elide(ident, w_id), w_id)}  "
        lines = []
        for k in range(max(len(desc), len(reason), 1)):
            line = head + f"{score:>{w_score}}  " if k == 0 else " " * left
            line += pad(desc[k] if k < len(desc) else "", w_desc)
            if explain:
                line += "  " + (reason[k] if k < len(reason) else "")
            lines.append(line.rstrip())
        return lines

    header = row(("#", "kind", "id", "score"), ["description"], ["why"] if explain else [])
    con.print(Text(header[0], style="bold"), soft_wrap=True)
    for i, h in enumerate(hits, 1):
        desc = wrap(con, one_line(h.description), w_desc)
        reason = wrap(con, why(h), w_why) if explain else []
        # Text, not markup: a description's "[decimal(18,2)]" is not a style tag.
        for line in row((str(i), h.kind, h.id, f"{h.score:.4f}"), desc, reason):
            con.print(Text(line), soft_wrap=True)


def _print_narrow_hits(con: Any, hits: list[Any], *, explain: bool) -> None:
    """One line per hit for a terminal narrower than WIDE: the score column (the least
    useful to a person: the order already says it) is dropped, ids too long for the
    description to keep :func:`description_min` cells are shortened in the middle, and the
    description is cut with an ellipsis at the edge (``--full`` shows it whole); with
    ``explain`` the channels that ranked a hit go on the line below it."""
    from rich.cells import cell_len
    from rich.text import Text

    rows = [(str(i), h.kind, h.id, one_line(h.description)) for i, h in enumerate(hits, 1)]
    w_num, w_kind, w_id = _columns(con.width, hits, score=0)
    indent = w_num + 2 + w_kind + 2
    # a terminal too narrow even for shortened ids: each description goes on its own line
    # under its hit, where the why line goes
    below = con.width - (indent + w_id + 2) < 8

    def line(num: str, kind: str, ident: str, desc: str) -> str:
        head = f"{num:>{w_num}}  {pad(kind, w_kind)}  {pad(elide(ident, w_id), w_id)}  "
        if below:
            return head.rstrip()
        return (head + cut(desc, con.width - cell_len(head))).rstrip()

    con.print(Text(line("#", "kind", "id", "description"), style="bold"), soft_wrap=True)
    for (num, kind, ident, desc), hit in zip(rows, hits, strict=True):
        con.print(line(num, kind, ident, desc), markup=False, soft_wrap=True)
        if below and desc:
            con.print(" " * indent + cut(desc, max(con.width - indent, 20)), markup=False)
        if explain:
            text = Text(f"why: {why(hit)}", style="dim")
            for part in text.wrap(con, max(con.width - indent, 20)):
                part.rstrip()
                con.print(Text(" " * indent) + part, soft_wrap=True)


def wrap(con: Any, text: str, width: int) -> list[str]:
    """``text`` wrapped to lines of ``width`` terminal cells (long words folded)."""
    from rich.text import Text

    return [part.plain.rstrip() for part in Text(text).wrap(con, max(width, 1))] or [""]


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal cells."""
    from rich.cells import cell_len

    return text + " " * max(width - cell_len(text), 0)


def elide(text: str, width: int) -> str:
    """``text`` shortened in the middle with an ellipsis to ``width`` terminal cells: an
    id keeps its start (the source, the model) and its end (the message, the column)."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    head = (width - 1) // 2
    tail = ""
    for ch in reversed(text):
        if cell_len(ch + tail) > width - 1 - head:
            break
        tail = ch + tail
    return set_cell_size(text, head) + "…" + tail


def cut(line: str, width: int) -> str:
    """``line`` cut with an ellipsis to ``width`` terminal cells."""
    from rich.cells import cell_len, set_cell_size

    return line if cell_len(line) <= width else set_cell_size(line, width - 1) + "…"


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def why(hit: Any) -> str:
    """The channels that ranked a hit, then the stages that moved it."""
    from layersearch.ranking.explain import explain_text, stages_text

    text = explain_text(hit.explanation or [])
    moved = getattr(hit, "stages", None)
    return f"{text}; moved: {stages_text(moved)}" if moved else text


def detail(con: Any, line: str) -> None:
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


def print_memory(m: Any) -> None:
    from rich.markup import escape

    con = console()
    con.print(f"[bold]{escape(m.id)}[/]  {m.created_at:%Y-%m-%d %H:%M}", markup=True)
    detail(con, f"  {m.learning}")
    if m.description:
        detail(con, f"  description: {m.description}")
    if m.entities:
        detail(con, "  entities: " + ", ".join(m.entities))
    if m.query:
        detail(con, "  query: " + json.dumps(m.query, sort_keys=True))


def print_skipped(notes: list[str]) -> None:
    """What a load skipped and why, one ``skipped:`` line each on stderr."""
    for note in notes:
        click.echo(f"skipped: {note}", err=True)


def print_vectors(report: Any, label: str, unchanged: str = "unchanged") -> None:
    """One embedding report (``layersearch embed``, ``load``, ``vault index``): the counts
    on stdout, each document that failed on stderr."""
    click.echo(
        f"{label}: {report.embedded} embedded, {report.unchanged} {unchanged}, "
        f"{report.pruned} pruned, {len(report.failed)} failed — {report.model}"
    )
    for f in report.failed:
        click.echo(f"failed: {f}", err=True)


def print_metrics(title: str, summary: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    """An evaluation's summary as a two-column table: floats to three places, no value
    as n/a."""
    from rich.table import Table

    table = Table(title=title, show_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if key in skip:
            continue
        shown = (
            "n/a" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
        )
        table.add_row(key, shown)
    console().print(table)


def print_rows(title: str, headers: tuple[str, ...], rows: list[tuple[str, list[Any]]]) -> None:
    """Labelled rows of numbers under ``headers`` (the first names the labels): floats to
    three places, no value as n/a."""
    from rich.table import Table

    table = Table(title=title, show_edge=False)
    table.add_column(headers[0])
    for head in headers[1:]:
        table.add_column(head, justify="right")
    for label, values in rows:
        table.add_row(label, *("n/a" if v is None else f"{v:.3f}" for v in values))
    console().print(table)
