"""dbt artifacts: ``manifest.json`` (+ ``catalog.json`` and ``semantic_manifest.json`` beside it).

What ``dbt docs generate`` leaves in ``target/``. Models, snapshots and sources
become models, grouped into datasources by their database and schema
(``<database>_<schema>``, or ``--datasource`` for all). Columns are the
manifest's documented columns and the warehouse's (``catalog.json``), typed by
the warehouse. Generic tests give keys and joins: a column with both ``unique``
and ``not_null`` tests (or named by the node's ``primary_key`` or a
``primary_key`` constraint) is a primary key, a ``relationships`` test is a
``many_to_one`` join. Exposures are named in the descriptions of the models they
use. MetricFlow semantic models and metrics (in the manifest or
``semantic_manifest.json``) add their entities, dimensions and measures to the
model they are defined on. Disabled and ephemeral nodes, seeds, analyses and
other node kinds are listed in ``skipped`` with the reason.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers import dbt as metricflow
from layersearch.semantic.importers._common import LeafNames, describe, safe_name, slug, unique_name
from layersearch.semantic.importers.native import check_catalog
from layersearch.semantic.importers.spider import read_json
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Model

MODEL_TYPES = ("model", "snapshot")
_REF = re.compile(r"""ref\(\s*['"]([^'"]+)['"]""")


def is_dbt_manifest(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        return False
    version = str(doc["metadata"].get("dbt_schema_version", ""))
    return "/manifest/" in version and isinstance(doc.get("nodes"), dict)


def manifest_file(path: Path) -> Path | None:
    """The manifest a path names: the file itself, or ``manifest.json`` in the folder
    (or its ``target/`` or ``docs/``)."""
    if path.is_file():
        return path if path.suffix.lower() == ".json" else None
    for cand in (
        path / "manifest.json",
        path / "target" / "manifest.json",
        path / "docs" / "manifest.json",
    ):
        if cand.is_file():
            return cand
    return None


def _dict(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelLoadError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _text(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _meta_notes(meta: Any) -> list[str]:
    """``meta`` as one sentence of its scalar values: ``Meta: owner finance, pii true.``"""
    if not isinstance(meta, dict) or not meta:
        return []
    pairs = [
        f"{k} {str(v).lower() if isinstance(v, bool) else v}"
        for k, v in sorted(meta.items())
        if isinstance(v, str | int | float | bool)
    ]
    return [f"Meta: {', '.join(pairs)}."] if pairs else []


def _deps(node: dict[str, Any]) -> list[str]:
    """The unique ids a node depends on (``depends_on.nodes``)."""
    dep = node.get("depends_on")
    nodes = dep.get("nodes") if isinstance(dep, dict) else None
    return [d for d in nodes if isinstance(d, str)] if isinstance(nodes, list) else []


def _list_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _tags(value: Any) -> list[str]:
    return [str(t) for t in value] if isinstance(value, list) else []


def load_dbt_manifest(path: str | Path, *, datasource: str | None = None) -> Catalog:
    root = Path(path)
    if not root.exists():
        raise ModelLoadError(f"{root}: no such file or directory")
    mf = manifest_file(root)
    if mf is None:
        raise ModelLoadError(f"{root}: no manifest.json (run `dbt docs generate` or `dbt parse`)")
    manifest = read_json(mf)
    if not is_dbt_manifest(manifest):
        raise ModelLoadError(
            f"{mf}: not a dbt manifest (no metadata.dbt_schema_version naming a manifest, "
            "or no nodes)"
        )
    catalog = Catalog()
    warehouse = _warehouse(mf.parent / "catalog.json", catalog)
    nodes = _dict(manifest.get("nodes"), f"{mf} nodes")
    sources = _dict(manifest.get("sources"), f"{mf} sources")
    ids: dict[str, Model] = {}  # unique_id → model
    taken: dict[str, set[str]] = {}
    skipped_kinds: Counter[str] = Counter()
    for uid, raw in sorted([*nodes.items(), *sources.items()]):
        node = _dict(raw, f"{mf} {uid}")
        rtype = node.get("resource_type")
        config: dict[str, Any] = node["config"] if isinstance(node.get("config"), dict) else {}
        where = f"{mf} {uid}"
        if rtype not in (*MODEL_TYPES, "source"):
            skipped_kinds[str(rtype)] += 1
            continue
        if config.get("enabled") is False:
            catalog.skipped.append(f"{where}: disabled; not imported")
            continue
        if config.get("materialized") == "ephemeral":
            catalog.skipped.append(
                f"{where}: ephemeral (inlined into the models that use it, no table); not imported"
            )
            continue
        model = _model(node, uid, where, datasource, warehouse, taken, catalog)
        ids[uid] = model
        catalog.models.append(model)
    for uid, entries in sorted(_dict(manifest.get("disabled"), f"{mf} disabled").items()):
        first = entries[0] if isinstance(entries, list) and entries else {}
        rtype = first.get("resource_type") if isinstance(first, dict) else None
        if rtype in (*MODEL_TYPES, "source", "exposure", "metric", "semantic_model"):
            catalog.skipped.append(f"{mf} {uid}: disabled; not imported")
        else:
            skipped_kinds[f"disabled {rtype}"] += 1
    _tests(nodes, ids, catalog)
    _exposures(_dict(manifest.get("exposures"), f"{mf} exposures"), ids, catalog)
    _semantic(mf, manifest, ids, catalog)
    for kind, n in sorted(skipped_kinds.items()):
        if kind not in ("test",):
            catalog.skipped.append(
                f"{mf}: {n} {kind} node(s) not imported (not tables of the model)"
            )
    names = {m.datasource for m in catalog.models}
    catalog.datasources = [Datasource(name=n, source=str(mf)) for n in sorted(names)]
    if not catalog.models:
        catalog.datasources = [Datasource(name=datasource or slug(mf.parent.name), source=str(mf))]
    check_catalog(catalog)
    return catalog


def _warehouse(path: Path, catalog: Catalog) -> dict[str, dict[str, dict[str, Any]]]:
    """``catalog.json``'s columns per unique id (name lowercased → column), or nothing."""
    if not path.is_file():
        catalog.skipped.append(
            f"{path}: not found; column types are the manifest's (run `dbt docs generate`)"
        )
        return {}
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise ModelLoadError(f"{path}: not a dbt catalog (no nodes)")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for section in ("nodes", "sources"):
        for uid, entry in _dict(doc.get(section), f"{path} {section}").items():
            cols = entry.get("columns") if isinstance(entry, dict) else None
            if isinstance(cols, dict):
                out[uid] = {
                    str(c.get("name", k)).lower(): c for k, c in cols.items() if isinstance(c, dict)
                }
    return out


def _model(
    node: dict[str, Any],
    uid: str,
    where: str,
    override: str | None,
    warehouse: dict[str, dict[str, dict[str, Any]]],
    taken: dict[str, set[str]],
    catalog: Catalog,
) -> Model:
    db, schema = _text(node.get("database")), _text(node.get("schema"))
    ds = override or slug("_".join(x for x in (db, schema) if x) or "dbt")
    base = str(node.get("name") or uid.rsplit(".", 1)[-1])
    if node.get("version") is not None:
        base = f"{base}_v{node['version']}"
    name = unique_name(safe_name(base), taken.setdefault(ds, set()))
    if name != safe_name(base):
        catalog.skipped.append(f"{where}: name '{base}' already used in {ds}; imported as '{name}'")
    config: dict[str, Any] = node["config"] if isinstance(node.get("config"), dict) else {}
    description = _text(node.get("description")) or _text(node.get("source_description"))
    # where it is built: relation_name, else database.schema.alias (a source's identifier)
    table = _text(node.get("alias")) or _text(node.get("identifier")) or _text(node.get("name"))
    built = ".".join(p for p in (db, schema, table) if p) if schema and table else None
    relation = _text(node.get("relation_name")) or built
    model = Model(
        name=name,
        datasource=ds,
        description=describe(
            description,
            tags=_tags(node.get("tags")),
            notes=_meta_notes(node.get("meta") or config.get("meta")),
        ),
        sql_table=relation.replace('"', "").replace("`", "") if relation else None,
        source=where,
    )
    typed = warehouse.get(uid, {})
    pk = {c.lower() for c in _strings(node.get("primary_key"))}
    for con in _list_of(node.get("constraints")):
        if isinstance(con, dict) and con.get("type") == "primary_key":
            pk.update(c.lower() for c in _strings(con.get("columns")))
    names = LeafNames(model)
    documented = _dict(node.get("columns"), f"{where} columns")
    order = sorted(
        typed.values(), key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0
    )
    seen: set[str] = set()
    for wc in [*(c for c in order), *({"name": k} for k in documented)]:
        cname = str(wc.get("name", ""))
        if not cname or cname.lower() in seen:
            continue
        seen.add(cname.lower())
        doc = next(
            (
                c
                for k, c in documented.items()
                if k.lower() == cname.lower() and isinstance(c, dict)
            ),
            {},
        )
        w = f"{where} column {cname}"
        constraints = _list_of(doc.get("constraints"))
        is_pk = cname.lower() in pk or any(
            isinstance(c, dict) and c.get("type") == "primary_key" for c in constraints
        )
        names.add(
            Column(
                name=safe_name(cname),
                data_type=_text(typed.get(cname.lower(), {}).get("type"))
                or _text(doc.get("data_type")),
                description=describe(
                    _text(doc.get("description"))
                    or _text(typed.get(cname.lower(), {}).get("comment")),
                    tags=_tags(doc.get("tags")),
                    notes=_meta_notes(doc.get("meta")),
                ),
                primary_key=is_pk,
            ),
            catalog.skipped,
            w,
        )
    return model


def _column(model: Model, name: str | None) -> str | None:
    if not name:
        return None
    bare = name.strip().strip('"`[]')
    return next((c.name for c in model.columns if c.name.lower() == bare.lower()), None)


def _tests(nodes: dict[str, Any], ids: dict[str, Model], catalog: Catalog) -> None:
    unique: set[tuple[str, str]] = set()
    not_null: set[tuple[str, str]] = set()
    joins: list[tuple[str, str, str, str, str]] = []
    for uid, node in sorted(nodes.items()):
        if not isinstance(node, dict) or node.get("resource_type") != "test":
            continue
        if isinstance(node.get("config"), dict) and node["config"].get("enabled") is False:
            continue
        meta = node.get("test_metadata")
        if not isinstance(meta, dict):
            continue  # a singular test: SQL, no key or join to read
        kind = str(meta.get("name"))
        kwargs: dict[str, Any] = meta["kwargs"] if isinstance(meta.get("kwargs"), dict) else {}
        attached = node.get("attached_node")
        deps = _deps(node)
        if not isinstance(attached, str):
            attached = deps[0] if deps else None
        if attached not in ids:
            continue
        column = _column(ids[attached], node.get("column_name") or kwargs.get("column_name"))
        if column is None:
            continue
        if kind == "unique":
            unique.add((attached, column))
        elif kind == "not_null":
            not_null.add((attached, column))
        elif kind == "relationships":
            target = next((d for d in deps if d != attached), None)
            if target not in ids:
                catalog.skipped.append(
                    f"{uid}: relationships test to {kwargs.get('to')} (not an imported model); "
                    "no join"
                )
                continue
            field = _column(ids[target], kwargs.get("field"))
            if field is None:
                catalog.skipped.append(
                    f"{uid}: relationships test field '{kwargs.get('field')}' is not a column of "
                    f"{ids[target].id}; no join"
                )
                continue
            joins.append((attached, column, target, field, uid))
    for uid, column in sorted(unique & not_null):
        for c in ids[uid].columns:
            if c.name == column:
                c.primary_key = True
    seen: set[tuple[str, str, str, str]] = set()
    for src, a, dst, b, _ in joins:
        if (src, a, dst, b) in seen:
            continue
        seen.add((src, a, dst, b))
        s, t = ids[src], ids[dst]
        target = t.name if t.datasource == s.datasource else t.id
        s.joins.append(Join(target=target, on=[(a, b)], cardinality="many_to_one"))


def _exposures(exposures: dict[str, Any], ids: dict[str, Model], catalog: Catalog) -> None:
    for uid, ex in sorted(exposures.items()):
        if not isinstance(ex, dict):
            continue
        label = _text(ex.get("label")) or str(ex.get("name", uid))
        kind = _text(ex.get("type")) or "exposure"
        text = f"Used by the {kind} '{label}'"
        desc = _text(ex.get("description"))
        note = f"{text}: {' '.join(desc.split())}" if desc else text
        used = [d for d in _deps(ex) if d in ids]
        for d in used:
            ids[d].description = describe(ids[d].description, notes=[note])
        if not used:
            catalog.skipped.append(
                f"{uid}: exposure '{label}' uses no imported model; not imported"
            )


def _semantic(mf: Path, manifest: dict[str, Any], ids: dict[str, Model], catalog: Catalog) -> None:
    """MetricFlow semantic models and metrics, merged into the models they are defined on."""
    sms = list(_dict(manifest.get("semantic_models"), f"{mf} semantic_models").values())
    metrics = list(_dict(manifest.get("metrics"), f"{mf} metrics").values())
    where = str(mf)
    sem = mf.parent / "semantic_manifest.json"
    if not sms and sem.is_file():
        doc = read_json(sem)
        if not isinstance(doc, dict):
            raise ModelLoadError(f"{sem}: expected an object with semantic_models and metrics")
        sms = [x for x in doc.get("semantic_models") or [] if isinstance(x, dict)]
        metrics = [x for x in doc.get("metrics") or [] if isinstance(x, dict)]
        where = str(sem)
    if not sms:
        if metrics:
            catalog.skipped.append(
                f"{where}: {len(metrics)} metric(s) without semantic models; not imported"
            )
        return
    by_ref = {m.name.lower(): m for m in ids.values()}
    temp = Catalog()
    entities = metricflow._Entities()
    home: dict[str, Model] = {}
    for i, item in enumerate(sms):
        w = f"{where} semantic_models[{i}]"
        raw = _dict(item, w)
        ref = raw.get("model")
        m = _REF.search(ref) if isinstance(ref, str) else None
        target = by_ref.get(m.group(1).lower()) if m else None
        relation = raw.get("node_relation")
        schema = relation.get("schema_name") if isinstance(relation, dict) else None
        ds = target.datasource if target else slug(str(schema or "dbt"))
        sm = metricflow._parse_semantic_model(raw, w, ds, entities, temp)
        temp.models.append(sm)
        if target is None:
            catalog.skipped.append(
                f"{w}: defined on {ref!r}, not an imported model; imported as its own model"
            )
            target = Model(name=sm.name, datasource=ds, source=w)
            catalog.models.append(target)
        home[sm.name] = target
    metricflow._add_entity_joins(temp, entities)
    metricflow._add_metrics(temp, [(x, f"{where} metrics[{i}]") for i, x in enumerate(metrics)])
    catalog.skipped.extend(temp.skipped)
    for sm in temp.models:
        target = home[sm.name]
        target.label = target.label or sm.label
        target.description = target.description or sm.description
        names = LeafNames(target)
        for col in sm.columns:
            existing = next((c for c in target.columns if c.name.lower() == col.name.lower()), None)
            if existing is None:
                names.add(col, catalog.skipped, f"{sm.source} {col.name}")
            else:
                existing.label = existing.label or col.label
                existing.description = existing.description or col.description
                existing.data_type = existing.data_type or col.data_type
                existing.primary_key = existing.primary_key or col.primary_key
        for me in sm.measures:
            names.add(me, catalog.skipped, f"{sm.source} measure {me.name}")
        for j in sm.joins:
            dst = home[j.target]
            on = [(_column(target, a) or a, _column(dst, b) or b) for a, b in j.on]
            join = Join(
                target=dst.name if dst.datasource == target.datasource else dst.id,
                on=on,
                cardinality=j.cardinality,
            )
            if all((x.target, x.on) != (join.target, join.on) for x in target.joins):
                target.joins.append(join)
