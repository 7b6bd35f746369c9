"""The learned order of the column hits: stage ``learned-columns`` (docs/ranking.md).

Among the first ``learned_column_depth`` hits of the entity list, the column hits
(columns, measures, aggregations) are re-ordered by a small ranking model
(``ranking/learned/columns.json``, trained by ``scripts/learned_fusion.py --export``)
over features the search already holds: each hit's place and shown score, every
channel's rank, score, weight and part of the fused score, the share of the
question's words the schema channel matched in it, and the same of its table (its
own hit and its first column hit, its place among the tables, its database's place).
The columns take the places the columns held, so tables and datasources keep theirs.

The features are those ``scripts/learned_fusion.py`` reads off an explanation, less
the stage moves (which only an explanation's what-if fusions know): one definition
here and there, checked against each other by tests/test_learned_columns.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from layersearch.corpora.entities.matched import schema_words
from layersearch.corpora.entities.state import SearchState
from layersearch.ranking.pipeline import settle
from layersearch.ranking.trees import Forest, shipped

__all__ = ["MODEL", "column_features", "learned_columns", "table_features"]

#: the shipped model (``ranking/learned/<MODEL>.json``)
MODEL = "columns"
#: the entity channels a feature names
CHANNELS = ("input", "schema", "fulltext", "vector", "table")
#: rank given to a channel that did not list a hit
MISSING_RANK = 1000.0
#: how many features an explanation names
TOP_CONTRIBUTIONS = 3

#: one hit as the features see it: (id, fusion level, channel → (rank, score, part),
#: shown score, the question words the schema channel matched in it)
Hit = tuple[str, int, Mapping[str, tuple[int, float, float]], float, set[str]]


def question_words(question: str) -> set[str]:
    return set(re.findall(r"\w+", question.lower()))


def hit_features(
    hit: Hit,
    position: int,
    top_score: float,
    n_words: int,
    weight: Callable[[str], float],
) -> dict[str, float]:
    """A hit's own features: its 1-based ``position``, shown score and gap to the first
    hit's, each channel's rank, score, weight and part (missing: rank
    :data:`MISSING_RANK`, zeros), how many channels ranked it, and the share of the
    question's words the schema channel matched in it."""
    _, _, channels, score, matched = hit
    f = {"pos": float(position), "score": score, "gap": top_score - score}
    for ch in CHANNELS:
        p = channels.get(ch)
        f[f"{ch}_rank"] = float(p[0]) if p else MISSING_RANK
        f[f"{ch}_score"] = round(p[1], 6) if p else 0.0
        f[f"{ch}_weight"] = round(weight(ch), 6) if p else 0.0
        f[f"{ch}_contrib"] = round(p[2], 6) if p else 0.0
    f["n_channels"] = float(len(channels))
    f["matched_share"] = len(matched) / max(1, n_words)
    return f


def _missing(names: Sequence[str]) -> dict[str, float]:
    return {k: MISSING_RANK if k.endswith("_rank") or k == "pos" else 0.0 for k in names}


