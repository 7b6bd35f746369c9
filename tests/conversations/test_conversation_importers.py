from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations import (
    Conversation,
    clean_user_text,
    detect_format,
    import_conversations,
)
from layersearch.errors import ImportFailed, NotFound

REPO = Path(__file__).resolve().parents[2]

MRR = "claude:3f1c9a52-7d4e-4b1a-9c0e-5a2f7b8d1e01"
SESSION = "claude_code:7e3f0c1a-5b2d-4c6e-8f9a-0b1c2d3e4f50"


def by_id(convs: list[Conversation]) -> dict[str, Conversation]:
    return {c.id: c for c in convs}


def contents(conv: Conversation) -> list[str]:
    return [m.content for m in conv.messages]


@pytest.mark.parametrize(
    ("relative", "fmt"),
    [
        ("claude/conversations.json", "claude"),
        ("chatgpt/conversations.json", "chatgpt"),
        ("claude_code/session.jsonl", "claude_code"),
        ("cursor/agent-transcripts/4c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c.jsonl", "cursor"),
        ("gemini/session.json", "gemini"),
        ("generic/messages.jsonl", "generic"),
        ("locomo/mini.json", "locomo"),
    ],
)
def test_formats_are_detected(fixtures: Path, relative: str, fmt: str) -> None:
    assert detect_format(fixtures / relative) == fmt


def test_claude_export(fixtures: Path) -> None:
    result = import_conversations(fixtures / "claude" / "conversations.json")
    convs = by_id(result.conversations)
    assert list(convs) == [
        MRR,
        "claude:8b6e2f10-1c3d-4e5f-8a9b-0c1d2e3f4a02",
        "claude:d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f03",
    ]
    mrr = convs[MRR]
    assert mrr.title == "Monthly recurring revenue definition"
    assert mrr.source == "claude"
    assert mrr.created == datetime(2024, 3, 14, 9, 12, 3, 418200, tzinfo=UTC)
    assert [m.role for m in mrr.messages] == ["user", "assistant", "user", "assistant"]
    # Text blocks win over the flat text field, and are joined in order.
    assert mrr.messages[1].content.startswith("Normalise every plan")
    assert mrr.messages[1].content.endswith("count discounts at their net value.")
    assert "📈" in mrr.messages[2].content
    assert [m.has_question for m in mrr.messages] == [True, False, False, False]
    # Missing timestamps stay missing, at message and conversation level.
    untitled = convs["claude:8b6e2f10-1c3d-4e5f-8a9b-0c1d2e3f4a02"]
    assert untitled.title is None and untitled.created is None and untitled.updated is None
    assert all(m.created is None for m in untitled.messages)
    # The regenerated reply is replaced by the newest attempt; offsets become UTC.
    branch = convs["claude:d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f03"]
    assert len(branch.messages) == 3
    assert "TRANSFORM_XL" in branch.messages[1].content
    assert not any("left running" in m.content for m in branch.messages)
    assert branch.created == datetime(2024, 4, 2, 14, 0, tzinfo=UTC)
    path = fixtures / "claude" / "conversations.json"
    assert result.problems == [
        f"{path}: record 1 message 2: unknown sender 'system_notice'; message skipped",
        f"{path}: record 1 message 3: not an object; message skipped",
        f"{path}: record 2: chat_messages is missing or not a list; conversation skipped",
    ]


def test_chatgpt_follows_the_current_branch_only(fixtures: Path) -> None:
    result = import_conversations(fixtures / "chatgpt" / "conversations.json")
    convs = by_id(result.conversations)
    funnel = convs["chatgpt:6660a1b2-c3d4-8000-9000-abcdefabcd01"]
    text = contents(funnel)
    assert not any("first attempt, regenerated" in t for t in text)
    assert [m.role for m in funnel.messages] == ["user", "assistant", "user", "tool", "assistant"]
    # The hidden, empty system message is gone; the image pointer part is skipped.
    assert text[2] == "Plot it please"
    assert funnel.messages[2].created is None
    assert funnel.messages[3].injected and funnel.messages[3].role == "tool"
    assert funnel.created == datetime.fromtimestamp(1717490000.123, tz=UTC)
    # Without current_node the newest branch (last child) is followed.
    aov = convs["chatgpt:6660a1b2-c3d4-8000-9000-abcdefabcd02"]
    assert contents(aov)[1].endswith("nombre de commandes (AOV).")
    assert aov.title == "Définition du panier moyen"
    assert aov.messages[0].has_question
    path = fixtures / "chatgpt" / "conversations.json"
    assert result.problems == [
        f"{path}: record 1: mapping is missing or not an object; conversation skipped"
    ]


