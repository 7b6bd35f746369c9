"""Open Semantic Interchange (OSI) semantic models (YAML).

Each ``semantic_model:`` entry is a datasource; its ``datasets`` are models
(``source`` → sql_table, ``primary_key`` flags columns), ``fields`` are columns,
``relationships`` are ``many_to_one`` joins from ``from`` to ``to`` on
``from_columns``/``to_columns``, and ``metrics`` are measures of the dataset
their expression names first (``SUM(store_sales.ss_ext_sales_price)`` →
``store_sales``). ``ai_context`` synonyms (and instructions) join the
description, which is what full-text and dense search index.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers._common import LeafNames, describe, safe_name
from layersearch.semantic.importers.native import (
    _list,
    _mapping,
    _str,
    check_catalog,
    model_yaml_files,
    read_yaml,
)
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Measure, Model

_QUALIFIED = re.compile(r"\b([A-Za-z_]\w*)\.[A-Za-z_]\w*")


def is_osi(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("semantic_model"), list | dict)


def _context(raw: Any, where: str) -> tuple[list[str], list[str]]:
    """(synonyms, notes) of an ``ai_context``: a string, or a mapping with
    ``synonyms``, ``instructions`` and ``examples``."""
    if raw is None:
        return [], []
    if isinstance(raw, str):
        return [], [raw]
    ctx = _mapping(raw, f"{where} ai_context")
    synonyms = [str(s) for s in _list(ctx.get("synonyms"), where, "ai_context.synonyms")]
    notes = [str(ctx["instructions"])] if isinstance(ctx.get("instructions"), str) else []
    examples = [str(e) for e in _list(ctx.get("examples"), where, "ai_context.examples")]
    if examples:
        notes.append("Examples: " + "; ".join(examples) + ".")
    return synonyms, notes


def _expression(raw: Any, where: str) -> str | None:
    """The ANSI_SQL dialect of an ``expression`` (else its first dialect, or a string)."""
    if raw is None or isinstance(raw, str):
        return raw
    dialects = _list(_mapping(raw, f"{where} expression").get("dialects"), where, "dialects")
    exprs = [_mapping(d, f"{where} expression.dialects") for d in dialects]
    pick = next((d for d in exprs if str(d.get("dialect", "")).upper() == "ANSI_SQL"), None)
    pick = pick or (exprs[0] if exprs else None)
    return _str(pick.get("expression"), where, "expression") if pick else None


def _described(d: dict[str, Any], where: str) -> str | None:
    synonyms, notes = _context(d.get("ai_context"), where)
    return describe(
        _str(d.get("description"), where, "description"), synonyms=synonyms, notes=notes
    )


def load_osi(path: str | Path, *, datasource: str | None = None) -> Catalog:
    root = Path(path)
    files = model_yaml_files(root)
    catalog = Catalog()
    for f in files:
        doc = read_yaml(f)
        if not is_osi(doc):
            catalog.skipped.append(f"{f}: no semantic_model; not imported")
            continue
        sms = doc["semantic_model"]
        for i, sm in enumerate(sms if isinstance(sms, list) else [sms]):
            _semantic_model(
                _mapping(sm, f"{f} semantic_model[{i}]"),
                f"{f} semantic_model[{i}]",
                datasource,
                catalog,
            )
    check_catalog(catalog)
    return catalog


def _semantic_model(sm: dict[str, Any], where: str, override: str | None, catalog: Catalog) -> None:
    name = safe_name(override or _str(sm.get("name"), where, "name", required=True) or "")
    where = f"{where} ({name})"
    catalog.datasources.append(
        Datasource(name=name, description=_described(sm, where), source=where)
    )
    models: dict[str, Model] = {}
    for i, raw in enumerate(_list(sm.get("datasets"), where, "datasets")):
        dname, model = _dataset(raw, f"{where} datasets[{i}]", name, catalog)
        if dname in models:
            raise ModelLoadError(f"{model.source}: duplicate dataset '{dname}'")
        models[dname] = model
        catalog.models.append(model)
    for i, raw in enumerate(_list(sm.get("relationships"), where, "relationships")):
        _relationship(raw, f"{where} relationships[{i}]", models, catalog)
    for i, raw in enumerate(_list(sm.get("metrics"), where, "metrics")):
        _metric(raw, f"{where} metrics[{i}]", models, catalog)
    for key in ("custom_extensions",):
        if sm.get(key):
            catalog.skipped.append(f"{where}: {key} not imported")


def _dataset(raw: Any, w: str, datasource: str, catalog: Catalog) -> tuple[str, Model]:
    """A dataset as a model of ``datasource`` with its fields as columns; and its name."""
    d = _mapping(raw, w)
    dname = _str(d.get("name"), w, "name", required=True) or ""
    w = f"{w} ({dname})"
    pk = {str(c) for c in _list(d.get("primary_key"), w, "primary_key")}
    model = Model(
        name=safe_name(dname),
        datasource=datasource,
        label=_str(d.get("label"), w, "label"),
        description=_described(d, w),
        sql_table=_str(d.get("source"), w, "source"),
        source=w,
    )
    names = LeafNames(model)
    for j, fraw in enumerate(_list(d.get("fields"), w, "fields")):
        fw = f"{w} fields[{j}]"
        fd = _mapping(fraw, fw)
        fname = _str(fd.get("name"), fw, "name", required=True) or ""
        dim = fd.get("dimension")
        is_time = isinstance(dim, dict) and dim.get("is_time") is True
        names.add(
            Column(
                name=safe_name(fname),
                data_type=_str(fd.get("data_type"), fw, "data_type")
                or ("time" if is_time else None),
                label=_str(fd.get("label"), fw, "label"),
                description=_described(fd, fw),
                primary_key=fname in pk,
                sql=_expression(fd.get("expression"), fw),
            ),
            catalog.skipped,
            fw,
        )
    fields = {c.name for c in model.columns}
    for c in sorted(pk - fields):
        catalog.skipped.append(f"{w}: primary_key column '{c}' is not a field; not flagged")
    return dname, model


def _relationship(raw: Any, w: str, models: dict[str, Model], catalog: Catalog) -> None:
    """A relationship as a many-to-one join of its ``from`` dataset."""
    r = _mapping(raw, w)
    src, dst = models.get(str(r.get("from"))), models.get(str(r.get("to")))
    if src is None or dst is None:
        catalog.skipped.append(
            f"{w}: from/to names no dataset ({r.get('from')} → {r.get('to')}); not imported"
        )
        return
    a = [str(c) for c in _list(r.get("from_columns"), w, "from_columns")]
    b = [str(c) for c in _list(r.get("to_columns"), w, "to_columns")]
    if len(a) != len(b):
        raise ModelLoadError(f"{w}: from_columns and to_columns differ in length")
    src.joins.append(
        Join(
            target=dst.name,
            on=[(safe_name(x), safe_name(y)) for x, y in zip(a, b, strict=True)],
            cardinality="many_to_one",
        )
    )


def _metric(raw: Any, w: str, models: dict[str, Model], catalog: Catalog) -> None:
    """A metric as a measure of the first dataset its expression names."""
    m = _mapping(raw, w)
    mname = _str(m.get("name"), w, "name", required=True) or ""
    expr = _expression(m.get("expression"), w)
    owner = next((models[x] for x in _QUALIFIED.findall(expr or "") if x in models), None)
    if owner is None:
        catalog.skipped.append(
            f"{w}: metric '{mname}' names no dataset in its expression; not imported"
        )
        return
    LeafNames(owner).add(
        Measure(
            name=safe_name(mname),
            formula=expr,
            label=_str(m.get("label"), w, "label"),
            description=_described(m, w),
        ),
        catalog.skipped,
        w,
    )
