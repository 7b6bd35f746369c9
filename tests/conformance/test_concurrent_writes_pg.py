"""Writers of every kind beside searches on PostgreSQL, and several processes writing the
same things at once: no write fails, every confirmed one is there afterwards (the DuckDB
side of these is tests/reliability/test_concurrent_writes.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from layersearch import Layersearch
from tests.reliability import mixed_writes
from tests.support import MINI, cli_env

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_processes_writing_the_same_at_once(tmp_path: Path, pg_database: Callable[[], str]) -> None:
    # Before: concurrent loads failed on a duplicate key, concurrent first embeds on a
    # deadlock (each building the vector index the other's rows held), concurrent vault
    # indexes on a duplicate key: 6 of 18 writes in two rounds failed.
    env = cli_env() | {"LAYERSEARCH_INDEX_DIR": str(tmp_path / "indexes")}
    outcomes = mixed_writes.race(pg_database(), env)
    assert all(o.endswith(": ok") for o in outcomes), outcomes


def test_every_kind_of_write_beside_searching_threads(
    tmp_path: Path, pg_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYERSEARCH_INDEX_DIR", str(tmp_path / "indexes"))
    location = pg_database()
    with Layersearch(location, embedder="fake") as ls:
        ls.load(MINI)
        ledger = mixed_writes.run(ls, 4.0, tmp_path)
    assert not ledger.failures, "\n\n".join(ledger.failures[:3])
    assert set(ledger.writes) == set(mixed_writes.WRITERS), ledger.summary()
    mixed_writes.check(location, ledger)
