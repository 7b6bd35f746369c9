"""The dense channel inside search: embedding, caching, fingerprints, warnings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.embed import FakeEmbedder, Fingerprint
from tests.support import MINI


class Counting:
    """Wraps an embedder, counting document embeddings; can fail after N batches."""

    def __init__(
        self, inner: FakeEmbedder, *, model: str | None = None, fail_after: int | None = None
    ):
        self.inner = inner
        self.calls = 0
        self.docs = 0
        self.fail_after = fail_after
        fp = inner.fingerprint
        self._fp = fp if model is None else Fingerprint(**{**fp.model_dump(), "model": model})

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fp

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        self.docs += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def channels_of(resp) -> set[str]:  # type: ignore[no-untyped-def]
    return {c.channel for h in resp.results for c in h.explanation or []}


def test_vector_channel_runs_after_embed(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="fake")
    ls.load(MINI)
    before = ls.search(question="tax on orders", explain=True)
    assert "vector" not in channels_of(before)
    assert [w for w in before.warnings if w.startswith("embedding unavailable:")] == [
        "embedding unavailable: no vectors stored for fake/hashing-v1 (256) in 'entities' yet; run `layersearch embed`"
    ]
    report, _words = ls.embed()
    assert report.embedded == report.documents == 32  # 28 visible entities + 4 memories
    after = ls.search(question="tax on orders", explain=True)
    assert "vector" in channels_of(after) and after.warnings == []
    only = ls.search(question="tax on orders", explain=True, channels=["vector"])
    assert channels_of(only) == {"vector"}
    lexical = ls.search(question="tax on orders", explain=True, channels=["fulltext"])
    # words: memories by question share
    lexical_channels = {"fulltext", "schema", "words"}
    assert channels_of(lexical) <= lexical_channels and "vector" not in channels_of(lexical)
    ls.close()


def test_a_store_without_vectors_is_asked_once_per_generation(tmp_path: Path) -> None:
    """Served by a model without its vectors, a search falls back to the lexical channels
    at their cost: that the vectors are missing is decided once per store generation, not
    read from the store by every search; writing vectors moves the generation."""
    store = tmp_path / "s.duckdb"
    lexical = Layersearch(store, embedder="none")
    lexical.load(MINI)
    ls = Layersearch(store, embedder="fake")
    reads: list[str] = []
    for name in ("load_vectors", "vector_fingerprints", "entity_vector_coverage"):
        method = getattr(ls.store, name)

        def counted(*args, _name=name, _method=method):  # type: ignore[no-untyped-def]
            reads.append(_name)
            return _method(*args)

        setattr(ls.store, name, counted)
    questions = ["tax on orders", "revenue by store", "customers by country"]
    first = ls.search(question=questions[0])
    assert reads, "the first search finds out"
    reads.clear()
    for q in questions * 2:
        resp = ls.search(question=q)
        assert resp.warnings == [
            "embedding unavailable: no vectors stored for fake/hashing-v1 (256) in "
            "'entities' yet; run `layersearch embed`"
        ]
        assert resp.results == lexical.search(question=q).results
    assert reads == [], "later searches read nothing about vectors from the store"
    assert first.results == lexical.search(question=questions[0]).results
    ls.embed()
    after = ls.search(question="tax on orders", explain=True)
    assert "vector" in channels_of(after) and after.warnings == []
    lexical.close()
    ls.close()


def test_embed_again_embeds_every_text_and_keeps_the_vectors_in_place(tmp_path: Path) -> None:
    emb = Counting(FakeEmbedder())
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)  # type: ignore[arg-type]
    ls.load(MINI)
    ls.embed()
    before = ls.search(question="tax on orders", channels=["vector"]).results
    emb.docs = 0
    again, words = ls.embed(again=True)
    assert (again.embedded, again.unchanged, again.pruned) == (32, 0, 0)
    assert words.embedded == words.documents and emb.docs == 32 + words.documents
    assert ls.search(question="tax on orders", channels=["vector"]).results == before
    ls.close()


def test_unchanged_corpus_is_never_embedded_again(tmp_path: Path) -> None:
    emb = Counting(FakeEmbedder())
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)  # type: ignore[arg-type]
    ls.load(MINI)
    _, words = ls.embed()
    assert emb.docs == 32 + words.documents and words.corpus == "words"
    emb.docs = emb.calls = 0
    again, _words = ls.embed()
    assert emb.calls == 0 and again.unchanged == 32 and again.embedded == 0
    m = ls.save_memory("Gift cards are not revenue", entities=["orders"])
    assert emb.docs == 1, "a new memory is embedded when saved"
    ls.forget_memory(m.id)
    pruned, _words = ls.embed()
    assert pruned.pruned == 1 and pruned.embedded == 0
    ls.close()


def test_interrupted_embedding_resumes(tmp_path: Path) -> None:
    from layersearch.corpora.dense import entity_docs

    store = tmp_path / "s.duckdb"
    emb = Counting(FakeEmbedder(), fail_after=2)
    ls = Layersearch(store, embedder=emb)  # type: ignore[arg-type]
    ls.load(MINI)
    docs = entity_docs(ls.corpus().entities.values())
    with pytest.raises(KeyboardInterrupt):
        ls.dense().embed(docs, batch_size=8)
    emb.fail_after = None
    emb.docs = 0
    report, words = ls.embed()
    # the two committed batches survived the interruption and are not embedded again
    assert report.unchanged == 16
    assert report.embedded == emb.docs - words.embedded == report.documents - 16
    ls.close()


def test_fingerprint_mismatch_same_dimension_is_named(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    a = Layersearch(store, embedder=Counting(FakeEmbedder(), model="model-a"))  # type: ignore[arg-type]
    a.load(MINI)
    a.embed()
    b = Layersearch(store, embedder=Counting(FakeEmbedder(), model="model-b"))  # type: ignore[arg-type]
    resp = b.search(question="tax", explain=True)
    assert "vector" not in channels_of(resp)
    (warning,) = [w for w in resp.warnings if w.startswith("embedding unavailable:")]
    assert "stored: fake/model-a (256) — configured: fake/model-b (256)" in warning
    assert resp.results, "the lexical channels still answer"
    a.close()
    b.close()


class PreviousDefault(Counting):
    """Vectors under the fingerprint the previous default of ``local`` gave: the general
    MiniLM, int8 (before it, sentence-transformers' torch MiniLM)."""

    def __init__(self, model: str = "all-MiniLM-L6-v2-onnx-int8") -> None:
        super().__init__(FakeEmbedder(dimensions=384))
        self._fp = Fingerprint(provider="local", model=model, dimensions=384)


def test_a_store_embedded_with_the_previous_default_asks_for_embed(tmp_path: Path) -> None:
    from layersearch.embed import LocalEmbedder

    store = tmp_path / "s.duckdb"
    old = Layersearch(store, embedder=PreviousDefault())  # type: ignore[arg-type]
    old.load(MINI)
    old.embed()
    old.close()
    new = Layersearch(store, embedder="local")
    assert isinstance(new.embedder, LocalEmbedder)
    resp = new.search(question="tax", explain=True)
    assert "vector" not in channels_of(resp) and resp.results
    (warning,) = [w for w in resp.warnings if w.startswith("embedding unavailable:")]
    assert warning == (
        "embedding unavailable: stored: local/all-MiniLM-L6-v2-onnx-int8 (384) — configured: "
        "local/layersearch-schema-minilm-int8-1 (384); run `layersearch embed` with the "
        "configured model, or configure the stored one"
    )
    new.close()


def test_vector_requested_without_embedder_warns(mini: Layersearch) -> None:
    resp = mini.search(question="tax", channels=["vector", "fulltext"])
    assert resp.results
    assert any(w.startswith("embedding unavailable: no embedder configured") for w in resp.warnings)
    assert not any("embedding" in w for w in mini.search(question="tax").warnings)


def test_datasource_scope_applies_to_vectors(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="fake")
    ls.load(MINI)
    ls.embed()
    resp = ls.search(
        question="deal amount status", datasource="crm", channels=["vector"], max_results=50
    )
    assert resp.results and all(h.id.startswith("crm") or h.id == "memory:4" for h in resp.results)
    ls.close()


def test_litellm_path_end_to_end_offline(tmp_path: Path) -> None:
    from layersearch.embed.testserver import serve_embeddings

    with serve_embeddings(FakeEmbedder()) as url:
        ls = Layersearch(
            tmp_path / "s.duckdb",
            embedder="litellm:openai/fake-embedding",
            embedder_config={"api_base": url, "api_key": "test-key"},
        )
        ls.load(MINI)
        report, _words = ls.embed()
        assert report.embedded == 32 and report.model == "openai/fake-embedding (256)"
        resp = ls.search(question="tax on orders", explain=True)
        assert "vector" in channels_of(resp)
        ls.close()


@pytest.mark.slow
@pytest.mark.local_model
def test_local_model_channel(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="local")
    ls.load(MINI)
    report, _words = ls.embed()
    assert report.model == "local/layersearch-schema-minilm-int8-1 (384)"
    resp = ls.search(
        question="levy charged by the government on purchases", explain=True, channels=["vector"]
    )
    assert resp.results[0].id in {"shop.orders.tax_paid", "memory:2"}
    ls.close()


def test_table_text_lists_its_visible_columns() -> None:
    from layersearch.corpora.dense import TABLE_LEAVES, entity_docs
    from layersearch.semantic.model import Entity

    table = Entity(id="pets.Has_Pet", kind="model", name="Has_Pet", datasource="pets")
    cols = [
        Entity(
            id=f"pets.Has_Pet.c{i}",
            kind="column",
            name=f"pet_id_{i}",
            datasource="pets",
            model="Has_Pet",
        )
        for i in range(TABLE_LEAVES + 5)
    ]
    hidden = Entity(
        id="pets.Has_Pet.secret",
        kind="column",
        name="secret",
        datasource="pets",
        model="Has_Pet",
        hidden=True,
    )
    docs = {d.id: d.text for d in entity_docs([table, hidden, *cols])}
    assert "pets.Has_Pet.secret" not in docs
    text = docs["pets.Has_Pet"]
    assert text.startswith("Has Pet: model in pets. Columns: pet id 0, pet id 1,")
    assert f"pet id {TABLE_LEAVES - 1}." in text and f"pet id {TABLE_LEAVES}" not in text
    assert "secret" not in text
    assert docs["pets.Has_Pet.c0"] == "pet id 0: column of Has Pet in pets."


def test_warm_reads_the_vectors_and_names_what_is_missing(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="fake")
    ls.load(MINI)
    (problem,) = ls.warm()
    assert "no vectors stored for fake/hashing-v1 (256)" in problem
    ls.embed()
    assert ls.warm() == []
    assert ls.dense().confirmed
    assert Layersearch(tmp_path / "t.duckdb").warm() == []  # no embedder: nothing to ready
    ls.close()


def test_warm_makes_the_int8_copy_a_large_exact_index_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    from layersearch.ranking import vector as vector_module

    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
    monkeypatch.setattr(vector_module, "SCREEN_MIN_ROWS", 1)  # MINI counts as large
    with Layersearch(tmp_path / "s.duckdb", embedder="fake", create=False) as ls:
        assert ls.warm() == []
        part = ls.dense()._part(False)
        assert part._screen is not None and part._screen.rows == len(part)


def test_a_new_process_reads_its_vectors_in_one_store_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors found need no separate fingerprint check: a new process's first dense
    search opens one DuckDB connection for them, not two."""
    store = tmp_path / "s.duckdb"
    first = Layersearch(store, embedder="fake")
    first.load(MINI)
    first.embed()
    first.close()
    ls = Layersearch(store, embedder="fake")
    calls: list[str] = []
    for name in ("vector_fingerprints", "load_vectors"):
        method = getattr(ls.store, name)
        monkeypatch.setattr(
            ls.store, name, lambda *a, _m=method, _n=name: calls.append(_n) or _m(*a)
        )
    resp = ls.search(question="tax on orders", explain=True)
    assert "vector" in channels_of(resp) and resp.warnings == []
    # one read per dense corpus: the entities' and the catalog words' (ranking.neighbours)
    assert calls == ["load_vectors", "load_vectors"]
    ls.close()


class CountingWrites:
    """Counts the store's vector transactions."""

    def __init__(self, store: object) -> None:
        self.calls: list[int] = []
        self._upsert = store.upsert_vectors  # type: ignore[attr-defined]

    def __call__(self, corpus, key, ids, hashes, matrix):  # type: ignore[no-untyped-def]
        self.calls.append(len(ids))
        self._upsert(corpus, key, ids, hashes, matrix)


def test_embed_writes_its_batches_in_few_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch.corpora import dense

    ls = Layersearch(tmp_path / "s.duckdb", embedder=FakeEmbedder())
    ls.load(MINI)
    writes = CountingWrites(ls.store)
    monkeypatch.setattr(ls.store, "upsert_vectors", writes)
    docs = dense.entity_docs(ls.corpus().entities.values())
    ls.dense().embed(docs, batch_size=4)
    assert writes.calls == [len(docs)], "one transaction for the run, not one per batch"
    monkeypatch.setattr(dense, "FLUSH_ROWS", 8)
    writes.calls.clear()
    ls.store.prune_vectors(dense.ENTITY_CORPUS, set())
    ls.dense().embed(docs, batch_size=4)
    assert sum(writes.calls) == len(docs) and max(writes.calls) == 8
    ls.close()


def test_embed_in_length_order_keeps_each_documents_vector(tmp_path: Path) -> None:
    from layersearch.corpora import dense

    emb = FakeEmbedder()
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)
    ls.load(MINI)
    docs = dense.entity_docs(ls.corpus().entities.values())
    assert len({len(d.text) for d in docs}) > 4, "texts of many lengths"
    ls.dense().embed(docs, batch_size=3)
    ids, matrix = ls.store.load_vectors(dense.ENTITY_CORPUS, emb.fingerprint.key())
    texts = {d.id: d.text for d in docs}
    for doc_id, vec in zip(ids, matrix, strict=True):
        assert np.array_equal(vec, emb.embed_documents([texts[doc_id]])[0]), doc_id
    ls.close()


