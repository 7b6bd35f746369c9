"""Chat exports → :class:`Conversation` records.

Formats (see docs/conversations.md for each one's exact shape):

    claude        Claude.ai ``conversations.json``
    chatgpt       ChatGPT ``conversations.json`` (``mapping`` tree, current branch only)
    claude_code   Claude Code session JSONL (``~/.claude/projects/*/<session>.jsonl``)
    cursor        Cursor agent transcript JSONL (same record shape as Claude Code)
    gemini        Gemini CLI session JSON
    generic       one message per line: conversation_id, role, content, created?, title?, source?
    locomo        LoCoMo benchmark conversations (see :mod:`.locomo`)

A malformed record is skipped and reported in ``ImportResult.problems`` as
``<file>:<line>: …`` (JSONL) or ``<file>: record <i>: …`` (JSON); it never stops
the rest of the import.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from layersearch.errors import ImportFailed, NotFound

from . import locomo
from .parsing import (
    TOOL_OUTPUT_MAX_CHARS,
    _iter_jsonl,
    _load_json,
    _records,
    _Skip,
    _str_or_none,
    _timestamp,
    _tool_draft,
    _user_draft,
    clean_user_text,
    parse_timestamp,
)
from .records import (
    ROLES,
    Conversation,
    ImportResult,
    MessageDraft,
    assemble_conversation,
)

__all__ = [
    "FORMATS",
    "TOOL_OUTPUT_MAX_CHARS",
    "clean_user_text",
    "detect_format",
    "import_conversations",
    "parse_timestamp",
]

log = logging.getLogger("layersearch.corpora.conversations")

FORMATS = ("claude", "chatgpt", "claude_code", "cursor", "gemini", "generic", "locomo")

_SUFFIXES = (".json", ".jsonl")
_SNIFF_LINES = 50
# --- format detection -------------------------------------------------------------------


def _detect_object(data: Any) -> str | None:
    sample = data
    if isinstance(data, list):
        sample = next((item for item in data if isinstance(item, dict)), None)
    if not isinstance(sample, dict):
        return None
    if "mapping" in sample:
        return "chatgpt"
    if "chat_messages" in sample:
        return "claude"
    if "qa" in sample and ("conversation" in sample or "speaker_a" in sample):
        return "locomo"
    if "messages" in sample and ("sessionId" in sample or "projectHash" in sample):
        return "gemini"
    return None


def _detect_record(record: Any, path: Path) -> str | None:
    if not isinstance(record, dict):
        return None
    if "conversation_id" in record and "role" in record and "content" in record:
        return "generic"
    agent_like = isinstance(record.get("message"), dict) or record.get("type") in (
        "summary",
        "file-history-snapshot",
    )
    if agent_like and ("sessionId" in record or "type" in record or "role" in record):
        # Both tools write the same record shape; Cursor keeps its transcripts
        # under ~/.cursor/…/agent-transcripts/ and omits the ``type`` field.
        if "type" not in record or any("cursor" in part.lower() for part in path.parts):
            return "cursor"
        return "claude_code"
    return None


def _sniff_jsonl(path: Path) -> str | None:
    scratch: list[str] = []
    for count, (_, record) in enumerate(_iter_jsonl(path, scratch)):
        found = _detect_record(record, path)
        if found or count >= _SNIFF_LINES:
            return found
    return None


def _detect_file(path: Path) -> tuple[str | None, Any, str]:
    """The format of one file, its parsed JSON when it had to be loaded to tell, and
    why it was not recognised (empty when it was)."""
    if path.suffix.lower() == ".jsonl":
        fmt = _sniff_jsonl(path)
        return fmt, None, "" if fmt else "no line looks like a known JSONL record"
    scratch: list[str] = []
    data = _load_json(path, scratch)
    if data is None:
        # Not one JSON document: JSONL under another suffix, or broken JSON.
        fmt = _sniff_jsonl(path)
        return fmt, None, "" if fmt else "; ".join(scratch)
    fmt = _detect_object(data)
    return fmt, data, "" if fmt else "its JSON structure matches no known export"


def detect_format(path: str | Path) -> str:
    """The format name of a file (one of :data:`FORMATS`), or of a folder's files.

    A folder whose files disagree returns ``"mixed"``; ``import_conversations``
    then detects file by file. Raises :class:`ImportFailed` when nothing matches.
    """
    target = _existing(path)
    if target.is_dir():
        found = {fmt for file in _files(target) if (fmt := _detect_file(file)[0])}
        if not found:
            raise ImportFailed(f"{target}: no file in a known chat export format ({_formats()})")
        return found.pop() if len(found) == 1 else "mixed"
    fmt, _, why = _detect_file(target)
    if fmt is None:
        raise ImportFailed(f"{target}: not a known chat export format ({_formats()}): {why}")
    return fmt


def _formats() -> str:
    return ", ".join(FORMATS)


def _existing(path: str | Path) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise NotFound(f"{target}: no such file or folder")
    return target


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in _SUFFIXES and not p.name.startswith(".")
    )


# --- the public entry point -------------------------------------------------------------


def import_conversations(path: str | Path, fmt: str = "auto") -> ImportResult:
    """Parse a file or a folder of files into conversations.

    ``fmt`` is one of :data:`FORMATS` or ``"auto"`` (detected per file). In a
    folder, a conversation id seen in several files keeps the version with the
    most messages, since exports are cumulative.
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise ImportFailed(f"unknown conversation format {fmt!r}; expected auto or {_formats()}")
    target = _existing(path)
    problems: list[str] = []
    if target.is_file():
        return ImportResult(_import_file(target, fmt, problems, strict=True), problems)
    by_id: dict[str, Conversation] = {}
    for file in _files(target):
        for conv in _import_file(file, fmt, problems, strict=False):
            kept = by_id.get(conv.id)
            if kept is None or len(conv.messages) > len(kept.messages):
                by_id[conv.id] = conv
    return ImportResult(list(by_id.values()), problems)


