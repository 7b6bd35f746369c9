"""The one store interface every backend implements.

The store is the source of truth; search indexes (tantivy, vectors in memory)
are derived from it. Every write bumps a ``generation`` counter in the same
transaction and mirrors it to a small file beside the store, so that readers
(this process or another) can tell cheaply whether their snapshot is current.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any

import numpy as np

from layersearch.errors import StoreError
from layersearch.semantic.edges import catalog_edges
from layersearch.semantic.model import Catalog, Datasource, EdgeRecord, Entity
from layersearch.textcheck import json_text
from layersearch.types import Memory

__all__ = ["Store", "catalog_rows"]


class Store(ABC):
    """Corpora that own tables (conversations, vault) run SQL through :meth:`connect`:
    ``con.execute(sql, params)`` with ``?`` placeholders and values always bound,
    never formatted into the text; both backends accept the same statements
    (DuckDB and PostgreSQL share ILIKE, ``||``, ON CONFLICT, JSON as text)."""

    #: where derived indexes live (a directory beside the store)
    index_dir: Any
    location: str
    #: "duckdb" or "postgres", for the rare statement that differs
    dialect: str

    @abstractmethod
    def connect(self, *, write: bool) -> AbstractContextManager[Any]:
        """A connection for one operation; a write connection is one transaction."""

    def pinned(self) -> AbstractContextManager[None]:
        """While held, the reads made share one opened store where a store is opened per
        read (DuckDB's file); a write may still run. Elsewhere it does nothing."""
        return nullcontext()

    @abstractmethod
    def bulk_insert(self, con: Any, table: str, columns: dict[str, list[Any]]) -> int:
        """Insert many rows fast inside ``con``'s transaction; column name → values."""

    @abstractmethod
    def bump_generation(self, con: Any) -> int:
        """Advance the write counter inside ``con``'s transaction (call once per write)."""

    @abstractmethod
    def publish_generation(self, gen: int) -> None:
        """After commit: make the new generation visible to other readers."""

    @abstractmethod
    def generation(self) -> int:
        """The store's write counter, read cheaply (a file) when possible."""

    # -- semantic layer -----------------------------------------------------------------------

    def replace_datasources(self, catalog: Catalog, names: list[str]) -> int:
        """Replace everything of datasources ``names`` by what ``catalog`` holds, in one
        transaction; returns the entity count."""
        ents, edges = catalog_rows(catalog, names)
        return self.replace_rows(catalog, names, ents, edges)[0]

    def replace_rows(
        self, catalog: Catalog, names: list[str], ents: list[Entity], edges: list[EdgeRecord]
    ) -> tuple[int, int]:
        """:meth:`replace_datasources` with the rows already drawn from ``catalog`` (by
        :func:`catalog_rows`), so that a caller building its snapshot from the same rows
        draws them once; returns the entity count and the generation this write made."""
        ds_rows = {d.name: d for d in catalog.datasources}
        with self.connect(write=True) as con:
            for name in names:
                con.execute("DELETE FROM entities WHERE datasource = ?", [name])
                con.execute("DELETE FROM edges WHERE datasource = ?", [name])
                con.execute("DELETE FROM datasources WHERE name = ?", [name])
                d = ds_rows.get(name)
                row = [name, d and d.label, d and d.description, d and d.dialect, d and d.source]
                con.execute("INSERT INTO datasources VALUES (?, ?, ?, ?, ?)", row)
            self.bulk_insert(con, "entities", entity_columns(ents))
            self.bulk_insert(con, "edges", edge_columns(edges))
            gen = self.bump_generation(con)
        self.publish_generation(gen)
        return len(ents), gen

    def entity_vector_coverage(self, corpus: str, fingerprint: str) -> tuple[int, int]:
        """(visible entities and memories with a vector from ``fingerprint`` in ``corpus``,
        visible entities and memories): what the dense channel ranks against what it should."""
        with self.connect(write=False) as con:
            row = con.execute(
                "SELECT (SELECT count(*) FROM vectors v WHERE v.corpus = ? AND v.fingerprint = ? "
                "AND (v.doc_id IN (SELECT id FROM entities WHERE NOT hidden) OR v.doc_id IN "
                "(SELECT 'memory:' || CAST(id AS VARCHAR) FROM memories))), "
                "(SELECT count(*) FROM entities WHERE NOT hidden) + "
                "(SELECT count(*) FROM memories)",
                [corpus, fingerprint],
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    @abstractmethod
    def load_entities(self) -> list[Entity]: ...

    @abstractmethod
    def load_edges(self) -> list[EdgeRecord]: ...

    @abstractmethod
    def load_datasources(self) -> list[Datasource]: ...

    @abstractmethod
    def list_entities(
        self,
        kinds: Sequence[str],
        *,
        datasource: str | None = None,
        model: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[Entity], int]:
        """A page of visible entities of ``kinds`` sorted by id, and how many match."""

    @abstractmethod
    def joins_to(self, model_id: str) -> list[EdgeRecord]:
        """The JOINS edges other models declare to ``model_id``."""

    @abstractmethod
    def physical_names(self, ids: Sequence[str]) -> dict[str, str]:
        """``id → physical name`` for the ``ids`` whose layer states one."""

    def iter_entities(self, batch: int = 20_000) -> Iterator[list[Entity]]:
        """The entities in batches, ordered by id where the backend can (code point order);
        a backend that streams them spares the caller holding all of them at once."""
        yield self.load_entities()

    def iter_edges(self, batch: int = 20_000) -> Iterator[list[EdgeRecord]]:
        """The edges in batches, ordered by source where the backend can."""
        yield self.load_edges()

    def stored_generation(self) -> int:
        """The write counter from the database itself (``generation`` may lag it a moment)."""
        return self.generation()

    # -- memories -----------------------------------------------------------------------------

    @abstractmethod
    def add_memory(
        self,
        learning: str,
        description: str | None,
        entities: list[str],
        query: dict[str, Any] | None,
    ) -> Memory: ...

    def add_memories(
        self, items: list[tuple[str, str | None, list[str], dict[str, Any] | None]]
    ) -> list[Memory]:
        """Save many memories (learning, description, entities, query); backends batch this."""
        return [self.add_memory(*item) for item in items]

    def add_memories_at(
        self, items: list[tuple[str, str | None, list[str], dict[str, Any] | None]]
    ) -> tuple[list[Memory], int | None]:
        """:meth:`add_memories`, and the generation of its one write transaction (None when
        the backend took several, or none for an empty list)."""
        return self.add_memories(items), None

    @abstractmethod
    def load_memories(self) -> list[Memory]: ...

    def load_memories_at(self) -> tuple[int, list[Memory]]:
        """The memories and the generation they belong to, read together (a write landing
        in between is never half in a snapshot). Backends read both in one transaction."""
        for _ in range(100):
            before = self.stored_generation()
            memories = self.load_memories()
            if self.stored_generation() == before:
                return before, memories
        raise StoreError("the store kept changing while its memories were read; try again")

    @abstractmethod
    def delete_memory(self, memory_id: str) -> bool: ...

    # -- vectors ------------------------------------------------------------------------------

    @abstractmethod
    def vector_fingerprints(self, corpus: str) -> list[str]:
        """Fingerprint keys that have vectors stored for ``corpus``."""

    @abstractmethod
    def vector_hashes(self, corpus: str, fingerprint: str) -> dict[str, str]:
        """doc id → content hash of its stored vector, for one model."""

    @abstractmethod
    def load_vectors(self, corpus: str, fingerprint: str) -> tuple[list[str], np.ndarray]:
        """Ids (sorted) and their float32 vectors, for one model."""

    @abstractmethod
    def upsert_vectors(
        self,
        corpus: str,
        fingerprint: str,
        ids: list[str],
        hashes: list[str],
        matrix: np.ndarray,
    ) -> None:
        """Insert or replace vectors; committed at once (an interrupted run keeps them)."""

    @abstractmethod
    def prune_vectors(self, corpus: str, live_ids: set[str]) -> int:
        """Delete vectors (of any model) whose document no longer exists; how many."""

    @abstractmethod
    def close(self) -> None: ...


# -- rows ↔ objects, shared by every backend --------------------------------------------------

ENTITY_COLUMNS = (
    "id, kind, name, datasource, model, label, description, data_type, formula, "
    "hidden, primary_key, sample_values, physical"
)


def catalog_rows(catalog: Catalog, names: list[str]) -> tuple[list[Entity], list[EdgeRecord]]:
    """The entities and edges of datasources ``names`` in ``catalog``, as a store keeps them."""
    wanted = set(names)
    ents = [e for e in catalog.entities() if e.datasource in wanted]
    edges = [e for e in catalog_edges(catalog) if e.src.split(".", 1)[0] in wanted]
    return ents, edges


def entity_columns(ents: list[Entity]) -> dict[str, list[Any]]:
    return {
        "id": [e.id for e in ents],
        "kind": [e.kind for e in ents],
        "name": [e.name for e in ents],
        "datasource": [e.datasource for e in ents],
        "model": [e.model for e in ents],
        "label": [e.label for e in ents],
        "description": [e.description for e in ents],
        "data_type": [e.data_type for e in ents],
        "formula": [e.formula for e in ents],
        "hidden": [bool(e.hidden) for e in ents],
        "primary_key": [bool(e.primary_key) for e in ents],
        "sample_values": [
            json_text(list(e.values), f"{e.id} sample values") if e.values else None for e in ents
        ],
        "physical": [e.physical for e in ents],
    }


def edge_columns(edges: list[EdgeRecord]) -> dict[str, list[Any]]:
    return {
        "src": [e.src for e in edges],
        "dst": [e.dst for e in edges],
        "type": [e.type for e in edges],
        "datasource": [e.src.split(".", 1)[0] for e in edges],
        "props": [
            json_text(e.props, f"{e.src} edge", sort_keys=True) if e.props else None for e in edges
        ],
    }


def entity_from_row(r: Sequence[Any]) -> Entity:
    return Entity(
        id=r[0],
        kind=r[1],
        name=r[2],
        datasource=r[3],
        model=r[4],
        label=r[5],
        description=r[6],
        data_type=r[7],
        formula=r[8],
        hidden=bool(r[9]),
        primary_key=bool(r[10]),
        values=tuple(json.loads(r[11])) if r[11] else (),
        physical=r[12],
    )


def edge_from_row(r: Sequence[Any]) -> EdgeRecord:
    return EdgeRecord(r[0], r[1], r[2], json.loads(r[3]) if r[3] else {})


def datasource_from_row(r: Sequence[Any]) -> Datasource:
    return Datasource(name=r[0], label=r[1], description=r[2], dialect=r[3], source=r[4])


def memory_from_row(r: Sequence[Any]) -> Memory:
    """(id number, learning, description, entities JSON, query JSON, created_at)."""
    entities = json.loads(r[3])
    query = json.loads(r[4]) if r[4] else None
    fields = {
        "id": f"memory:{r[0]}",
        "learning": r[1],
        "description": r[2],
        "entities": entities,
        "query": query,
        "created_at": r[5],
    }
    # Rows were validated when saved; re-validating 10k of them is most of a reopen. Only
    # a row that does not have the exact types (a hand-edited store) goes through pydantic.
    if (
        isinstance(r[1], str)
        and (r[2] is None or isinstance(r[2], str))
        and isinstance(entities, list)
        and all(isinstance(t, str) for t in entities)
        and (query is None or isinstance(query, dict))
        and isinstance(r[5], datetime)
    ):
        return Memory.model_construct(**fields)
    return Memory(**fields)
