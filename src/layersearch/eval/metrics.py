"""Schema-linking metrics: pure functions over ranked ids and gold ids.

Ids compare case-insensitively (``shop.Orders`` is ``shop.orders``), and a
ranked list counts each id once, at its first position.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from layersearch.errors import ConfigError

__all__ = [
    "recall_at_k",
    "any_found_at_k",
    "all_found_at_k",
    "reciprocal_rank",
    "aggregate",
    "METRIC_KEYS",
]

TABLE_RECALL_KS = (1, 3, 5, 10)
COLUMN_RECALL_KS = (5, 10, 20)
METRIC_KEYS = (
    "questions",
    *(f"table_recall@{k}" for k in TABLE_RECALL_KS),
    "all_gold_tables@5",
    "table_mrr",
    *(f"column_recall@{k}" for k in COLUMN_RECALL_KS),
)


def _ranked(ranked: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for r in ranked:
        key = r.lower()
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _gold(gold: Collection[str]) -> set[str]:
    keys = {g.lower() for g in gold}
    if not keys:
        raise ConfigError("gold ids are empty: recall is undefined for a question without gold")
    return keys


def _check_k(k: int) -> None:
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Fraction of the gold ids found among the first ``k`` ranked ids."""
    _check_k(k)
    keys = _gold(gold)
    return len(keys.intersection(_ranked(ranked)[:k])) / len(keys)


def any_found_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> bool:
    """Whether some gold id is among the first ``k`` ranked ids."""
    _check_k(k)
    return not _gold(gold).isdisjoint(_ranked(ranked)[:k])


def all_found_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> bool:
    """Whether every gold id is among the first ``k`` ranked ids."""
    _check_k(k)
    return _gold(gold) <= set(_ranked(ranked)[:k])


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float:
    """1 / (1-based rank of the first gold id), 0.0 when none is ranked."""
    keys = _gold(gold)
    for rank, r in enumerate(_ranked(ranked), start=1):
        if r in keys:
            return 1.0 / rank
    return 0.0


def aggregate(per_question: list[dict[str, Any]]) -> dict[str, float | int | None]:
    """Macro-average over questions, each a dict with ``ranked_tables``,
    ``gold_tables``, ``ranked_columns`` and ``gold_columns`` (id lists).

    Table metrics average over every question (each must have gold tables);
    column metrics over those with at least one gold column, and are None
    when there is none. Returns exactly the keys of :data:`METRIC_KEYS`.
    """
    sums: dict[str, float] = dict.fromkeys(METRIC_KEYS[1:], 0.0)
    with_columns = 0
    for i, q in enumerate(per_question):
        try:
            ranked_t, gold_t = q["ranked_tables"], q["gold_tables"]
            ranked_c, gold_c = q.get("ranked_columns", []), q.get("gold_columns", [])
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"question {i}: needs ranked_tables and gold_tables (and optionally "
                "ranked_columns, gold_columns)"
            ) from exc
        if not gold_t:
            raise ConfigError(f"question {i}: no gold tables")
        for k in TABLE_RECALL_KS:
            sums[f"table_recall@{k}"] += recall_at_k(ranked_t, gold_t, k)
        sums["all_gold_tables@5"] += float(all_found_at_k(ranked_t, gold_t, 5))
        sums["table_mrr"] += reciprocal_rank(ranked_t, gold_t)
        if gold_c:
            with_columns += 1
            for k in COLUMN_RECALL_KS:
                sums[f"column_recall@{k}"] += recall_at_k(ranked_c, gold_c, k)
    n = len(per_question)
    result: dict[str, float | int | None] = {"questions": n}
    for key, total in sums.items():
        denom = with_columns if key.startswith("column_") else n
        result[key] = total / denom if denom else None
    return result
