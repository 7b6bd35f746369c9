"""The ``schema`` channel: lexical evidence aggregated up the schema hierarchy.

A question names several things at once ("cities in Asia where Chinese is the
official language"): each word lands on a different column, of a different
table, of the same database. One entity's own text covers a few of those
words; its table (the table's name plus all its columns) covers more; its
database covers most. So an entity is scored by its whole context:

    score(n) = (group(g) + table(t) + link_prior · link(t) + own(n)) / W

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

import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import numpy as np

from layersearch.ranking import params as tuned
from layersearch.ranking.analyzer import (
    analyze_query,
    query_compounds,
)
from layersearch.ranking.bridges import (
    abbreviation_weight,
    keeps_word_start,
    truncation_weight,
)
from layersearch.ranking.coverage_arrays import (
    _EMPTY_I,
    Away,
    Slot,
    _away_in,
    _Bags,
    _csr,
    _cut,
    _densify,
    _exact,
    _gather,
    _group_csr,
    _key,
    _letters,
    _off_for,
    _pair_max,
    _top,
)
from layersearch.ranking.coverage_cut import bridges_for
from layersearch.ranking.coverage_terms import (
    VALUE_NONE,
    VALUE_NUMBER,
    VALUE_TEXT,
    VALUE_TIME,
    Bridges,
    CoverageNode,
    Forward,
    QueryReading,
    _bridges,
    _forward,
    links_from_edges,
    read_query,
    value_cues,
    value_fit,
    value_kind,
)
from layersearch.ranking.persist import StringTable

__all__ = [
    "VALUE_NONE",
    "VALUE_NUMBER",
    "VALUE_TEXT",
    "VALUE_TIME",
    "CoverageNode",
    "CoverageIndex",
    "links_from_edges",
    "value_cues",
    "value_kind",
]


_LEVELS = {"group": 0, "table": 1, "leaf": 2}


class CoverageIndex:
    """Leaves, tables and groups with their terms, for the ``schema`` channel.

    A query is answered table first: every table-level quantity (table and
    group BM25, table coverage, join-neighbourhood coverage, a table node's own
    coverage) comes from per-term table-level arrays, so its cost follows the
    number of *tables* its terms touch. Leaves only matter inside the best
    ``top_tables`` tables: their own coverage comes from a node → terms forward
    index, for those few hundred nodes only. Nodes are kept in id order, so a
    node's index is also its id tie-break.

    All state is numpy arrays and plain containers. Per-term data is CSR:
    ``x_ptr[j]:x_ptr[j + 1]`` slices the flat arrays for term ``j``.
    """

    abbr_shortest: np.ndarray  # the shortest abbreviation and truncation it reads

    def __init__(
        self,
        nodes: Iterable[CoverageNode],
        field_weights: Mapping[str, float],
        links: Iterable[tuple[str, str]] = (),
        keys: Collection[str] = (),
        *,
        bridges: bool | CoverageIndex = False,
        vocabulary: tuned.VocabularyBridges = tuned.BRIDGES,
        settings: str = "",
    ) -> None:
        """``bridges``: lead question words the catalog does not use to words it does
        (abbreviations in identifiers, WordNet synonyms; as ``vocabulary`` says). An index
        instead of True: take them from that wider index, for the terms this one has.
        ``settings``: the key of the index-time settings it is built with (kept with it:
        an index built with others is not read back)."""
        self.settings = settings
        top = max(field_weights.values(), default=1.0) or 1.0
        weights = {f: w / top for f, w in field_weights.items() if w > 0}
        ordered = sorted(nodes, key=lambda n: n.id)
        ids = [n.id for n in ordered]
        index = {node_id: i for i, node_id in enumerate(ids)}
        parent = np.array(
            [index.get(n.parent, -1) if n.parent is not None else -1 for n in ordered],
            dtype=np.int64,
        )
        self._build(
            ids,
            np.array([_LEVELS[n.level] for n in ordered], dtype=np.int8),
            parent,
            _forward(ordered, weights),
            [(index.get(a, -1), index.get(b, -1)) for a, b in links],
            np.array([node_id in keys for node_id in ids], dtype=bool),
            np.array(
                [
                    value_kind(n.data_type, n.fields.get("name"))
                    if n.level == "leaf"
                    else VALUE_NONE
                    for n in ordered
                ],
                dtype=np.int8,
            ),
        )
        self._build_bridges(ordered, bridges, vocabulary)

    def _build(
        self,
        ids: list[str],
        level: np.ndarray,
        parent: np.ndarray,
        forward: Forward,
        links: Iterable[tuple[int, int]],
        is_key: np.ndarray,
        value_kinds: np.ndarray,
    ) -> None:
        """Everything but the bridges, from the nodes' ids (sorted), levels, parents (node
        indexes), forward index, joins (node index pairs), keys and value kinds."""
        self.ids = ids
        self.level = level
        t_of = self._build_hierarchy(parent)
        p_term, p_node, p_w = self._build_postings(forward, t_of)
        self._build_links(links)
        self.is_key = is_key
        self.value_kind = value_kinds
        self._build_tables(parent, t_of, p_term, p_node, p_w)

    def _build_hierarchy(self, parent: np.ndarray) -> np.ndarray:
        """Each node's table and group, and the compact numbering of tables and groups;
        returns each table node's compact number."""
        n_nodes = len(parent)
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
        return t_of

    def _build_postings(
        self,
        forward: Forward,
        t_of: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The forward index, idf, the table and group bags and the table nodes' own terms;
        returns every (term, node, weight) posting, sorted by term then node."""
        n_nodes = len(self.ids)
        n_tables = len(self.table_nodes)
        # forward index: node → (term, code of its field weight in field_w, whether its own
        # fields have it), CSR over nodes
        self.vocab, self.fwd_ptr, self.fwd_term, self.fwd_code, self.field_w, self.fwd_own = forward
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
        return p_term, p_node, p_w

    def _build_links(self, links: Iterable[tuple[int, int]]) -> None:
        """The join neighbours of each table (both directions, compact table numbers), from
        joins as pairs of node indexes (-1: not in this index)."""
        src: list[int] = []
        dst: list[int] = []
        for ia, ib in links:
            if ia < 0 or ib < 0 or ia == ib:
                continue
            ta, tb = self.table_idx[ia], self.table_idx[ib]
            if self.level[ia] == 1 and self.level[ib] == 1 and ta != tb:
                src += [int(ta), int(tb)]
                dst += [int(tb), int(ta)]
        pairs = sorted(set(zip(src, dst, strict=True)))
        self.nb_src = np.array([p[0] for p in pairs], dtype=np.int64)
        self.nb_dst = np.array([p[1] for p in pairs], dtype=np.int64)

    def _build_tables(
        self,
        parent: np.ndarray,
        t_of: np.ndarray,
        p_term: np.ndarray,
        p_node: np.ndarray,
        p_w: np.ndarray,
    ) -> None:
        """What a query reads per table: group, term count, coverage with and without the
        join neighbours, children and leaves."""
        n_tables = len(self.table_nodes)
        n_vocab = len(self.vocab)
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

    def _build_bridges(
        self,
        ordered: Sequence[CoverageNode],
        bridges: bool | CoverageIndex,
        vocabulary: tuned.VocabularyBridges = tuned.BRIDGES,
        terms: Mapping[int, int] | None = None,
    ) -> None:
        """Vocabulary bridges (``ranking.bridges``), as arrays so that a persisted index maps
        them: identifier parts that may abbreviate or truncate a word (with their term,
        whether the part is a word itself, first letter, letter set as a bit mask, length),
        and question-side tokens → (term, weight) CSR. ``terms``: with a wider index, its
        term ids → this one's, when known."""
        if isinstance(bridges, CoverageIndex):
            abbr, (keys, ptr, term, weight) = bridges_for(bridges, self.vocab, terms)
            shortest = bridges.abbr_shortest
        else:
            abbr, syn = _bridges(ordered, self.vocab, vocabulary) if bridges else (([], [], []), {})
            lengths = [vocabulary.min_abbreviation, vocabulary.min_truncation]
            shortest = np.array(lengths, dtype=np.int32)
            keys = list(syn)
            ptr = np.zeros(len(syn) + 1, dtype=np.int64)
            np.cumsum([len(v) for v in syn.values()], out=ptr[1:])
            term = np.array([j for v in syn.values() for j, _ in v], dtype=np.int64)
            weight = np.array([w for v in syn.values() for _, w in v], dtype=np.float64)
        self.abbr_shortest = shortest
        parts, abbr_terms, abbr_words = abbr
        self.abbr_parts: list[str] = parts
        self.abbr_term = np.array(abbr_terms, dtype=np.int64)
        self.abbr_word = np.array(abbr_words, dtype=bool)
        self.abbr_first = np.array([ord(p[0]) for p in parts], dtype=np.int32)
        self.abbr_mask = np.array([_letters(p) for p in parts], dtype=np.int64)
        self.abbr_len = np.array([len(p) for p in parts], dtype=np.int32)
        self.bridge_row: dict[str, int] = {k: i for i, k in enumerate(keys)}
        self.bridge_ptr = ptr
        self.bridge_term = term
        self.bridge_w = weight

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

    def _abbreviating(self, word: str, known: int = -1) -> list[tuple[int, float]]:
        """The terms of identifier parts that abbreviate or truncate ``word``, with their
        weights. ``known``: the term of ``word`` when the catalog uses it; then only the
        abbreviations (not truncations) that keep the word's start and whose term is more
        common than ``known``. Kept per word (questions share words; the scan is long)."""
        if not len(self.abbr_term) or not word.isascii():
            return []
        scan = partial(self._abbreviations_of, word, known)
        return list(_kept(_WORDS, self, (word, known), _WORDS_KEPT, scan))

    def _abbreviations_of(self, word: str, known: int) -> tuple[tuple[int, float], ...]:
        """:meth:`_abbreviating`'s scan of the identifier parts."""
        maybe = np.flatnonzero(
            (self.abbr_first == ord(word[0]))
            & ((self.abbr_mask & ~np.int64(_letters(word))) == 0)
            & (self.abbr_len < len(word))
        )
        out = []
        shortest, trunc = self.abbr_shortest.tolist()  # (the index's own settings)
        for i in maybe.tolist():
            part, j = self.abbr_parts[i], int(self.abbr_term[i])
            if self.abbr_word[i]:
                w = truncation_weight(part, word, trunc) if known < 0 else 0.0
            elif known < 0 or (
                self.idf[j] < self.idf[known] and keeps_word_start(part, word, shortest)
            ):
                w = abbreviation_weight(part, word, shortest)
            else:
                continue
            if w > 0:
                out.append((j, w))
        return tuple(out)

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
        away: Sequence[Away] = (),
    ) -> None:
        """Add each slot's best weighted link(t) and own coverage of table nodes."""
        n_tables = len(linked_mass)
        for i, slot in enumerate(slots):
            lm = np.zeros(n_tables)
            tm = np.zeros(n_tables)
            word_idf = self._slot_idf(slot)
            outside = away[i] if i < len(away) else None
            for j, m in slot:
                idf = word_idf * m
                off = _off_for(outside, j)
                row = self.lcov_row[j]
                if row >= 0:
                    np.maximum(lm, _cut(idf * self.lcov_dense[row], off), out=lm)
                else:
                    lo, hi = self.lcov_ptr[j], self.lcov_ptr[j + 1]
                    at = self.lcov_table[lo:hi]
                    lm[at] = np.maximum(lm[at], _cut(idf * self.lcov_w[lo:hi], off, at))
                lo, hi = self.town_ptr[j], self.town_ptr[j + 1]
                at = self.town_table[lo:hi]
                tm[at] = np.maximum(tm[at], _cut(idf * self.town_w[lo:hi], off, at))
            linked_mass += lm
            town_mass += tm
            town_count += tm > 0

    def _own_slots(
        self, nodes: np.ndarray, slots: Sequence[Slot], away: Sequence[Away] = ()
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_own` for a query of slots: each slot once, at its best weighted term."""
        starts = self.fwd_ptr[nodes]
        lens = self.fwd_ptr[nodes + 1] - starts
        owner = np.repeat(np.arange(len(nodes)), lens)
        entry = np.arange(len(owner)) - np.repeat(np.cumsum(lens) - lens, lens) + starts[owner]
        terms = self.fwd_term[entry]
        fw = self.field_w[self.fwd_code[entry]]
        mass = np.zeros(len(nodes))
        count = np.zeros(len(nodes), dtype=np.int32)
        node_group = np.where(
            self.table_idx[nodes] >= 0, self.table_group[self.table_idx[nodes]], -1
        )
        away = _away_in(away, node_group)
        for i, slot in enumerate(slots):
            best = np.zeros(len(nodes))
            word_idf = self._slot_idf(slot)
            outside = away[i] if i < len(away) else None
            for j, m in slot:
                match = np.flatnonzero(terms == j)
                off = _off_for(outside, j)
                if off is not None:
                    match = match[~off[owner[match]]]
                if len(match):
                    np.maximum.at(best, owner[match], m * word_idf * fw[match])
            mass += best
            count += best > 0
        return mass, count

    def _slot_idf(self, slot: Slot) -> float:
        """The idf every term of a (non-empty) slot is counted with: the idf of the slot's
        best-weighted term. A slot is one question word; its bridges are
        readings of it, and a rare look-alike (``cnts``, contestants, for *countries*)
        must not outscore the faithful common reading (``cntr``) by being rare: the
        weight says how faithful a reading is, the idf how telling the word is (as a
        search engine's synonym query scores its synonyms as one term)."""
        return float(self.idf[slot[0][0]])

    def query_terms(self, text: str) -> list[int]:
        """The question's terms the index knows: its words, then the closed compounds
        of adjacent words (``high schoolers`` → ``highschool``), each once."""
        terms: dict[int, None] = {}
        for q in (*analyze_query(text, sql_words=False), *query_compounds(text)):
            j = self.vocab.get(q)
            if j is not None:
                terms.setdefault(j, None)
        return list(terms)

    def query_slots(
        self,
        text: str,
        extra: Bridges = (),
        reading: tuned.QuestionReading = tuned.QUESTION_READING,
    ) -> list[list[tuple[int, float]]]:
        """The question as slots (see :data:`Slot`): each known term of
        :meth:`query_terms` alone at weight 1, then, for each question word the
        catalog does not use, the catalog terms its bridges reach (abbreviations
        and synonyms), a term of the question's own never again, each slot's terms
        once at their best weight. ``extra``: more bridges (``read_query``)."""
        return [list(slot) for slot in query_reading(self, text, extra, reading)[0]]

    def query_reach(
        self,
        text: str,
        extra: Bridges = (),
        reading: tuned.QuestionReading = tuned.QUESTION_READING,
    ) -> float:
        """The share of the question's plain words (:func:`analyzer.query_words`) this
        index can read: 1 for a word it uses, its best bridge weight for one it reaches
        through a bridge, 0 for one it does not know. 1 for a question without words."""
        return query_reading(self, text, extra, reading)[1]

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
        extra: Bridges = (),
        params: tuned.SchemaSearch = tuned.SCHEMA_SEARCH,
    ) -> tuple[list[tuple[str, float]], list[int]]:
        """:meth:`search`, and each hit's level (1: table, 2: leaf): a caller need not look
        up what kind of entity each id is. ``extra``: more bridges (``read_query``);
        ``params``: the query-time settings."""
        slots = self.query_slots(text, extra, params.reading)
        plain = all(_exact(slot) for slot in slots)
        query = [slot[0][0] for slot in slots] if plain else []
        total = float(sum(max(m * self._slot_idf(slot) for _, m in slot) for slot in slots))
        if not slots or k < 1 or total <= 0:
            return [], []
        allowed = ids if ids is None or isinstance(ids, set | frozenset) else set(ids)
        # -- table level: every array is per table, filled from per-term table postings
        away_g = self._away_groups(text, extra, params.reading)
        away_t = _away_in(away_g, self.table_group)
        linked_mass, town_mass, town_count = self._table_masses(query, slots, plain, away_t)
        n_tables = len(self.table_nodes)
        table_bm25 = self.tables.slot_scores(slots, n_tables, away_t)  # table(t)
        group_bm25 = self.groups.slot_scores(slots, len(self.group_nodes), away_g)  # group(g)
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
        link = params.link_prior * linked_mass[cand_t] / total
        score_c = group_part + table_bm25[cand_t] + link
        # the best tables in score order, ties by id (= node index)
        s_cand = -_key(score_c)
        top = _top(s_cand, params.top_tables)
        best = cand_t[top[np.lexsort((cand_nodes[top], s_cand[top]))]]
        leaves, leaf_mass, leaf_count = self._leaf_level(
            text, best, query, slots, plain, total, scope, allowed, away_g, params
        )
        return self._rank_pool(
            k, total, cand_t, score_c, town_mass, town_count, leaves, leaf_mass, leaf_count
        )

    def _away_groups(
        self, text: str, extra: Bridges, reading: tuned.QuestionReading = tuned.QUESTION_READING
    ) -> list[Away]:
        """Per slot of ``text``: its readings that count only in the databases that do not
        use the word itself, and those that do (see ``coverage_terms.read_query``)."""
        n_groups = len(self.group_nodes)
        return [
            None if e is None else (e[0], self.groups.holding(e[1], n_groups))
            for e in query_reading(self, text, extra, reading).elsewhere
        ]

    def _table_masses(
        self, query: Sequence[int], slots: Sequence[Slot], plain: bool, away: Sequence[Away] = ()
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per table: link(t) (coverage of t and its join neighbours), own(n) of the table
        node itself, and how many query terms the table node holds."""
        n_tables = len(self.table_nodes)
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
            self._slot_tables(slots, linked_mass, town_mass, town_count, away)
        return linked_mass, town_mass, town_count

    def _leaf_level(
        self,
        text: str,
        best: np.ndarray,
        query: Sequence[int],
        slots: Sequence[Slot],
        plain: bool,
        total: float,
        scope: str | None,
        allowed: Collection[str] | None,
        away: Sequence[Away] = (),
        params: tuned.SchemaSearch = tuned.SCHEMA_SEARCH,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The leaves ranked under the ``best`` tables, with their own coverage and term
        counts: their matched leaves, then the unmatched leaves of the very best (keys first).
        ``away``: :meth:`_away_groups` of ``text``, per database."""
        under = _gather(self.leaves, self.leaves_ptr, best[: params.top_tables])
        extra = _gather(self.children, self.children_ptr, best[: params.top_leaf_tables])
        near = np.concatenate([under, extra])
        near_mass, near_count = (
            self._own(near, query) if plain else self._own_slots(near, slots, away)
        )
        cues = value_cues(text)
        fit = params.value_fit
        if cues and fit > 0:
            fits = value_fit(self.value_kind[near], self.is_key[near], cues)
            near_mass = near_mass + fits * (fit * total / len(slots))
        chosen = near_count > 0
        chosen[len(under) :] = True
        leaves, first = np.unique(near[chosen], return_index=True)
        leaf_mass, leaf_count = near_mass[chosen][first], near_count[chosen][first]
        keep = self._mask(leaves, scope, allowed)
        return leaves[keep], leaf_mass[keep], leaf_count[keep]

    def _rank_pool(
        self,
        k: int,
        total: float,
        cand_t: np.ndarray,
        score_c: np.ndarray,
        town_mass: np.ndarray,
        town_count: np.ndarray,
        leaves: np.ndarray,
        leaf_mass: np.ndarray,
        leaf_count: np.ndarray,
    ) -> tuple[list[tuple[str, float]], list[int]]:
        """The ``k`` best of the candidate tables and the chosen leaves, with their levels."""
        n_tables = len(self.table_nodes)
        cand_nodes = self.table_nodes[cand_t]
        score_t = np.full(n_tables, np.nan)
        score_t[cand_t] = score_c
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

    def _ids_of(self, nodes: np.ndarray) -> list[str]:
        """The ids of node numbers (a persisted index decodes them in one call)."""
        if isinstance(self.ids, StringTable):
            return self.ids.take(nodes)
        return [self.ids[i] for i in nodes.tolist()]


#: Per index, a few recent questions' readings and the abbreviations of the question words
#: met, each kept beside the index (a saved index holds none, and neither keeps it alive)
_Kept = weakref.WeakKeyDictionary[CoverageIndex, dict[Any, Any]]
_QUERIES: _Kept = weakref.WeakKeyDictionary()
_WORDS: _Kept = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()
#: Per index: questions remembered (the schema channel and fusion both ask, once per
#: search), question words whose abbreviations are
_QUERIES_KEPT, _WORDS_KEPT = 8, 4096


def _kept(
    table: _Kept, index: CoverageIndex, key: Any, limit: int, compute: Callable[[], Any]
) -> Any:
    """``compute()`` for ``key`` on ``index``, remembered in ``table`` (at most ``limit``
    keys per index: a new one pushes out the oldest)."""
    with _KEPT_LOCK:
        recent = table.get(index)
        found = recent.get(key) if recent is not None else None
    if found is not None:
        return found
    found = compute()
    with _KEPT_LOCK:
        recent = table.setdefault(index, {})
        if len(recent) >= limit:
            recent.pop(next(iter(recent)))
        recent[key] = found
    return found


def query_reading(
    index: CoverageIndex,
    text: str,
    extra: Bridges,
    reading: tuned.QuestionReading = tuned.QUESTION_READING,
) -> QueryReading:
    """A question's reading on an index (:func:`read_query`), kept for a few questions:
    the schema channel, fusion and explanations each ask, once per search."""
    read = partial(read_query, index, text, extra, reading)
    key = (text, extra, reading)
    return cast(QueryReading, _kept(_QUERIES, index, key, _QUERIES_KEPT, read))
