"""The code in docs/conversations.md runs and prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "conversations.md"


def test_doc_code_blocks_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 3
    monkeypatch.chdir(REPO)
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})  # noqa: S102
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "chatgpt"
    assert out[1] == "claude_code:7e3f0c1a-5b2d-4c6e-8f9a-0b1c2d3e4f50 10"
    assert re.fullmatch(r".*session\.jsonl:11: invalid JSON at column 57 .*line skipped", out[2])
    assert out[3:] == ["3 2", "('D2:1', 'D2:2')", "12 []"]


def test_generic_example_in_the_doc(tmp_path: Path) -> None:
    from layersearch.corpora.conversations import import_conversations

    lines = re.search(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert lines is not None
    path = tmp_path / "example.jsonl"
    path.write_text(lines.group(1), encoding="utf-8")
    result = import_conversations(path)
    assert result.problems == []
    assert [c.id for c in result.conversations] == ["slack:slack-C42-1718000000"]
