"""layersearch's own YAML format (documented in docs/yaml-format.md).

A folder is read recursively; every ``*.yaml`` / ``*.yml`` file holds one
document whose top-level key says what it is:

- ``datasource:`` a mapping (name, description, label, dialect), optionally
  with ``models:`` — a list of model mappings that belong to it;
- ``model:`` one model (its name), with ``datasource:`` naming its datasource
  (optional inside a folder that has exactly one ``datasource.yaml``);
- ``memories:`` a list of memories (learning, description, entities, query).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from layersearch.errors import ModelLoadError
from layersearch.semantic.model import (
    Aggregation,
    Catalog,
    Column,
    Datasource,
    Join,
    Measure,
    MemorySpec,
    Model,
)

CARDINALITIES = ("one_to_one", "one_to_many", "many_to_one", "many_to_many")
MAX_FILE_BYTES = 20 * 1024 * 1024
#: libyaml's loader recurses in C once per nesting level and crashes the process past
#: ~20,000 levels; it is used only when the text cannot nest deeper than this
C_LOADER_MAX_DEPTH = 5_000


def _nesting_bound(text: str) -> int:
    """An upper bound on the nesting depth of ``text``: every flow level opens with '['
    or '{', and block levels need indentation or a '- ' / 'key: ' indicator on a line,
    so no line can add more levels than its length."""
    longest = max(map(len, text.splitlines()), default=0)
    return text.count("[") + text.count("{") + longest + 1


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)``, through libyaml's ``CSafeLoader`` when PyYAML has it and
    the text is provably shallow (4x faster on large model files), else the pure-Python
    SafeLoader (whose deep nesting ends in a RecursionError, not a crash)."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None or _nesting_bound(text) > C_LOADER_MAX_DEPTH:
        loader = yaml.SafeLoader
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader either way


def yaml_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def model_yaml_files(root: Path) -> list[Path]:
    """The YAML files a YAML importer reads at ``root`` (a file or a folder); a missing
    path or a folder without any is an error naming it."""
    if not root.exists():
        raise ModelLoadError(f"{root}: no such file or directory")
    files = yaml_files(root)
    if not files:
        raise ModelLoadError(f"{root}: no .yaml or .yml files found")
    return files


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A model file's text (UTF-8, a byte-order mark dropped), at most ``limit`` bytes;
    errors name the file."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise ModelLoadError(
                f"{path}: file is {size} bytes, over the {limit}-byte limit for model files"
            )
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    except OSError as exc:
        raise ModelLoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; errors name the file and the line."""
    text = read_text(path)
    try:
        return load_yaml(text)
    except RecursionError as exc:
        raise ModelLoadError(f"{path}: invalid YAML: nested too deeply to read") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ModelLoadError(f"{path}{where}: invalid YAML: {problem}") from exc


