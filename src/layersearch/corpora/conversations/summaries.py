"""Conversation summaries: one JSON object per line, written by a summariser.

Required: ``conversation_id`` (a layersearch conversation id, as produced by
``import_conversations``) and ``summary``. Optional: ``domain``, ``importance``
(breakthrough | significant | routine), ``thinking_stage`` (exploring |
crystallizing | refining | executing), ``decisions``, ``open_questions``,
``quotables`` (lists of strings), ``concepts`` (strings, or objects whose
``name`` is kept), ``summary_id`` and ``created``. A line with an invalid value
is skipped and reported as ``<file>:<line>: …``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from layersearch.errors import LimitExceeded, NotFound
from layersearch.jsonlimits import load_json

from .parsing import parse_timestamp
from .records import stable_digest

__all__ = ["IMPORTANCE", "THINKING_STAGES", "Summary", "import_summaries", "summary_id"]

IMPORTANCE = ("breakthrough", "significant", "routine")
THINKING_STAGES = ("exploring", "crystallizing", "refining", "executing")


@dataclass(frozen=True, slots=True)
class Summary:
    id: str
    conversation_id: str
    summary: str
    domain: str | None
    importance: str | None
    thinking_stage: str | None
    decisions: tuple[str, ...]
    open_questions: tuple[str, ...]
    quotables: tuple[str, ...]
    concepts: tuple[str, ...]
    created: datetime | None


class _Invalid(Exception):
    pass


def summary_id(conversation_id: str, summary: str) -> str:
    """``summary:<16 hex>`` over the conversation id and the summary text.

    Re-importing the same summary gives the same id; a rewritten summary is a
    new one.
    """
    return f"summary:{stable_digest(conversation_id, summary)}"


def import_summaries(path: str | Path) -> tuple[list[Summary], list[str]]:
    """Parse a summaries JSONL file; bad lines are skipped and listed as problems."""
    target = Path(path).expanduser()
    if not target.is_file():
        raise NotFound(f"{target}: no such summaries file")
    summaries: list[Summary] = []
    problems: list[str] = []
    with target.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = f"{target}:{lineno}"
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").rstrip()
                record = load_json(line, where)
                summaries.append(_summary(record, where, problems))
            except UnicodeDecodeError as exc:
                problems.append(f"{where}: not UTF-8 ({exc.reason}); line skipped")
            except json.JSONDecodeError as exc:
                problems.append(
                    f"{where}: invalid JSON at column {exc.colno} ({exc.msg}); line skipped"
                )
            except LimitExceeded as exc:
                problems.append(f"{exc}; line skipped")
            except _Invalid as exc:
                problems.append(f"{where}: {exc}; line skipped")
    return summaries, problems


def _summary(record: Any, where: str, problems: list[str]) -> Summary:
    if not isinstance(record, dict):
        raise _Invalid("not a JSON object")
    conversation_id = _text(record, "conversation_id", required=True)
    text = _text(record, "summary", required=True)
    assert conversation_id is not None and text is not None  # required above
    created = None
    try:
        created = parse_timestamp(record.get("created"))
    except ValueError as exc:
        raise _Invalid(f"created: {exc}") from exc
    return Summary(
        id=_text(record, "summary_id") or summary_id(conversation_id, text),
        conversation_id=conversation_id,
        summary=text,
        domain=_text(record, "domain"),
        importance=_choice(record, "importance", IMPORTANCE),
        thinking_stage=_choice(record, "thinking_stage", THINKING_STAGES),
        decisions=_strings(record, "decisions"),
        open_questions=_strings(record, "open_questions"),
        quotables=_strings(record, "quotables"),
        concepts=_concepts(record.get("concepts"), where, problems),
        created=created,
    )


def _text(record: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise _Invalid(f"{key} is missing or empty")
        return None
    if not isinstance(value, str):
        raise _Invalid(f"{key} must be a string, got {type(value).__name__}")
    return value.strip()


def _choice(record: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str | None:
    value = _text(record, key)
    if value is None:
        return None
    if value.lower() not in allowed:
        raise _Invalid(f"{key} {value!r} is not one of {', '.join(allowed)}")
    return value.lower()


def _strings(record: dict[str, Any], key: str) -> tuple[str, ...]:
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Invalid(f"{key} must be a list of strings")
    return tuple(item.strip() for item in value if item.strip())


def _concepts(value: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    """Concept names, in order, without repeats; unnamed entries are reported and dropped."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid("concepts must be a list of strings or objects with a name")
    names: list[str] = []
    for index, item in enumerate(value):
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{where}: concepts[{index}] has no name; concept dropped")
            continue
        if name.strip() not in names:
            names.append(name.strip())
    return tuple(names)
