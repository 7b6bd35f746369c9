"""Stored and imported text never reaches a terminal as a control sequence (issue 42).

A store holds the reported sequences (clear screen ``ESC[2J``, a colour, the window-title
``ESC]0;…BEL``) and variants (a one-character C1 CSI ``U+009B``, a right-to-left override,
a carriage return) in every corpus: model descriptions, a memory, a conversation, a
summary, a vault note; every command that prints them runs in plain mode, and no control
character may come out (each shows as a ``\\uXXXX`` escape). ``--json`` keeps the text
exact: it parses back to the stored string. One run goes through a real pseudo-terminal,
where rich writes its own styles: only those may be escape sequences.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch import Layersearch
from layersearch.cli import main
from tests.support import ROOT

from .catalogue import TERMINAL_CONTROLS

#: the reported sequences, then variants of the same class
HOSTILE = "\x1b[2J\x1b[31mred\x1b]0;owned title\x07 \x9b2J \u202eevil\r\n\x08x"
SLUG = "Ops/Hostile note"


def _model(tmp: Path) -> Path:
    folder = tmp / "models"
    folder.mkdir()
    desc = json.dumps(f"Orders {HOSTILE}")
    (folder / "t.yaml").write_text(
        "datasource:\n  name: t\n  models:\n"
        f"    - model: orders\n      description: {desc}\n"
        f"      columns:\n        - {{name: tax, description: {desc}}}\n"
    )
    return folder


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("terminal")
    path = tmp / "s.duckdb"
    export = tmp / "m.jsonl"
    export.write_text(
        json.dumps(
            {
                "conversation_id": "c1",
                "role": "user",
                "content": f"revenue question {HOSTILE}",
                "title": f"title {HOSTILE}",
            }
        )
        + "\n"
    )
    summaries = tmp / "s.jsonl"
    summaries.write_text(
        json.dumps({"conversation_id": "c1", "summary": f"revenue summary {HOSTILE}"}) + "\n"
    )
    vault = tmp / "vault"
    (vault / "Ops").mkdir(parents=True)
    (vault / "Ops" / "Hostile note.md").write_text(
        f"---\ntitle: {json.dumps('Revenue ' + HOSTILE)}\ntags: [ops]\n---\n"
        f"# Revenue\n\nrevenue body {HOSTILE}\n"
    )
    with Layersearch(path, embedder="fake") as ls:
        ls.load(_model(tmp))
        ls.save_memory(f"tax {HOSTILE}", entities=["t.orders"])
        ls.conversations.import_path(export, "generic")
        ls.conversations.import_summaries(summaries)
        ls.conversations.embed()
        ls.vault.index(vault)
    yield path


def _run(store: Path, *args: str, columns: int = 100) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        main, ["--store", str(store), "--embedder", "fake", *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


def _message_id(store: Path) -> str:
    """The id of the hostile message, as a scoped search lists it (inspect takes it)."""
    code, out, _ = _run(store, "search", "revenue question", "--scope", "conversations", "--json")
    assert code == 0
    return str(json.loads(out)["results"][0]["id"])


COMMANDS: dict[str, tuple[str, ...]] = {
    "search": ("search", "tax orders"),
    "search-narrow-explain": ("search", "tax orders", "--explain"),
    "search-full-explain": ("search", "tax orders", "--full", "--explain"),
    "search-buckets": ("search", "tax orders", "--max-memories", "3", "--max-entities", "3"),
    "search-scope-all": ("search", "revenue", "--scope", "all"),
    "inspect-entity": ("inspect", "t.orders"),
    "inspect-memory": ("inspect", "memory:1"),
    "inspect-note": ("inspect", f"vault:{SLUG}"),
    "memory-list": ("memory", "list"),
    "memory-show": ("memory", "show", "memory:1"),
    "conversations-search": ("conversations", "search", "revenue"),
    "conversations-semantic": ("conversations", "semantic", "revenue question"),
    "summaries-search": ("summaries", "search", "revenue"),
    "vault-search": ("vault", "search", "revenue", "--mode", "hybrid", "--explain"),
    "vault-get": ("vault", "get", SLUG),
}


def _clean(code: int, out: str, err: str) -> str:
    both = out + err
    assert "Traceback" not in both, both[-2000:]
    found = TERMINAL_CONTROLS.findall(both)
    assert not found, f"control characters reached the output: {found!r}\n{both[-1500:]}"
    return both


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("columns", [80, 200])
def test_stored_text_prints_without_control_characters(
    store: Path, name: str, columns: int
) -> None:
    code, out, err = _run(store, *COMMANDS[name], columns=columns)
    assert code == 0, (out, err)
    both = _clean(code, out, err)
    # shown, escaped, not dropped (a table may cut a long description at the edge; vault
    # search lists slugs and scores only)
    assert "\\u001b" in both or "…" in both or name == "vault-search", both[-1500:]


def test_inspect_a_message_and_an_evaluation_report(store: Path, tmp_path: Path) -> None:
    code, out, err = _run(store, "inspect", _message_id(store))
    assert code == 0, err
    # (rich drops BEL, backspace and carriage return itself)
    assert "\\u001b]0;owned title" in _clean(code, out, err)
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"query": f"revenue {HOSTILE}", "relevant": ["Nowhere/Missing"]}) + "\n"
    )
    vault = store.parent / "vault"
    code, out, err = _run(store, "eval", "vault", "--vault", str(vault), "--queries", str(queries))
    assert code == 0, err
    # (click drops CSI sequences itself when stdout is no terminal)
    assert "missed at 5: revenue " in (shown := _clean(code, out, err))
    assert "\\u001b]0;owned title" in shown


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "\x1b]0;owned\x07"),  # the id is echoed in the error
        ("conversations", "search", "\x1b[2J\x1b]0;owned\x07"),  # the term is echoed
        ("vault", "get", "Ops/\x1b[2Jx"),
    ],
    ids=["inspect-id", "conversations-term", "vault-slug"],
)
def test_echoed_input_prints_without_control_characters(store: Path, args: tuple[str, ...]) -> None:
    code, out, err = _run(store, *args)
    assert code in (0, 2), (out, err)
    shown = _clean(code, out, err)
    assert "\\u001b" in shown or "\\x1b" in shown, shown  # a repr() shows it as \\x1b


def test_json_output_is_exact(store: Path) -> None:
    code, out, err = _run(store, "memory", "show", "memory:1", "--json")
    assert code == 0, err
    _clean(code, out, err)
    assert json.loads(out)["learning"] == f"tax {HOSTILE}"
    code, out, err = _run(store, "vault", "get", SLUG, "--json")
    assert code == 0 and json.loads(out)["title"] == f"Revenue {HOSTILE}"
    assert not TERMINAL_CONTROLS.search(out)


#: what rich writes on a terminal itself: SGR styles, and cursor show/hide
_RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[hl]")


@pytest.mark.slow
def test_a_real_terminal_sees_only_the_styles_rich_writes(store: Path) -> None:
    import pty

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="120", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "layersearch", "--store", str(store), "--embedder", "fake"]
            + ["search", "tax orders", "--full", "--explain"],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env,
            close_fds=True,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the pseudo-terminal closes when the process exits
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(leader)
    text = b"".join(chunks).decode("utf-8")
    assert _RICH_OWN.search(text), "rich wrote no style: not a terminal?"
    rest = _RICH_OWN.sub("", text).replace("\r\n", "\n")
    assert not TERMINAL_CONTROLS.findall(rest), TERMINAL_CONTROLS.findall(rest)
    assert "\\u001b]0;owned title\\u0007" in rest or "\\u001b[2J" in rest
