"""Conversations, messages and summaries in the store: import (upsert) and queries.

Every statement binds its values (``?``); the SQL is portable to PostgreSQL
(ILIKE, ``||``, ``NULLS LAST`` and ``ON CONFLICT`` mean the same in both).

Imports are idempotent: ids are content-derived (see ``records.py``), so a
re-import finds every row already stored and writes nothing (no generation
bump, no index rebuild). A newer export of a conversation adds its new
messages; when the incoming copy is at least as long as the stored one it is
the newer copy, and stored messages it no longer holds (a reply regenerated in
place) are removed, so that one conversation never shows two versions of a
turn. A shorter, older copy only adds what is missing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from layersearch.store.base import Store

from .records import Conversation, Message
from .summaries import Summary

__all__ = [
    "ConversationRow",
    "ImportReport",
    "MessageRow",
    "SummaryImportReport",
    "corpus_version",
    "load_facts",
    "save_facts",
    "stored_fact_keys",
    "keyword_query",
    "keyword_rows",
    "mirror_keyword_rows",
    "keyword_search",
    "load_conversations",
    "load_messages",
    "load_summaries",
    "save_conversations",
    "save_summaries",
    "summary_filter_query",
    "summary_ids_matching",
]

log = logging.getLogger("layersearch.corpora.conversations.store")

#: meta key counting writes to conversations/messages/summaries only, so that their
#: indexes are not rebuilt when another corpus (entities, vectors) is written
VERSION_KEY = "conversations_version"
_CHUNK = 500

Progress = Callable[[int, int], None]


class ImportReport(BaseModel):
    """What a conversation import changed in the store."""

    conversations: int = Field(description="conversations read from the input")
    messages: int = Field(description="messages read from the input")
    conversations_added: int = 0
    conversations_updated: int = 0
    messages_added: int = 0
    messages_removed: int = 0
    injected: int = Field(0, description="messages flagged as injected (kept out of search)")
    problems: list[str] = Field(default_factory=list)


class SummaryImportReport(BaseModel):
    summaries: int
    added: int = 0
    updated: int = 0
    #: summaries whose conversation is not (yet) imported; they are kept
    unknown_conversations: int = 0
    problems: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MessageRow:
    id: str
    conversation_id: str
    role: str
    content: str
    created: datetime | None
    position: int
    has_question: bool
    injected: bool
    speaker: str | None
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class ConversationRow:
    id: str
    title: str | None
    source: str
    created: datetime | None
    updated: datetime | None


_MESSAGE_COLUMNS = (
    "id, conversation_id, role, content, created, position, has_question, injected, "
    "speaker, turn_id"
)


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    assert isinstance(value, datetime)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _message(r: Sequence[Any]) -> MessageRow:
    return MessageRow(
        id=r[0],
        conversation_id=r[1],
        role=r[2],
        content=r[3],
        created=_utc(r[4]),
        position=int(r[5]),
        has_question=bool(r[6]),
        injected=bool(r[7]),
        speaker=r[8],
        turn_id=r[9],
    )


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


def _bump(store: Store, con: Any) -> int:
    """One generation bump per write, plus the conversations-only version."""
    row = con.execute("SELECT value FROM meta WHERE key = ?", [VERSION_KEY]).fetchone()
    version = int(row[0]) + 1 if row else 1
    if row:
        con.execute("UPDATE meta SET value = ? WHERE key = ?", [str(version), VERSION_KEY])
    else:
        con.execute("INSERT INTO meta (key, value) VALUES (?, ?)", [VERSION_KEY, str(version)])
    return store.bump_generation(con)


def corpus_version(store: Store) -> int:
    """How many writes conversations, messages and summaries have seen (0 when none)."""
    with store.connect(write=False) as con:
        row = con.execute("SELECT value FROM meta WHERE key = ?", [VERSION_KEY]).fetchone()
    return int(row[0]) if row else 0


# -- import ---------------------------------------------------------------------------------------


def save_conversations(
    store: Store,
    conversations: Sequence[Conversation],
    *,
    problems: Sequence[str] = (),
    progress: Progress | None = None,
) -> ImportReport:
    """Upsert conversations and their messages in one transaction."""
    report = ImportReport(
        conversations=len(conversations),
        messages=sum(len(c.messages) for c in conversations),
        injected=sum(m.injected for c in conversations for m in c.messages),
        problems=list(problems),
    )
    ids = sorted({c.id for c in conversations})
    if progress:
        progress(0, len(conversations))
    with store.connect(write=True) as con:
        stored_convs, stored_msgs = _stored_rows(con, ids)
        new_convs, new_msgs, removed = _merge(
            con, conversations, stored_convs, stored_msgs, report, progress
        )
        _write_new(store, con, new_convs, new_msgs, removed)
        report.conversations_added = len(new_convs)
        report.messages_added = len(new_msgs)
        report.messages_removed = len(removed)
        changed = new_convs or new_msgs or removed or report.conversations_updated
        gen = _bump(store, con) if changed else None
    if gen is not None:
        store.publish_generation(gen)
    return report


def _stored_rows(
    con: Any, ids: Sequence[str]
) -> tuple[dict[str, tuple[Any, ...]], dict[str, set[str]]]:
    """The stored row of each of these conversations, and the ids of their messages."""
    stored_convs: dict[str, tuple[Any, ...]] = {}
    stored_msgs: dict[str, set[str]] = {}
    for chunk in _chunks(ids):
        marks = _placeholders(len(chunk))
        for r in con.execute(
            f"SELECT id, title, source, created, updated FROM conversations WHERE id IN ({marks})",  # noqa: S608 - placeholders only
            list(chunk),
        ).fetchall():
            stored_convs[r[0]] = (r[1], r[2], _utc(r[3]), _utc(r[4]))
        for r in con.execute(
            f"SELECT conversation_id, id FROM messages WHERE conversation_id IN ({marks})",  # noqa: S608 - placeholders only
            list(chunk),
        ).fetchall():
            stored_msgs.setdefault(r[0], set()).add(r[1])
    return stored_convs, stored_msgs


def _merge(
    con: Any,
    conversations: Sequence[Conversation],
    stored_convs: dict[str, tuple[Any, ...]],
    stored_msgs: dict[str, set[str]],
    report: ImportReport,
    progress: Progress | None,
) -> tuple[list[Conversation], list[Message], list[str]]:
    """Compare the import with the stored rows: newer conversation rows are updated here;
    returns the conversations and messages to insert and the message ids to delete."""
    total = len(conversations)
    new_convs: list[Conversation] = []
    new_msgs: list[Message] = []
    removed: list[str] = []
    for done, conv in enumerate(conversations, start=1):
        before = stored_convs.get(conv.id)
        row = (conv.title, conv.source, conv.created, conv.updated)
        if before is None:
            new_convs.append(conv)
            stored_convs[conv.id] = row
        elif before != row and _newer(row, before):
            con.execute(
                "UPDATE conversations SET title = ?, source = ?, created = ?, updated = ? "
                "WHERE id = ?",
                [*row, conv.id],
            )
            stored_convs[conv.id] = row
            report.conversations_updated += 1
        have = stored_msgs.setdefault(conv.id, set())
        incoming = {m.id for m in conv.messages}
        if have and len(incoming) >= len(have):
            stale = sorted(have - incoming)
            removed.extend(stale)
            have.difference_update(stale)
        for m in conv.messages:
            if m.id not in have:
                new_msgs.append(m)
                have.add(m.id)
        if progress and (done % 200 == 0 or done == total):
            progress(done, total)
    return new_convs, new_msgs, removed


def _write_new(
    store: Store,
    con: Any,
    new_convs: Sequence[Conversation],
    new_msgs: Sequence[Message],
    removed: Sequence[str],
) -> None:
    """Delete the removed messages, insert the new conversations and messages."""
    for chunk in _chunks(removed):
        con.execute(
            f"DELETE FROM messages WHERE id IN ({_placeholders(len(chunk))})",  # noqa: S608 - placeholders only
            list(chunk),
        )
    store.bulk_insert(
        con,
        "conversations",
        {
            "id": [c.id for c in new_convs],
            "title": [c.title for c in new_convs],
            "source": [c.source for c in new_convs],
            "created": [c.created for c in new_convs],
            "updated": [c.updated for c in new_convs],
        },
    )
    store.bulk_insert(
        con,
        "messages",
        {
            "id": [m.id for m in new_msgs],
            "conversation_id": [m.conversation_id for m in new_msgs],
            "role": [m.role for m in new_msgs],
            "content": [m.content for m in new_msgs],
            "created": [m.created for m in new_msgs],
            "has_question": [m.has_question for m in new_msgs],
            "position": [m.position for m in new_msgs],
            "injected": [m.injected for m in new_msgs],
            "speaker": [m.speaker for m in new_msgs],
            "turn_id": [m.turn_id for m in new_msgs],
        },
    )


def _newer(row: tuple[Any, ...], before: tuple[Any, ...]) -> bool:
    """An older export never overwrites what a newer one wrote."""
    new_updated, old_updated = row[3], before[3]
    if new_updated is None or old_updated is None:
        return old_updated is None
    return bool(new_updated >= old_updated)


def _summary_row(s: Summary) -> tuple[Any, ...]:
    return (
        s.conversation_id,
        s.summary,
        s.domain,
        s.importance,
        s.thinking_stage,
        json.dumps(list(s.decisions), ensure_ascii=False),
        json.dumps(list(s.open_questions), ensure_ascii=False),
        json.dumps(list(s.quotables), ensure_ascii=False),
        json.dumps(list(s.concepts), ensure_ascii=False),
        s.created,
    )


_SUMMARY_COLUMNS = (
    "id",
    "conversation_id",
    "summary",
    "domain",
    "importance",
    "thinking_stage",
    "decisions",
    "open_questions",
    "quotables",
    "concepts",
    "created",
)


def save_summaries(
    store: Store, summaries: Sequence[Summary], *, problems: Sequence[str] = ()
) -> SummaryImportReport:
    """Insert new summaries, replace changed ones (same id, other content); one transaction."""
    report = SummaryImportReport(summaries=len(summaries), problems=list(problems))
    latest: dict[str, Summary] = {}
    for s in summaries:
        latest[s.id] = s  # a file repeating an id: the last line wins
    ids = sorted(latest)
    cols = ", ".join(_SUMMARY_COLUMNS)
    with store.connect(write=True) as con:
        stored: dict[str, tuple[Any, ...]] = {}
        known: set[str] = set()
        conv_ids = sorted({s.conversation_id for s in latest.values()})
        for chunk in _chunks(ids):
            for r in con.execute(
                f"SELECT {cols} FROM summaries WHERE id IN ({_placeholders(len(chunk))})",  # noqa: S608 - fixed columns, placeholders
                list(chunk),
            ).fetchall():
                stored[r[0]] = (*r[1:10], _utc(r[10]))
        for chunk in _chunks(conv_ids):
            for r in con.execute(
                f"SELECT id FROM conversations WHERE id IN ({_placeholders(len(chunk))})",  # noqa: S608 - placeholders only
                list(chunk),
            ).fetchall():
                known.add(r[0])
        fresh: list[tuple[Any, ...]] = []
        for sid in ids:
            s = latest[sid]
            row = _summary_row(s)
            if s.conversation_id not in known:
                report.unknown_conversations += 1
            if sid not in stored:
                fresh.append((sid, *row))
                report.added += 1
            elif stored[sid] != row:
                con.execute("DELETE FROM summaries WHERE id = ?", [sid])
                fresh.append((sid, *row))
                report.updated += 1
        store.bulk_insert(
            con,
            "summaries",
            {name: [r[i] for r in fresh] for i, name in enumerate(_SUMMARY_COLUMNS)},
        )
        gen = _bump(store, con) if fresh else None
    if gen is not None:
        store.publish_generation(gen)
    return report


# -- queries -------------------------------------------------------------------------------------


#: "contains the bound value, case-insensitively", the value escaped by
#: :func:`like_literal` (DuckDB and PostgreSQL both take ``ESCAPE``)
CONTAINS = "ILIKE '%' || ? || '%' ESCAPE '\\'"


def like_literal(text: str) -> str:
    """``text`` as a LIKE pattern that matches only itself: ``\\``, ``%`` and ``_``
    escaped with a backslash (the ``ESCAPE`` of :data:`CONTAINS`), so a term or a domain
    holding them is not a wildcard."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _keyword_where(
    term: str,
    role: str | None,
    questions_only: bool,
    include_injected: bool,
    *,
    lowered: bool = False,
) -> tuple[str, list[Any]]:
    """The keyword search's SELECT … WHERE (without order and limit) and its values.

    The term is matched literally: its ``%``, ``_`` and ``\\`` are no wildcards
    (:func:`like_literal`). ``lowered``: on the search mirror, whose ``content_lc`` is
    DuckDB's ``lower(content)``, where ``content ILIKE '%t%'`` is
    ``contains(lower(content), lower(t))`` (what DuckDB's ILIKE does).
    """
    if lowered:
        where, params = ["contains(m.content_lc, lower(?))"], [term]
    else:
        where, params = [f"m.content {CONTAINS}"], [like_literal(term)]
    if role is not None:
        where.append("m.role = ?")
        params.append(role)
    if questions_only:
        where.append("m.has_question")
    if not include_injected:
        where.append("NOT m.injected")
    columns = ", ".join("m." + c.strip() for c in _MESSAGE_COLUMNS.split(","))
    # fixed columns and conditions; every value is a bound parameter
    sql = (
        f"SELECT {columns}, c.id, c.title, c.source, c.created, c.updated "  # noqa: S608
        "FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        f"WHERE {' AND '.join(where)}"
    )
    return sql, params


