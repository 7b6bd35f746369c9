"""Learned orders of the tables and the columns (LightGBM LambdaRank) against today's.

Every question is searched once with the shipped pipeline less the learned orders
that ``--pipeline`` leaves out (catalog mode, no datasource hint, ``explain=True``):
``tables`` leaves out ``learned-tables`` and ``learned-columns`` (the table model's
input), ``columns`` leaves out ``learned-columns`` (the column model's input, after
the table order). The tables its hits name (a model hit, or a column hit's table)
are the candidates, in today's order (``eval schema-linking``'s ``ranked_links``).
Each candidate gets features read off the explanations only — every channel's rank,
score and weight, the fused position and score, which stages moved it, its first
column hit, how much of the question its matched words cover, its database's place
— and a small LambdaRank model re-orders the same candidates; the column hits are
re-ordered the same way (their own features and their table's). Table recall@5
and column recall@10 of both orders are reported on:

- validation databases of Spider-Syn train: the schema encoder's split
  (``layersearch.eval.splits.stacked_split(seed=0)`` over the rows whose database
  is not a Spider dev database). Searched with ``--embedder local``, the models
  train on its ``stack`` databases, which the schema encoder never read: its scores
  on its own training questions would teach them to trust it more than it earns
  on new databases. Searched with ``--embedder none`` or ``local:minilm`` (no schema
  encoder read), they train on all its training databases;
- the same validation questions in Spider's own wording (``original_question``);
- Spider dev, as a check only (model trained on the training databases).

Two models are trained per level, on Spider-Syn's wording and on both wordings of
the training questions, each with seeds 0, 1, 2; both are reported.

Nothing is chosen on validation: the model's settings are fixed below.

    python scripts/learned_fusion.py --data ../shared/data \\
        --store STORE --out results.json

Needs the ``local`` extra (the embedder) and lightgbm (``train`` extra). The
searched features are cached (``--cache``), so a second run only trains.

``--export PATH`` instead trains the one model of ``--pipeline``'s level the search
ships (stages ``learned-tables`` and ``learned-columns``, docs/ranking.md): trained
on both wordings of the training databases' questions, seed 0, the settings below,
on the features a search computes without an explanation's what-if fusions
(:data:`RUN_TIME`: the ``moved_``/``up_`` stage features are left out); it writes
the trees as ``ranking.trees`` JSON, and the recall of today's and the exported
order on every reported set (the forest evaluated by ``ranking.trees``, not by
lightgbm), read from the cache as a stream. The column model reads the lists the
table model ordered, so the table model is trained first:

    python scripts/learned_fusion.py --pipeline tables --store STORE \\
        --cache TABLES.jsonl --out tables.out.json \\
        --export src/layersearch/ranking/learned/tables.json
    python scripts/learned_fusion.py --pipeline columns --store STORE \\
        --cache COLUMNS.jsonl --out columns.out.json \\
        --export src/layersearch/ranking/learned/columns.json
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from layersearch.corpora.entities.learned import question_words
from layersearch.eval.splits import stacked_split

log = logging.getLogger("learned_fusion")

HERE = Path(__file__).resolve().parent

#: the entity channels an explanation may name
CHANNELS = ("input", "schema", "fulltext", "vector")
#: the entity stages after fusion that may move a hit (docs/ranking.md)
STAGES = (
    "schema-over-fulltext",
    "join-keys",
)
#: rank given to a channel that did not list a hit
MISSING_RANK = 1000
TABLE_KINDS = frozenset({"model"})
LEAF_KINDS = frozenset({"column", "measure", "aggregation"})
#: fixed LambdaRank settings (nothing is tuned on validation)
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [5],
    "num_leaves": 15,
    "learning_rate": 0.05,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.9,
    "bagging_freq": 1,
    "num_threads": 2,
    "verbose": -1,
}
ROUNDS = 100
#: the model is trained once per seed (bagging differs); the mean is reported
SEEDS = (0, 1, 2)
#: what a model is trained on: Spider-Syn's wording, or both wordings of those questions
TRAINING = {"syn": ("train",), "both": ("train", "train_original")}
#: the sets reported (training sets excluded): validation databases in either wording,
#: and Spider dev as a check
REPORTED = ("validation", "validation_original", "spider_dev_check")


#: a feature the search computes without explaining: not one of the stage moves, which
#: need the what-if fusions only an explanation runs
RUN_TIME = re.compile(r"^(?!(.*_)?(moved|up)_)")
#: the stages each level's searches leave out: the learned order of that level and what
#: runs after it (the column order runs after the table order)
PIPELINES: dict[str, tuple[str, ...]] = {
    "columns": ("learned-columns",),
    "tables": ("learned-tables", "learned-columns"),
}
#: the catalog's names a search may read (--naming)
NAMINGS = ("as-written", "warehouse", "mixed")
#: the exported column model: trained on both wordings, this seed
EXPORT_TRAINING = TRAINING["both"]
EXPORT_SEED = 0


def _matched_words(parts: Sequence[Any]) -> set[str]:
    """The question words a hit's channels matched (``word`` or ``word→term weight``)."""
    out: set[str] = set()
    for p in parts:
        for m in getattr(p, "matched", None) or []:
            out.add(m.split("→", 1)[0].strip().lower())
    return out


