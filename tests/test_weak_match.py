"""The weak-match warning: its two signals, the flag on a question the layer cannot
answer, none on one it can, and explanations only when asked for."""

from __future__ import annotations

import json
from typing import Any

import pytest

from layersearch.api import Layersearch
from layersearch.eval.weak import calibrate, flagged
from layersearch.plan import confidence
from layersearch.types import ChannelScore, Hit
from tests.support import MINI


def hit(ident: str, matched: list[str], sim: float | None) -> Hit:
    why = [ChannelScore(channel="schema", rank=1, score=1.0, contribution=0.01, matched=matched)]
    if sim is not None:
        why.append(ChannelScore(channel="vector", rank=1, score=sim, contribution=0.01))
    return Hit(kind="column", id=ident, score=0.01, explanation=why)


def test_signals_read_exact_matches_and_the_best_dense_score() -> None:
    hits = [hit("a.b.c", ["revenue", "store→shop 0.4"], 0.3), hit("a.b.d", ["month"], 0.5)]
    m = confidence.measure("revenue store month", hits)
    assert m is not None
    assert m.coverage == pytest.approx(2 / 3) and m.similarity == 0.5
    assert not m.weak
    m = confidence.measure("birth country of the customer", [hit("a.b.c", ["customer"], 0.2)])
    assert m is not None and m.weak and m.coverage == pytest.approx(1 / 3)
    assert confidence.measure("the of and", []) is None


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # the flag needs the dense channel: the hashing embedder stands in for a model
    with Layersearch(tmp_path_factory.mktemp("weak") / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        yield ls


def test_a_question_the_layer_cannot_answer_is_flagged(mini: Layersearch) -> None:
    resp = mini.search(question="weather forecast for the moon landing")
    assert resp.weak_match is True
    assert any(w.startswith("weak match:") for w in resp.warnings)
    assert all(h.explanation is None for h in resp.results)  # not asked for


def test_without_the_dense_channel_nothing_is_flagged(tmp_path: Any) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        assert ls.search(question="weather forecast for the moon landing").weak_match is None


def test_an_answerable_question_is_not(mini: Layersearch) -> None:
    resp = mini.search(question="total revenue of orders")
    assert resp.weak_match is None
    assert "weak_match" not in json.loads(resp.model_dump_json())
    explained = mini.search(question="total revenue of orders", explain=True)
    assert explained.results[0].explanation  # kept when asked for
    assert [h.id for h in explained.results] == [h.id for h in resp.results]


def test_calibration_keeps_false_flags_under_the_bound() -> None:
    records = [
        {"right": True, "coverage": 0.8, "sim": 0.6},
        {"right": True, "coverage": 0.2, "sim": 0.7},
        {"right": False, "coverage": 0.0, "sim": 0.2},
        {"right": False, "coverage": 0.6, "sim": 0.2},
    ]
    best = calibrate(records, 0.0)["best"]
    assert best["right_flagged"] == 0.0 and best["wrong_flagged"] == 1.0
    assert flagged(records[2], best["coverage"], best["similarity"])


def test_the_check_reads_channels_without_tracing_stages(mini: Layersearch) -> None:
    from layersearch.plan.answer import explained
    from layersearch.types import SearchRequest

    plain = SearchRequest(question="total revenue of orders by store")
    assert explained(plain, dense=False) is plain  # nothing to read without a model
    assert (
        explained(plain.model_copy(update={"channels": ["fulltext"]}), dense=True).explain is False
    )
    asked = explained(plain, dense=True)
    assert asked.explain and asked._channels_only and not plain._channels_only
    full = mini.entities.search(plain.model_copy(update={"explain": True}))
    light = mini.entities.search(asked)
    assert [h.id for h in light.results] == [h.id for h in full.results]
    assert [h.explanation for h in light.results] == [h.explanation for h in full.results]
    fusion_stages = {"schema-over-fulltext"}
    assert any(m.stage in fusion_stages for h in full.results for m in h.stages or [])
    assert not any(m.stage in fusion_stages for h in light.results for m in h.stages or [])
