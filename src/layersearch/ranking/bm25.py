"""The one BM25 of the package: its term weight, its idf variants and their parameters,
and BM25Plus over token lists, sparse and vectorised.

Every BM25 score in the ranking is :func:`term_scores` (``idf·tf·(k1+1)/(tf+k1·(1-b+
b·len/avglen))``) with an :func:`idf` variant and a :class:`BM25Params`:

- :data:`TAGS` (k1 = 1.5, b = 0.75, BM25+ idf ln((N+1)/df), δ = 1): :class:`BM25Plus`,
  channel 1's entity-tag overlap; exactly ``rank_bm25.BM25Plus``'s scores;
- :data:`OKAPI` (the textbook k1 = 1.2, b = 0.75, Lucene's idf ln(1+(N-df+0.5)/(df+0.5)),
  never negative): the schema channel's bags of nodes (``coverage_arrays``) and message
  search's sessions (``conversations.sessions``).

:class:`BM25Plus` scores are exactly those of ``rank_bm25.BM25Plus`` on the same tokens
(a test checks it with ``allclose``): every query term present in the corpus adds
``idf·δ`` to *every* document, and a matching document adds the term weight on top.
The constant part does not change the order, so only documents that match at least
one query term are returned as hits; :meth:`BM25Plus.scores` still gives the full vector.

:class:`EntityOverlapIndex` is channel 1: documents are entity-tag lists of
canonical dotted ids; a tag also speaks, more softly, for its ancestors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from layersearch.ranking.params import ANCESTOR_WEIGHT

__all__ = [
    "ANCESTOR_WEIGHT",
    "OKAPI",
    "TAGS",
    "BM25Params",
    "BM25Plus",
    "EntityOverlapIndex",
    "IdfVariant",
    "ancestors",
    "idf",
    "term_scores",
]

#: ``plus``: ln((N+1)/df), rank_bm25's BM25Plus; ``lucene``: ln(1+(N-df+0.5)/(df+0.5)),
#: positive for every df ≤ N (a term in no document: nan, which callers skip)
IdfVariant = Literal["plus", "lucene"]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """The parameters of one use of BM25: term-frequency saturation ``k1``, length
    normalisation ``b``, the :data:`IdfVariant`, and BM25+'s ``delta`` (the lower bound
    each present query term adds; only :class:`BM25Plus` reads it)."""

    k1: float = 1.5
    b: float = 0.75
    idf: IdfVariant = "plus"
    delta: float = 1.0


#: channel 1, entity-tag overlap: rank_bm25.BM25Plus's defaults
TAGS = BM25Params()
#: the textbook Okapi parameters with Lucene's idf: schema bags and message sessions
OKAPI = BM25Params(k1=1.2, b=0.75, idf="lucene", delta=0.0)


def idf(n_docs: int, df: np.ndarray | Sequence[int], variant: IdfVariant) -> np.ndarray:
    """Each term's idf among ``n_docs`` documents from its document frequency ``df``."""
    if variant == "plus":
        return np.log((n_docs + 1) / np.asarray(df, dtype=np.float64))
    if variant == "lucene":
        counts = df.tolist() if isinstance(df, np.ndarray) else list(df)
        return np.array(
            [math.log(1.0 + (n_docs - d + 0.5) / (d + 0.5)) if d else math.nan for d in counts],
            dtype=np.float64,
        )
    raise ValueError(f"unknown idf variant {variant!r}: plus or lucene")


def term_scores(
    term_idf: np.ndarray | float,
    tf: np.ndarray,
    length: np.ndarray,
    avg_length: float,
    params: BM25Params,
) -> np.ndarray:
    """BM25's weight of a term in each document: ``idf·tf·(k1+1)/(tf+k1·(1-b+b·len/avglen))``
    (elementwise over ``tf`` and the documents' ``length``)."""
    k1, b = params.k1, params.b
    return term_idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))


