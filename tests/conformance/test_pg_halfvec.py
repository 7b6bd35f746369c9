"""PostgreSQL's HNSW indexes are halfvec: the ranking statements use them, scores stay
float32, vectors wider than ``vector`` HNSW allows are indexed, wider still ranked exactly,
and stores made with the older ``vector`` indexes are migrated."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from layersearch.api import open_store
from layersearch.ranking.vector import VectorIndex
from layersearch.store import migrations

pytestmark = pytest.mark.postgres


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    m = rng.standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _indexes(store: Any) -> dict[str, str]:
    with store.connect(write=False) as con:
        rows = con.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'vectors' "
            "AND indexname LIKE 'vectors!_hnsw%' ESCAPE '!'"
        ).fetchall()
    return {r[0]: r[1] for r in rows}


def _plan(store: Any, stmt: str, params: list[Any]) -> str:
    with store.connect(write=False) as con:
        # A few rows: force the planner's hand, it must still be able to use the index.
        con.execute("SET LOCAL enable_seqscan = off")
        con.execute("SET LOCAL enable_sort = off")
        rows = con.execute("EXPLAIN " + stmt, params).fetchall()
    return "\n".join(r[0] for r in rows)


@pytest.fixture
def pg_store(location_for: Callable[[str], str]) -> Any:
    store = open_store(location_for("postgres"))
    yield store
    store.close()


def test_ranking_statements_walk_the_halfvec_index(pg_store: Any) -> None:
    from layersearch.store import postgres

    rng = np.random.default_rng(5)
    ids = [f"d{i:04d}" for i in range(400)]
    m = _unit(rng, 400, 48)
    pg_store.upsert_vectors("c", "fp", ids, ["h"] * 400, m)
    (name, definition), *others = _indexes(pg_store).items()
    assert not others and name.startswith("vectors_hnswh_")
    assert "halfvec(48)" in definition and "halfvec_cosine_ops" in definition
    q = _unit(rng, 1, 48)[0]
    stmt = postgres._where_statement("c", "fp", 48, "", "v.doc_id <> ?", hnsw=True)
    assert name in _plan(pg_store, stmt, ["d0001", postgres._vector_text(q), 10])
    exact = postgres._where_statement("c", "fp", 48, "", "TRUE", hnsw=False)
    assert name not in _plan(pg_store, exact, [postgres._vector_text(q), 10])
    # Scores are the float32 cosines of the stored vectors, not half-precision ones.
    got = pg_store.search_vectors("c", "fp", q, 10)
    assert got == VectorIndex(ids, m, mode="exact").search(q, 10)
    walked = pg_store.search_vectors_where("c", "fp", q, 10, where="v.doc_id <> ?", params=["x"])
    assert walked == got


def test_vectors_wider_than_vector_hnsw_are_indexed(pg_store: Any) -> None:
    # 3,072 dimensions (text-embedding-3-large): pgvector's vector HNSW stops at 2,000.
    rng = np.random.default_rng(9)
    ids = [f"d{i:03d}" for i in range(60)]
    m = _unit(rng, 60, 3072)
    pg_store.upsert_vectors("c", "fp3072", ids, ["h"] * 60, m)
    assert any("halfvec(3072)" in d for d in _indexes(pg_store).values())
    q = _unit(rng, 1, 3072)[0]
    assert pg_store.search_vectors("c", "fp3072", q, 5) == VectorIndex(ids, m).search(q, 5)


def test_vectors_wider_than_any_hnsw_are_ranked_exactly(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(4)
    ids = [f"d{i:03d}" for i in range(40)]
    m = _unit(rng, 40, 4096)
    pg_store.upsert_vectors("c", "fp4096", ids, ["h"] * 40, m)
    assert _indexes(pg_store) == {}, "pgvector indexes at most 4,000 dimensions"
    walks: list[int] = []
    monkeypatch.setattr(pg_store, "_walk", lambda *a: walks.append(1))
    monkeypatch.setattr(pg_store, "_hnsw", lambda *a: walks.append(1))
    q = _unit(rng, 1, 4096)[0]
    exact = VectorIndex(ids, m, mode="exact")
    assert pg_store.search_vectors("c", "fp4096", q, 5) == exact.search(q, 5)
    allow = set(ids[::2])
    where = pg_store.search_vectors_where(
        "c", "fp4096", q, 5, where="v.doc_id = ANY(?)", params=[sorted(allow)]
    )
    assert where == exact.search(q, 5, allow)
    assert not walks


def test_store_with_vector_indexes_is_migrated(
    location_for: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    location = location_for("postgres")
    store = open_store(location)
    rng = np.random.default_rng(2)
    ids = [f"d{i:04d}" for i in range(300)]
    m = _unit(rng, 300, 32)
    store.upsert_vectors("c", "fp", ids, ["h"] * 300, m)
    store.upsert_vectors("other", "fp", ids[:20], ["h"] * 20, m[:20])
    new = _indexes(store)
    assert len(new) == 2
    # Make it the store an older layersearch left: vector indexes, no version 5.
    with store.connect(write=True) as con:
        for name in new:
            con.execute(f'DROP INDEX "{name}"')
        con.execute(
            "CREATE INDEX vectors_hnsw_0123456789abcdef ON vectors USING hnsw "
            "((embedding::vector(32)) vector_cosine_ops) WHERE corpus = 'c' AND fingerprint = 'fp'"
        )
        con.execute("DELETE FROM schema_version WHERE version >= ?", [migrations.HALFVEC_INDEXES])
    store.close()
    with caplog.at_level(logging.WARNING, logger="layersearch.store.postgres"):
        again = open_store(location)
    assert _indexes(again) == new, "the old index dropped, one halfvec index per pair"
    assert "rebuilding 2 vector index(es) over 320 vectors" in caplog.text
    q = _unit(rng, 1, 32)[0]
    assert again.search_vectors("c", "fp", q, 5) == VectorIndex(ids, m).search(q, 5)
    again.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="layersearch.store.postgres"):
        open_store(location).close()
    assert "rebuilding" not in caplog.text, "the rebuild runs once"