def keyword_query(
    term: str,
    *,
    limit: int,
    role: str | None = None,
    questions_only: bool = False,
    include_injected: bool = False,
) -> tuple[str, list[Any]]:
    """The keyword-search SQL and its bound parameters: ``content ILIKE '%' || ? || '%'``
    with the term matched literally (:func:`like_literal`), newest first, ties by id."""
    sql, params = _keyword_where(term, role, questions_only, include_injected)
    return sql + " ORDER BY m.created DESC NULLS LAST, m.id LIMIT ?", [*params, limit]


#: Rows of the in-memory mirror searched first: newest-first keyword searches for a
#: common word are answered from the newest rows; the rest is read only when they
#: hold fewer than ``limit`` matches.
MIRROR_FIRST_WINDOW = 8192


def mirror_keyword_rows(
    con: Any,
    term: str,
    *,
    limit: int,
    role: str | None = None,
    questions_only: bool = False,
    include_injected: bool = False,
) -> list[tuple[MessageRow, ConversationRow]]:
    """:func:`keyword_query`'s rows, from the search mirror (see ``_mirror`` in ``search``).

    The mirror's messages carry ``ord``, their rank in the keyword order (newest first,
    ties by id), and ``content_lc``, their DuckDB ``lower(content)``, so no row is
    lowered per query. The newest window is searched first and the rest only if it came
    back short; the rows of the second part all follow those of the first, so the result
    is the same list.
    """
    sql, params = _keyword_where(term, role, questions_only, include_injected, lowered=True)
    sql += " AND m.ord >= ? AND m.ord < ? ORDER BY m.ord LIMIT ?"
    rows = con.execute(sql, [*params, 0, MIRROR_FIRST_WINDOW, limit]).fetchall()
    if len(rows) < limit:
        rest = limit - len(rows)
        rows += con.execute(sql, [*params, MIRROR_FIRST_WINDOW, 2**62, rest]).fetchall()
    return keyword_rows(rows)


