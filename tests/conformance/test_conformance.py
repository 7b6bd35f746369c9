"""The same behaviour on every backend, through the public API and the Store interface."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.api import open_store
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed import FakeEmbedder
from layersearch.errors import ModelMismatch, NotFound, StoreError
from layersearch.ranking.vector import VectorIndex
from layersearch.store import migrations

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
# The small fixture for behaviour; the bundled models for the cross-backend comparison.
MINI = ROOT / "fixtures" / "mini"

REQUESTS: list[dict[str, object]] = [
    {"question": "monthly revenue by store", "explain": True},
    {"question": "customer churn", "datasource": "shop", "max_results": 20, "explain": True},
    {"entities": ["orders"], "question": "refunds", "compact": False},
    {"query": {"measures": ["orders.gross_revenue"], "dimensions": ["stores.name"]}},
    {"question": "campaign spend", "channels": ["fulltext"], "explain": True},
    {"question": "ad clicks", "channels": ["vector"], "explain": True},
    {"question": "net revenue", "cypher_filter": "MATCH (m:Measure) RETURN m.id AS id"},
    {"question": "  ", "entities": ["finance"]},
]


def _stamped(text: str) -> str:
    """Memories carry the moment they were saved; everything else must match byte for byte."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", "<saved-at>", text)


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    m = rng.standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_load_search_and_memories(location: str) -> None:
    with Layersearch(location) as ls:
        report = ls.load(MINI)
        assert report.datasources == ["crm", "shop"]
        hits = ls.search(question="monthly revenue by store").results
        # the example saved with these very words leads, the entities follow it
        assert [h.id for h in hits][:1] == ["memory:3"] and hits[1].id.startswith("shop.")
        m = ls.save_memory("Revenue excludes gift cards", entities=["shop.orders"])
        assert ls.get_memory(m.id).learning == "Revenue excludes gift cards"
        assert ls.list_memories(limit=1)[0].id == m.id
        found = ls.search(question="gift cards", max_results=5).results
        assert m.id in [h.id for h in found]
        ls.forget_memory(m.id)
        assert m.id not in [x.id for x in ls.list_memories(limit=100)]
        with pytest.raises(NotFound):
            ls.forget_memory(m.id)
        # A reload keeps memories and replaces the datasource's entities.
        again = ls.load(MINI)
        assert again.memories_added == 0 and again.entities == report.entities


@pytest.mark.postgres
def test_search_results_identical_across_backends(location_for: Callable[[str], str]) -> None:
    outputs: dict[str, list[str]] = {}
    for backend in ("duckdb", "postgres"):
        with Layersearch(location_for(backend), embedder=FakeEmbedder()) as ls:
            ls.load(MODELS)
            ls.embed()
            outputs[backend] = [_stamped(ls.search(**r).model_dump_json()) for r in REQUESTS]  # type: ignore[arg-type]
            assert ls.search(**REQUESTS[5]).results, "the vector channel ran"  # type: ignore[arg-type]
            ls.store.close()
    for request, duck, pg in zip(REQUESTS, outputs["duckdb"], outputs["postgres"], strict=True):
        assert duck == pg, request


def test_second_instance_sees_writes(location: str) -> None:
    with Layersearch(location) as a, Layersearch(location) as b:
        a.load(MINI)
        assert b.search(question="revenue").results
        gen = b.store.generation()
        m = a.save_memory("Churned means no order in 90 days", entities=["shop.customers"])
        assert b.store.generation() > gen
        assert m.id in [h.id for h in b.search(question="churned 90 days").results]
        a.forget_memory(m.id)
        assert m.id not in [h.id for h in b.search(question="churned 90 days").results]