def test_interrupted_embedding_keeps_the_unwritten_batches(tmp_path: Path) -> None:
    # Batches embedded before an interruption are written on the way out, even when
    # they were waiting for the next transaction.
    from layersearch.corpora.dense import entity_docs

    emb = Counting(FakeEmbedder(), fail_after=3)
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)  # type: ignore[arg-type]
    ls.load(MINI)
    docs = entity_docs(ls.corpus().entities.values())
    with pytest.raises(KeyboardInterrupt):
        ls.dense().embed(docs, batch_size=5)
    assert len(ls.store.vector_hashes("entities", emb.fingerprint.key())) == 15
    ls.close()


class Threaded(Counting):
    """Counting, embedding batches on two threads at once (as the local model does)."""

    bulk_workers = 2

    def __init__(self, inner: FakeEmbedder, **kwargs) -> None:  # type: ignore[no-untyped-def]
        import threading

        super().__init__(inner, **kwargs)
        self.threads: set[str] = set()
        self.texts: list[str] = []
        self._lock = threading.Lock()
        self._both = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import threading

        with self._lock:
            self.threads.add(threading.current_thread().name)
            self.texts.extend(texts)
            if len(self.threads) >= 2:
                self._both.set()
        # A batch of the fake model takes microseconds: one worker could take them all
        # before the other starts. The first batches wait (up to 2 s) for a second thread,
        # as a real model's batches overlap; a single worker still fails the test.
        self._both.wait(2.0)
        return super().embed_documents(texts)


