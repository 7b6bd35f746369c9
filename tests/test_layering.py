"""The package layering of docs/architecture.md, checked against every import of every
module under src/ (lazy and TYPE_CHECKING imports included): a package imports only
packages on its own layer or below, and only the server modules (server.py and its
server_*.py tool modules) import mcp."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

SRC = ROOT / "src" / "layersearch"

#: top to bottom, as docs/architecture.md draws it; "__init__" is the public API module
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli", "server", "server_browse", "server_args"},
    {"eval"},
    {"__init__", "api"},
    {"plan"},
    {"corpora"},
    {"store", "embed"},
    {"semantic"},
    {"graph", "ranking"},
    {"calls", "config", "httpauth", "jsonlimits", "logfilter", "recent", "textcheck", "types"},
    {"errors"},
]
#: imports that go up a layer, each with the reason it is safe (docs/architecture.md)
UPWARD = {
    ("cli", "__init__"): "the CLI opens the public API like a user",
    ("server", "__init__"): "the server opens the public API like a user",
}
#: the only packages one of the lowest layers may use beside errors
LIGHT = {"ranking": {"errors", "types"}, "graph": {"errors", "jsonlimits"}, "embed": {"errors"}}


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, src: Path) -> list[str]:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    package = parts[:-1]  # the package a relative import starts from (also for __init__)
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                out.append(".".join(base + ([node.module] if node.module else [])))
            else:
                out.append(node.module or "")
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def _level(group: str) -> int:
    for i, layer in enumerate(LAYERS):
        if group in layer:
            return i
    raise AssertionError(f"package {group!r} is on no layer of LAYERS: add it (and to the docs)")


def _violations(src: Path) -> list[str]:
    bad = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src.parent).with_suffix("")
        source = _group(".".join(rel.parts))
        for target in _imports(path, src):
            if target.split(".")[0] == "mcp" and source not in ("server", "server_browse"):
                bad.append(f"{rel}: imports {target} (only the server modules may import mcp)")
            if not target.startswith("layersearch"):
                continue
            dest = _group(target)
            if dest == source:
                continue
            if source in LIGHT and dest not in LIGHT[source]:
                bad.append(f"{rel}: {source} imports {target}")
            elif _level(dest) < _level(source) and (source, dest) not in UPWARD:
                bad.append(f"{rel}: imports {target}, a layer above {source}")
    return bad


def test_no_package_imports_upward() -> None:
    assert _violations(SRC) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "layersearch"
    (pkg / "ranking").mkdir(parents=True)
    (pkg / "store").mkdir()
    (pkg / "store" / "x.py").write_text("from layersearch.corpora import dense\n")
    (pkg / "ranking" / "y.py").write_text("def f():\n    from layersearch.semantic import m\n")
    (pkg / "ranking" / "z.py").write_text("import mcp\n")
    found = _violations(pkg)
    assert any("store/x" in v and "a layer above" in v for v in found), found
    assert any("ranking/y" in v and "ranking imports" in v for v in found), found
    assert any("ranking/z" in v and "only the server modules" in v for v in found), found
