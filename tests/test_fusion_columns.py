"""``fuse`` (columns) against the readable one-object-per-id fusion, to the last bit."""

from hypothesis import given, settings
from hypothesis import strategies as st

from layersearch.ranking.fusion import fuse, rrf
from tests.reference.rrf_ref import rrf_ref

# few ids and few distinct scores, so ties (fused score, best rank, level) are everywhere
ids = st.sampled_from([f"{p}{i}" for p in "tcm" for i in range(6)])
entry = st.tuples(ids, st.sampled_from([0.5, 1.0, 2.0]))
channel_names = st.sampled_from(["fulltext", "schema", "vector", "bm25", "input"])
rankings = st.dictionaries(channel_names, st.lists(entry, max_size=12), min_size=1, max_size=5)


def _level(doc_id: str) -> int:
    return {"t": 1, "c": 0}.get(doc_id[0], -1)


def _is_entity(doc_id: str) -> bool:
    return doc_id[0] in "tc"


def _as_tuples(fused: list) -> list:
    return [(f.id, f.score, f.best_rank, list(f.channels.items())) for f in fused]


@settings(max_examples=300, deadline=None)
@given(
    rankings,
    st.sampled_from([60, 10, 1]),
    st.none() | st.dictionaries(channel_names, st.sampled_from([0.25, 0.5, 1.5])),
    st.booleans(),
    st.sampled_from([None, frozenset({"vector"}), frozenset({"vector", "schema"})]),
    st.booleans(),
)
def test_fuse_equals_the_reference(
    ranked: dict, k: int, weights: dict | None, leveled: bool, by_level, supersede: bool
) -> None:
    level = _level if leveled else None
    superseded = {"fulltext": _is_entity} if supersede else None
    want = rrf_ref(
        ranked, k=k, weights=weights, level=level, by_level=by_level, superseded=superseded
    )
    got = fuse(ranked, k=k, weights=weights, level=level, by_level=by_level, superseded=superseded)
    assert got.ids == [f.id for f in want]
    assert got.scores == [f.score for f in want]
    assert _as_tuples([got.fused(i) for i in range(len(got))]) == _as_tuples(want)
    if not supersede:
        assert _as_tuples(rrf(ranked, k=k, weights=weights, level=level, by_level=by_level)) == (
            _as_tuples(want)
        )


def test_more_than_two_votes_sum_correctly_rounded() -> None:
    # three contributions whose left-to-right float sum differs from the exact sum's rounding
    ranked = {f"c{i}": [("x", 1.0)] for i in range(3)}
    weights = {"c0": 1e16, "c1": 1.0, "c2": -1e16}
    got = fuse(ranked, k=0, weights=weights)
    assert got.scores == [1.0]
    assert rrf_ref(ranked, k=0, weights=weights)[0].score == 1.0


def test_a_superseded_vote_keeps_the_ranks_after_it() -> None:
    ranked = {"fulltext": [("t1", 3.0), ("m1", 2.0)], "schema": [("t1", 1.0)]}
    got = fuse(ranked, superseded={"fulltext": _is_entity})
    assert got.ids == ["t1", "m1"]
    assert got.fused(1).channels == {"fulltext": (2, 2.0, 1 / 62)}
    assert got.fused(0).channels == {"schema": (1, 1.0, 1 / 61)}
    assert fuse({"fulltext": [("t1", 1.0)]}, superseded={"fulltext": _is_entity}).ids == []