class BM25Plus:
    def __init__(
        self,
        corpus: Sequence[Sequence[str]],
        k1: float = TAGS.k1,
        b: float = TAGS.b,
        delta: float = TAGS.delta,
        idf_variant: IdfVariant = "plus",
    ) -> None:
        """BM25 with ``k1``, ``b``, ``delta`` and the idf variant (``plus``: rank_bm25's
        BM25Plus; with ``delta=0`` and ``lucene``, the Okapi weight of :data:`OKAPI`)."""
        self.k1, self.b, self.delta = k1, b, delta
        self.params = BM25Params(k1=k1, b=b, idf=idf_variant, delta=delta)
        self.n_docs = len(corpus)
        self.vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        doc_len = np.zeros(self.n_docs, dtype=np.float64)
        for i, doc in enumerate(corpus):
            doc_len[i] = len(doc)
            counts: dict[str, int] = {}
            for tok in doc:
                counts[tok] = counts.get(tok, 0) + 1
            for tok, c in counts.items():
                j = self.vocab.setdefault(tok, len(self.vocab))
                rows.append(i)
                cols.append(j)
                tfs.append(c)
        self.avgdl = float(doc_len.sum() / self.n_docs) if self.n_docs else 0.0
        tf = np.asarray(tfs, dtype=np.float64)
        col_idx = np.asarray(cols, dtype=np.int64)
        row_idx = np.asarray(rows, dtype=np.int64)
        df = np.bincount(col_idx, minlength=len(self.vocab)).astype(np.float64)
        self.idf = idf(self.n_docs, df, idf_variant) if len(df) else df
        # a posting means a token, so the mean length is positive whenever there is one
        weight = (
            term_scores(self.idf[col_idx], tf, doc_len[row_idx], self.avgdl, self.params)
            if len(tf)
            else tf
        )
        # Column-major postings (CSC by hand, to keep scipy off the import path):
        # one query term = one contiguous slice of (doc, weight) pairs, docs ascending.
        order = np.lexsort((row_idx, col_idx))
        self._indices = row_idx[order]
        self._data = weight[order]
        self._indptr = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=self._indptr[1:])

    def _term_weights(self, query: Sequence[str]) -> dict[int, float]:
        """Vocabulary column → multiplicity (a repeated query term counts twice, as in rank_bm25)."""
        out: dict[int, float] = {}
        for q in query:
            j = self.vocab.get(q)
            if j is not None:
                out[j] = out.get(j, 0.0) + 1.0
        return out

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """Full score vector, identical to rank_bm25.BM25Plus.get_scores."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        for j, mult in self._term_weights(query).items():
            out += mult * self.idf[j] * self.delta
            lo, hi = self._indptr[j], self._indptr[j + 1]
            np.add.at(out, self._indices[lo:hi], mult * self._data[lo:hi])
        return out

    def matching(self, query: Sequence[str], weight: float = 1.0) -> dict[int, float]:
        """Documents matching ≥ 1 term → their full BM25Plus score (times ``weight``)."""
        terms = self._term_weights(query)
        if not terms:
            return {}
        base = sum(m * self.idf[j] * self.delta for j, m in terms.items())
        acc: dict[int, float] = {}
        for j, mult in terms.items():
            lo, hi = self._indptr[j], self._indptr[j + 1]
            idx = self._indices[lo:hi]
            vals = self._data[lo:hi] * mult
            for d, v in zip(idx.tolist(), vals.tolist(), strict=True):
                acc[d] = acc.get(d, base) + v
        if weight != 1.0:
            return {d: s * weight for d, s in acc.items()}
        return acc


def ancestors(entity_id: str) -> list[str]:
    """``shop.orders.total`` → [``shop.orders``, ``shop``]; memories have none."""
    if entity_id.startswith("memory:"):
        return []
    parts = entity_id.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


class EntityOverlapIndex:
    """Channel 1: BM25Plus between the query's entities and each document's tags.

    The exact index scores a document on the tags it carries (plus its own id);
    the ancestor index on the ancestors of those tags, weighted by
    ``ancestor_weight`` (:data:`ANCESTOR_WEIGHT`). A document's score is the sum of both.
    """

    def __init__(self, docs: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.doc_ids = [d for d, _ in docs]
        exact: list[list[str]] = []
        up: list[list[str]] = []
        for doc_id, tags in docs:
            lowered = [t.lower() for t in tags]
            exact.append([doc_id.lower(), *lowered])
            anc: list[str] = []
            for t in lowered:
                anc.extend(ancestors(t))
            up.append(anc)
        self.exact = BM25Plus(exact)
        self.up = BM25Plus(up) if any(up) else None

    def __len__(self) -> int:
        return len(self.doc_ids)

    def search(
        self, entities: Sequence[str], k: int, ancestor_weight: float = ANCESTOR_WEIGHT
    ) -> list[tuple[str, float]]:
        if not self.doc_ids or not entities:
            return []
        q = [e.lower() for e in entities]
        scores = self.exact.matching(q)
        if self.up is not None:
            for d, s in self.up.matching(q, ancestor_weight).items():
                scores[d] = scores.get(d, 0.0) + s
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], self.doc_ids[kv[0]]))
        return [(self.doc_ids[d], float(s)) for d, s in ranked[:k] if math.isfinite(s)]
