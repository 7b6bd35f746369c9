"""Forward-only schema migrations, one list per backend, applied in order.

``schema_version`` records each applied version; opening a store applies the
missing ones in one transaction each. A store newer than this code is refused.
"""

from __future__ import annotations

DUCKDB: list[list[str]] = [
    # 1: semantic layer and memories
    [
        "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        """CREATE TABLE IF NOT EXISTS datasources (
            name VARCHAR PRIMARY KEY, label VARCHAR, description VARCHAR,
            dialect VARCHAR, source VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS entities (
            id VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, name VARCHAR NOT NULL,
            datasource VARCHAR NOT NULL, model VARCHAR, label VARCHAR, description VARCHAR,
            data_type VARCHAR, formula VARCHAR, hidden BOOLEAN NOT NULL,
            primary_key BOOLEAN NOT NULL, sample_values VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS edges (
            src VARCHAR NOT NULL, dst VARCHAR NOT NULL, type VARCHAR NOT NULL,
            datasource VARCHAR NOT NULL, props VARCHAR)""",
        "CREATE SEQUENCE IF NOT EXISTS memory_ids START 1",
        """CREATE TABLE IF NOT EXISTS memories (
            id BIGINT PRIMARY KEY, learning VARCHAR NOT NULL, description VARCHAR,
            entities VARCHAR NOT NULL, query VARCHAR, created_at TIMESTAMPTZ NOT NULL)""",
    ],
    # 2: dense vectors, one row per (corpus, document, embedding-model fingerprint)
    [
        """CREATE TABLE IF NOT EXISTS vectors (
            corpus VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL, dims INTEGER NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY (corpus, doc_id, fingerprint))""",
    ],
    # 3: vault notes and their chunks (their vectors live in `vectors`, corpus 'vault')
    [
        """CREATE TABLE IF NOT EXISTS vault_notes (
            slug VARCHAR PRIMARY KEY, path VARCHAR NOT NULL, title VARCHAR NOT NULL,
            tags VARCHAR NOT NULL, domain VARCHAR, status VARCHAR, note_type VARCHAR,
            created DATE, updated DATE NOT NULL, content_hash VARCHAR NOT NULL,
            frontmatter VARCHAR NOT NULL, problems VARCHAR NOT NULL, body VARCHAR NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS vault_chunks (
            id VARCHAR PRIMARY KEY, slug VARCHAR NOT NULL, position INTEGER NOT NULL,
            heading_path VARCHAR NOT NULL, text VARCHAR NOT NULL, content_hash VARCHAR NOT NULL)""",
    ],
    # 4: conversations, their messages, and summaries. Portable SQL: TIMESTAMPTZ, BOOLEAN,
    # VARCHAR and JSON-as-text mean the same in PostgreSQL; list fields are JSON arrays.
    [
        """CREATE TABLE IF NOT EXISTS conversations (
            id VARCHAR PRIMARY KEY, title VARCHAR, source VARCHAR NOT NULL,
            created TIMESTAMPTZ, updated TIMESTAMPTZ)""",
        """CREATE TABLE IF NOT EXISTS messages (
            id VARCHAR PRIMARY KEY, conversation_id VARCHAR NOT NULL, role VARCHAR NOT NULL,
            content VARCHAR NOT NULL, created TIMESTAMPTZ, has_question BOOLEAN NOT NULL,
            position INTEGER NOT NULL, injected BOOLEAN NOT NULL, speaker VARCHAR,
            turn_id VARCHAR)""",
        "CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id)",
        """CREATE TABLE IF NOT EXISTS summaries (
            id VARCHAR PRIMARY KEY, conversation_id VARCHAR NOT NULL, summary VARCHAR NOT NULL,
            domain VARCHAR, importance VARCHAR, thinking_stage VARCHAR, decisions VARCHAR NOT NULL,
            open_questions VARCHAR NOT NULL, quotables VARCHAR NOT NULL, concepts VARCHAR NOT NULL,
            created TIMESTAMPTZ)""",
        "CREATE INDEX IF NOT EXISTS summaries_conversation ON summaries (conversation_id)",
    ],
]

LATEST = len(DUCKDB)
