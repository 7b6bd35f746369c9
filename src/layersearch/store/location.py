"""Where a store lives: the location from the argument or LAYERSEARCH_STORE, and the
store that opens it (DuckDB file, or PostgreSQL with the [postgres] extra)."""

from __future__ import annotations

import os
from pathlib import Path

from layersearch.errors import ConfigError
from layersearch.store.base import Store
from layersearch.store.duckdb import DuckDBStore

__all__ = ["DEFAULT_STORE", "open_store", "resolve_store_location", "store_missing"]

DEFAULT_STORE = "./.layersearch/store.duckdb"


def resolve_store_location(store: str | os.PathLike[str] | None) -> str:
    if store is None:
        store = os.environ.get("LAYERSEARCH_STORE") or DEFAULT_STORE
    return str(store)


def store_missing(location: str) -> bool:
    """Whether ``location`` names a DuckDB file that does not exist (yet)."""
    return "://" not in location and location != ":memory:" and not Path(location).exists()


def open_store(location: str, *, create: bool = True) -> Store:
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from layersearch.store.postgres import PostgresStore  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "PostgreSQL stores need the [postgres] extra: pip install 'layersearch[postgres]'"
            ) from exc
        return PostgresStore(location)  # type: ignore[no-any-return]
    return DuckDBStore(location, create=create)
