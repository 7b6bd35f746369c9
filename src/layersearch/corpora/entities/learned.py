"""The learned order of the column hits: stage ``learned-columns`` (docs/ranking.md).

Among the first ``learned_column_depth`` hits of the entity list, the column hits
(columns, measures, aggregations) are re-ordered by a small ranking model over
features the search already holds: each hit's place and shown score, every
channel's rank, score, weight and part of the fused score, the share of the
question's words the schema channel matched in it, and the same of its table (its
own hit and its first column hit, its place among the tables, its database's place).
The columns take the places the columns held, so tables, datasources and the leaves
the request named keep theirs. A lexical search reads ``ranking/learned/columns.json``
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
from functools import lru_cache

import numpy as np

from layersearch.corpora.entities.matched import matched_word_sets
from layersearch.corpora.entities.state import SearchState
from layersearch.ranking.pipeline import settle
from layersearch.ranking.trees import Forest, shipped

__all__ = [
    "COLUMN_NAMES",
    "DENSE_MODEL",
    "MODEL",
    "column_features",
    "column_rows",
    "learned_columns",
]

#: the shipped models (``ranking/learned/<name>.json``): of lexical searches, and of
#: searches where the vector channel ranked
MODEL = "columns"
DENSE_MODEL = "columns-dense"
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
#: :data:`MISSING_RANK`, zeros), how many channels ranked it, the share of the
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


def hit_rows(hits: Sequence[Hit], n_words: int, weight: Callable[[str], float]) -> np.ndarray:
    """Each hit's own features (:data:`HIT_NAMES`), one row a hit."""
    out = np.empty((len(hits), len(HIT_NAMES)), dtype=np.float64)
    top = hits[0][3] if hits else 0.0
    weights = [round(weight(ch), 6) for ch in CHANNELS]
    for i, (_, _, channels, score, matched) in enumerate(hits):
        row = [float(i + 1), score, top - score]
        for ch, w in zip(CHANNELS, weights, strict=True):
            p = channels.get(ch)
            if p is None:
                row += (MISSING_RANK, 0.0, 0.0, 0.0)
            else:
                row += (float(p[0]), round(p[1], 6), w, round(p[2], 6))
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


def column_rows(
    hits: Sequence[Hit], question: str, weight: Callable[[str], float]
) -> tuple[list[int], np.ndarray]:
    """The leaf hits: their positions in ``hits`` and their features
    (:data:`COLUMN_NAMES`), one row a leaf."""
    words = question_words(question)
    own = hit_rows(hits, len(words), weight)
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


def column_features(
    hits: Sequence[Hit], question: str, weight: Callable[[str], float]
) -> list[tuple[int, dict[str, float]]]:
    """:func:`column_rows` by name: (position in ``hits``, features) per leaf hit."""
    leaves, x = column_rows(hits, question, weight)
    return [
        (i, dict(zip(COLUMN_NAMES, row.tolist(), strict=True)))
        for i, row in zip(leaves, x, strict=True)
    ]


@lru_cache(maxsize=2)
def _model(name: str) -> Forest:
    return shipped(name)


@lru_cache(maxsize=4)
def _columns_of(model: Forest) -> np.ndarray:
    """Where each of the model's features is among :data:`COLUMN_NAMES`."""
    missing = sorted(set(model.features) - set(COLUMN_NAMES))
    if missing:
        raise ValueError(f"the model reads features no search computes: {missing}")
    return np.array([COLUMN_NAMES.index(n) for n in model.features], dtype=np.int64)


def learned_columns(s: SearchState) -> None:
    """The column hits among the first entity hits re-ordered by a learned ranking model."""
    depth = s.config.learned_column_depth
    if s.question is None or s.fused is None or depth <= 0:
        return
    fused = s.fused
    order = list(range(len(fused))) if s.order is None else list(s.order)
    level = s.ranks.level
    head = order[:depth]
    if sum(level(fused.ids[i]) == 0 for i in head) < 2:
        return
    ids = [fused.ids[i] for i in order]
    # (the scores the list would show: the score rule's, as entity-scores gives them)
    shown = settle(ids, [fused.scores[i] for i in order])
    matched = (
        matched_word_sets(
            s.scope.index(),
            s.question,
            s.ranks.bridges,
            s.corpus.entities.get,
            s.config.question_reading(),
        )
        if "schema" in s.ranks.entity
        else None
    )
    hits: list[Hit] = []
    for k, i in enumerate(head):
        doc_id = fused.ids[i]
        channels = fused.fused(i).channels
        words: set[str] = set()
        if matched is not None and "schema" in channels and level(doc_id) >= 0:
            words = matched(doc_id)
        hits.append((doc_id, level(doc_id), channels, round(shown[k], 6), words))
    weighed = s.weighed

    def weight(channel: str) -> float:
        return weighed[channel][0] if channel in weighed else 1.0

    leaves, rows = column_rows(hits, s.question, weight)
    # (a leaf the request named keeps its place: the names lead)
    movable = [j for j, k in enumerate(leaves) if "input" not in hits[k][2]]
    if len(movable) < 2:
        return
    leaves = [leaves[j] for j in movable]
    model = _model(DENSE_MODEL if s.ranks.entity.get("vector") else MODEL)
    x = rows[movable][:, _columns_of(model)]
    scores = model.predict(x)
    ranked = sorted(range(len(leaves)), key=lambda j: (-scores[j], j))
    if ranked == list(range(len(leaves))):
        return
    new_head = list(head)
    for slot, j in zip(leaves, ranked, strict=True):
        new_head[slot] = head[leaves[j]]
    s.order = new_head + order[depth:]
    row_of = {fused.ids[head[k]]: j for j, k in enumerate(leaves)}

    def why(doc_id: str) -> str:
        j = row_of[doc_id]
        parts = sorted(model.contributions(x[j]).items(), key=lambda kv: -abs(kv[1]))
        named = ", ".join(f"{n} {v:+.3f}" for n, v in parts[:TOP_CONTRIBUTIONS])
        return f"learned column order (score {scores[j]:+.3f}: {named})"

    # (the features' contributions only for an explanation that shows them)
    note = why if s.trace_stages else _unexplained
    s.trace.reorder("learned-columns", ids, s.ordered_ids(), note)


def _unexplained(doc_id: str) -> str:
    return "learned column order"
