"""EntityGraph updates, graph building, the public interface and the documented bounds."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from layersearch.errors import (
    CypherLimitError,
    CypherReadOnlyError,
    CypherSyntaxError,
    CypherUnknownError,
)
from layersearch.graph.cypher import MAX_BINDINGS, parse, run_filter
from layersearch.graph.graph import EntityGraph
from layersearch.semantic.graphing import add_memory, build_graph, remove_memory
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.types import Memory

from .graphs import FIXTURE_MODELS, load_graph


@pytest.fixture()
def graph() -> EntityGraph:
    return load_graph(FIXTURE_MODELS)


def _memory(n: int, *tags: str) -> Memory:
    return Memory(
        id=f"memory:{n}",
        learning=f"note {n}",
        entities=list(tags),
        created_at=datetime(2024, 5, n, tzinfo=UTC),
    )


def test_hidden_entities_never_reach_the_graph(graph: EntityGraph) -> None:
    assert not graph.has_node("shop.audit_log")
    assert not graph.has_node("shop.audit_log.event")
    assert not graph.has_node("shop.customers.ssn")
    # the memory tagged with the hidden column still exists, without that edge
    assert (
        run_filter(
            graph, "MATCH (m:Memory)-[:MENTIONS]->(x) WHERE x.name = 'ssn' RETURN m.id AS id"
        )
        == []
    )
    assert run_filter(graph, "MATCH (n) WHERE n.hidden RETURN n.id AS id") == []


def test_memories_are_added_and_removed_incrementally(graph: EntityGraph) -> None:
    q = "MATCH (m:Memory)-[:MENTIONS]->(:Model {name: 'products'}) RETURN m.id AS id"
    assert run_filter(graph, q) == []
    add_memory(graph, _memory(20, "shop.products", "shop.nope"))
    assert run_filter(graph, q) == ["memory:20"]
    add_memory(graph, _memory(20, "shop.orders"))  # re-tagged: old edges go
    assert run_filter(graph, q) == []
    remove_memory(graph, "memory:20")
    assert not graph.has_node("memory:20")
    assert run_filter(graph, "MATCH (m:Memory {id: 'memory:20'}) RETURN m.id AS id") == []


def test_entity_graph_indexes_follow_updates() -> None:
    g = EntityGraph()
    g.add_node("ds", "Datasource", {"name": "ds"})
    g.add_node("ds.t", "Model", {"name": "t"})
    g.add_node("ds.t.c", "Column", {"name": "c"})
    g.add_edge("ds", "ds.t", "CONTAINS")
    g.add_edge("ds.t", "ds.t.c", "CONTAINS")
    assert len(g) == 3 and g.label("ds.t.c") == "ModelColumn"
    assert list(g.ids_with_name("t")) == ["ds.t"]
    g.add_node("ds.t", "Model", {"name": "renamed"})  # replace properties, keep edges
    assert list(g.ids_with_name("t")) == [] and list(g.ids_with_name("renamed")) == ["ds.t"]
    assert run_filter(g, "MATCH (:Model {name: 'renamed'})-[:CONTAINS]->(c) RETURN c.id AS id") == [
        "ds.t.c"
    ]
    g.remove_out_edges("ds.t", "CONTAINS")
    assert run_filter(g, "MATCH (:Model)-[:CONTAINS]->(c) RETURN c.id AS id") == []
    g.remove_node("ds.t")
    assert not g.has_node("ds.t") and list(g.ids_with_label("Model")) == []
    assert g.nx.number_of_nodes() == 2 and g.nx.number_of_edges() == 0
    with pytest.raises(ValueError):
        g.add_node("x", "Table", {})
    with pytest.raises(KeyError):
        g.add_edge("ds", "missing", "CONTAINS")


def test_build_graph_skips_edges_to_hidden_nodes() -> None:
    entities = [
        Entity(id="d", kind="datasource", name="d", datasource="d"),
        Entity(id="d.m", kind="model", name="m", datasource="d", model="m"),
        Entity(id="d.m.x", kind="column", name="x", datasource="d", model="m", hidden=True),
    ]
    edges = [EdgeRecord("d", "d.m", "CONTAINS"), EdgeRecord("d.m", "d.m.x", "CONTAINS")]
    g = build_graph(entities, edges, [_memory(1, "d.m.x", "d.m")])
    assert len(g) == 3
    assert run_filter(g, "MATCH (a)-[]->(b) RETURN b.id AS id") == ["d.m"]
    assert run_filter(g, "MATCH (m:Memory {learning: 'note 1'}) RETURN m.id AS id") == ["memory:1"]
    assert run_filter(
        g, "MATCH (m:Memory) WHERE m.created_at STARTS WITH '2024-05-01' RETURN m.id AS id"
    ) == ["memory:1"]


def test_parse_is_cached_and_results_deterministic(graph: EntityGraph) -> None:
    text = "MATCH (n:Model) RETURN n.id AS id"
    assert parse(text) is parse(text)
    assert run_filter(graph, text) == sorted(run_filter(graph, text))
    ordered = run_filter(graph, text + " ORDER BY id DESC")
    assert ordered == sorted(ordered, reverse=True)


def test_union_all_and_duplicates_return_each_id_once(graph: EntityGraph) -> None:
    q = "MATCH (d:Datasource) RETURN d.id AS id UNION ALL MATCH (d:Datasource) RETURN d.id AS id"
    assert run_filter(graph, q) == ["crm", "shop"]


def test_syntax_error_carries_position_and_caret() -> None:
    with pytest.raises(CypherSyntaxError) as info:
        parse("MATCH (n:Model)\nWHERE n.name = = 'x'\nRETURN n.id AS id")
    err = info.value
    assert (err.line, err.column) == (2, 16)
    assert err.expected == "an expression"
    assert str(err).endswith("  WHERE n.name = = 'x'\n                 ^")


@pytest.mark.parametrize(
    "text",
    [
        # found by test_fuzz: str.isdigit() took the superscript for a digit, int() refused it
        "MATCH (a)-[*1..¹2]->(b) RETURN b.id AS id",
        "MATCH (n) WHERE n.x = ٣ RETURN n.id AS id",  # an Arabic-Indic digit
        "MATCH (n) WHERE n.x = 1e² RETURN n.id AS id",
    ],
)
def test_digits_of_other_scripts_are_a_syntax_error(text: str) -> None:
    with pytest.raises(CypherSyntaxError):
        parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (n) delete n",
        "MATCH (n) /* x */ SeT n.name = 1",
        "MATCH (n) // a comment\n CREATE (m)",
        "MATCH (n) WHERE n.name = 'ok' CALL x()",
        "load csv from 'x' as y return y as id",
    ],
)
def test_write_clauses_are_refused(text: str) -> None:
    with pytest.raises(CypherReadOnlyError, match="read-only"):
        parse(text)


def test_write_words_in_strings_and_comments_are_fine(graph: EntityGraph) -> None:
    q = "MATCH (n:Model) // DELETE everything\nWHERE n.name <> 'DROP TABLE' /* SET */ RETURN n.id AS id"
    assert len(run_filter(graph, q)) == 7


def test_missing_parameter_is_named(graph: EntityGraph) -> None:
    with pytest.raises(CypherUnknownError, match=r"\$ds"):
        run_filter(graph, "MATCH (n {datasource: $ds}) RETURN n.id AS id", {"other": 1})


def test_cartesian_explosion_stops_quickly(graph: EntityGraph) -> None:
    start = time.perf_counter()
    with pytest.raises(CypherLimitError, match=f"{MAX_BINDINGS:,}"):
        run_filter(graph, "MATCH (a), (b), (c), (d) RETURN a.id AS id")
    assert time.perf_counter() - start < 10


def test_regex_input_is_bounded(graph: EntityGraph) -> None:
    g = EntityGraph()
    g.add_node("x", "Model", {"name": "a" * 50_000 + "!"})
    start = time.perf_counter()
    assert run_filter(g, "MATCH (n) WHERE n.name =~ '.*a.*a.*!' RETURN n.id AS id") == []
    assert time.perf_counter() - start < 5