def hit_features(hit: Any, position: int, top_score: float, n_words: int) -> dict[str, float]:
    """Features of one hit from its explanation: its 1-based fused ``position``, its
    score and gap to the first hit's, each channel's rank, score, weight and
    contribution (missing: rank :data:`MISSING_RANK`, zeros), the share of the
    question's words its channels matched, and per stage whether it moved the hit
    and by how many places (positive: up)."""
    f: dict[str, float] = {
        "pos": float(position),
        "score": float(hit.score),
        "gap": float(top_score - hit.score),
    }
    parts = {p.channel: p for p in hit.explanation or []}
    for ch in CHANNELS:
        p = parts.get(ch)
        f[f"{ch}_rank"] = float(p.rank) if p else float(MISSING_RANK)
        f[f"{ch}_score"] = float(p.score) if p else 0.0
        f[f"{ch}_weight"] = float(p.weight) if p else 0.0
        f[f"{ch}_contrib"] = float(p.contribution) if p else 0.0
    f["n_channels"] = float(len(parts))
    f["matched_share"] = len(_matched_words(hit.explanation or [])) / max(1, n_words)
    moves = {m.stage: m for m in hit.stages or []}
    for st in STAGES:
        m = moves.get(st)
        f[f"moved_{st}"] = 1.0 if m else 0.0
        # before 0: the stage added the hit
        f[f"up_{st}"] = float((m.before or m.after) - m.after) if m else 0.0
    return f


def _table_of(hit: Any) -> str | None:
    if hit.kind in TABLE_KINDS:
        return str(hit.id)
    if hit.kind in LEAF_KINDS:
        return str(hit.id).rsplit(".", 1)[0]
    return None


def table_candidates(hits: Sequence[Any], question: str) -> list[tuple[str, dict[str, float]]]:
    """Today's ranked tables (a model hit's id, or a leaf hit's table, first
    appearance) with each table's features: today's table position, its own model
    hit's features (``t_``; missing when only its columns were hit), its first
    column hit's (``c_``), how many of its columns were hit, the share of the
    question its hit and its columns matched together, and its database's place
    (first appearance among databases, hits in the first ten)."""
    words = question_words(question)
    n_words = len(words)
    top = float(hits[0].score) if hits else 0.0
    order: list[str] = []
    own: dict[str, dict[str, float]] = {}
    first_col: dict[str, dict[str, float]] = {}
    n_cols: dict[str, int] = {}
    matched: dict[str, set[str]] = {}
    db_order: list[str] = []
    db_top10: dict[str, int] = {}
    for i, h in enumerate(hits, 1):
        table = _table_of(h)
        if table is None:
            continue
        db = table.split(".", 1)[0]
        if db not in db_order:
            db_order.append(db)
        if i <= 10:
            db_top10[db] = db_top10.get(db, 0) + 1
        if table not in matched:
            order.append(table)
            matched[table] = set()
        matched[table] |= _matched_words(h.explanation or [])
        feats = hit_features(h, i, top, n_words)
        if h.kind in TABLE_KINDS:
            own.setdefault(table, feats)
        else:
            n_cols[table] = n_cols.get(table, 0) + 1
            first_col.setdefault(table, feats)
    empty = {k: 0.0 for k in hit_features(_Blank(), 0, 0.0, 1)}
    out = []
    for k, table in enumerate(order, 1):
        db = table.split(".", 1)[0]
        f: dict[str, float] = {
            "today_pos": float(k),
            "n_words": float(n_words),
            "has_table_hit": 1.0 if table in own else 0.0,
            "n_column_hits": float(n_cols.get(table, 0)),
            "table_matched_share": len(matched[table] & words) / max(1, n_words),
            "db_pos": float(db_order.index(db) + 1),
            "db_top10": float(db_top10.get(db, 0)),
        }
        for prefix, src in (("t_", own.get(table)), ("c_", first_col.get(table))):
            base = src if src is not None else _missing(empty)
            f.update({prefix + key: v for key, v in base.items()})
        out.append((table, f))
    return out


