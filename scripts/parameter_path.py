"""How far each parameter of ``Layersearch.search`` travels through the code, measured on
a running search of the mini fixture (issue #45: "the longest path of a search parameter").

A call *carries* a parameter when, at its entry, one of its arguments (its locals then:
arguments and a closure's free variables) reaches the parameter's value: the value
itself or a small container holding it; an object with a field of the parameter's name
holding it (a request); or, one step further, a layersearch object, a closure, a bound
method or a ``functools.partial`` one of whose fields, cells or arguments is the value
itself or such a request. Strings and lists are followed by identity (the very object
the request holds, not an equal one read from the catalog); numbers by value.

For each parameter the script reports:

- ``files_touched``: the modules a carrying call ran in (with a carrying caller);
- ``calls_back_up``: calls from one carrying function into another whose module imports
  the caller's, directly or through others (control going back up the imports);
- ``chain_calls``: the longest chain of carrying calls nested in one another, its
  ``chain_file_entries`` (module changes along it), ``chain_climbs`` (its calls back up)
  and the chain itself (``path``).

Only the calling thread is traced (full-text searches on worker threads are not). Run
with the repository's ``src`` or another checkout's on ``PYTHONPATH`` to measure that one:

    python scripts/parameter_path.py [--json OUT] [--fixture fixtures/mini]
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "fixtures" / "mini"

#: The parameters measured, with the value each search gives them: one search of the
#: semantic layer with every entity-search parameter, one scoped search. Numbers are
#: followed by value, so they are primes no list of the fixture is as long as.
SEMANTIC: dict[str, Any] = {
    "question": "monthly revenue by store",
    "datasource": "shop",
    "max_results": 37,
    "entities": ["orders"],
    "query": {"measures": ["shop.orders.total_revenue"]},
    "compact": False,
    "cypher_filter": "MATCH (n) WHERE n.id STARTS WITH 'shop' RETURN n.id AS id",
    "params": {"unused": "x"},
    "explain": True,
    "channels": ["bm25", "fulltext"],
    "max_entities": 43,
    "max_memories": 41,
    "max_example_queries": 47,
}
SCOPED: dict[str, Any] = {
    "question": "monthly revenue by store",
    "scope": ["semantic", "memory"],
    "max_per_source": 53,
}

_SMALL = 64


def _fresh(value: Any) -> Any:
    """A copy of ``value`` that no other object in the process is (for identity)."""
    if isinstance(value, str):
        return "".join(list(value))
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


@dataclass
class _Probe:
    """Whether a frame's locals reach one parameter's value."""

    name: str
    value: Any
    package: str

    def same(self, v: Any) -> bool:
        want = self.value
        if isinstance(want, bool) or want is None:
            return False  # a flag is followed only as a request's field
        if isinstance(want, int | float):
            return type(v) is type(want) and v == want
        return v is want

    def in_small(self, v: Any) -> bool:
        if self.same(v):
            return True
        if isinstance(v, list | tuple | set | frozenset) and len(v) <= _SMALL:
            return any(self.same(x) for x in v)
        if isinstance(v, dict) and len(v) <= _SMALL:
            return any(self.same(x) for x in v.values())
        return False

    def named(self, v: Any) -> bool:
        """An object with a field of the parameter's name holding the value (a request)."""
        if isinstance(v, str | int | float | bool | list | tuple | dict | set | type):
            return False
        try:
            got = getattr(v, self.name, _MISSING)
        except Exception:
            return False
        if got is _MISSING:
            return False
        want = self.value
        if isinstance(want, bool):
            return got is want
        return self.same(got) or (isinstance(want, int) and got == want)

    def ours(self, v: Any) -> bool:
        return type(v).__module__.startswith(self.package)

    def fields(self, v: Any) -> Iterator[Any]:
        """One step into an object: its fields, cells, bound self, partial arguments."""
        if isinstance(v, functools.partial):
            yield from v.args
            yield from v.keywords.values()
            yield v.func
        elif isinstance(v, types.MethodType):
            yield v.__self__
        elif isinstance(v, types.FunctionType):
            for cell in v.__closure__ or ():
                try:
                    yield cell.cell_contents
                except ValueError:
                    continue
        elif self.ours(v):
            yield from getattr(v, "__dict__", {}).values()
            for slot in getattr(type(v), "__slots__", ()):
                got = getattr(v, slot, _MISSING)
                if got is not _MISSING:
                    yield got

    def holds(self, v: Any) -> bool:
        if self.in_small(v) or self.named(v):
            return True
        return any(self.in_small(w) or self.named(w) for w in self.fields(v))


_MISSING = object()


