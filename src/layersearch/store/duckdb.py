"""The embedded store: one DuckDB file.

Connections are opened per operation and closed right after, so that a CLI
and a running server can share one file: DuckDB lets only one process hold a
file open for writing, and a reader that finds it locked retries with backoff
instead of failing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from layersearch.errors import (
    ConfigError,
    LayersearchError,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreReadOnly,
    disk_full_error,
    first_line,
    is_disk_full,
)
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.store import migrations
from layersearch.store.access import gate_for, lock_timeout
from layersearch.store.base import edge_from_row, entity_from_row, memory_from_row
from layersearch.store.sql import (
    MEMORY_SELECT,
    SQLStore,
    VectorRows,
    _identifier,
    bulk_shape,
    memory_json,
    memory_number,
    migrate_schema,
    new_memory,
)
from layersearch.types import Memory

__all__ = ["DuckDBStore", "memory_number"]

log = logging.getLogger("layersearch.store.duckdb")

# DuckDB's wording for a file another process holds ("Could not set lock on file …:
# Conflicting lock is held in …"; Windows: "being used by another process"). Matched as
# phrases: a bare "lock" also matches the "block" of a checksum error.
#: vector rows fetched at a time when loading a corpus's vectors
_VECTOR_CHUNK = 16_384
_LOCK_RE = re.compile(
    r"could not set lock on file|conflicting lock|being used by another process", re.IGNORECASE
)
_CORRUPT_RE = re.compile(
    r"corrupt database file|not a valid duckdb database file|does not match stored checksum",
    re.IGNORECASE,
)


def _is_lock_error(exc: BaseException) -> bool:
    return bool(_LOCK_RE.search(str(exc)))


def writable(path: Path) -> bool:
    """Whether this process can write the store file and create files beside it (its
    write-ahead log, generation file and index). ``access`` reports a read-only mount
    (EROFS) even to root, whom file modes do not stop."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def cache_index_dir(path: Path) -> Path:
    """Where the derived indexes of a store this process cannot write are kept:
    ``$LAYERSEARCH_INDEX_DIR`` or the user cache (``$XDG_CACHE_HOME``, ``~/.cache``),
    under ``layersearch/ro-<hash of the store's absolute path>``."""
    base = os.environ.get("LAYERSEARCH_INDEX_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = str(Path(xdg) / "layersearch" if xdg else Path.home() / ".cache" / "layersearch")
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return Path(base) / f"ro-{key}" / (path.name + ".index")


class DuckDBStore(SQLStore):
    dialect = "duckdb"

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        """Open the store at ``path``; ``create`` makes a missing one (and its folders),
        otherwise a missing store is :class:`StoreMissing` and nothing is created.

        A store this process cannot write (a read-only mount, a file it may only read) is
        opened read-only: reads work, writes are :class:`StoreReadOnly`, and the derived
        indexes live in :func:`cache_index_dir` (or a temporary folder) instead of beside it."""
        self.path = Path(path)
        self.location = str(self.path)
        self.index_dir = self.path.with_name(self.path.name + ".index")
        self._gen_file = self.path.with_name(self.path.name + ".gen")
        self._gen_warned = False
        self._gate = gate_for(self.path)
        self._tmp_index: tempfile.TemporaryDirectory[str] | None = None
        #: why this store is open read-only (None: it is writable)
        self.read_only: str | None = None
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a store file: name the .duckdb file")
        if not self.path.exists():
            if not create:
                raise StoreMissing(
                    f"no store at {self.path.absolute()}: run 'layersearch load PATH' first"
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the store's folder {self.path.parent}: {exc.strerror or exc}"
                ) from exc
        elif not writable(self.path):
            self._open_read_only()
        self._migrate()

    def _open_read_only(self) -> None:
        what = "file system is read-only" if _read_only_mount(self.path) else "no write permission"
        self.read_only = what
        cache = cache_index_dir(self.path)
        first = not cache.exists()
        try:
            cache.mkdir(parents=True, exist_ok=True)
            if not writable(cache):
                raise PermissionError(errno.EACCES, "not writable", str(cache))
            self.index_dir = cache
        except OSError:
            self._tmp_index = tempfile.TemporaryDirectory(prefix="layersearch-index-")
            self.index_dir = Path(self._tmp_index.name) / (self.path.name + ".index")
            first = True
        # Said once: when the derived indexes get a new home; later opens log it at info.
        (log.warning if first else log.info)(
            "store %s is read-only (%s): opened for reading only; its indexes are kept in %s",
            self.path,
            what,
            self.index_dir,
        )

    # -- connections --------------------------------------------------------------------------

    def _error(self, exc: BaseException, opening: bool) -> LayersearchError:
        """Our error for a DuckDB failure: a full disk and a damaged file say so and what
        to do; anything else names the store and DuckDB's message."""
        if is_disk_full(exc):
            return disk_full_error(self.path.parent, exc)
        if "cannot encode str as UTF-8" in str(exc):
            # DuckDB refuses a lone surrogate in a value: bad input, not a store fault.
            return ConfigError(
                "text holds a lone surrogate and is not valid Unicode (a JSON \\ud800 "
                f"escape without its pair?): {first_line(exc)}"
            )
        if _CORRUPT_RE.search(str(exc)):
            return StoreCorrupt(
                f"store {self.path} is damaged ({first_line(exc)}): restore it from a backup, "
                f"or move it away and run 'layersearch load PATH' again (its memories are in "
                "the damaged file)"
            )
        if opening:
            return StoreError(f"cannot open store {self.path}: {exc}")
        return StoreError(f"store {self.path}: {exc}")

    @contextmanager
    def connect(self, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; a write connection runs one transaction.

        Reads and writes of this file pass its :class:`~layersearch.store.access.Gate`: a
        write waits for the reads in flight (here and in other processes) and holds new
        ones back, a read waits while a write runs; each wait is bounded by
        ``LAYERSEARCH_LOCK_TIMEOUT`` (:class:`StoreBusy` past it)."""
        if write and self.read_only is not None:
            raise StoreReadOnly(
                f"store {self.path} is read-only ({self.read_only}): this command writes to it; "
                "run it on a writable copy of the store"
            )
        deadline = time.monotonic() + lock_timeout()
        if write:
            with self._gate.write(deadline):
                con = self._open(True, deadline)
                yield from self._transaction(con)
        else:
            with self._gate.read(deadline, self._open) as con:
                yield from self._session(con)

    def pinned(self) -> AbstractContextManager[None]:
        """The reads made meanwhile share one DuckDB connection (:meth:`Gate.pinned`)."""
        return self._gate.pinned()

    def _open(self, write: bool, deadline: float) -> Any:
        """A DuckDB connection, retried while another process holds the file (its readers
        finishing before our write, its writer before our read)."""
        delay = 0.001
        while True:
            if not write:
                self._gate.pass_writers(deadline)
            try:
                return duckdb.connect(str(self.path), read_only=not write)
            except duckdb.Error as exc:
                if not _is_lock_error(exc):
                    raise self._error(exc, opening=True) from exc
                if time.monotonic() > deadline:
                    raise StoreBusy(
                        f"store {self.path} is busy: another process held it past the lock "
                        "timeout (LAYERSEARCH_LOCK_TIMEOUT seconds, 30 by default); nothing was "
                        f"changed. Run the command again, or raise LAYERSEARCH_LOCK_TIMEOUT "
                        f"({first_line(exc)})"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.05 if write else 0.25)

    def _transaction(self, con: Any) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            # DuckDB 2 writes large commits straight into the database file, skipping the
            # WAL; a process killed mid-write can then leave a torn block (seen ~1 in 1,000
            # SIGKILLs in the crash test). Every commit goes through the WAL instead.
            con.execute("SET auto_checkpoint_skip_wal_threshold = 9223372036854775807")
            con.begin()
            try:
                yield con
                con.commit()
            except BaseException:
                # A failed commit (a full disk) has already ended the transaction: the
                # rollback's own "no transaction is active" must not hide the cause.
                try:
                    con.rollback()
                except duckdb.Error as again:
                    log.debug("rollback after a failed write: %s", again)
                raise
        except duckdb.Error as exc:
            raise self._error(exc, opening=False) from exc
        finally:
            con.close()

    def _session(self, con: Any) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read connection (closed by the gate that handed it out)."""
        try:
            yield con
        except duckdb.Error as exc:
            raise self._error(exc, opening=False) from exc

    def _migrate(self) -> None:
        if self.path.exists() and self._current_schema():
            return
        if self.read_only is not None:
            raise StoreReadOnly(
                f"store {self.path} is read-only ({self.read_only}) and was written by another "
                "version of layersearch: open it once where it is writable to upgrade it"
            )
        with self.connect(write=True) as con:
            migrate_schema(con, self.location, migrations.DUCKDB)
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
        except (StoreCorrupt, StoreReadOnly, StoreBusy):
            raise
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
        names, n = bulk_shape(table, columns)
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
            # In a transaction a failed insert aborted, unregistering fails too: the
            # insert's error is the one to report (the connection is closed after).
            with contextlib.suppress(duckdb.Error):
                con.unregister(view)
        return n

    def bump_generation(self, con: Any) -> int:
        return self._bump(con)

    def publish_generation(self, gen: int) -> None:
        self._write_gen_file(gen)

    def _write_gen_file(self, gen: int) -> None:
        if self.read_only is not None:
            return  # generation() reads the database when the file is missing or stale
        tmp = self._gen_file.with_name(self._gen_file.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_text(str(gen))
            os.replace(tmp, self._gen_file)
        except OSError as exc:
            # A stale file would make every reader wait for a generation it never shows
            # (a full disk after a commit): remove it, and readers ask the database. Removing
            # needs no space.
            for stale in (tmp, self._gen_file):
                with contextlib.suppress(OSError):
                    stale.unlink()
            if not self._gen_warned:
                self._gen_warned = True
                log.warning(
                    "could not write %s (%s); reading the generation from the database instead",
                    self._gen_file,
                    exc.strerror or exc,
                )

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

    def iter_entities(self, batch: int = 20_000) -> Iterator[list[Entity]]:
        # DuckDB compares VARCHAR byte by byte: UTF-8 byte order is code point order.
        with self.connect(write=False) as con:
            cur = con.execute(self.SELECT_ENTITIES)
            while rows := cur.fetchmany(batch):
                yield [entity_from_row(r) for r in rows]

    def iter_edges(self, batch: int = 20_000) -> Iterator[list[EdgeRecord]]:
        with self.connect(write=False) as con:
            cur = con.execute("SELECT src, dst, type, props FROM edges ORDER BY src, type, dst")
            while rows := cur.fetchmany(batch):
                yield [edge_from_row(r) for r in rows]

    # -- memories -----------------------------------------------------------------------------

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
            texts = [memory_json(i[2], i[3]) for i in items]
            self.bulk_insert(
                con,
                "memories",
                {
                    "id": numbers,
                    "learning": [i[0] for i in items],
                    "description": [i[1] for i in items],
                    "entities": [t[0] for t in texts],
                    "query": [t[1] for t in texts],
                    "created_at": [created] * len(items),
                },
            )
            gen = self._bump(con)
        self._write_gen_file(gen)
        saved = [new_memory(n, i, created) for n, i in zip(numbers, items, strict=True)]
        return saved, gen

    def load_memories_at(self) -> tuple[int, list[Memory]]:
        with self.connect(write=False) as con:
            con.begin()  # one read transaction: the counter and the rows of the same commit
            gen = self._read_generation(con)
            rows = con.execute(MEMORY_SELECT).fetchall()
            con.commit()
        return gen, [memory_from_row(r) for r in rows]

    # -- vectors --------------------------------------------------------------------------------

    def load_vectors(self, corpus: str, fingerprint: str) -> tuple[list[str], np.ndarray]:
        """The ids and vectors, in id order. The ids are sorted by the database, the vectors
        read in chunks in the table's own order into their rows of one matrix made first:
        sorting the vectors too held them all in DuckDB's sort (540k x 384: +2.6 GB at the
        peak, +1.8 GB so)."""
        key = [corpus, fingerprint]
        with self.connect(write=False) as con:
            con.begin()  # one read transaction: the ids and the vectors of the same commit
            ids = [
                r[0]
                for r in con.execute(
                    "SELECT doc_id FROM vectors WHERE corpus = ? AND fingerprint = ? "
                    "ORDER BY doc_id",
                    key,
                ).fetchall()
            ]
            found = con.execute(
                "SELECT max(dims) FROM vectors WHERE corpus = ? AND fingerprint = ?", key
            ).fetchone()
            if not ids or not found or found[0] is None:
                con.commit()
                return [], np.zeros((0, 0), dtype=np.float32)
            row_of = {doc_id: i for i, doc_id in enumerate(ids)}
            matrix = np.empty((len(ids), int(found[0])), dtype=np.float32)
            cur = con.execute(
                "SELECT doc_id, vector FROM vectors WHERE corpus = ? AND fingerprint = ?", key
            )
            read = 0
            while rows := cur.fetchmany(_VECTOR_CHUNK):
                at = np.fromiter((row_of[r[0]] for r in rows), dtype=np.int64, count=len(rows))
                block = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                matrix[at] = block.reshape(len(rows), matrix.shape[1])
                read += len(rows)
            con.commit()
        if read != len(ids):
            raise StoreError(f"vectors of '{corpus}' changed while read")
        return ids, matrix

    def _write_vectors(self, corpus: str, fingerprint: str, rows: VectorRows) -> None:
        ids, hashes, m = rows
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
        """Nothing is held open between operations (a temporary index folder is removed)."""
        if self._tmp_index is not None:
            self._tmp_index.cleanup()
            self._tmp_index = None


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False
