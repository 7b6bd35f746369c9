"""The ``schema`` channel: lexical evidence aggregated up the schema hierarchy.

A question names several things at once ("cities in Asia where Chinese is the
official language"): each word lands on a different column, of a different
table, of the same database. One entity's own text covers a few of those
words; its table (the table's name plus all its columns) covers more; its
database covers most. So an entity is scored by its whole context:

    score(n) = (group(g) + table(t) + LINK_PRIOR · link(t) + own(n)) / W

- ``group(g)``: BM25 of the query against the *database document* (every
  node of the datasource as one bag of terms), idf over databases, scaled to
  the query's idf mass. Database coherence: the gold tables of one question
  live in one database, so a database that covers the question as a whole
  lifts all its tables. BM25's length normalisation keeps a database with
  hundreds of columns from winning on chance matches.
- ``table(t)``: BM25 against the *table document* (the table and all its
  leaves), idf over tables, scaled likewise.
- ``link(t)``: the query-term coverage of the table together with its join
  neighbours (foreign keys): a bridge table (``has_pet``) holds only keys but
  is meant when the question spans both tables it links. Join neighbours of
  matched tables are candidates even when nothing of their own matched.
- ``own(n)``: the query-term coverage of the entity's own text (each term
  once, weighted by the strongest field it appears in).
- ``W``: the query's idf mass (entity-level idf), so every level is on the
  same scale (coverage of 1.0 = every query word).

Coverage counts each query term once: short identifiers repeat words, and a
table with 40 columns named ``*_id`` is no more about ids. Field weights are
the full-text boosts normalised to the name field; BM25 uses the textbook
k1 = 1.2, b = 0.75. Ties (coverage is discrete) are broken by precision (the
share of the entity's own terms the query covers: an exact name beats a
longer one that contains it), then keys first (primary and join keys: a
query that uses a table usually joins on them), then id.

Levels: ``group`` (datasource), ``table`` (model), ``leaf`` (column, measure,
aggregation). Tables and leaves are ranked; groups only give context.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from layersearch.ranking.analyzer import analyze, analyze_query, query_compounds

__all__ = ["LINK_PRIOR", "TOP_TABLES", "CoverageNode", "CoverageIndex", "links_from_edges"]

#: Weight of the join-neighbourhood coverage next to the table's own score: a
#: round prior (a neighbour's words are weaker evidence than the table's own).
LINK_PRIOR = 0.5
#: Leaves are ranked for the best TOP_TABLES tables only; the unmatched leaves
#: of the best TOP_LEAF_TABLES tables follow their matched ones (keys first).
TOP_TABLES = 50
TOP_LEAF_TABLES = 10
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(slots=True)
class CoverageNode:
    id: str
    level: str  # "group" | "table" | "leaf"
    parent: str | None
    #: field name → raw text
    fields: Mapping[str, str | None]


class _Bags:
    """BM25 statistics over bags of nodes (database documents or table documents), as arrays.

    A bag's term frequency is the sum of its nodes' field-weighted term weights;
    its length is its number of nodes.
    """

    def __init__(self, n_bags: int, owner: np.ndarray, post: list[tuple[np.ndarray, np.ndarray]]):
        counts = np.bincount(owner[owner >= 0], minlength=n_bags).astype(np.float64)
        self.length = counts
        present = int(np.count_nonzero(counts))
        n = max(1, present)
        self.avg_length = float(counts.sum() / n) or 1.0
        self.bags: list[np.ndarray] = []
        self.tf: list[np.ndarray] = []
        idf = np.zeros(len(post), dtype=np.float64)
        for j, (nodes, weights) in enumerate(post):
            b = owner[nodes]
            keep = b >= 0
            if not keep.any():
                self.bags.append(_EMPTY_I)
                self.tf.append(_EMPTY_F)
                idf[j] = np.nan  # the term is in no bag: rank_bm25-style "absent", contributes 0
                continue
            uniq, inv = np.unique(b[keep], return_inverse=True)
            self.bags.append(uniq)
            self.tf.append(np.bincount(inv, weights=weights[keep]))
            idf[j] = math.log(1.0 + (n - len(uniq) + 0.5) / (len(uniq) + 0.5))
        self.idf = idf

    def scores(self, query: Sequence[int], n_bags: int) -> np.ndarray:
        """BM25 of every bag, as a fraction of the best possible score (0 where no match)."""
        out = np.zeros(n_bags, dtype=np.float64)
        idfs = [self.idf[j] for j in query if not np.isnan(self.idf[j])]
        top = sum(idfs) * (BM25_K1 + 1)
        if top <= 0:
            return out
        for j in query:
            idf = self.idf[j]
            if np.isnan(idf):
                continue
            bags, tf = self.bags[j], self.tf[j]
            norm = 1 - BM25_B + BM25_B * self.length[bags] / self.avg_length
            out[bags] += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
        return out / top


_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_LEVELS = {"group": 0, "table": 1, "leaf": 2}


class CoverageIndex:
    """Leaves, tables and groups with their terms, for the ``schema`` channel.

    Everything a query touches is an array (postings per term, bags per term,
    join pairs), so a query costs numpy work proportional to its terms'
    postings, not Python loops over them. Nodes are kept in id order, so a
    node's index is also its id tie-break.
    """

    def __init__(
        self,
        nodes: Iterable[CoverageNode],
        field_weights: Mapping[str, float],
        links: Iterable[tuple[str, str]] = (),
        keys: Collection[str] = (),
    ) -> None:
        top = max(field_weights.values(), default=1.0) or 1.0
        weights = {f: w / top for f, w in field_weights.items() if w > 0}
        ordered = sorted(nodes, key=lambda n: n.id)
        self.ids: list[str] = [n.id for n in ordered]
        index = {node_id: i for i, node_id in enumerate(self.ids)}
        n_nodes = len(ordered)
        self.level = np.array([_LEVELS[n.level] for n in ordered], dtype=np.int8)
        parent = np.array(
            [index.get(n.parent, -1) if n.parent is not None else -1 for n in ordered],
            dtype=np.int64,
        )
        self.table = self._up_to(parent, 1)
        self.group = self._up_to(parent, 0)
        # compact numbering of tables and groups
        self.table_nodes = np.flatnonzero(self.level == 1)
        self.group_nodes = np.flatnonzero(self.level == 0)
        t_of = np.full(n_nodes, -1, dtype=np.int64)
        t_of[self.table_nodes] = np.arange(len(self.table_nodes))
        g_of = np.full(n_nodes, -1, dtype=np.int64)
        g_of[self.group_nodes] = np.arange(len(self.group_nodes))
        self.table_idx = np.where(self.table >= 0, t_of[np.maximum(self.table, 0)], -1)
        self.group_idx = np.where(self.group >= 0, g_of[np.maximum(self.group, 0)], -1)
        # postings: term → (nodes ascending, field weight of the term in that node)
        vocab: dict[str, int] = {}
        p_nodes: list[list[int]] = []
        p_weights: list[list[float]] = []
        n_terms = np.zeros(n_nodes, dtype=np.int64)
        for i, n in enumerate(ordered):
            terms = _terms(n.fields, weights)
            n_terms[i] = len(terms)
            for tok, w in terms.items():
                j = vocab.get(tok)
                if j is None:
                    j = vocab[tok] = len(p_nodes)
                    p_nodes.append([])
                    p_weights.append([])
                p_nodes[j].append(i)
                p_weights[j].append(w)
        self.vocab = vocab
        self.n_terms = n_terms
        self.post = [
            (np.asarray(a, dtype=np.int64), np.asarray(w, dtype=np.float64))
            for a, w in zip(p_nodes, p_weights, strict=True)
        ]
        df = np.array([len(a) for a in p_nodes], dtype=np.float64)
        self.idf = np.log(1.0 + (n_nodes - df + 0.5) / (df + 0.5))
        self.tables = _Bags(len(self.table_nodes), self.table_idx, self.post)
        self.groups = _Bags(len(self.group_nodes), self.group_idx, self.post)
        src: list[int] = []
        dst: list[int] = []
        for a, b in links:
            ia, ib = index.get(a, -1), index.get(b, -1)
            if ia < 0 or ib < 0 or ia == ib:
                continue
            ta, tb = self.table_idx[ia], self.table_idx[ib]
            if self.level[ia] == 1 and self.level[ib] == 1 and ta != tb:
                src += [int(ta), int(tb)]
                dst += [int(tb), int(ta)]
        pairs = sorted(set(zip(src, dst, strict=True)))
        self.nb_src = np.array([p[0] for p in pairs], dtype=np.int64)
        self.nb_dst = np.array([p[1] for p in pairs], dtype=np.int64)
        self.is_key = np.array([node_id in keys for node_id in self.ids], dtype=bool)
        # Per term, static: each table's coverage (strongest weight of the term among its
        # nodes) and the same over the table plus its join neighbours.
        n_tables = len(self.table_nodes)
        nb_ptr = np.zeros(n_tables + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.nb_src, minlength=n_tables), out=nb_ptr[1:])
        self.tcov, self.lcov = self._table_coverage(nb_ptr)
        # direct children of each table node (CSR over compact table numbers)
        child_of = np.where(parent >= 0, t_of[np.maximum(parent, 0)], -1)
        kids = np.flatnonzero(child_of >= 0)
        order = np.argsort(child_of[kids], kind="stable")
        self.children = kids[order]
        self.children_ptr = np.zeros(len(self.table_nodes) + 1, dtype=np.int64)
        np.cumsum(
            np.bincount(child_of[kids], minlength=len(self.table_nodes)), out=self.children_ptr[1:]
        )
        self._group_by_id = {self.ids[g]: k for k, g in enumerate(self.group_nodes)}

    def _table_coverage(
        self, nb_ptr: np.ndarray
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[tuple[np.ndarray, np.ndarray]]]:
        """Per term: (tables, strongest weight of the term among each table's nodes), and the
        same over each table plus its join neighbours. Computed for all terms at once."""
        n_terms = len(self.post)
        sizes = np.array([len(p[0]) for p in self.post], dtype=np.int64)
        term = np.repeat(np.arange(n_terms, dtype=np.int64), sizes)
        nodes = np.concatenate([p[0] for p in self.post]) if n_terms else _EMPTY_I
        weight = np.concatenate([p[1] for p in self.post]) if n_terms else _EMPTY_F
        table = self.table_idx[nodes]
        keep = table >= 0
        t_term, t_table, t_w = _pair_max(term[keep], table[keep], weight[keep])
        tcov = _split(t_term, t_table, t_w, n_terms)
        if not len(self.nb_src):
            return tcov, tcov
        degree = nb_ptr[t_table + 1] - nb_ptr[t_table]
        total = int(degree.sum())
        starts = np.repeat(nb_ptr[t_table], degree)
        offsets = np.arange(total) - np.repeat(np.cumsum(degree) - degree, degree)
        l_term = np.concatenate([t_term, np.repeat(t_term, degree)])
        l_table = np.concatenate([t_table, self.nb_dst[starts + offsets]])
        l_w = np.concatenate([t_w, np.repeat(t_w, degree)])
        return tcov, _split(*_pair_max(l_term, l_table, l_w), n_terms)

    def _up_to(self, parent: np.ndarray, level: int) -> np.ndarray:
        """For every node, the nearest node at ``level`` on its parent chain (itself included)."""
        out = np.where(self.level == level, np.arange(len(parent)), -1)
        cur = parent.copy()
        todo = out < 0
        while True:
            hit = todo & (cur >= 0)
            if not hit.any():
                break
            at_level = hit & (self.level[np.maximum(cur, 0)] == level)
            out[at_level] = cur[at_level]
            todo &= ~at_level
            step = todo & (cur >= 0)
            cur = np.where(step, parent[np.maximum(cur, 0)], -1)
        return out

    def _mask(
        self, nodes: np.ndarray, scope: str | None, allowed: Collection[str] | None
    ) -> np.ndarray:
        keep = np.ones(len(nodes), dtype=bool)
        if scope is not None:
            g = self._group_by_id.get(scope, -2)
            keep &= self.group_idx[nodes] == g
        if allowed is not None:
            keep &= np.fromiter((self.ids[i] in allowed for i in nodes.tolist()), bool, len(nodes))
        return keep

    def query_terms(self, text: str) -> list[int]:
        """The question's terms the index knows: its words, then the closed compounds
        of adjacent words (``high schoolers`` → ``highschool``), each once."""
        terms: dict[int, None] = {}
        for q in (*analyze_query(text), *query_compounds(text)):
            j = self.vocab.get(q)
            if j is not None:
                terms.setdefault(j, None)
        return list(terms)

    def search(
        self,
        text: str,
        k: int,
        *,
        scope: str | None = None,
        ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` tables and leaves for ``text``, within a group id and an id allowlist."""
        query = self.query_terms(text)
        total = float(sum(self.idf[j] for j in query))
        if not query or k < 1 or total <= 0:
            return []
        allowed = ids if ids is None or isinstance(ids, set | frozenset) else set(ids)
        n_tables = len(self.table_nodes)
        # the entity's own coverage: Σ idf·weight over the query terms it holds (a term's
        # postings hold each node once, so plain fancy-index adds are exact)
        own_mass = np.zeros(len(self.ids))
        own_count = np.zeros(len(self.ids), dtype=np.int32)
        linked_mass = np.zeros(n_tables)
        covered = np.zeros(n_tables, dtype=bool)
        for j in query:
            nodes, w = self.post[j]
            own_mass[nodes] += self.idf[j] * w
            own_count[nodes] += 1
            covered[self.tcov[j][0]] = True
            tables, linked = self.lcov[j]
            linked_mass[tables] += self.idf[j] * linked
        matched = np.flatnonzero(own_count)
        table_bm25 = self.tables.scores(query, n_tables)
        group_bm25 = self.groups.scores(query, len(self.group_nodes))
        # candidates: covered tables and the join neighbours of covered tables (bridge tables)
        cand = covered.copy()
        if len(self.nb_src):
            cand[self.nb_src[covered[self.nb_dst]]] = True
        cand_t = np.flatnonzero(cand)
        cand_nodes = self.table_nodes[cand_t]
        keep = self._mask(cand_nodes, scope, allowed)
        cand_t, cand_nodes = cand_t[keep], cand_nodes[keep]
        if not len(cand_t):
            return []
        g_idx = self.group_idx[cand_nodes]
        group_part = np.where(g_idx >= 0, group_bm25[np.maximum(g_idx, 0)], 0.0)
        score_t = np.full(n_tables, np.nan)
        score_t[cand_t] = group_part + table_bm25[cand_t] + LINK_PRIOR * linked_mass[cand_t] / total
        # tables in score order, ties by id (= node index)
        order = np.lexsort((cand_nodes, -_key(score_t[cand_t])))
        best = cand_t[order]
        ranked = np.zeros(n_tables, dtype=bool)
        ranked[best[:TOP_TABLES]] = True
        leaf_sel = (self.level[matched] == 2) & (self.table_idx[matched] >= 0)
        leaf_sel &= ranked[np.maximum(self.table_idx[matched], 0)]
        extra = [
            self.children[self.children_ptr[t] : self.children_ptr[t + 1]]
            for t in best[:TOP_LEAF_TABLES]
        ]
        leaves = (
            np.unique(np.concatenate([matched[leaf_sel], *extra]))
            if extra or leaf_sel.any()
            else _EMPTY_I
        )
        leaves = leaves[self._mask(leaves, scope, allowed)]
        # own coverage and match counts for leaves and candidate tables
        pool = np.unique(np.concatenate([cand_nodes, leaves]))
        score = score_t[self.table_idx[pool]] + own_mass[pool] / total
        count = own_count[pool]
        n_terms = self.n_terms[pool]
        precision = np.divide(count, n_terms, out=np.zeros(len(pool)), where=n_terms > 0)
        final = np.lexsort((pool, ~self.is_key[pool], -precision, -_key(score)))[:k]
        return [(self.ids[pool[i]], round(float(score[i]), 6)) for i in final]


def _pair_max(
    a: np.ndarray, b: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs, sorted, with the largest value of each."""
    if not len(a):
        return _EMPTY_I, _EMPTY_I, _EMPTY_F
    order = np.lexsort((values, b, a))
    a, b, v = a[order], b[order], values[order]
    last = np.r_[(a[1:] != a[:-1]) | (b[1:] != b[:-1]), True]
    return a[last], b[last], v[last]


def _split(
    term: np.ndarray, table: np.ndarray, weight: np.ndarray, n_terms: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per-term slices of term-sorted (table, weight) pairs."""
    bounds = np.searchsorted(term, np.arange(n_terms + 1))
    return [
        (table[bounds[j] : bounds[j + 1]], weight[bounds[j] : bounds[j + 1]])
        for j in range(n_terms)
    ]


def _key(values: np.ndarray) -> np.ndarray:
    """Scores as sort keys: rounded so that sums taken in another order tie as they should."""
    return np.round(values, 9)


def _terms(fields: Mapping[str, str | None], weights: Mapping[str, float]) -> dict[str, float]:
    terms: dict[str, float] = {}
    for name, text in fields.items():
        w = weights.get(name, 0.0)
        if w <= 0 or not text:
            continue
        for tok in analyze(text):
            if terms.get(tok, 0.0) < w:
                terms[tok] = w
    return terms


def _raise(cov: dict[str, float], q: str, w: float) -> None:
    if cov.get(q, 0.0) < w:
        cov[q] = w


def links_from_edges(edges: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Undirected pairs, deduplicated, in a stable order."""
    return sorted({(a, b) if a < b else (b, a) for a, b in edges if a != b})
