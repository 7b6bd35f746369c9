"""The int8 first pass of the exact vector search: its error bound holds, and a screened
search returns what the float32 product over every row returns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layersearch.ranking import vector as vector_module
from layersearch.ranking.vector import VectorIndex

pytest.importorskip("onnxruntime", reason="the int8 pass runs on onnxruntime ([local])")

from layersearch.ranking.int8_screen import Int8Screen, product_graph  # noqa: E402


def _unit(m: np.ndarray) -> np.ndarray:
    m = m.astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _matrices() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    spiky = rng.standard_normal((400, 48))
    spiky[::7, 5] *= 40  # a component that sets the row's scale
    topics = rng.standard_normal((6, 48))
    near = topics[rng.integers(0, 6, 400)] + 0.05 * rng.standard_normal((400, 48))
    return {
        "gaussian": _unit(rng.standard_normal((400, 48))),
        "spiky": _unit(spiky),
        "near-duplicates": _unit(near),
        "signs": _unit(np.sign(rng.standard_normal((400, 48))) + 0.001),
    }


@pytest.mark.parametrize("name", list(_matrices()))
def test_every_int8_score_is_within_the_bound(name):
    matrix = _matrices()[name]
    screen = Int8Screen(matrix, threads=1)
    rng = np.random.default_rng(11)
    for q in [matrix[0], *_unit(rng.standard_normal((20, 48)))]:
        approx, bound = screen.scores(q)
        exact = matrix @ q
        assert approx.shape == (len(matrix),) and approx.dtype == np.float32
        assert float(np.abs(approx - exact).max()) <= bound
        assert bound < 0.1  # a bound that rules rows out, not everything in


@pytest.mark.parametrize("kind", ["random", "saturating"])
def test_the_graph_is_the_integer_product(kind: str) -> None:
    rng = np.random.default_rng(5)
    matrix = _unit(rng.standard_normal((30, 16)))
    q = _unit(rng.standard_normal((1, 16)))[0]
    if kind == "saturating":  # every pair of products at its largest: on a CPU without
        # VNNI, 8-bit queries overflowed the kernel's 16-bit sums here (255·127·2)
        matrix = _unit(np.ones((30, 16)) + 0.01 * np.arange(30)[:, None])
        q = _unit(np.ones((1, 16)))[0]
    approx, _ = Int8Screen(matrix, threads=1).scores(q)
    # the same quantisation in numpy: a scale per row, one for the query, integer dots
    scale = np.abs(matrix).max(axis=1) / 127
    rows = np.rint(matrix / scale[:, None]).astype(np.int64)
    step = np.abs(q).max() / 63
    levels = np.rint(q / step).astype(np.int64)
    np.testing.assert_allclose(approx, (rows @ levels) * scale * step, rtol=1e-5)
    assert product_graph(16) == product_graph(16)


def _screened(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(vector_module, "SCREEN_MIN_ROWS", 1 if on else 10**12)


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    """The same ranking: equal scores, up to float32 rounding, at every place, and the
    same id at every place whose score no other place's comes within that rounding."""
    assert len(a) == len(b)
    scores = [s for _, s in b]
    for place, ((ia, sa), (ib, sb)) in enumerate(zip(a, b, strict=True)):
        assert sa == pytest.approx(sb, abs=1e-6)
        tied = sum(abs(s - sb) <= 2e-6 for s in scores) > 1 or place == len(b) - 1
        assert ia == ib or tied


@pytest.mark.parametrize("sample", [4096, 8])  # candidates by partition / by a sample
@pytest.mark.parametrize("name", list(_matrices()))
def test_a_screened_search_is_the_exact_one(monkeypatch, name, sample):
    monkeypatch.setattr(vector_module, "_SAMPLE", sample)
    matrix = _matrices()[name]
    ids = [f"r{i:04d}" for i in range(len(matrix))]
    rng = np.random.default_rng(2)
    queries = [matrix[10], *_unit(rng.standard_normal((10, 48)))]
    allow = set(ids[::2])  # not selective: the int8 pass, masked
    _screened(monkeypatch, False)
    plain = VectorIndex(ids, matrix, mode="exact")
    want = [(plain.search(q, k), plain.search(q, k, allow)) for q in queries for k in (1, 10, 500)]
    _screened(monkeypatch, True)
    index = VectorIndex(ids, matrix, mode="exact")
    index.prepare_screen()
    got = [(index.search(q, k), index.search(q, k, allow)) for q in queries for k in (1, 10, 500)]
    assert index._screen is not None  # the int8 pass ran
    for (w, wa), (g, ga) in zip(want, got, strict=True):
        _same(g, w)
        _same(ga, wa)
    assert len(got[2][0]) == len(matrix) and len(got[2][1]) == len(allow)