def _import_file(path: Path, fmt: str, problems: list[str], *, strict: bool) -> list[Conversation]:
    data: Any = None
    if fmt == "auto":
        fmt_found, data, why = _detect_file(path)
        if fmt_found is None:
            message = f"{path}: not a known chat export format ({_formats()}): {why}"
            if strict:
                raise ImportFailed(message)
            problems.append(message + "; file skipped")
            return []
        fmt = fmt_found
    log.debug("importing %s as %s", path, fmt)
    if fmt in _JSONL_PARSERS:
        return _JSONL_PARSERS[fmt](path, problems)
    if data is None:
        data = _load_json(path, problems)
        if data is None:
            return []
    return _JSON_PARSERS[fmt](path, data, problems)


# --- Claude.ai ----------------------------------------------------------------------------

_CLAUDE_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _parse_each(
    path: Path,
    data: Any,
    problems: list[str],
    convert: Callable[[Any, str, list[str]], Conversation | None],
) -> list[Conversation]:
    """One conversation per record of a JSON export; a bad record is reported and skipped."""
    out: list[Conversation] = []
    for index, record in _records(path, data, problems, "a list of conversations"):
        where = f"{path}: record {index}"
        try:
            conv = convert(record, where, problems)
        except _Skip as exc:
            problems.append(f"{where}: {exc}; conversation skipped")
            continue
        if conv is not None:
            out.append(conv)
    return out


def _parse_claude(path: Path, data: Any, problems: list[str]) -> list[Conversation]:
    return _parse_each(path, data, problems, _claude_conversation)


def _claude_conversation(record: Any, where: str, problems: list[str]) -> Conversation | None:
    if not isinstance(record, dict):
        raise _Skip("not an object")
    messages = record.get("chat_messages")
    if not isinstance(messages, list):
        raise _Skip("chat_messages is missing or not a list")
    drafts: list[MessageDraft] = []
    for number, message in _claude_branch(messages):
        mwhere = f"{where} message {number}"
        if not isinstance(message, dict):
            problems.append(f"{mwhere}: not an object; message skipped")
            continue
        role = _CLAUDE_ROLES.get(str(message.get("sender", "")))
        if role is None:
            problems.append(f"{mwhere}: unknown sender {message.get('sender')!r}; message skipped")
            continue
        created = _timestamp(message.get("created_at"), mwhere, problems)
        text = _claude_text(message)
        if role == "user":
            drafts.append(_user_draft(text, created))
        else:
            drafts.append(MessageDraft(role, text.strip(), created))
    return assemble_conversation(
        source="claude",
        native_id=_str_or_none(record.get("uuid")),
        title=_str_or_none(record.get("name")),
        created=_timestamp(record.get("created_at"), where, problems),
        updated=_timestamp(record.get("updated_at"), where, problems),
        drafts=drafts,
    )