def test_claude_code_session(fixtures: Path) -> None:
    path = fixtures / "claude_code" / "session.jsonl"
    result = import_conversations(path)
    assert [c.id for c in result.conversations] == [SESSION]
    conv = result.conversations[0]
    assert conv.title == "Fix dbt incremental model for orders"
    roles = [(m.role, m.injected) for m in conv.messages]
    assert roles == [
        ("user", True),  # caveat (isMeta)
        ("user", True),  # /clear command wrapper
        ("user", True),  # empty local-command-stdout
        ("user", False),  # real question, system-reminder stripped
        ("assistant", False),  # thinking skipped, text kept; tool_use dropped
        ("tool", True),  # tool_result carried as a user record
        ("assistant", False),
        ("user", False),  # no timestamp
        ("assistant", False),
        ("user", True),  # interrupt marker
    ]
    question = conv.messages[3]
    assert question.content == (
        "Why does the orders incremental model duplicate rows on late-arriving updates?"
    )
    assert question.has_question
    assert conv.messages[1].content.startswith("<command-name>/clear</command-name>")
    assert not any(m.has_question for m in conv.messages if m.injected)
    assert conv.messages[7].created is None
    assert conv.messages[7].content.endswith("✅")
    assert not any("Sub-agent prompt" in c for c in contents(conv))
    assert len(result.problems) == 1
    assert result.problems[0].startswith(f"{path}:11: invalid JSON at column 57")


def test_claude_code_merges_records_of_one_api_message(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "sessionId": "s", "uuid": "1", "message": {"content": "hi"}},
        {
            "type": "assistant",
            "sessionId": "s",
            "uuid": "2",
            "message": {"id": "m1", "content": [{"type": "text", "text": "part one"}]},
        },
        {
            "type": "assistant",
            "sessionId": "s",
            "uuid": "3",
            "message": {"id": "m1", "content": [{"type": "text", "text": "part two"}]},
        },
        {"type": "user", "sessionId": "s", "uuid": "3", "message": {"content": "dup uuid"}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    conv = import_conversations(path, "claude_code").conversations[0]
    assert contents(conv) == ["hi", "part one\n\npart two"]


def test_cursor_transcript_without_type_or_times(fixtures: Path) -> None:
    folder = fixtures / "cursor" / "agent-transcripts"
    result = import_conversations(folder)
    assert result.problems == []
    (conv,) = result.conversations
    assert conv.id == "cursor:4c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c"  # from the file name
    assert contents(conv)[0] == "Which dashboards read from the legacy revenue_daily table?"
    assert conv.created is None and conv.updated is None
    assert [m.has_question for m in conv.messages] == [True, False, False]


def test_gemini_session(fixtures: Path) -> None:
    result = import_conversations(fixtures / "gemini" / "session.json")
    assert result.problems == []
    (conv,) = result.conversations
    assert conv.id == "gemini:0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert "Request cancelled." not in contents(conv)
    assert contents(conv)[2] == "Switch it to the user's local date."
    assert conv.messages[3].created is None
    assert conv.updated == datetime(2025, 9, 10, 12, 4, tzinfo=UTC)


def test_generic_jsonl(fixtures: Path) -> None:
    path = fixtures / "generic" / "messages.jsonl"
    result = import_conversations(path)
    convs = by_id(result.conversations)
    assert list(convs) == ["slack:slack-T01-C42-1718000000", "generic:notes-2024-06-11"]
    slack = convs["slack:slack-T01-C42-1718000000"]
    assert slack.title == "#data-help: active customers"
    assert slack.source == "slack"
    assert slack.created == datetime(2024, 6, 10, 6, 13, 20, tzinfo=UTC)
    notes = convs["generic:notes-2024-06-11"]
    assert [m.role for m in notes.messages] == ["user", "assistant", "user"]
    assert notes.messages[0].created == datetime.fromtimestamp(1718089200, tz=UTC)
    assert notes.messages[2].created is None
    assert [p.split(": ", 1)[0] for p in result.problems] == [
        f"{path}:5",
        f"{path}:6",
        f"{path}:7",
        f"{path}:8",
    ]
    assert "invalid JSON" in result.problems[0]
    assert "role 'narrator'" in result.problems[1]
    assert "content is missing" in result.problems[2]
    assert "kept without a time" in result.problems[3]


def test_reimport_gives_identical_records(fixtures: Path) -> None:
    for relative in ["claude/conversations.json", "claude_code/session.jsonl", "chatgpt"]:
        first = import_conversations(fixtures / relative)
        second = import_conversations(fixtures / relative)
        assert first == second


def test_ids_are_stable_across_processes(fixtures: Path) -> None:
    script = (
        "import sys; from layersearch.corpora.conversations import import_conversations as i\n"
        "r = i(sys.argv[1])\n"
        "print('\\n'.join(m.id for c in r.conversations for m in c.messages))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", script, str(fixtures)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO / "src")},
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    here = import_conversations(fixtures)
    assert outputs.pop().split() == [m.id for c in here.conversations for m in c.messages]


