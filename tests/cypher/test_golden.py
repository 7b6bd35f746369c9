"""The golden filters over the bundled models/ graph: ids and exact error messages."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

import layersearch.errors as errors
from layersearch.graph.cypher import run_filter

from .graphs import BUNDLED_MODELS, REPO, kuzu_connection, kuzu_ids, load_graph

GOLDEN = REPO / "fixtures" / "cypher" / "golden.yaml"
ENTRIES: list[dict[str, Any]] = yaml.safe_load(GOLDEN.read_text())
OK = [e for e in ENTRIES if "expected_ids" in e]
BAD = [e for e in ENTRIES if "error" in e]


@pytest.fixture(scope="module")
def graph() -> Any:
    if not BUNDLED_MODELS.is_dir():
        pytest.skip("models/ (the bundled semantic layer) is not in this checkout")
    return load_graph(BUNDLED_MODELS)


def test_golden_file_is_big_enough() -> None:
    assert len(ENTRIES) >= 120
    assert len(BAD) >= 30


@pytest.mark.parametrize("entry", OK, ids=[e["query"][:70] for e in OK])
def test_expected_ids(graph: Any, entry: dict[str, Any]) -> None:
    got = run_filter(graph, entry["query"], entry.get("params"))
    if entry.get("ordered"):
        assert got == entry["expected_ids"]
    else:
        assert sorted(got) == sorted(entry["expected_ids"])


@pytest.mark.parametrize("entry", BAD, ids=[e["query"][:70] for e in BAD])
def test_expected_errors(graph: Any, entry: dict[str, Any]) -> None:
    cls = getattr(errors, entry["error"])
    with pytest.raises(cls) as info:
        run_filter(graph, entry["query"], entry.get("params"))
    assert type(info.value) is cls
    assert str(info.value) == entry["message"]


def test_kuzu_still_agrees(graph: Any) -> None:
    """The Kùzu-checked entries still hold in Kùzu (the golden file cannot drift)."""
    pytest.importorskip("kuzu")
    _db, conn = kuzu_connection(graph)
    checked = 0
    for entry in OK:
        if not entry["checked_with"].startswith("kuzu"):
            continue
        text = entry.get("kuzu_query", entry["query"])
        got = [i for i in kuzu_ids(conn, text, entry.get("params")) if i is not None]
        if entry.get("ordered"):
            assert got == entry["expected_ids"], text
        else:
            assert sorted(set(got)) == sorted(entry["expected_ids"]), text
        checked += 1
    assert checked >= 100
