"""dbt MetricFlow semantic models and metrics.

Each ``semantic_models:`` entry becomes a model of one datasource (the
``datasource`` argument, else the folder name). Entities become columns (the
``primary`` one is the primary key) and joins: a model holding an entity as
``foreign`` joins every model holding it as ``primary``/``unique``/``natural``
(many_to_one); two models that both hold it as ``primary``/``unique``/``natural``
join each other one_to_one. Dimensions become columns, measures become
measures with an ``agg(expr)`` formula, and top-level ``metrics:`` become
measures on the model that owns their input measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers._common import LeafNames, slug, with_filters
from layersearch.semantic.importers.native import (
    _list,
    _mapping,
    _name,
    _str,
    check_catalog,
    model_yaml_files,
    read_yaml,
)
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Measure, Model

AGGS = {
    "sum": "sum",
    "count": "count",
    "count_distinct": "count_distinct",
    "average": "avg",
    "avg": "avg",
    "min": "min",
    "max": "max",
    "sum_boolean": "sum_boolean",
    "median": "median",
    "percentile": "percentile",
}
KEY_ENTITY_TYPES = ("primary", "unique", "natural")
ENTITY_TYPES = (*KEY_ENTITY_TYPES, "foreign")
METRIC_TYPES = ("simple", "ratio", "derived", "cumulative", "conversion")
# Granularities at or above a day give a date; finer ones a timestamp.
DATE_GRAINS = ("day", "week", "month", "quarter", "year")
_REF = re.compile(r"""^\s*ref\(\s*['"]([^'"]+)['"]\s*(?:,\s*['"][^'"]*['"]\s*)?\)\s*$""")


def is_dbt(doc: Any) -> bool:
    return isinstance(doc, dict) and ("semantic_models" in doc or "metrics" in doc)


@dataclass(slots=True)
class _Entities:
    #: entity name → models holding it as a key (primary/unique/natural)
    keys: dict[str, list[str]] = field(default_factory=dict)
    #: entity name → models holding it as foreign
    foreign: dict[str, list[str]] = field(default_factory=dict)


def load_dbt(path: str | Path, *, datasource: str | None = None) -> Catalog:
    root = Path(path)
    files = model_yaml_files(root)
    ds = datasource or slug(root.parent.name if root.is_file() else root.name)
    catalog = Catalog(
        datasources=[Datasource(name=_name(ds, str(root), "datasource"), source=str(root))]
    )
    if root.is_dir():
        for sql in sorted(root.rglob("*.sql")):
            catalog.skipped.append(f"{sql}: dbt SQL model, not a semantic model; not imported")
    entities = _Entities()
    metrics: list[tuple[dict[str, Any], str]] = []
    for f in files:
        doc = read_yaml(f)
        if doc is None:
            catalog.skipped.append(f"{f}: empty file")
            continue
        if not is_dbt(doc):
            keys = ", ".join(sorted(map(str, doc))) if isinstance(doc, dict) else type(doc).__name__
            catalog.skipped.append(
                f"{f}: no semantic_models or metrics (top level: {keys}); not imported"
            )
            continue
        for i, raw in enumerate(_list(doc.get("semantic_models"), str(f), "semantic_models")):
            model = _parse_semantic_model(raw, f"{f} semantic_models[{i}]", ds, entities, catalog)
            catalog.models.append(model)
        for i, raw in enumerate(_list(doc.get("metrics"), str(f), "metrics")):
            metrics.append((_mapping(raw, f"{f} metrics[{i}]"), f"{f} metrics[{i}]"))
    _add_entity_joins(catalog, entities)
    _add_metrics(catalog, metrics)
    check_catalog(catalog)
    return catalog


def _parse_semantic_model(
    raw: Any, where: str, ds: str, entities: _Entities, catalog: Catalog
) -> Model:
    sm = _mapping(raw, where)
    name = _name(sm.get("name"), where)
    where = f"{where} (semantic model {name})"
    ref = _str(sm.get("model"), where, "model")
    match = _REF.match(ref) if ref else None
    model = Model(
        name=name,
        datasource=ds,
        label=_str(sm.get("label"), where, "label"),
        description=_str(sm.get("description"), where, "description"),
        sql_table=match.group(1) if match else ref,
        source=where,
    )
    names = LeafNames(model)
    for i, e in enumerate(_list(sm.get("entities"), where, "entities")):
        _add_entity(
            model,
            _mapping(e, f"{where} entities[{i}]"),
            f"{where} entities[{i}]",
            names,
            entities,
            catalog,
        )
    if sm.get("primary_entity"):
        catalog.skipped.append(
            f"{where}: primary_entity '{sm['primary_entity']}' (it names no column, so "
            "there is nothing to search for); the semantic model itself is imported"
        )
    for i, d in enumerate(_list(sm.get("dimensions"), where, "dimensions")):
        w = f"{where} dimensions[{i}]"
        col = _dimension(_mapping(d, w), w)
        if names.claim(col.name, "column", catalog.skipped, w):
            model.columns.append(col)
    for i, m in enumerate(_list(sm.get("measures"), where, "measures")):
        w = f"{where} measures[{i}]"
        me = _measure(_mapping(m, w), w)
        if names.claim(me.name, "measure", catalog.skipped, w):
            model.measures.append(me)
    return model


def _add_entity(
    model: Model,
    e: dict[str, Any],
    where: str,
    names: LeafNames,
    entities: _Entities,
    catalog: Catalog,
) -> None:
    name = _name(e.get("name"), where)
    etype = (_str(e.get("type"), where, "type", required=True) or "").lower()
    if etype not in ENTITY_TYPES:
        raise ModelLoadError(
            f"{where}: entity type '{etype}' is not one of {', '.join(ENTITY_TYPES)}"
        )
    description = _str(e.get("description"), where, "description")
    expr = _str(e.get("expr"), where, "expr")
    if description is None:
        description = f"{etype.capitalize()} entity '{name}'" + (f" ({expr})" if expr else "") + "."
    if not names.claim(name, "column", catalog.skipped, where):
        return
    model.columns.append(
        Column(
            name=name,
            label=_str(e.get("label"), where, "label"),
            description=description,
            primary_key=etype == "primary",
            sql=expr,
        )
    )
    target = entities.keys if etype in KEY_ENTITY_TYPES else entities.foreign
    target.setdefault(name, []).append(model.name)


def _dimension(d: dict[str, Any], where: str) -> Column:
    name = _name(d.get("name"), where)
    dtype = (_str(d.get("type"), where, "type") or "categorical").lower()
    description = _str(d.get("description"), where, "description")
    data_type = None
    if dtype == "time":
        params = d.get("type_params")
        grain = None
        if isinstance(params, dict):
            grain = _str(params.get("time_granularity"), where, "time_granularity")
        data_type = "date" if grain is None or grain.lower() in DATE_GRAINS else "timestamp"
        if description is None:
            description = f"Time dimension, {grain} granularity." if grain else "Time dimension."
    return Column(
        name=name,
        data_type=data_type,
        label=_str(d.get("label"), where, "label"),
        description=description,
        sql=_str(d.get("expr"), where, "expr"),
    )


def _measure(m: dict[str, Any], where: str) -> Measure:
    name = _name(m.get("name"), where)
    agg = (_str(m.get("agg"), where, "agg", required=True) or "").lower()
    if agg not in AGGS:
        raise ModelLoadError(f"{where}: agg '{agg}' is not one of {', '.join(AGGS)}")
    expr = _str(m.get("expr"), where, "expr") or name
    args = expr
    params = m.get("agg_params")
    if agg == "percentile" and isinstance(params, dict) and params.get("percentile") is not None:
        args = f"{expr}, {params['percentile']}"
    return Measure(
        name=name,
        formula=f"{AGGS[agg]}({args})",
        label=_str(m.get("label"), where, "label"),
        description=_str(m.get("description"), where, "description"),
    )


def _add_entity_joins(catalog: Catalog, entities: _Entities) -> None:
    by_name = {m.name: m for m in catalog.models}
    for entity, holders in sorted(entities.foreign.items()):
        for src in holders:
            for dst in entities.keys.get(entity, []):
                if dst != src:
                    by_name[src].joins.append(
                        Join(target=dst, on=[(entity, entity)], cardinality="many_to_one")
                    )
    for entity, holders in sorted(entities.keys.items()):
        for src in holders:
            for dst in holders:
                if dst != src:
                    by_name[src].joins.append(
                        Join(target=dst, on=[(entity, entity)], cardinality="one_to_one")
                    )


def _add_metrics(catalog: Catalog, metrics: list[tuple[dict[str, Any], str]]) -> None:
    """Attach each metric to the model owning its input measure.

    Metrics may build on metrics defined anywhere (derived, ratio), so owners
    are resolved by name with a cycle guard rather than in file order.
    """
    measure_owner = {me.name: m for m in catalog.models for me in m.measures}
    by_name: dict[str, tuple[dict[str, Any], str]] = {}
    for doc, where in metrics:
        name = _name(doc.get("name"), where)
        if name in by_name:
            raise ModelLoadError(f"{where}: duplicate metric '{name}' (also {by_name[name][1]})")
        by_name[name] = (doc, where)
    resolving: set[str] = set()

    def owner(name: str) -> Model | None:
        if name in measure_owner:
            return measure_owner[name]
        if name not in by_name or name in resolving:
            return None
        resolving.add(name)
        try:
            first = _metric_inputs(*by_name[name])
            return owner(first) if first else None
        finally:
            resolving.discard(name)

    for name, (doc, where) in by_name.items():
        inputs = _metric_inputs(doc, where)
        model = owner(inputs) if inputs else None
        if model is None:
            catalog.skipped.append(
                f"{where}: metric '{name}' skipped: no semantic model owns its input "
                f"'{inputs or '?'}'"
            )
            continue
        measure = Measure(
            name=name,
            formula=_metric_formula(doc, where),
            label=_str(doc.get("label"), where, "label"),
            description=_str(doc.get("description"), where, "description"),
        )
        _attach(model, measure, where, catalog)


def _attach(model: Model, metric: Measure, where: str, catalog: Catalog) -> None:
    """Add ``metric`` to ``model``; a measure of the same name absorbs its label
    and description (``create_metric: true`` and explicit metric, one entity)."""
    for me in model.measures:
        if me.name.lower() == metric.name.lower():
            me.label = me.label or metric.label
            me.description = me.description or metric.description
            return
    if LeafNames(model).claim(metric.name, "measure", catalog.skipped, where):
        model.measures.append(metric)


def _ref_name(value: Any) -> str | None:
    """A measure or metric reference: a bare name or ``{name: …}``."""
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) and value.strip() else None


def _params(doc: dict[str, Any], where: str) -> dict[str, Any]:
    params = doc.get("type_params") or {}
    return _mapping(params, f"{where} type_params")


def _metric_type(doc: dict[str, Any], where: str) -> str:
    mtype = (_str(doc.get("type"), where, "type", required=True) or "").lower()
    if mtype not in METRIC_TYPES:
        raise ModelLoadError(
            f"{where}: metric type '{mtype}' is not one of {', '.join(METRIC_TYPES)}"
        )
    return mtype


def _metric_inputs(doc: dict[str, Any], where: str) -> str | None:
    """The name of the measure or metric whose model owns this metric."""
    mtype, params = _metric_type(doc, where), _params(doc, where)
    if mtype in ("simple", "cumulative"):
        return _ref_name(params.get("measure")) or _ref_name(params.get("metric"))
    if mtype == "ratio":
        return _ref_name(params.get("numerator"))
    if mtype == "derived":
        inputs = _list(params.get("metrics"), where, "metrics")
        return _ref_name(inputs[0]) if inputs else None
    conv = params.get("conversion_type_params")
    return _ref_name(conv.get("base_measure")) if isinstance(conv, dict) else None


def _metric_formula(doc: dict[str, Any], where: str) -> str | None:
    mtype, params = _metric_type(doc, where), _params(doc, where)
    formula: str | None
    if mtype == "simple":
        formula = _ref_name(params.get("measure"))
    elif mtype == "ratio":
        num, den = _ref_name(params.get("numerator")), _ref_name(params.get("denominator"))
        formula = f"{num} / {den}" if num and den else None
    elif mtype == "derived":
        formula = _str(params.get("expr"), where, "expr")
    elif mtype == "cumulative":
        base = _ref_name(params.get("measure")) or _ref_name(params.get("metric"))
        window = params.get("window") or params.get("grain_to_date")
        formula = f"cumulative({base}{', ' + str(window) if window else ''})"
    else:
        conv = params.get("conversion_type_params") or {}
        base, target = (
            _ref_name(conv.get("base_measure")),
            _ref_name(conv.get("conversion_measure")),
        )
        formula = f"conversion({base}, {target})"
    # dbt accepts one filter string or a list of them (all must hold).
    raw_filter = doc.get("filter")
    filters = raw_filter if isinstance(raw_filter, list) else [raw_filter]
    return with_filters(formula, (f for f in filters if isinstance(f, str)))