def test_batches_embed_on_two_threads_and_each_text_once(tmp_path: Path) -> None:
    from layersearch.corpora.dense import DenseDoc

    docs = [DenseDoc(f"d{i}", f"text {i % 40} " + "word " * (i % 7)) for i in range(200)]
    emb = Threaded(FakeEmbedder())
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)  # type: ignore[arg-type]
    seen: list[tuple[int, int]] = []
    report = ls.dense().embed(docs, batch_size=8, progress=lambda d, t: seen.append((d, t)))
    assert report.embedded == 200 and report.failed == []
    assert len(emb.threads) == 2 and all(
        t.startswith("layersearch-embed-bulk") for t in emb.threads
    )
    distinct = {d.text for d in docs}
    assert sorted(emb.texts) == sorted(distinct), "a text several documents hold is embedded once"
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (200, 200)
    ids, matrix = ls.store.load_vectors("entities", FakeEmbedder().fingerprint.key())
    want = {d.id: FakeEmbedder().embed_documents([d.text])[0] for d in docs}
    assert ids == sorted(want) and all(
        np.array_equal(matrix[i], want[j]) for i, j in enumerate(ids)
    )
    ls.close()


def test_an_interrupted_threaded_embedding_resumes(tmp_path: Path) -> None:
    from layersearch.corpora.dense import DenseDoc

    docs = [DenseDoc(f"d{i}", f"text number {i}") for i in range(120)]
    emb = Threaded(FakeEmbedder(), fail_after=6)
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        ls.dense().embed(docs, batch_size=8)
    kept = len(ls.store.vector_hashes("entities", FakeEmbedder().fingerprint.key()))
    # the batches finished before the interruption were written (up to six of eight)
    assert 0 < kept <= 6 * 8 and kept % 8 == 0
    emb.fail_after = None
    again = ls.dense().embed(docs, batch_size=8)
    assert again.unchanged == kept and again.embedded == 120 - kept
    ls.close()