def table_features(
    hits: Sequence[Hit], words: set[str], weight: Callable[[str], float]
) -> dict[str, dict[str, float]]:
    """Each table the hits name (a table hit, or a leaf hit's table), by first
    appearance, with its features: its place among them, its own hit's features
    (``t_``; missing when only its leaves were hit), its first leaf hit's (``c_``), how
    many of its leaves were hit, the share of the question its hits matched together,
    and its database's place (first appearance among databases, hits in the first ten)."""
    n_words = len(words)
    top = hits[0][3] if hits else 0.0
    own: dict[str, dict[str, float]] = {}
    first_col: dict[str, dict[str, float]] = {}
    n_cols: dict[str, int] = {}
    matched: dict[str, set[str]] = {}
    db_order: dict[str, int] = {}
    db_top10: dict[str, int] = {}
    for i, h in enumerate(hits, 1):
        level = h[1]
        if level < 0:
            continue
        table = h[0] if level == 1 else h[0].rsplit(".", 1)[0]
        db = table.split(".", 1)[0]
        db_order.setdefault(db, len(db_order) + 1)
        if i <= 10:
            db_top10[db] = db_top10.get(db, 0) + 1
        matched.setdefault(table, set()).update(h[4])
        feats = hit_features(h, i, top, n_words, weight)
        if level == 1:
            own.setdefault(table, feats)
        else:
            n_cols[table] = n_cols.get(table, 0) + 1
            first_col.setdefault(table, feats)
    blank = _missing(list(hit_features(("", 0, {}, 0.0, set()), 0, 0.0, 1, weight)))
    out: dict[str, dict[str, float]] = {}
    for k, table in enumerate(matched, 1):
        db = table.split(".", 1)[0]
        f = {
            "today_pos": float(k),
            "n_words": float(n_words),
            "has_table_hit": 1.0 if table in own else 0.0,
            "n_column_hits": float(n_cols.get(table, 0)),
            "table_matched_share": len(matched[table] & words) / max(1, n_words),
            "db_pos": float(db_order[db]),
            "db_top10": float(db_top10.get(db, 0)),
        }
        for prefix, src in (("t_", own.get(table)), ("c_", first_col.get(table))):
            f.update({prefix + key: v for key, v in (src or blank).items()})
        out[table] = f
    return out


def column_features(
    hits: Sequence[Hit], question: str, weight: Callable[[str], float]
) -> list[tuple[int, dict[str, float]]]:
    """The leaf hits (position in ``hits``, features): each one's own features, its
    place among the leaves (``today_pos``), and its table's (``tbl_``)."""
    words = question_words(question)
    tables = table_features(hits, words, weight)
    top = hits[0][3] if hits else 0.0
    out: list[tuple[int, dict[str, float]]] = []
    for i, h in enumerate(hits):
        if h[1] != 0:
            continue
        f = hit_features(h, i + 1, top, len(words), weight)
        f["today_pos"] = float(len(out) + 1)
        table = tables.get(h[0].rsplit(".", 1)[0], {})
        f.update({"tbl_" + k: v for k, v in table.items()})
        out.append((i, f))
    return out


@lru_cache(maxsize=1)
def _model() -> Forest:
    return shipped(MODEL)


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
    reader = schema_words(
        s.index, s.ranks.entity, s.ranks.bridges, s.question, s.corpus.entities.get
    )
    matched = reader["schema"] if reader else None
    hits: list[Hit] = []
    for k, i in enumerate(head):
        doc_id = fused.ids[i]
        channels = fused.fused(i).channels
        words: set[str] = set()
        if matched is not None and "schema" in channels and level(doc_id) >= 0:
            words = {m.split("→", 1)[0].strip().lower() for m in matched(doc_id)}
        hits.append((doc_id, level(doc_id), channels, round(shown[k], 6), words))
    weighed = s.weighed

    def weight(channel: str) -> float:
        return weighed[channel][0] if channel in weighed else 1.0

    cols = column_features(hits, s.question, weight)
    model = _model()
    x = np.array([[f.get(n, 0.0) for n in model.features] for _, f in cols], dtype=np.float64)
    scores = model.predict(x)
    ranked = sorted(range(len(cols)), key=lambda j: (-scores[j], j))
    if ranked == list(range(len(cols))):
        return
    new_head = list(head)
    for slot, j in zip((k for k, _ in cols), ranked, strict=True):
        new_head[slot] = head[cols[j][0]]
    s.order = new_head + order[depth:]
    row_of = {fused.ids[head[k]]: j for j, (k, _) in enumerate(cols)}

    def why(doc_id: str) -> str:
        j = row_of[doc_id]
        parts = sorted(model.contributions(x[j]).items(), key=lambda kv: -abs(kv[1]))
        named = ", ".join(f"{n} {v:+.3f}" for n, v in parts[:TOP_CONTRIBUTIONS])
        return f"learned column order (score {scores[j]:+.3f}: {named})"

    s.trace.reorder("learned-columns", ids, s.ordered_ids(), why)
