"""The schema channel's index (a :class:`~layersearch.ranking.coverage.CoverageIndex`)
built from entities and their joins."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from layersearch.corpora.entities.config import DEFAULT_INDEX, EntityIndexConfig
from layersearch.corpora.entities.documents import entity_doc
from layersearch.corpora.snapshot import EdgeMap
from layersearch.ranking.coverage import CoverageIndex, CoverageNode, links_from_edges
from layersearch.semantic.model import EdgeRecord, Entity

_COVERAGE_LEVEL = {
    "datasource": "group",
    "model": "table",
    "column": "leaf",
    "measure": "leaf",
    "aggregation": "leaf",
}


def build_coverage(
    entities: Mapping[str, Entity],
    edges_out: EdgeMap,
    *,
    bridges_from: CoverageIndex | None = None,
    config: EntityIndexConfig = DEFAULT_INDEX,
) -> CoverageIndex:
    """Coverage nodes for every visible entity, linked along joins (foreign keys)."""
    # Only joins matter here: a snapshot decodes just those (a CONTAINS edge per column
    # would be most of the decoding).
    joins = edges_out.all_of_type("JOINS")
    return coverage_of(entities, joins, bridges_from=bridges_from, config=config)


def coverage_of(
    entities: Mapping[str, Entity],
    edges: Iterable[EdgeRecord],
    *,
    bridges_from: CoverageIndex | None = None,
    config: EntityIndexConfig = DEFAULT_INDEX,
) -> CoverageIndex:
    """:func:`build_coverage` from the edges themselves (only JOINS edges are read); the
    index depends on neither the order of ``entities`` nor that of ``edges``. ``config``:
    the index-time settings (field weights, vocabulary bridges), kept with the index as
    its key."""
    all_joins = [e for e in edges if e.type == "JOINS"]
    nodes = []
    for e in sorted(entities.values(), key=lambda e: e.id):
        if e.hidden:
            continue
        doc = entity_doc(e)
        fields = {k: v for k, v in doc.fields.items() if k != "parent"}
        parent = None if e.kind == "datasource" else e.id.rsplit(".", 1)[0]
        nodes.append(
            CoverageNode(e.id, _COVERAGE_LEVEL[e.kind], parent, fields, data_type=e.data_type)
        )
    joins = [
        (edge.src, edge.dst)
        for edge in all_joins
        if not _hidden(entities, edge.src) and not _hidden(entities, edge.dst)
    ]
    keys = {e.id for e in entities.values() if e.primary_key and not e.hidden}
    for edge in all_joins:
        keys.update(f"{edge.src}.{c}" for c in edge.props.get("source_columns") or [])
        keys.update(f"{edge.dst}.{c}" for c in edge.props.get("target_columns") or [])
    return CoverageIndex(
        nodes,
        config.field_weights(),
        links_from_edges(joins),
        keys,
        bridges=bridges_from if bridges_from is not None else config.vocabulary_bridges,
        vocabulary=config.vocabulary(),
        settings=config.key(),
    )


def _hidden(entities: Mapping[str, Entity], entity_id: str) -> bool:
    e = entities.get(entity_id)
    return e is None or e.hidden