def _claude_branch(messages: list[Any]) -> list[tuple[int, Any]]:
    """The current branch: walk ``parent_message_uuid`` back from the last message.

    Exports whose messages carry no parent links are taken in list order.
    """
    numbered = list(enumerate(messages))
    dicts = [(n, m) for n, m in numbered if isinstance(m, dict)]
    if not dicts or not all("parent_message_uuid" in m for _, m in dicts):
        return numbered
    by_uuid = {m.get("uuid"): (n, m) for n, m in dicts}
    chain: list[tuple[int, Any]] = []
    seen: set[Any] = set()
    current: tuple[int, Any] | None = dicts[-1]
    while current is not None and current[1].get("uuid") not in seen:
        seen.add(current[1].get("uuid"))
        chain.append(current)
        current = by_uuid.get(current[1].get("parent_message_uuid"))
    return chain[::-1]


def _claude_text(message: dict[str, Any]) -> str:
    blocks = message.get("content")
    if isinstance(blocks, list):
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if texts:
            return "\n\n".join(texts)
    text = message.get("text")
    return text if isinstance(text, str) else ""


# --- ChatGPT ------------------------------------------------------------------------------


def _parse_chatgpt(path: Path, data: Any, problems: list[str]) -> list[Conversation]:
    return _parse_each(path, data, problems, _chatgpt_conversation)


def _chatgpt_conversation(record: Any, where: str, problems: list[str]) -> Conversation | None:
    if not isinstance(record, dict):
        raise _Skip("not an object")
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise _Skip("mapping is missing or not an object")
    drafts: list[MessageDraft] = []
    for node_id in _chatgpt_branch(mapping, record.get("current_node")):
        node = mapping[node_id]
        message = node.get("message") if isinstance(node, dict) else None
        if not isinstance(message, dict):
            continue
        draft = _chatgpt_draft(message, f"{where} node {node_id}", problems)
        if draft is not None:
            drafts.append(draft)
    return assemble_conversation(
        source="chatgpt",
        native_id=_str_or_none(record.get("id") or record.get("conversation_id")),
        title=_str_or_none(record.get("title")),
        created=_timestamp(record.get("create_time"), where, problems),
        updated=_timestamp(record.get("update_time"), where, problems),
        drafts=drafts,
    )


