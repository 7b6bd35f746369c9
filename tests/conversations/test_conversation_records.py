from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layersearch.corpora.conversations.records import (
    Conversation,
    Message,
    MessageDraft,
    assemble_conversation,
    has_question,
    hashed_conversation_id,
    message_id,
)
from layersearch.errors import ConfigError, LayersearchError


@pytest.mark.parametrize(
    "text",
    [
        "What is MRR?",
        "how do I join orders to customers",
        "Thanks. Why is the total off by one",
        "Can you list the owners",
        "is it partitioned by day",
        "Comment calcule-t-on le panier moyen ?",
        "全角の疑問符？",
    ],
)
def test_questions_are_detected(text: str) -> None:
    assert has_question(text)


@pytest.mark.parametrize(
    "text",
    [
        "Do the migration tonight.",
        "Draft a churn cohort query per signup month",
        "Use `x ? y : z` in the expression",
        "See https://example.org/report?id=3 for details",
        "```sql\nselect case when a then '?' end\n```\nShip it.",
        "I know how it works",
    ],
)
def test_statements_are_not_questions(text: str) -> None:
    assert not has_question(text)


def test_message_id_is_sha256_of_content_not_python_hash() -> None:
    digest = hashlib.sha256(b"hello").hexdigest()[:12]
    assert message_id("claude:abc", 3, "hello") == f"claude:abc#3-{digest}"


def test_hashed_conversation_id_depends_on_source_title_and_first_message() -> None:
    base = hashed_conversation_id("generic", "t", "first")
    assert base.startswith("generic:h") and len(base) == len("generic:h") + 16
    assert base == hashed_conversation_id("generic", "t", "first")
    assert base != hashed_conversation_id("slack", "t", "first")
    assert base != hashed_conversation_id("generic", "u", "first")
    assert base != hashed_conversation_id("generic", "t", "second")


def test_records_reject_bad_values_with_our_errors() -> None:
    with pytest.raises(ConfigError, match="role"):
        Message("m", "c", "human", "x", None, 0, False, False)
    with pytest.raises(ConfigError, match="timezone-aware"):
        Message("m", "c", "user", "x", datetime(2024, 1, 1), 0, False, False)  # noqa: DTZ001
    with pytest.raises(LayersearchError):
        Conversation("c", None, "s", datetime(2024, 1, 1), None, ())  # noqa: DTZ001


def test_records_are_frozen() -> None:
    msg = Message("m", "c", "user", "x", None, 0, False, False)
    with pytest.raises(AttributeError):
        msg.content = "y"  # type: ignore[misc]


def test_assemble_drops_empty_messages_and_numbers_the_rest() -> None:
    t = datetime(2024, 1, 1, tzinfo=UTC)
    conv = assemble_conversation(
        source="generic",
        native_id=None,
        title="  ",
        created=None,
        updated=None,
        drafts=[
            MessageDraft("user", "  "),
            MessageDraft("user", "Where is it?", t),
            MessageDraft("assistant", "Here.", None),
        ],
    )
    assert conv is not None
    assert conv.title is None
    assert [m.position for m in conv.messages] == [0, 1]
    assert conv.id == hashed_conversation_id("generic", None, "Where is it?")
    assert conv.created == conv.updated == t
    assert conv.messages[0].has_question and not conv.messages[1].has_question
    assert (
        assemble_conversation(
            source="x", native_id="y", title=None, created=None, updated=None, drafts=[]
        )
        is None
    )


@given(st.lists(st.text(min_size=1), min_size=1, max_size=20))
def test_message_ids_are_unique_within_a_conversation(contents: list[str]) -> None:
    ids = [message_id("c", i, text) for i, text in enumerate(contents)]
    assert len(set(ids)) == len(ids)


def test_public_names_and_light_imports() -> None:
    import subprocess
    import sys
    from pathlib import Path

    import layersearch.corpora.conversations as pkg

    assert sorted(pkg.__all__) == sorted(
        [
            "FORMATS", "Conversation", "ImportResult", "LocomoQuestion", "LocomoQuestions",
            "Message", "Summary", "clean_user_text", "detect_format", "has_question",
            "import_conversations", "import_locomo", "import_summaries", "locomo_questions",
            "read_locomo_questions",
        ]
    )  # fmt: skip
    src = Path(__file__).resolve().parents[2] / "src"
    code = (
        "import sys; import layersearch.corpora.conversations\n"
        "heavy = [m for m in ('duckdb', 'torch', 'mcp', 'litellm', 'tantivy') if m in sys.modules]\n"
        "print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(src)},
    )  # fmt: skip
    assert done.stdout.strip() == "[]"
