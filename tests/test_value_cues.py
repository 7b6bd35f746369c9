"""Value-like words of a question point at the columns whose type can hold them.

A question names a value the schema has no word for ("flights from 'APG'", "cars
made in 1970", "heavier than 3500"): the column it filters on is one of the
table's columns of the fitting type (a text, a date or year, a number). In the
schema channel such a column gains VALUE_FIT of one average question word.
"""

from __future__ import annotations

from layersearch.corpora.entities import coverage_of
from layersearch.ranking.coverage import (
    VALUE_NONE,
    VALUE_NUMBER,
    VALUE_TEXT,
    VALUE_TIME,
    CoverageIndex,
    CoverageNode,
    value_cues,
    value_kind,
)
from layersearch.semantic.model import Entity

WEIGHTS = {"name": 3.0, "description": 1.0}


def test_value_cues_of_questions() -> None:
    assert value_cues("How many flights depart from 'APG'?") == {VALUE_TEXT}
    assert value_cues("Return the number of flights arriving in Aberdeen.") == {VALUE_TEXT}
    assert value_cues("Which cars were made in 1970?") == {VALUE_TIME}
    assert value_cues("Cars heavier than 3500 or faster than 9.5") == {VALUE_NUMBER}
    # a capitalised first word starts the sentence: it is not a name
    assert value_cues("How many singers are there?") == frozenset()
    assert value_cues("") == frozenset()


def test_value_kind_of_columns() -> None:
    assert value_kind("integer", "weight") == VALUE_NUMBER
    assert value_kind("number", "Year") == VALUE_TIME  # a year column of a numeric type
    assert value_kind("DATE", "shipped") == VALUE_TIME
    assert value_kind("varchar(20)", "name") == VALUE_TEXT
    assert value_kind(None, "order_date") == VALUE_TIME
    assert value_kind(None, "name") == VALUE_NONE
    assert value_kind("blob", "photo") == VALUE_NONE


def _flights() -> CoverageIndex:
    nodes = [
        CoverageNode("air", "group", None, {"name": "air"}),
        CoverageNode("air.flights", "table", "air", {"name": "flights"}),
        # ids sorted so that without the value cue the fitting column is never first
        CoverageNode("air.flights.a_id", "leaf", "air.flights", {"name": "a_id"}, "integer"),
        CoverageNode("air.flights.b_seats", "leaf", "air.flights", {"name": "b_seats"}, "integer"),
        CoverageNode("air.flights.c_gate", "leaf", "air.flights", {"name": "c_gate"}, "text"),
        CoverageNode("air.flights.d_year", "leaf", "air.flights", {"name": "d_year"}, "integer"),
        CoverageNode("air.flights.e_src", "leaf", "air.flights", {"name": "e_src"}, "varchar"),
    ]
    return CoverageIndex(nodes, WEIGHTS, keys={"air.flights.a_id"})


def _leaves(index: CoverageIndex, question: str) -> list[str]:
    return [i.rsplit(".", 1)[1] for i, _ in index.search(question, 10) if i.count(".") == 2]


def test_unmatched_columns_of_the_fitting_type_come_first() -> None:
    index = _flights()
    # no cue: keys first, then ids
    assert _leaves(index, "all flights") == ["a_id", "b_seats", "c_gate", "d_year", "e_src"]
    # a name: the text columns, ahead of the key
    assert _leaves(index, "flights from 'APG'")[:2] == ["c_gate", "e_src"]
    # a year: the year column
    assert _leaves(index, "flights in 1999")[0] == "d_year"
    # a number: the numeric columns that are not keys (a year column holds years)
    assert _leaves(index, "flights with more than 300")[:1] == ["b_seats"]


def test_cue_weighs_less_than_a_matched_word() -> None:
    index = _flights()
    ranked = index.search("seats of flights from 'APG'", 10)
    scores = dict(ranked)
    # the named column leads; a text column fits the name but matched no word
    assert ranked[1][0] == "air.flights.b_seats"
    assert scores["air.flights.b_seats"] > scores["air.flights.c_gate"] > scores["air.flights.a_id"]


def test_data_type_reaches_the_schema_channel() -> None:
    entities = {
        "air": Entity("air", "datasource", "air", "air"),
        "air.flights": Entity("air.flights", "model", "flights", "air", model="air.flights"),
        "air.flights.a_code": Entity(
            "air.flights.a_code", "column", "a_code", "air", model="air.flights", data_type="int"
        ),
        "air.flights.b_year": Entity(
            "air.flights.b_year", "column", "b_built", "air", model="air.flights", data_type="date"
        ),
    }
    index = coverage_of(entities, [])
    assert _leaves(index, "flights in 1999")[0] == "b_year"