def keyword_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[MessageRow, ConversationRow]]:
    return [(_message(r[:10]), _conversation(r[10:])) for r in rows]


def keyword_search(
    store: Store,
    term: str,
    *,
    limit: int,
    role: str | None = None,
    questions_only: bool = False,
    include_injected: bool = False,
) -> list[tuple[MessageRow, ConversationRow]]:
    """:func:`keyword_query` run on the store itself."""
    sql, params = keyword_query(
        term,
        limit=limit,
        role=role,
        questions_only=questions_only,
        include_injected=include_injected,
    )
    with store.connect(write=False) as con:
        return keyword_rows(con.execute(sql, params).fetchall())


def _conversation(r: Sequence[Any]) -> ConversationRow:
    return ConversationRow(id=r[0], title=r[1], source=r[2], created=_utc(r[3]), updated=_utc(r[4]))


def load_messages(store: Store, conversation_ids: Sequence[str] | None = None) -> list[MessageRow]:
    """Every message (or those of ``conversation_ids``), by conversation and position."""
    order = " ORDER BY conversation_id, position, id"
    with store.connect(write=False) as con:
        if conversation_ids is None:
            rows = con.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages{order}").fetchall()  # noqa: S608 - fixed columns
        else:
            rows = []
            for chunk in _chunks(sorted(set(conversation_ids))):
                rows += con.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM messages "  # noqa: S608 - fixed columns, placeholders
                    f"WHERE conversation_id IN ({_placeholders(len(chunk))}){order}",
                    list(chunk),
                ).fetchall()
    return [_message(r) for r in rows]