def test_the_copy_follows_adds_removes_and_compaction(monkeypatch):
    matrix = _matrices()["gaussian"]
    ids = [f"r{i:04d}" for i in range(len(matrix))]
    _screened(monkeypatch, True)
    monkeypatch.setattr(vector_module, "_COMPACT_MIN_DEAD", 10)
    index = VectorIndex(ids[:300], matrix[:300], mode="exact")
    q = matrix[350]
    index.prepare_screen()
    assert ids[350] not in [i for i, _ in index.search(q, 5)]
    index.add(ids[300:], matrix[300:])  # new rows: the copy goes
    assert index._screen is None
    index.prepare_screen()
    assert index.search(q, 1)[0] == (ids[350], pytest.approx(1.0, abs=1e-6))
    first = index._screen
    assert first is not None and first.rows == len(matrix)
    index.remove([ids[350]])  # a dead row: the copy stays, the row is masked
    assert ids[350] not in [i for i, _ in index.search(q, 400)]
    assert index._screen is first
    index.remove(ids[:300])  # compaction renumbers every row
    assert index._alive is None
    index.prepare_screen()
    hits = index.search(q, 200)
    assert {i for i, _ in hits} == set(ids[300:]) - {ids[350]}
    assert index._screen is not first


def test_without_onnxruntime_the_float32_product_ranks(monkeypatch):
    matrix = _matrices()["gaussian"]
    ids = [f"r{i:04d}" for i in range(len(matrix))]
    _screened(monkeypatch, True)
    monkeypatch.setattr(vector_module, "screen_available", lambda: False)
    index = VectorIndex(ids, matrix, mode="exact")
    assert [i for i, _ in index.search(matrix[4], 3)][0] == ids[4]
    assert index._screen is None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 300),
    k=st.integers(1, 40),
    duplicates=st.booleans(),
    sample=st.sampled_from([2, 8, 4096]),
)
def test_screened_equals_exact_on_any_index(seed, n, k, duplicates, sample):
    rng = np.random.default_rng(seed)
    matrix = _unit(rng.standard_normal((n, 12)))
    if duplicates and n > 3:
        matrix[1::3] = matrix[0]  # equal scores: ties broken by id on both paths
    ids = [f"r{i:04d}" for i in rng.permutation(n)]
    q = _unit(rng.standard_normal((1, 12)))[0]
    old = vector_module.SCREEN_MIN_ROWS, vector_module._SAMPLE
    try:
        vector_module.SCREEN_MIN_ROWS = 10**12
        want = VectorIndex(ids, matrix, mode="exact").search(q, k)
        vector_module.SCREEN_MIN_ROWS, vector_module._SAMPLE = 1, sample
        index = VectorIndex(ids, matrix, mode="exact")
        index.prepare_screen()
        got = index.search(q, k)
    finally:
        vector_module.SCREEN_MIN_ROWS, vector_module._SAMPLE = old
    _same(got, want)


def test_the_copy_is_made_by_prepare_screen_or_after_a_few_full_searches(monkeypatch):
    """A process that asks once (the CLI) does not pay for the copy; a server's warm-up
    (prepare_screen) or a few searches over every row make it."""
    matrix = _matrices()["gaussian"]
    ids = [f"r{i:04d}" for i in range(len(matrix))]
    _screened(monkeypatch, True)
    once = VectorIndex(ids, matrix, mode="exact")
    for _ in range(vector_module.SCREEN_AFTER_SCANS):
        once.search(matrix[0], 3, allow=set(ids[:50]))  # a selective filter: no scan
        once.search(matrix[0], 3)
    assert once._screen is None
    once.search(matrix[1], 3)
    assert once._screen is not None
    warmed = VectorIndex(ids, matrix, mode="exact")
    warmed.prepare()  # the HNSW graph's (embed's): nothing for an exact index
    assert warmed._screen is None
    warmed.prepare_screen()
    assert warmed._screen is not None
    small = VectorIndex(ids, matrix, mode="exact")
    monkeypatch.setattr(vector_module, "SCREEN_MIN_ROWS", len(matrix) + 1)
    small.prepare_screen()
    assert small._screen is None


def test_a_copy_that_cannot_be_made_leaves_the_float32_product(monkeypatch, caplog):
    matrix = _matrices()["gaussian"]
    ids = [f"r{i:04d}" for i in range(len(matrix))]
    _screened(monkeypatch, True)

    def refuse(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION")

    monkeypatch.setattr(vector_module, "Int8Screen", refuse)
    index = VectorIndex(ids, matrix, mode="exact")
    with caplog.at_level("WARNING", logger="layersearch.ranking.vector"):
        index.prepare_screen()
        hits = index.search(matrix[9], 3)
    assert hits[0][0] == ids[9] and index._screen is None
    assert sum("int8 copy of 400 vectors not made" in r.message for r in caplog.records) == 1