def _chatgpt_branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to ``current_node``: the branch the user last saw.

    Without ``current_node`` the newest branch is followed from the root (the
    last child, as ChatGPT appends regenerations).
    """
    # `seen` (a set) stops a cycle; checking the chain list instead made a 100,000-message
    # conversation quadratic (about 200 s).
    chain: list[str] = []
    seen: set[str] = set()
    if isinstance(current, str) and current in mapping:
        node_id: Any = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            chain.append(node_id)
            seen.add(node_id)
            node = mapping[node_id]
            node_id = node.get("parent") if isinstance(node, dict) else None
        return chain[::-1]
    roots = [
        key
        for key, node in mapping.items()
        if isinstance(node, dict)
        and not (isinstance(node.get("parent"), str) and node.get("parent") in mapping)
    ]
    node_id = roots[0] if roots else None
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        chain.append(node_id)
        seen.add(node_id)
        node = mapping[node_id]
        listed = node.get("children") if isinstance(node, dict) else None
        children = (
            [c for c in listed if isinstance(c, str) and c in mapping]
            if isinstance(listed, list)
            else []
        )
        node_id = children[-1] if children else None
    return chain


def _chatgpt_draft(message: dict[str, Any], where: str, problems: list[str]) -> MessageDraft | None:
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
        return None
    text = _chatgpt_text(message.get("content"))
    if not text.strip():
        return None
    if role not in ROLES:
        problems.append(f"{where}: unknown author role {role!r}; message skipped")
        return None
    created = _timestamp(message.get("create_time"), where, problems)
    if role == "user":
        return _user_draft(text, created)
    if role == "tool":
        return _tool_draft(text, created)
    return MessageDraft(role, text.strip(), created)


def _chatgpt_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        # Non-string parts are images, files and audio pointers: no text to search.
        return "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    for key in ("text", "result"):
        value = content.get(key)
        if isinstance(value, str):
            return value
    return ""


# --- Claude Code and Cursor --------------------------------------------------------------


def _parse_claude_code(path: Path, problems: list[str]) -> list[Conversation]:
    return _parse_agent_jsonl(path, "claude_code", problems)


def _parse_cursor(path: Path, problems: list[str]) -> list[Conversation]:
    return _parse_agent_jsonl(path, "cursor", problems)


def _parse_agent_jsonl(path: Path, source: str, problems: list[str]) -> list[Conversation]:
    sessions: dict[str, list[MessageDraft]] = {}
    title: str | None = None
    seen: set[str] = set()
    for lineno, record in _iter_jsonl(path, problems):
        where = f"{path}:{lineno}"
        if not isinstance(record, dict):
            problems.append(f"{where}: not a JSON object; line skipped")
            continue
        kind = record.get("type") or record.get("role")
        if kind == "summary" and title is None:
            title = _str_or_none(record.get("summary"))
        # Sidechains are sub-agent conversations; other types are harness bookkeeping.
        if kind not in ("user", "assistant") or record.get("isSidechain"):
            continue
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        message = record.get("message")
        if not isinstance(message, dict):
            problems.append(f"{where}: {kind} record has no message object; line skipped")
            continue
        session = _str_or_none(record.get("sessionId")) or path.stem
        created = _timestamp(record.get("timestamp"), where, problems)
        drafts = sessions.setdefault(session, [])
        try:
            if kind == "assistant":
                _agent_assistant(message, created, drafts)
            else:
                _agent_user(message, created, drafts, meta=bool(record.get("isMeta")))
        except _Skip as exc:
            problems.append(f"{where}: {exc}; line skipped")
    out = []
    for session, drafts in sessions.items():
        conv = assemble_conversation(
            source=source,
            native_id=session,
            title=title if len(sessions) == 1 else None,
            created=None,
            updated=None,
            drafts=drafts,
        )
        if conv is not None:
            out.append(conv)
    return out


def _agent_assistant(
    message: dict[str, Any], created: datetime | None, drafts: list[MessageDraft]
) -> None:
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        # tool_use and thinking blocks are not what the assistant said.
        texts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    else:
        raise _Skip("message.content is neither text nor a list of blocks")
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if not text:
        return
    key = _str_or_none(message.get("id"))
    last = drafts[-1] if drafts else None
    # Claude Code writes one line per content block of a single API message.
    if key and last is not None and last.role == "assistant" and last.merge_key == key:
        last.content = f"{last.content}\n\n{text}"
        return
    drafts.append(MessageDraft("assistant", text, created, merge_key=key))


def _agent_user(
    message: dict[str, Any], created: datetime | None, drafts: list[MessageDraft], *, meta: bool
) -> None:
    content = message.get("content")
    if isinstance(content, str):
        drafts.append(_user_draft(content, created, meta=meta))
        return
    if not isinstance(content, list):
        raise _Skip("message.content is neither text nor a list of blocks")
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            drafts.append(_tool_draft(_tool_result_text(block.get("content")), created))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    text = "\n\n".join(t for t in texts if t.strip())
    if text.strip():
        drafts.append(_user_draft(text, created, meta=meta))


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


# --- Gemini CLI ---------------------------------------------------------------------------

_GEMINI_ROLES = {"user": "user", "gemini": "assistant", "model": "assistant"}


def _parse_gemini(path: Path, data: Any, problems: list[str]) -> list[Conversation]:
    out: list[Conversation] = []
    for index, record in _records(path, data, problems, "a session object"):
        where = f"{path}: record {index}"
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            problems.append(f"{where}: not a session with a messages list; skipped")
            continue
        drafts: list[MessageDraft] = []
        for number, message in enumerate(record["messages"]):
            mwhere = f"{where} message {number}"
            if not isinstance(message, dict):
                problems.append(f"{mwhere}: not an object; message skipped")
                continue
            # info / error / warning entries are CLI notices, not conversation.
            role = _GEMINI_ROLES.get(str(message.get("type", "")))
            if role is None:
                continue
            text = _gemini_text(message.get("content"))
            created = _timestamp(message.get("timestamp"), mwhere, problems)
            if role == "user":
                drafts.append(_user_draft(text, created))
            else:
                drafts.append(MessageDraft(role, text.strip(), created))
        conv = assemble_conversation(
            source="gemini",
            native_id=_str_or_none(record.get("sessionId")),
            title=None,
            created=_timestamp(record.get("startTime"), where, problems),
            updated=_timestamp(record.get("lastUpdated"), where, problems),
            drafts=drafts,
        )
        if conv is not None:
            out.append(conv)
    return out


def _gemini_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


# --- generic JSONL ------------------------------------------------------------------------

_GENERIC_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "system": "system",
    "tool": "tool",
}


def _parse_generic(path: Path, problems: list[str]) -> list[Conversation]:
    drafts: dict[tuple[str, str], list[MessageDraft]] = {}
    titles: dict[tuple[str, str], str] = {}
    for lineno, record in _iter_jsonl(path, problems):
        where = f"{path}:{lineno}"
        try:
            key, title, draft = _generic_line(record, where, problems)
        except _Skip as exc:
            problems.append(f"{where}: {exc}; line skipped")
            continue
        drafts.setdefault(key, []).append(draft)
        if title and key not in titles:
            titles[key] = title
    out = []
    for (source, native), items in drafts.items():
        conv = assemble_conversation(
            source=source,
            native_id=native,
            title=titles.get((source, native)),
            created=None,
            updated=None,
            drafts=items,
        )
        if conv is not None:
            out.append(conv)
    return out


def _generic_line(
    record: Any, where: str, problems: list[str]
) -> tuple[tuple[str, str], str | None, MessageDraft]:
    if not isinstance(record, dict):
        raise _Skip("not a JSON object")
    conv = record.get("conversation_id")
    if not isinstance(conv, str | int) or isinstance(conv, bool) or str(conv).strip() == "":
        raise _Skip("conversation_id is missing or not a string")
    role = _GENERIC_ROLES.get(str(record.get("role", "")).lower())
    if role is None:
        raise _Skip(f"role {record.get('role')!r} is not one of {sorted(_GENERIC_ROLES)}")
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        raise _Skip("content is missing, empty or not a string")
    source = record.get("source", "generic")
    if not isinstance(source, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", source):
        raise _Skip(f"source {source!r} must be a short name of letters, digits, _ . -")
    stamp = record.get("created", record.get("timestamp"))
    created = _timestamp(stamp, where, problems)
    title = _str_or_none(record.get("title"))
    if role == "user":
        draft = _user_draft(content, created)
    elif role == "tool":
        draft = _tool_draft(content, created)
    else:
        draft = MessageDraft(role, content.strip(), created)
    return (source, str(conv).strip()), title, draft


# --- LoCoMo -------------------------------------------------------------------------------


def _parse_locomo(path: Path, data: Any, problems: list[str]) -> list[Conversation]:
    return locomo.conversations_from_data(path, data, problems)


_JSONL_PARSERS: dict[str, Callable[[Path, list[str]], list[Conversation]]] = {
    "claude_code": _parse_claude_code,
    "cursor": _parse_cursor,
    "generic": _parse_generic,
}
_JSON_PARSERS: dict[str, Callable[[Path, Any, list[str]], list[Conversation]]] = {
    "claude": _parse_claude,
    "chatgpt": _parse_chatgpt,
    "gemini": _parse_gemini,
    "locomo": _parse_locomo,
}