def load_conversations(store: Store) -> dict[str, ConversationRow]:
    with store.connect(write=False) as con:
        rows = con.execute(
            "SELECT id, title, source, created, updated FROM conversations ORDER BY id"
        ).fetchall()
    return {r[0]: _conversation(r) for r in rows}


def load_summaries(store: Store) -> list[Summary]:
    cols = ", ".join(_SUMMARY_COLUMNS)
    with store.connect(write=False) as con:
        rows = con.execute(f"SELECT {cols} FROM summaries ORDER BY id").fetchall()  # noqa: S608 - fixed columns
    return [
        Summary(
            id=r[0],
            conversation_id=r[1],
            summary=r[2],
            domain=r[3],
            importance=r[4],
            thinking_stage=r[5],
            decisions=tuple(json.loads(r[6])),
            open_questions=tuple(json.loads(r[7])),
            quotables=tuple(json.loads(r[8])),
            concepts=tuple(json.loads(r[9])),
            created=_utc(r[10]),
        )
        for r in rows
    ]


def summary_filter_query(
    *,
    domain: str | None = None,
    importance: str | None = None,
    thinking_stage: str | None = None,
    source: str | None = None,
) -> tuple[str, list[Any]]:
    """The SQL (and bound values) selecting the ids of summaries that pass every given
    filter. ``domain`` matches case-insensitively anywhere in the domain; ``source`` is
    the conversation's source (``claude``, ``chatgpt``, …), case-insensitive."""
    where: list[str] = []
    params: list[Any] = []
    if domain is not None:
        where.append(f"s.domain {CONTAINS}")
        params.append(like_literal(domain))
    if importance is not None:
        where.append("s.importance = ?")
        params.append(importance)
    if thinking_stage is not None:
        where.append("s.thinking_stage = ?")
        params.append(thinking_stage)
    if source is not None:
        where.append("lower(c.source) = lower(?)")
        params.append(source)
    sql = "SELECT s.id FROM summaries s LEFT JOIN conversations c ON c.id = s.conversation_id"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql, params


