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
import re
import threading
import weakref
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from layersearch.ranking.analyzer import (
    analyze,
    analyze_query,
    query_compounds,
    query_words,
    split_identifier,
    stem,
)
from layersearch.ranking.bridges import (
    abbreviation_candidates,
    abbreviation_weight,
    synonym_bridges,
)
from layersearch.ranking.persist import StringTable

__all__ = ["LINK_PRIOR", "TOP_TABLES", "CoverageNode", "CoverageIndex", "links_from_edges"]

#: Weight of the join-neighbourhood coverage next to the table's own score: a
#: round prior (a neighbour's words are weaker evidence than the table's own).
LINK_PRIOR = 0.5
#: Leaves are ranked for the best TOP_TABLES tables only; the unmatched leaves
#: of the best TOP_LEAF_TABLES tables follow their matched ones (keys first).
TOP_TABLES = 50
TOP_LEAF_TABLES = 10
#: Whether a question word the catalog uses also gets bridges to other words.
BRIDGE_KNOWN_WORDS = False
BM25_K1 = 1.2
BM25_B = 0.75
#: Weight of one value-like word of the question (a number, a year, a quoted or
#: capitalised name) as evidence for the leaves whose type can hold it, as a share of
#: one average question word.
VALUE_FIT = 0.5


@dataclass(slots=True)
class CoverageNode:
    id: str
    level: str  # "group" | "table" | "leaf"
    parent: str | None
    #: field name → raw text
    fields: Mapping[str, str | None]
    #: a leaf's declared data type (``integer``, ``varchar(20)``, ``date``…), if known
    data_type: str | None = None


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
        self.idf = np.array(
            [
                math.log(1.0 + (n - d + 0.5) / (d + 0.5)) if d else math.nan
                for d in np.diff(self.ptr).tolist()
            ],
            dtype=np.float64,
        )
        # BM25 of one term in one bag depends on neither the query nor the other terms:
        # idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · length / avg_length)), kept per entry
        idf = self.idf[u_term]
        norm = 1 - BM25_B + BM25_B * self.length[self.bags] / self.avg_length
        contrib = idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
        self.ptr, self.bags, self.contrib, self.dense_row, self.dense = _densify(
            self.ptr, self.bags, contrib, n_bags
        )

    def slot_scores(self, slots: Sequence[Slot], n_bags: int) -> np.ndarray:
        """:meth:`scores` for a query of slots: each slot counts once in a bag, with the
        best of its terms' contributions times their weights (and the best possible
        score is the sum of each slot's best weighted idf)."""
        if all(_exact(slot) for slot in slots):
            return self.scores([slot[0][0] for slot in slots], n_bags)
        out = np.zeros(n_bags, dtype=np.float64)
        top = 0.0
        for slot in slots:
            best = np.zeros(n_bags, dtype=np.float64)
            peak = 0.0
            for j, m in slot:
                idf = self.idf[j]
                if np.isnan(idf):
                    continue
                peak = max(peak, m * idf)
                row = self.dense_row[j]
                if row >= 0:
                    np.maximum(best, m * self.dense[row], out=best)
                else:
                    lo, hi = self.ptr[j], self.ptr[j + 1]
                    at = self.bags[lo:hi]
                    best[at] = np.maximum(best[at], m * self.contrib[lo:hi])
            out += best
            top += peak
        top *= BM25_K1 + 1
        return out / top if top > 0 else np.zeros(n_bags, dtype=np.float64)

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


def _exact(slot: Slot) -> bool:
    return len(slot) == 1 and slot[0][1] == 1.0


_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)
_LEVELS = {"group": 0, "table": 1, "leaf": 2}


