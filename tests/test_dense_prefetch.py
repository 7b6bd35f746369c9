"""The query embedding started ahead of the search that needs it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from layersearch import Layersearch
from layersearch.corpora.dense import ENTITY_CORPUS
from layersearch.embed import FakeEmbedder, Fingerprint
from layersearch.errors import EmbeddingUnavailable
from tests.support import MINI


class Gated:
    """A fake embedder whose query embeddings wait for a gate and are counted by thread."""

    def __init__(self, *, fail: bool = False) -> None:
        self.inner = FakeEmbedder()
        self.gate = threading.Event()
        self.gate.set()
        self.fail = fail
        self.query_threads: list[str] = []

    @property
    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.query_threads.append(threading.current_thread().name)
        assert self.gate.wait(10)
        if self.fail:
            raise EmbeddingUnavailable("the model went away")
        return self.inner.embed_query(text)


def _store(tmp_path: Path, embedder: Gated) -> Layersearch:
    ls = Layersearch(tmp_path / "s.duckdb", embedder=embedder)
    ls.load(MINI)
    ls.embed()
    return ls


def test_search_embeds_the_query_once_in_a_worker(tmp_path: Path) -> None:
    emb = Gated()
    ls = _store(tmp_path, emb)
    ls.search(question="warm up")  # the first search confirms the vectors exist
    emb.query_threads.clear()
    resp = ls.search(question="tax on orders", explain=True)
    assert emb.query_threads and all(t.startswith("layersearch-embed") for t in emb.query_threads)
    assert len(emb.query_threads) == 1
    assert any(c.channel == "vector" for h in resp.results for c in h.explanation or [])
    # the finished embedding is cached: asking again embeds nothing
    ls.search(question="tax on orders")
    assert len(emb.query_threads) == 1
    ls.close()


def test_prefetched_vector_is_the_inline_one(tmp_path: Path) -> None:
    emb = Gated()
    ls = _store(tmp_path, emb)
    dense = ls.dense(ENTITY_CORPUS)
    emb.gate.clear()
    dense.prefetch("late orders")
    dense.prefetch("late orders")  # already pending: not started twice
    threading.Timer(0.05, emb.gate.set).start()
    got = dense.query_vector("late orders")  # waits for the worker
    assert np.array_equal(got, emb.inner.embed_query("late orders"))
    assert len(emb.query_threads) == 1
    ls.close()


def test_failed_prefetch_fails_the_vector_channel_with_a_warning(tmp_path: Path) -> None:
    emb = Gated()
    ls = _store(tmp_path, emb)
    ls.search(question="warm up")
    emb.fail = True
    resp = ls.search(question="tax on orders")
    assert "embedding unavailable: the model went away" in resp.warnings
    assert resp.results  # the lexical channels still answer
    emb.fail = False
    # a failure is not cached: the next search embeds again and succeeds
    again = ls.search(question="tax on orders")
    assert not [w for w in again.warnings if w.startswith("embedding unavailable")]
    ls.close()


def test_no_prefetch_before_vectors_are_confirmed(tmp_path: Path) -> None:
    emb = Gated()
    ls = Layersearch(tmp_path / "s.duckdb", embedder=emb)
    ls.load(MINI)
    resp = ls.search(question="tax on orders")  # no vectors stored: nothing to embed for
    assert [w for w in resp.warnings if w.startswith("embedding unavailable")]
    assert emb.query_threads == []
    ls.close()


def test_close_stops_the_workers(tmp_path: Path) -> None:
    emb = Gated()
    ls = _store(tmp_path, emb)
    ls.search(question="warm up")
    ls.search(question="tax on orders")
    dense = ls.dense(ENTITY_CORPUS)
    ls.close()
    assert dense._pool is None
    assert not [t for t in threading.enumerate() if t.name.startswith("layersearch-embed")]


def test_a_forked_child_embeds_with_workers_of_its_own(tmp_path: Path) -> None:
    """A child forked while the parent's prefetch workers exist, and while one of its
    embeddings is pending, neither waits for that embedding nor queues on the dead pool."""
    import multiprocessing
    import os

    if not hasattr(os, "fork"):
        return
    emb = Gated()
    ls = _store(tmp_path, emb)
    ls.search(question="warm up")  # vectors confirmed: later searches prefetch
    want = [h.id for h in ls.search(question="tax on orders").results]
    emb.gate.clear()  # the parent's next prefetch is left pending across the fork
    ls.dense(ENTITY_CORPUS).prefetch("tax on orders again")
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()

    def in_child() -> None:
        emb.gate.set()  # the child's own embeddings may run
        child.send(
            (
                [h.id for h in ls.search(question="tax on orders").results],
                len(ls.search(question="tax on orders again").results) > 0,
            )
        )

    proc = ctx.Process(target=in_child)
    proc.start()
    try:
        assert parent.poll(60), "the forked child's search never finished"
        assert parent.recv() == (want, True)
        proc.join(10)
    finally:
        if proc.is_alive():
            proc.kill()
        emb.gate.set()
        ls.close()