def test_newer_export_keeps_the_ids_of_older_messages(fixtures: Path, tmp_path: Path) -> None:
    old = by_id(import_conversations(fixtures / "claude" / "conversations.json").conversations)
    new = by_id(
        import_conversations(fixtures / "claude" / "conversations_newer.json").conversations
    )
    old_ids = [m.id for m in old[MRR].messages]
    new_ids = [m.id for m in new[MRR].messages]
    assert len(new_ids) == len(old_ids) + 2
    assert new_ids[: len(old_ids)] == old_ids
    # The same holds for an appended Claude Code session file.
    session = tmp_path / "session.jsonl"
    shutil.copy(fixtures / "claude_code" / "session.jsonl", session)
    before = [m.id for m in import_conversations(session).conversations[0].messages]
    extra = {
        "type": "user",
        "sessionId": SESSION.split(":", 1)[1],
        "uuid": "cc-13",
        "timestamp": "2025-07-02T09:00:00Z",
        "message": {"role": "user", "content": "Now what about the payments model?"},
    }
    with session.open("a") as handle:
        handle.write(json.dumps(extra) + "\n")
    after = [m.id for m in import_conversations(session).conversations[0].messages]
    assert after[:-1] == before and len(after) == len(before) + 1


def test_folder_import_detects_per_file_and_keeps_the_longest_copy(
    fixtures: Path,
) -> None:
    result = import_conversations(fixtures)
    convs = by_id(result.conversations)
    assert len(convs[MRR].messages) == 6  # from conversations_newer.json
    assert {c.source for c in result.conversations} == {
        "claude",
        "chatgpt",
        "claude_code",
        "cursor",
        "gemini",
        "slack",
        "generic",
        "locomo",
    }
    assert len(result.conversations) == 11
    skipped = [p for p in result.problems if "not a known chat export format" in p]
    # summaries.jsonl and malformed/{notes.json, truncated.json, summaries_invalid.jsonl}
    assert len(skipped) == 4
    assert any("truncated.json:3: invalid JSON" in p for p in skipped)


def test_bad_input_raises_our_errors(fixtures: Path, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        import_conversations(tmp_path / "missing.json")
    with pytest.raises(ImportFailed, match="unknown conversation format"):
        import_conversations(fixtures / "gemini" / "session.json", "bard")
    with pytest.raises(ImportFailed, match="matches no known export"):
        import_conversations(fixtures / "malformed" / "notes.json")
    with pytest.raises(ImportFailed, match="truncated.json:3: invalid JSON"):
        detect_format(fixtures / "malformed" / "truncated.json")
    # Forcing a format on broken JSON reports it instead of raising.
    result = import_conversations(fixtures / "malformed" / "truncated.json", "claude")
    assert result.conversations == [] and "truncated.json:3: invalid JSON" in result.problems[0]


def test_not_utf8_line_is_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    good = json.dumps({"conversation_id": "c", "role": "user", "content": "ok"}).encode()
    path.write_bytes(good + b"\n\xff\xfe broken\n" + good + b"\n")
    result = import_conversations(path)
    assert len(result.conversations[0].messages) == 2
    assert result.problems[0].startswith(f"{path}:2: not UTF-8")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain words", ("plain words", False)),
        ("<system-reminder>ctx</system-reminder>\nFix the join", ("Fix the join", False)),
        ("<command-name>/cost</command-name>", ("<command-name>/cost</command-name>", True)),
        (
            "<local-command-stdout>Total cost: $0.12</local-command-stdout>",
            ("<local-command-stdout>Total cost: $0.12</local-command-stdout>", True),
        ),
        ("[Request interrupted by user for tool use]", None),
        ("This session is being continued from a previous conversation. Summary: …", None),
        ("<user_query>\nreal words\n</user_query>", ("real words", False)),
    ],
)
def test_clean_user_text(text: str, expected: tuple[str, bool] | None) -> None:
    assert clean_user_text(text) == (expected or (text, True))
