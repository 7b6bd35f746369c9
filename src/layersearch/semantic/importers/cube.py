"""Cube data schemas: JavaScript (``cube(`name`, {…})``) and YAML (``cubes:``) model files.

Every cube becomes a model of one datasource (``--datasource``, else the folder
name): dimensions → columns, measures → measures (type and SQL in the formula),
segments → measures typed ``segment`` (a named filter, its SQL the formula),
joins → joins with their relationship, views → models holding the members they
include. JavaScript files are read by :mod:`jsdata` as data and never run;
what lies outside its subset is listed in ``skipped`` with file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers._common import (
    LeafNames,
    describe,
    measure_formula,
    safe_name,
    slug,
    sql_table,
    unique_name,
    with_filters,
)
from layersearch.semantic.importers.jsdata import (
    Program,
    Ref,
    Require,
    Template,
    Unsupported,
    parse_js,
    render,
)
from layersearch.semantic.importers.native import check_catalog, read_text, read_yaml
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Measure, Model

_CALL = re.compile(r"^\s*(?:cube|view)\s*\(", re.MULTILINE)
RELATIONSHIPS = {
    "belongsto": "many_to_one",
    "belongs_to": "many_to_one",
    "many_to_one": "many_to_one",
    "hasmany": "one_to_many",
    "has_many": "one_to_many",
    "one_to_many": "one_to_many",
    "hasone": "one_to_one",
    "has_one": "one_to_one",
    "one_to_one": "one_to_one",
}
# ``${Cube}.column``, ``${Cube.member}``, ``{CUBE}.column`` (YAML), ``${member}``
_SIDE = re.compile(r"\$?\{\s*([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\s*\}(?:\.([A-Za-z_]\w*))?")
_SKIP_DIRS = {"node_modules", ".git"}


def is_cube_js(text: str) -> bool:
    return bool(_CALL.search(text))


def is_cube_yaml(doc: Any) -> bool:
    return isinstance(doc, dict) and any(isinstance(doc.get(k), list) for k in ("cubes", "views"))


def cube_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in (".js", ".yml", ".yaml")
        and p.is_file()
        and not _SKIP_DIRS.intersection(p.relative_to(root).parts)
    )


@dataclass(slots=True)
class _Def:
    kind: str  # cube | view
    name: str
    body: dict[str, Any]
    where: str
    #: the file it is defined in
    file: str


@dataclass(slots=True)
class _Modules:
    """Parsed JavaScript files and their constants and exports, each file read once."""

    root: Path
    skipped: list[str]
    programs: dict[Path, Program] = field(default_factory=dict)
    scopes: dict[Path, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    loading: set[Path] = field(default_factory=set)

    def program(self, path: Path) -> Program:
        if path not in self.programs:
            prog = parse_js(path, read_text(path))
            for line, msg in prog.problems:
                self.skipped.append(
                    f"{path}:{line}: {msg} (outside the JavaScript subset read as data; never run)"
                )
            self.programs[path] = prog
        return self.programs[path]

    def scope(self, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        """The constants and the exports of one file."""
        if path in self.scopes:
            return self.scopes[path]
        self.loading.add(path)
        consts: dict[str, Any] = {}
        exports: dict[str, Any] = {}
        try:
            for st in self.program(path).statements:
                if st.kind == "const":
                    consts[st.name] = self.resolve(st.args[0], consts, path)
                elif st.kind == "export":
                    value = self.resolve(st.args[0], consts, path)
                    if st.name:
                        exports[st.name] = value
                    elif isinstance(value, dict):
                        exports.update(value)
                elif st.kind == "call" and st.name == "addExport":
                    value = self.resolve(st.args[0], consts, path) if st.args else None
                    if isinstance(value, dict):
                        exports.update(value)
        finally:
            self.loading.discard(path)
        self.scopes[path] = (consts, exports)
        return consts, exports

    def resolve(self, value: Any, consts: dict[str, Any], path: Path) -> Any:
        if isinstance(value, Require):
            return self.require(value, path)
        if isinstance(value, dict):
            return {k: self.resolve(v, consts, path) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, consts, path) for v in value]
        return render(value, consts)

    def require(self, req: Require, path: Path) -> Any:
        where = f"{path}:{req.line}: require('{req.spec}')"
        if not req.spec.startswith(("./", "../")):
            return self._refuse(req, f"{where} is not a file of this model folder: not read")
        base = (path.parent / req.spec).resolve()
        if not base.is_relative_to(self.root):
            return self._refuse(req, f"{where} leaves the model folder {self.root}: not read")
        candidates = (
            [base]
            if base.suffix == ".js"
            else [base.with_name(base.name + ".js"), base / "index.js"]
        )
        target = next((c for c in candidates if c.is_file()), None)
        if target is None:
            return self._refuse(req, f"{where}: no such file")
        if not target.resolve().is_relative_to(self.root):
            return self._refuse(req, f"{where} leaves the model folder {self.root}: not read")
        if target in self.loading:
            return self._refuse(req, f"{where}: require loop back to {target}; not followed")
        _, exports = self.scope(target)
        if req.member is None:
            return exports
        if req.member not in exports:
            return self._refuse(req, f"{where} exports no '{req.member}'")
        return exports[req.member]

    def _refuse(self, req: Require, message: str) -> Unsupported:
        self.skipped.append(message)
        return Unsupported(f"require('{req.spec}')", req.line)


def load_cube(path: str | Path, *, datasource: str | None = None) -> Catalog:
    root = Path(path)
    if not root.exists():
        raise ModelLoadError(f"{root}: no such file or directory")
    files = cube_files(root)
    if not files:
        raise ModelLoadError(f"{root}: no .js, .yml or .yaml files found")
    ds = datasource or slug(root.parent.name if root.is_file() else root.name)
    catalog = Catalog(datasources=[Datasource(name=ds, source=str(root))])
    folder = (root.parent if root.is_file() else root).resolve()
    modules = _Modules(folder, catalog.skipped)
    defs: list[_Def] = []
    for f in files:
        if f.suffix == ".js":
            defs.extend(_js_defs(f.resolve(), modules, catalog))
        else:
            defs.extend(_yaml_defs(f, catalog))
    _build(defs, ds, catalog)
    check_catalog(catalog)
    return catalog


def _js_defs(path: Path, modules: _Modules, catalog: Catalog) -> list[_Def]:
    prog = modules.program(path)
    consts, _ = modules.scope(path)
    out: list[_Def] = []
    for st in prog.statements:
        where = f"{path}:{st.line}"
        if st.kind != "call" or st.name == "addExport":
            continue
        if st.name in ("cube", "view"):
            args = [modules.resolve(a, consts, path) for a in st.args]
            if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], dict):
                catalog.skipped.append(
                    f"{where}: {st.name}() needs a name and an object literal; not read"
                )
                continue
            out.append(_Def(st.name, args[0], args[1], f"{where} ({st.name} {args[0]})", str(path)))
        elif st.name == "context":
            name = render(st.args[0], consts) if st.args else "?"
            catalog.skipped.append(f"{where}: context '{name}' (a grouping of cubes) not imported")
        else:
            catalog.skipped.append(
                f"{where}: a call to {st.name}(): not read (outside the JavaScript subset "
                "read as data; never run)"
            )
    return out


def _yaml_defs(path: Path, catalog: Catalog) -> list[_Def]:
    doc = read_yaml(path)
    if not is_cube_yaml(doc):
        catalog.skipped.append(f"{path}: no cubes or views; not imported")
        return []
    out: list[_Def] = []
    for kind, key in (("cube", "cubes"), ("view", "views")):
        items = doc.get(key) or []
        if not isinstance(items, list):
            raise ModelLoadError(f"{path}: '{key}' must be a list")
        for i, raw in enumerate(items):
            where = f"{path} {key}[{i}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                raise ModelLoadError(f"{where}: expected a mapping with a name")
            out.append(_Def(kind, raw["name"], raw, f"{where} ({kind} {raw['name']})", str(path)))
    return out


def _get(d: dict[str, Any], key: str) -> Any:
    """``d[key]`` under its snake_case or camelCase spelling."""
    if key in d:
        return d[key]
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
    return d.get(camel)


def _text(d: dict[str, Any], key: str, where: str, skipped: list[str]) -> str | None:
    value = _get(d, key)
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        text = str(value).strip()
        return text or None
    if isinstance(value, Ref):
        return value.path
    if isinstance(value, Unsupported):
        skipped.append(f"{where}: '{key}' is {value.what} (line {value.line}); not read")
        return None
    if isinstance(value, Template):
        return render(value, {})
    skipped.append(f"{where}: '{key}' is a {type(value).__name__}, not text; not read")
    return None


def _flag(d: dict[str, Any], key: str) -> bool | None:
    value = _get(d, key)
    return value if isinstance(value, bool) else None


def _members(value: Any, where: str, key: str, skipped: list[str]) -> list[tuple[str, Any]]:
    """A cube's members as (name, definition): JavaScript objects are keyed by name,
    YAML lists hold ``name:``."""
    if value is None:
        return []
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out.append((item["name"], item))
            else:
                skipped.append(f"{where} {key}[{i}]: a member without a name; not read")
        return out
    skipped.append(f"{where}: '{key}' is not an object or list; not read")
    return []


def _hidden(d: dict[str, Any]) -> bool:
    return _flag(d, "shown") is False or _flag(d, "public") is False


def _body(
    member: Any, kind: str, name: str, d: _Def, where: str, skipped: list[str]
) -> dict[str, Any]:
    """A member's definition; one outside the subset is noted (at its own line) and
    the member kept by name only."""
    if isinstance(member, dict):
        return member
    if isinstance(member, Unsupported):
        skipped.append(
            f"{d.file}:{member.line}: {kind} '{name}' of {d.kind} {d.name} is {member.what}, "
            "outside the JavaScript subset read as data (never run); kept by name only"
        )
    else:
        skipped.append(f"{where}: {kind} '{name}' is a {type(member).__name__}; kept by name only")
    return {}


def _filters(d: dict[str, Any], where: str, skipped: list[str]) -> list[str]:
    raw = _get(d, "filters")
    out: list[str] = []
    for f in raw if isinstance(raw, list) else []:
        if isinstance(f, dict):
            sql = _text(f, "sql", where, skipped)
            if sql:
                out.append(sql)
    return out


def _build(defs: list[_Def], ds: str, catalog: Catalog) -> None:
    taken: set[str] = set()
    by_name: dict[str, Model] = {}
    pending: list[tuple[Model, _Def]] = []
    for d in defs:
        name = unique_name(safe_name(d.name), taken)
        if name.lower() != safe_name(d.name).lower():
            catalog.skipped.append(f"{d.where}: name '{d.name}' already used; imported as '{name}'")
        body, sk = d.body, catalog.skipped
        model = Model(
            name=name,
            datasource=ds,
            label=_text(body, "title", d.where, sk),
            description=describe(
                _text(body, "description", d.where, sk),
                notes=["A Cube view."] if d.kind == "view" else [],
            ),
            hidden=_hidden(body),
            sql_table=_text(body, "sql_table", d.where, sk)
            or sql_table(_text(body, "sql", d.where, sk)),
            source=d.where,
        )
        names = LeafNames(model)
        for mname, raw in _members(_get(body, "dimensions"), d.where, "dimensions", sk):
            w = f"{d.where} dimension {mname}"
            m = _body(raw, "dimension", mname, d, w, sk)
            col = Column(
                name=safe_name(mname),
                data_type=_text(m, "type", w, sk),
                label=_text(m, "title", w, sk),
                description=describe(_text(m, "description", w, sk)),
                hidden=_hidden(m),
                primary_key=_flag(m, "primary_key") is True,
                sql=_text(m, "sql", w, sk),
            )
            names.add(col, sk, w)
        for mname, raw in _members(_get(body, "measures"), d.where, "measures", sk):
            w = f"{d.where} measure {mname}"
            m = _body(raw, "measure", mname, d, w, sk)
            mtype = _text(m, "type", w, sk)
            formula = measure_formula(mtype, _text(m, "sql", w, sk))
            names.add(
                Measure(
                    name=safe_name(mname),
                    formula=with_filters(formula, _filters(m, w, sk)),
                    label=_text(m, "title", w, sk),
                    description=describe(_text(m, "description", w, sk)),
                    data_type=mtype,
                    hidden=_hidden(m),
                ),
                sk,
                w,
            )
        for mname, raw in _members(_get(body, "segments"), d.where, "segments", sk):
            w = f"{d.where} segment {mname}"
            m = _body(raw, "segment", mname, d, w, sk)
            names.add(
                Measure(
                    name=safe_name(mname),
                    formula=_text(m, "sql", w, sk),
                    label=_text(m, "title", w, sk),
                    description=describe(
                        _text(m, "description", w, sk), notes=["Segment: a named filter."]
                    ),
                    data_type="segment",
                    hidden=_hidden(m),
                ),
                sk,
                w,
            )
        catalog.models.append(model)
        by_name[d.name] = model
        pending.append((model, d))
    sql_by_model = {model.name: _dimension_sql(d) for model, d in pending}
    for model, d in pending:
        if d.kind == "cube":
            _joins(model, d, by_name, sql_by_model, catalog.skipped)
        else:
            _view_members(model, d, by_name, catalog.skipped)


def _column_for(model: Model, ref: str, sql_of: dict[str, str]) -> str | None:
    """The column of ``model`` a join side names: a dimension by name, or the one
    whose SQL is that raw column."""
    for c in model.columns:
        if c.name == ref:
            return c.name
    for name, sql in sql_of.items():
        if sql in (ref, f"${{CUBE}}.{ref}", f"{{CUBE}}.{ref}", f"${{TABLE}}.{ref}"):
            return name
    return None


def _dimension_sql(d: _Def) -> dict[str, str]:
    out: dict[str, str] = {}
    dims = _get(d.body, "dimensions")
    for name, m in _members(dims, d.where, "dimensions", []):
        if isinstance(m, dict) and isinstance(_get(m, "sql"), str):
            out[safe_name(name)] = " ".join(str(_get(m, "sql")).split())
    return out


def _joins(
    model: Model,
    d: _Def,
    by_name: dict[str, Model],
    sql_by_model: dict[str, dict[str, str]],
    skipped: list[str],
) -> None:
    """The cube's joins; ``sql_by_model``: each model's dimension SQL by column name."""
    for tname, raw in _members(_get(d.body, "joins"), d.where, "joins", skipped):
        w = f"{d.where} join {tname}"
        j = raw if isinstance(raw, dict) else {}
        target = by_name.get(tname)
        if target is None:
            skipped.append(f"{w}: join to unknown cube '{tname}'; not imported")
            continue
        rel = (_text(j, "relationship", w, skipped) or "").replace("-", "_")
        card = RELATIONSHIPS.get(rel.lower())
        if rel and card is None:
            skipped.append(f"{w}: relationship '{rel}' not recognised; cardinality left unknown")
        sql = _text(j, "sql", w, skipped) or ""
        sides: list[tuple[Model, str]] = []
        for m in _SIDE.finditer(sql):
            cube, member, column = m.group(1), m.group(2), m.group(3)
            owner = model if cube in ("CUBE", d.name) else by_name.get(cube)
            ref = member or column
            if owner is None or ref is None:
                continue
            sides.append((owner, ref))
        on: list[tuple[str, str]] = []
        missing: list[str] = []
        for (a_model, a_ref), (b_model, b_ref) in zip(sides[::2], sides[1::2], strict=False):
            if a_model is target and b_model is model:
                (a_model, a_ref), (b_model, b_ref) = (b_model, b_ref), (a_model, a_ref)
            if a_model is not model or b_model is not target:
                continue
            a_col = _column_for(a_model, a_ref, sql_by_model[a_model.name])
            b_col = _column_for(b_model, b_ref, sql_by_model[b_model.name])
            if a_col and b_col:
                on.append((a_col, b_col))
            else:
                missing.append(a_ref if not a_col else b_ref)
        if missing:
            skipped.append(
                f"{w}: join column(s) {', '.join(missing)} are not dimensions; "
                "the join is kept without them"
            )
        model.joins.append(Join(target=target.name, on=on, cardinality=card))


def _view_members(model: Model, d: _Def, by_name: dict[str, Model], skipped: list[str]) -> None:
    """A view's ``cubes: [{join_path, includes, excludes, prefix}]`` copied in as its
    own columns and measures (named ``<cube>_<member>`` when ``prefix`` is set)."""
    names = LeafNames(model)
    for i, raw in enumerate(_get(d.body, "cubes") or []):
        w = f"{d.where} cubes[{i}]"
        if not isinstance(raw, dict):
            skipped.append(f"{w}: not an object; not read")
            continue
        path = _text(raw, "join_path", w, skipped) or ""
        cube_name = path.rsplit(".", 1)[-1]
        source = by_name.get(cube_name)
        if source is None:
            skipped.append(f"{w}: join_path '{path}' names no cube; not read")
            continue
        includes = _get(raw, "includes")
        excludes = {str(x.path if isinstance(x, Ref) else x) for x in (_get(raw, "excludes") or [])}
        wanted: set[str] | None = None
        if isinstance(includes, list):
            wanted = set()
            for x in includes:
                ref = x.path if isinstance(x, Ref) else x.get("name") if isinstance(x, dict) else x
                wanted.add(str(ref).rsplit(".", 1)[-1])
        elif includes not in ("*", None):
            skipped.append(f"{w}: includes must be '*' or a list; not read")
            continue
        prefix = f"{source.name}_" if _flag(raw, "prefix") else ""
        leaves: list[Column | Measure] = [*source.columns, *source.measures]
        for leaf in leaves:
            if (wanted is not None and leaf.name not in wanted) or leaf.name in excludes:
                continue
            # a view's copy of a column is neither a key nor sampled
            copy: Column | Measure = (
                replace(leaf, name=prefix + leaf.name, primary_key=False, values=[])
                if isinstance(leaf, Column)
                else replace(leaf, name=prefix + leaf.name)
            )
            names.add(copy, skipped, f"{w} ({source.name}.{leaf.name})")
