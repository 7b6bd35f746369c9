"""Docs that run: every ```python block of README.md and docs/*.md executes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support import ROOT

BLOCK = re.compile(r"```python\n(.*?)```", re.S)
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CASES = [
    pytest.param(path, i, code, id=f"{path.name}#{i}")
    for path in FILES
    for i, code in enumerate(BLOCK.findall(path.read_text()))
]


@pytest.mark.parametrize("path, index, code", CASES)
def test_python_blocks_run(
    path: Path, index: int, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"{path.name}#{index}", "exec"), {"__name__": "__docs__"})
    _ = os
