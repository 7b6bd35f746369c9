"""Term clauses are built once per (field, token, boost) and reused across searches.

A reused clause must carry the boost it was asked with: searches that override the
boosts, one after the other, score exactly as on a fresh index.
"""

from __future__ import annotations

import pytest

from layersearch.ranking.fulltext import FTDoc, FullTextIndex

BOOSTS = {"name": 3.0, "description": 1.0}
DOCS = [
    FTDoc(id="a", kind="column", fields={"name": "order total", "description": "amount"}),
    FTDoc(id="b", kind="column", fields={"name": "status", "description": "order status"}),
    FTDoc(id="c", kind="model", fields={"name": "orders", "description": "every order"}),
]


def _fresh(text: str, boosts: dict[str, float] | None) -> list[tuple[str, float]]:
    ft = FullTextIndex.create(BOOSTS)
    ft.write(add=DOCS, stamp="1")
    return ft.search(text, 10, boosts=boosts)


@pytest.mark.parametrize("text", ["order", "order status", "total amount"])
def test_reused_clauses_score_as_fresh_ones(text: str) -> None:
    ft = FullTextIndex.create(BOOSTS)
    ft.write(add=DOCS, stamp="1")
    overrides: list[dict[str, float] | None] = [
        None,
        {"name": 1.0, "description": 1.0},
        {"name": 3.0, "description": 5.0},
        None,
    ]
    for boosts in overrides * 2:
        assert ft.search(text, 10, boosts=boosts) == _fresh(text, boosts), (text, boosts)


def test_boost_override_changes_scores() -> None:
    ft = FullTextIndex.create(BOOSTS)
    ft.write(add=DOCS, stamp="1")
    default = dict(ft.search("status", 10))
    flat = dict(ft.search("status", 10, boosts={"name": 1.0, "description": 1.0}))
    assert default["b"] > flat["b"] > 0


def test_analysed_tokens_are_searched_as_given_and_doc_freq_counts_them() -> None:
    ft = FullTextIndex.create(BOOSTS)
    ft.write(add=DOCS, stamp="1")
    # "order" is the index token of "orders" / "order": searching it as a token
    # scores as the analysed text does
    assert ft.search("order", 10, analysed=True) == ft.search("orders", 10)
    # a token is not analysed again: "Order" (capitalised) is no index token
    assert ft.search("Order", 10, analysed=True) == []
    assert ft.search("Order", 10) != []
    assert ft.doc_freq("description", "order") == 2
    assert ft.doc_freq("name", "order") == 2
    assert ft.doc_freq("name", "absent") == 0
