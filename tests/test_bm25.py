import random

import numpy as np
import pytest
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from layersearch.ranking.bm25 import BM25Plus, EntityOverlapIndex, ancestors


def _corpus(seed: int, n: int = 400) -> list[list[str]]:
    rng = random.Random(seed)
    vocab = [f"shop.m{i}.c{j}" for i in range(8) for j in range(6)]
    return [[rng.choice(vocab) for _ in range(rng.randint(1, 7))] for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_rank_bm25(seed: int) -> None:
    corpus = _corpus(seed)
    ours, ref = BM25Plus(corpus), rank_bm25.BM25Plus(corpus)
    rng = random.Random(seed + 100)
    for _ in range(20):
        query = [rng.choice(corpus[rng.randrange(len(corpus))]) for _ in range(rng.randint(1, 4))]
        query.append("not-in-corpus")
        assert np.allclose(ours.scores(query), ref.get_scores(query), rtol=1e-12, atol=1e-12)
        full = ref.get_scores(query)
        matching = ours.matching(query)
        assert matching, "every query holds a corpus term"
        for doc, score in matching.items():
            assert score == pytest.approx(full[doc], rel=1e-12)
        # documents without any query term are exactly the ones left out
        hits = {i for i, d in enumerate(corpus) if set(d) & set(query)}
        assert set(matching) == hits


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=6), min_size=1, max_size=30),
    st.lists(st.sampled_from("abcdefgz"), max_size=5),
)
def test_property_equal_rank_bm25(corpus: list[list[str]], query: list[str]) -> None:
    assert np.allclose(BM25Plus(corpus).scores(query), rank_bm25.BM25Plus(corpus).get_scores(query))


def test_ancestors() -> None:
    assert ancestors("shop.orders.total") == ["shop.orders", "shop"]
    assert ancestors("shop") == []
    assert ancestors("memory:3") == []


def test_overlap_exact_beats_ancestor_and_ancestor_counts() -> None:
    idx = EntityOverlapIndex(
        [
            ("memory:1", ["shop.orders.total"]),
            ("memory:2", ["shop.orders"]),
            ("memory:3", ["crm.deals"]),
        ]
    )
    ranked = [d for d, _ in idx.search(["shop.orders"], 10)]
    # the exact tag first; the column note speaks softly for its model; crm is unrelated
    assert ranked == ["memory:2", "memory:1"]
    assert [d for d, _ in idx.search(["shop.orders.total"], 10)] == ["memory:1"]
    assert idx.search(["nothing.here"], 10) == []


def test_overlap_is_case_insensitive_and_finds_memory_by_own_id() -> None:
    idx = EntityOverlapIndex([("memory:1", ["Shop.Orders"]), ("memory:2", [])])
    assert [d for d, _ in idx.search(["shop.orders"], 5)] == ["memory:1"]
    assert [d for d, _ in idx.search(["memory:2"], 5)] == ["memory:2"]