def _module(path: str, src: Path) -> str:
    parts = list(Path(path).relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(src: Path) -> dict[str, set[str]]:
    """Module → the modules it imports (at any level of the file, relative ones resolved)."""
    out: dict[str, set[str]] = {}
    for p in src.rglob("*.py"):
        name = _module(str(p), src)
        pkg = name.split(".") if p.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg[: len(pkg) - (node.level - 1)] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                deps.add(mod)
                deps.update(f"{mod}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        out[name] = deps
    return out


@dataclass
class _Trace:
    src: Path
    probe: _Probe
    stack: list[tuple[str, str, bool]] = field(default_factory=list)
    best: list[tuple[str, str]] = field(default_factory=list)
    edges: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            path = frame.f_code.co_filename
            ours = path.startswith(str(self.src))
            carrying = ours and any(self.probe.holds(v) for v in frame.f_locals.values())
            mod = _module(path, self.src) if ours else ""
            name = frame.f_code.co_qualname if ours else ""
            chain = [s for s in self.stack if s[2]]
            if carrying and chain and chain[-1][0] != mod:
                self.edges.setdefault((chain[-1][0], mod), (chain[-1][1], name))
            self.stack.append((mod, name, carrying))
            if carrying and len(chain) + 1 > len(self.best):
                self.best = [(m, n) for m, n, _ in chain] + [(mod, name)]
        elif event == "return" and self.stack:
            self.stack.pop()


def _above(imports: dict[str, set[str]], callee: str, caller: str) -> bool:
    """Whether ``callee`` imports ``caller``, directly or through other modules."""
    seen: set[str] = set()
    todo = [callee]
    while todo:
        for dep in imports.get(todo.pop(), ()):
            if dep not in imports or dep in seen:
                continue
            if dep == caller:
                return True
            seen.add(dep)
            todo.append(dep)
    return False


def measure(name: str, kwargs: dict[str, Any], fixture: Path = MINI) -> dict[str, Any]:
    """One parameter's path through a search with ``kwargs`` (see the module's doc)."""
    import layersearch
    from layersearch import Layersearch
    from layersearch.types import SearchRequest

    src = Path(layersearch.__file__).resolve().parent
    request = SearchRequest(**{k: _fresh(v) for k, v in kwargs.items()})
    trace = _Trace(src, _Probe(name, getattr(request, name), "layersearch"))
    with (
        tempfile.TemporaryDirectory() as tmp,
        Layersearch(Path(tmp) / "s.duckdb", embedder="none") as ls,
    ):
        ls.load(fixture)
        ls.search(request.model_copy(deep=True))  # indexes built, caches warm
        sys.setprofile(trace)
        try:
            ls.search(request)
        finally:
            sys.setprofile(None)
    imports = _imports(src)
    short = functools.partial(_strip, "layersearch.")
    ups = sorted(
        f"{short(a)}.{trace.edges[(a, b)][0]} -> {short(b)}.{trace.edges[(a, b)][1]}"
        for a, b in trace.edges
        if _above(imports, b, a)
    )
    touched = sorted({short(m) for edge in trace.edges for m in edge})
    best = trace.best
    entries = [m for i, (m, _) in enumerate(best) if i == 0 or best[i - 1][0] != m]
    steps = zip(best, best[1:], strict=False)
    climbs = sum(1 for (m0, _), (m1, _) in steps if m0 != m1 and _above(imports, m1, m0))
    return {
        "parameter": name,
        "files_touched": len(touched),
        "calls_back_up": len(ups),
        "chain_calls": len(best),
        "chain_file_entries": len(entries),
        "chain_climbs": climbs,
        "path": " > ".join(f"{short(m)}.{n}" for m, n in best),
        "up": ups,
        "files": touched,
    }


def _strip(prefix: str, text: str) -> str:
    return text.removeprefix(prefix)


def measure_all(
    fixture: Path = MINI, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every parameter of :data:`SEMANTIC` and :data:`SCOPED` the installed
    ``SearchRequest`` has, each measured on its own search."""
    from layersearch.types import SearchRequest

    known = set(SearchRequest.model_fields)
    out = []
    for search in (SEMANTIC, SCOPED):
        kwargs = {k: v for k, v in search.items() if k in known}
        for name in kwargs:
            if search is SCOPED and name in SEMANTIC:
                continue
            if progress is not None:
                progress(name)
            out.append(measure(name, kwargs, fixture))
    return out


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'parameter':<20} {'files':>5} {'climbs':>6} {'chain':>5} {'entries':>7}"
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['parameter']:<20} {r['files_touched']:>5} {r['calls_back_up']:>6} "
            f"{r['chain_calls']:>5} {r['chain_file_entries']:>7}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="also write every parameter's measure here")
    ap.add_argument("--fixture", type=Path, default=MINI, help="catalog to load")
    args = ap.parse_args(argv)
    rows = measure_all(args.fixture, lambda n: print(f"measuring {n}", file=sys.stderr))
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
