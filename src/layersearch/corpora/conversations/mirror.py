"""The in-memory DuckDB mirror of a conversation snapshot: keyword search and the
summary filters run the store's own SQL on it, without opening the store per query."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from layersearch.store import migrations

from .store import ConversationRow, MessageRow
from .summaries import Summary

__all__ = ["build_mirror"]


def build_mirror(
    messages: Sequence[MessageRow],
    conversations: dict[str, ConversationRow],
    summaries: Mapping[str, Summary],
) -> Any:
    """An in-memory DuckDB connection holding the snapshot's messages, conversations and
    the summary columns their filters read."""
    import duckdb

    con = duckdb.connect(":memory:")
    con.execute("SET threads = 1")  # one query at a time per cursor; no pool contention
    _create_tables(con)
    _insert_messages(con, messages)
    _insert_conversations(con, list(conversations.values()))
    _insert_summaries(con, list(summaries.values()))
    return con


def _col(values: list[Any]) -> Any:
    import numpy as np

    return np.array(values, dtype=object)


def _create_tables(con: Any) -> None:
    # The mirror holds the store's own messages and conversations tables, wherever in the
    # migration history they were created.
    for version in migrations.DUCKDB:
        for stmt in version:
            head = stmt.split("(")[0]
            if "TABLE" in head and ("messages" in head or "conversations" in head):
                con.execute(stmt)


def _insert_messages(con: Any, messages: Sequence[MessageRow]) -> None:
    import numpy as np

    con.register(
        "m_data",
        {
            "id": _col([m.id for m in messages]),
            "conversation_id": _col([m.conversation_id for m in messages]),
            "role": _col([m.role for m in messages]),
            "content": _col([m.content for m in messages]),
            "created": _col([m.created for m in messages]),
            "has_question": np.array([m.has_question for m in messages], dtype=bool),
            "position": np.array([m.position for m in messages], dtype=np.int64),
            "injected": np.array([m.injected for m in messages], dtype=bool),
            "speaker": _col([m.speaker for m in messages]),
            "turn_id": _col([m.turn_id for m in messages]),
        },
    )
    # Keyword search's order (newest first, ties by id) as a column, rows stored in it, and
    # DuckDB's own lower() of the content: see conversations.store.mirror_keyword_rows.
    con.execute("ALTER TABLE messages ADD COLUMN ord BIGINT")
    con.execute("ALTER TABLE messages ADD COLUMN content_lc VARCHAR")
    if messages:
        con.execute(
            "INSERT INTO messages (id, conversation_id, role, content, created, has_question, "
            "position, injected, speaker, turn_id, ord, content_lc) "
            "SELECT id, conversation_id, role, content, created, has_question, position, "
            "injected, speaker, turn_id, "
            "row_number() OVER (ORDER BY created DESC NULLS LAST, id) - 1 AS ord, "
            "lower(content) FROM m_data ORDER BY ord"
        )
    con.unregister("m_data")


def _insert_conversations(con: Any, convs: Sequence[ConversationRow]) -> None:
    con.register(
        "c_data",
        {
            "id": _col([c.id for c in convs]),
            "title": _col([c.title for c in convs]),
            "source": _col([c.source for c in convs]),
            "created": _col([c.created for c in convs]),
            "updated": _col([c.updated for c in convs]),
        },
    )
    if convs:
        con.execute(
            "INSERT INTO conversations (id, title, source, created, updated) "
            "SELECT id, title, source, created, updated FROM c_data"
        )
    con.unregister("c_data")


def _insert_summaries(con: Any, sums: Sequence[Summary]) -> None:
    # Summaries: only what their filters read (summary_filter_query).
    con.execute(
        "CREATE TABLE summaries (id VARCHAR PRIMARY KEY, conversation_id VARCHAR, "
        "domain VARCHAR, importance VARCHAR, thinking_stage VARCHAR)"
    )
    if sums:
        con.register(
            "s_data",
            {
                "id": _col([x.id for x in sums]),
                "conversation_id": _col([x.conversation_id for x in sums]),
                "domain": _col([x.domain for x in sums]),
                "importance": _col([x.importance for x in sums]),
                "thinking_stage": _col([x.thinking_stage for x in sums]),
            },
        )
        con.execute(
            "INSERT INTO summaries SELECT id, conversation_id, domain, importance, "
            "thinking_stage FROM s_data"
        )
        con.unregister("s_data")
