"""The shared store: PostgreSQL with pgvector.

Several agents (processes, machines) can point at one database. Connections
are pooled per store object (a PostgreSQL connection is cheap to keep and
costly to open); every operation borrows one, runs one transaction and gives
it back. SQL written for the DuckDB store (``?`` placeholders) runs unchanged:
:func:`translate` rewrites the placeholders for psycopg.

Vectors live in one ``vectors`` table whose ``embedding`` column is a pgvector
``vector`` without a fixed dimension; each (corpus, model fingerprint) gets its
own partial HNSW index over ``embedding::halfvec(n)`` (half precision: half the
index to walk, and up to 4,000 dimensions where ``vector`` stops at 2,000),
created the first time vectors of that pair are written. :meth:`PostgresStore.search_vectors`
ranks in the database with that index and re-scores the candidates from the
stored float32 vectors the way :class:`~layersearch.ranking.vector.VectorIndex`
does, so both backends report the same cosines. Vectors of more than 4,000
dimensions get no index and are always ranked exactly.

Derived full-text indexes still live on the local disk (tantivy needs files):
``$LAYERSEARCH_INDEX_DIR`` or ``~/.cache/layersearch``, in a subdirectory
named after the store's random id (kept in ``meta``), so that a database that
is dropped and re-created never reuses a stale index.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql as pgsql

from layersearch.errors import StoreBusy, StoreError, mask_secrets
from layersearch.store import migrations
from layersearch.store.access import lock_timeout
from layersearch.store.pgwire import (
    _BY_IDS,
    Connection,
    _cache_home,
    _decode_vectors,
    _encode_vectors,
    _extension_hint,
    _index_name,
    _index_node,
    _vector_text,
    _where_statement,
    redact,
    translate,
)
from layersearch.store.sql import (
    SQLStore,
    VectorRows,
    _identifier,
    _joins_to,
    _list_entities,
    bulk_shape,
    migrate_schema,
)

__all__ = ["PostgresStore", "translate", "redact"]

log = logging.getLogger("layersearch.store.postgres")

#: idle connections kept per store object
POOL_SIZE = int(os.environ.get("LAYERSEARCH_PG_POOL", "4"))
# Any constant works: it only has to be the same for every layersearch process.
_MIGRATION_LOCK = 0x6C617965
#: held by every write transaction, so that writers of any process take turns
_WRITE_LOCK = 0x6C617966
# An allow-list at most this long is ranked exactly (primary-key lookups), which
# beats walking the graph past rows the filter rejects.
EXACT_ALLOW_MAX = 2000
# Candidates fetched beyond k so the float32 re-scoring can repair a slightly
# wrong graph order and ties at the boundary compete on id.
_EXTRA = 32
# Ranking statements are never server-prepared: a generic plan sees the allow-list
# as a parameter and tests each row against it linearly, while a one-off plan
# turns the constant array into a hash lookup (measured on 50k vectors with 5k
# allowed ids: p50 30 ms prepared, 11 ms not).
# A grouped walk reads at least this many rows per wanted group: with fewer, recall@10 of
# vault notes against brute force fell (0.97 -> 0.85 on clustered vectors, filtered).
_GROUP_ROWS = 8
# pgvector stops an iterative scan after this many tuples; past it the
# fallback to exact search takes over.
_MAX_SCAN_TUPLES = 40_000
#: rows of each probe walk of walk_pages_per_row (a vault search's first batch is 88)
_PROBE_ROWS = 88
#: the most dimensions pgvector's HNSW indexes a halfvec with; wider vectors are ranked exactly
HNSW_MAX_DIMS = 4000


class PostgresStore(SQLStore):
    dialect = "postgres"
    SELECT_ENTITIES = (
        "SELECT id, kind, name, datasource, model, label, description, data_type, formula, "
        'hidden, primary_key, sample_values, physical FROM entities ORDER BY id COLLATE "C"'
    )
    LIST_ENTITIES = _list_entities('id COLLATE "C"')
    SELECT_JOINS_TO = _joins_to('src COLLATE "C"')
    SELECT_EDGES = (
        'SELECT src, dst, type, props FROM edges ORDER BY type COLLATE "C", '
        'src COLLATE "C", dst COLLATE "C"'
    )
    SELECT_DATASOURCES = (
        "SELECT name, label, description, dialect, source FROM datasources "
        'ORDER BY name COLLATE "C"'
    )
    SELECT_FINGERPRINTS = (
        'SELECT DISTINCT fingerprint COLLATE "C" FROM vectors WHERE corpus = ? ORDER BY 1'
    )

    def __init__(self, dsn: str, *, index_dir: str | os.PathLike[str] | None = None) -> None:
        self.dsn = dsn
        self.location = redact(dsn)
        self._idle: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()
        self._closed = False
        self._indexed: set[str] = set()
        self._index_lock = threading.Lock()
        store_id = self._migrate()
        if index_dir is None:
            base = os.environ.get("LAYERSEARCH_INDEX_DIR") or _cache_home() / "layersearch"
            index_dir = Path(base) / f"pg-{store_id}"
        self.index_dir = Path(index_dir)

    # -- connections --------------------------------------------------------------------------

    def _checkout(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise StoreError(f"store {self.location} is closed")
        while True:
            try:
                con = self._idle.get_nowait()
            except queue.Empty:
                break
            if not con.closed and not con.broken:
                return con
        try:
            # UTC sessions: timestamps read back the same on every client.
            return psycopg.connect(self.dsn, autocommit=True, options="-c TimeZone=UTC")
        except psycopg.Error as exc:
            # libpq repeats the address, or the bad part of a malformed one, in its message
            raise StoreError(
                f"cannot connect to {self.location}: {mask_secrets(str(exc))}"
            ) from exc

    def _checkin(self, con: psycopg.Connection[Any]) -> None:
        healthy = (
            not con.closed
            and not con.broken
            and con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        if healthy and not self._closed and self._idle.qsize() < POOL_SIZE:
            self._idle.put(con)
        else:
            con.close()

    @contextmanager
    def _raw(self, *, write: bool) -> Iterator[psycopg.Connection[Any]]:
        con = self._checkout()
        try:
            # Reads: one consistent snapshot for every statement, asked for in the BEGIN
            # itself (psycopg sends it there; a separate SET TRANSACTION is a round trip).
            con.isolation_level = None if write else psycopg.IsolationLevel.REPEATABLE_READ
            with con.transaction():
                yield con
        except psycopg.Error as exc:
            raise StoreError(f"store {self.location}: {mask_secrets(str(exc))}") from exc
        finally:
            self._checkin(con)

    @contextmanager
    def connect(self, *, write: bool) -> Iterator[Connection]:
        """One transaction on a pooled connection (committed on success, rolled back on error)."""
        if write:
            with self._writing() as con:
                yield Connection(con)
        else:
            with self._raw(write=False) as con:
                yield Connection(con)

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction that first waits its turn among all writers of the database.

        Writers of layersearch take turns, as on DuckDB: two of them interleaved could
        deadlock (each building the vector index the other's rows block), or the second
        of two loads of one datasource insert rows the first had just inserted. Readers
        never wait for it. The wait is bounded by ``LAYERSEARCH_LOCK_TIMEOUT`` (30 s):
        past it :class:`StoreBusy`, and nothing was written."""
        timeout_ms = max(1, round(lock_timeout() * 1000))
        with self._raw(write=True) as con:
            row = con.execute("SELECT current_setting('lock_timeout')").fetchone()
            try:
                _set_local(con, {"lock_timeout": f"{timeout_ms}ms"})
                con.execute("SELECT pg_advisory_xact_lock(%s)", [_WRITE_LOCK])
            except psycopg.errors.LockNotAvailable as exc:
                raise StoreBusy(
                    f"store {self.location} is busy: another writer held it past the lock "
                    "timeout (LAYERSEARCH_LOCK_TIMEOUT seconds, 30 by default); nothing was "
                    "changed. Run the command again, or raise LAYERSEARCH_LOCK_TIMEOUT"
                ) from exc
            # The statements of the write keep the session's own lock timeout.
            _set_local(con, {"lock_timeout": str(row[0]) if row else "0"})
            yield con

    def _migrate(self) -> str:
        with self._raw(write=True) as con:
            con.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            migrate_schema(
                Connection(con),
                self.location,
                migrations.POSTGRES,
                run=lambda stmt: self._run_migration(con, stmt),
                before=lambda version: self._before_version(con, version),
            )
            con.execute(
                "INSERT INTO meta VALUES ('store_id', %s) ON CONFLICT (key) DO NOTHING",
                [uuid.uuid4().hex],
            )
            row = con.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            assert row is not None
            return str(row[0])

    def _before_version(self, con: psycopg.Connection[Any], version: int) -> None:
        if version == migrations.HALFVEC_INDEXES:
            # Before the migration drops the old indexes: the build lets readers
            # through, the drop locks the table only until the commit just after.
            self._rebuild_indexes(con)

    def _run_migration(self, con: psycopg.Connection[Any], stmt: str) -> None:
        try:
            con.execute(stmt)
        except psycopg.errors.FeatureNotSupported as exc:
            raise StoreError(_extension_hint(self.location, exc)) from exc
        except psycopg.errors.UndefinedFile as exc:
            raise StoreError(_extension_hint(self.location, exc)) from exc

    def _rebuild_indexes(self, con: psycopg.Connection[Any]) -> None:
        """Build the halfvec index of every (corpus, fingerprint) of a store made with the
        older ``vector`` indexes, in the migration's transaction (which then drops those).

        It runs once, when a store made by an older layersearch is first opened, and holds
        the migration lock meanwhile: other processes opening the store wait for it rather
        than each building the same index. Processes already running keep searching on the
        old index during the build (it blocks writes, not reads); after the commit their
        statements match no index and rank exactly until they are restarted. Building takes
        minutes on a large store, so it says so before it starts, and after each index.
        """
        pairs = con.execute(
            "SELECT corpus, fingerprint, dims, count(*) FROM vectors "
            'GROUP BY corpus, fingerprint, dims ORDER BY corpus, fingerprint COLLATE "C", dims'
        ).fetchall()
        if not pairs:
            return
        total = sum(int(p[3]) for p in pairs)
        log.warning(
            "store %s: rebuilding %d vector index(es) over %d vectors as halfvec HNSW "
            "(once, after upgrading layersearch; minutes on a store of millions of vectors); "
            "other processes opening the store wait",
            self.location,
            len(pairs),
            total,
        )
        for number, (corpus, fp, dims, count) in enumerate(pairs, 1):
            start = time.perf_counter()
            self._ensure_index(con, str(corpus), str(fp), int(dims))
            log.warning(
                "store %s: index %d of %d (%s, %s: %d vectors of %d dimensions) built in %.1f s",
                self.location,
                number,
                len(pairs),
                corpus,
                fp,
                count,
                dims,
                time.perf_counter() - start,
            )

    # -- generic surface ----------------------------------------------------------------------

    def bulk_insert(self, con: Any, table: str, columns: dict[str, list[Any]]) -> int:
        names, n = bulk_shape(table, columns)
        if n == 0:
            return 0
        raw = con.raw if isinstance(con, Connection) else con
        stmt = pgsql.SQL("COPY {} ({}) FROM STDIN").format(
            pgsql.Identifier(_identifier(table)), pgsql.SQL(", ").join(map(pgsql.Identifier, names))
        )
        with raw.cursor() as cur, cur.copy(stmt) as copy:
            for row in zip(*columns.values(), strict=True):
                copy.write_row(row)
        return n

    def bump_generation(self, con: Any) -> int:
        raw = con.raw if isinstance(con, Connection) else con
        # A row lock serialises concurrent writers: every write gets its own number.
        row = raw.execute(
            "UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' "
            "RETURNING value"
        ).fetchone()
        if row is None:
            raise StoreError(f"store {self.location} has no generation counter: reopen it")
        return int(row[0])

    def publish_generation(self, gen: int) -> None:
        """Nothing to do: readers ask the database, which knows once the commit is done."""

    def generation(self) -> int:
        con = self._checkout()
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        except psycopg.Error as exc:
            raise StoreError(f"store {self.location}: {mask_secrets(str(exc))}") from exc
        finally:
            self._checkin(con)
        return int(row[0]) if row else 0

    # -- vectors ------------------------------------------------------------------------------

    def load_vectors(self, corpus: str, fingerprint: str) -> tuple[list[str], np.ndarray]:
        with self._raw(write=False) as con, con.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT doc_id, embedding FROM vectors WHERE corpus = %s AND fingerprint = %s "
                'ORDER BY doc_id COLLATE "C"',
                [corpus, fingerprint],
            ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r[0] for r in rows], _decode_vectors([r[1] for r in rows])

    def _write_vectors(self, corpus: str, fingerprint: str, rows: VectorRows) -> None:
        ids, hashes, m = rows
        if m.ndim != 2 or m.shape[0] != len(ids) or len(hashes) != len(ids):
            raise StoreError(f"upsert_vectors: {len(ids)} ids for a matrix of shape {m.shape}")
        dims = int(m.shape[1])
        encoded = _encode_vectors(m)
        with self._writing() as con:
            con.execute(
                "CREATE TEMPORARY TABLE vec_in (doc_id text, content_hash text, embedding vector) "
                "ON COMMIT DROP"
            )
            with (
                con.cursor() as cur,
                cur.copy(
                    "COPY vec_in (doc_id, content_hash, embedding) FROM STDIN (FORMAT BINARY)"
                ) as copy,
            ):
                # The vector travels in pgvector's own binary form, declared as bytea so
                # psycopg passes it through untouched.
                copy.set_types(["text", "text", "bytea"])
                for row in zip(ids, hashes, encoded, strict=True):
                    copy.write_row(row)
            con.execute(
                "INSERT INTO vectors (corpus, doc_id, fingerprint, content_hash, dims, embedding) "
                "SELECT %s, doc_id, %s, content_hash, %s, embedding FROM vec_in "
                "ON CONFLICT (corpus, doc_id, fingerprint) DO UPDATE SET "
                "content_hash = excluded.content_hash, dims = excluded.dims, "
                "embedding = excluded.embedding",
                [corpus, fingerprint, dims],
            )
            # After the rows: building the graph over a batch beats inserting one by one.
            self._ensure_index(con, corpus, fingerprint, dims)
            self.bump_generation(con)

    def prune_vectors(self, corpus: str, live_ids: set[str]) -> int:
        with self._writing() as con:
            cur = con.execute(
                "DELETE FROM vectors WHERE corpus = %s AND NOT (doc_id = ANY(%s))",
                [corpus, sorted(live_ids)],
            )
            n = cur.rowcount
            if n:
                self.bump_generation(con)
        return n

    # -- vector search ------------------------------------------------------------------------

    def search_vectors(
        self,
        corpus: str,
        fingerprint: str,
        query_vec: np.ndarray,
        k: int,
        allow_ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` stored vectors by cosine to ``query_vec`` (unit vectors), descending,
        ties by id; only ``allow_ids`` when given, filtered in the ranking statement itself.

        The HNSW index is walked with pgvector's iterative scan, so a selective
        filter keeps the scan going instead of coming back short; when it still
        comes back short (the scan limit was reached), the allowed rows are
        ranked exactly. A short allow-list is ranked exactly from the start.
        """
        q = np.ascontiguousarray(query_vec, dtype=np.float32)
        if q.ndim != 1 or not np.all(np.isfinite(q)):
            raise StoreError("search_vectors: the query must be one finite vector")
        if k <= 0:
            return []
        allow = None if allow_ids is None else sorted(set(allow_ids))
        if allow is not None and not allow:
            return []
        dims = int(q.shape[0])
        fetch = k + max(k, _EXTRA)
        if dims > HNSW_MAX_DIMS or (allow is not None and len(allow) <= EXACT_ALLOW_MAX):
            return self._rescore(self._exact(corpus, fingerprint, q, fetch, allow), q, k)
        found = self._hnsw(corpus, fingerprint, q, dims, fetch, allow)
        if len(found) < fetch:
            # Short: fewer rows exist, or the scan limit cut a selective filter off.
            wanted = self._count(corpus, fingerprint, allow)
            if len(found) < min(fetch, wanted):
                log.debug("HNSW scan returned %d of %d; ranking exactly", len(found), wanted)
                found = self._exact(corpus, fingerprint, q, fetch, allow)
        return self._rescore(found, q, k)

    def _hnsw(
        self,
        corpus: str,
        fingerprint: str,
        q: np.ndarray,
        dims: int,
        fetch: int,
        allow: list[str] | None,
    ) -> list[tuple[str, bytes]]:
        # Literal corpus and fingerprint so the planner can match the partial index.
        where = pgsql.SQL("corpus = {} AND fingerprint = {}").format(
            pgsql.Literal(corpus), pgsql.Literal(fingerprint)
        )
        if allow is not None:
            where = pgsql.SQL("{} AND doc_id = ANY(%(allow)b)").format(where)
        # The index's own expression, or the planner does not use it.
        cast = pgsql.SQL("embedding::halfvec({})").format(pgsql.Literal(dims))
        stmt = pgsql.SQL(
            "SELECT doc_id, embedding FROM vectors WHERE {where} "
            "ORDER BY {cast} <=> %(q)s::halfvec({dims}) LIMIT %(fetch)s"
        ).format(where=where, cast=cast, dims=pgsql.Literal(dims))
        params: dict[str, Any] = {"q": _vector_text(q), "fetch": fetch}
        if allow is not None:
            params["allow"] = allow
        with self._raw(write=True) as con:
            _set_local(
                con,
                {
                    "hnsw.iterative_scan": "relaxed_order",
                    "hnsw.ef_search": str(min(1000, max(40, fetch))),
                    "hnsw.max_scan_tuples": str(_MAX_SCAN_TUPLES),
                },
            )
            with con.cursor(binary=True) as cur:
                rows = cur.execute(stmt, params, prepare=False).fetchall()
                return [(r[0], r[1]) for r in rows]

    def _exact(
        self,
        corpus: str,
        fingerprint: str,
        q: np.ndarray,
        fetch: int,
        allow: list[str] | None,
    ) -> list[tuple[str, bytes]]:
        # The uncast column matches no index expression: a plain, exact scan. The ids
        # travel as a binary array (see _BY_IDS).
        filtered = pgsql.SQL("AND doc_id = ANY(%(allow)b)" if allow is not None else "")
        stmt = pgsql.SQL(
            "SELECT doc_id, embedding FROM vectors WHERE corpus = %(c)s AND fingerprint = %(f)s "
            '{} ORDER BY embedding <=> %(q)s::vector, doc_id COLLATE "C" LIMIT %(fetch)s'
        ).format(filtered)
        params: dict[str, Any] = {"c": corpus, "f": fingerprint, "q": _vector_text(q)}
        params["fetch"] = fetch
        if allow is not None:
            params["allow"] = allow
        with self._raw(write=False) as con, con.cursor(binary=True) as cur:
            if allow is not None:
                _by_primary_key(con)
            rows = cur.execute(stmt, params, prepare=False).fetchall()
            return [(r[0], r[1]) for r in rows]

    def _count(self, corpus: str, fingerprint: str, allow: list[str] | None) -> int:
        stmt = "SELECT count(*) FROM vectors WHERE corpus = %s AND fingerprint = %s"
        params: list[Any] = [corpus, fingerprint]
        if allow is not None:
            stmt += " AND doc_id = ANY(%s)"
            params.append(allow)
        with self._raw(write=False) as con:
            row = con.execute(stmt, params).fetchone()
        return int(row[0]) if row else 0

    def search_vectors_where(
        self,
        corpus: str,
        fingerprint: str,
        query_vec: np.ndarray,
        k: int,
        *,
        join: str = "",
        where: str = "TRUE",
        params: Sequence[Any] = (),
        exact: bool = False,
        group: Callable[[str], str] | None = None,
        groups: int = 0,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` vectors of ``corpus`` (alias ``v``) passing a SQL condition, ranked like
        :meth:`search_vectors` (float32 cosines, best first, ties by id).

        A corpus that keeps its metadata in tables (the vault) filters with ``join`` (no
        placeholders) and ``where`` (``?`` placeholders bound to ``params``) instead of
        shipping a long allow-list. ``exact`` ranks every passing row (right when few
        pass); otherwise the HNSW index is walked with the iterative scan, the condition
        checked on each row it yields, and a short result is completed by exact ranking.

        ``group`` and ``groups``: the caller wants the best ``groups`` groups (a vault
        note is the group of its chunks), not ``k`` rows. Once ``groups`` distinct groups
        have appeared after ``n`` rows, the walk reads up to ``max(2n, n + _EXTRA,
        _GROUP_ROWS * groups)`` rows (never more than ``k`` asks for), for the float32
        re-scoring to repair the relaxed order of the walk. Walking the index past rows a
        filter rejects is what a filtered search costs, so rows not read count; fewer
        than that lost recall against brute force (docs/decisions.md).

        ``ids``: rank exactly the rows with these doc ids instead (``join`` and ``where``
        are then ignored): primary-key lookups of the passing rows only, for a caller that
        knows them (the vault's snapshot). 1.3-4 µs a row on 50k × 384 vectors (less when
        the rows are neighbours in the table), so ten thousand ids can still be cheaper
        than walking a graph past rejected rows (see :meth:`walk_pages_per_row`).
        """
        q = np.ascontiguousarray(query_vec, dtype=np.float32)
        if q.ndim != 1 or not np.all(np.isfinite(q)):
            raise StoreError("search_vectors_where: the query must be one finite vector")
        if k <= 0:
            return []
        fetch = k + max(k, _EXTRA)
        if ids is not None:
            if not ids:
                return []
            args = [corpus, fingerprint, list(ids), _vector_text(q), fetch]
            found = self._fetch_all(_BY_IDS, args, True)
            return self._rescore(found, q, k)
        exact = exact or q.shape[0] > HNSW_MAX_DIMS  # no index to walk
        stmt = _where_statement(corpus, fingerprint, int(q.shape[0]), join, where, hnsw=not exact)
        args = [*params, _vector_text(q), fetch]
        if exact:
            return self._rescore(self._fetch_all(stmt, args), q, k)
        found, complete = self._walk(stmt, args, fetch, group, groups)
        if not complete:
            # Fewer rows pass than asked for, or the scan limit cut the walk short:
            # ranking every passing row settles both.
            exact_stmt = _where_statement(
                corpus, fingerprint, int(q.shape[0]), join, where, hnsw=False
            )
            found = self._fetch_all(exact_stmt, args)
        return self._rescore(found, q, k)

    def walk_pages_per_row(
        self, corpus: str, fingerprint: str, probe_ids: Sequence[str]
    ) -> float | None:
        """How many buffer pages the HNSW index of ``corpus`` touches per row it yields: the
        work of walking it, which depends on the data (vectors without neighbourhoods cost
        ~4x more per row) and not on the machine's load, so a caller can decide between a
        walk and an exact ranking deterministically.

        Walks the index unfiltered from the stored vectors of ``probe_ids`` (the first
        ``_PROBE_ROWS`` rows each, as a search's first batch) under ``EXPLAIN (ANALYZE,
        BUFFERS)``. None when there is no index to walk or no probe vector is stored.
        """
        with self._raw(write=False) as con, con.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT embedding FROM vectors WHERE corpus = %s AND fingerprint = %s "
                'AND doc_id = ANY(%b) ORDER BY doc_id COLLATE "C"',
                [corpus, fingerprint, list(probe_ids)],
                prepare=False,
            ).fetchall()
            if not rows:
                return None
            probes = _decode_vectors([r[0] for r in rows])
            dims = int(probes.shape[1])
            if dims > HNSW_MAX_DIMS:
                return None
            _set_local(
                con,
                {
                    "hnsw.iterative_scan": "relaxed_order",
                    "hnsw.ef_search": str(_PROBE_ROWS),
                    "hnsw.max_scan_tuples": str(_MAX_SCAN_TUPLES),
                    "enable_sort": "off",  # as the walks it stands for: the index, always
                    "jit": "off",
                },
            )
            stmt = _where_statement(corpus, fingerprint, dims, "", "TRUE", hnsw=True)
            pages = walked = 0
            for q in probes:
                plan = con.execute(
                    "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) " + translate(stmt),
                    [_vector_text(q), _PROBE_ROWS],
                    prepare=False,
                ).fetchone()
                node = _index_node(plan[0][0]["Plan"] if plan else {})
                if node is None:  # no HNSW index (or the planner would not use it)
                    return None
                pages += int(node.get("Shared Hit Blocks", 0)) + int(
                    node.get("Shared Read Blocks", 0)
                )
                walked += int(node.get("Actual Rows", 0))
        return pages / walked if walked else None

    def _fetch_all(
        self, stmt: str, args: list[Any], by_ids: bool = False
    ) -> list[tuple[str, bytes]]:
        """Every row of an exact ranking statement: ``?`` placeholders, or (``by_ids``) the
        psycopg ones of :data:`_BY_IDS`, run as primary-key lookups."""
        with self._raw(write=False) as con, con.cursor(binary=True) as cur:
            if by_ids:
                _by_primary_key(con)
            else:
                stmt = translate(stmt)
            rows = cur.execute(stmt, args, prepare=False).fetchall()
        return [(r[0], r[1]) for r in rows]

    def _walk(
        self,
        stmt: str,
        args: list[Any],
        fetch: int,
        group: Callable[[str], str] | None,
        groups: int,
    ) -> tuple[list[tuple[str, bytes]], bool]:
        """Rows of an HNSW statement, read in steps until enough; and whether they are."""
        found: list[tuple[str, bytes]] = []
        with self._raw(write=False) as con:
            # The first batch of the walk: about the rows that will be read (one search
            # beats many small continuations), at least pgvector's default.
            expect = fetch if group is None or groups <= 0 else _GROUP_ROWS * groups
            _set_local(
                con,
                {
                    "hnsw.iterative_scan": "relaxed_order",
                    "hnsw.ef_search": str(min(1000, max(40, min(fetch, expect)))),
                    "hnsw.max_scan_tuples": str(_MAX_SCAN_TUPLES),
                    # Walk the index and check each row it yields; never filter every row
                    # first and sort them (a caller asking for the walk knows the filter is
                    # broad).
                    "enable_sort": "off",
                },
            )
            with con.cursor(name="vectors_walk", binary=True) as cur:
                cur.execute(translate(stmt), args)
                if group is None or groups <= 0:
                    found = [(r[0], r[1]) for r in cur.fetchall()]
                    return found, len(found) >= fetch
                # At least _GROUP_ROWS * groups rows are read whatever the walk finds, and
                # after m rows without `groups` groups, at least 2(m + 1): each batch asks
                # for no more than will be read in any case, in few round trips.
                seen: set[str] = set()
                known = False
                enough = min(fetch, _GROUP_ROWS * groups)
                while len(found) < enough:
                    want = enough - len(found)
                    rows = cur.fetchmany(want)
                    for r in rows:
                        found.append((r[0], r[1]))
                        if not known:
                            seen.add(group(r[0]))
                            if len(seen) == groups:
                                known = True
                                n = len(found)
                                enough = min(fetch, max(2 * n, n + _EXTRA, _GROUP_ROWS * groups))
                    if len(rows) < want:
                        return found, len(found) >= enough
                    if not known:
                        enough = min(fetch, max(enough, 2 * len(found)))
        return found, True

    @staticmethod
    def _rescore(found: list[tuple[str, bytes]], q: np.ndarray, k: int) -> list[tuple[str, float]]:
        """float32 cosines, best first, ties by id: the same numbers as VectorIndex."""
        if not found:
            return []
        matrix = _decode_vectors([v for _, v in found])
        if matrix.shape[1] != q.shape[0]:
            raise StoreError(
                f"stored vectors have {matrix.shape[1]} dimensions, the query {q.shape[0]}"
            )
        scores = (matrix @ q).tolist()
        ranked = sorted(
            zip((i for i, _ in found), scores, strict=True), key=lambda r: (-r[1], r[0])
        )
        return [(i, float(s)) for i, s in ranked[:k]]

    def _ensure_index(self, con: psycopg.Connection[Any], corpus: str, fp: str, dims: int) -> None:
        name = _index_name(corpus, fp, dims)
        with self._index_lock:
            if name in self._indexed:
                return
        if dims > HNSW_MAX_DIMS:
            log.info(
                "%s vectors (%s) have %d dimensions, more than pgvector's HNSW indexes take "
                "(%d): they are ranked exactly",
                corpus,
                fp,
                dims,
                HNSW_MAX_DIMS,
            )
            with self._index_lock:
                self._indexed.add(name)
            return
        exists = con.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [name]).fetchone()
        if not exists:
            log.info("building the HNSW index of %s vectors (%s)", corpus, fp)
            # The graph of tens of thousands of vectors outgrows the 64 MB default,
            # and a build that spills is many times slower.
            con.execute("SET LOCAL maintenance_work_mem = '512MB'")
            # Half precision: a graph of half the size, walked with a fifth to a third
            # less CPU on vectors without neighbourhoods (docs/postgres.md), and HNSW
            # takes halfvec up to 4,000 dimensions (vector: 2,000). Candidates are
            # re-scored from the float32 column.
            con.execute(
                pgsql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON vectors USING hnsw "
                    "((embedding::halfvec({})) halfvec_cosine_ops) "
                    "WHERE corpus = {} AND fingerprint = {}"
                ).format(
                    pgsql.Identifier(name),
                    pgsql.Literal(dims),
                    pgsql.Literal(corpus),
                    pgsql.Literal(fp),
                )
            )
        with self._index_lock:
            self._indexed.add(name)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break


# -- helpers --------------------------------------------------------------------------------------


def _by_primary_key(con: psycopg.Connection[Any]) -> None:
    """Make the transaction's exact ranking by id look the rows up by primary key.

    With a fifth of the rows wanted the planner prefers one sequential scan of the whole
    table, costing the lookups as random reads; but its 1.6 KB rows (384 float32s) mostly
    do not fit in shared buffers beside the index, while the wanted ones are few pages
    (a note's chunks are neighbours): 10,000 of 50,000 ids took 58 ms scanned, 13 ms
    looked up. JIT compiling the distance expression is never worth it for one search.
    """
    _set_local(con, {"enable_seqscan": "off", "enable_bitmapscan": "off", "jit": "off"})


def _set_local(con: psycopg.Connection[Any], settings: dict[str, str]) -> None:
    """``SET LOCAL`` every setting (until the transaction ends) in one round trip."""
    calls = ", ".join("set_config(%s, %s, true)" for _ in settings)
    con.execute(f"SELECT {calls}", [x for kv in settings.items() for x in kv])  # noqa: S608