def test_vectors_written_between_two_reads_are_none_this_time(tmp_path: Path) -> None:
    """A search whose read of the vectors found none while a writer (a vault or
    conversation index beside it) stored them before the fingerprint check: the search
    says 'no vectors yet' for that read (a later read in it may find them), not an
    error about an empty matrix, and the next search reads them."""
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        real = ls.store.load_vectors
        calls: list[int] = []

        def first_read_empty(corpus, key):  # type: ignore[no-untyped-def]
            ids, matrix = real(corpus, key)
            if corpus != "entities":
                return ids, matrix
            calls.append(1)
            return ([], matrix[:0]) if len(calls) == 1 else (ids, matrix)

        ls.store.load_vectors = first_read_empty  # type: ignore[method-assign]
        ls.dense()._index = None  # read the vectors again
        raced = ls.search(question="tax on orders", explain=True)  # no ConfigError
        assert any("no vectors stored for fake" in w and "'entities'" in w for w in raced.warnings)
        ls.store.publish_generation(ls.store.generation())  # as a writer's commit would
        ls.dense()._index_gen = -1
        after = ls.search(question="tax on orders", explain=True)
        assert "vector" in channels_of(after) and after.warnings == []


def test_the_hnsw_graph_is_kept_beside_the_store_for_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a search goes through HNSW (the ``[ann]`` extra, 200k vectors and more), the
    graph is built by ``embed`` and kept in the store's index folder; searches, in this
    process or the next, read it instead of building it; the answers are the same."""
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    from layersearch.ranking import vector
    from layersearch.ranking.vector import VectorIndex

    monkeypatch.setattr(VectorIndex, "uses_ann", property(lambda self: True))
    monkeypatch.setattr(vector, "EXACT_THRESHOLD", 1)
    built: list[int] = []
    build = VectorIndex._build_ann
    monkeypatch.setattr(
        VectorIndex, "_build_ann", lambda self, rows: built.append(len(rows)) or build(self, rows)
    )
    store = tmp_path / "s.duckdb"
    questions = ["tax on orders", "revenue by store", "customers by country"]
    with Layersearch(store, embedder="fake") as ls:
        ls.load(MINI)
        labels: list[str] = []

        class Bar:
            def __call__(self, done: int, total: int | None = None) -> None:
                pass

            def relabel(self, label: str) -> None:
                labels.append(label)

        ls.embed(progress=Bar())
        # entities and memories: a graph each, built by embed, which says so
        assert len(built) == 2 and labels == ["building the search graph"]
        first = [ls.search(question=q, channels=["vector"]).results for q in questions]
        kept = sorted((Path(ls.store.index_dir) / "hnsw").glob("hnsw-*.usearch"))
    assert len(kept) == len(built) == 2
    builds = len(built)
    with Layersearch(store, embedder="fake", create=False) as ls:
        assert [ls.search(question=q, channels=["vector"]).results for q in questions] == first
    assert len(built) == builds, "the second process read the kept graphs"
