"""VectorIndex: exact top-k against brute force, filters, ties, updates, ANN recall."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from layersearch.errors import ConfigError
from layersearch.ranking import vector as vector_module
from layersearch.ranking.vector import VectorIndex

SRC = Path(__file__).resolve().parents[2] / "src"


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    m = rng.standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _clustered(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Topics, subtopics of ~50 documents, documents: how embedded corpora look."""
    topics = rng.standard_normal((100, d)).astype(np.float32)
    subs = topics[rng.integers(0, 100, n // 50)]
    subs += 0.6 * rng.standard_normal(subs.shape).astype(np.float32)
    m = subs[rng.integers(0, len(subs), n)] + 0.45 * rng.standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _brute(ids: list[str], matrix: np.ndarray, q: np.ndarray, k: int, allow=None):
    scored = [
        (float(s), i) for i, s in zip(ids, matrix @ q, strict=True) if allow is None or i in allow
    ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [i for _, i in scored[:k]]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    matrix = _unit(rng, 3000, 32)
    ids = [f"e{i:05d}" for i in range(len(matrix))]
    return ids, matrix, _unit(rng, 20, 32)


def test_exact_top_k_matches_brute_force(data):
    ids, matrix, queries = data
    index = VectorIndex(ids, matrix)
    assert not index.uses_ann
    for q in queries:
        hits = index.search(q, 10)
        assert [i for i, _ in hits] == _brute(ids, matrix, q, 10)
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == pytest.approx(float(matrix[ids.index(hits[0][0])] @ q), abs=1e-5)
    assert len(index.search(queries[0], 10_000)) == 3000
    assert index.search(queries[0], 0) == []


@pytest.mark.parametrize("fraction", [0.05, 0.6])  # gather path and mask path
def test_allow_filter(data, fraction):
    ids, matrix, queries = data
    rng = np.random.default_rng(1)
    allow = {i for i in ids if rng.random() < fraction} | {"not-indexed"}
    index = VectorIndex(ids, matrix)
    for q in queries[:5]:
        hits = index.search(q, 10, allow=allow)
        assert [i for i, _ in hits] == _brute(ids, matrix, q, 10, allow)
    assert index.search(queries[0], 10, allow=set()) == []
    assert index.search(queries[0], 10, allow=["nope"]) == []
    assert [i for i, _ in index.search(queries[0], 10, allow=["e00003"])] == ["e00003"]


def test_a_kept_allow_list_follows_adds_removes_and_compaction(data):
    ids, matrix, queries = data
    index = VectorIndex(ids[:2200], matrix[:2200])
    allow = frozenset(ids[:50]) | frozenset(ids[2200:2210])  # the last ten not yet indexed
    q = queries[0]
    assert [i for i, _ in index.search(q, 60, allow)] == _brute(ids[:50], matrix[:50], q, 60)
    assert allow in index._allowed  # its rows are kept for the next search
    # the same frozenset again, after each kind of change, ranks what is there now
    index.add(ids[2200:2210], matrix[2200:2210])
    want = _brute(ids[:2210], matrix[:2210], q, 60, allow)
    assert [i for i, _ in index.search(q, 60, allow)] == want
    index.remove(ids[:5])
    assert [i for i, _ in index.search(q, 60, allow)] == [i for i in want if i not in ids[:5]]
    index.add(ids[:5], matrix[:5])  # added back: at new rows
    assert [i for i, _ in index.search(q, 60, allow)] == want
    index.remove(ids[50:2200])  # most rows dead: compacted, every row renumbered
    assert index._alive is None  # (compaction ran)
    assert [i for i, _ in index.search(q, 60, allow)] == want
    assert [i for i, _ in index.search(q, 60, set(allow))] == want  # a set is not kept


def test_a_large_product_split_across_cores_scores_to_the_bit(data, monkeypatch):
    ids, matrix, queries = data
    whole = VectorIndex(ids, matrix)
    expected = [whole.search(q, 25) for q in queries[:5]]
    masked = whole.search(queries[0], 25, allow=set(ids[::2]))
    monkeypatch.setattr(vector_module, "SPLIT_MIN_ROWS", 100)
    # on the threads of this process's pool (one per core)
    assert np.array_equal(vector_module._product(matrix, queries[1]), matrix @ queries[1])
    monkeypatch.setattr(vector_module, "_pool", lambda pid: (_Pool(), 3))  # 3 blocks, inline
    split = VectorIndex(ids, matrix)
    assert [split.search(q, 25) for q in queries[:5]] == expected  # scores equal too
    assert split.search(queries[0], 25, allow=set(ids[::2])) == masked
    scores = vector_module._product(matrix, queries[0])
    assert np.array_equal(scores, matrix @ queries[0])


class _Pool:
    """Runs each block at once, in order (the split, without threads)."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        done: Future = Future()
        done.set_result(fn(*args))
        return done


def test_ties_are_broken_by_id():
    v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    index = VectorIndex(["c", "z", "a", "b"], v)
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert index.search(q, 2) == [("a", 1.0), ("b", 1.0)]
    assert [i for i, _ in index.search(q, 4)] == ["a", "b", "c", "z"]
    assert [i for i, _ in index.search(q, 2, allow={"c", "b", "z"})] == ["b", "c"]


def test_add_replace_remove(data):
    ids, matrix, queries = data
    index = VectorIndex(ids[:100], matrix[:100])
    index.add(ids[100:200], matrix[100:200])
    assert len(index) == 200
    q = queries[0]
    assert [i for i, _ in index.search(q, 5)] == _brute(ids[:200], matrix[:200], q, 5)
    # Replacing a vector moves the id to its new place.
    index.add(["e00000"], q[None, :])
    assert index.search(q, 1) == [("e00000", pytest.approx(1.0, abs=1e-5))]
    assert len(index) == 200
    assert index.remove(["e00000", "e00001", "unknown"]) == 2
    assert "e00000" not in index and len(index) == 198
    rest = [i for i in ids[2:200]]
    assert [i for i, _ in index.search(q, 5)] == _brute(rest, matrix[2:200], q, 5)
    assert index.ids == rest
    assert np.array_equal(index.vector("e00002"), matrix[2])


def test_compaction_keeps_results(data):
    ids, matrix, queries = data
    index = VectorIndex(ids, matrix)
    removed = ids[:2500]
    index.remove(removed)  # more dead than live: compacts
    assert index._alive is None and index._n == 500
    assert [i for i, _ in index.search(queries[1], 7)] == _brute(
        ids[2500:], matrix[2500:], queries[1], 7
    )
    index.add(["new"], matrix[:1])
    assert index.search(matrix[0], 1)[0][0] == "new"


def test_memory_mapped_npy(tmp_path, data):
    ids, matrix, queries = data
    path = tmp_path / "vectors.npy"
    np.save(path, matrix)
    index = VectorIndex.from_npy(path, ids)
    assert isinstance(index._buf, np.memmap)
    assert [i for i, _ in index.search(queries[2], 5)] == _brute(ids, matrix, queries[2], 5)
    index.add(["x"], queries[2][None, :])  # copies out of the read-only map
    assert index.search(queries[2], 1)[0][0] == "x"
    assert np.array_equal(np.load(path), matrix)  # the file was not touched
    out = tmp_path / "saved.npy"
    saved_ids = index.save_npy(out)
    again = VectorIndex.from_npy(out, saved_ids)
    assert again.search(queries[3], 5) == index.search(queries[3], 5)
    with pytest.raises(ConfigError, match="cannot memory-map"):
        VectorIndex.from_npy(tmp_path / "missing.npy", ids)


def test_bad_input_is_a_config_error(data):
    ids, matrix, _ = data
    with pytest.raises(ConfigError, match="ids for"):
        VectorIndex(ids[:3], matrix[:2])
    with pytest.raises(ConfigError, match="duplicate id 'a'"):
        VectorIndex(["a", "b", "a"], matrix[:3])
    with pytest.raises(ConfigError, match="2-D"):
        VectorIndex(["a"], matrix[0])
    index = VectorIndex(ids[:10], matrix[:10])
    with pytest.raises(ConfigError, match="expected \\(32,\\)"):
        index.search(np.zeros(3, dtype=np.float32), 5)
    with pytest.raises(ConfigError, match="NaN"):
        index.search(np.full(32, np.nan, dtype=np.float32), 5)
    with pytest.raises(ConfigError, match="dimensions"):
        index.add(["x"], np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(ConfigError, match="mode"):
        VectorIndex(ids[:10], matrix[:10], mode="fast")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def clustered():
    rng = np.random.default_rng(11)
    matrix = _clustered(rng, 20_100, 64)
    # Queries come from the same distribution but are not themselves indexed.
    matrix, queries = matrix[:20_000], matrix[20_000:]
    ids = [f"v{i:06d}" for i in range(len(matrix))]
    return ids, matrix, queries


def test_ann_recall_against_exact(clustered):
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    ids, matrix, queries = clustered
    exact = VectorIndex(ids, matrix, mode="exact")
    ann = VectorIndex(ids, matrix, mode="ann")
    assert ann.uses_ann
    found = total = 0
    for q in queries:
        truth = {i for i, _ in exact.search(q, 10)}
        hits = ann.search(q, 10)
        assert len(hits) == 10
        found += len(truth & {i for i, _ in hits})
        total += 10
        # ANN candidates are re-scored exactly.
        for i, s in hits:
            assert s == pytest.approx(float(matrix[int(i[1:])] @ q), abs=1e-5)
    print(f"recall@10 = {found / total:.3f}")
    assert found / total >= 0.98


def test_ann_allow_filter_and_updates(clustered):
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    ids, matrix, queries = clustered
    ann = VectorIndex(ids, matrix, mode="ann")
    exact = VectorIndex(ids, matrix, mode="exact")
    rare = set(ids[::997])  # too selective to over-fetch: exact on the subset
    broad = set(ids[::2])  # over-fetch then filter
    for q in queries[:10]:
        assert ann.search(q, 5, allow=rare) == exact.search(q, 5, allow=rare)
        got = [i for i, _ in ann.search(q, 10, allow=broad)]
        assert len(got) == 10 and set(got) <= broad
    q = queries[0]
    top = ann.search(q, 1)[0][0]
    ann.remove([top])
    assert top not in [i for i, _ in ann.search(q, 10)]
    ann.add(["fresh"], q[None, :])
    assert ann.search(q, 1)[0][0] == "fresh"


def test_a_kept_graph_is_read_by_the_next_index_of_the_same_vectors(
    tmp_path, monkeypatch, caplog, data
):
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    ids, matrix, queries = data
    built: list[int] = []
    build = VectorIndex._build_ann
    monkeypatch.setattr(
        VectorIndex, "_build_ann", lambda self, rows: built.append(len(rows)) or build(self, rows)
    )
    first = VectorIndex(ids, matrix, mode="ann", ann_dir=tmp_path)
    answers = [first.search(q, 10) for q in queries]
    (kept,) = tmp_path.glob("hnsw-*.usearch")
    assert built == [len(ids)] and not list(tmp_path.glob("*.tmp"))
    # another index of the same vectors (another process's) maps the file: same answers
    again = VectorIndex(list(ids), matrix.copy(), mode="ann", ann_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="layersearch.ranking.vector"):
        assert [again.search(q, 10) for q in queries] == answers
    assert built == [len(ids)] and again._ann_view and "read HNSW graph" in caplog.text
    # what the graph is built from names the file: other vectors, ids or parameters
    # build their own
    other = matrix.copy()
    other[0] = other[1]
    VectorIndex(ids, other, mode="ann", ann_dir=tmp_path).search(queries[0], 3)
    (oldest,) = set(tmp_path.glob("hnsw-*.usearch")) - {kept}
    renamed = [f"x{i}" for i in range(len(ids))]
    VectorIndex(renamed, matrix, mode="ann", ann_dir=tmp_path).search(queries[0], 3)
    VectorIndex(ids, matrix, mode="ann", connectivity=8, ann_dir=tmp_path).search(queries[0], 3)
    assert len(built) == 4 and len(list(tmp_path.glob("hnsw-*.usearch"))) == 4
    VectorIndex(ids, matrix, mode="ann", ann_dir=tmp_path).search(queries[0], 3)  # used again
    # a change drops the read-only map: searched again, the graph of the new vectors
    again.remove([answers[0][0][0]])
    assert not again._ann_view
    assert answers[0][0][0] not in [i for i, _ in again.search(queries[0], 10)]
    again.add(["fresh"], queries[0][None, :])
    assert again.search(queries[0], 1)[0][0] == "fresh"
    assert len(built) == 5
    # the graphs used last are kept: the first was read again, the oldest went
    assert kept.exists() and not oldest.exists()
    assert len(list(tmp_path.glob("hnsw-*.usearch"))) == vector_module.GRAPHS_KEPT


def test_a_bad_or_unwritable_graph_costs_only_a_build(tmp_path, monkeypatch, caplog, data):
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    ids, matrix, queries = data
    exact = VectorIndex(ids, matrix, mode="exact")
    truth = [i for i, _ in exact.search(queries[0], 5)]
    VectorIndex(ids, matrix, mode="ann", ann_dir=tmp_path).search(queries[0], 5)
    (kept,) = tmp_path.glob("hnsw-*.usearch")
    kept.write_bytes(b"not a graph" * 10)
    with caplog.at_level(logging.WARNING, logger="layersearch.ranking.vector"):
        index = VectorIndex(ids, matrix, mode="ann", ann_dir=tmp_path)
        assert [i for i, _ in index.search(queries[0], 5)] == truth
    assert "not read" in caplog.text and not index._ann_view
    assert kept.stat().st_size > 1000  # built again and kept in its place
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="layersearch.ranking.vector"):
        index = VectorIndex(ids, matrix, mode="ann", ann_dir=blocked / "hnsw")
        assert [i for i, _ in index.search(queries[0], 5)] == truth
    assert "not kept" in caplog.text


def test_without_usearch_search_stays_exact(monkeypatch, caplog, data):
    ids, matrix, queries = data
    monkeypatch.setattr(vector_module, "ann_available", lambda: False)
    monkeypatch.setattr(vector_module, "_warned_no_usearch", False)
    index = VectorIndex(ids, matrix, mode="ann")
    with caplog.at_level(logging.WARNING, logger="layersearch.ranking.vector"):
        hits = index.search(queries[0], 5)
    assert [i for i, _ in hits] == _brute(ids, matrix, queries[0], 5)
    assert "layersearch[ann]" in caplog.text
    assert index._ann is None


def test_auto_mode_switches_at_the_threshold(data):
    pytest.importorskip("usearch", reason="needs the [ann] extra")
    ids, matrix, _ = data
    assert VectorIndex(ids, matrix, exact_threshold=len(ids)).uses_ann
    assert not VectorIndex(ids, matrix, exact_threshold=len(ids) + 1).uses_ann


def test_ranking_vector_is_pure():
    code = (
        "import sys\n"
        "import layersearch.ranking.vector\n"
        "print(sorted(m for m in ('usearch', 'torch', 'litellm', 'duckdb', 'mcp', 'layersearch.store',"
        " 'layersearch.graph', 'layersearch.embed', 'onnxruntime') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[]"


def test_empty_index_grows():
    index = VectorIndex([], np.zeros((0, 3), dtype=np.float32))
    q = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    assert len(index) == 0 and index.search(q, 5) == []
    index.add(["a", "b"], np.eye(3, dtype=np.float32)[1:])
    assert [i for i, _ in index.search(q, 5)] == ["b", "a"]


def test_split_copies_each_side_unless_one_holds_everything(data):
    ids, matrix, queries = data
    index = VectorIndex(ids, matrix, mode="exact")
    index.remove([ids[0]])
    odd, even = index.split(lambda i: int(i[1:]) % 2 == 1)
    assert odd.ids == [i for i in ids[1:] if int(i[1:]) % 2] and len(even) == len(ids) // 2 - 1
    assert odd is not index and even is not index
    for q in queries[:3]:
        assert odd.search(q, 5) == index.search(q, 5, allow=set(odd.ids))
    # nothing of the other kind (a catalog without memories): that side is the index
    memories, entities = index.split(lambda i: i.startswith("memory:"))
    assert entities is index and len(memories) == 0 and memories.dimensions == 32
    assert memories.search(queries[0], 5) == []
    every, none = index.split(lambda i: True)
    assert every is index and len(none) == 0
