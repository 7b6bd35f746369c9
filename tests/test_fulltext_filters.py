"""Filters on kind, scope and id: one value is a term query, several a term set,
``exclude_kinds`` leaves kinds out; each gives the hits and scores of searching
everything and keeping the documents that pass."""

from __future__ import annotations

import pytest

from layersearch.ranking.fulltext import FTDoc, FullTextIndex

BOOSTS = {"name": 3.0, "description": 1.0}
DOCS = [
    FTDoc("a", "column", ["shop"], {"name": "order total", "description": "amount"}),
    FTDoc("b", "column", ["shop"], {"name": "status", "description": "order status"}),
    FTDoc("c", "model", ["shop"], {"name": "orders", "description": "every order"}),
    FTDoc("d", "memory", ["shop"], {"name": "order note", "description": "orders ship"}),
    FTDoc("e", "memory", ["fin"], {"name": "order refunds", "description": "order"}),
    FTDoc("f", "measure", ["fin"], {"name": "order count", "description": "orders"}),
]
KIND = {d.id: d.kind for d in DOCS}
SCOPES = {d.id: set(d.scopes) for d in DOCS}


@pytest.fixture(scope="module")
def ft() -> FullTextIndex:
    index = FullTextIndex.create(BOOSTS)
    index.write(add=DOCS, stamp="1")
    return index


@pytest.mark.parametrize(
    "kinds", [("memory",), ("column",), ("memory", "model"), ("column", "model", "measure")]
)
def test_kind_filters_keep_exactly_those_kinds(ft: FullTextIndex, kinds: tuple[str, ...]) -> None:
    everything = ft.search("order", 10)
    assert len(everything) == len(DOCS)
    want = [h for h in everything if KIND[h[0]] in kinds]
    assert ft.search("order", 10, kinds=kinds) == want
    assert want  # every case keeps something


def test_excluded_kinds_match_the_kind_set_of_every_other_kind(ft: FullTextIndex) -> None:
    others = ("aggregation", "column", "datasource", "measure", "model")
    got = ft.search("order", 10, exclude_kinds=("memory",))
    assert got == ft.search("order", 10, kinds=others)
    assert {KIND[i] for i, _ in got} == {"column", "model", "measure"}
    assert ft.search("order", 10, exclude_kinds=("memory", "column")) == [
        h for h in got if KIND[h[0]] != "column"
    ]


@pytest.mark.parametrize("scopes", [["shop"], ["fin"], ["fin", "shop"]])
def test_scope_filters_keep_exactly_those_scopes(ft: FullTextIndex, scopes: list[str]) -> None:
    want = [h for h in ft.search("order", 10) if SCOPES[h[0]] & set(scopes)]
    assert ft.search("order", 10, scopes=scopes) == want


def test_one_id_and_an_empty_filter(ft: FullTextIndex) -> None:
    assert [i for i, _ in ft.search("order", 10, ids=["e"])] == ["e"]
    assert ft.search("order", 10, ids=["e", "a"]) == [
        h for h in ft.search("order", 10) if h[0] in ("a", "e")
    ]
    assert ft.search("order", 10, kinds=()) == []
    # a filter on a value no document holds matches nothing, as a term set would
    assert ft.search("order", 10, kinds=("aggregation",)) == []


def test_filters_are_reused_across_searches(ft: FullTextIndex) -> None:
    first = ft.search("order", 10, kinds=("memory",))
    again = ft.search("status order", 10, kinds=("memory",))
    assert ft.search("order", 10, kinds=("memory",)) == first
    assert {i for i, _ in again} == {"d", "e"}
