"""The learned orders of the tables and of the column hits: stages ``learned-tables``
and ``learned-columns`` (docs/ranking.md).

A lexical search's tables (those the first ``learned_table_depth`` entity hits name)
are re-ordered by ``ranking/learned/tables.json`` over their features (the ``tbl_``
ones below) and the order is laid onto the list (:func:`table_order`); the column
order then keeps it.

Among the first ``learned_column_depth`` hits of the entity list, the column hits
(columns, measures, aggregations) are re-ordered by a small ranking model over
features the search already holds: each hit's place and shown score, every
channel's rank, score, weight and part of the fused score, the share of the
question's words the schema channel matched in it, and the same of its table (its
own hit and its first column hit, its place among the tables, its database's place).
The columns take the places the columns held, so tables, datasources and the leaves
the request named keep theirs (after a learned table order, the tables' first places
are laid on again). A lexical search reads ``ranking/learned/columns.json``
(trained by ``scripts/learned_fusion.py --embedder none --export`` on lexical
searches); a search whose vector channel ranked reads ``columns-dense.json`` (trained
on the searches of the MiniLM embedder; over the schema encoder's lists it was kept
for the abbreviated and warehouse-named catalogs, docs/ranking.md).

The features are those ``scripts/learned_fusion.py`` reads off an explanation, less
the stage moves (which only an explanation's what-if fusions know): one definition
here and there, checked against each other by tests/test_learned_columns.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from layersearch.corpora.entities.matched import matched_word_sets
from layersearch.corpora.entities.state import SearchState
from layersearch.ranking.pipeline import settle
from layersearch.ranking.trees import Forest, shipped

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.ranking.params import QuestionReading
    from layersearch.semantic.model import Entity

__all__ = [
    "COLUMN_NAMES",
    "DENSE_MODEL",
    "MODEL",
    "TABLE_MODEL",
    "column_rows",
    "learned_columns",
    "learned_tables",
    "table_order",
]

#: the shipped models (``ranking/learned/<name>.json``): of lexical searches, and of
#: searches where the vector channel ranked
MODEL = "columns"
DENSE_MODEL = "columns-dense"
#: the table model, of lexical searches only (a search whose vector channel ranked keeps
#: its table order: a model of MiniLM's searches did not pay, docs/ranking.md)
TABLE_MODEL = "tables"
#: the entity channels a feature names
CHANNELS = ("input", "schema", "fulltext", "vector")
#: rank given to a channel that did not list a hit
MISSING_RANK = 1000.0
#: how many features an explanation names
TOP_CONTRIBUTIONS = 3

#: one hit as the features see it: (id, fusion level, channel → (rank, score, part),
#: shown score, the question words the schema channel matched in it)
Hit = tuple[str, int, Mapping[str, tuple[int, float, float]], float, set[str]]

#: a hit's own features: its 1-based place, shown score and gap to the first hit's, each
#: channel's rank, score, weight and part of the fused score (missing: rank
#: :data:`MISSING_RANK`, zeros; the weight is 1 for a channel that ranked it, as fusion
#: weighs every channel alike), how many channels ranked it, the share of the
#: question's words the schema channel matched in it
HIT_NAMES: tuple[str, ...] = (
    "pos",
    "score",
    "gap",
    *(f"{ch}_{k}" for ch in CHANNELS for k in ("rank", "score", "weight", "contrib")),
    "n_channels",
    "matched_share",
)
#: a table's features: its place among the tables the hits name, the question's word
#: count, whether it was hit itself, how many of its leaves were, the share of the
#: question its hits matched together, its database's first place and hits in the
#: first ten, its own hit's features (``t_``) and its first leaf hit's (``c_``)
TABLE_NAMES: tuple[str, ...] = (
    "today_pos",
    "n_words",
    "has_table_hit",
    "n_column_hits",
    "table_matched_share",
    "db_pos",
    "db_top10",
    *(f"t_{n}" for n in HIT_NAMES),
    *(f"c_{n}" for n in HIT_NAMES),
)
#: a leaf's features: its own, its place among the leaves, its table's (``tbl_``)
COLUMN_NAMES: tuple[str, ...] = (*HIT_NAMES, "today_pos", *(f"tbl_{n}" for n in TABLE_NAMES))
_MISSING = np.array([MISSING_RANK if n.endswith("_rank") or n == "pos" else 0.0 for n in HIT_NAMES])


def question_words(question: str) -> set[str]:
    return set(re.findall(r"\w+", question.lower()))


def hit_rows(hits: Sequence[Hit], n_words: int) -> np.ndarray:
    """Each hit's own features (:data:`HIT_NAMES`), one row a hit."""
    out = np.empty((len(hits), len(HIT_NAMES)), dtype=np.float64)
    top = hits[0][3] if hits else 0.0
    for i, (_, _, channels, score, matched) in enumerate(hits):
        row = [float(i + 1), score, top - score]
        for ch in CHANNELS:
            p = channels.get(ch)
            if p is None:
                row += (MISSING_RANK, 0.0, 0.0, 0.0)
            else:
                row += (float(p[0]), round(p[1], 6), 1.0, round(p[2], 6))
        row += (float(len(channels)), len(matched) / max(1, n_words))
        out[i] = row
    return out