def column_candidates(
    hits: Sequence[Any], question: str, tables: Sequence[tuple[str, dict[str, float]]]
) -> list[tuple[str, dict[str, float]]]:
    """Today's ranked leaves (first appearance) with each one's own hit features and
    its table's (``tbl_``, from :func:`table_candidates`)."""
    n_words = len(question_words(question))
    top = float(hits[0].score) if hits else 0.0
    by_table = dict(tables)
    out: list[tuple[str, dict[str, float]]] = []
    seen: set[str] = set()
    for i, h in enumerate(hits, 1):
        if h.kind not in LEAF_KINDS or h.id in seen:
            continue
        seen.add(h.id)
        f = hit_features(h, i, top, n_words)
        f["today_pos"] = float(len(out) + 1)
        table = by_table.get(str(h.id).rsplit(".", 1)[0], {})
        f.update({"tbl_" + k: v for k, v in table.items()})
        out.append((str(h.id), f))
    return out


class _Blank:
    """A hit with nothing: the feature names of :func:`hit_features`."""

    score = 0.0
    explanation: list[Any] = []
    stages: list[Any] = []


def _missing(empty: dict[str, float]) -> dict[str, float]:
    return {k: float(MISSING_RANK) if k.endswith("_rank") or k == "pos" else 0.0 for k in empty}


# ---------------------------------------------------------------------------- searching


