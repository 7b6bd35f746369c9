"""LoCoMo long conversations and their QA annotations.

Each sample becomes one :class:`Conversation` with id ``locomo:<sample_id>``.
The sample id is the file's ``sample_id`` field, or, for files that hold one
sample without that field, the file name without suffix (``26.json`` →
``locomo:26``). ``speaker_a`` turns become role ``user`` and ``speaker_b`` turns
role ``assistant``, so that question flags and role filters work as for chat
exports; ``Message.speaker`` keeps the real name and ``turn_id`` the ``dia_id``.
Every turn of a session is dated with the session's ``session_N_date_time``,
which carries no time zone and is read as UTC.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from layersearch.errors import ImportFailed, NotFound

from .records import Conversation, ImportResult, MessageDraft, assemble_conversation

__all__ = [
    "LocomoQuestion",
    "LocomoQuestions",
    "import_locomo",
    "locomo_questions",
    "read_locomo_questions",
    "parse_session_time",
    "conversations_from_data",
]

_SESSION = re.compile(r"session_(\d+)")
_TIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """One QA item whose ``evidence`` are ``turn_id``s of the conversation's messages.

    Adversarial items (category 5) have no ``answer``; the trap answer they were
    written to elicit is ``adversarial_answer``.
    """

    conversation_id: str
    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoQuestions:
    """Questions kept, and what was left out: items without any usable evidence."""

    questions: list[LocomoQuestion] = field(default_factory=list)
    skipped_without_evidence: int = 0
    problems: list[str] = field(default_factory=list)


def parse_session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08 13:56 UTC; ``ValueError`` otherwise."""
    match = _TIME.fullmatch(text)
    if not match:
        raise ValueError(f"session time {text!r} is not like '1:56 pm on 8 May, 2023'")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"session time {text!r} has an unknown month {month_name!r}")
    hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), hour24, int(minute), tzinfo=UTC)


def _samples(path: Path, data: Any) -> Iterator[tuple[str, str, dict[str, Any], list[Any]]]:
    """``(where, sample_id, conversation, qa)`` for each sample, whatever the file shape."""
    items = data if isinstance(data, list) else [data]
    for index, item in enumerate(items):
        where = f"{path}: record {index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object")
        conversation = item.get("conversation", item)
        if not isinstance(conversation, dict):
            raise ValueError(f"{where}: conversation is not an object")
        sample_id = item.get("sample_id")
        if sample_id is None and len(items) == 1:
            sample_id = path.stem
        if sample_id is None or str(sample_id).strip() == "":
            raise ValueError(f"{where}: sample_id is missing")
        qa = item.get("qa", [])
        yield where, str(sample_id).strip(), conversation, qa if isinstance(qa, list) else []


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[Any]]]:
    found = []
    for key, value in conversation.items():
        match = _SESSION.fullmatch(key)
        if match and isinstance(value, list):
            found.append((int(match.group(1)), value))
    return sorted(found, key=lambda item: item[0])


def _conversation(
    where: str, sample_id: str, conversation: dict[str, Any], problems: list[str]
) -> Conversation | None:
    speaker_a = conversation.get("speaker_a")
    speaker_b = conversation.get("speaker_b")
    if not isinstance(speaker_a, str) or not isinstance(speaker_b, str):
        raise ValueError(f"{where}: speaker_a / speaker_b missing")
    roles = {speaker_a: "user", speaker_b: "assistant"}
    drafts: list[MessageDraft] = []
    for number, turns in _sessions(conversation):
        created = None
        stamp = conversation.get(f"session_{number}_date_time")
        if isinstance(stamp, str):
            try:
                created = parse_session_time(stamp)
            except ValueError as exc:
                problems.append(f"{where} session {number}: {exc}; turns kept without a time")
        for index, turn in enumerate(turns):
            twhere = f"{where} session {number} turn {index}"
            if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                problems.append(f"{twhere}: not a turn with text; skipped")
                continue
            role = roles.get(turn.get("speaker", ""))
            if role is None:
                problems.append(f"{twhere}: speaker {turn.get('speaker')!r} is neither speaker")
                continue
            text = turn["text"].strip()
            # The shared photo is part of what was said; its caption is all we have of it.
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                text = f"{text}\n[image: {caption.strip()}]"
            drafts.append(
                MessageDraft(
                    role,
                    text,
                    created,
                    speaker=turn["speaker"],
                    turn_id=_str(turn.get("dia_id")),
                )
            )
    return assemble_conversation(
        source="locomo",
        native_id=sample_id,
        title=f"{speaker_a} and {speaker_b}",
        created=None,
        updated=None,
        drafts=drafts,
    )


