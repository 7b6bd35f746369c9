"""Build the entity graph from semantic-layer entities, derived edges and memories.

Hidden entities are left out entirely (with every edge touching them), so no
filter can see them. Memories are added and removed one at a time as they
change; the graph is never rebuilt for that.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from layersearch.graph.graph import EntityGraph
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.types import Memory

__all__ = ["build_graph", "sync_graph", "add_memory", "remove_memory", "entity_props"]

log = logging.getLogger("layersearch.semantic.graphing")


def entity_props(entity: Entity) -> dict[str, Any]:
    """The node properties a filter can read for an entity."""
    return {
        "id": entity.id,
        "name": entity.name,
        "label": entity.label,
        "description": entity.description,
        "data_type": entity.data_type,
        "datasource": entity.datasource,
        "model": entity.model,
        "formula": entity.formula,
        "hidden": entity.hidden,
        "primary_key": entity.primary_key,
    }


def build_graph(
    entities: Iterable[Entity], edges: Iterable[EdgeRecord], memories: Iterable[Memory]
) -> EntityGraph:
    graph = EntityGraph()
    for entity in entities:
        if not entity.hidden:
            graph.add_node(entity.id, entity.graph_label, entity_props(entity))
    skipped = 0
    for edge in edges:
        if graph.has_node(edge.src) and graph.has_node(edge.dst):
            graph.add_edge(edge.src, edge.dst, edge.type, dict(edge.props))
        else:
            skipped += 1
    if skipped:
        log.debug("left out %d edges touching hidden or absent entities", skipped)
    for memory in memories:
        add_memory(graph, memory)
    return graph


def _memory_props(memory: Memory) -> dict[str, Any]:
    return {
        "learning": memory.learning,
        "description": memory.description,
        "created_at": memory.created_at.isoformat(),
    }


def sync_graph(
    graph: EntityGraph,
    entities: Iterable[Entity],
    edges: Iterable[EdgeRecord],
    memories: Iterable[Memory],
) -> tuple[int, int]:
    """Bring ``graph`` in line with a new snapshot by changing only what differs.

    Returns (nodes changed, relationships changed). Used when models are
    re-loaded or another process wrote to the store: the graph is updated in
    place, never rebuilt, so a large unchanged catalog costs a comparison only.
    """
    want: dict[str, tuple[str, dict[str, Any]]] = {}
    for e in entities:
        if not e.hidden:
            want[e.id] = (e.graph_label, entity_props(e))
    mems = list(memories)
    for m in mems:
        want[m.id] = ("Memory", _memory_props(m))
    nodes_changed = 0
    for node_id in [n for n in graph.node_ids() if n not in want]:
        graph.remove_node(node_id)
        nodes_changed += 1
    for node_id, (label, props) in want.items():
        if not graph.has_node(node_id):
            graph.add_node(node_id, label, props)
            nodes_changed += 1
            continue
        stored = {k: v for k, v in props.items() if v is not None}
        stored["id"] = node_id
        if graph.label(node_id) != label or graph.props(node_id) != stored:
            graph.add_node(node_id, label, props)
            nodes_changed += 1
    want_edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in edges:
        if edge.src in want and edge.dst in want:
            want_edges[(edge.src, edge.dst, edge.type)] = {
                k: v for k, v in edge.props.items() if v is not None
            }
    for m in mems:
        for tag in m.entities:
            if tag != m.id and tag in want:
                want_edges[(m.id, tag, "MENTIONS")] = {}
    edges_changed = 0
    for src, dst, rel, _ in list(graph.edges()):
        if (src, dst, rel) not in want_edges:
            graph.remove_edge(src, dst, rel)
            edges_changed += 1
    for (src, dst, rel), props in want_edges.items():
        if graph.edge_props(src, dst, rel) != props:
            graph.add_edge(src, dst, rel, props)
            edges_changed += 1
    return nodes_changed, edges_changed


def add_memory(graph: EntityGraph, memory: Memory) -> None:
    """Add (or replace) a memory node and its MENTIONS edges to tagged entities in the graph."""
    if graph.has_node(memory.id):
        graph.remove_out_edges(memory.id, "MENTIONS")
    graph.add_node(memory.id, "Memory", _memory_props(memory))
    for tag in memory.entities:
        # tags on hidden, unknown or not-yet-loaded entities are not linked (hidden ones must
        # stay invisible to filters); a self-tag would be a meaningless loop
        if tag != memory.id and graph.has_node(tag):
            graph.add_edge(memory.id, tag, "MENTIONS")


def remove_memory(graph: EntityGraph, memory_id: str) -> None:
    graph.remove_node(memory_id)
