"""The test suite's own layout: plain ``pytest`` and ``python -m pytest`` load every
file under one name.

Every test folder is a package (``tests/__init__.py`` and one in each subfolder), so
pytest imports ``tests/mcp/test_x.py`` as ``tests.mcp.test_x`` whichever way it is
started, and a test file that imports a helper gets the module pytest loaded. Shared
helpers live in ``tests/support.py``; a ``conftest.py`` holds fixtures only, because
importing one from a test file loads it twice (once by pytest, once by the import), with
two copies of its globals.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

from tests.support import ROOT

TESTS = ROOT / "tests"


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_test_folder_is_a_package() -> None:
    folders = {p.parent for p in _python_files()}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"test folders without an __init__.py: {missing}"


def test_no_test_file_imports_a_conftest() -> None:
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[-1] == "conftest"
            ]
    assert not offenders, "import helpers from tests.support instead:\n" + "\n".join(offenders)


def test_no_module_is_loaded_under_two_names() -> None:
    # Import every file of the suite by its package name (a no-op for what pytest has
    # already collected), then look for one file behind two entries of sys.modules.
    for path in _python_files():
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        importlib.import_module(".".join(parts))
    by_file: dict[Path, list[str]] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is None:
            continue
        resolved = Path(file).resolve()
        if resolved.is_relative_to(ROOT):
            by_file.setdefault(resolved, []).append(name)
    twice = {str(f.relative_to(ROOT)): sorted(n) for f, n in by_file.items() if len(n) > 1}
    assert not twice, f"files loaded as more than one module: {twice}"
