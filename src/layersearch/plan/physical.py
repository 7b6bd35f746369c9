"""Physical names (a model's table or relation, a column's SQL expression) on answers."""

from __future__ import annotations

from layersearch.store.base import Store
from layersearch.types import Hit, InspectResponse, SearchResponse

_ENTITY_KINDS = ("datasource", "model", "column", "measure", "aggregation")


def _entity_hits(resp: SearchResponse) -> list[Hit]:
    hits = list(resp.results)
    for bucket in (resp.entities, resp.memories, resp.example_queries):
        hits.extend(bucket or [])
    return [h for h in hits if h.kind in _ENTITY_KINDS]


def attach_to_hits(store: Store, resp: SearchResponse) -> None:
    """Set ``physical`` on the entity hits of a full (``compact=false``) answer."""
    hits = _entity_hits(resp)
    if not hits:
        return
    names = store.physical_names([h.id for h in hits])
    for h in hits:
        h.physical = names.get(h.id)


def attach_to_inspect(store: Store, resp: InspectResponse) -> None:
    """Set ``physical`` on the entities ``inspect`` describes."""
    if not resp.entities:
        return
    names = store.physical_names([e.id for e in resp.entities])
    for e in resp.entities:
        e.physical = names.get(e.id)
