"""The shared, externally written samples and LoCoMo files parse as documented."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations import (
    detect_format,
    import_conversations,
    import_locomo,
    read_locomo_questions,
)
from layersearch.corpora.conversations.locomo import parse_session_time

SAMPLES = {
    "sample_chatgpt_export.json": ("chatgpt", "chatgpt:conv-export-001", 4),
    "sample_claude_code.jsonl": ("claude_code", "claude_code:cc-test-001", 3),
    "sample_cursor_transcript.jsonl": ("cursor", "cursor:cursor-session-abc", 4),
    "sample_gemini_cli.json": ("gemini", "gemini:test-session-gemini-001", 4),
    "sample_generic.jsonl": ("generic", "generic:generic-test-001", 3),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_real_export_samples_parse_without_problems(chat_exports: Path, name: str) -> None:
    fmt, conv_id, count = SAMPLES[name]
    path = chat_exports / name
    assert detect_format(path) == fmt
    result = import_conversations(path)
    assert result.problems == []
    (conv,) = result.conversations
    assert conv.id == conv_id
    assert len(conv.messages) == count
    assert conv.messages[0].role == "user" and conv.messages[0].has_question
    assert not any(m.injected for m in conv.messages)
    assert all(m.created is not None and m.created.tzinfo is not None for m in conv.messages)


def test_real_samples_as_a_folder(chat_exports: Path) -> None:
    result = import_conversations(chat_exports)
    assert result.problems == []
    assert sorted(c.id for c in result.conversations) == sorted(v[1] for v in SAMPLES.values())


def test_chatgpt_sample_without_current_node_keeps_every_turn(chat_exports: Path) -> None:
    conv = import_conversations(chat_exports / "sample_chatgpt_export.json").conversations[0]
    assert conv.title == "Python Virtual Environments"
    assert [m.role for m in conv.messages] == ["user", "assistant"] * 2
    assert conv.created == datetime.fromtimestamp(1700000000, tz=UTC)


# Turns and answerable questions per LoCoMo file: questions whose evidence list is
# empty (two in 26.json) or names no turn at all are not answerable by retrieval.
LOCOMO = {
    "locomo:26": (419, 197),
    "locomo:30": (369, 105),
    "locomo:41": (663, 193),
    "locomo:42": (629, 260),
    "locomo:43": (680, 242),
}


def test_locomo_conversations(locomo_dir: Path) -> None:
    result = import_locomo(locomo_dir)
    assert result.problems == []
    assert {c.id: len(c.messages) for c in result.conversations} == {
        k: v[0] for k, v in LOCOMO.items()
    }
    assert import_conversations(locomo_dir) == result
    first = result.conversations[0]
    assert first.title == "Caroline and Melanie"
    m0 = first.messages[0]
    assert (m0.speaker, m0.role, m0.turn_id) == ("Caroline", "user", "D1:1")
    assert m0.created == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert {m.role for m in first.messages if m.speaker == "Melanie"} == {"assistant"}
    for conv in result.conversations:
        turn_ids = [m.turn_id for m in conv.messages]
        assert len(set(turn_ids)) == len(turn_ids)


def test_locomo_questions(locomo_dir: Path) -> None:
    found = read_locomo_questions(locomo_dir)
    counts = Counter(q.conversation_id for q in found.questions)
    assert dict(counts) == {k: v[1] for k, v in LOCOMO.items()}
    assert found.skipped_without_evidence == 2
    # 42.json cites a turn that does not exist ("D10:19") and a bare "D".
    assert len(found.problems) == 2 and all("42.json" in p for p in found.problems)
    turns = {c.id: {m.turn_id for m in c.messages} for c in import_locomo(locomo_dir).conversations}
    for question in found.questions:
        assert question.evidence
        assert set(question.evidence) <= turns[question.conversation_id]
    adversarial = [q for q in found.questions if q.category == 5]
    assert adversarial and all(q.adversarial_answer for q in adversarial)


def test_locomo_fixture_evidence_normalisation(fixtures: Path) -> None:
    found = read_locomo_questions(fixtures / "locomo" / "mini.json")
    assert [q.evidence for q in found.questions] == [("D1:3",), ("D2:1", "D2:2"), ("D1:2",)]
    assert [q.answer for q in found.questions] == ["Metabase", "2024", None]
    assert found.skipped_without_evidence == 2
    conv = import_locomo(fixtures / "locomo" / "mini.json").conversations[0]
    assert conv.id == "locomo:conv-mini"
    assert conv.messages[2].content.endswith("[image: a photo of a dashboard with a line chart]")
    assert conv.updated == datetime(2024, 3, 12, 16, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 Jan 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
    ],
)
def test_session_times(text: str, expected: datetime) -> None:
    assert parse_session_time(text) == expected


def test_bad_session_time_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "7.json"
    path.write_text(
        '{"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "sometime",'
        ' "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},'
        ' {"speaker": "C", "dia_id": "D1:2", "text": "who?"}], "qa": []}'
    )
    result = import_locomo(path)
    (conv,) = result.conversations
    assert conv.id == "locomo:7" and conv.messages[0].created is None
    assert len(result.problems) == 2
    assert "sometime" in result.problems[0] and "'C' is neither speaker" in result.problems[1]