def test_vectors_through_the_store(location: str) -> None:
    store = open_store(location)
    rng = np.random.default_rng(7)
    ids = [f"doc{i:03d}" for i in range(50)]
    m = _unit(rng, 50, 16)
    store.upsert_vectors("c", "fp-a", ids, [f"h{i}" for i in range(50)], m)
    store.upsert_vectors("c", "fp-b", ids[:3], ["x"] * 3, _unit(rng, 3, 8))
    store.upsert_vectors("other", "fp-a", ["z"], ["hz"], _unit(rng, 1, 16))
    assert store.vector_fingerprints("c") == ["fp-a", "fp-b"]
    assert store.vector_hashes("c", "fp-a") == {i: f"h{n}" for n, i in enumerate(ids)}
    got_ids, got = store.load_vectors("c", "fp-a")
    assert got_ids == ids and got.dtype == np.float32 and np.array_equal(got, m)
    replacement = _unit(rng, 1, 16)
    store.upsert_vectors("c", "fp-a", ["doc007"], ["new"], replacement)
    assert store.vector_hashes("c", "fp-a")["doc007"] == "new"
    assert np.array_equal(store.load_vectors("c", "fp-a")[1][7], replacement[0])
    assert store.prune_vectors("c", set(ids[:10])) == 40 + 0  # fp-b rows are all live
    assert sorted(store.vector_hashes("c", "fp-a")) == ids[:10]
    assert store.vector_hashes("other", "fp-a") == {"z": "hz"}, "pruning is per corpus"
    assert store.load_vectors("c", "nothing") == ([], pytest.approx(np.zeros((0, 0))))
    store.close()


def test_model_mismatch(location: str) -> None:
    with Layersearch(location, embedder=FakeEmbedder(32)) as ls:
        ls.load(MINI)
        ls.embed()
        other = DenseCorpus(ls.store, "entities", FakeEmbedder(64))
        with pytest.raises(ModelMismatch, match="stored: fake/hashing-v1 \\(32\\)"):
            other.search("revenue", 5)
        assert ls.dense().search("revenue", 3)


def test_dense_search_matches_exact_ranking(location: str) -> None:
    store = open_store(location)
    rng = np.random.default_rng(1)
    n = 3000
    ids = [f"d{i:05d}" for i in range(n)]
    m = _unit(rng, n, 24)
    store.upsert_vectors("c", "fp", ids, ["h"] * n, m)
    exact = VectorIndex(ids, m, mode="exact")
    search = getattr(store, "search_vectors", None)
    if search is None:
        pytest.skip(f"{store.dialect} ranks vectors in memory (VectorIndex)")
    q = _unit(rng, 1, 24)[0]
    assert search("c", "fp", q, 10) == exact.search(q, 10)
    small = set(ids[::500])  # a short allow-list: exact from the start
    assert search("c", "fp", q, 10, small) == exact.search(q, 10, small)
    # Selective but long: the HNSW walk must not come back short.
    wide = set(ids[::1]) if n <= 2000 else set(ids[1::3][:2500])
    got = search("c", "fp", q, 50, wide)
    assert len(got) == 50 and got[:10] == exact.search(q, 10, wide)
    assert search("c", "fp", q, 5, set()) == []
    assert search("c", "fp", q, 5, {"missing"}) == []
    store.close()


def test_connect_runs_the_same_sql(location: str) -> None:
    store = open_store(location)
    with store.connect(write=True) as con:
        con.execute("CREATE TABLE t (id VARCHAR PRIMARY KEY, n INTEGER, note VARCHAR)")
        store.bulk_insert(
            con, "t", {"id": ["a", "b", "c"], "n": [1, 2, None], "note": ["x?", "50%", None]}
        )
        gen = store.bump_generation(con)
    store.publish_generation(gen)
    assert store.generation() == gen
    with store.connect(write=False) as con:
        rows = con.execute(
            "SELECT id, '?' AS q, note FROM t WHERE n >= ? AND note LIKE '%?%' -- what?\nORDER BY id",
            [1],
        ).fetchall()
        assert rows == [("a", "?", "x?")]
        assert con.execute("SELECT count(*) FROM t WHERE note = ?", ["50%"]).fetchone() == (1,)
    with pytest.raises(StoreError), store.connect(write=True) as con:
        con.execute("INSERT INTO t VALUES (?, ?, ?)", ["d", 4, None])
        con.execute("INSERT INTO t VALUES (?, ?, ?)", ["a", 5, None])  # duplicate key
    with store.connect(write=False) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (3,), "rolled back"
    store.close()


