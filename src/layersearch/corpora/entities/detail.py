"""``inspect``: the full detail of entities and memories named by id."""

from __future__ import annotations

from collections.abc import Iterable

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.errors import ConfigError, LimitExceeded, NotFound
from layersearch.semantic.model import Entity
from layersearch.store.duckdb import memory_number
from layersearch.textcheck import check_ids
from layersearch.types import EntityInfo, InspectResponse

MAX_INSPECT_IDS = 200


def checked_ids(ids: Iterable[str]) -> list[str]:
    """The ids ``inspect`` was given, as a list; refused when none, not strings, or too many."""
    # A lone string is one id, not a sequence of one-character ids.
    ids = [ids] if isinstance(ids, str) else list(ids)
    if not ids:
        raise ConfigError("inspect needs at least one id")
    if not all(isinstance(i, str) for i in ids):
        raise ConfigError("inspect takes ids as strings")
    check_ids(ids, "id")
    if len(ids) > MAX_INSPECT_IDS:
        raise LimitExceeded(
            f"{len(ids)} ids given; inspect takes at most {MAX_INSPECT_IDS} "
            "(inspect them in batches)"
        )
    return ids


def inspect(corpus: EntityCorpus, ids: list[str]) -> InspectResponse:
    """Full detail for ids (entities, hidden ones included when named exactly, and memories)."""
    out = InspectResponse()
    for raw in ids:
        key = raw.strip()
        if key.lower().startswith("memory:"):
            try:
                mid = f"memory:{memory_number(key)}"
            except ConfigError as exc:
                out.warnings.append(str(exc))
                continue
            m = corpus.memories.get(mid)
            if m is None:
                out.warnings.append(f"unknown memory '{key}'")
            else:
                out.memories.append(m)
            continue
        e = corpus.entities.get(key)
        if e is None:
            # Not an exact id: resolve it like search does (visible entities only).
            found, warning = corpus.resolver.resolve_one(key)
            if not found:
                out.warnings.append(warning or f"unknown id '{key}'")
                continue
            e = corpus.entities[found[0]]
        out.entities.append(entity_info(corpus, e))
    if not out.entities and not out.memories:
        raise NotFound("; ".join(out.warnings) or "nothing found")
    return out


def entity_info(corpus: EntityCorpus, e: Entity) -> EntityInfo:
    """What ``inspect`` says of one entity: its fields, visible children, joins, references
    and the memories tagged with it."""
    out_edges = corpus.edges_out.get(e.id, [])
    children = [
        edge.dst
        for edge in out_edges
        if edge.type == "CONTAINS"
        and edge.dst in corpus.entities
        and not corpus.entities[edge.dst].hidden
    ]
    joins = [{"target": edge.dst, **edge.props} for edge in out_edges if edge.type == "JOINS"]
    refs = [edge.dst for edge in out_edges if edge.type == "REFERENCES"]
    return EntityInfo(
        kind=e.kind,  # type: ignore[arg-type]
        id=e.id,
        name=e.name,
        datasource=e.datasource,
        model=e.model,
        label=e.label,
        description=e.description,
        data_type=e.data_type,
        formula=e.formula,
        hidden=e.hidden,
        primary_key=e.primary_key,
        values=list(e.values),
        children=children,
        joins=joins,
        references=refs,
        memories=corpus.mentions(e.id),
    )
