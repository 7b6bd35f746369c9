"""Cypher filters inside search: allowlist before ranking, scoping, hidden entities, updates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from layersearch import CypherReadOnlyError, CypherUnknownError, Layersearch
from layersearch.graph.graph import EntityGraph
from layersearch.semantic.graphing import build_graph, sync_graph
from tests.support import MINI


def ids(resp) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.id for h in resp.results]


def test_label_union_and_column_alias(mini: Layersearch) -> None:
    a = mini.filter_ids("MATCH (n:Measure:Aggregation) RETURN n.id AS id")
    assert a == {
        "shop.orders.total_revenue",
        "shop.orders.order_count",
        "shop.orders.weighted_avg",
        "crm.deals.pipeline_value",
    }
    assert mini.filter_ids("MATCH (n:Column) RETURN n.id AS id") == mini.filter_ids(
        "MATCH (n:ModelColumn) RETURN n.id AS id"
    )


def test_filter_is_an_allowlist_before_ranking(mini: Layersearch) -> None:
    f = "MATCH (n:Measure) RETURN n.id AS id"
    resp = mini.search(question="order revenue tax store", cypher_filter=f, max_results=50)
    assert ids(resp) and set(ids(resp)) <= {
        "shop.orders.total_revenue",
        "shop.orders.order_count",
        "crm.deals.pipeline_value",
    }
    resp = mini.search(entities=["shop.orders.net_revenue"], cypher_filter=f)
    assert "memory:1" not in ids(resp) and "shop.orders.net_revenue" not in ids(resp)


def test_memory_filter_from_the_readme(mini: Layersearch) -> None:
    f = (
        "MATCH (m:Memory)-[:MENTIONS]->(c:ModelColumn) WHERE c.name CONTAINS 'revenue' "
        "RETURN m.id AS id"
    )
    resp = mini.search(question="revenue refunds", cypher_filter=f)
    assert ids(resp) == ["memory:1"]


def test_filter_composes_with_datasource(mini: Layersearch) -> None:
    f = "MATCH (n) WHERE n.name = 'status' RETURN n.id AS id"
    resp = mini.search(question="status", cypher_filter=f, datasource="crm")
    assert ids(resp) == ["crm.deals.status"]


def test_empty_filter_result_warns(mini: Layersearch) -> None:
    resp = mini.search(
        question="tax", cypher_filter="MATCH (n:Model) WHERE n.name = 'nope' RETURN n.id AS id"
    )
    assert resp.results == []
    assert resp.warnings == ["the cypher filter matched no entities or memories: no results"]


def test_hidden_entities_invisible_to_filters(mini: Layersearch) -> None:
    got = mini.filter_ids("MATCH (n) RETURN n.id AS id")
    assert not any("internal_score" in i or "raw_events" in i for i in got)
    with pytest.raises(CypherReadOnlyError, match="read-only"):
        mini.search(question="x", cypher_filter="MATCH (n) DETACH DELETE n")
    with pytest.raises(CypherUnknownError, match="Did you mean Measure"):
        mini.search(question="x", cypher_filter="MATCH (n:Measur) RETURN n.id AS id")


def test_params(mini: Layersearch) -> None:
    f = "MATCH (n:Model) WHERE n.name = $name RETURN n.id AS id"
    assert mini.filter_ids(f, {"name": "stores"}) == {"shop.stores"}
    resp = mini.search(question="store", cypher_filter=f, params={"name": "stores"})
    assert ids(resp) == ["shop.stores"]


def test_graph_follows_memories_and_model_reloads(tmp_path: Path) -> None:
    src = tmp_path / "mini"
    shutil.copytree(MINI, src)
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(src)
    graph = ls.graph()
    f = "MATCH (m:Memory)-[:MENTIONS]->(:Model {name: 'stores'}) RETURN m.id AS id"
    assert ls.filter_ids(f) == {"memory:2"}
    m = ls.save_memory("Stores report weekly", entities=["shop.stores"])
    assert ls.filter_ids(f) == {"memory:2", m.id}
    ls.forget_memory(m.id)
    assert ls.filter_ids(f) == {"memory:2"}
    (src / "shop" / "stores.yaml").write_text(
        (src / "shop" / "stores.yaml").read_text().replace("store_name", "display_name")
    )
    ls.load(src)
    assert ls.graph() is graph, "updated in place, not rebuilt"
    assert ls.filter_ids("MATCH (c:Column) WHERE c.name = 'display_name' RETURN c.id AS id") == {
        "shop.stores.display_name"
    }
    assert ls.filter_ids("MATCH (c:Column) WHERE c.name = 'store_name' RETURN c.id AS id") == set()
    ls.close()


def test_sync_graph_equals_fresh_build(mini: Layersearch) -> None:
    corpus = mini.corpus()
    edges = mini.store.load_edges()
    fresh = build_graph(corpus.entities.values(), edges, corpus.memories.values())
    empty = EntityGraph()
    sync_graph(empty, corpus.entities.values(), edges, corpus.memories.values())
    assert sorted(empty.node_ids()) == sorted(fresh.node_ids())
    assert sorted((s, d, t) for s, d, t, _ in empty.edges()) == sorted(
        (s, d, t) for s, d, t, _ in fresh.edges()
    )
    assert sync_graph(empty, corpus.entities.values(), edges, corpus.memories.values()) == (0, 0)
