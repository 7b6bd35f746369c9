"""The learned column order (stage ``learned-columns``): the tree evaluator of
``ranking/trees.py`` against hand-made trees and lightgbm's own scores, the run-time
features against those ``scripts/learned_fusion.py`` reads off an explanation, and the
stage's moves as ``explain`` shows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.entities import learned
from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.errors import ConfigError
from layersearch.ranking.trees import FORMAT, Forest, from_lightgbm, shipped
from tests.support import MINI, ROOT, script

#: two trees over features a, b: tree 0 splits on a then b, tree 1 is one leaf
HAND = {
    "format": FORMAT,
    "features": ["a", "b"],
    "trees": [
        {
            "feature": [0, -1, 1, -1, -1],
            "threshold": [1.5, 0.0, 10.0, 0.0, 0.0],
            "left": [1, -1, 3, -1, -1],
            "right": [2, -1, 4, -1, -1],
            "value": [0.2, -1.0, 0.6, 0.5, 1.0],
        },
        {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1], "value": [0.25]},
    ],
}


#: one tree over ``today_pos``: the first candidate scores -1, every other +1 (the first
#: goes last)
FIRST_LAST = {
    "format": FORMAT,
    "features": ["today_pos"],
    "trees": [
        {
            "feature": [0, -1, -1],
            "threshold": [1.5, 0.0, 0.0],
            "left": [1, -1, -1],
            "right": [2, -1, -1],
            "value": [0.0, -1.0, 1.0],
        }
    ],
}


def test_a_hand_made_forest_scores_each_row_by_its_leaves() -> None:
    forest = Forest.from_dict(HAND)
    rows = np.array([[1.0, 99.0], [1.5, 0.0], [2.0, 10.0], [2.0, 10.5]])
    assert forest.predict(rows).tolist() == [-0.75, -0.75, 0.75, 1.25]
    assert forest.depth == 2 and forest.bias == pytest.approx(0.45)
    # a: 0.6 - 0.2, b: 1.0 - 0.6; the bias plus the parts is the score
    parts = forest.contributions([2.0, 10.5])
    assert parts == pytest.approx({"a": 0.4, "b": 0.4})
    assert forest.bias + sum(parts.values()) == pytest.approx(1.25)
    assert forest.contributions([0.0, 0.0]) == pytest.approx({"a": -1.2})
    assert forest.predict(np.zeros((0, 2))).tolist() == []


def test_a_malformed_forest_or_row_is_an_error() -> None:
    with pytest.raises(ConfigError, match="not a layersearch-forest"):
        Forest.from_dict({**HAND, "format": "xgboost"})
    tree = {**HAND["trees"][0], "left": [7, -1, 3, -1, -1]}  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="outside the tree"):
        Forest.from_dict({**HAND, "trees": [tree]})
    forest = Forest.from_dict(HAND)
    with pytest.raises(ValueError, match="2 features"):
        forest.predict(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="finite"):
        forest.predict(np.array([[np.nan, 0.0]]))


@pytest.mark.parametrize(
    ("name", "rows", "split"),
    [
        (learned.MODEL, "learned_columns_rows.json", "stacked_split(seed=0)"),
        (learned.DENSE_MODEL, "learned_columns_dense_rows.json", "stacked_split(seed=0)"),
    ],
)
def test_the_shipped_models_give_lightgbm_s_own_scores(name: str, rows: str, split: str) -> None:
    saved = json.loads((ROOT / "tests" / "eval_data" / rows).read_text())
    forest = shipped(name)
    assert list(forest.features) == saved["features"]
    x = np.array(saved["rows"])
    assert np.allclose(forest.predict(x), saved["lightgbm"], rtol=0, atol=1e-9)
    for row, score in zip(x[:5], saved["lightgbm"][:5], strict=True):
        assert forest.bias + sum(forest.contributions(row).values()) == pytest.approx(score)
    assert forest.meta["split"].startswith(split)


def test_the_evaluator_matches_lightgbm_on_a_model_trained_here() -> None:
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4))
    x[:, 3] = np.round(x[:, 3])  # (ties on a threshold's value)
    y = (x[:, 0] + x[:, 1] * x[:, 3] > 0.5).astype(float)
    params = {"objective": "lambdarank", "num_leaves": 7, "verbose": -1, "num_threads": 1}
    model = lgb.train(params, lgb.Dataset(x, label=y, group=[20] * 30), num_boost_round=20)
    forest = Forest.from_dict(from_lightgbm(model.dump_model()))
    test = rng.normal(size=(200, 4))
    test[:, 3] = np.round(test[:, 3])
    assert np.allclose(forest.predict(test), model.predict(test), rtol=0, atol=1e-9)


def _script() -> ModuleType:
    return script("learned_fusion")


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    with Layersearch(tmp_path_factory.mktemp("learned") / "s.duckdb") as ls:
        ls.load(MINI)
        yield ls


QUESTIONS = ["monthly revenue by store", "customers and the tax paid on their orders"]
TABLES = "learned-tables"


@pytest.mark.parametrize("question", QUESTIONS)
def test_run_time_features_are_those_the_model_was_trained_on(
    mini: Layersearch, question: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lf = _script()
    mini.entities.ranking = EntityRankingConfig(without=frozenset({"learned-columns"}))
    try:
        # (the entity list: its positions are those the stage reads; results interleave
        # the memories)
        hits = mini.search(question=question, explain=True, max_entities=50).entities or []
    finally:
        mini.entities.ranking = EntityRankingConfig()
    tables = lf.table_candidates(hits, question)
    expected = dict(lf.column_candidates(hits, question, tables))
    seen: list[Any] = []

    def record(*args: Any) -> Any:
        out = real(*args)
        seen.append((args[0], out))
        return out

    real = learned.column_rows
    monkeypatch.setattr(learned, "column_rows", record)
    mini.search(question=question, max_entities=50)
    run_hits, (leaves, rows) = seen[0]
    got = {
        run_hits[i][0]: dict(zip(learned.COLUMN_NAMES, row.tolist(), strict=True))
        for i, row in zip(leaves, rows, strict=True)
    }
    assert set(got) == set(expected) and len(got) >= 2
    for doc_id, f in expected.items():
        kept = {k: v for k, v in f.items() if lf.RUN_TIME.match(k)}
        assert got[doc_id] == pytest.approx(kept), doc_id


def test_a_moved_column_says_which_features_moved_it(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a model that sends the first column hit last among the columns
    first_last = Forest.from_dict(FIRST_LAST)
    question = QUESTIONS[0]
    leaf = {"column", "measure", "aggregation"}
    # (the table order is its own stage's, off here)
    mini.entities.ranking = EntityRankingConfig(without=frozenset({"learned-columns", TABLES}))
    try:
        before = mini.search(question=question, max_entities=50).entities or []
        mini.entities.ranking = EntityRankingConfig(without=frozenset({TABLES}))
        monkeypatch.setattr(learned, "_model", lambda name: first_last)
        after = mini.search(question=question, max_entities=50, explain=True).entities or []
    finally:
        mini.entities.ranking = EntityRankingConfig()
    cols = [h.id for h in before if h.kind in leaf]
    assert [h.id for h in after if h.kind in leaf] == [*cols[1:], cols[0]]
    # tables keep their places; scores follow the order
    assert [h.id if h.kind not in leaf else "" for h in after] == [
        h.id if h.kind not in leaf else "" for h in before
    ]
    assert [h.score for h in after] == sorted((h.score for h in after), reverse=True)
    moved = next(h for h in after if h.id == cols[1])
    move = next(m for m in moved.stages or [] if m.stage == "learned-columns")
    assert move.after < move.before and "today_pos +1.000" in move.note
    down = next(h for h in after if h.id == cols[0])
    last = next(m for m in down.stages or [] if m.stage == "learned-columns")
    assert last.after > last.before and "today_pos -1.000" in last.note


def test_a_search_whose_vector_channel_ranked_reads_the_dense_models(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []

    def model(name: str) -> Forest:
        read.append(name)
        return shipped(name)

    monkeypatch.setattr(learned, "_model", model)
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        ls.search(question=QUESTIONS[0], max_entities=50)
        ls.search(question=QUESTIONS[0], max_entities=50, channels=["bm25", "fulltext"])
    # (a search whose vector channel ranked keeps its table order: no table model)
    assert read == [learned.DENSE_MODEL, learned.TABLE_MODEL, learned.MODEL]