def table_rows(
    hits: Sequence[Hit], own: np.ndarray, words: set[str]
) -> tuple[dict[str, int], np.ndarray]:
    """Each table the hits name (a table hit, or a leaf hit's table), by first
    appearance: its row number and its features (:data:`TABLE_NAMES`)."""
    n_words = len(words)
    table_hit: dict[str, int] = {}
    first_leaf: dict[str, int] = {}
    n_leaves: dict[str, int] = {}
    matched: dict[str, set[str]] = {}
    db_order: dict[str, int] = {}
    db_top10: dict[str, int] = {}
    for i, (doc_id, level, _, _, hit_words) in enumerate(hits):
        if level < 0:
            continue
        table = doc_id if level == 1 else doc_id.rsplit(".", 1)[0]
        db = table.split(".", 1)[0]
        db_order.setdefault(db, len(db_order) + 1)
        if i < 10:
            db_top10[db] = db_top10.get(db, 0) + 1
        matched.setdefault(table, set()).update(hit_words)
        if level == 1:
            table_hit.setdefault(table, i)
        else:
            n_leaves[table] = n_leaves.get(table, 0) + 1
            first_leaf.setdefault(table, i)
    rows = np.empty((len(matched), len(TABLE_NAMES)), dtype=np.float64)
    at: dict[str, int] = {}
    for k, table in enumerate(matched):
        at[table] = k
        db = table.split(".", 1)[0]
        rows[k, :7] = (
            float(k + 1),
            float(n_words),
            1.0 if table in table_hit else 0.0,
            float(n_leaves.get(table, 0)),
            len(matched[table] & words) / max(1, n_words),
            float(db_order[db]),
            float(db_top10.get(db, 0)),
        )
        for j, src in enumerate((table_hit.get(table), first_leaf.get(table))):
            start = 7 + j * len(HIT_NAMES)
            rows[k, start : start + len(HIT_NAMES)] = _MISSING if src is None else own[src]
    return at, rows


def column_rows(hits: Sequence[Hit], question: str) -> tuple[list[int], np.ndarray]:
    """The leaf hits: their positions in ``hits`` and their features
    (:data:`COLUMN_NAMES`), one row a leaf."""
    words = question_words(question)
    own = hit_rows(hits, len(words))
    at, tables = table_rows(hits, own, words)
    leaves = [i for i, h in enumerate(hits) if h[1] == 0]
    of_table = [at[hits[i][0].rsplit(".", 1)[0]] for i in leaves]
    x = np.hstack(
        [
            own[leaves].reshape(len(leaves), -1),
            np.arange(1, len(leaves) + 1, dtype=np.float64)[:, None],
            tables[of_table].reshape(len(leaves), -1),
        ]
    )
    return leaves, x


@lru_cache(maxsize=4)
def _model(name: str) -> Forest:
    return shipped(name)