def test_migrations_idempotent_and_newer_refused(location: str) -> None:
    with Layersearch(location) as ls:
        ls.load(MINI)
    store = open_store(location)
    with store.connect(write=False) as con:
        versions = [
            r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
        ]
    assert versions == list(range(1, migrations.LATEST + 1))
    with store.connect(write=True) as con:
        con.execute("INSERT INTO schema_version VALUES (?, NULL)", [migrations.LATEST + 1])
    store.close()
    with pytest.raises(StoreError, match="newer than this layersearch"):
        open_store(location)


def test_reopen_keeps_data(location: str) -> None:
    with Layersearch(location) as ls:
        ls.load(MINI)
        first = ls.search(question="revenue").model_dump_json()
        gen = ls.store.generation()
    with Layersearch(location) as again:
        assert again.store.generation() == gen, "reopening applies no migration and no write"
        assert again.search(question="revenue").model_dump_json() == first


VAULT = ROOT / "fixtures" / "vault"
VAULT_SEARCHES: list[dict[str, object]] = [
    {"query": "net revenue after refunds", "limit": 1000},
    {"query": "metrics and incidents", "limit": 5, "tags": ["revenue"], "explain": True},
    {"query": "outage", "note_type": "incident", "date_range": {"start": "2024-03-01"}},
    {"query": "fx rates", "domain": "finance", "status": ["active", "resolved"]},
    {"query": "weekly sync notes", "mode": "hybrid", "limit": 7, "explain": True},
    {"query": "anything", "domain": "personal", "note_type": "incident"},
]


@pytest.mark.postgres
def test_vault_identical_across_backends(location_for: Callable[[str], str]) -> None:
    outputs: dict[str, list[str]] = {}
    for backend in ("duckdb", "postgres"):
        with Layersearch(location_for(backend), embedder=FakeEmbedder(128)) as ls:
            first = ls.vault.index(VAULT)
            assert first.notes and first.vectors is not None
            runs = [ls.vault.search(**s) for s in VAULT_SEARCHES]  # type: ignore[arg-type]
            assert runs[0] and runs[1] and not runs[-1]
            note = ls.vault.get_note(runs[0][0].slug)
            outputs[backend] = [repr(r) for r in runs] + [repr(note)]
            again = ls.vault.index(VAULT)
            assert again.unchanged == again.notes and again.chunks_written == 0
            outputs[backend].append(repr(first.model_dump(exclude={"seconds", "root"})))
    for duck, pg in zip(outputs["duckdb"], outputs["postgres"], strict=True):
        assert duck == pg