class CoverageIndex:
    """Leaves, tables and groups with their terms, for the ``schema`` channel.

    A query is answered table first: every table-level quantity (table and
    group BM25, table coverage, join-neighbourhood coverage, a table node's own
    coverage) comes from per-term table-level arrays, so its cost follows the
    number of *tables* its terms touch. Leaves only matter inside the best
    TOP_TABLES tables: their own coverage comes from a node → terms forward
    index, for those few hundred nodes only. Nodes are kept in id order, so a
    node's index is also its id tie-break.

    All state is numpy arrays and plain containers. Per-term data is CSR:
    ``x_ptr[j]:x_ptr[j + 1]`` slices the flat arrays for term ``j``.
    """

    def __init__(
        self,
        nodes: Iterable[CoverageNode],
        field_weights: Mapping[str, float],
        links: Iterable[tuple[str, str]] = (),
        keys: Collection[str] = (),
        *,
        bridges: bool | CoverageIndex = False,
    ) -> None:
        """``bridges``: lead question words the catalog does not use to words it does
        (abbreviations of them in identifiers, WordNet synonyms; ``ranking.bridges``).
        An index instead of True: take them from that index (a wider one over the same
        entities), for the terms this one has, without reading WordNet again."""
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
        n_tables = len(self.table_nodes)
        t_of = np.full(n_nodes, -1, dtype=np.int64)
        t_of[self.table_nodes] = np.arange(n_tables)
        g_of = np.full(n_nodes, -1, dtype=np.int64)
        g_of[self.group_nodes] = np.arange(len(self.group_nodes))
        self.table_idx = np.where(self.table >= 0, t_of[np.maximum(self.table, 0)], -1)
        self.group_idx = np.where(self.group >= 0, g_of[np.maximum(self.group, 0)], -1)
        # forward index: node → (term, code of its field weight in field_w), CSR over nodes
        self.vocab, self.fwd_ptr, self.fwd_term, self.fwd_code, self.field_w = _forward(
            ordered, weights
        )
        n_vocab = len(self.vocab)
        self.n_terms = np.diff(self.fwd_ptr)
        # every (node, term) pair sorted by term then node: the postings, never kept whole
        p_node = np.repeat(np.arange(n_nodes, dtype=np.int64), self.n_terms)
        order = np.argsort(self.fwd_term, kind="stable")
        p_term = self.fwd_term[order].astype(np.int64)
        p_node = p_node[order]
        p_w = self.field_w[self.fwd_code[order]]
        df = np.bincount(p_term, minlength=n_vocab).astype(np.float64)
        self.idf = np.log(1.0 + (n_nodes - df + 0.5) / (df + 0.5))
        self.tables = _Bags(n_tables, self.table_idx, p_term, p_node, p_w, n_vocab)
        self.groups = _Bags(len(self.group_nodes), self.group_idx, p_term, p_node, p_w, n_vocab)
        # a table node's own terms, per term: (compact table, weight)
        at_table = self.level[p_node] == 1
        self.town_table = t_of[p_node[at_table]]
        self.town_w = p_w[at_table]
        self.town_ptr = np.searchsorted(p_term[at_table], np.arange(n_vocab + 1))
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
        self.value_kind = np.array(
            [
                value_kind(n.data_type, n.fields.get("name")) if n.level == "leaf" else VALUE_NONE
                for n in ordered
            ],
            dtype=np.int8,
        )
        # Per table (compact numbering), what a query reads for every candidate table: read
        # through the node arrays these are scattered loads over every node of the catalog.
        self.table_group = self.group_idx[self.table_nodes]
        self.table_n_terms = self.n_terms[self.table_nodes]
        # Per term, static: each table's coverage (strongest weight of the term among its
        # nodes) and the same over the table plus its join neighbours.
        nb_ptr = np.zeros(n_tables + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.nb_src, minlength=n_tables), out=nb_ptr[1:])
        # (the tables holding a term are those of its table bag: ``self.tables.bags``)
        (self.lcov_ptr, self.lcov_table, self.lcov_w, self.lcov_row, self.lcov_dense) = _densify(
            *self._table_coverage(nb_ptr, p_term, p_node, p_w, n_vocab), n_tables
        )
        # direct children of each table node (CSR over compact table numbers)
        child_of = np.where(parent >= 0, t_of[np.maximum(parent, 0)], -1)
        self.children, self.children_ptr = _group_csr(child_of, n_tables)
        # the leaves under each table (at any depth), CSR over compact table numbers
        leaf_table = np.where(self.level == 2, self.table_idx, -1)
        self.leaves, self.leaves_ptr = _group_csr(leaf_table, n_tables)
        self._group_by_id = {self.ids[g]: k for k, g in enumerate(self.group_nodes)}
        # Vocabulary bridges (``ranking.bridges``), as arrays so that a persisted index maps
        # them: identifier parts that may abbreviate a word (with their term, first letter,
        # letter set as a bit mask, length), and question-side tokens → (term, weight) CSR.
        if isinstance(bridges, CoverageIndex):
            abbr, syn = bridges._bridges_for(self.vocab)
        else:
            abbr, syn = _bridges(ordered, self.vocab) if bridges else (([], []), {})
        parts, abbr_terms = abbr
        self.abbr_parts: list[str] = parts
        self.abbr_term = np.array(abbr_terms, dtype=np.int64)
        self.abbr_first = np.array([ord(p[0]) for p in parts], dtype=np.int32)
        self.abbr_mask = np.array([_letters(p) for p in parts], dtype=np.int64)
        self.abbr_len = np.array([len(p) for p in parts], dtype=np.int32)
        self.bridge_row: dict[str, int] = {k: i for i, k in enumerate(syn)}
        self.bridge_ptr = np.zeros(len(syn) + 1, dtype=np.int64)
        np.cumsum([len(v) for v in syn.values()], out=self.bridge_ptr[1:])
        self.bridge_term = np.array([j for v in syn.values() for j, _ in v], dtype=np.int64)
        self.bridge_w = np.array([w for v in syn.values() for _, w in v], dtype=np.float64)

    def _bridges_for(
        self, vocab: Mapping[str, int]
    ) -> tuple[tuple[list[str], list[int]], dict[str, list[tuple[int, float]]]]:
        """This index's bridges restricted to the terms of ``vocab``, in its term ids."""
        mine = {j: vocab[t] for t in vocab if (j := self.vocab.get(t)) is not None}
        abbr: tuple[list[str], list[int]] = ([], [])
        for part, j in zip(self.abbr_parts, self.abbr_term.tolist(), strict=True):
            if j in mine:
                abbr[0].append(part)
                abbr[1].append(mine[j])
        syn: dict[str, list[tuple[int, float]]] = {}
        if len(self.bridge_term):
            keep = np.isin(self.bridge_term, np.fromiter(mine, dtype=np.int64, count=len(mine)))
            rows = np.searchsorted(self.bridge_ptr, np.flatnonzero(keep), side="right") - 1
            kept = set(rows.tolist())
            for key, row in self.bridge_row.items():
                if row not in kept:
                    continue
                lo, hi = int(self.bridge_ptr[row]), int(self.bridge_ptr[row + 1])
                found = [
                    (mine[j], w)
                    for j, w in zip(
                        self.bridge_term[lo:hi].tolist(), self.bridge_w[lo:hi].tolist(), strict=True
                    )
                    if j in mine
                ]
                if found:
                    syn[key] = sorted(found)
        return abbr, syn

    def has_bridges(self) -> bool:
        return bool(len(self.abbr_term) or len(self.bridge_term))

    def _synonyms(self, key: str) -> list[tuple[int, float]]:
        row = self.bridge_row.get(key)
        if row is None:
            return []
        lo, hi = int(self.bridge_ptr[row]), int(self.bridge_ptr[row + 1])
        return list(
            zip(self.bridge_term[lo:hi].tolist(), self.bridge_w[lo:hi].tolist(), strict=True)
        )

    def _abbreviating(self, word: str) -> list[tuple[int, float]]:
        """The terms of identifier parts that abbreviate ``word``, with their weights."""
        if not len(self.abbr_term) or not word.isascii():
            return []
        maybe = np.flatnonzero(
            (self.abbr_first == ord(word[0]))
            & ((self.abbr_mask & ~np.int64(_letters(word))) == 0)
            & (self.abbr_len < len(word))
        )
        out = []
        for i in maybe.tolist():
            w = abbreviation_weight(self.abbr_parts[i], word)
            if w > 0:
                out.append((int(self.abbr_term[i]), w))
        return out

    def _table_coverage(
        self,
        nb_ptr: np.ndarray,
        term: np.ndarray,
        nodes: np.ndarray,
        weight: np.ndarray,
        n_terms: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per term (CSR): each table holding it, or a join neighbour of one, with the
        strongest weight of the term among the nodes of the table and its neighbours."""
        table = self.table_idx[nodes]
        keep = table >= 0
        t_term, t_table, t_w = _pair_max(term[keep], table[keep], weight[keep])
        if not len(self.nb_src):
            return _csr(t_term, t_table, t_w, n_terms)
        degree = nb_ptr[t_table + 1] - nb_ptr[t_table]
        total = int(degree.sum())
        starts = np.repeat(nb_ptr[t_table], degree)
        offsets = np.arange(total) - np.repeat(np.cumsum(degree) - degree, degree)
        l_term = np.concatenate([t_term, np.repeat(t_term, degree)])
        l_table = np.concatenate([t_table, self.nb_dst[starts + offsets]])
        l_w = np.concatenate([t_w, np.repeat(t_w, degree)])
        return _csr(*_pair_max(l_term, l_table, l_w), n_terms)

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

    def _mask_tables(
        self, tables: np.ndarray, scope: str | None, allowed: Collection[str] | None
    ) -> np.ndarray:
        """:meth:`_mask` for compact table numbers, from the per-table arrays."""
        if allowed is not None:
            return self._mask(self.table_nodes[tables], scope, allowed)
        keep = np.ones(len(tables), dtype=bool)
        if scope is not None:
            keep &= self.table_group[tables] == self._group_by_id.get(scope, -2)
        return keep

    def _own(self, nodes: np.ndarray, query: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Own coverage of ``nodes``: Σ idf·weight over the query terms each holds, and how
        many it holds, from the forward index. Summed in query order (as term-at-a-time)."""
        starts = self.fwd_ptr[nodes]
        lens = self.fwd_ptr[nodes + 1] - starts
        owner = np.repeat(np.arange(len(nodes)), lens)
        entry = np.arange(len(owner)) - np.repeat(np.cumsum(lens) - lens, lens) + starts[owner]
        terms = self.fwd_term[entry]
        # The entries of each query term, in query order (a node holds each term once):
        # bincount adds a bin's weights in input order, so each node's sum is added up term
        # by term in query order, as term-at-a-time would.
        match = np.concatenate([_EMPTY_I, *(np.flatnonzero(terms == j) for j in query)])
        weight = self.idf[terms[match]] * self.field_w[self.fwd_code[entry[match]]]
        mass = np.bincount(owner[match], weights=weight, minlength=len(nodes))
        count = np.bincount(owner[match], minlength=len(nodes)).astype(np.int32)
        return mass, count

    def rarest_idf(self) -> float:
        """The idf of the rarest term (1.0 for an empty index), computed once."""
        rare = getattr(self, "_rarest", None)
        if rare is None:
            rare = self._rarest = float(self.idf.max()) if len(self.idf) else 1.0
        return rare

    def _slot_tables(
        self,
        slots: Sequence[Slot],
        linked_mass: np.ndarray,
        town_mass: np.ndarray,
        town_count: np.ndarray,
    ) -> None:
        """Add each slot's best weighted link(t) and own coverage of table nodes."""
        n_tables = len(linked_mass)
        for slot in slots:
            lm = np.zeros(n_tables)
            tm = np.zeros(n_tables)
            for j, m in slot:
                idf = self.idf[j] * m
                row = self.lcov_row[j]
                if row >= 0:
                    np.maximum(lm, idf * self.lcov_dense[row], out=lm)
                else:
                    lo, hi = self.lcov_ptr[j], self.lcov_ptr[j + 1]
                    at = self.lcov_table[lo:hi]
                    lm[at] = np.maximum(lm[at], idf * self.lcov_w[lo:hi])
                lo, hi = self.town_ptr[j], self.town_ptr[j + 1]
                at = self.town_table[lo:hi]
                tm[at] = np.maximum(tm[at], idf * self.town_w[lo:hi])
            linked_mass += lm
            town_mass += tm
            town_count += tm > 0

    def _own_slots(self, nodes: np.ndarray, slots: Sequence[Slot]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_own` for a query of slots: each slot once, at its best weighted term."""
        starts = self.fwd_ptr[nodes]
        lens = self.fwd_ptr[nodes + 1] - starts
        owner = np.repeat(np.arange(len(nodes)), lens)
        entry = np.arange(len(owner)) - np.repeat(np.cumsum(lens) - lens, lens) + starts[owner]
        terms = self.fwd_term[entry]
        fw = self.field_w[self.fwd_code[entry]]
        mass = np.zeros(len(nodes))
        count = np.zeros(len(nodes), dtype=np.int32)
        for slot in slots:
            best = np.zeros(len(nodes))
            for j, m in slot:
                match = np.flatnonzero(terms == j)
                if len(match):
                    np.maximum.at(best, owner[match], m * self.idf[j] * fw[match])
            mass += best
            count += best > 0
        return mass, count

    def query_terms(self, text: str) -> list[int]:
        """The question's terms the index knows: its words, then the closed compounds
        of adjacent words (``high schoolers`` → ``highschool``), each once."""
        terms: dict[int, None] = {}
        for q in (*analyze_query(text), *query_compounds(text)):
            j = self.vocab.get(q)
            if j is not None:
                terms.setdefault(j, None)
        return list(terms)

    def query_slots(self, text: str) -> list[list[tuple[int, float]]]:
        """The question as slots (see :data:`Slot`): each known term of
        :meth:`query_terms` alone at weight 1, then, for each question word the
        catalog does not use, the catalog terms its bridges reach (abbreviations
        and synonyms), a term of the question's own never again, each slot's terms
        once at their best weight."""
        return [list(slot) for slot in _query_of(self, text)[0]]

    def query_reach(self, text: str) -> float:
        """The share of the question's plain words (:func:`analyzer.query_words`) this
        index can read: 1 for a word it uses, its best bridge weight for one it reaches
        through a bridge, 0 for one it does not know. 1 for a question without words."""
        return _query_of(self, text)[1]

    def _query(self, text: str) -> tuple[tuple[tuple[tuple[int, float], ...], ...], float]:
        slots: dict[str, dict[int, float]] = {}
        exact: set[int] = set()
        for q in (*analyze_query(text), *query_compounds(text)):
            j = self.vocab.get(q)
            if j is not None and j not in exact:
                exact.add(j)
                slots[q] = {j: 1.0}
        words = query_words(text)
        read: dict[str, float] = {key: 1.0 for _, key in words if key in slots}
        if self.has_bridges():
            keyed = [(key, raw, self._synonyms(key)) for raw, key in words]
            for (_, a, _), (_, b, _) in zip(keyed, keyed[1:], strict=False):
                pair = self._synonyms(f"{a}_{b}")
                if pair:  # "family name" → surname: the pair is a slot of its own
                    keyed.append((f"{a}_{b}", "", pair))
            for key, raw, bridged in keyed:
                if key in slots and not BRIDGE_KNOWN_WORDS:
                    continue
                reach: dict[int, float] = dict(bridged)
                for j, w in self._abbreviating(raw) if raw else ():
                    if w > reach.get(j, 0.0):
                        reach[j] = w
                for j, w in reach.items():
                    if j in exact:
                        continue
                    slot = slots.setdefault(key, {})
                    if w > slot.get(j, 0.0):
                        slot[j] = w
                if reach and raw:
                    read[key] = max(read.get(key, 0.0), max(reach.values()))
        share = sum(read.get(key, 0.0) for _, key in words) / len(words) if words else 1.0
        ordered = tuple(
            tuple(sorted(slot.items(), key=lambda t: (-t[1], t[0]))) for slot in slots.values()
        )
        return ordered, share

    def tables_by_links(self) -> list[str]:
        """Every table, the most joined first (then by id): the order in which a search
        confined to this index lists the tables its words did not reach."""
        degree = np.bincount(self.nb_src, minlength=len(self.table_nodes))
        order = np.lexsort((self.table_nodes, -degree))
        return self._ids_of(self.table_nodes[order])

    def search(
        self,
        text: str,
        k: int,
        *,
        scope: str | None = None,
        ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` tables and leaves for ``text``, within a group id and an id allowlist."""
        return self.search_levels(text, k, scope=scope, ids=ids)[0]

    def search_levels(
        self,
        text: str,
        k: int,
        *,
        scope: str | None = None,
        ids: Collection[str] | None = None,
    ) -> tuple[list[tuple[str, float]], list[int]]:
        """:meth:`search`, and each hit's level (1: table, 2: leaf): a caller need not look
        up what kind of entity each id is."""
        slots = self.query_slots(text)
        plain = all(_exact(slot) for slot in slots)
        query = [slot[0][0] for slot in slots] if plain else []
        total = float(sum(max(m * self.idf[j] for j, m in slot) for slot in slots))
        if not slots or k < 1 or total <= 0:
            return [], []
        allowed = ids if ids is None or isinstance(ids, set | frozenset) else set(ids)
        n_tables = len(self.table_nodes)
        # -- table level: every array is per table, filled from per-term table postings
        linked_mass = np.zeros(n_tables)  # link(t): coverage of t and its join neighbours
        town_mass = np.zeros(n_tables)  # own(n) of the table nodes themselves
        town_count = np.zeros(n_tables, dtype=np.int32)
        for j in query:
            idf = self.idf[j]
            row = self.lcov_row[j]
            if row >= 0:
                linked_mass += idf * self.lcov_dense[row]
            else:
                lo, hi = self.lcov_ptr[j], self.lcov_ptr[j + 1]
                linked_mass[self.lcov_table[lo:hi]] += idf * self.lcov_w[lo:hi]
            lo, hi = self.town_ptr[j], self.town_ptr[j + 1]
            town_mass[self.town_table[lo:hi]] += idf * self.town_w[lo:hi]
            town_count[self.town_table[lo:hi]] += 1
        if not plain:
            self._slot_tables(slots, linked_mass, town_mass, town_count)
        table_bm25 = self.tables.slot_scores(slots, n_tables)  # table(t)
        group_bm25 = self.groups.slot_scores(slots, len(self.group_nodes))  # group(g)
        # candidates: covered tables and the join neighbours of covered tables (bridge tables),
        # which are exactly the tables with a positive link(t): its postings hold every table
        # holding a term and every join neighbour of one, each with a positive weight
        cand_t = np.flatnonzero(linked_mass > 0)
        keep = self._mask_tables(cand_t, scope, allowed)
        cand_t = cand_t[keep]
        if not len(cand_t):
            return [], []
        cand_nodes = self.table_nodes[cand_t]
        g_idx = self.table_group[cand_t]
        group_part = np.where(g_idx >= 0, group_bm25[np.maximum(g_idx, 0)], 0.0)
        score_c = group_part + table_bm25[cand_t] + LINK_PRIOR * linked_mass[cand_t] / total
        score_t = np.full(n_tables, np.nan)
        score_t[cand_t] = score_c
        # the best tables in score order, ties by id (= node index)
        s_cand = -_key(score_c)
        top = _top(s_cand, TOP_TABLES)
        best = cand_t[top[np.lexsort((cand_nodes[top], s_cand[top]))]]
        # -- leaf level: only under the best tables. Their matched leaves are ranked; the
        # unmatched leaves of the very best follow (keys first)
        under = _gather(self.leaves, self.leaves_ptr, best[:TOP_TABLES])
        extra = _gather(self.children, self.children_ptr, best[:TOP_LEAF_TABLES])
        near = np.concatenate([under, extra])
        near_mass, near_count = self._own(near, query) if plain else self._own_slots(near, slots)
        cues = value_cues(text)
        if cues and VALUE_FIT > 0:
            near_mass = near_mass + self._value_fit(near, cues) * (VALUE_FIT * total / len(slots))
        chosen = near_count > 0
        chosen[len(under) :] = True
        leaves, first = np.unique(near[chosen], return_index=True)
        leaf_mass, leaf_count = near_mass[chosen][first], near_count[chosen][first]
        keep = self._mask(leaves, scope, allowed)
        leaves, leaf_mass, leaf_count = leaves[keep], leaf_mass[keep], leaf_count[keep]
        # -- the pool: candidate tables and the chosen leaves, with their own coverage (a table
        # among the chosen leaves, if a schema nests one under another, is counted once)
        is_cand = np.zeros(n_tables, dtype=bool)
        is_cand[cand_t] = True
        again = (self.level[leaves] == 1) & is_cand[np.maximum(self.table_idx[leaves], 0)]
        leaves, leaf_mass, leaf_count = leaves[~again], leaf_mass[~again], leaf_count[~again]
        # A candidate table's own score is score_c (its table is itself). Only the tables among
        # the k best of the tables alone can be among the k best of the pool: the pool's k-th
        # key is at most the tables' k-th, so every pool entry at or above it is kept.
        table_score = score_c + town_mass[cand_t] / total
        tsel = _top(-_key(table_score), k)
        pool = np.concatenate([cand_nodes[tsel], leaves])
        count = np.concatenate([town_count[cand_t[tsel]], leaf_count])
        score = np.concatenate(
            [table_score[tsel], score_t[self.table_idx[leaves]] + leaf_mass / total]
        )
        n_terms = np.concatenate([self.table_n_terms[cand_t[tsel]], self.n_terms[leaves]])
        precision = np.divide(count, n_terms, out=np.zeros(len(pool)), where=n_terms > 0)
        # order: score, then precision, then keys first, then id
        s_pool = -_key(score)
        sel = _top(s_pool, k)
        final = sel[np.lexsort((pool[sel], ~self.is_key[pool[sel]], -precision[sel], s_pool[sel]))]
        final = final[:k]
        nodes = pool[final]
        ids = self._ids_of(nodes)
        hits = [(i, round(x, 6)) for i, x in zip(ids, score[final].tolist(), strict=True)]
        return hits, self.level[nodes].tolist()

    def _value_fit(self, nodes: np.ndarray, cues: frozenset[int]) -> np.ndarray:
        """1 for each node whose value kind one of the question's value cues fits (a
        number: a numeric leaf that is not a key; a year: a date or year leaf; a name: a
        text leaf that is not a key), else 0."""
        kinds = self.value_kind[nodes]
        fit = np.zeros(len(nodes))
        for cue in cues:
            hit = kinds == cue
            if cue != VALUE_TIME:
                hit &= ~self.is_key[nodes]
            fit[hit] = 1.0
        return fit

    def _ids_of(self, nodes: np.ndarray) -> list[str]:
        """The ids of node numbers (a persisted index decodes them in one call)."""
        if isinstance(self.ids, StringTable):
            return self.ids.take(nodes)
        return [self.ids[i] for i in nodes.tolist()]


VALUE_NONE, VALUE_NUMBER, VALUE_TEXT, VALUE_TIME = 0, 1, 2, 3
_NUMERIC_TYPES = re.compile(
    r"int|number|numeric|decimal|float|double|real|money|serial", re.IGNORECASE
)
_TIME_TYPES = re.compile(r"date|time|year", re.IGNORECASE)
_TEXT_TYPES = re.compile(r"char|text|string|clob", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)s?\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w.])")
_QUOTED = re.compile(r"['\"\u2018\u201c]([^'\"\u2019\u201d]{1,60})['\"\u2019\u201d]")
_CAPITALISED = re.compile(r"(?<=[\w,;:)] )[A-Z][\w.'-]*")


def value_kind(data_type: str | None, name: str | None) -> int:
    """What kind of question value a leaf can hold: a date or year (its type, or a
    name part ``year``/``date``), a number, a text; VALUE_NONE when its type is unknown
    and its name says nothing."""
    parts = split_identifier(name) if name else []
    if (data_type and _TIME_TYPES.search(data_type)) or any(p in ("year", "date") for p in parts):
        return VALUE_TIME
    if not data_type:
        return VALUE_NONE
    if _NUMERIC_TYPES.search(data_type):
        return VALUE_NUMBER
    if _TEXT_TYPES.search(data_type):
        return VALUE_TEXT
    return VALUE_NONE


def value_cues(text: str) -> frozenset[int]:
    """The kinds of values a question names: a year (1800–2099), another number, a
    quoted string or a capitalised word that does not start a sentence (a name:
    "flights from 'APG'", "cities in France")."""
    cues: set[int] = set()
    if _YEAR.search(text):
        cues.add(VALUE_TIME)
    if any(not _YEAR.fullmatch(m.group(0)) for m in _NUMBER.finditer(text)):
        cues.add(VALUE_NUMBER)
    if _QUOTED.search(text) or _CAPITALISED.search(text):
        cues.add(VALUE_TEXT)
    return frozenset(cues)


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


def _forward(
    ordered: Sequence[CoverageNode], weights: Mapping[str, float]
) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The vocabulary (term ids by first appearance) and each node's terms with the code of
    the strongest field weight it has them in, as CSR over nodes."""
    codes = {w: c for c, w in enumerate(sorted(set(weights.values())))}
    field_w = np.array(sorted(codes), dtype=np.float64)
    vocab: dict[str, int] = {}
    # Catalogs repeat themselves (the same column, label and description in many models):
    # analyse each distinct field text once, and merge each distinct set of fields once.
    analysed: dict[str, tuple[int, ...]] = {}
    merged: dict[tuple[tuple[str, str | None], ...], tuple[list[int], list[int]]] = {}
    ptr = np.zeros(len(ordered) + 1, dtype=np.int64)
    terms: list[int] = []
    coded: list[int] = []
    for i, n in enumerate(ordered):
        fields = tuple(n.fields.items())
        done = merged.get(fields)
        if done is None:
            mine: dict[int, float] = {}
            for name, text in fields:
                w = weights.get(name, 0.0)
                if w <= 0 or not text:
                    continue
                toks = analysed.get(text)
                if toks is None:
                    toks = analysed[text] = tuple(
                        vocab.setdefault(tok, len(vocab)) for tok in analyze(text)
                    )
                for tok in toks:
                    if mine.get(tok, 0.0) < w:
                        mine[tok] = w
            done = merged[fields] = (list(mine), [codes[w] for w in mine.values()])
        terms += done[0]
        coded += done[1]
        ptr[i + 1] = len(terms)
    return (
        vocab,
        ptr,
        np.array(terms, dtype=np.int32),
        np.array(coded, dtype=np.int8),
        field_w,
    )


def _bridges(
    ordered: Sequence[CoverageNode], vocab: Mapping[str, int]
) -> tuple[tuple[list[str], list[int]], dict[str, list[tuple[int, float]]]]:
    """The index's vocabulary bridges: the identifier parts of names and labels that may
    abbreviate a word, with their terms; WordNet synonyms of its terms."""
    from layersearch.ranking.lexicon import wordnet

    parts: set[str] = set()
    seen: set[str] = set()
    for n in ordered:
        for name in ("name", "label"):
            text = n.fields.get(name)
            if not text or text in seen:
                continue
            seen.add(text)
            for word in text.split():
                parts.update(split_identifier(word))
    wn = wordnet()
    candidates = abbreviation_candidates(parts, wn.is_word if wn is not None else None)
    found = [(p, vocab[stem(p)]) for p in candidates if stem(p) in vocab]
    terms = {t: j for t, j in vocab.items() if t.replace("_", "").isalpha()}
    abbr = ([p for p, _ in found], [j for _, j in found])
    return abbr, synonym_bridges(terms)


_QUERIES: weakref.WeakKeyDictionary[
    CoverageIndex, dict[str, tuple[tuple[tuple[tuple[int, float], ...], ...], float]]
] = weakref.WeakKeyDictionary()
_QUERIES_LOCK = threading.Lock()
#: Questions remembered per index: the schema channel and fusion both ask, once per search.
_QUERIES_KEPT = 8


def _query_of(
    index: CoverageIndex, text: str
) -> tuple[tuple[tuple[tuple[int, float], ...], ...], float]:
    """A question's slots and reach on an index, computed once per search (a few recent
    questions kept per index; the index is not kept alive by it)."""
    with _QUERIES_LOCK:
        recent = _QUERIES.get(index)
        found = recent.get(text) if recent is not None else None
    if found is not None:
        return found
    found = index._query(text)
    with _QUERIES_LOCK:
        recent = _QUERIES.setdefault(index, {})
        if len(recent) >= _QUERIES_KEPT:
            recent.pop(next(iter(recent)))
        recent[text] = found
    return found


def _letters(word: str) -> int:
    """The set of a lowercase ASCII word's letters as a bit mask (a → bit 0)."""
    mask = 0
    for ch in word:
        code = ord(ch) - 97
        if 0 <= code < 26:
            mask |= 1 << code
    return mask


def lemma_key(lemma: str) -> str:
    """The analyzer's token for a WordNet lemma: the stem of one word, the lowercased
    identifier of several (``last_name``)."""
    return stem(lemma) if lemma.isalpha() else lemma.lower()


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
