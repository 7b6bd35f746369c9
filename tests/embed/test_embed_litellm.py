"""The real litellm code path, offline, against the bundled test server."""

from __future__ import annotations

import base64
import json
import socket
import urllib.request

import numpy as np
import pytest

from layersearch.embed import FakeEmbedder, LiteLLMEmbedder, make_embedder
from layersearch.embed.testserver import EmbeddingServer, serve_embeddings
from layersearch.errors import EmbeddingUnavailable

DOCS = ["orders total", "customer email", "shipping country", "refund reason", "late delivery"]


def _client(url: str, **config) -> LiteLLMEmbedder:
    e = make_embedder(
        "litellm:openai/fake-model", config={"api_base": url, "api_key": "test", **config}
    )
    assert isinstance(e, LiteLLMEmbedder)
    e._sleep = lambda seconds: None  # backoff is tested by counting, not by waiting
    return e


def test_vectors_match_the_wrapped_embedder():
    fake = FakeEmbedder()
    with serve_embeddings(fake) as url:
        e = _client(url)
        assert e.fingerprint.describe() == "openai/fake-model (256)"
        docs = e.embed_documents(DOCS)
        query = e.embed_query("orders total")
    assert docs.dtype == np.float32 and docs.shape == (5, 256)
    assert np.allclose(docs, fake.embed_documents(DOCS), atol=1e-6)
    assert np.allclose(query, fake.embed_query("orders total"), atol=1e-6)


def test_batches_and_dimension_learned_from_the_first_answer():
    with EmbeddingServer(FakeEmbedder(), api_key="test") as server:
        e = _client(server.base_url, batch_size=2)
        e.embed_documents(DOCS)
        assert [r.inputs for r in server.requests] == [DOCS[0:2], DOCS[2:4], DOCS[4:]]
        assert e.fingerprint.dimensions == 256
        assert len(server.requests) == 3


def test_fingerprint_first_embeds_one_probe():
    with EmbeddingServer(FakeEmbedder(32)) as server:
        e = _client(server.base_url)
        assert e.fingerprint.dimensions == 32
        e.embed_query("x")
        assert [len(r.inputs) for r in server.requests] == [1, 1]


def test_configured_dimensions_skip_the_probe_and_are_sent():
    with EmbeddingServer(FakeEmbedder(64)) as server:
        # litellm forwards dimensions only to models it knows accept them.
        e = make_embedder(
            "litellm:openai/text-embedding-3-small",
            config={"api_base": server.base_url, "api_key": "test", "dimensions": 64},
        )
        assert e.fingerprint.dimensions == 64
        assert server.requests == []
        e.embed_query("x")
        assert server.requests[0].body["dimensions"] == 64
    with serve_embeddings(FakeEmbedder(64)) as url:
        e = make_embedder(
            "litellm:openai/text-embedding-3-small",
            config={"api_base": url, "api_key": "test", "dimensions": 32},
        )
        with pytest.raises(EmbeddingUnavailable, match="64 dimensions, not 32"):
            e.embed_query("x")


def test_dimensions_the_model_does_not_take_is_a_clear_error():
    with EmbeddingServer(FakeEmbedder()) as server:
        e = _client(server.base_url, dimensions=256)
        with pytest.raises(EmbeddingUnavailable, match="remove dimensions"):
            e.embed_query("x")
        assert server.requests == []


def test_rate_limit_is_retried_with_backoff():
    with EmbeddingServer(FakeEmbedder(), fail_429=2) as server:
        e = _client(server.base_url)
        waits: list[float] = []
        e._sleep = waits.append
        vec = e.embed_query("orders")
        assert [r.status for r in server.requests] == [429, 429, 200]
        assert len(waits) == 2 and waits[1] > waits[0] > 0
    assert np.allclose(vec, FakeEmbedder().embed_query("orders"), atol=1e-6)


def test_rate_limit_gives_up_after_max_tries():
    with EmbeddingServer(FakeEmbedder(), fail_429=10) as server:
        e = _client(server.base_url)
        e.max_tries = 3
        with pytest.raises(EmbeddingUnavailable, match="rate limited"):
            e.embed_query("orders")
        assert len(server.requests) == 3


def test_rejected_batch_falls_back_to_single_documents():
    fake = FakeEmbedder()
    with EmbeddingServer(fake, max_batch=1) as server:
        e = _client(server.base_url, batch_size=3)
        out = e.embed_documents(DOCS[:3])
        assert [len(r.inputs) for r in server.requests] == [3, 1, 1, 1]
    assert np.allclose(out, fake.embed_documents(DOCS[:3]), atol=1e-6)


def test_a_document_rejected_alone_is_named_by_index():
    with serve_embeddings(FakeEmbedder(), reject_inputs={"poison"}) as url:
        e = _client(url, batch_size=2)
        with pytest.raises(EmbeddingUnavailable, match="rejected document 3"):
            e.embed_documents(["a", "b", "c", "poison", "d"])


def test_truncation_prefix_and_empty_text_reach_the_server_as_documented():
    with EmbeddingServer(FakeEmbedder()) as server:
        e = _client(server.base_url, max_input_chars=12, query_prefix="query: ")
        e.embed_query("query: a long question about orders")
        e.embed_documents([""])
        sent = [r.inputs for r in server.requests]
    assert sent == [["query: a lon"], [" "]]


def test_bad_key_and_unreachable_server_say_how_to_fix():
    with (
        serve_embeddings(FakeEmbedder(), api_key="secret") as url,
        pytest.raises(EmbeddingUnavailable, match="api_key"),
    ):
        _client(url).embed_query("x")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = _client(f"http://127.0.0.1:{port}/v1", timeout=5)
    with pytest.raises(EmbeddingUnavailable, match="api_base"):
        e.embed_query("x")


def test_server_speaks_base64_and_single_string_input():
    fake = FakeEmbedder(8)
    with serve_embeddings(fake, model_name="m") as url:
        body = json.dumps({"input": "orders", "encoding_format": "base64"}).encode()
        req = urllib.request.Request(
            url + "/embeddings", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            payload = json.load(resp)
    assert payload["object"] == "list" and payload["model"] == "m"
    item = payload["data"][0]
    assert item["object"] == "embedding" and item["index"] == 0
    vec = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
    assert np.array_equal(vec, fake.embed_query("orders"))
    assert payload["usage"]["prompt_tokens"] == 1
