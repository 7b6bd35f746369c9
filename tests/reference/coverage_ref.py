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

from layersearch.ranking.analyzer import analyze, analyze_query, query_compounds
from layersearch.ranking.coverage import VALUE_NONE, VALUE_TIME, value_cues, value_kind
from layersearch.ranking.params import SCHEMA_SEARCH

VALUE_FIT = SCHEMA_SEARCH.value_fit

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
    data_type: str | None = None


class _Bags:
    """BM25 statistics over bags of nodes (database documents or table documents)."""

    def __init__(self, owner: Sequence[int], terms: Sequence[Mapping[str, float]]) -> None:
        self.tf: dict[str, dict[int, float]] = {}
        self.length: dict[int, int] = {}
        for i, node_terms in enumerate(terms):
            bag = owner[i]
            if bag < 0:
                continue
            self.length[bag] = self.length.get(bag, 0) + 1
            for tok, w in node_terms.items():
                per = self.tf.setdefault(tok, {})
                per[bag] = per.get(bag, 0.0) + w
        n = max(1, len(self.length))
        self.avg_length = sum(self.length.values()) / n or 1.0
        self.idf = {
            tok: math.log(1.0 + (n - len(per) + 0.5) / (len(per) + 0.5))
            for tok, per in self.tf.items()
        }

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """BM25 of every bag that matches, as a fraction of the best possible score."""
        top = sum(self.idf.get(q, 0.0) for q in query) * (BM25_K1 + 1)
        out: dict[int, float] = {}
        if top <= 0:
            return out
        for q in query:
            idf = self.idf.get(q)
            if idf is None:
                continue
            for bag, tf in self.tf[q].items():
                norm = 1 - BM25_B + BM25_B * self.length[bag] / self.avg_length
                out[bag] = out.get(bag, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
        return {bag: s / top for bag, s in out.items()}


class CoverageIndex:
    """Leaves, tables and groups with their terms, for the ``schema`` channel."""

    def __init__(
        self,
        nodes: Iterable[CoverageNode],
        field_weights: Mapping[str, float],
        links: Iterable[tuple[str, str]] = (),
        keys: Collection[str] = (),
    ) -> None:
        top = max(field_weights.values(), default=1.0) or 1.0
        weights = {f: w / top for f, w in field_weights.items() if w > 0}
        self.ids: list[str] = []
        self.level: list[str] = []
        self.terms: list[dict[str, float]] = []
        index: dict[str, int] = {}
        parents: list[str | None] = []
        ordered_nodes = list(nodes)
        for n in ordered_nodes:
            index[n.id] = len(self.ids)
            self.ids.append(n.id)
            self.level.append(n.level)
            parents.append(n.parent)
            self.terms.append(_terms(n.fields, weights))
        self.parent = [index.get(p, -1) if p is not None else -1 for p in parents]
        self.children: list[list[int]] = [[] for _ in self.ids]
        for i, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(i)
        self.table = [self._up_to(i, "table") for i in range(len(self.ids))]
        self.group = [self._up_to(i, "group") for i in range(len(self.ids))]
        self.neighbours: list[set[int]] = [set() for _ in self.ids]
        for a, b in links:
            ia, ib = index.get(a), index.get(b)
            if ia is not None and ib is not None and ia != ib:
                self.neighbours[ia].add(ib)
                self.neighbours[ib].add(ia)
        self.is_key = [node_id in keys for node_id in self.ids]
        self.kind = [
            value_kind(n.data_type, n.fields.get("name")) if n.level == "leaf" else VALUE_NONE
            for n in ordered_nodes
        ]
        self.postings: dict[str, list[int]] = {}
        for i, terms in enumerate(self.terms):
            for tok in terms:
                self.postings.setdefault(tok, []).append(i)
        n_docs = len(self.ids)
        self.idf = {
            tok: math.log(1.0 + (n_docs - len(p) + 0.5) / (len(p) + 0.5))
            for tok, p in self.postings.items()
        }
        self.tables = _Bags(self.table, self.terms)
        self.groups = _Bags(self.group, self.terms)

    def _up_to(self, i: int, level: str) -> int:
        while i >= 0 and self.level[i] != level:
            i = self.parent[i]
        return i

    def _in(self, i: int, scope: str | None, allowed: set[str] | None) -> bool:
        node_id = self.ids[i]
        if scope is not None and not (node_id == scope or node_id.startswith(scope + ".")):
            return False
        return allowed is None or node_id in allowed

    def search(
        self,
        text: str,
        k: int,
        *,
        scope: str | None = None,
        ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` tables and leaves for ``text``, within a group id and an id allowlist."""
        # the question's words, then the closed compounds of adjacent words, each once
        query = [
            q
            for q in dict.fromkeys([*analyze_query(text, sql_words=False), *query_compounds(text)])
            if q in self.idf
        ]
        total = sum(self.idf[q] for q in query)
        if not query or k < 1 or total <= 0:
            return []
        allowed = set(ids) if ids is not None else None
        own: dict[int, dict[str, float]] = {}
        table_cov: dict[int, dict[str, float]] = {}
        for q in query:
            for i in self.postings[q]:
                w = self.terms[i][q]
                own.setdefault(i, {})[q] = w
                t = self.table[i]
                if t >= 0:
                    _raise(table_cov.setdefault(t, {}), q, w)

        def mass(cov: Mapping[str, float]) -> float:
            return sum(self.idf[q] * w for q, w in cov.items())

        table_bm25 = self.tables.scores(query)
        group_bm25 = self.groups.scores(query)
        # Join neighbours of matched tables are candidates too: bridge tables hold only keys.
        candidates = set(table_cov)
        candidates.update(n for t in table_cov for n in self.neighbours[t])
        table_score: dict[int, float] = {}
        for t in candidates:
            if not self._in(t, scope, allowed):
                continue
            linked = dict(table_cov.get(t, {}))
            for n in self.neighbours[t]:
                for q, w in table_cov.get(n, {}).items():
                    _raise(linked, q, w)
            table_score[t] = (
                group_bm25.get(self.group[t], 0.0)
                + table_bm25.get(t, 0.0)
                + LINK_PRIOR * mass(linked) / total
            )
        best = sorted(table_score, key=lambda t: (-table_score[t], self.ids[t]))
        ranked_tables = set(best[:TOP_TABLES])
        leaves = {i for i in own if self.level[i] == "leaf" and self.table[i] in ranked_tables}
        leaves.update(c for t in best[:TOP_LEAF_TABLES] for c in self.children[t])
        # a value-like word of the question (a number, a year, a name) counts, at
        # VALUE_FIT of one average question word, for each leaf whose type can hold it
        cues = value_cues(text)
        scored: list[tuple[float, float, bool, str]] = []
        for i in (*table_score, *leaves):
            if not self._in(i, scope, allowed):
                continue
            mine = own.get(i, {})
            score = table_score[self.table[i]] + mass(mine) / total
            kind = self.kind[i]
            if kind in cues and (kind == VALUE_TIME or not self.is_key[i]):
                score += VALUE_FIT / len(query)
            n_terms = len(self.terms[i])
            precision = len(mine) / n_terms if n_terms else 0.0
            scored.append((score, precision, self.is_key[i], self.ids[i]))
        scored.sort(key=lambda s: (-s[0], -s[1], not s[2], s[3]))
        return [(node_id, round(score, 6)) for score, _p, _k, node_id in scored[:k]]


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
