"""Relationships derived from a catalog: CONTAINS, JOINS and REFERENCES.

MENTIONS edges (memory → entity) come from memory tags and are added where
memories live (the store / the API), not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from layersearch.semantic.model import Aggregation, Catalog, EdgeRecord, Measure

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def formula_references(formula: str, column_names: set[str]) -> list[str]:
    """Column names a formula mentions (``order_total:sum``, ``sum(order_total)``,
    ``orders.order_total``), in order of first appearance, each once."""
    found: list[str] = []
    for m in _IDENT.finditer(formula):
        token = m.group(0)
        leaf = token.rsplit(".", 1)[-1]
        if leaf in column_names and leaf not in found:
            found.append(leaf)
    return found


def catalog_edges(catalog: Catalog) -> Iterator[EdgeRecord]:
    for m in catalog.models:
        yield EdgeRecord(m.datasource, m.id, "CONTAINS")
        cols = {c.name for c in m.columns}
        for c in m.columns:
            yield EdgeRecord(m.id, f"{m.id}.{c.name}", "CONTAINS")
        for me in m.measures:
            yield EdgeRecord(m.id, f"{m.id}.{me.name}", "CONTAINS")
        for a in m.aggregations:
            yield EdgeRecord(m.id, f"{m.id}.{a.name}", "CONTAINS")
        leaves: list[Measure | Aggregation] = [*m.measures, *m.aggregations]
        for leaf in leaves:
            if leaf.formula:
                for col in formula_references(leaf.formula, cols):
                    yield EdgeRecord(f"{m.id}.{leaf.name}", f"{m.id}.{col}", "REFERENCES")
        for j in m.joins:
            target = j.target if "." in j.target else f"{m.datasource}.{j.target}"
            yield EdgeRecord(
                m.id,
                target,
                "JOINS",
                {
                    "cardinality": j.cardinality,
                    "join_type": j.join_type,
                    "source_columns": [a for a, _ in j.on],
                    "target_columns": [b for _, b in j.on],
                },
            )
