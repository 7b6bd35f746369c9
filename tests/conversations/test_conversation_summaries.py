from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations import import_conversations
from layersearch.corpora.conversations.summaries import (
    IMPORTANCE,
    THINKING_STAGES,
    import_summaries,
    summary_id,
)
from layersearch.errors import NotFound


def test_fixture_summaries(fixtures: Path) -> None:
    summaries, problems = import_summaries(fixtures / "summaries.jsonl")
    assert problems == []
    assert len(summaries) == 12
    conversations = {c.id for c in import_conversations(fixtures).conversations}
    assert {s.conversation_id for s in summaries} <= conversations
    assert {s.importance for s in summaries} == set(IMPORTANCE)
    assert {s.thinking_stage for s in summaries} == set(THINKING_STAGES)
    first = summaries[0]
    assert first.concepts == ("MRR", "finance.subscriptions", "gross_mrr", "net_mrr")
    assert first.id == summary_id(first.conversation_id, first.summary)
    assert first.created == datetime(2024, 3, 14, 10, tzinfo=UTC)
    assert summaries[1].id == "mrr-churn-timing"
    assert len({s.id for s in summaries}) == 12
    assert import_summaries(fixtures / "summaries.jsonl") == (summaries, problems)


def test_invalid_summaries_are_reported_by_line(fixtures: Path) -> None:
    path = fixtures / "malformed" / "summaries_invalid.jsonl"
    summaries, problems = import_summaries(path)
    assert [s.summary for s in summaries] == ["Valid line.", "Last valid line."]
    assert summaries[0].importance == "significant"  # case-insensitive
    assert summaries[0].concepts == ("MRR",)  # unnamed dropped, repeat removed
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:{n}" for n in (1, 2, 3, 4, 5, 6)]
    assert "breakthrough, significant, routine" in problems[1]
    assert "exploring, crystallizing, refining, executing" in problems[2]
    assert "invalid JSON" in problems[3]


def test_missing_summaries_file(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        import_summaries(tmp_path / "nope.jsonl")