def summary_ids_matching(
    store: Store,
    *,
    domain: str | None = None,
    importance: str | None = None,
    thinking_stage: str | None = None,
    source: str | None = None,
) -> set[str]:
    """Ids of summaries passing every given filter (values bound; validated by the caller):
    :func:`summary_filter_query` run on the store itself."""
    sql, params = summary_filter_query(
        domain=domain, importance=importance, thinking_stage=thinking_stage, source=source
    )
    with store.connect(write=False) as con:
        return {r[0] for r in con.execute(sql, params).fetchall()}


# -- extracted facts ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactsRow:
    """The facts extracted from one session's text by one model and prompt version."""

    key: str
    text_hash: str
    conversation_id: str
    model: str
    prompt_version: int
    #: JSON: ``[{"fact": str, "turns": [0-based turn numbers in the session]}, …]``
    facts: str
    created: datetime


def stored_fact_keys(store: Store, keys: Sequence[str]) -> set[str]:
    """The cache keys among ``keys`` whose facts are stored."""
    found: set[str] = set()
    with store.connect(write=False) as con:
        for chunk in _chunks(sorted(set(keys))):
            found.update(
                r[0]
                for r in con.execute(
                    f"SELECT key FROM conversation_facts WHERE key IN ({_placeholders(len(chunk))})",  # noqa: S608 - placeholders only
                    list(chunk),
                ).fetchall()
            )
    return found


def save_facts(store: Store, rows: Sequence[FactsRow]) -> None:
    """Store these cache entries (a key already stored is left as it is); one transaction."""
    if not rows:
        return
    with store.connect(write=True) as con:
        have: set[str] = set()
        for chunk in _chunks(sorted({r.key for r in rows})):
            have.update(
                r[0]
                for r in con.execute(
                    f"SELECT key FROM conversation_facts WHERE key IN ({_placeholders(len(chunk))})",  # noqa: S608 - placeholders only
                    list(chunk),
                ).fetchall()
            )
        fresh = list({r.key: r for r in rows if r.key not in have}.values())
        store.bulk_insert(
            con,
            "conversation_facts",
            {
                "key": [r.key for r in fresh],
                "text_hash": [r.text_hash for r in fresh],
                "conversation_id": [r.conversation_id for r in fresh],
                "model": [r.model for r in fresh],
                "prompt_version": [r.prompt_version for r in fresh],
                "facts": [r.facts for r in fresh],
                "created": [r.created for r in fresh],
            },
        )
        gen = _bump(store, con) if fresh else None
    if gen is not None:
        store.publish_generation(gen)


def load_facts(store: Store) -> dict[str, list[tuple[str, list[int]]]]:
    """Session text hash → its facts (text, 0-based turn numbers), from the newest entry
    of each text when several models or prompt versions extracted it; ``{}`` when none."""
    with store.connect(write=False) as con:
        rows = con.execute(
            "SELECT text_hash, facts FROM conversation_facts ORDER BY text_hash, created, key"
        ).fetchall()
    out: dict[str, list[tuple[str, list[int]]]] = {}
    for text_hash, raw in rows:
        out[text_hash] = [(f["fact"], list(f["turns"])) for f in json.loads(raw)]
    return out