def search_rows(ls: Any, questions: Sequence[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    rows = []
    t0 = time.perf_counter()
    for i, q in enumerate(questions, 1):
        resp = ls.search(question=q["question"], explain=True, max_results=50)
        cands = table_candidates(resp.results, q["question"])
        cols = column_candidates(resp.results, q["question"], cands)
        words = question_words(q["question"])
        db_words: dict[str, set[str]] = {}
        for h in resp.results:
            table = _table_of(h)
            if table is not None:
                db = table.split(".", 1)[0]
                db_words.setdefault(db, set()).update(_matched_words(h.explanation or []))
        rows.append(
            {
                "split": split,
                "db_id": q["db_id"],
                "question": q["question"],
                "gold_tables": list(q["gold_tables"]),
                "tables": [t for t, _ in cands],
                "features": [f for _, f in cands],
                "gold_columns": list(q["gold_columns"]),
                "columns": [c for c, _ in cols],
                "column_features": [f for _, f in cols],
                # each database's hits together: the share of the question they matched
                "db_matched_share": {
                    db: len(w & words) / max(1, len(words)) for db, w in db_words.items()
                },
            }
        )
        if i % 500 == 0:
            log.info(
                "%s: %d/%d searched (%.0f s)", split, i, len(questions), time.perf_counter() - t0
            )
    return rows


def load_questions(
    data: Path, max_train: int, seed: int, unstacked: bool = False
) -> dict[str, list[dict[str, Any]]]:
    from layersearch.eval.spider import spider_questions

    rows = [json.loads(line) for line in (data / "spider-syn" / "train.jsonl").open()]
    dev_dbs = {q["db_id"] for q in json.loads((data / "spider" / "dev.json").read_text())}
    rows = [r for r in rows if r["db_id"] not in dev_dbs]  # dev is a check, never training
    encoder_dbs, train_dbs, val_dbs = stacked_split([r["db_id"] for r in rows], 0)
    if unstacked:  # no schema encoder read: every training database
        train_dbs = sorted(encoder_dbs + train_dbs)
    train = [r for r in rows if r["db_id"] in set(train_dbs)]
    random.Random(seed).shuffle(train)
    train = train[:max_train]
    val = [r for r in rows if r["db_id"] in set(val_dbs)]
    return {
        "train": train,
        "validation": val,
        # the same questions in Spider's own wording (Spider-Syn's original_question)
        "train_original": [{**r, "question": r["original_question"]} for r in train],
        "validation_original": [{**r, "question": r["original_question"]} for r in val],
        "spider_dev_check": spider_questions(
            data / "spider" / "dev.json", data / "spider" / "tables.json"
        ),
    }


def cached_splits(cache: Path) -> set[str]:
    """The splits a cache of searched rows holds."""
    if not cache.is_file():
        return set()
    with cache.open() as fh:
        return {json.loads(line)["split"] for line in fh}


def renamed(
    data: Path, naming: str, todo: dict[str, list[dict[str, Any]]], cache: Path
) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """Spider's catalog in ``naming``'s names (written beside ``cache``) and the
    questions with their database and gold ids mapped to them."""
    from layersearch.eval.abbreviate import abbreviate_spider, rename_spider, warehouse_db

    tables = json.loads((data / "spider" / "tables.json").read_text())
    out: dict[str, list[dict[str, Any]]] = {}
    dbs: list[dict[str, Any]] = []
    for name, qs in todo.items():
        if naming == "warehouse":
            dbs, out[name] = rename_spider(tables, qs, warehouse_db)
        else:
            dbs, out[name] = abbreviate_spider(tables, qs, "mixed")
    path = cache.with_suffix(f".{naming}.tables.json")
    path.write_text(json.dumps(dbs))
    return path, out


# ---------------------------------------------------------------------------- learning


def recall_at(rows: Sequence[dict[str, Any]], orders: Sequence[list[str]], k: int) -> float:
    """Mean recall at ``k`` of ``orders`` against each row's ``gold_tables``."""
    from layersearch.eval.metrics import recall_at_k

    return sum(
        recall_at_k(o, r["gold_tables"], k) for r, o in zip(rows, orders, strict=True)
    ) / len(rows)


def labels_of(row: dict[str, Any]) -> list[float]:
    """1 for each candidate that is gold, else 0; ids compare as the metrics compare
    them (case-insensitive: Spider's gold is lower case, the catalog is not)."""
    gold = {g.lower() for g in row["gold_tables"]}
    return [float(t.lower() in gold) for t in row["tables"]]


def datasource_candidates(row: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """The databases a question's tables name, first appearance first, each with the
    evidence of all its tables: its place and hits in the first ten, how many of its
    tables and columns were hit, its best table's place and channel ranks and scores,
    and the share of the question its hits matched together and one table alone."""
    by_db: dict[str, list[dict[str, float]]] = {}
    for table, f in zip(row["tables"], row["features"], strict=True):
        by_db.setdefault(table.split(".", 1)[0], []).append(f)
    shares = row.get("db_matched_share", {})
    out = []
    for db, fs in by_db.items():
        f = {
            "db_pos": fs[0]["db_pos"],
            "db_top10": fs[0]["db_top10"],
            "n_words": fs[0]["n_words"],
            "n_tables": float(len(fs)),
            "n_table_hits": sum(x["has_table_hit"] for x in fs),
            "n_column_hits": sum(x["n_column_hits"] for x in fs),
            "best_table_pos": min(x["today_pos"] for x in fs),
            "max_table_share": max(x["table_matched_share"] for x in fs),
            "sum_table_share": sum(x["table_matched_share"] for x in fs),
            "db_matched_share": float(shares.get(db, 0.0)),
        }
        for key in ("pos", "schema_rank", "vector_rank", "fulltext_rank"):
            f[f"min_t_{key}"] = min(x[f"t_{key}"] for x in fs)
            f[f"min_c_{key}"] = min(x[f"c_{key}"] for x in fs)
        for key in ("score", "schema_score", "vector_score", "fulltext_score"):
            f[f"max_t_{key}"] = max(x[f"t_{key}"] for x in fs)
            f[f"max_c_{key}"] = max(x[f"c_{key}"] for x in fs)
        out.append((db, f))
    return out


def level_rows(rows: Sequence[dict[str, Any]], level: str) -> list[dict[str, Any]]:
    """The rows as one level's ranking problem (``tables`` / ``gold_tables`` /
    ``features``): tables as stored; columns from the column keys, over the
    questions with gold columns; datasources (the question's database the gold)
    from :func:`datasource_candidates`."""
    if level == "tables":
        return list(rows)
    if level == "datasources":
        out = []
        for r in rows:
            cands = datasource_candidates(r)
            out.append(
                {
                    "split": r["split"],
                    "db_id": r["db_id"],
                    "tables": [db for db, _ in cands],
                    "gold_tables": [r["db_id"]],
                    "features": [f for _, f in cands],
                    "ranked_tables": r["tables"],
                    "table_gold": r["gold_tables"],
                }
            )
        return out
    return [
        {
            "split": r["split"],
            "db_id": r["db_id"],
            "tables": r["columns"],
            "gold_tables": r["gold_columns"],
            "features": r["column_features"],
        }
        for r in rows
        if r["gold_columns"]
    ]


def matrix(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> Any:
    import numpy as np

    return np.array(
        [[f[n] for n in names] for r in rows for f in r["features"]], dtype=np.float64
    ).reshape(-1, len(names))


def learned_orders(
    model: Any, rows: Sequence[dict[str, Any]], names: Sequence[str]
) -> list[list[str]]:
    """Each question's candidates by the model's score (ties keep today's order)."""
    scores = model.predict(matrix(rows, names)) if rows else []
    out, at = [], 0
    for r in rows:
        n = len(r["tables"])
        s = scores[at : at + n]
        at += n
        out.append([r["tables"][i] for i in sorted(range(n), key=lambda i: (-s[i], i))])
    return out


def train_model(rows: Sequence[dict[str, Any]], names: Sequence[str], seed: int) -> Any:
    import lightgbm as lgb

    # a question with no gold table among its candidates teaches nothing
    rows = [r for r in rows if any(labels_of(r))]
    labels = [y for r in rows for y in labels_of(r)]
    ds = lgb.Dataset(
        matrix(rows, names),
        label=labels,
        group=[len(r["tables"]) for r in rows],
        feature_name=list(names),
    )
    return lgb.train({**PARAMS, "seed": seed}, ds, num_boost_round=ROUNDS)


def measure(
    rows: Sequence[dict[str, Any]], level: str, k: int, train_splits: Sequence[str]
) -> dict[str, Any]:
    """Train on ``train_splits`` once per seed; recall at ``k`` of today's and the
    learned order on every set in :data:`REPORTED`, and the features' gain."""
    lv = level_rows(rows, level)
    names = sorted({n for r in lv for f in r["features"] for n in f})
    by = {s: [r for r in lv if r["split"] == s] for s in REPORTED}
    train = [r for r in lv if r["split"] in train_splits]
    models = [train_model(train, names, seed) for seed in SEEDS]
    out: dict[str, Any] = {}
    print(
        f"  {'set':<20} {'questions':>9} {'dbs':>4} {'today':>6} {'learned':>7} "
        f"{'seeds min..max':>14} {'better':>6} {'worse':>6}"
    )
    for s, rs in by.items():
        if not rs:
            continue
        today_orders = [r["tables"] for r in rs]
        today = recall_at(rs, today_orders, k)
        per_seed = [recall_at(rs, learned_orders(m, rs, names), k) for m in models]
        first = learned_orders(models[0], rs, names)
        diffs = [
            recall_at([r], [a], k) - recall_at([r], [b], k)
            for r, a, b in zip(rs, first, today_orders, strict=True)
        ]
        o = out[s] = {
            "questions": len(rs),
            "databases": len({r["db_id"] for r in rs}),
            f"today_recall@{k}": today,
            f"learned_recall@{k}": sum(per_seed) / len(per_seed),
            f"learned_recall@{k}_per_seed": per_seed,
            "questions_better_seed0": sum(d > 0 for d in diffs),
            "questions_worse_seed0": sum(d < 0 for d in diffs),
            "gold_among_candidates": sum(any(labels_of(r)) for r in rs) / len(rs),
        }
        print(
            f"  {s:<20} {len(rs):>9} {o['databases']:>4} {today:>6.3f} "
            f"{o[f'learned_recall@{k}']:>7.3f} {min(per_seed):>6.3f}..{max(per_seed):.3f} "
            f"{o['questions_better_seed0']:>6} {o['questions_worse_seed0']:>6}"
        )
    if level == "datasources":
        # the tables of the database ranked first by the model before the others
        for s, rs in by.items():
            if not rs:
                continue
            firsts = [o[0] for o in learned_orders(models[0], rs, names)]
            grouped = [
                [t for t in r["ranked_tables"] if t.split(".", 1)[0] == db]
                + [t for t in r["ranked_tables"] if t.split(".", 1)[0] != db]
                for r, db in zip(rs, firsts, strict=True)
            ]
            tables = [{"gold_tables": r["table_gold"]} for r in rs]
            today_t = recall_at(tables, [r["ranked_tables"] for r in rs], 5)
            first_t = recall_at(tables, grouped, 5)
            out[s]["table_recall@5_today"] = today_t
            out[s]["table_recall@5_learned_database_first"] = first_t
            print(f"  {s:<20} table R@5 today {today_t:.4f}, learned database first {first_t:.4f}")
    gain = sum(m.feature_importance(importance_type="gain") for m in models)
    total = float(sum(gain)) or 1.0
    imp = sorted(zip(names, (float(g) / total for g in gain), strict=True), key=lambda x: -x[1])
    print(f"  feature importance (share of gain, {len(SEEDS)} seeds):")
    for n, g in imp[:10]:
        print(f"    {n:<30} {g:.3f}")
    return {"sets": out, "importance_gain_share": dict(imp)}


#: the recall each level is measured at
RECALL_K: dict[str, int] = {"tables": 5, "columns": 10, "datasources": 1}


def reads_encoder(embedder: str) -> bool:
    """Whether searches with ``embedder`` read the schema encoder (then the models
    train on the stack databases only; else on every training database)."""
    return embedder not in ("none", "local:minilm")


def export_model(
    caches: Sequence[Path], out: Path, path: Path, embedder: str, level: str
) -> dict[str, Any]:
    """Trains the shipped model of ``level`` (module docstring) from the cached
    features (read as a stream), writes its trees to ``path`` and returns the recall
    of today's and the exported order per set (the exported file evaluated by
    ``ranking.trees``), which also go into the file's ``meta``."""
    import lightgbm as lgb
    import numpy as np

    from layersearch.eval.metrics import recall_at_k
    from layersearch.ranking.trees import Forest, from_lightgbm

    k = RECALL_K[level]
    names: list[str] | None = None
    train: list[tuple[Any, Any]] = []
    # (held-out sets by cache: the first cache's under their own names, the others' with
    # the cache's file name)
    held: dict[str, list[tuple[Any, Any, list[str], list[str]]]] = {}
    for c, cache in enumerate(caches):
        tag = "" if c == 0 else f" ({cache.name.split('.')[0]})"
        with cache.open() as fh:
            for line in fh:
                for one in level_rows([json.loads(line)], level):
                    if not one["gold_tables"] or not one["tables"]:
                        continue
                    if names is None:
                        names = sorted(n for n in one["features"][0] if RUN_TIME.match(n))
                    x, y = matrix([one], names), np.array(labels_of(one))
                    if one["split"] in EXPORT_TRAINING:
                        if y.any():  # (a question with no gold among them teaches nothing)
                            train.append((x, y))
                    elif one["split"] in REPORTED:
                        held.setdefault(one["split"] + tag, []).append(
                            (x, y, one["tables"], one["gold_tables"])
                        )
    assert names is not None, f"{caches[0]}: no cached {level} candidates"
    log.info("training on %d questions, %d features", len(train), len(names))
    ds = lgb.Dataset(
        np.vstack([x for x, _ in train]),
        label=np.concatenate([y for _, y in train]),
        group=[len(y) for _, y in train],
        feature_name=list(names),
    )
    model = lgb.train({**PARAMS, "seed": EXPORT_SEED}, ds, num_boost_round=ROUNDS)
    forest = Forest.from_dict(from_lightgbm(model.dump_model()))
    metric = f"{level[:-1]}_recall@{k}"
    sets: dict[str, Any] = {}
    for split, rows in held.items():
        today = learned = 0.0
        for x, _, ids, gold in rows:
            s = forest.predict(x)
            order = [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-s[i], i))]
            today += recall_at_k(ids, gold, k)
            learned += recall_at_k(order, gold, k)
        n = max(1, len(rows))
        sets[split] = {
            "questions": len(rows),
            f"today_{metric}": round(today / n, 4),
            f"learned_{metric}": round(learned / n, 4),
        }
        log.info("%s: %s", split, sets[split])
    searches = "lexical searches" if embedder == "none" else f"searches with --embedder {embedder}"
    trained = (
        "its stack databases"
        if reads_encoder(embedder)
        else "its encoder and stack databases (no schema encoder read: none is stacked)"
    )
    what = {
        "columns": "the order of the column hits among the first entity hits (learned-columns)",
        "tables": "the order of the tables the first entity hits name (learned-tables)",
    }[level]
    meta = {
        "what": what,
        "data": "Spider-Syn train (CC BY-SA 4.0), both wordings (question, original_question)",
        "split": "stacked_split(seed=0) of layersearch/eval/splits.py over the databases "
        f"not in Spider dev; {searches}, trained on {trained}, "
        "validated on its validation databases",
        "training_questions": len(train),
        "objective": f"LightGBM LambdaRank, label 1 for a gold {level[:-1]}",
        "settings": {**PARAMS, "rounds": ROUNDS, "seed": EXPORT_SEED},
        "lightgbm": lgb.__version__,
        "command": f"python scripts/learned_fusion.py --embedder {embedder} --pipeline {level} "
        "--store STORE --cache FEATURES --out OUT --export PATH",
        metric: sets,
    }
    dumped = from_lightgbm(model.dump_model(), meta)
    path.write_text(json.dumps(dumped, separators=(",", ":")) + "\n")
    # (rows of the first validation questions and lightgbm's own scores, for the tests)
    sample = [(x, ids) for x, _, ids, _ in held["validation"][:8]]
    rows_x = np.vstack([x for x, _ in sample])
    out.write_text(
        json.dumps(
            {
                "sets": sets,
                "features": names,
                "rows": np.round(rows_x, 6).tolist(),
                "lightgbm": model.predict(np.round(rows_x, 6)).tolist(),
            }
        )
        + "\n"
    )
    return sets


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--store", type=Path, required=True, help="store.duckdb of the 166 Spider dbs")
    ap.add_argument("--cache", type=Path, default=None, help="searched features (JSONL), reused")
    ap.add_argument("--out", type=Path, required=True, help="results JSON")
    ap.add_argument("--max-train", type=int, default=4000)
    ap.add_argument(
        "--embedder",
        default="none",
        help="none (the shipped model: lexical searches) or an embedder spec",
    )
    ap.add_argument(
        "--pipeline",
        choices=sorted(PIPELINES),
        default="columns",
        help="tables: searched without the learned orders (the table model's input); "
        "columns: without the learned column order only (the column model's input); "
        "--export trains that level's model",
    )
    ap.add_argument(
        "--naming",
        choices=NAMINGS,
        default="as-written",
        help="the catalog's names: as written, or renamed as warehouses write them "
        "(layersearch.eval.abbreviate.warehouse_db) or abbreviated (eval abbreviate-catalog "
        "--style mixed); --store is loaded from that catalog when it does not exist",
    )
    ap.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="--export: another searched cache to train on (e.g. another naming's)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set (smoke)")
    ap.add_argument(
        "--export", type=Path, default=None, help="train the shipped column model, write it here"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)

    cache = args.cache or args.out.with_suffix(".features.jsonl")
    done = cached_splits(cache)
    lexical = args.embedder == "none"
    splits = load_questions(args.data, args.max_train, args.seed, not reads_encoder(args.embedder))
    todo = {n: qs for n, qs in splits.items() if n not in done}
    log.info("%s holds %s; to search: %s (%s names)", cache, sorted(done), list(todo), args.naming)
    if todo:
        from layersearch import Layersearch
        from layersearch.corpora.entities.config import EntityRankingConfig

        catalog = args.data / "spider" / "tables.json"
        if args.naming != "as-written":
            catalog, todo = renamed(args.data, args.naming, todo, cache)
        fresh = not args.store.is_file()
        with Layersearch(args.store, embedder=None if lexical else args.embedder) as ls:
            if fresh:  # (the catalog in these names, and its vectors)
                log.info("loading %s into %s", catalog, args.store)
                ls.load(catalog)
                if not lexical:
                    ls.embed()
            # the candidates as the learned order of that level receives them
            ls.entities.ranking = EntityRankingConfig(without=frozenset(PIPELINES[args.pipeline]))
            for name, qs in todo.items():
                found = search_rows(ls, qs[: args.limit], name)
                with cache.open("a") as fh:  # (a split is written whole once searched)
                    fh.writelines(json.dumps(r) + "\n" for r in found)

    if args.export is not None:
        export_model([cache, *args.also], args.out, args.export, args.embedder, args.pipeline)
        return 0
    rows = [json.loads(line) for line in cache.open()]
    results: dict[str, Any] = {"params": {**PARAMS, "rounds": ROUNDS, "seeds": SEEDS}}
    for variant, train_splits in TRAINING.items():
        for level, k in RECALL_K.items():
            print(f"\ntrained on {variant} ({' + '.join(train_splits)}), {level} R@{k}")
            results.setdefault(variant, {})[level] = measure(rows, level, k, train_splits)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
