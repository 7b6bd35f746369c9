"""A lone surrogate (``"\\ud800"``) never reaches the store (issue #20, point 10).

Once stored, every JSON output that shows it failed (``memory list --json``, ``memory
show --json``, ``inspect --json``: UnicodeEncodeError). argv and MCP cannot carry one;
the Python API and the files importers read (a JSON ``\\ud800`` escape without its pair)
can, so each door refuses it with a ConfigError naming the field, and the store is left
as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from layersearch import Layersearch
from layersearch.errors import ConfigError, LayersearchError
from tests.support import MINI, ROOT

pytestmark = pytest.mark.slow

LONE = ["\ud800", "\udfff", "a\udc80b", "ok \ud83d", "\ud800\ud800"]


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture
def ls(tmp_path: Path) -> Any:
    api = Layersearch(tmp_path / "s.duckdb")
    api.load(MINI)
    yield api
    api.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One store for the refusals (each leaves it unchanged, which the test checks)."""
    api = Layersearch(tmp_path_factory.mktemp("lone") / "s.duckdb")
    api.load(MINI)
    yield api
    api.close()


SAVES: dict[str, Callable[[Any, str], Any]] = {
    "learning": lambda ls, s: ls.save_memory(f"note {s}", entities=["shop.orders"]),
    "description": lambda ls, s: ls.save_memory("note", description=s, entities=["shop.orders"]),
    "entity": lambda ls, s: ls.save_memory("note", entities=[f"shop.orders{s}"]),
    "query-value": lambda ls, s: ls.save_memory("note", query={"measures": ["x"], "note": s}),
    "query-key": lambda ls, s: ls.save_memory("note", query={s: ["shop.orders"]}),
    "query-nested": lambda ls, s: ls.save_memory(
        "note", query={"filters": [{"sql": f"status = '{s}'"}]}
    ),
}


@pytest.mark.parametrize("field", sorted(SAVES))
@pytest.mark.parametrize(
    "text", LONE, ids=[t.encode("utf-8", "backslashreplace").decode() for t in LONE]
)
def test_save_memory_refuses_a_lone_surrogate(shared: Any, field: str, text: str) -> None:
    before = [m.id for m in shared.list_memories()]
    with pytest.raises(ConfigError, match="lone surrogate"):
        SAVES[field](shared, text)
    assert [m.id for m in shared.list_memories()] == before


def test_a_valid_pair_is_text(ls: Any) -> None:
    m = ls.save_memory(
        "emoji \ud83d\ude00 ok".encode("utf-16", "surrogatepass").decode("utf-16"),
        entities=["shop.orders"],
    )
    assert "😀" in m.learning


def _assert_store_shows_as_json(store: Path) -> None:
    for args in (["memory", "list", "--json"], ["inspect", "shop.orders", "--json"]):
        done = _cli(store, *args)
        assert done.returncode == 0, (args, done.stderr)
        json.loads(done.stdout)


def _spider(tmp: Path) -> Path:
    db = {
        "db_id": "air",
        "table_names_original": ["airlines"],
        "table_names": ["airlines"],
        "column_names_original": [[-1, "*"], [0, "uid"], [0, "Air\\ud800line"]],
        "column_names": [[-1, "*"], [0, "uid"], [0, "air\\ud800line"]],
        "column_types": ["text", "number", "text"],
        "primary_keys": [1],
        "foreign_keys": [],
    }
    path = tmp / "tables.json"
    # json.dumps would escape the backslash: write the \ud800 escape as JSON text
    path.write_text(json.dumps([db]).replace("\\\\ud800", "\\ud800"))
    return path


def _yaml(tmp: Path) -> Path:
    folder = tmp / "models"
    folder.mkdir()
    (folder / "d.yaml").write_text("datasource: {name: air}\n")
    (folder / "t.yaml").write_text(
        'model: t\ndatasource: air\ndescription: "bad \\ud800 text"\ncolumns: [{name: id}]\n'
    )
    return folder


def _conversation(tmp: Path) -> Path:
    path = tmp / "messages.jsonl"
    path.write_text(
        '{"conversation_id": "c1", "role": "user", "content": "hello \\ud800 there", '
        '"created": "2024-06-10T06:13:20Z"}\n'
    )
    return path


def _vault(tmp: Path) -> Path:
    folder = tmp / "vault"
    folder.mkdir()
    (folder / "Note.md").write_text('---\ntitle: "bad \\ud800"\n---\n# Note\n\nsome text\n')
    return folder


IMPORTS: dict[str, tuple[Callable[[Path], Path], Callable[[Any, Path], Any]]] = {
    "spider-tables-json": (_spider, lambda ls, p: ls.load(p, "spider")),
    "yaml-escape": (_yaml, lambda ls, p: ls.load(p)),
    "conversation-jsonl": (
        _conversation,
        lambda ls, p: ls.conversations.import_path(p, "generic"),
    ),
    "vault-frontmatter": (_vault, lambda ls, p: ls.vault.index(p)),
}


@pytest.mark.parametrize("source", sorted(IMPORTS))
def test_imports_refuse_a_lone_surrogate(ls: Any, tmp_path: Path, source: str) -> None:
    """Refused with an error naming it, or (conversation exports, which report bad records
    and import the rest) skipped with a problem naming it."""
    make, run = IMPORTS[source]
    path = make(tmp_path)
    try:
        report = run(ls, path)
    except LayersearchError as exc:
        # libyaml's loader refuses the escape itself, with the file, line and column
        refused = ("lone surrogate", "invalid Unicode character escape")
        assert any(r in str(exc) for r in refused), exc
    else:
        problems = list(getattr(report, "problems", []))
        assert any("lone surrogate" in p and "skipped" in p for p in problems), report
    ls.close()
    _assert_store_shows_as_json(ls.store.path)
