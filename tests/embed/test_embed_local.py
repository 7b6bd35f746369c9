"""The bundled offline MiniLM on ONNX Runtime, and model directories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from layersearch.embed import LocalEmbedder, make_embedder
from layersearch.errors import ConfigError, EmbeddingUnavailable
from tests.support import bundled_embedder as bundled

pytestmark = pytest.mark.local_model

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return bundled("local:minilm")


def test_unit_vectors_of_384_dimensions(local):
    docs = local.embed_documents(["monthly revenue by region", "customer churn"])
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert local.embed_query("revenue").shape == (384,)
    assert local.fingerprint.describe() == "local/all-MiniLM-L6-v2-onnx-int8 (384)"
    assert local.embed_documents([]).shape == (0, 384)


def test_meaning_not_spelling(local):
    cat = local.embed_query("cat")
    kitten, invoice = local.embed_documents(["kitten", "invoice"])
    assert float(cat @ kitten) > float(cat @ invoice) + 0.1


def test_same_vectors_as_the_sentence_transformers_model(local):
    # the model card's mean pooling + normalisation over the int8 weights: the vectors the
    # fp32 torch model gives (sentence-transformers, all-MiniLM-L6-v2), recorded once
    ref = json.loads((Path(__file__).parent / "minilm_reference.json").read_text())
    got = local.embed_documents(ref["texts"])
    want = np.asarray(ref["vectors"], dtype=np.float32)
    cosines = (got * want).sum(axis=1) / np.linalg.norm(want, axis=1)
    assert cosines.min() > 0.998, cosines  # 0.9985 for "x", 0.9991-0.9996 others


def test_long_text_is_cut_at_the_models_256_tokens(local):
    long = "orders " * 300
    assert np.allclose(local.embed_query(long), local.embed_query("orders " * 254), atol=1e-6)
    assert not np.allclose(local.embed_query("orders " * 100), local.embed_query(long), atol=1e-3)


def test_prefix_applied_once(local):
    e = LocalEmbedder(query_prefix="query: ")
    a = e.embed_query("late orders")
    b = e.embed_query("query: late orders")
    assert np.allclose(a, b, atol=1e-6)
    assert np.allclose(a, local.embed_query("query: late orders"), atol=1e-5)


def test_query_path_matches_the_batch_path(local):
    # a batch pads its texts to the longest and sorts them by length: same vectors
    texts = ["How many singers do we have?", "x", "late orders by region, " * 40, "a b c"]
    docs = local.embed_documents(texts)
    small = LocalEmbedder(batch_size=2).embed_documents(texts)
    for text, doc, other in zip(texts, docs, small, strict=True):
        q = local.embed_query(text)
        assert q.dtype == np.float32 and q.shape == (384,)
        assert np.allclose(q, doc, atol=1e-6) and np.allclose(q, other, atol=1e-6)


def test_numpy_blas_limited_to_the_embedders_threads(local):
    # OpenBLAS's spinning workers would take the core the next query's embedding needs
    threadpoolctl = pytest.importorskip("threadpoolctl")
    local.embed_query("warm")
    blas = threadpoolctl.threadpool_info()
    assert all(lib["num_threads"] == 1 for lib in blas if lib["user_api"] == "blas")


def test_threads_from_the_environment(monkeypatch):
    monkeypatch.setenv("LAYERSEARCH_EMBED_THREADS", "2")
    assert LocalEmbedder().threads == 2
    monkeypatch.setenv("LAYERSEARCH_EMBED_THREADS", "two")
    with pytest.raises(ConfigError, match="LAYERSEARCH_EMBED_THREADS"):
        LocalEmbedder()
    monkeypatch.setenv("LAYERSEARCH_EMBED_THREADS", "0")
    with pytest.raises(ConfigError, match="LAYERSEARCH_EMBED_THREADS"):
        LocalEmbedder()


def _model_dir(tmp_path: Path, pooling: dict[str, bool] | None = None) -> Path:
    from layersearch.embed.local import _DEFAULT_TOKENIZER, default_model_path

    d = tmp_path / "my-minilm"
    d.mkdir()
    shutil.copy(default_model_path(), d / "model.onnx")
    shutil.copy(_DEFAULT_TOKENIZER, d / "tokenizer.json")
    (d / "sentence_bert_config.json").write_text('{"max_seq_length": 256}')
    if pooling is not None:
        (d / "1_Pooling").mkdir()
        (d / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return d


def test_a_model_directory_runs_with_its_own_fingerprint(local, tmp_path):
    d = _model_dir(tmp_path, {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False})
    e = make_embedder(f"local:{d}")
    assert e.fingerprint.describe() == "local/my-minilm (384)"
    assert e.fingerprint != local.fingerprint
    assert np.allclose(e.embed_query("late orders"), local.embed_query("late orders"), atol=1e-6)


def test_cls_pooling_from_the_directory(local, tmp_path):
    d = _model_dir(tmp_path, {"pooling_mode_cls_token": True})
    cls = make_embedder(f"local:{d}").embed_query("late orders")
    assert np.allclose(np.linalg.norm(cls), 1.0, atol=1e-5)
    assert not np.allclose(cls, local.embed_query("late orders"), atol=1e-3)


def test_bad_model_directories_are_named(tmp_path):
    with pytest.raises(ConfigError, match="not a directory.*not downloaded"):
        _ = make_embedder("local:BAAI/bge-small-en-v1.5").fingerprint
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no model.onnx and no tokenizer.json"):
        _ = make_embedder(f"local:{empty}").fingerprint
    d = _model_dir(tmp_path, {"pooling_mode_max_tokens": True})
    with pytest.raises(ConfigError, match="only mean or CLS pooling"):
        _ = make_embedder(f"local:{d}").fingerprint
    (d / "1_Pooling" / "config.json").unlink()
    (d / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbeddingUnavailable, match="could not load local embedding model"):
        make_embedder(f"local:{d}").embed_query("x")


def test_nothing_but_our_log_lines_on_stderr():
    code = (
        "import logging\n"
        "from layersearch.embed import make_embedder\n"
        "e = make_embedder('local')\n"
        "e.load()\n"
        "print(e.embed_documents(['a', 'b c']).shape, e.embed_query('x').shape)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 384) (384,)"
    assert out.stderr == ""


def test_prefetch_loads_on_another_thread_and_the_query_waits_for_it():
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    e = make_embedder("local")
    assert isinstance(e, LocalEmbedder)
    e.prefetch()
    thread = e._prefetch
    assert thread is not None and thread.name == "layersearch-embedder"
    vec = e.embed_query("customers by country")  # blocks on the loading thread's lock
    assert vec.shape == (384,)
    thread.join(60)
    assert not thread.is_alive() and e._session is not None
    e.prefetch()  # loaded: no second thread
    assert e._prefetch is thread


def test_a_failed_prefetch_is_raised_by_the_first_query(tmp_path):
    d = _model_dir(tmp_path, {"pooling_mode_mean_tokens": True})
    (d / "model.onnx").write_bytes(b"not a model")
    e = make_embedder(f"local:{d}")
    assert isinstance(e, LocalEmbedder)
    e.prefetch()
    assert e._prefetch is not None
    e._prefetch.join(60)
    with pytest.raises(EmbeddingUnavailable, match="could not load local embedding model"):
        e.embed_query("x")


def test_cli_search_with_the_local_model_prefetched_is_quiet(tmp_path):
    """The CLI's dense search loads the model while the store opens; the output is the
    same ranking as in process, and nothing but our log lines reaches stderr."""
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    models = Path(__file__).resolve().parents[2] / "models"
    env = {**os.environ, "PYTHONPATH": str(SRC), "LAYERSEARCH_STORE": str(tmp_path / "s")}
    env.pop("LAYERSEARCH_EMBEDDER", None)
    cli = [sys.executable, "-m", "layersearch", "--embedder", "local"]
    for args in (["load", str(models)], ["embed"]):
        done = subprocess.run(cli + args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    out = subprocess.run(
        cli + ["search", "how much did each store make per month", "--json", "--explain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    hits = json.loads(out.stdout)["results"]
    assert any(e["channel"] == "vector" for h in hits for e in h["explanation"])


def test_stores_opened_in_turn_share_one_session_per_model(local, tmp_path):
    # A session freed with its store left ~180 MB the allocator kept: a process opening
    # stores in turn grew by that much each (an evaluation reached 20 GB and was killed).
    from layersearch import Layersearch

    local.embed_query("warm")
    sessions = []
    for i in range(2):
        with Layersearch(tmp_path / f"s{i}.duckdb", embedder="local:minilm") as ls:
            assert isinstance(ls.embedder, LocalEmbedder) and ls.embedder is not local
            ls.embedder.embed_query("revenue")
            sessions.append(ls.embedder._session)
    assert sessions[0] is sessions[1] is local._session
    # another thread count is another session
    other = LocalEmbedder(threads=local.threads + 1)
    other.embed_query("revenue")
    assert other._session is not local._session


def _integer_product_model(weights: np.ndarray) -> bytes:
    """An ONNX model of ``Y = MatMulInteger(A uint8, W int8)`` with ``W`` a constant
    (as an int8 model's weights are), zero points 0."""
    from layersearch.ranking import int8_screen as g

    k, n = weights.shape
    node = g._bytes(1, "A") + g._bytes(1, "W") + g._bytes(2, "Y")
    node += g._bytes(3, "product") + g._bytes(4, "MatMulInteger")
    graph = g._bytes(1, node) + g._bytes(2, "integer_product")
    graph += g._bytes(5, g._tensor("W", g._INT8, [k, n], weights.astype(np.int8).tobytes()))
    graph += g._bytes(11, g._value_info("A", g._UINT8, [1, k]))
    graph += g._bytes(12, g._value_info("Y", g._INT32, [1, n]))
    return g._int(1, 8) + g._bytes(8, g._bytes(1, "") + g._int(2, 13)) + g._bytes(7, graph)


def test_integer_products_are_exact_on_every_cpu():
    """uint8 × int8 products at their largest: on an x86 CPU without VNNI, ONNX
    Runtime's default kernel saturates their pairwise 16-bit sums (255·127·2 > 32767);
    the sessions this module makes compute them exactly there too."""
    ort = pytest.importorskip("onnxruntime")
    from layersearch.embed.local import FLOAT_FUSIONS, session_options

    rng = np.random.default_rng(3)
    weights = np.concatenate(
        [np.full((64, 4), 127), np.full((64, 4), -127), rng.integers(-127, 128, (64, 8))], axis=1
    )
    a = np.concatenate([np.full(32, 255), rng.integers(0, 256, 32)]).astype(np.uint8)[None, :]
    session = ort.InferenceSession(
        _integer_product_model(weights),
        session_options(ort, 1),
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(FLOAT_FUSIONS),
    )
    got = session.run(None, {"A": a})[0]
    np.testing.assert_array_equal(got, a.astype(np.int64) @ weights)


def test_the_exact_kernel_is_asked_for_only_without_vnni(monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    from layersearch.embed import local

    def asked(has: bool) -> str | None:
        monkeypatch.setattr(local, "vnni", lambda: has)
        options = local.session_options(ort, 1)
        try:
            return str(options.get_session_config_entry("session.x64quantprecision"))
        except RuntimeError:  # (not set)
            return None

    assert asked(False) == "1" and asked(True) is None
