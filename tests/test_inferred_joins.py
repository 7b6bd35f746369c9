"""Joins inferred from names between two of the best tables that no declared join links."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.rank import inferred_joins, join_key_order
from layersearch.semantic.model import EdgeRecord, Entity


def _col(entity_id: str, data_type: str | None = None, pk: bool = False) -> Entity:
    ds, model, name = entity_id.split(".")
    return Entity(
        id=entity_id,
        kind="column",
        name=name,
        datasource=ds,
        model=model,
        data_type=data_type,
        primary_key=pk,
    )


COLUMNS = [
    _col("air.flights.FlightNo", "number"),
    _col("air.flights.Airline", "number"),
    _col("air.flights.DestAirport", "text"),
    _col("air.airlines.uid", "number", pk=True),
    _col("air.airlines.Airline", "text"),
    _col("air.airports.AirportCode", "text", pk=True),
    _col("air.airports.City", "text"),
    _col("food.LOCATION.RESTAURANT_ID", "number"),
    _col("food.LOCATION.CITY_NAME", "text"),
    _col("food.RESTAURANT.ID", "int", pk=True),
    _col("food.RESTAURANT.NAME", "varchar(40)"),
    _col("league.match_season.Player", "text"),
    _col("league.player.Player_ID", "number", pk=True),
    _col("other.airlines.uid", "number", pk=True),
    _col("keys.orders.customer", "number"),
    _col("keys.customers.a", "number", pk=True),
    _col("keys.customers.b", "number", pk=True),
]
ENTITIES = {e.id: e for e in COLUMNS}


def _leaves(table: str) -> list[str]:
    return sorted(i for i in ENTITIES if i.rsplit(".", 1)[0] == table)


def _infer(
    tables: Sequence[str],
    declared: Sequence[EdgeRecord] | None = None,
    ranked: Sequence[str] | None = None,
) -> list[EdgeRecord]:
    if ranked is None:  # every leaf of the tables ranked
        ranked = [c for t in tables for c in _leaves(t)]
    return inferred_joins(tables, declared or [], ranked, _leaves, ENTITIES.get)


def _pairs(edges: list[EdgeRecord]) -> list[tuple[str, str]]:
    return [
        (f"{e.src}.{e.props['source_columns'][0]}", f"{e.dst}.{e.props['target_columns'][0]}")
        for e in edges
    ]


def test_a_column_named_after_a_table_joins_its_primary_key() -> None:
    got = _infer(["air.flights", "air.airports", "air.airlines"])
    assert _pairs(got) == [("air.flights.Airline", "air.airlines.uid")]
    assert got[0].type == "JOINS" and got[0].props["inferred"] is True


def test_only_ranked_columns_are_read() -> None:
    tables = ["air.flights", "air.airlines"]
    assert _infer(tables, ranked=["air.flights.FlightNo", "air.airlines.Airline"]) == []
    # the primary key need not be ranked: all of the other table's leaves are read for it
    got = _infer(tables, ranked=["air.flights.Airline"])
    assert _pairs(got) == [("air.flights.Airline", "air.airlines.uid")]


def test_a_trailing_id_and_plurals_and_case_are_read_alike() -> None:
    got = _infer(["food.LOCATION", "food.RESTAURANT"])
    assert _pairs(got) == [("food.LOCATION.RESTAURANT_ID", "food.RESTAURANT.ID")]


def test_a_declared_join_between_the_two_tables_wins() -> None:
    declared = [
        EdgeRecord(
            "air.airlines",
            "air.flights",
            "JOINS",
            {"source_columns": ["uid"], "target_columns": ["FlightNo"]},
        )
    ]
    assert _infer(["air.flights", "air.airlines"], declared) == []


def test_types_of_different_classes_do_not_join() -> None:
    # match_season.Player holds a name (text); player.Player_ID is a number
    assert _infer(["league.match_season", "league.player"]) == []


def test_no_join_across_datasources_nor_without_one_primary_key() -> None:
    assert _infer(["air.flights", "other.airlines"]) == []
    assert _infer(["keys.orders", "keys.customers"]) == []  # a two-column key


def test_inferred_keys_follow_the_later_table_like_declared_ones() -> None:
    ids = [
        "air.flights",
        "air.flights.FlightNo",
        "air.airports.City",
        "air.airlines.Airline",
        "air.airports",
        "air.flights.DestAirport",
        "air.airlines",
        "air.airlines.uid",
        "air.flights.Airline",
    ]

    def table_of(doc_id: str) -> str:
        return ".".join(doc_id.split(".")[:2])

    def no_joins(_: str) -> list[EdgeRecord]:
        return []

    assert join_key_order(ids, table_of, no_joins, 5) is None
    order = join_key_order(ids, table_of, no_joins, 5, _infer)
    assert order is not None
    moved = [ids[i] for i, _ in order]
    # both keys right after airlines' first hit (its Airline column), taking its score
    assert moved[:6] == [
        "air.flights",
        "air.flights.FlightNo",
        "air.airports.City",
        "air.airlines.Airline",
        "air.airlines.uid",  # (the two in their own order)
        "air.flights.Airline",
    ]
    assert dict((ids[i], src) for i, src in order)["air.airlines.uid"] == 3
    # among two tables only, airlines is not one of the best: nothing is inferred
    assert join_key_order(ids, table_of, no_joins, 2, _infer) is None


def _spider_catalog(path: Path) -> Path:
    tables = ["flights", "airlines", "airports"]
    columns = [
        (-1, "*", "text"),
        (0, "FlightNo", "number"),
        (0, "Airline", "number"),
        (0, "SourceAirport", "text"),
        (1, "uid", "number"),
        (1, "Airline", "text"),
        (1, "Country", "text"),
        (2, "AirportCode", "text"),
        (2, "City", "text"),
    ]
    db = {
        "db_id": "air",
        "table_names_original": tables,
        "table_names": tables,
        "column_names_original": [[t, c] for t, c, _ in columns],
        "column_names": [[t, c.lower()] for t, c, _ in columns],
        "column_types": [ty for _, _, ty in columns],
        "primary_keys": [1, 4, 7],
        "foreign_keys": [[3, 7]],
    }
    out = path / "tables.json"
    out.write_text(json.dumps([db]))
    return out


def test_search_brings_the_inferred_keys_and_the_graph_keeps_declared_joins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch import Layersearch

    monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", "")
    with Layersearch(":memory:") as ls:
        ls.load(_spider_catalog(tmp_path))
        question = "How many flights does the airline of country Iceland have from city Reno?"

        def columns() -> list[str]:
            hits = ls.search(question=question, max_results=30).results
            return [h.id for h in hits if h.kind == "column"]

        # (the learned column order off: the join keys alone)
        learned = frozenset({"learned-columns"})
        ls.entities.ranking = EntityRankingConfig(without=learned)
        with_joins = columns()
        ls.entities.ranking = EntityRankingConfig(infer_joins=False, without=learned)
        without = columns()
        assert "air.airlines.uid" in with_joins
        assert with_joins.index("air.airlines.uid") < without.index("air.airlines.uid")
        # inferred at query time only: no stored edge says flights joins airlines
        joined = ls.filter_ids("MATCH (a:Model)-[:JOINS]->(b:Model) RETURN b.id AS id")
        assert joined == {"air.airports"}
