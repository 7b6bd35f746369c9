"""What both SQL backends share: one implementation over :meth:`Store.connect`.

DuckDB and PostgreSQL run the same statements here (``?`` placeholders, which the
PostgreSQL connection translates). The one dialect difference these statements meet is
ordering: PostgreSQL sorts text by the database's collation, so its ``ORDER BY`` of
text names ``COLLATE "C"`` (code point order, which DuckDB gives by default).
Each backend keeps what really differs: connections and locking, the generation
counter, bulk loading, the vector column's type and vector search.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np

from layersearch.errors import ConfigError, NotFound, StoreError
from layersearch.semantic.model import Datasource, EdgeRecord, Entity
from layersearch.store import migrations
from layersearch.store.base import (
    ENTITY_COLUMNS,
    Store,
    datasource_from_row,
    edge_from_row,
    entity_from_row,
    memory_from_row,
)
from layersearch.textcheck import check_id, json_text
from layersearch.types import Memory

__all__ = ["SQLStore", "VectorRows", "memory_number", "bulk_shape", "migrate_schema"]

#: the memory row's columns, in the order :func:`memory_from_row` reads them
MEMORY_SELECT = (
    "SELECT id, learning, description, entities, query, created_at FROM memories ORDER BY id"
)


class VectorRows(NamedTuple):
    """Vectors to write: doc ids, their content hashes, and a C-contiguous float32 matrix
    with one row each (never empty)."""

    ids: list[str]
    hashes: list[str]
    matrix: np.ndarray


def memory_number(memory_id: str) -> int:
    """``memory:12`` → 12; anything else is a clear error."""
    if not isinstance(memory_id, str):
        raise ConfigError(f"a memory id is a string like memory:3, not {type(memory_id).__name__}")
    check_id(memory_id, "memory id")
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


def bulk_shape(table: str, columns: dict[str, list[Any]]) -> tuple[list[str], int]:
    """The checked column names of a bulk insert and its row count (columns of
    different lengths are an error)."""
    names = [_identifier(c) for c in columns]
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise StoreError(f"bulk insert into {table}: columns of different lengths")
    return names, lengths.pop() if lengths else 0


def memory_json(entities: list[str], query: dict[str, Any] | None) -> tuple[str, str | None]:
    """A memory's entities and query as the store keeps them (JSON text)."""
    return (
        json_text(entities, "memory entities"),
        json_text(query, "memory query", sort_keys=True) if query is not None else None,
    )


def new_memory(
    number: int,
    item: tuple[str, str | None, list[str], dict[str, Any] | None],
    created: datetime,
) -> Memory:
    """The :class:`Memory` a write of ``item`` (learning, description, entities, query)
    saved as row ``number``."""
    learning, description, entities, query = item
    return Memory(
        id=f"memory:{number}",
        learning=learning,
        description=description,
        entities=entities,
        query=query,
        created_at=created,
    )


def migrate_schema(
    con: Any,
    location: str,
    statements: list[list[str]],
    *,
    run: Callable[[str], Any] | None = None,
    before: Callable[[int], None] | None = None,
) -> None:
    """Apply the versions of ``statements`` that ``con``'s store lacks, in its transaction
    (``?`` placeholders); ``run`` executes one migration statement, ``before`` is called
    with each version before its statements. A store newer than this code is refused."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_version "
        "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)"
    )
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    current = int(row[0]) if row and row[0] is not None else 0
    if current > migrations.LATEST:
        raise StoreError(
            f"store {location} has schema version {current}, newer than this layersearch "
            f"({migrations.LATEST}): upgrade layersearch"
        )
    for version in range(current + 1, migrations.LATEST + 1):
        if before is not None:
            before(version)
        for stmt in statements[version - 1]:
            (run or con.execute)(stmt)
        con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, datetime.now(UTC)])
    con.execute("INSERT INTO meta VALUES ('generation', '0') ON CONFLICT (key) DO NOTHING")


def _placeholders(n: int) -> str:
    """``?, ?, …``: n bound parameters."""
    return ", ".join("?" * n)


#: the most kinds one listing takes (its statement has this many ``kind IN`` slots)
LIST_KINDS = 3
_LIST_WHERE = (
    "WHERE kind IN (?, ?, ?) AND NOT hidden "
    "AND (CAST(? AS TEXT) IS NULL OR datasource = ?) AND (CAST(? AS TEXT) IS NULL OR model = ?)"
)
#: how many visible entities of up to 3 kinds (a datasource and model name, or nulls)
COUNT_ENTITIES = "SELECT count(*) FROM entities " + _LIST_WHERE  # noqa: S608 - constants
_EDGE_COLUMNS = "SELECT src, dst, type, props FROM edges WHERE type = 'JOINS' "


# The statements below format only code (the ordering a backend states); values are bound.


def _list_entities(order: str) -> str:
    """A page of :data:`COUNT_ENTITIES`' rows, ordered by ``order``."""
    head = "SELECT " + ENTITY_COLUMNS + " FROM entities " + _LIST_WHERE  # noqa: S608
    return head + " ORDER BY " + order + " LIMIT ? OFFSET ?"


def _joins_to(order: str) -> str:
    return _EDGE_COLUMNS + "AND dst = ? ORDER BY " + order


