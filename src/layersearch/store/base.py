"""The one store interface every backend implements.

The store is the source of truth; search indexes (tantivy, vectors in memory)
are derived from it. Every write bumps a ``generation`` counter in the same
transaction and mirrors it to a small file beside the store, so that readers
(this process or another) can tell cheaply whether their snapshot is current.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from layersearch.semantic.model import Catalog, Datasource, EdgeRecord, Entity
from layersearch.types import Memory

__all__ = ["Store"]


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

    @abstractmethod
    def replace_datasources(self, catalog: Catalog, names: list[str]) -> int:
        """Replace everything of datasources ``names`` by what ``catalog`` holds; entity count."""

    @abstractmethod
    def load_entities(self) -> list[Entity]: ...

    @abstractmethod
    def load_edges(self) -> list[EdgeRecord]: ...

    @abstractmethod
    def load_datasources(self) -> list[Datasource]: ...

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

    @abstractmethod
    def load_memories(self) -> list[Memory]: ...

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
