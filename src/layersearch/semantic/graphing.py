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

__all__ = ["build_graph", "add_memory", "remove_memory", "entity_props"]

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


def add_memory(graph: EntityGraph, memory: Memory) -> None:
    """Add (or replace) a memory node and its MENTIONS edges to tagged entities in the graph."""
    if graph.has_node(memory.id):
        graph.remove_out_edges(memory.id, "MENTIONS")
    graph.add_node(
        memory.id,
        "Memory",
        {
            "learning": memory.learning,
            "description": memory.description,
            "created_at": memory.created_at.isoformat(),
        },
    )
    for tag in memory.entities:
        # tags on hidden, unknown or not-yet-loaded entities are not linked (hidden ones must
        # stay invisible to filters); a self-tag would be a meaningless loop
        if tag != memory.id and graph.has_node(tag):
            graph.add_edge(memory.id, tag, "MENTIONS")


def remove_memory(graph: EntityGraph, memory_id: str) -> None:
    graph.remove_node(memory_id)
