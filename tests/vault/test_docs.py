"""docs/vault.md's Python example runs and says what it claims."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "vault.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            exec(compile(block, "docs/vault.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "Incidents/2024/2024-03-12 Timezone shift in daily revenue" in out