@pytest.mark.postgres
def test_short_hnsw_scan_falls_back_to_exact(
    location_for: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.store import postgres

    store = open_store(location_for("postgres"))
    assert isinstance(store, postgres.PostgresStore)
    rng = np.random.default_rng(3)
    ids = [f"d{i:05d}" for i in range(3000)]
    m = _unit(rng, 3000, 24)
    store.upsert_vectors("c", "fp", ids, ["h"] * 3000, m)
    allow = set(ids[::2][:2100])  # past the exact-from-the-start limit
    q = _unit(rng, 1, 24)[0]
    exact_calls: list[int] = []
    original = store._exact

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        exact_calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(store, "_exact", spy)
    monkeypatch.setattr(postgres, "_MAX_SCAN_TUPLES", 20)  # the walk stops almost at once
    got = store.search_vectors("c", "fp", q, 50, allow)
    assert exact_calls, "the short scan was completed by exact ranking"
    assert got == VectorIndex(ids, m, mode="exact").search(q, 50, allow)
    store.close()


CONVERSATIONS = ROOT / "fixtures" / "conversations"


@pytest.mark.postgres
def test_conversations_identical_across_backends(location_for: Callable[[str], str]) -> None:
    outputs: dict[str, list[str]] = {}
    for backend in ("duckdb", "postgres"):
        with Layersearch(location_for(backend), embedder=FakeEmbedder(128)) as ls:
            conv = ls.conversations
            first = conv.import_path(CONVERSATIONS)
            again = conv.import_path(CONVERSATIONS)
            conv.import_summaries(CONVERSATIONS / "summaries.jsonl")
            conv.embed()
            runs = [
                conv.search_conversations("revenue").markdown,
                conv.search_conversations("%_%", limit=5, role="user").markdown,
                conv.search_conversations("", role="user").markdown,
                conv.search_conversations("zzz-no-match").markdown,
                conv.semantic_search("churn definition", limit=5).markdown,
                conv.search_summaries("metrics", extract="decisions").markdown,
                conv.search_summaries("pipeline", mode="fts", importance="significant").markdown,
            ]
            outputs[backend] = [*runs, repr(first.model_dump()), repr(again.model_dump())]
    for duck, pg in zip(outputs["duckdb"], outputs["postgres"], strict=True):
        assert duck == pg
    assert outputs["duckdb"][3] == "No conversations found containing 'zzz-no-match'"


def test_keyword_terms_match_literally_on_each_backend(location: str, tmp_path: Path) -> None:
    """issue 42: ``%`` and ``_`` in a keyword term (and a summary domain) are characters,
    not LIKE wildcards, in the store's own SQL (``ILIKE … ESCAPE``) as in the mirror."""
    from layersearch.corpora.conversations import store as db

    lines = ["50% of revenue", "500 customers", "a_b test", "acb test", "back\\slash"]
    export = tmp_path / "m.jsonl"
    rows = [{"conversation_id": "c1", "role": "user", "content": t} for t in lines]
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Layersearch(location, embedder=FakeEmbedder(16)) as ls:
        ls.conversations.import_path(export, "generic")
        for term, want in [
            ("%", ["50% of revenue"]),
            ("_", ["a_b test"]),
            ("a_b", ["a_b test"]),
            ("\\", ["back\\slash"]),
            ("a%b", []),
        ]:
            rows = db.keyword_search(ls.store, term, limit=50)
            assert sorted(m.content for m, _ in rows) == want, term
            mirror = ls.conversations.search_conversations(term, 50).hits
            assert sorted(h.preview for h in mirror) == want, term


def test_extracted_facts_on_both_backends(location: str) -> None:
    """The facts cache and the facts field: the same on DuckDB and PostgreSQL."""
    from layersearch.embed.testserver import serve_chat
    from tests.conversations.test_conversation_facts import FACT, answer_facts, llm_for

    with Layersearch(location, embedder=FakeEmbedder(32)) as ls, serve_chat(answer_facts) as srv:
        conv = ls.conversations
        conv.import_path(CONVERSATIONS / "locomo" / "mini.json")
        first = conv.extract_facts(llm_for(srv))
        again = conv.extract_facts(llm_for(srv))
        hits = conv.search_messages("business intelligence", 3, channels=["fulltext"]).hits
    assert (first.extracted, first.facts, again.cached, srv.calls) == (2, 3, 2, 2)
    assert [h.turn_id for h in hits] == ["D1:3"], FACT


def test_message_search_reads_both_vectors_per_turn(location: str) -> None:
    """The turn's own vectors (``turn_vector``) through either store: the vector channel
    is the larger of the two cosines, one query embedding for both."""
    from layersearch.corpora.conversations.search import (
        MESSAGE_CORPUS,
        TURN_CORPUS,
        ConversationService,
    )
    from layersearch.corpora.conversations.vectors import max_cosines, vector_ranking

    store = open_store(location)
    embedder = FakeEmbedder(32)
    cache: dict[str, DenseCorpus] = {}
    svc = ConversationService(store, lambda c: cache.setdefault(c, DenseCorpus(store, c, embedder)))
    svc.import_path(ROOT / "fixtures" / "conversations")
    svc.embed()
    assert svc.search_messages("churn dashboard", 5).warnings == []
    context, own = cache[MESSAGE_CORPUS], cache[TURN_CORPUS]
    got = vector_ranking(context, lambda: own, "churn dashboard", 50, None, [])
    expected = max_cosines(
        context.search("churn dashboard", 50), own.search("churn dashboard", 50), 50
    )
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)
    store.close()
