"""Loading a semantic-layer folder into an EntityGraph (and a Kùzu copy) for tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from layersearch.graph.graph import NODE_PROPERTIES, EntityGraph
from layersearch.semantic.edges import catalog_edges
from layersearch.semantic.graphing import build_graph
from layersearch.semantic.importers.native import load_native
from layersearch.types import Memory

REPO = Path(__file__).resolve().parents[2]
FIXTURE_MODELS = REPO / "fixtures" / "cypher" / "models"
BUNDLED_MODELS = REPO / "models"


def memories_of(path: Path) -> list[Memory]:
    catalog = load_native(path)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Memory(
            id=f"memory:{i}",
            learning=spec.learning,
            description=spec.description,
            entities=list(spec.entities),
            query=spec.query,
            created_at=start + timedelta(days=i),
        )
        for i, spec in enumerate(catalog.memories, start=1)
    ]


def load_graph(path: Path) -> EntityGraph:
    catalog = load_native(path)
    return build_graph(catalog.entities(), catalog_edges(catalog), memories_of(path))


# -- the same graph in Kùzu -------------------------------------------------------

_KUZU_TYPES = {"hidden": "BOOLEAN", "primary_key": "BOOLEAN"}


def kuzu_connection(graph: EntityGraph) -> Any:
    """An in-memory Kùzu database holding ``graph``: one node table per label, each with
    every property (so a property absent on a label reads as null, as in our engine)."""
    import kuzu

    db = kuzu.Database()
    conn = kuzu.Connection(db)
    labels = sorted({graph.label(n) for n in graph.node_ids()} | {"Memory", "Model"})
    columns = ", ".join(f"{p} {_KUZU_TYPES.get(p, 'STRING')}" for p in NODE_PROPERTIES if p != "id")
    for label in labels:
        conn.execute(f"CREATE NODE TABLE {label}(id STRING PRIMARY KEY, {columns})")
    pairs: dict[str, set[tuple[str, str]]] = {}
    for src, dst, rel_type, _ in graph.edges():
        pairs.setdefault(rel_type, set()).add((graph.label(src), graph.label(dst)))
    rel_props = {
        "JOINS": ", cardinality STRING, join_type STRING, source_columns STRING[], target_columns STRING[]"
    }
    for rel_type, ends in sorted(pairs.items()):
        froms = ", ".join(f"FROM {a} TO {b}" for a, b in sorted(ends))
        conn.execute(f"CREATE REL TABLE {rel_type}({froms}{rel_props.get(rel_type, '')})")
    for node_id in graph.node_ids():
        props = {p: graph.props(node_id).get(p) for p in NODE_PROPERTIES}
        keys = ", ".join(f"{p}: ${p}" for p in props)
        conn.execute(f"CREATE (:{graph.label(node_id)} {{{keys}}})", props)
    for src, dst, rel_type, props in graph.edges():
        a, b = graph.label(src), graph.label(dst)
        values = {
            k: props.get(k)
            for k in ("cardinality", "join_type", "source_columns", "target_columns")
        }
        sets = ""
        params: dict[str, Any] = {"s": src, "d": dst}
        if rel_type == "JOINS":
            sets = " {" + ", ".join(f"{k}: ${k}" for k in values) + "}"
            params.update(values)
        conn.execute(
            f"MATCH (a:{a} {{id: $s}}), (b:{b} {{id: $d}}) CREATE (a)-[:{rel_type}{sets}]->(b)",
            params,
        )
    return db, conn


def kuzu_ids(conn: Any, query: str, params: dict[str, Any] | None = None) -> list[str]:
    result = conn.execute(query, params or {})
    out = []
    while result.has_next():
        out.append(result.get_next()[0])
    return out
