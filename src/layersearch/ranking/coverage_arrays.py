"""Array building blocks of the schema channel's index (:mod:`layersearch.ranking.coverage`):
BM25 over bags of nodes (:mod:`layersearch.ranking.bm25` with :data:`BAGS`), CSR helpers
and the sort keys of its rankings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layersearch.ranking.bm25 import OKAPI, idf, term_scores

#: the schema channel's BM25 over bags of nodes: the textbook Okapi with Lucene's idf
BAGS = OKAPI


class _Bags:
    """BM25 statistics over bags of nodes (database documents or table documents), as arrays.

    A bag's term frequency is the sum of its nodes' field-weighted term weights;
    its length is its number of nodes. Per term, the bags holding it and their
    term frequencies are a CSR slice: ``bags[ptr[j]:ptr[j + 1]]``, ``tf[...]``.
    """

    def __init__(
        self,
        n_bags: int,
        owner: np.ndarray,
        term: np.ndarray,
        node: np.ndarray,
        weight: np.ndarray,
        n_terms: int,
    ):
        """``(term, node, weight)``: every (node, term) pair, sorted by term then node."""
        counts = np.bincount(owner[owner >= 0], minlength=n_bags).astype(np.float64)
        self.length = counts
        present = int(np.count_nonzero(counts))
        n = max(1, present)
        self.avg_length = float(counts.sum() / n) or 1.0
        bag = owner[node]
        keep = bag >= 0
        p_term, p_bag, p_w = term[keep], bag[keep], weight[keep]
        tf: np.ndarray = _EMPTY_F
        self.bags: np.ndarray = _EMPTY_I
        u_term: np.ndarray = _EMPTY_I
        if len(p_term):
            # one entry per (term, bag); weights summed in node order, as a per-term bincount would
            pair = p_term * np.int64(max(1, n_bags)) + p_bag
            uniq, inv = np.unique(pair, return_inverse=True)
            tf = np.bincount(inv.ravel(), weights=p_w)
            u_term = uniq // max(1, n_bags)
            self.bags = uniq - u_term * max(1, n_bags)
        self.ptr = np.searchsorted(u_term, np.arange(n_terms + 1))
        # a term in no bag is rank_bm25-style "absent" (nan): it contributes 0
        self.idf = idf(n, np.diff(self.ptr), BAGS.idf)
        # BM25 of one term in one bag depends on neither the query nor the other terms,
        # so it is kept per entry
        contrib = term_scores(self.idf[u_term], tf, self.length[self.bags], self.avg_length, BAGS)
        self.ptr, self.bags, self.contrib, self.dense_row, self.dense = _densify(
            self.ptr, self.bags, contrib, n_bags
        )

    def holding(self, j: int, n_bags: int) -> np.ndarray:
        """Whether each bag holds term ``j``."""
        out = np.zeros(n_bags, dtype=bool)
        row = self.dense_row[j]
        if row >= 0:
            out |= self.dense[row] > 0
        else:
            out[self.bags[self.ptr[j] : self.ptr[j + 1]]] = True
        return out

    def slot_scores(
        self, slots: Sequence[Slot], n_bags: int, away: Sequence[Away] = ()
    ) -> np.ndarray:
        """:meth:`scores` for a query of slots: each slot counts once in a bag, with the
        best of its terms' contributions times their weights (and the best possible
        score is the sum of each slot's best weighted idf)."""
        if all(_exact(slot) for slot in slots):
            return self.scores([slot[0][0] for slot in slots], n_bags)
        out = np.zeros(n_bags, dtype=np.float64)
        top = 0.0
        for i, slot in enumerate(slots):
            best = np.zeros(n_bags, dtype=np.float64)
            peak = 0.0
            lead = next((self.idf[j] for j, _ in slot if not np.isnan(self.idf[j])), np.nan)
            outside = away[i] if i < len(away) else None
            for j, m in slot:
                idf = self.idf[j]
                if np.isnan(idf):
                    continue
                # every reading of the word at the word's idf (``CoverageIndex._slot_idf``)
                scale = lead / idf if idf > 0 else 1.0
                peak = max(peak, m * idf * scale)
                row = self.dense_row[j]
                off = _off_for(outside, j)
                if row >= 0:
                    np.maximum(best, _cut(m * scale * self.dense[row], off), out=best)
                else:
                    lo, hi = self.ptr[j], self.ptr[j + 1]
                    at = self.bags[lo:hi]
                    best[at] = np.maximum(best[at], _cut(m * scale * self.contrib[lo:hi], off, at))
            out += best
            top += peak
        top *= BAGS.k1 + 1
        return out / top if top > 0 else np.zeros(n_bags, dtype=np.float64)

    def scores(self, query: Sequence[int], n_bags: int) -> np.ndarray:
        """BM25 of every bag, as a fraction of the best possible score (0 where no match)."""
        out = np.zeros(n_bags, dtype=np.float64)
        idfs = [self.idf[j] for j in query if not np.isnan(self.idf[j])]
        top = sum(idfs) * (BAGS.k1 + 1)
        if top <= 0:
            return out
        for j in query:
            idf = self.idf[j]
            if np.isnan(idf):
                continue
            row = self.dense_row[j]
            if row >= 0:
                out += self.dense[row]
            else:
                lo, hi = self.ptr[j], self.ptr[j + 1]
                out[self.bags[lo:hi]] += self.contrib[lo:hi]
        return out / top


