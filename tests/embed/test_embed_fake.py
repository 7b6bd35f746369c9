"""The fake embedder: deterministic, similarity-preserving, prefix-aware."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from layersearch.embed import FakeEmbedder
from layersearch.errors import ConfigError

SRC = Path(__file__).resolve().parents[2] / "src"
TEXTS = ["orders total revenue", "customer_email", "orderTotal by month", "", "élan vital"]

_CHILD = """
import sys
from layersearch.embed import FakeEmbedder
texts = sys.argv[1:]
sys.stdout.write(FakeEmbedder().embed_documents(texts).tobytes().hex())
"""


def _in_child(seed: str) -> np.ndarray:
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *TEXTS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return np.frombuffer(bytes.fromhex(out), dtype=np.float32).reshape(len(TEXTS), -1)


def test_same_vectors_in_other_processes_whatever_the_hash_seed():
    here = FakeEmbedder().embed_documents(TEXTS)
    for seed in ("1", "2"):
        assert np.array_equal(_in_child(seed), here)


def test_shape_dtype_and_unit_norm():
    out = FakeEmbedder(64).embed_documents(TEXTS)
    assert out.shape == (len(TEXTS), 64)
    assert out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert FakeEmbedder().embed_query("x").shape == (256,)
    assert FakeEmbedder().embed_documents([]).shape == (0, 256)


def test_shared_words_are_closer():
    e = FakeEmbedder()
    q = e.embed_query("total revenue of orders")
    near, far = e.embed_documents(["orders revenue total", "customer email address"])
    assert float(q @ near) > float(q @ far) + 0.3


def test_identifiers_split_like_the_analyzer():
    e = FakeEmbedder()
    a, b, c = e.embed_documents(["order_total", "orderTotal", "shipping country"])
    assert float(a @ b) > 0.5 > float(a @ c)


def test_prefix_applied_exactly_once():
    e = FakeEmbedder(query_prefix="query: ", document_prefix="passage: ")
    plain = FakeEmbedder()
    assert np.array_equal(e.embed_query("late orders"), e.embed_query("query: late orders"))
    assert np.array_equal(e.embed_query("late orders"), plain.embed_query("query: late orders"))
    assert not np.array_equal(e.embed_query("late orders"), plain.embed_query("late orders"))
    docs = e.embed_documents(["late orders", "passage: late orders"])
    assert np.array_equal(docs[0], docs[1])
    assert np.array_equal(docs[0], plain.embed_query("passage: late orders"))


def test_bad_arguments():
    with pytest.raises(ConfigError):
        FakeEmbedder(1)
    with pytest.raises(ConfigError, match="not one string"):
        FakeEmbedder().embed_documents("abc")
    with pytest.raises(ConfigError, match="expected str"):
        FakeEmbedder().embed_documents(["ok", 3])  # type: ignore[list-item]