@lru_cache(maxsize=8)
def _columns_of(model: Forest, names: tuple[str, ...]) -> np.ndarray:
    """Where each of the model's features is among ``names`` (the rows' columns)."""
    missing = sorted(set(model.features) - set(names))
    if missing:
        raise ValueError(f"the model reads features no search computes: {missing}")
    return np.array([names.index(n) for n in model.features], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Head:
    """The first entity hits as a learned order reads them: their positions in the
    fused list (``head``), the whole order, and the hits."""

    head: list[int]
    order: list[int]
    hits: list[Hit]


def _kept(matched: Callable[[str], set[str]]) -> Callable[[str], set[str]]:
    """``matched`` read once per id (both learned orders of a search read the same)."""
    seen: dict[str, set[str]] = {}

    def once(doc_id: str) -> set[str]:
        words = seen.get(doc_id)
        if words is None:
            words = seen[doc_id] = matched(doc_id)
        return words

    return once


def _reading(
    s: SearchState,
) -> tuple[CoverageIndex, str, Bridges, Callable[[str], Entity | None], QuestionReading]:
    """What :func:`matched_word_sets` reads of a search (its stage calls it: the
    question's path stays short, tests/test_parameter_path.py)."""
    assert s.question is not None
    return (
        s.scope.index(),
        s.question,
        s.ranks.bridges,
        s.corpus.entities.get,
        s.config.question_reading(),
    )


def _has_head(s: SearchState, depth: int, leaves: int = 0) -> bool:
    """Whether there is a list to order: a question, a fused list, and at least
    ``leaves`` leaf hits among the first ``depth`` entity hits."""
    if s.question is None or s.fused is None or depth <= 0:
        return False
    if not leaves:
        return True
    fused, level = s.fused, s.ranks.level
    order = range(len(fused)) if s.order is None else s.order
    return sum(level(fused.ids[i]) == 0 for i in order[:depth]) >= leaves


def _read_head(s: SearchState, depth: int) -> _Head:
    """The first ``depth`` entity hits with what their features read (``s.matched``:
    the question words the schema channel matched in each, read by the stage)."""
    assert s.fused is not None
    fused = s.fused
    order = list(range(len(fused))) if s.order is None else list(s.order)
    level = s.ranks.level
    head = order[:depth]
    ids = [fused.ids[i] for i in order]
    # (the scores the list would show: the score rule's, as entity-scores gives them)
    shown = settle(ids, [fused.scores[i] for i in order])
    matched = s.matched
    hits: list[Hit] = []
    for k, i in enumerate(head):
        doc_id = fused.ids[i]
        channels = fused.fused(i).channels
        words: set[str] = set()
        if matched is not None and "schema" in channels and level(doc_id) >= 0:
            words = matched(doc_id)
        hits.append((doc_id, level(doc_id), channels, round(shown[k], 6), words))
    return _Head(head, order, hits)


def _dense(s: SearchState) -> bool:
    """Whether the vector channel ranked (the models of such searches are apart)."""
    return bool(s.ranks.entity.get("vector"))


def _why(
    model: Forest, x: np.ndarray, scores: np.ndarray, row_of: Mapping[str, int], what: str
) -> Callable[[str], str]:
    """For an explanation: a moved hit's model score and the features that moved it most."""

    def why(doc_id: str) -> str:
        j = row_of.get(doc_id)
        if j is None:  # (a hit of no table, moved as others moved past it)
            return what
        parts = sorted(model.contributions(x[j]).items(), key=lambda kv: -abs(kv[1]))
        named = ", ".join(f"{n} {v:+.3f}" for n, v in parts[:TOP_CONTRIBUTIONS])
        return f"{what} (score {scores[j]:+.3f}: {named})"

    return why


def learned_columns(s: SearchState) -> None:
    """The column hits among the first entity hits re-ordered by a learned ranking model."""
    depth = s.config.learned_column_depth
    if not _has_head(s, depth, leaves=2):
        return
    assert s.question is not None and s.fused is not None
    if s.matched is None and "schema" in s.ranks.entity:
        # (read here, not deeper: the question's path stays short, test_parameter_path)
        s.matched = _kept(matched_word_sets(*_reading(s)))
    read = _read_head(s, depth)
    head, order, hits = read.head, read.order, read.hits
    fused = s.fused
    ids = [fused.ids[i] for i in order]
    leaves, rows = column_rows(hits, s.question)
    # (a leaf the request named keeps its place: the names lead)
    movable = [j for j, k in enumerate(leaves) if "input" not in hits[k][2]]
    if len(movable) < 2:
        return
    leaves = [leaves[j] for j in movable]
    model = _model(DENSE_MODEL if _dense(s) else MODEL)
    x = rows[movable][:, _columns_of(model, COLUMN_NAMES)]
    scores = model.predict(x)
    ranked = sorted(range(len(leaves)), key=lambda j: (-scores[j], j))
    if ranked == list(range(len(leaves))):
        return
    new_head = list(head)
    for slot, j in zip(leaves, ranked, strict=True):
        new_head[slot] = head[leaves[j]]
    if s.tables is not None:  # (the learned table order stays: the tables' first hits lead)
        at_head = {i: k for k, i in enumerate(head)}
        placed = [hits[at_head[i]] for i in new_head]
        new_head = [new_head[k] for k in table_order(placed, s.tables)]
    s.order = new_head + order[len(head) :]
    row_of = {fused.ids[head[k]]: j for j, k in enumerate(leaves)}
    # (the features' contributions only for an explanation that shows them)
    what = "learned column order"
    note = _why(model, x, scores, row_of, what) if s.trace_stages else _said(what)
    s.trace.reorder("learned-columns", ids, s.ordered_ids(), note)


def learned_tables(s: SearchState) -> None:
    """Lexical searches: the tables the first entity hits name, re-ordered by a learned model."""
    depth = s.config.learned_table_depth
    if _dense(s) or not _has_head(s, depth):
        return
    assert s.question is not None and s.fused is not None
    if s.matched is None and "schema" in s.ranks.entity:
        s.matched = _kept(matched_word_sets(*_reading(s)))
    read = _read_head(s, depth)
    head, order, hits = read.head, read.order, read.hits
    words = question_words(s.question)
    own = hit_rows(hits, len(words))
    at, rows = table_rows(hits, own, words)
    if len(at) < 2:
        return
    model = _model(TABLE_MODEL)
    x = rows[:, _columns_of(model, TABLE_NAMES)]
    scores = model.predict(x)
    tables = list(at)  # (first appearance)
    ranked = [tables[j] for j in sorted(range(len(tables)), key=lambda j: (-scores[j], j))]
    s.tables = ranked
    if ranked == tables:
        return
    moved = table_order(hits, ranked)
    ids = [s.fused.ids[i] for i in order]
    s.order = [head[k] for k in moved] + order[len(head) :]
    row_of: dict[str, int] = {}
    for h in hits:
        table = _hit_table(h)
        if table is not None:
            row_of[h[0]] = at[table]
    what = "learned table order"
    note = _why(model, x, scores, row_of, what) if s.trace_stages else _said(what)
    s.trace.reorder("learned-tables", ids, s.ordered_ids(), note)


def _hit_table(hit: Hit) -> str | None:
    """The table a hit names: itself (a table) or its table (a leaf); None otherwise."""
    if hit[1] < 0:
        return None
    return hit[0] if hit[1] == 1 else hit[0].rsplit(".", 1)[0]


def table_order(hits: Sequence[Hit], ranked: Sequence[str]) -> list[int]:
    """The hits re-ordered so that the tables first appear in ``ranked`` order: the k-th
    table of ``ranked`` takes the place where the k-th table first appeared, with its
    first hit; every other hit keeps its place, or follows its table's first hit when
    that moved below it. Hits of no table keep their places; tables ``ranked`` does not
    name follow those it names, in their order. Positions into ``hits``."""
    tables = [_hit_table(h) for h in hits]
    firsts: list[int] = []  # where a table first appears, in order
    first_of: dict[str, int] = {}
    for i, table in enumerate(tables):
        if table is not None and table not in first_of:
            first_of[table] = i
            firsts.append(i)
    known = set(ranked)
    ranked = [t for t in ranked if t in first_of] + [t for t in first_of if t not in known]
    slot = {table: firsts[k] for k, table in enumerate(ranked)}
    keys: list[tuple[int, int, int]] = []
    for i, table in enumerate(tables):
        if table is None:
            keys.append((i, 0, i))
        elif first_of[table] == i:
            keys.append((slot[table], 0, i))  # a table's first hit, in its slot
        else:
            keys.append((max(i, slot[table]), 1, i))  # after its table's first hit
    return [i for *_, i in sorted(keys)]


def _said(what: str) -> Callable[[str], str]:
    """A moved hit's note without the features (no explanation asked for them)."""
    return lambda doc_id: what
