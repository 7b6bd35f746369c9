"""The learned table order (stage ``learned-tables``): how a table order is laid onto
the hit list, the run-time features against those ``scripts/learned_fusion.py`` reads
off an explanation, the shipped model against lightgbm's own scores, and the stage's
moves as ``explain`` shows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.entities import learned
from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.eval.schema_linking import ranked_links
from layersearch.ranking.trees import Forest, shipped
from tests.support import MINI, ROOT, script
from tests.test_learned_columns import FIRST_LAST


def _hit(doc_id: str, level: int) -> learned.Hit:
    return (doc_id, level, {}, 0.0, set())


#: a datasource, tables a, b, c of database d and their leaves, by fused position
HITS = [
    _hit("d.a.x", 0),  # a first appears here (through a leaf)
    _hit("d", -1),
    _hit("d.b", 1),  # b
    _hit("d.a", 1),
    _hit("d.c.z", 0),  # c
    _hit("d.b.y", 0),
    _hit("d.c", 1),
]


def _tables(order: list[int]) -> list[str]:
    seen: list[str] = []
    for i in order:
        doc_id, level = HITS[i][0], HITS[i][1]
        if level < 0:
            continue
        table = doc_id if level == 1 else doc_id.rsplit(".", 1)[0]
        if table not in seen:
            seen.append(table)
    return seen


def test_tables_first_appear_in_the_learned_order() -> None:
    order = learned.table_order(HITS, ["d.c", "d.a", "d.b"])
    assert sorted(order) == list(range(len(HITS)))
    assert _tables(order) == ["d.c", "d.a", "d.b"]
    # c's first hit takes a's first place; a's first hit takes b's; b's first takes c's
    assert [HITS[i][0] for i in order[:1]] == ["d.c.z"]
    # a hit of no table keeps its place
    assert order[1] == 1
    # every table's other hits follow its first hit
    pos = {HITS[i][0]: k for k, i in enumerate(order)}
    assert pos["d.c"] > pos["d.c.z"] and pos["d.a"] > pos["d.a.x"] and pos["d.b.y"] > pos["d.b"]


def test_the_same_order_changes_nothing() -> None:
    assert learned.table_order(HITS, ["d.a", "d.b", "d.c"]) == list(range(len(HITS)))


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    with Layersearch(tmp_path_factory.mktemp("learned-tables") / "s.duckdb") as ls:
        ls.load(MINI)
        yield ls


QUESTION = "customers and the tax paid on their orders"
OFF = frozenset({"learned-tables", "learned-columns"})


def test_run_time_table_features_are_those_the_model_was_trained_on(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    lf = script("learned_fusion")
    mini.entities.ranking = EntityRankingConfig(without=OFF)
    try:
        hits = mini.search(question=QUESTION, explain=True, max_entities=50).entities or []
    finally:
        mini.entities.ranking = EntityRankingConfig()
    expected = dict(lf.table_candidates(hits, QUESTION))
    seen: list[Any] = []

    def record(*args: Any) -> Any:
        out = real(*args)
        seen.append(out)
        return out

    real = learned.table_rows
    monkeypatch.setattr(learned, "table_rows", record)
    mini.entities.ranking = EntityRankingConfig(without=frozenset({"learned-columns"}))
    try:
        mini.search(question=QUESTION, max_entities=50)
    finally:
        mini.entities.ranking = EntityRankingConfig()
    at, rows = seen[0]
    got = {t: dict(zip(learned.TABLE_NAMES, rows[k].tolist(), strict=True)) for t, k in at.items()}
    assert list(got) == list(expected) and len(got) >= 2
    for table, f in expected.items():
        kept = {k: v for k, v in f.items() if lf.RUN_TIME.match(k)}
        assert got[table] == pytest.approx(kept), table


def test_the_shipped_model_gives_lightgbm_s_own_scores() -> None:
    saved = json.loads((ROOT / "tests" / "eval_data" / "learned_tables_rows.json").read_text())
    forest = shipped(learned.TABLE_MODEL)
    assert list(forest.features) == saved["features"]
    x = np.array(saved["rows"])
    assert np.allclose(forest.predict(x), saved["lightgbm"], rtol=0, atol=1e-9)
    assert forest.meta["split"].startswith("stacked_split(seed=0)")
    assert "lexical searches" in forest.meta["split"]


def test_a_moved_table_says_which_features_moved_it(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a model that sends the first table last
    first_last = Forest.from_dict(FIRST_LAST)
    mini.entities.ranking = EntityRankingConfig(without=OFF)
    try:
        before = mini.search(question=QUESTION, max_entities=50).entities or []
    finally:
        mini.entities.ranking = EntityRankingConfig()
    monkeypatch.setattr(learned, "_model", lambda name: first_last)
    mini.entities.ranking = EntityRankingConfig(without=frozenset({"learned-columns"}))
    try:
        after = mini.search(question=QUESTION, max_entities=50, explain=True).entities or []
    finally:
        mini.entities.ranking = EntityRankingConfig()
    tables, _ = ranked_links(before)
    moved, _ = ranked_links(after)
    assert moved[: len(tables)] == [*tables[1:], tables[0]]
    assert sorted(h.id for h in after) == sorted(h.id for h in before)
    assert [h.score for h in after] == sorted((h.score for h in after), reverse=True)
    up = next(h for h in after if h.id == tables[1])
    move = next(m for m in up.stages or [] if m.stage == "learned-tables")
    assert move.after < move.before and "today_pos +1.000" in move.note