def _str(value: Any) -> str | None:
    return str(value).strip() if value is not None and str(value).strip() else None


def conversations_from_data(path: Path, data: Any, problems: list[str]) -> list[Conversation]:
    """The conversations of one parsed LoCoMo file (used by ``import_conversations``)."""
    out = []
    try:
        for where, sample_id, conversation, _ in _samples(path, data):
            try:
                conv = _conversation(where, sample_id, conversation, problems)
            except ValueError as exc:
                problems.append(f"{exc}; sample skipped")
                continue
            if conv is not None:
                out.append(conv)
    except ValueError as exc:
        problems.append(f"{exc}; rest of file skipped")
    return out


def _load(path: Path) -> Any:
    from layersearch.jsonlimits import load_json

    try:
        return load_json(path.read_text(encoding="utf-8-sig"), str(path), error=ImportFailed)
    except json.JSONDecodeError as exc:
        raise ImportFailed(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason})") from exc


def _paths(path: str | Path) -> list[Path]:
    target = Path(path).expanduser()
    if not target.exists():
        raise NotFound(f"{target}: no such file or folder")
    if target.is_dir():
        return sorted(p for p in target.glob("*.json") if p.is_file())
    return [target]


def import_locomo(path: str | Path) -> ImportResult:
    """The conversations of a LoCoMo file or of every ``*.json`` in a folder."""
    result = ImportResult()
    for file in _paths(path):
        result.conversations.extend(conversations_from_data(file, _load(file), result.problems))
    return result


def _evidence(raw: Any, known: set[str], where: str, problems: list[str]) -> tuple[str, ...]:
    """Normalise evidence ids (``"D8:6; D9:17"`` → two ids, ``"D:11:26"`` → ``"D11:26"``).

    References to turns the conversation does not have are dropped and reported.
    """
    items = raw if isinstance(raw, list) else [raw]
    found: list[str] = []
    for item in items:
        for token in re.split(r"[;,\s]+", str(item)):
            if not token:
                continue
            match = _DIA_ID.fullmatch(token)
            ref = f"D{match.group(1)}:{match.group(2)}" if match else None
            if ref is None or ref not in known:
                problems.append(f"{where}: evidence {token!r} names no turn; dropped")
            elif ref not in found:
                found.append(ref)
    return tuple(found)


def read_locomo_questions(path: str | Path) -> LocomoQuestions:
    """Every QA item with evidence, plus the count of items skipped for lacking it."""
    questions: list[LocomoQuestion] = []
    problems: list[str] = []
    skipped = 0
    for file in _paths(path):
        try:
            samples = list(_samples(file, _load(file)))
        except ValueError as exc:
            problems.append(f"{exc}; file skipped")
            continue
        for where, sample_id, conversation, qa in samples:
            known = {
                str(turn.get("dia_id"))
                for _, turns in _sessions(conversation)
                for turn in turns
                if isinstance(turn, dict)
            }
            for index, item in enumerate(qa):
                qwhere = f"{where} qa {index}"
                if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                    problems.append(f"{qwhere}: not a QA item with a question; skipped")
                    continue
                category = item.get("category", 0)
                if not isinstance(category, int) or isinstance(category, bool):
                    problems.append(f"{qwhere}: category {category!r} is not an integer; skipped")
                    continue
                evidence = _evidence(item.get("evidence") or [], known, qwhere, problems)
                if not evidence:
                    skipped += 1
                    continue
                questions.append(
                    LocomoQuestion(
                        conversation_id=f"locomo:{sample_id}",
                        question=item["question"].strip(),
                        answer=_str(item.get("answer")),
                        evidence=evidence,
                        category=category,
                        adversarial_answer=_str(item.get("adversarial_answer")),
                    )
                )
    return LocomoQuestions(questions, skipped, problems)


def locomo_questions(path: str | Path) -> list[LocomoQuestion]:
    """The QA items of a LoCoMo file or folder that name evidence turns."""
    return read_locomo_questions(path).questions
