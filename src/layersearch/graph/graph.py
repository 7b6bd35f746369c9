"""The entity graph: semantic-layer entities and memories as a labelled property graph.

Nodes carry exactly one label (``Datasource``, ``Model``, ``ModelColumn``,
``Measure``, ``Aggregation``, ``Memory``) and a property map; relationships are
typed (``CONTAINS``, ``JOINS``, ``MENTIONS``, ``REFERENCES``) and directed, at
most one of each type between an ordered pair of nodes.

The networkx ``MultiDiGraph`` (``EntityGraph.nx``) is the canonical structure
and is what other code may walk. Beside it the graph keeps the indexes the
Cypher evaluator anchors on — label → ids, name → ids, and typed adjacency in
both directions — so that a filter like ``(t:Model {name: 'orders'})`` is a
dictionary look-up rather than a scan. Everything is updated incrementally.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

__all__ = [
    "EntityGraph",
    "LABELS",
    "LABEL_ALIASES",
    "REL_TYPES",
    "NODE_PROPERTIES",
    "REL_PROPERTIES",
    "canonical_label",
]

LABELS: tuple[str, ...] = ("Datasource", "Model", "ModelColumn", "Measure", "Aggregation", "Memory")
#: alternative spellings accepted wherever a label is named
LABEL_ALIASES: dict[str, str] = {"Column": "ModelColumn"}
REL_TYPES: tuple[str, ...] = ("CONTAINS", "JOINS", "MENTIONS", "REFERENCES")
NODE_PROPERTIES: tuple[str, ...] = (
    "id",
    "name",
    "label",
    "description",
    "data_type",
    "datasource",
    "model",
    "formula",
    "hidden",
    "primary_key",
    "learning",
    "created_at",
)
REL_PROPERTIES: tuple[str, ...] = ("cardinality", "join_type", "source_columns", "target_columns")

_EMPTY: dict[str, dict[str, Any]] = {}


def canonical_label(label: str) -> str | None:
    """``label`` as stored (aliases resolved), or None when it is not a label."""
    label = LABEL_ALIASES.get(label, label)
    return label if label in LABELS else None


class EntityGraph:
    """A labelled property graph over entity ids, with look-up indexes."""

    def __init__(self) -> None:
        self.nx: nx.MultiDiGraph = nx.MultiDiGraph()
        self._label: dict[str, str] = {}
        self._props: dict[str, dict[str, Any]] = {}
        # dicts used as insertion-ordered sets: iteration order is reproducible
        self._by_label: dict[str, dict[str, None]] = {label: {} for label in LABELS}
        self._by_name: dict[str, dict[str, None]] = {}
        # node → rel type → neighbour → relationship properties
        self._out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._in: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}

    # -- updates ---------------------------------------------------------------

    def add_node(self, node_id: str, label: str, props: dict[str, Any]) -> None:
        """Add a node, or replace its label and properties when it exists (edges stay)."""
        canon = canonical_label(label)
        if canon is None:
            raise ValueError(f"unknown node label {label!r}; expected one of {', '.join(LABELS)}")
        if node_id in self._label:
            self._unindex(node_id)
        stored = {k: v for k, v in props.items() if v is not None}
        stored["id"] = node_id
        self._label[node_id] = canon
        self._props[node_id] = stored
        self._by_label[canon][node_id] = None
        name = stored.get("name")
        if isinstance(name, str):
            self._by_name.setdefault(name, {})[node_id] = None
        self._out.setdefault(node_id, {})
        self._in.setdefault(node_id, {})
        self.nx.add_node(node_id, label=canon, props=stored)

    def remove_node(self, node_id: str) -> None:
        """Remove a node and every relationship touching it (no-op when absent)."""
        if node_id not in self._label:
            return
        self._unindex(node_id)
        for rel_type, dsts in self._out.pop(node_id, {}).items():
            for dst in dsts:
                self._in[dst][rel_type].pop(node_id, None)
        for rel_type, srcs in self._in.pop(node_id, {}).items():
            for src in srcs:
                self._out[src][rel_type].pop(node_id, None)
        del self._label[node_id]
        del self._props[node_id]
        self.nx.remove_node(node_id)

    def add_edge(
        self, src: str, dst: str, rel_type: str, props: dict[str, Any] | None = None
    ) -> None:
        """Add (or replace) the ``rel_type`` relationship src → dst; both nodes must exist."""
        if rel_type not in REL_TYPES:
            raise ValueError(
                f"unknown relationship type {rel_type!r}; expected one of {', '.join(REL_TYPES)}"
            )
        for end in (src, dst):
            if end not in self._label:
                raise KeyError(f"no node {end!r} in the graph")
        stored = {k: v for k, v in (props or {}).items() if v is not None}
        self._out[src].setdefault(rel_type, {})[dst] = stored
        self._in[dst].setdefault(rel_type, {})[src] = stored
        self.nx.add_edge(src, dst, key=rel_type, props=stored)

    def remove_out_edges(self, node_id: str, rel_type: str) -> None:
        """Remove every ``rel_type`` relationship leaving ``node_id``."""
        dsts = self._out.get(node_id, {}).pop(rel_type, {})
        for dst in dsts:
            self._in[dst][rel_type].pop(node_id, None)
            self.nx.remove_edge(node_id, dst, key=rel_type)

    def remove_edge(self, src: str, dst: str, rel_type: str) -> None:
        """Remove one relationship (no-op when absent)."""
        if self._out.get(src, {}).get(rel_type, {}).pop(dst, None) is None:
            return
        self._in[dst][rel_type].pop(src, None)
        self.nx.remove_edge(src, dst, key=rel_type)

    def _unindex(self, node_id: str) -> None:
        self._by_label[self._label[node_id]].pop(node_id, None)
        name = self._props[node_id].get("name")
        if isinstance(name, str):
            ids = self._by_name.get(name)
            if ids is not None:
                ids.pop(node_id, None)
                if not ids:
                    del self._by_name[name]

    # -- reads -----------------------------------------------------------------

    def has_node(self, node_id: str) -> bool:
        return node_id in self._label

    def __len__(self) -> int:
        return len(self._label)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._label

    def node_ids(self) -> Iterable[str]:
        return self._label.keys()

    def label(self, node_id: str) -> str:
        return self._label[node_id]

    def props(self, node_id: str) -> dict[str, Any]:
        return self._props[node_id]

    def ids_with_label(self, label: str) -> Iterable[str]:
        return self._by_label.get(label, {}).keys()

    def ids_with_name(self, name: str) -> Iterable[str]:
        return self._by_name.get(name, {}).keys()

    def name_count(self, name: str) -> int:
        return len(self._by_name.get(name, ()))

    def label_count(self, label: str) -> int:
        return len(self._by_label.get(label, ()))

    def out_neighbours(self, node_id: str, rel_type: str) -> dict[str, dict[str, Any]]:
        """Targets of ``rel_type`` relationships leaving ``node_id`` → their properties."""
        return self._out.get(node_id, _EMPTY).get(rel_type, _EMPTY)

    def in_neighbours(self, node_id: str, rel_type: str) -> dict[str, dict[str, Any]]:
        """Sources of ``rel_type`` relationships entering ``node_id`` → their properties."""
        return self._in.get(node_id, _EMPTY).get(rel_type, _EMPTY)

    def edge_props(self, src: str, dst: str, rel_type: str) -> dict[str, Any] | None:
        return self._out.get(src, _EMPTY).get(rel_type, _EMPTY).get(dst)

    def edges(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """Every relationship as (src, dst, type, props)."""
        for src, by_type in self._out.items():
            for rel_type, dsts in by_type.items():
                for dst, props in dsts.items():
                    yield src, dst, rel_type, props

    def __repr__(self) -> str:
        return f"EntityGraph({len(self)} nodes, {self.nx.number_of_edges()} relationships)"
