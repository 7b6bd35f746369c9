"""Schema-linking metrics against hand-computed numbers."""

from __future__ import annotations

import pytest

from layersearch.errors import ConfigError
from layersearch.eval.metrics import (
    METRIC_KEYS,
    aggregate,
    all_found_at_k,
    any_found_at_k,
    recall_at_k,
    reciprocal_rank,
)

RANKED = ["d.a", "d.X", "d.b", "D.A", "d.c"]  # "D.A" repeats d.a and does not take a slot


def test_recall_at_k() -> None:
    gold = ["d.b", "d.c"]
    assert recall_at_k(RANKED, gold, 1) == 0.0
    assert recall_at_k(RANKED, gold, 3) == 0.5
    assert recall_at_k(RANKED, gold, 4) == 1.0  # d.c is 4th once the repeat is dropped
    assert recall_at_k(RANKED, ["D.x"], 2) == 1.0  # case-insensitive
    assert recall_at_k([], gold, 5) == 0.0


def test_all_found_and_reciprocal_rank() -> None:
    assert all_found_at_k(RANKED, ["d.a", "d.b"], 3) is True
    assert all_found_at_k(RANKED, ["d.a", "d.c"], 3) is False
    assert reciprocal_rank(RANKED, ["d.b"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, ["d.c", "d.x"]) == 0.5
    assert reciprocal_rank(RANKED, ["d.zzz"]) == 0.0


def test_any_found_at_k() -> None:
    assert any_found_at_k(RANKED, ["d.zzz", "d.b"], 3) is True
    assert any_found_at_k(RANKED, ["d.zzz", "d.b"], 2) is False
    assert any_found_at_k(RANKED, ["d.c"], 4) is True  # the repeat takes no slot
    assert any_found_at_k([], ["d.a"], 5) is False
    with pytest.raises(ConfigError, match="gold ids are empty"):
        any_found_at_k(RANKED, [], 3)


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="gold ids are empty"):
        recall_at_k(RANKED, [], 3)
    with pytest.raises(ConfigError, match="k must be at least 1"):
        recall_at_k(RANKED, ["d.a"], 0)
    with pytest.raises(ConfigError, match="question 0: needs ranked_tables"):
        aggregate([{"gold_tables": ["d.a"]}])


def test_aggregate_macro_average() -> None:
    q1 = {
        "ranked_tables": ["d.t1", "d.t2", "d.t3"],
        "gold_tables": ["d.t1"],
        "ranked_columns": ["d.t1.a", "d.t1.b"],
        "gold_columns": ["d.t1.b", "d.t1.z"],
    }
    q2 = {
        "ranked_tables": ["d.t9", "d.t8", "d.t7", "d.t6", "d.t5", "d.t2"],
        "gold_tables": ["d.t2", "d.t8"],
        "ranked_columns": ["d.t2.c"],
        "gold_columns": [],
    }
    result = aggregate([q1, q2])
    assert tuple(result) == METRIC_KEYS
    assert result["questions"] == 2
    # q1: recall 1 at every k, rr 1. q2: t8 at rank 2, t2 at rank 6.
    assert result["table_recall@1"] == pytest.approx((1 + 0) / 2)
    assert result["table_recall@3"] == pytest.approx((1 + 0.5) / 2)
    assert result["table_recall@5"] == pytest.approx((1 + 0.5) / 2)
    assert result["table_recall@10"] == pytest.approx((1 + 1) / 2)
    assert result["all_gold_tables@5"] == pytest.approx((1 + 0) / 2)
    assert result["table_mrr"] == pytest.approx((1 + 0.5) / 2)
    # columns: only q1 has gold columns, one of two found
    assert result["column_recall@5"] == pytest.approx(0.5)
    assert result["column_recall@20"] == pytest.approx(0.5)


def test_aggregate_empty_and_no_columns() -> None:
    empty = aggregate([])
    assert empty["questions"] == 0
    assert all(empty[k] is None for k in METRIC_KEYS[1:])
    only_tables = aggregate([{"ranked_tables": ["d.a"], "gold_tables": ["d.a"]}])
    assert only_tables["table_recall@1"] == 1.0
    assert only_tables["column_recall@10"] is None
