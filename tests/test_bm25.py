import math
import random

import numpy as np
import pytest
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from layersearch.corpora.conversations.sessions import SESSION_BM25, SessionIndex
from layersearch.ranking.bm25 import OKAPI, BM25Plus, EntityOverlapIndex, ancestors, idf
from layersearch.ranking.coverage_arrays import BAGS, _Bags


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


class _LuceneOkapi(rank_bm25.BM25Okapi):
    """rank_bm25's Okapi BM25 with Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5))."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            w: math.log(1.0 + (self.corpus_size - df + 0.5) / (df + 0.5)) for w, df in nd.items()
        }


def _unique_query(corpus: list[list[str]], rng: random.Random) -> list[str]:
    words = {rng.choice(corpus[rng.randrange(len(corpus))]) for _ in range(rng.randint(1, 4))}
    return sorted(words) + ["not-in-corpus"]


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0)])
def test_bm25plus_parameters_equal_rank_bm25(k1: float, b: float) -> None:
    corpus = _corpus(7, 200)
    ours, ref = BM25Plus(corpus, k1=k1, b=b), rank_bm25.BM25Plus(corpus, k1=k1, b=b)
    rng = random.Random(3)
    for _ in range(10):
        query = _unique_query(corpus, rng)
        assert np.allclose(ours.scores(query), ref.get_scores(query), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_okapi_with_lucene_idf_equals_rank_bm25(seed: int) -> None:
    """The schema bags' and the sessions' parameters (:data:`OKAPI`): BM25Plus without δ
    and with Lucene's idf is rank_bm25's Okapi with that idf."""
    corpus = _corpus(seed, 300)
    ours = BM25Plus(corpus, k1=OKAPI.k1, b=OKAPI.b, delta=0.0, idf_variant="lucene")
    ref = _LuceneOkapi(corpus, k1=OKAPI.k1, b=OKAPI.b)
    rng = random.Random(seed)
    for _ in range(10):
        query = _unique_query(corpus, rng)
        assert np.allclose(ours.scores(query), ref.get_scores(query), rtol=1e-12, atol=1e-12)


def test_schema_bags_are_okapi_with_lucene_idf() -> None:
    """``coverage_arrays._Bags`` with one unit-weight term per node (a bag's tf is then the
    count of its nodes holding the term, its length its number of nodes) scores as
    rank_bm25's Okapi with Lucene's idf, as a share of the best possible score."""
    corpus = _corpus(5, 120)
    vocab = sorted({t for d in corpus for t in d})
    col = {t: j for j, t in enumerate(vocab)}
    owner = np.asarray([i for i, d in enumerate(corpus) for _ in d], dtype=np.int64)
    pairs = sorted((col[t], n) for n, t in enumerate(t for d in corpus for t in d))
    term = np.asarray([p[0] for p in pairs], dtype=np.int64)
    node = np.asarray([p[1] for p in pairs], dtype=np.int64)
    bags = _Bags(len(corpus), owner, term, node, np.ones(len(pairs)), len(vocab))
    ref = _LuceneOkapi(corpus, k1=BAGS.k1, b=BAGS.b)
    rng = random.Random(9)
    for _ in range(10):
        query = _unique_query(corpus, rng)[:-1]
        top = sum(ref.idf[q] for q in query) * (BAGS.k1 + 1)
        got = bags.scores([col[q] for q in query], len(corpus)) * top
        assert np.allclose(got, ref.get_scores(query), rtol=1e-12, atol=1e-12)


def test_sessions_are_okapi_with_lucene_idf() -> None:
    """Message search's sessions as bags of words score as rank_bm25's Okapi with Lucene's
    idf over the sessions searched (each query word once)."""
    corpus = _corpus(11, 60)
    postings: dict[str, tuple[list[int], list[float]]] = {}
    for s, doc in enumerate(corpus):
        for word in sorted(set(doc)):
            at, tf = postings.setdefault(word, ([], []))
            at.append(s)
            tf.append(float(doc.count(word)))
    index = SessionIndex(
        np.asarray([len(d) for d in corpus], dtype=np.float64),
        {w: (np.asarray(at), np.asarray(tf)) for w, (at, tf) in postings.items()},
        {"a": np.arange(30), "b": np.arange(30, 60)},
    )
    ref = _LuceneOkapi(corpus, k1=SESSION_BM25.k1, b=SESSION_BM25.b)
    inside = _LuceneOkapi(corpus[:30], k1=SESSION_BM25.k1, b=SESSION_BM25.b)
    rng = random.Random(4)
    for _ in range(10):
        query = _unique_query(corpus, rng)
        assert np.allclose(index.scores(query, None), ref.get_scores(query), rtol=1e-12)
        scoped = index.scores(query, index.searched(["a"]))
        assert np.allclose(scoped[:30], inside.get_scores(query), rtol=1e-12)
        assert not scoped[30:].any()


def test_idf_variants() -> None:
    assert idf(9, [1, 3], "plus") == pytest.approx([math.log(10), math.log(10 / 3)])
    lucene = idf(9, [1, 0], "lucene")
    assert lucene[0] == pytest.approx(math.log(1 + 8.5 / 1.5))
    assert math.isnan(lucene[1])  # a term in no document counts for nothing
    with pytest.raises(ValueError, match="unknown idf variant"):
        idf(9, [1], "okapi")  # type: ignore[arg-type]


def test_the_sessions_parameters_are_message_searchs_config() -> None:
    from layersearch.corpora.conversations.search import MessageSearchConfig

    cfg = MessageSearchConfig()
    assert (cfg.session_k1, cfg.session_b) == (SESSION_BM25.k1, SESSION_BM25.b)
    assert SESSION_BM25 == OKAPI