class SQLStore(Store):
    """The reads and writes that differ between the backends by dialect only.

    The statements that order text are class attributes: a backend whose text does not
    sort by code point (PostgreSQL) states its own, with ``COLLATE "C"``."""

    #: the entities, ordered by id (:func:`entity_from_row`'s columns)
    SELECT_ENTITIES = (
        "SELECT id, kind, name, datasource, model, label, description, data_type, formula, "
        "hidden, primary_key, sample_values, physical FROM entities ORDER BY id"
    )
    SELECT_EDGES = "SELECT src, dst, type, props FROM edges ORDER BY type, src, dst"
    SELECT_DATASOURCES = (
        "SELECT name, label, description, dialect, source FROM datasources ORDER BY name"
    )
    SELECT_FINGERPRINTS = "SELECT DISTINCT fingerprint FROM vectors WHERE corpus = ? ORDER BY 1"
    LIST_ENTITIES = _list_entities("id")
    SELECT_JOINS_TO = _joins_to("src")

    # -- semantic layer -----------------------------------------------------------------------

    def load_entities(self) -> list[Entity]:
        with self.connect(write=False) as con:
            rows = con.execute(self.SELECT_ENTITIES).fetchall()
        return [entity_from_row(r) for r in rows]

    def load_edges(self) -> list[EdgeRecord]:
        with self.connect(write=False) as con:
            rows = con.execute(self.SELECT_EDGES).fetchall()
        return [edge_from_row(r) for r in rows]

    def load_datasources(self) -> list[Datasource]:
        with self.connect(write=False) as con:
            rows = con.execute(self.SELECT_DATASOURCES).fetchall()
        return [datasource_from_row(r) for r in rows]

    def physical_names(self, ids: Sequence[str]) -> dict[str, str]:
        """The physical names (table or relation, column expression) of ``ids`` that have one."""
        found: dict[str, str] = {}
        unique = sorted(set(ids))
        with self.connect(write=False) as con:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = _placeholders(len(chunk))
                rows = con.execute(
                    f"SELECT id, physical FROM entities WHERE physical IS NOT NULL AND id IN ({marks})",  # noqa: S608 - placeholders only
                    chunk,
                ).fetchall()
                found.update({r[0]: r[1] for r in rows})
        return found

    def list_entities(
        self,
        kinds: Sequence[str],
        *,
        datasource: str | None = None,
        model: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[Entity], int]:
        """Visible entities of ``kinds`` (1 to 3; of one datasource and model name), sorted
        by id: the page at ``offset`` and how many match in all."""
        if not 1 <= len(kinds) <= LIST_KINDS:
            raise StoreError(f"list_entities takes 1 to {LIST_KINDS} kinds, got {len(kinds)}")
        padded = [*kinds, *[kinds[-1]] * (LIST_KINDS - len(kinds))]
        args = [*padded, datasource, datasource, model, model]
        with self.connect(write=False) as con:
            row = con.execute(COUNT_ENTITIES, args).fetchone()
            rows = con.execute(self.LIST_ENTITIES, [*args, limit, offset]).fetchall()
        return [entity_from_row(r) for r in rows], int(row[0]) if row else 0

    def joins_to(self, model_id: str) -> list[EdgeRecord]:
        """The JOINS edges other models declare to ``model_id``."""
        with self.connect(write=False) as con:
            rows = con.execute(self.SELECT_JOINS_TO, [model_id]).fetchall()
        return [edge_from_row(r) for r in rows]

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
            row = con.execute(
                "INSERT INTO memories VALUES (nextval('memory_ids'), ?, ?, ?, ?, ?) RETURNING id",
                [learning, description, *memory_json(entities, query), created],
            ).fetchone()
            assert row is not None
            number = int(row[0])
            gen = self.bump_generation(con)
        self.publish_generation(gen)
        return new_memory(number, (learning, description, entities, query), created)

    def load_memories(self) -> list[Memory]:
        with self.connect(write=False) as con:
            rows = con.execute(MEMORY_SELECT).fetchall()
        return [memory_from_row(r) for r in rows]

    def delete_memory(self, memory_id: str) -> bool:
        number = memory_number(memory_id)
        with self.connect(write=True) as con:
            gone = con.execute("DELETE FROM memories WHERE id = ? RETURNING id", [number])
            if not gone.fetchall():
                raise NotFound(f"no memory {memory_id}: `layersearch memory list` shows the ids")
            gen = self.bump_generation(con)
        self.publish_generation(gen)
        return True

    # -- vectors ------------------------------------------------------------------------------

    def vector_fingerprints(self, corpus: str) -> list[str]:
        with self.connect(write=False) as con:
            rows = con.execute(self.SELECT_FINGERPRINTS, [corpus]).fetchall()
        return [r[0] for r in rows]

    def vector_hashes(self, corpus: str, fingerprint: str) -> dict[str, str]:
        with self.connect(write=False) as con:
            rows = con.execute(
                "SELECT doc_id, content_hash FROM vectors WHERE corpus = ? AND fingerprint = ?",
                [corpus, fingerprint],
            ).fetchall()
        return {r[0]: r[1] for r in rows}

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
        self._write_vectors(corpus, fingerprint, VectorRows(ids, hashes, m))

    @abstractmethod
    def _write_vectors(self, corpus: str, fingerprint: str, rows: VectorRows) -> None:
        """:meth:`upsert_vectors` of a batch that is not empty, in one write transaction."""
