"""The embedded store: one DuckDB file.

Connections are opened per operation and closed right after, so that a CLI
and a running server can share one file: DuckDB lets only one process hold a
file open for writing, and a reader that finds it locked retries with backoff
instead of failing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from layersearch.errors import ConfigError, NotFound, StoreError
from layersearch.semantic.model import Datasource, EdgeRecord, Entity
from layersearch.store import migrations
from layersearch.store.base import (
    Store,
    datasource_from_row,
    edge_from_row,
    entity_from_row,
    memory_from_row,
)
from layersearch.types import Memory

__all__ = ["DuckDBStore"]

log = logging.getLogger("layersearch.store.duckdb")

LOCK_TIMEOUT_S = float(os.environ.get("LAYERSEARCH_LOCK_TIMEOUT", "30"))


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "being used by another" in text


def memory_number(memory_id: str) -> int:
    """``memory:12`` → 12; anything else is a clear error."""
    if not isinstance(memory_id, str):
        raise ConfigError(f"a memory id is a string like memory:3, not {type(memory_id).__name__}")
    text = memory_id.strip()
    if text.lower().startswith("memory:"):
        text = text[7:]
    # ASCII only: str.isdigit() accepts superscripts and other scripts' digits.
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise ConfigError(
            f"'{memory_id}' is not a memory id (expected memory:<number>, e.g. memory:3)"
        )
    return int(text)


_IDENT_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _identifier(name: str) -> str:
    """Table and column names are code, never user input; refuse anything unusual."""
    if not name or not set(name) <= _IDENT_OK or name[0].isdigit():
        raise StoreError(f"invalid SQL identifier {name!r}")
    return name


class DuckDBStore(Store):
    dialect = "duckdb"

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.index_dir = self.path.with_name(self.path.name + ".index")
        self._gen_file = self.path.with_name(self.path.name + ".gen")
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no store at {self.path}: run `layersearch init` or `layersearch load PATH` first"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._migrate()

    # -- connections --------------------------------------------------------------------------

    @contextmanager
    def connect(self, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; a write connection runs one transaction."""
        delay = 0.005
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=not write)
                break
            except duckdb.Error as exc:
                if not _is_lock_error(exc) or time.monotonic() > deadline:
                    raise StoreError(f"cannot open store {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        try:
            if write:
                # DuckDB 2 writes large commits straight into the database file, skipping the
                # WAL; a process killed mid-write can then leave a torn block (seen ~1 in 1,000
                # SIGKILLs in the crash test). Every commit goes through the WAL instead.
                con.execute("SET auto_checkpoint_skip_wal_threshold = 9223372036854775807")
                con.begin()
                try:
                    yield con
                    con.commit()
                except BaseException:
                    con.rollback()
                    raise
            else:
                yield con
        except duckdb.Error as exc:
            raise StoreError(f"store {self.path}: {exc}") from exc
        finally:
            con.close()

    def _migrate(self) -> None:
        if self.path.exists() and self._current_schema():
            return
        with self.connect(write=True) as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)"
            )
            row = con.execute("SELECT max(version) FROM schema_version").fetchone()
            current = int(row[0]) if row and row[0] is not None else 0
            if current > migrations.LATEST:
                raise StoreError(
                    f"store {self.path} has schema version {current}, newer than this layersearch "
                    f"({migrations.LATEST}): upgrade layersearch"
                )
            for version in range(current + 1, migrations.LATEST + 1):
                for stmt in migrations.DUCKDB[version - 1]:
                    con.execute(stmt)
                con.execute(
                    "INSERT INTO schema_version VALUES (?, ?)", [version, datetime.now(UTC)]
                )
            con.execute("INSERT INTO meta VALUES ('generation', '0') ON CONFLICT (key) DO NOTHING")
            gen = self._read_generation(con)
        self._write_gen_file(gen)

    def _current_schema(self) -> bool:
        """Whether the store is at the latest schema, checked through a read connection: a
        write connection on every open would cost each CLI call a checkpoint and lock out
        other readers for its duration."""
        try:
            with self.connect(write=False) as con:
                row = con.execute("SELECT max(version) FROM schema_version").fetchone()
                if not row or row[0] is None or int(row[0]) != migrations.LATEST:
                    return False
                found = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                if not found:
                    return False
                gen = int(found[0])
        except StoreError:
            return False  # a new or older file: the write path creates or migrates it
        self._write_gen_file(gen)
        return True

    @staticmethod
    def _read_generation(con: duckdb.DuckDBPyConnection) -> int:
        row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self, con: duckdb.DuckDBPyConnection) -> int:
        gen = self._read_generation(con) + 1
        con.execute("UPDATE meta SET value = ? WHERE key = 'generation'", [str(gen)])
        return gen

    def bulk_insert(self, con: Any, table: str, columns: dict[str, list[Any]]) -> int:
        names = [_identifier(c) for c in columns]
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise StoreError(f"bulk insert into {table}: columns of different lengths")
        n = lengths.pop() if lengths else 0
        if n == 0:
            return 0
        data = {c: np.array(v, dtype=object) for c, v in columns.items()}
        view = f"bulk_{_identifier(table)}"
        con.register(view, data)
        try:
            cols = ", ".join(names)
            # identifiers are checked above; every value travels in the registered arrays
            con.execute(f"INSERT INTO {_identifier(table)} ({cols}) SELECT {cols} FROM {view}")  # noqa: S608
        finally:
            con.unregister(view)
        return n

    def bump_generation(self, con: Any) -> int:
        return self._bump(con)

    def publish_generation(self, gen: int) -> None:
        self._write_gen_file(gen)

    def _write_gen_file(self, gen: int) -> None:
        tmp = self._gen_file.with_name(self._gen_file.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_text(str(gen))
            os.replace(tmp, self._gen_file)
        except OSError as exc:
            log.warning("could not write %s: %s", self._gen_file, exc)

    def generation(self) -> int:
        try:
            return int(self._gen_file.read_text())
        except (OSError, ValueError):
            with self.connect(write=False) as con:
                gen = self._read_generation(con)
            self._write_gen_file(gen)
            return gen

    def stored_generation(self) -> int:
        """The authoritative counter, from the database itself."""
        with self.connect(write=False) as con:
            return self._read_generation(con)

    # -- semantic layer -----------------------------------------------------------------------

    def load_entities(self) -> list[Entity]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT id, kind, name, datasource, model, label, description, data_type, formula, "
                "hidden, primary_key, sample_values FROM entities ORDER BY id"
            ).fetchall()
        return [entity_from_row(r) for r in rows]

    def iter_entities(self, batch: int = 20_000) -> Iterator[list[Entity]]:
        # DuckDB compares VARCHAR byte by byte: UTF-8 byte order is code point order.
        with self.connect(write=False) as con:
            cur = con.execute(
                "SELECT id, kind, name, datasource, model, label, description, data_type, formula, "
                "hidden, primary_key, sample_values FROM entities ORDER BY id"
            )
            while rows := cur.fetchmany(batch):
                yield [entity_from_row(r) for r in rows]

    def iter_edges(self, batch: int = 20_000) -> Iterator[list[EdgeRecord]]:
        with self.connect(write=False) as con:
            cur = con.execute("SELECT src, dst, type, props FROM edges ORDER BY src, type, dst")
            while rows := cur.fetchmany(batch):
                yield [edge_from_row(r) for r in rows]

    def load_edges(self) -> list[EdgeRecord]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT src, dst, type, props FROM edges ORDER BY type, src, dst"
            ).fetchall()
        return [edge_from_row(r) for r in rows]

    def load_datasources(self) -> list[Datasource]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT name, label, description, dialect, source FROM datasources ORDER BY name"
            ).fetchall()
        return [datasource_from_row(r) for r in rows]

    # -- memories -----------------------------------------------------------------------------

    def add_memory(
        self,
        learning: str,
        description: str | None,
        entities: list[str],
        query: dict[str, Any] | None,
    ) -> Memory:
        created = datetime.now(UTC)
        with self.connect(write=True) as con:
            row = con.execute("SELECT nextval('memory_ids')").fetchone()
            assert row is not None
            number = int(row[0])
            con.execute(
                "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)",
                [
                    number,
                    learning,
                    description,
                    json.dumps(entities),
                    json.dumps(query, sort_keys=True) if query is not None else None,
                    created,
                ],
            )
            gen = self._bump(con)
        self._write_gen_file(gen)
        return Memory(
            id=f"memory:{number}",
            learning=learning,
            description=description,
            entities=entities,
            query=query,
            created_at=created,
        )

    def add_memories(
        self, items: list[tuple[str, str | None, list[str], dict[str, Any] | None]]
    ) -> list[Memory]:
        return self.add_memories_at(items)[0]

    def add_memories_at(
        self, items: list[tuple[str, str | None, list[str], dict[str, Any] | None]]
    ) -> tuple[list[Memory], int | None]:
        if not items:
            return [], None
        created = datetime.now(UTC)
        with self.connect(write=True) as con:
            numbers = [
                int(r[0])
                for r in con.execute(
                    "SELECT nextval('memory_ids') FROM range(?)", [len(items)]
                ).fetchall()
            ]
            self.bulk_insert(
                con,
                "memories",
                {
                    "id": numbers,
                    "learning": [i[0] for i in items],
                    "description": [i[1] for i in items],
                    "entities": [json.dumps(i[2]) for i in items],
                    "query": [
                        json.dumps(i[3], sort_keys=True) if i[3] is not None else None
                        for i in items
                    ],
                    "created_at": [created] * len(items),
                },
            )
            gen = self._bump(con)
        self._write_gen_file(gen)
        saved = [
            Memory(
                id=f"memory:{n}",
                learning=i[0],
                description=i[1],
                entities=i[2],
                query=i[3],
                created_at=created,
            )
            for n, i in zip(numbers, items, strict=True)
        ]
        return saved, gen

    def load_memories(self) -> list[Memory]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT id, learning, description, entities, query, created_at FROM memories ORDER BY id"
            ).fetchall()
        return [memory_from_row(r) for r in rows]

    def load_memories_at(self) -> tuple[int, list[Memory]]:
        with self.connect(write=False) as con:
            con.begin()  # one read transaction: the counter and the rows of the same commit
            gen = self._read_generation(con)
            rows = con.execute(
                "SELECT id, learning, description, entities, query, created_at FROM memories ORDER BY id"
            ).fetchall()
            con.commit()
        return gen, [memory_from_row(r) for r in rows]

    def delete_memory(self, memory_id: str) -> bool:
        number = memory_number(memory_id)
        with self.connect(write=True) as con:
            found = con.execute("SELECT count(*) FROM memories WHERE id = ?", [number]).fetchone()
            if not found or not found[0]:
                raise NotFound(f"no memory {memory_id}: `layersearch memory list` shows the ids")
            con.execute("DELETE FROM memories WHERE id = ?", [number])
            gen = self._bump(con)
        self._write_gen_file(gen)
        return True

    # -- vectors --------------------------------------------------------------------------------

    def vector_fingerprints(self, corpus: str) -> list[str]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT DISTINCT fingerprint FROM vectors WHERE corpus = ? ORDER BY 1", [corpus]
            ).fetchall()
        return [r[0] for r in rows]

    def vector_hashes(self, corpus: str, fingerprint: str) -> dict[str, str]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT doc_id, content_hash FROM vectors WHERE corpus = ? AND fingerprint = ?",
                [corpus, fingerprint],
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def load_vectors(self, corpus: str, fingerprint: str) -> tuple[list[str], np.ndarray]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT doc_id, dims, vector FROM vectors WHERE corpus = ? AND fingerprint = ? "
                "ORDER BY doc_id",
                [corpus, fingerprint],
            ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        dims = int(rows[0][1])
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(
            len(rows), dims
        )
        return [r[0] for r in rows], matrix.copy()

    def upsert_vectors(
        self,
        corpus: str,
        fingerprint: str,
        ids: list[str],
        hashes: list[str],
        matrix: np.ndarray,
    ) -> None:
        if not ids:
            return
        m = np.ascontiguousarray(matrix, dtype=np.float32)
        data = {
            "doc_id": np.array(ids, dtype=object),
            "content_hash": np.array(hashes, dtype=object),
            "vector": np.array([row.tobytes() for row in m], dtype=object),
        }
        with self.connect(write=True) as con:
            con.register("vec_data", data)
            con.execute(
                "DELETE FROM vectors WHERE corpus = ? AND fingerprint = ? AND doc_id IN "
                "(SELECT doc_id FROM vec_data)",
                [corpus, fingerprint],
            )
            con.execute(
                "INSERT INTO vectors SELECT ?, doc_id, ?, content_hash, ?, vector::BLOB FROM vec_data",
                [corpus, fingerprint, int(m.shape[1])],
            )
            gen = self._bump(con)
        self._write_gen_file(gen)

    def prune_vectors(self, corpus: str, live_ids: set[str]) -> int:
        with self.connect(write=True) as con:
            # An empty object array has no type for DuckDB to infer: "" is never a document id.
            con.register("live", {"doc_id": np.array(sorted(live_ids) or [""], dtype=object)})
            row = con.execute(
                "SELECT count(*) FROM vectors WHERE corpus = ? AND doc_id NOT IN (SELECT doc_id FROM live)",
                [corpus],
            ).fetchone()
            n = int(row[0]) if row else 0
            if n:
                con.execute(
                    "DELETE FROM vectors WHERE corpus = ? AND doc_id NOT IN (SELECT doc_id FROM live)",
                    [corpus],
                )
                gen = self._bump(con)
        if n:
            self._write_gen_file(gen)
        return n

    def close(self) -> None:
        """Nothing is held open between operations."""
