"""Whatever text comes in, the parser and evaluator raise only the CypherError family."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layersearch.errors import CypherError
from layersearch.graph.cypher import run_filter
from layersearch.graph.cypher.parser import parse_query

from .graphs import FIXTURE_MODELS, load_graph

GRAPH = load_graph(FIXTURE_MODELS)

FRAGMENTS = [
    "MATCH",
    "OPTIONAL",
    "WHERE",
    "WITH",
    "RETURN",
    "DISTINCT",
    "UNION",
    "ALL",
    "ORDER BY",
    "SKIP",
    "LIMIT",
    "AS",
    "id",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "IN",
    "STARTS WITH",
    "ENDS WITH",
    "CONTAINS",
    "IS NULL",
    "IS NOT NULL",
    "=~",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "-",
    "->",
    "<-",
    "--",
    "*",
    "*1..2",
    "..",
    ":",
    "|",
    ",",
    ".",
    "=",
    "<>",
    "<",
    ">",
    "+",
    "/",
    "%",
    "^",
    "n",
    "m",
    "n.id",
    "n.name",
    ":Model",
    ":Memory",
    ":MENTIONS",
    ":CONTAINS",
    "'orders'",
    '"x\\n"',
    "'\\u00e9'",
    "1",
    "2.5",
    "-3",
    "1e3",
    "true",
    "null",
    "$p",
    "toLower(",
    "size(",
    "coalesce(",
    "labels(",
    "type(",
    "// c\n",
    "/* c */",
    "`q`",
    "'(a+)+'",
    "'.*'",
    ";",
]


def _check(text: str) -> None:
    with contextlib.suppress(CypherError):
        run_filter(GRAPH, text, {"p": "orders"})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=120))
def test_arbitrary_text(text: str) -> None:
    _check(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=25))
def test_token_soup(parts: list[str]) -> None:
    _check(" ".join(parts))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(
        [
            "MATCH (n:Model) WHERE n.name = 'orders' RETURN n.id AS id",
            "MATCH (m:Memory)-[:MENTIONS]->(c:ModelColumn)<-[:CONTAINS]-(t:Model) RETURN m.id AS id",
            "MATCH (a)-[:JOINS*1..2]-(b) WHERE NOT (a)-->(:Measure) RETURN DISTINCT b.id AS id ORDER BY id",
        ]
    ),
    st.integers(0, 200),
    st.text(max_size=8),
)
def test_mutated_valid_queries(base: str, at: int, insert: str) -> None:
    at = min(at, len(base))
    _check(base[:at] + insert + base[at:])
    _check(base[:at] + base[at + len(insert) :])


def test_deep_nesting_is_a_limit_not_a_crash() -> None:
    for text in (
        "RETURN " + "[" * 5000,
        "MATCH (n) WHERE " + "NOT " * 5000 + "true RETURN n.id AS id",
    ):
        try:
            parse_query(text)
        except CypherError:
            continue
        raise AssertionError("expected a CypherError")
