"""Forward-only schema migrations, one list per backend, applied in order.

``schema_version`` records each applied version; opening a store applies the
missing ones in one transaction. A store newer than this code is refused.

EVERY NEW DUCKDB VERSION NEEDS ITS POSTGRESQL TWIN at the same position in
``POSTGRES`` (a test checks that both lists have the same length, and the
conformance suite runs every corpus on both backends). Keep the statements
portable where you can (``?`` placeholders, TIMESTAMPTZ, BOOLEAN, JSON as text),
write ``text`` for VARCHAR and ``bytea`` for BLOB on the PostgreSQL side.
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
    # 5: halfvec HNSW indexes on PostgreSQL; DuckDB ranks vectors in memory, nothing to do
    [],
    # 6: facts an LLM extracted from conversation sessions, cached by content: ``key`` is a
    # hash of the session's text, the model and the prompt version; ``text_hash`` of the
    # text alone (what a snapshot looks a session's facts up by); ``facts`` a JSON array
    [
        """CREATE TABLE IF NOT EXISTS conversation_facts (
            key VARCHAR PRIMARY KEY, text_hash VARCHAR NOT NULL, conversation_id VARCHAR NOT NULL,
            model VARCHAR NOT NULL, prompt_version INTEGER NOT NULL, facts VARCHAR NOT NULL,
            created TIMESTAMPTZ NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS conversation_facts_text ON conversation_facts (text_hash)",
    ],
    # 7: physical names (a model's table or relation, a column's SQL expression)
    ["ALTER TABLE entities ADD COLUMN IF NOT EXISTS physical VARCHAR"],
]

# Identifier columns are COLLATE "C": ORDER BY then sorts by code point, as DuckDB
# does, whatever the database's locale (results must not depend on it). Columns
# compared with lower() keep the database collation, whose lower() knows Unicode.
POSTGRES: list[list[str]] = [
    # 1: semantic layer and memories
    [
        "CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text)",
        """CREATE TABLE IF NOT EXISTS datasources (
            name text COLLATE "C" PRIMARY KEY, label text, description text, dialect text, source text)""",
        """CREATE TABLE IF NOT EXISTS entities (
            id text COLLATE "C" PRIMARY KEY, kind text NOT NULL, name text NOT NULL,
            datasource text NOT NULL, model text, label text, description text,
            data_type text, formula text, hidden boolean NOT NULL,
            primary_key boolean NOT NULL, sample_values text)""",
        "CREATE INDEX IF NOT EXISTS entities_datasource ON entities (datasource)",
        """CREATE TABLE IF NOT EXISTS edges (
            src text COLLATE "C" NOT NULL, dst text COLLATE "C" NOT NULL,
            type text COLLATE "C" NOT NULL,
            datasource text NOT NULL, props text)""",
        "CREATE INDEX IF NOT EXISTS edges_datasource ON edges (datasource)",
        "CREATE SEQUENCE IF NOT EXISTS memory_ids START 1",
        """CREATE TABLE IF NOT EXISTS memories (
            id bigint PRIMARY KEY, learning text NOT NULL, description text,
            entities text NOT NULL, query text, created_at timestamptz NOT NULL)""",
    ],
    # 2: dense vectors. `embedding` has no fixed dimension so that models of any size
    # share the table; each (corpus, fingerprint) gets a partial HNSW index, created by the
    # store when its first vectors arrive (over embedding::halfvec(n) since version 5).
    [
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE IF NOT EXISTS vectors (
            corpus text NOT NULL, doc_id text COLLATE "C" NOT NULL,
            fingerprint text COLLATE "C" NOT NULL,
            content_hash text NOT NULL, dims integer NOT NULL, embedding vector NOT NULL,
            PRIMARY KEY (corpus, doc_id, fingerprint))""",
    ],
    # 3: vault notes and their chunks (their vectors live in `vectors`, corpus 'vault')
    [
        """CREATE TABLE IF NOT EXISTS vault_notes (
            slug text PRIMARY KEY, path text NOT NULL, title text NOT NULL,
            tags text NOT NULL, domain text, status text, note_type text,
            created date, updated date NOT NULL, content_hash text NOT NULL,
            frontmatter text NOT NULL, problems text NOT NULL, body text NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS vault_chunks (
            id text COLLATE "C" PRIMARY KEY, slug text COLLATE "C" NOT NULL,
            position integer NOT NULL,
            heading_path text NOT NULL, text text NOT NULL, content_hash text NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS vault_chunks_slug ON vault_chunks (slug)",
    ],
    # 4: conversations, their messages, and summaries
    [
        """CREATE TABLE IF NOT EXISTS conversations (
            id text COLLATE "C" PRIMARY KEY, title text, source text NOT NULL,
            created timestamptz, updated timestamptz)""",
        """CREATE TABLE IF NOT EXISTS messages (
            id text COLLATE "C" PRIMARY KEY, conversation_id text COLLATE "C" NOT NULL,
            role text NOT NULL, content text NOT NULL, created timestamptz,
            has_question boolean NOT NULL, position integer NOT NULL, injected boolean NOT NULL,
            speaker text, turn_id text)""",
        "CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id)",
        """CREATE TABLE IF NOT EXISTS summaries (
            id text COLLATE "C" PRIMARY KEY, conversation_id text COLLATE "C" NOT NULL,
            summary text NOT NULL, domain text, importance text, thinking_stage text,
            decisions text NOT NULL, open_questions text NOT NULL, quotables text NOT NULL,
            concepts text NOT NULL, created timestamptz)""",
        "CREATE INDEX IF NOT EXISTS summaries_conversation ON summaries (conversation_id)",
    ],
    # 5: the HNSW indexes become halfvec ones (a graph of half the size to walk, and up to
    # 4,000 dimensions instead of 2,000). The store first builds the new one of every
    # (corpus, fingerprint) in the same transaction (PostgresStore._rebuild_indexes: index
    # names are hashes computed in Python); this drops the old vector_cosine_ops ones.
    [
        r"""DO $$
        DECLARE
            legacy record;
        BEGIN
            FOR legacy IN
                SELECT i.indexrelid::regclass AS name
                FROM pg_index i
                JOIN pg_class c ON c.oid = i.indexrelid
                JOIN pg_opclass o ON o.oid = i.indclass[0]
                WHERE i.indrelid = 'vectors'::regclass
                  AND c.relname LIKE 'vectors\_hnsw\_%'
                  AND o.opcname = 'vector_cosine_ops'
            LOOP
                EXECUTE format('DROP INDEX %s', legacy.name);
            END LOOP;
        END
        $$""",
    ],
    # 6: facts an LLM extracted from conversation sessions, cached by content
    [
        """CREATE TABLE IF NOT EXISTS conversation_facts (
            key text COLLATE "C" PRIMARY KEY, text_hash text COLLATE "C" NOT NULL,
            conversation_id text COLLATE "C" NOT NULL, model text NOT NULL,
            prompt_version integer NOT NULL, facts text NOT NULL, created timestamptz NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS conversation_facts_text ON conversation_facts (text_hash)",
    ],
    # 7: physical names (a model's table or relation, a column's SQL expression)
    ["ALTER TABLE entities ADD COLUMN IF NOT EXISTS physical text"],
]

#: the migration after which every HNSW index is a halfvec one (PostgreSQL)
HALFVEC_INDEXES = 5

LATEST = len(DUCKDB)
