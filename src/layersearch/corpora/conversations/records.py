"""Conversation records: what every importer produces, whatever the export format.

Ids are content-derived and stable across runs, processes and machines (sha256,
never Python's ``hash()``), so that the store can deduplicate on them and a
newer export of the same conversation keeps the ids of its older messages.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from layersearch.errors import ConfigError
from layersearch.ranking.wordlists import word_set

__all__ = [
    "ROLES",
    "Conversation",
    "Message",
    "ImportResult",
    "conversation_id",
    "hashed_conversation_id",
    "message_id",
    "stable_digest",
    "has_question",
    "utc",
    "MessageDraft",
    "assemble_conversation",
]

ROLES = frozenset({"user", "assistant", "system", "tool"})

# Hex characters kept from sha256; 12 (48 bits) is plenty inside one conversation,
# 16 keeps whole-corpus conversation ids collision-free in practice.
_MESSAGE_DIGEST_CHARS = 12
_CONVERSATION_DIGEST_CHARS = 16


def _check_aware(name: str, value: datetime | None) -> None:
    if value is not None and value.utcoffset() is None:
        raise ConfigError(f"{name} must be a timezone-aware datetime, got naive {value!r}")


@dataclass(frozen=True, slots=True)
class Message:
    """One turn. ``injected`` marks text a tool harness put there, not a person."""

    id: str
    conversation_id: str
    role: str
    content: str
    created: datetime | None
    position: int
    has_question: bool
    injected: bool
    speaker: str | None = None
    turn_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"message role must be one of {sorted(ROLES)}, got {self.role!r}")
        if self.position < 0:
            raise ConfigError(f"message position must be >= 0, got {self.position}")
        _check_aware("Message.created", self.created)


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation with its messages in order (``position`` 0, 1, 2, …)."""

    id: str
    title: str | None
    source: str
    created: datetime | None
    updated: datetime | None
    messages: tuple[Message, ...]

    def __post_init__(self) -> None:
        _check_aware("Conversation.created", self.created)
        _check_aware("Conversation.updated", self.updated)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import produced, plus one line per record that was skipped or repaired."""

    conversations: list[Conversation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def stable_digest(*parts: str, chars: int = _CONVERSATION_DIGEST_CHARS) -> str:
    """Hex sha256 of the parts joined by a unit separator, truncated to ``chars``."""
    joined = "\x1f".join(parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:chars]


def conversation_id(source: str, native_id: str) -> str:
    """``<source>:<native id>``; the prefix keeps ids from different exports apart."""
    return f"{source}:{native_id}"


def hashed_conversation_id(source: str, title: str | None, first_content: str) -> str:
    """For exports without ids: ``<source>:h<16 hex>`` over source, title and first message."""
    return f"{source}:h{stable_digest(source, title or '', first_content)}"


def message_id(conv_id: str, position: int, content: str) -> str:
    """``<conversation id>#<position>-<12 hex of sha256(content)>``."""
    return f"{conv_id}#{position}-{stable_digest(content, chars=_MESSAGE_DIGEST_CHARS)}"


# --- question detection ------------------------------------------------------------------

_WH_WORDS = word_set("question_wh_words")
# Auxiliaries start a question only when a pronoun subject follows ("can you …"),
# so that imperatives such as "do the migration" are not taken for questions.
_AUXILIARIES = word_set("question_auxiliaries")
_SUBJECTS = word_set("question_subjects")
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\bhttps?://\S+")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:\n]\s*)([A-Za-z']+)(?:\s+([A-Za-z']+))?")


def has_question(text: str) -> bool:
    """True when ``text`` asks something.

    The rule: after removing fenced code, inline code and URLs (whose ``?`` is
    not a question), the text contains ``?`` (or the full-width ``？``), or a
    sentence starts with a wh-word (what, why, how, when, where, who, whom,
    whose, which), or with an auxiliary (is, can, do, should, …) followed by a
    pronoun subject (I, you, we, it, this, there, …).
    """
    prose = _URL.sub(" ", _INLINE_CODE.sub(" ", _CODE_FENCE.sub(" ", text)))
    if "?" in prose or "？" in prose:
        return True
    for match in _SENTENCE_START.finditer(prose):
        first = match.group(1).lower().replace("\u2019", "'")
        if first in _WH_WORDS:
            return True
        second = (match.group(2) or "").lower()
        if first in _AUXILIARIES and second in _SUBJECTS:
            return True
    return False


def utc(value: datetime) -> datetime:
    """A naive datetime is read as UTC; an aware one is converted to UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@dataclass(slots=True)
class MessageDraft:
    """A message before it has a position and an id; importers fill these in order."""

    role: str
    content: str
    created: datetime | None = None
    injected: bool = False
    speaker: str | None = None
    turn_id: str | None = None
    # Records of one API message split across several export lines share this key.
    merge_key: str | None = None


def assemble_conversation(
    *,
    source: str,
    native_id: str | None,
    title: str | None,
    created: datetime | None,
    updated: datetime | None,
    drafts: list[MessageDraft],
) -> Conversation | None:
    """Number the drafts, derive ids and flags; ``None`` when no message has text.

    ``created``/``updated`` fall back to the earliest/latest message time, and stay
    ``None`` when nothing is dated.
    """
    kept = [d for d in drafts if d.content.strip()]
    if not kept:
        return None
    title = title.strip() if title and title.strip() else None
    if native_id:
        conv_id = conversation_id(source, native_id)
    else:
        conv_id = hashed_conversation_id(source, title, kept[0].content)
    messages = tuple(
        Message(
            id=message_id(conv_id, position, draft.content),
            conversation_id=conv_id,
            role=draft.role,
            content=draft.content,
            created=draft.created,
            position=position,
            has_question=draft.role == "user"
            and not draft.injected
            and has_question(draft.content),
            injected=draft.injected,
            speaker=draft.speaker,
            turn_id=draft.turn_id,
        )
        for position, draft in enumerate(kept)
    )
    times = [m.created for m in messages if m.created is not None]
    return Conversation(
        id=conv_id,
        title=title,
        source=source,
        created=created if created is not None else (min(times) if times else None),
        updated=updated if updated is not None else (max(times) if times else None),
        messages=messages,
    )