#: One question word in a query: its terms with their weights (1.0: the word's own term;
#: less: a bridge to a word the catalog uses, see ``ranking.bridges``).
Slot = Sequence[tuple[int, float]]


#: A slot's readings that count only outside some bags: their terms, and whether each bag
#: is one where they do not count (None: every reading counts everywhere).
Away = tuple[frozenset[int], np.ndarray] | None


def _away_in(away: Sequence[Away], group: np.ndarray) -> list[Away]:
    """Per-group :data:`Away` masks as masks over items of the given groups (-1: none)."""
    return [None if a is None else (a[0], (group >= 0) & a[1][np.maximum(group, 0)]) for a in away]


def _off_for(outside: Away, j: int) -> np.ndarray | None:
    """Where term ``j`` does not count, or None when it counts everywhere."""
    return outside[1] if outside is not None and j in outside[0] else None


def _cut(add: np.ndarray, off: np.ndarray | None, at: np.ndarray | None = None) -> np.ndarray:
    """``add`` with zeros where ``off`` holds (``off[at]`` for a sparse slice)."""
    if off is None:
        return add
    return np.where(off if at is None else off[at], 0.0, add)


def _exact(slot: Slot) -> bool:
    return len(slot) == 1 and slot[0][1] == 1.0


_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


def _densify(
    ptr: np.ndarray, cols: np.ndarray, values: np.ndarray, n_cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split a CSR matrix (rows = terms) into sparse rows and dense ones.

    A term held by half the tables or more is cheaper as a dense row, in memory (8 bytes
    a table against 16 an entry) and in time (one contiguous add instead of a scatter);
    adding the zeros of the tables that lack it changes no sum. Returns the CSR of the
    sparse rows, each term's dense row number (-1: sparse) and the dense rows.
    """
    lengths = np.diff(ptr)
    dense_terms = np.flatnonzero(2 * lengths >= max(1, n_cols))
    row_of = np.full(len(lengths), -1, dtype=np.int64)
    row_of[dense_terms] = np.arange(len(dense_terms))
    dense = np.zeros((len(dense_terms), n_cols), dtype=np.float64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    in_dense = row_of[owner] >= 0
    dense[row_of[owner[in_dense]], cols[in_dense]] = values[in_dense]
    keep = ~in_dense
    sparse_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.where(row_of >= 0, 0, lengths), out=sparse_ptr[1:])
    return sparse_ptr, cols[keep].astype(np.int32), values[keep], row_of, dense


def _top(keys: np.ndarray, n: int) -> np.ndarray:
    """Indices of every entry whose key is among the ``n`` smallest, ties at the cut included
    (so a full sort of just these gives the same first ``n`` as a sort of all)."""
    if len(keys) <= n:
        return np.arange(len(keys))
    cut = np.partition(keys, n - 1)[n - 1]
    return np.flatnonzero(keys <= cut)


def _gather(flat: np.ndarray, ptr: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The CSR rows ``groups`` of ``flat``, concatenated in that order."""
    if not len(groups):
        return _EMPTY_I
    starts = ptr[groups]
    lens = ptr[groups + 1] - starts
    pos = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
    return flat[pos]


def _group_csr(owner: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices with ``owner >= 0`` grouped by owner (ascending within a group), and the CSR
    pointers over the ``n_groups`` owners."""
    members = np.flatnonzero(owner >= 0)
    members = members[np.argsort(owner[members], kind="stable")]
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[members], minlength=n_groups), out=ptr[1:])
    return members, ptr


def _letters(word: str) -> int:
    """The set of a lowercase ASCII word's letters as a bit mask (a → bit 0)."""
    mask = 0
    for ch in word:
        code = ord(ch) - 97
        if 0 <= code < 26:
            mask |= 1 << code
    return mask


def _pair_max(
    a: np.ndarray, b: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs, sorted, with the largest value of each."""
    if not len(a):
        return _EMPTY_I, _EMPTY_I, _EMPTY_F
    width = np.int64(int(b.max()) + 1)
    key = a.astype(np.int64) * width + b
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    # a maximum is the same whatever order it is taken in
    top = np.maximum.reduceat(values[order], starts)
    pair = key[starts]
    return pair // width, pair % width, top


def _csr(
    term: np.ndarray, table: np.ndarray, weight: np.ndarray, n_terms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Term-sorted (table, weight) pairs as CSR over terms: (pointers, tables, weights)."""
    return np.searchsorted(term, np.arange(n_terms + 1)), table, weight


def _key(values: np.ndarray) -> np.ndarray:
    """Scores as sort keys: rounded so that sums taken in another order tie as they should."""
    return np.round(values, 9)
