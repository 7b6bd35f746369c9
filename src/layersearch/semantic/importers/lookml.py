"""LookML projects: views → models, explores' joins → joins.

The loader starts at the project's model files (``*.model.lkml``; every
``.lkml`` file when there is none) and follows their ``include:`` statements
inside the project folder only. A view becomes a model: dimensions and dimension
groups become columns (a dimension group is one time column, its timeframes in
its description), measures become measures, ``hidden: yes`` hides. Each join of
an explore becomes a join from the view its ``sql_on`` starts from to the joined
view, with the explore's ``relationship`` and the ``${view.field}`` pairs of its
``sql_on``. Constants of ``manifest.lkml`` (``@{NAME}``) are substituted.

The parser (:func:`parse_lookml`) reads LookML's ``key: value`` and
``key: name { … }`` structure; ``sql``-like values run to ``;;``. Nothing is run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
from layersearch.semantic.importers.native import check_catalog, read_text
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Measure, Model

_MAX_DEPTH = 50
_BARE = re.compile(r"[^\s{}\[\],:\"#]+")
_KEY = re.compile(r"[A-Za-z_][\w]*")
_FIELD_REF = re.compile(r"\$\{\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\}")
_CONSTANT = re.compile(r"@\{\s*([A-Za-z_]\w*)\s*\}")
CARDINALITIES = ("one_to_one", "one_to_many", "many_to_one", "many_to_many")
#: timeframes a ``${view.group_timeframe}`` reference may end with
TIMEFRAMES = (
    "raw", "time", "date", "week", "month", "quarter", "year", "hour", "minute", "second",
    "millisecond", "microsecond", "day_of_week", "day_of_month", "day_of_year", "hour_of_day",
    "month_num", "month_name", "week_of_year", "quarter_of_year", "fiscal_month_num",
    "fiscal_quarter", "fiscal_quarter_of_year", "fiscal_year", "day_of_week_index", "time_of_day",
    "minute15", "minute30", "hour6", "hour12", "date_time", "yesno",
)  # fmt: skip


def _is_expression_key(key: str) -> bool:
    return key.startswith("sql") or key in ("html", "expression", "expression_custom_filter")


@dataclass(slots=True)
class Node:
    """One block: its ``name`` (``dimension: name {``), line, and its keys in order;
    a key written several times (``dimension``, ``join``) holds a list."""

    name: str | None
    line: int
    items: list[tuple[str, Any]] = field(default_factory=list)

    def one(self, key: str) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        return None

    def all(self, key: str) -> list[Any]:
        return [v for k, v in self.items if k == key]

    def text(self, key: str) -> str | None:
        v = self.one(key)
        return " ".join(v.split()) if isinstance(v, str) and v.strip() else None

    def yes(self, key: str) -> bool:
        return self.one(key) == "yes"


class _Parser:
    def __init__(self, text: str, path: Path) -> None:
        self.s = text
        self.i = 0
        self.path = path
        self.depth = 0

    def line(self, at: int | None = None) -> int:
        return self.s.count("\n", 0, self.i if at is None else at) + 1

    def where(self, at: int | None = None) -> str:
        pos = self.i if at is None else at
        col = pos - (self.s.rfind("\n", 0, pos) + 1) + 1
        return f"{self.path}:{self.line(pos)}:{col}"

    def skip(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            ch = s[self.i]
            if ch.isspace():
                self.i += 1
            elif ch == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            else:
                return

    def block(self, name: str | None, start: int, top: bool) -> Node:
        node = Node(name, self.line(start))
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ModelLoadError(f"{self.where()}: blocks nested over {_MAX_DEPTH} deep")
        while True:
            self.skip()
            if self.i >= len(self.s):
                if top:
                    break
                raise ModelLoadError(f"{self.where(start)}: unclosed '{{' (end of file)")
            if self.s[self.i] == "}":
                if top:
                    raise ModelLoadError(f"{self.where()}: '}}' without a matching '{{'")
                self.i += 1
                break
            m = _KEY.match(self.s, self.i)
            if not m:
                raise ModelLoadError(f"{self.where()}: expected a key, got {self.s[self.i]!r}")
            key = m.group()
            self.i = m.end()
            self.skip()
            if not self.s.startswith(":", self.i):
                raise ModelLoadError(f"{self.where()}: expected ':' after '{key}'")
            self.i += 1
            node.items.append((key, self.value(key)))
        self.depth -= 1
        return node

    def value(self, key: str) -> Any:
        self.skip()
        s, start = self.s, self.i
        if self.i >= len(s):
            raise ModelLoadError(f"{self.where()}: a value for '{key}' was expected")
        ch = s[self.i]
        if ch == "{":
            self.i += 1
            return self.block(None, start, False)
        if ch == "[":
            return self.list(key)
        if ch == '"':
            return self.string()
        if _is_expression_key(key):
            end = s.find(";;", self.i)
            if end < 0:
                raise ModelLoadError(f"{self.where(start)}: '{key}' is not closed by ';;'")
            self.i = end + 2
            return s[start:end].strip()
        m = _BARE.match(s, self.i)
        if not m:
            raise ModelLoadError(f"{self.where()}: unexpected {ch!r} after '{key}:'")
        self.i = m.end()
        word = m.group()
        self.skip()
        if self.s.startswith("{", self.i):
            brace = self.i
            self.i += 1
            return self.block(word, brace, False)
        if self.s.startswith(";;", self.i):
            self.i += 2
        return word

    def string(self) -> str:
        start = self.i
        out: list[str] = []
        self.i += 1
        while True:
            if self.i >= len(self.s):
                raise ModelLoadError(f"{self.where(start)}: unclosed string")
            ch = self.s[self.i]
            if ch == '"':
                self.i += 1
                return "".join(out)
            if ch == "\\" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            out.append(ch)
            self.i += 1

    def list(self, key: str) -> list[Any]:
        start = self.i
        self.i += 1
        out: list[Any] = []
        while True:
            self.skip()
            if self.i >= len(self.s):
                raise ModelLoadError(f"{self.where(start)}: unclosed '['")
            ch = self.s[self.i]
            if ch == "]":
                self.i += 1
                return out
            if ch == ",":
                self.i += 1
                continue
            if ch == '"':
                item: Any = self.string()
            else:
                m = _BARE.match(self.s, self.i)
                if not m:
                    raise ModelLoadError(
                        f"{self.where()}: unexpected {ch!r} in the list of '{key}'"
                    )
                self.i = m.end()
                item = m.group()
            self.skip()
            if self.s.startswith(":", self.i):  # filters: [field: "value"]
                self.i += 1
                self.skip()
                val = self.string() if self.s.startswith('"', self.i) else self._bare(key)
                item = (item, val)
            out.append(item)

    def _bare(self, key: str) -> str:
        m = _BARE.match(self.s, self.i)
        if not m:
            raise ModelLoadError(f"{self.where()}: unexpected value in the list of '{key}'")
        self.i = m.end()
        return m.group()


def parse_lookml(text: str, path: Path) -> Node:
    """A LookML file as a :class:`Node` tree; syntax errors name file, line and column."""
    return _Parser(text, path).block(None, 0, True)


def is_lookml(path: Path) -> bool:
    if path.is_file():
        return path.name.endswith((".lkml", ".lookml"))
    return any(p.is_file() for p in path.rglob("*.lkml"))


def _constants(root: Path) -> dict[str, str]:
    manifest = root / "manifest.lkml"
    if not manifest.is_file():
        return {}
    tree = parse_lookml(read_text(manifest), manifest)
    out: dict[str, str] = {}
    for c in tree.all("constant"):
        if isinstance(c, Node) and c.name and isinstance(c.one("value"), str):
            out[c.name] = c.one("value")
    return out


@dataclass(slots=True)
class _Project:
    root: Path
    skipped: list[str]
    constants: dict[str, str]
    trees: dict[Path, Node] = field(default_factory=dict)
    order: list[Path] = field(default_factory=list)

    def read(self, path: Path, stack: tuple[Path, ...] = ()) -> None:
        """Parse ``path`` and, depth first, what it includes (each file once)."""
        if path in self.trees:
            if path in stack:
                self.skipped.append(
                    f"{stack[-1]}: include loop back to {path.relative_to(self.root)}; not followed"
                )
            return
        text = _CONSTANT.sub(lambda m: self.constants.get(m.group(1), m.group(0)), read_text(path))
        tree = parse_lookml(text, path)
        self.trees[path] = tree
        self.order.append(path)
        for inc in tree.all("include"):
            for target in self.resolve(inc, path):
                self.read(target, (*stack, path))

    def resolve(self, pattern: Any, path: Path) -> list[Path]:
        where = f"{path}: include {pattern!r}"
        if not isinstance(pattern, str) or not pattern.strip():
            self.skipped.append(f"{where}: not a file pattern; not followed")
            return []
        pat = pattern.strip()
        if "://" in pat or pat.startswith("//"):
            self.skipped.append(f"{where}: another project's files; not read")
            return []
        base = self.root if pat.startswith("/") else path.parent
        rel = pat.lstrip("/")
        # Looker lets ``x.view`` stand for ``x.view.lkml``
        patterns = [rel] if rel.endswith((".lkml", ".lookml")) else [rel, rel + ".lkml"]
        escaped = False
        found: list[Path] = []
        for pattern_ in patterns:
            parts = Path(pattern_).parts
            cut = next((i for i, x in enumerate(parts) if any(c in x for c in "*?[")), len(parts))
            folder = base.joinpath(*parts[:cut]).resolve() if cut else base.resolve()
            rest = "/".join(parts[cut:])
            if not folder.is_relative_to(self.root):
                escaped = True
                continue
            if rest:
                if ".." in Path(rest).parts:
                    escaped = True
                    continue
                matches = sorted(folder.glob(rest))
            else:
                matches = [folder] if folder.is_file() else []
            for m in matches:
                real = m.resolve()
                if not real.is_relative_to(self.root):
                    escaped = True
                elif real.is_file() and real not in found:
                    if real.name.endswith((".lookml", ".dashboard.lkml")):
                        self.skipped.append(f"{where}: dashboard {m.name} not read")
                        continue
                    found.append(real)
        if escaped:
            self.skipped.append(f"{where} leaves the project folder {self.root}; not read")
        elif not found:
            self.skipped.append(f"{where}: no such file; not read")
        return found


def load_lookml(path: str | Path, *, datasource: str | None = None) -> Catalog:
    root_arg = Path(path)
    if not root_arg.exists():
        raise ModelLoadError(f"{root_arg}: no such file or directory")
    root = (root_arg.parent if root_arg.is_file() else root_arg).resolve()
    catalog = Catalog()
    project = _Project(root, catalog.skipped, _constants(root))
    if root_arg.is_file():
        entries = [root_arg.resolve()]
    else:
        everything = sorted(p.resolve() for p in root.rglob("*.lkml") if p.is_file())
        if not everything:
            raise ModelLoadError(f"{root_arg}: no .lkml files found")
        entries = [p for p in everything if p.name.endswith(".model.lkml")] or [
            p for p in everything if p.name != "manifest.lkml"
        ]
    for e in entries:
        project.read(e)
    if root_arg.is_dir():
        for p in sorted(root.rglob("*.lkml")):
            real = p.resolve()
            if real not in project.trees and p.name != "manifest.lkml":
                catalog.skipped.append(f"{p}: not included by any model file; not read")
    ds_name = datasource or _datasource_name(root)
    label = None
    for p in entries:
        tree = project.trees.get(p)
        if tree is not None and p.name.endswith(".model.lkml"):
            label = label or tree.text("label")
    catalog.datasources.append(Datasource(name=ds_name, label=label, source=str(root)))
    models: dict[str, Model] = {}
    taken: set[str] = set()
    for p in project.order:
        for v in project.trees[p].all("view"):
            if not isinstance(v, Node) or not v.name:
                catalog.skipped.append(f"{p}: a view without a name; not read")
                continue
            where = f"{p}:{v.line} (view {v.name})"
            if v.name in models:
                catalog.skipped.append(f"{where}: view '{v.name}' already read; this one skipped")
                continue
            model = _view(v, ds_name, where, catalog.skipped)
            model.name = unique_name(model.name, taken)
            models[v.name] = model
            catalog.models.append(model)
    for p in project.order:
        for ex in project.trees[p].all("explore"):
            if isinstance(ex, Node):
                _explore(ex, f"{p}:{ex.line} (explore {ex.name})", models, catalog.skipped)
    check_catalog(catalog)
    return catalog


def _datasource_name(root: Path) -> str:
    manifest = root / "manifest.lkml"
    if manifest.is_file():
        name = parse_lookml(read_text(manifest), manifest).text("project_name")
        if name:
            return slug(name)
    return slug(root.name)


def _view(v: Node, ds: str, where: str, skipped: list[str]) -> Model:
    assert v.name is not None
    derived = v.one("derived_table")
    table = v.text("sql_table_name")
    if table is None and isinstance(derived, Node):
        table = sql_table(derived.text("sql"))
        source = derived.one("explore_source")
        if table is None and isinstance(source, Node):
            table = f"(explore_source {source.name})"
    model = Model(
        name=safe_name(v.name),
        datasource=ds,
        label=v.text("label"),
        description=describe(v.text("description")),
        hidden=v.yes("hidden"),
        sql_table=table,
        source=where,
    )
    names = LeafNames(model)
    for k, raw in v.items:
        if k not in ("dimension", "dimension_group", "measure", "filter", "parameter"):
            continue
        if not isinstance(raw, Node) or not raw.name:
            skipped.append(f"{where}: a {k} without a name; not read")
            continue
        w = f"{where} {k} {raw.name}"
        if k in ("filter", "parameter"):
            skipped.append(f"{w}: {k} fields (user inputs) are not imported")
            continue
        label = raw.text("label")
        group = raw.text("group_label")
        notes = [f"Group: {group}."] if group else []
        if k == "measure":
            mtype = raw.text("type") or "count"
            filters = [f"{f} = {val}" for f, val in _filter_pairs(raw.one("filters"))]
            names.add(
                Measure(
                    name=safe_name(raw.name),
                    formula=with_filters(measure_formula(mtype, raw.text("sql")), filters),
                    label=label,
                    description=describe(raw.text("description"), notes=notes),
                    data_type=mtype,
                    hidden=raw.yes("hidden"),
                ),
                skipped,
                w,
            )
            continue
        dtype = raw.text("type") or "string"
        if k == "dimension_group":
            tf = raw.one("timeframes")
            frames = [f for f in tf if isinstance(f, str)] if isinstance(tf, list) else []
            if frames:
                notes.append(f"Timeframes: {', '.join(frames)}.")
            dtype = "time" if dtype == "time" else dtype
        names.add(
            Column(
                name=safe_name(raw.name),
                data_type=dtype,
                label=label,
                description=describe(raw.text("description"), notes=notes),
                hidden=raw.yes("hidden"),
                primary_key=raw.yes("primary_key"),
                sql=raw.text("sql"),
            ),
            skipped,
            w,
        )
    return model


def _filter_pairs(raw: Any) -> list[tuple[str, str]]:
    """A measure's filters: ``filters: [f: "v"]`` or ``filters: { field: f value: v }``."""
    out: list[tuple[str, str]] = []
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    for it in items:
        if isinstance(it, tuple):
            out.append((str(it[0]), str(it[1])))
        elif isinstance(it, Node) and it.text("field"):
            out.append((it.text("field") or "", it.text("value") or ""))
    return out


def _field(model: Model, name: str) -> str | None:
    """The column ``name`` refers to: itself, or the dimension group of ``group_timeframe``."""
    cols = {c.name.lower(): c.name for c in model.columns}
    if name.lower() in cols:
        return cols[name.lower()]
    for tf in TIMEFRAMES:
        if name.lower().endswith("_" + tf) and name.lower()[: -len(tf) - 1] in cols:
            return cols[name.lower()[: -len(tf) - 1]]
    return None


def _explore(ex: Node, where: str, models: dict[str, Model], skipped: list[str]) -> None:
    # aliases: the explore's own name stands for its ``from`` view, a join's for its ``from``
    alias: dict[str, str] = {}
    if ex.name:
        alias[ex.name] = ex.text("from") or ex.text("view_name") or ex.name
    for j in ex.all("join"):
        if isinstance(j, Node) and j.name:
            alias[j.name] = j.text("from") or j.name
    for j in ex.all("join"):
        if not isinstance(j, Node) or not j.name:
            continue
        w = f"{where} join {j.name}"
        target = models.get(alias[j.name])
        if target is None:
            skipped.append(f"{w}: view '{alias[j.name]}' is not in the project; not imported")
            continue
        rel = j.text("relationship") or "many_to_one"  # Looker's default
        if rel not in CARDINALITIES:
            skipped.append(f"{w}: relationship '{rel}' not recognised; cardinality left unknown")
        sql_on = j.text("sql_on") or ""
        refs = [(alias.get(v, v), f) for v, f in _FIELD_REF.findall(sql_on)]
        others = [(v, f) for v, f in refs if v != alias[j.name]]
        mine = [(v, f) for v, f in refs if v == alias[j.name]]
        if not others:
            skipped.append(
                f"{w}: sql_on names no other view (foreign_key or sql joins are not read); not imported"
            )
            continue
        source = models.get(others[0][0])
        if source is None:
            skipped.append(
                f"{w}: sql_on starts from '{others[0][0]}', not a view of the project; not imported"
            )
            continue
        on: list[tuple[str, str]] = []
        for (_, a), (_, b) in zip([r for r in others if r[0] == others[0][0]], mine, strict=False):
            ca, cb = _field(source, a), _field(target, b)
            if ca and cb:
                on.append((ca, cb))
            else:
                skipped.append(
                    f"{w}: sql_on field {a if not ca else b} is not a dimension; pair not imported"
                )
        join = Join(
            target=target.name,
            on=on,
            cardinality=rel if rel in CARDINALITIES else None,
            join_type=j.text("type"),
        )
        if any(
            (x.target, x.on, x.cardinality) == (join.target, join.on, join.cardinality)
            for x in source.joins
        ):
            continue  # the same join in another explore
        source.joins.append(join)
