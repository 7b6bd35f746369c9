"""Both stores run one implementation of what differs between them by dialect only."""

from __future__ import annotations

import pytest

from layersearch.store.duckdb import DuckDBStore
from layersearch.store.sql import SQLStore

SHARED = (
    "load_entities",
    "load_edges",
    "load_datasources",
    "add_memory",
    "load_memories",
    "delete_memory",
    "vector_fingerprints",
    "vector_hashes",
    "upsert_vectors",
)


@pytest.mark.parametrize(
    "backend", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_backends_inherit_the_shared_sql(backend: str) -> None:
    if backend == "postgres":
        pytest.importorskip("psycopg")
        from layersearch.store.postgres import PostgresStore as store_class
    else:
        store_class = DuckDBStore  # type: ignore[assignment]
    twins = [name for name in SHARED if getattr(store_class, name) is not getattr(SQLStore, name)]
    assert not twins, f"{store_class.__name__} defines its own {twins}: extend store/sql.py instead"


def test_postgres_orders_text_by_code_point() -> None:
    pytest.importorskip("psycopg")
    from layersearch.store.postgres import PostgresStore

    for name in ("SELECT_ENTITIES", "SELECT_EDGES", "SELECT_DATASOURCES", "SELECT_FINGERPRINTS"):
        assert 'COLLATE "C"' in getattr(PostgresStore, name), name
        assert "COLLATE" not in getattr(DuckDBStore, name), name