def _str(value: Any, where: str, key: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ModelLoadError(f"{where}: missing required key '{key}'")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ModelLoadError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    text = str(value).strip()
    if required and not text:
        raise ModelLoadError(f"{where}: '{key}' must not be empty")
    return text or None


def _name(value: Any, where: str, key: str = "name") -> str:
    name = _str(value, where, key, required=True)
    assert name is not None
    if "." in name or ":" in name or any(ch.isspace() for ch in name):
        raise ModelLoadError(
            f"{where}: {key} '{name}' may not contain '.', ':' or spaces (ids are dotted paths)"
        )
    return name


def _bool(value: Any, where: str, key: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ModelLoadError(f"{where}: '{key}' must be true or false")
    return value


def _list(value: Any, where: str, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ModelLoadError(f"{where}: '{key}' must be a list")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelLoadError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def parse_model(raw: Any, where: str, datasource: str | None) -> Model:
    data = _mapping(raw, where)
    name = _name(data.get("model", data.get("name")), where, "model")
    where = f"{where} (model {name})"
    ds = _str(data.get("datasource"), where, "datasource") or datasource
    if not ds:
        raise ModelLoadError(f"{where}: no datasource: add 'datasource: <name>'")
    model = new_model(data, where, name, _name(ds, where, "datasource"))
    seen: dict[str, str] = {}

    def claim(leaf: str, kind: str) -> None:
        if leaf in seen:
            raise ModelLoadError(
                f"{where}: duplicate name '{leaf}' ({seen[leaf]} and {kind}); "
                "columns, measures and aggregations of a model share one namespace"
            )
        seen[leaf] = kind

    for _, col in leaves(data, where, "columns", parse_column):
        claim(col.name, "column")
        model.columns.append(col)
    for _, me in leaves(data, where, "measures", parse_measure):
        claim(me.name, "measure")
        model.measures.append(me)
    for _, agg in leaves(data, where, "aggregations", parse_aggregation):
        claim(agg.name, "aggregation")
        model.aggregations.append(agg)
    for _, join in leaves(data, where, "joins", _parse_join):
        model.joins.append(join)
    return model


def new_datasource(data: Mapping[str, Any], where: str, name: str, dialect_key: str) -> Datasource:
    """A datasource: ``data``'s description, label and (under ``dialect_key``) dialect."""
    return Datasource(
        name=name,
        description=_str(data.get("description"), where, "description"),
        label=_str(data.get("label"), where, "label"),
        dialect=_str(data.get(dialect_key), where, dialect_key),
        source=where,
    )


def new_model(data: Mapping[str, Any], where: str, name: str, datasource: str) -> Model:
    """A model without leaves or joins: ``data``'s label, description, hidden, sql_table."""
    return Model(
        name=name,
        datasource=datasource,
        label=_str(data.get("label"), where, "label"),
        description=_str(data.get("description"), where, "description"),
        hidden=_bool(data.get("hidden"), where, "hidden"),
        sql_table=_str(data.get("sql_table"), where, "sql_table"),
        source=where,
    )


L = TypeVar("L")


def leaves(
    data: Mapping[str, Any], where: str, key: str, parse: Callable[[Any, str], L]
) -> Iterator[tuple[str, L]]:
    """Each entry of the list under ``key``, parsed, with where it stands
    (``<where> columns[2]``)."""
    for i, raw in enumerate(_list(data.get(key), where, key)):
        w = f"{where} {key}[{i}]"
        yield w, parse(raw, w)


def _first(data: Mapping[Any, Any], keys: Sequence[str]) -> Any:
    """``data.get(keys[0], data.get(keys[1], …))``: the first key present wins."""
    value = None
    for key in reversed(keys):
        value = data.get(key, value)
    return value


def parse_column(
    raw: Any, where: str, *, type_keys: Sequence[str] = ("type", "data_type"), values: bool = True
) -> Column:
    """A column mapping (name, type, label, description, hidden, primary_key and, with
    ``values``, its sample values); errors name ``where``."""
    c = _mapping(raw, where)
    return Column(
        name=_name(c.get("name"), where),
        data_type=_str(_first(c, type_keys), where, "type"),
        label=_str(c.get("label"), where, "label"),
        description=_str(c.get("description"), where, "description"),
        hidden=_bool(c.get("hidden"), where, "hidden"),
        primary_key=_bool(c.get("primary_key"), where, "primary_key"),
        values=[str(v) for v in _list(c.get("values"), where, "values")] if values else [],
        sql=_str(c.get("sql"), where, "sql"),
    )


def parse_measure(
    raw: Any, where: str, *, type_keys: Sequence[str] = ("type", "data_type")
) -> Measure:
    """A measure mapping (name, formula, label, description, type, hidden)."""
    m = _mapping(raw, where)
    return Measure(
        name=_name(m.get("name"), where),
        formula=_str(m.get("formula"), where, "formula"),
        label=_str(m.get("label"), where, "label"),
        description=_str(m.get("description"), where, "description"),
        data_type=_str(_first(m, type_keys), where, "type"),
        hidden=_bool(m.get("hidden"), where, "hidden"),
    )


def parse_aggregation(
    raw: Any,
    where: str,
    *,
    formula_keys: Sequence[str] = ("formula",),
    params_where: str = "",
) -> Aggregation:
    """An aggregation mapping (name, formula, label, description, params, hidden); a
    param that is not a mapping is named ``<where><params_where>``."""
    a = _mapping(raw, where)
    return Aggregation(
        name=_name(a.get("name"), where),
        formula=_str(_first(a, formula_keys), where, "formula"),
        label=_str(a.get("label"), where, "label"),
        description=_str(a.get("description"), where, "description"),
        params=[
            _mapping(p, f"{where}{params_where}") for p in _list(a.get("params"), where, "params")
        ],
        hidden=_bool(a.get("hidden"), where, "hidden"),
    )


def _parse_join(raw: Any, w: str) -> Join:
    j = _mapping(raw, w)
    target = _str(j.get("to", j.get("target")), w, "to", required=True)
    assert target is not None
    pairs: list[tuple[str, str]] = []
    # YAML 1.1 reads a bare `on:` key as the boolean true: accept both spellings.
    raw_on: dict[Any, Any] = j
    on = raw_on.get("on", raw_on.get(True))
    if not on:
        raise ModelLoadError(f"{w}: a join needs 'on: [[this_column, target_column]]'")
    for p in _list(on, w, "on"):
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)):
            raise ModelLoadError(f"{w}: each 'on' entry must be [this_column, target_column]")
        pairs.append((p[0], p[1]))
    card = _str(j.get("cardinality"), w, "cardinality")
    if card is not None and card not in CARDINALITIES:
        raise ModelLoadError(f"{w}: cardinality '{card}' is not one of {', '.join(CARDINALITIES)}")
    return Join(target=target, on=pairs, cardinality=card, join_type=_str(j.get("type"), w, "type"))


def parse_memory(raw: Any, where: str) -> MemorySpec:
    data = _mapping(raw, where)
    learning = _str(data.get("learning"), where, "learning", required=True)
    assert learning is not None
    entities = [str(e) for e in _list(data.get("entities"), where, "entities")]
    description = _str(data.get("description"), where, "description")
    if description is not None and len(description) > 500:
        raise ModelLoadError(f"{where}: description is {len(description)} characters; at most 500")
    query = data.get("query")
    if query is not None and not isinstance(query, dict):
        raise ModelLoadError(f"{where}: 'query' must be a mapping (measures, dimensions, filters…)")
    return MemorySpec(
        learning=learning,
        description=description,
        entities=entities,
        query=query,
        source=where,
    )


def load_native(path: str | Path) -> Catalog:
    root = Path(path)
    files = model_yaml_files(root)
    catalog = Catalog()
    # A folder with exactly one datasource file gives its models a default datasource.
    folder_ds: dict[Path, str] = {}
    docs: list[tuple[Path, dict[str, Any]]] = []
    for f in files:
        raw = read_yaml(f)
        if raw is None:
            catalog.skipped.append(f"{f}: empty file")
            continue
        if not isinstance(raw, dict):
            raise ModelLoadError(
                f"{f}: top level must be a mapping with 'datasource', 'model' or 'memories'"
            )
        docs.append((f, raw))
        if "datasource" in raw and isinstance(raw["datasource"], dict):
            folder_ds[f.parent] = (
                "" if f.parent in folder_ds else str(raw["datasource"].get("name", ""))
            )
    for f, raw in docs:
        where = str(f)
        if "model" in raw:
            default = folder_ds.get(f.parent) or None
            catalog.models.append(parse_model(raw, where, default))
        elif "datasource" in raw and isinstance(raw["datasource"], dict):
            d = raw["datasource"]
            name = _name(d.get("name"), where, "name")
            catalog.datasources.append(new_datasource(d, where, name, "dialect"))
            for i, m in enumerate(_list(d.get("models"), where, "models")):
                catalog.models.append(parse_model(m, f"{where} models[{i}]", name))
        elif "memories" in raw:
            for i, m in enumerate(_list(raw["memories"], where, "memories")):
                catalog.memories.append(parse_memory(m, f"{where} memories[{i}]"))
        else:
            keys = ", ".join(sorted(map(str, raw))) or "nothing"
            catalog.skipped.append(
                f"{f}: not a layersearch file (top-level keys: {keys}; expected datasource, model or memories)"
            )
    check_catalog(catalog)
    return catalog


def check_catalog(catalog: Catalog) -> None:
    """Duplicate ids and dangling joins are load errors, named with their sources."""
    ds_seen: dict[str, str] = {}
    for d in catalog.datasources:
        if d.name in ds_seen:
            raise ModelLoadError(
                f"duplicate datasource '{d.name}' in {ds_seen[d.name]} and {d.source}"
            )
        ds_seen[d.name] = d.source or "?"
    model_seen: dict[str, str] = {}
    for m in catalog.models:
        if m.id in model_seen:
            raise ModelLoadError(f"duplicate model '{m.id}' in {model_seen[m.id]} and {m.source}")
        model_seen[m.id] = m.source or "?"
    by_id = {m.id: m for m in catalog.models}
    for m in catalog.models:
        own = {c.name for c in m.columns}
        for j in m.joins:
            target = j.target if "." in j.target else f"{m.datasource}.{j.target}"
            if target not in model_seen:
                raise ModelLoadError(f"{m.source}: join to unknown model '{j.target}'")
            theirs = {c.name for c in by_id[target].columns}
            for a, b in j.on:
                if a not in own or b not in theirs:
                    missing = f"{m.id}.{a}" if a not in own else f"{target}.{b}"
                    raise ModelLoadError(
                        f"{m.source}: join to '{j.target}' uses unknown column {missing}"
                    )
