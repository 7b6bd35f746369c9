"""Browsing the layer without a question: pages of datasources, models, measures, and
one model described with its columns, measures and joins (keys as full column ids)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.corpora.entities.service import EntityService
from layersearch.errors import ConfigError, NotFound
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.store.base import Store
from layersearch.types import JoinInfo, LayerItem, LayerPage, MemoryPage, ModelDescription

#: the most items one page holds
MAX_PAGE = 200
#: what describe_model lists of one model at most, per part
MAX_MODEL_LEAVES = 2000
MEASURE_KINDS = ("measure", "aggregation")


def one_line(text: str | None, width: int = 200) -> str | None:
    if not text:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def item(e: Entity) -> LayerItem:
    return LayerItem(
        kind=e.kind,  # type: ignore[arg-type]
        id=e.id,
        name=e.name,
        datasource=e.datasource,
        label=e.label,
        description=one_line(e.description),
        data_type=e.data_type,
        formula=e.formula,
        physical=e.physical,
        primary_key=True if e.primary_key else None,
    )


def check_page(offset: int, limit: int) -> None:
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise ConfigError(f"offset must be ≥ 0 and limit 1..{MAX_PAGE}; got {offset}, {limit}")


def list_layer(
    store: Store,
    kinds: Sequence[str],
    *,
    datasource: str | None = None,
    model: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> LayerPage:
    """A page of visible entities of ``kinds``; ``model`` is a model id (``shop.orders``)
    or, with ``datasource``, a model name. A datasource or model that does not exist is
    an error naming the ones that do, not an empty page."""
    check_page(offset, limit)
    name = None
    if model is not None:
        ds, _, name = model.rpartition(".")
        if ds:
            if datasource is not None and datasource != ds:
                raise ConfigError(f"model {model} is not in datasource {datasource}")
            datasource = ds
        elif datasource is None:
            raise ConfigError(f"give the model as its full id (datasource.model), not {model!r}")
    if datasource is not None:
        _must_exist(store, "datasource", datasource, None)
    if model is not None:
        _must_exist(store, "model", f"{datasource}.{name}", datasource)
    found, total = store.list_entities(
        kinds, datasource=datasource, model=name, offset=offset, limit=limit
    )
    end = offset + len(found)
    return LayerPage(
        items=[item(e) for e in found],
        total=total,
        offset=offset,
        next_offset=end if end < total else None,
    )


def _must_exist(store: Store, kind: str, ident: str, datasource: str | None) -> None:
    known, _ = store.list_entities((kind,), datasource=datasource, limit=100_000)
    ids = [e.id for e in known]
    if ident in ids:
        return
    close = difflib.get_close_matches(ident, ids, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    where = "list_datasources" if kind == "datasource" else "list_models"
    raise NotFound(f"no {kind} {ident}{hint} ({where} shows them)")


def describe_model(corpus: EntityCorpus, store: Store, model: str) -> ModelDescription:
    """``model`` (a full id, or a model name that is unique) with its visible columns,
    measures and aggregations, its joins both ways, and the memories tagged with it."""
    e = corpus.entities.get(model)
    if e is None or e.kind != "model" or e.hidden:
        e = _model_by_name(store, model)
    ds, name = e.datasource, e.name
    columns, _ = store.list_entities(("column",), datasource=ds, model=name, limit=MAX_MODEL_LEAVES)
    measures, _ = store.list_entities(
        MEASURE_KINDS, datasource=ds, model=name, limit=MAX_MODEL_LEAVES
    )
    physical = store.physical_names([e.id])
    head = item(e)
    head.physical = physical.get(e.id, e.physical)
    out_edges = [j for j in corpus.edges_out.get(e.id, []) if j.type == "JOINS"]
    return ModelDescription(
        model=head,
        dimensions=[item(c) for c in columns],
        measures=[item(m) for m in measures],
        joins=[
            join_info(j)
            for j in [*out_edges, *store.joins_to(e.id)]
            if _visible(corpus, j.src) and _visible(corpus, j.dst)
        ],
        memories=corpus.mentions(e.id),
    )


def _visible(corpus: EntityCorpus, ident: str) -> bool:
    e = corpus.entities.get(ident)
    return e is not None and not e.hidden


def _model_by_name(store: Store, model: str) -> Entity:
    models, _ = store.list_entities(("model",), limit=100_000)
    named = [m for m in models if m.name.lower() == model.lower() or m.id.lower() == model.lower()]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise NotFound(
            f"model name {model!r} is ambiguous: {', '.join(m.id for m in named)}; give the id"
        )
    close = difflib.get_close_matches(model, [m.id for m in models], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise NotFound(f"no model {model}{hint} (list_models shows them)")


def join_info(edge: EdgeRecord) -> JoinInfo:
    """A JOINS edge with its key columns as full ids."""
    src_cols = edge.props.get("source_columns") or []
    dst_cols = edge.props.get("target_columns") or []
    return JoinInfo(
        source=edge.src,
        target=edge.dst,
        keys=[
            (f"{edge.src}.{a}", f"{edge.dst}.{b}") for a, b in zip(src_cols, dst_cols, strict=False)
        ],
        cardinality=edge.props.get("cardinality"),
        join_type=edge.props.get("join_type"),
    )


class Browser:
    """The browsing calls of one store (``Layersearch.browse``): each reads the current
    snapshot; an empty store is :class:`StoreEmpty`, as for search."""

    def __init__(self, store: Store, entities: EntityService) -> None:
        self.store = store
        self.entities = entities

    def list_layer(
        self,
        kinds: Sequence[str],
        *,
        datasource: str | None = None,
        model: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> LayerPage:
        """A page of the visible entities of ``kinds`` (see :func:`list_layer`)."""
        self.entities.require_content()
        return list_layer(
            self.store, kinds, datasource=datasource, model=model, offset=offset, limit=limit
        )

    def describe_model(self, model: str) -> ModelDescription:
        """A model with its columns, measures, joins (keys included) and memories."""
        return describe_model(self.entities.require_content(), self.store, model)

    def memory_page(self, offset: int = 0, limit: int = 50) -> MemoryPage:
        """A page of the saved memories, newest first, with how many there are."""
        page = self.entities.list_memories(limit, offset)
        total = len(self.entities.corpus().memories)
        end = offset + len(page)
        return MemoryPage(
            memories=page, total=total, offset=offset, next_offset=end if end < total else None
        )
