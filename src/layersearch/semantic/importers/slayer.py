"""SLayer model YAML (schema version 7).

One file per model::

    version: 7
    name: orders
    sql_table: orders
    data_source: jaffle_shop
    columns: [{name, sql, type, primary_key, label, description, hidden, format}]
    measures: [{name, formula: "order_total:sum", label, description, type, hidden}]
    aggregations: [{name, params: [{name, sql}], description}]
    joins: [{target_model, join_pairs: [[this_col, target_col]], join_type: left}]

SLayer datasource files (a mapping with ``name`` and ``type``, plus connection
settings) become datasources; their connection settings are never read into
the catalog. ``filters``, ``query_variables``, column ``sql``/``format`` and
``default_time_dimension`` have no place in the catalog and are dropped
(non-empty ``filters`` are noted in ``skipped``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers._common import LeafNames, slug
from layersearch.semantic.importers.native import (
    _list,
    _mapping,
    _name,
    _str,
    check_catalog,
    leaves,
    model_yaml_files,
    new_datasource,
    new_model,
    parse_aggregation,
    parse_column,
    parse_measure,
    read_yaml,
)
from layersearch.semantic.model import (
    Aggregation,
    Catalog,
    Column,
    Join,
    Measure,
    Model,
)

MODEL_KEYS = ("sql_table", "data_source", "columns")


def is_slayer_model(doc: Any) -> bool:
    return isinstance(doc, dict) and "version" in doc and any(k in doc for k in MODEL_KEYS)


def is_slayer_datasource(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "name" in doc
        and "type" in doc
        and not any(k in doc for k in (*MODEL_KEYS, "model", "datasource", "semantic_models"))
    )


def load_slayer(path: str | Path, *, datasource: str | None = None) -> Catalog:
    """Read a SLayer model file or a folder of them (recursively).

    ``datasource`` puts every model under that datasource; otherwise a model's
    ``data_source`` is used, and the folder (or file) name when it has none.
    """
    root = Path(path)
    files = model_yaml_files(root)
    default_ds = datasource or slug(root.stem if root.is_file() else root.name)
    catalog = Catalog()
    for f in files:
        doc = read_yaml(f)
        if doc is None:
            catalog.skipped.append(f"{f}: empty file")
        elif is_slayer_model(doc):
            catalog.models.append(_parse_model(doc, str(f), datasource, default_ds, catalog))
        elif is_slayer_datasource(doc):
            _add_datasource(doc, str(f), datasource, catalog)
        else:
            keys = ", ".join(sorted(map(str, doc))) if isinstance(doc, dict) else type(doc).__name__
            catalog.skipped.append(
                f"{f}: not a SLayer model or datasource (top level: {keys}; a model has "
                "'version' with 'sql_table', 'data_source' or 'columns')"
            )
    _set_cardinalities(catalog)
    check_catalog(catalog)
    return catalog


def _add_datasource(
    doc: dict[str, Any], where: str, override: str | None, catalog: Catalog
) -> None:
    name = override or _name(doc.get("name"), where)
    if any(d.name == name for d in catalog.datasources):
        catalog.skipped.append(f"{where}: datasource '{name}' already defined; this one skipped")
        return
    catalog.datasources.append(new_datasource(doc, where, name, "type"))


def _parse_model(
    doc: dict[str, Any], where: str, override: str | None, default_ds: str, catalog: Catalog
) -> Model:
    name = _name(doc.get("name"), where)
    where = f"{where} (model {name})"
    version = doc.get("version")
    if version != 7:
        # Later versions may rename keys; import what we recognise rather than refuse.
        catalog.skipped.append(f"{where}: SLayer schema version {version!r}, read as version 7")
    ds = override or _str(doc.get("data_source"), where, "data_source") or default_ds
    model = new_model(doc, where, name, _name(ds, where, "data_source"))
    if model.sql_table is None and doc.get("sql"):
        model.sql_table = f"({str(doc['sql']).strip()})"
    names = LeafNames(model)
    for w, col in leaves(doc, where, "columns", _column):
        if names.claim(col.name, "column", catalog.skipped, w):
            model.columns.append(col)
    for w, me in leaves(doc, where, "measures", _measure):
        if names.claim(me.name, "measure", catalog.skipped, w):
            model.measures.append(me)
    for w, agg in leaves(doc, where, "aggregations", _aggregation):
        if names.claim(agg.name, "aggregation", catalog.skipped, w):
            model.aggregations.append(agg)
    for i, raw in enumerate(_list(doc.get("joins"), where, "joins")):
        model.joins.append(_parse_join(raw, f"{where} joins[{i}]"))
    filters = _list(doc.get("filters"), where, "filters")
    if filters:
        catalog.skipped.append(f"{where}: {len(filters)} model filter(s) not imported")
    return model


def _column(raw: Any, where: str) -> Column:
    return parse_column(raw, where, type_keys=("type",), values=False)


def _measure(raw: Any, where: str) -> Measure:
    return parse_measure(raw, where, type_keys=("type",))


def _aggregation(raw: Any, where: str) -> Aggregation:
    return parse_aggregation(raw, where, formula_keys=("formula", "sql"), params_where=" params")


def _parse_join(raw: Any, where: str) -> Join:
    j = _mapping(raw, where)
    target = _name(j.get("target_model"), where, "target_model")
    pairs: list[tuple[str, str]] = []
    for p in _list(j.get("join_pairs"), where, "join_pairs"):
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)):
            raise ModelLoadError(
                f"{where}: each join_pairs entry must be [this_column, target_column]"
            )
        pairs.append((p[0], p[1]))
    return Join(target=target, on=pairs, join_type=_str(j.get("join_type"), where, "join_type"))


def _set_cardinalities(catalog: Catalog) -> None:
    """SLayer joins carry no cardinality; infer it from primary keys.

    When the target side of the join pairs is exactly the target model's
    primary key, each source row meets at most one target row: many_to_one,
    or one_to_one when the source side is also exactly the source's primary
    key. Anything else (no declared key, a partial key) stays unknown (None).
    """
    by_id = {m.id: m for m in catalog.models}
    for m in catalog.models:
        own_pk = {c.name for c in m.columns if c.primary_key}
        for j in m.joins:
            target = by_id.get(j.target if "." in j.target else f"{m.datasource}.{j.target}")
            if target is None or not j.on:
                continue
            target_pk = {c.name for c in target.columns if c.primary_key}
            if target_pk and {b for _, b in j.on} == target_pk:
                j.cardinality = "one_to_one" if {a for a, _ in j.on} == own_pk else "many_to_one"
