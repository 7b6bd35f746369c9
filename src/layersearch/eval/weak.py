"""Measuring the weak-match detector on Spider questions asked of layers that hold, or
do not hold, their database.

The agent's setting (``layersearch eval agent``) is a whole layer searched with no
datasource filter. It is mirrored here: the databases are shuffled (seeded) into
"layers" of 1 to 8 databases each; every sampled question is asked of its own layer
(answerable) and of the next layer, which does not hold its database (unanswerable).
With gold tables (Spider-Syn), each is also asked of its own layer with half of each
database's tables removed: unanswerable when all its gold tables are gone (a near
miss: the layer is about the right things but lacks this one), answerable when none
is; questions that lose some of their tables are not asked.
Each asking's features (:func:`layersearch.plan.confidence.features`) are recorded;
the report gives the ROC AUC of the shipped model's probability and the shares
flagged at its threshold.

    python -m layersearch.eval.weak --data ../shared/data [--set validation|dev] \\
        [--embedder local] [--per-db 10]

``validation`` is Spider-Syn train questions over the validation databases named in
the coefficient file (never trained on); ``dev`` is Spider dev, a check only.
``scripts/train_weak_match.py`` collects its training records with the same code.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.plan import confidence

#: how an asking is framed: the question asked of a layer of whole databases (its own,
#: or the next layer), or of its own layer with half of each database's tables removed
FRAMES = ("layer", "halved")
#: how many databases a layer holds (each layer's size drawn from these, seeded)
LAYER_SIZES = (1, 2, 4, 8)


def read_questions(data: Path, which: str) -> dict[str, list[str]]:
    """Questions by database: ``syn`` (Spider-Syn train, rewritten wording), ``original``
    (the same rows in Spider's wording) or ``dev`` (Spider dev)."""
    if which == "dev":
        path = data / "spider" / "dev.json"
        rows = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        key = "question"
    else:
        path = data / "spider-syn" / "train.jsonl"
        text = path.read_text(encoding="utf-8") if path.is_file() else None
        rows = [json.loads(line) for line in text.splitlines() if line] if text else None
        key = "question" if which == "syn" else "original_question"
    if rows is None:
        raise ConfigError(f"{path}: no such file")
    out: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        out[r["db_id"]].append(r[key])
    return dict(out)


def read_gold_tables(data: Path) -> dict[str, set[str]]:
    """Each Spider-Syn train question's gold tables (importer ids, lower case), under
    both its wordings."""
    path = data / "spider-syn" / "train.jsonl"
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    out: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line:
            r = json.loads(line)
            for key in ("question", "original_question"):
                out[r[key]] = {t.lower() for t in r["gold_tables"]}
    return out


def halved(db: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """``db`` without half its tables (chosen by CRC-32 of the name, so the same on
    every run), and the importer ids of the tables removed."""
    n = len(db["table_names_original"])
    order = sorted(range(n), key=lambda i: zlib.crc32(f"{db['db_id']}/{i}".encode()))
    gone = set(order[: n // 2])
    keep = [i for i in range(n) if i not in gone]
    new_table = {old: new for new, old in enumerate(keep)}
    cols = [k for k, (t, _) in enumerate(db["column_names_original"]) if t == -1 or t in new_table]
    new_col = {old: new for new, old in enumerate(cols)}

    def col(k: int) -> int:
        t, name = db["column_names_original"][k]
        return new_table[t] if t != -1 else -1

    out = dict(db)
    for key in ("table_names", "table_names_original"):
        out[key] = [db[key][i] for i in keep]
    for key in ("column_names", "column_names_original"):
        out[key] = [[col(k), db[key][k][1]] for k in cols]
    out["column_types"] = [db["column_types"][k] for k in cols]
    out["foreign_keys"] = [
        [new_col[a], new_col[b]] for a, b in db["foreign_keys"] if a in new_col and b in new_col
    ]
    out["primary_keys"] = [
        new_col[p] if isinstance(p, int) else [new_col[q] for q in p]
        for p in db["primary_keys"]
        if all(q in new_col for q in ([p] if isinstance(p, int) else p))
    ]
    removed = {f"{db['db_id']}.{db['table_names_original'][i]}".lower() for i in gone}
    return out, removed


def layers(dbs: Sequence[str], seed: int) -> list[list[str]]:
    """The databases shuffled into layers of :data:`LAYER_SIZES` databases (seeded)."""
    rng = random.Random(seed)
    order = sorted(dbs)
    rng.shuffle(order)
    out: list[list[str]] = []
    while order:
        size = rng.choice(LAYER_SIZES)
        out.append(order[:size])
        order = order[size:]
    return out


def sample(
    questions: dict[str, list[str]], dbs: Sequence[str], per_db: int, seed: int
) -> dict[str, list[str]]:
    """``per_db`` questions of each database (seeded), by database."""
    rng = random.Random(seed)
    return {db: rng.sample(qs, min(per_db, len(qs))) for db in dbs if (qs := questions.get(db))}


def collect(
    data: Path,
    questions: dict[str, list[str]],
    dbs: Sequence[str],
    *,
    per_db: int = 10,
    embedder: str | None = None,
    seed: int = 0,
    gold: dict[str, set[str]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Each sampled question asked of its own layer and of the next one: its features
    (``x``) and the first hits they were read from (``hits``, with ``dense``: whether
    the dense channel ran), so that a feature can be added without searching again."""
    from layersearch.api import Layersearch
    from layersearch.plan.answer import explained

    tables = json.loads((data / "spider" / "tables.json").read_text(encoding="utf-8"))
    by_db = {t["db_id"]: t for t in tables}
    chosen = sample(questions, [d for d in dbs if d in by_db], per_db, seed)
    groups = layers(sorted(chosen), seed)
    out: list[dict[str, Any]] = []

    def ask(ls: Any, i: int, frame: str, askings: list[tuple[str, str, bool]]) -> None:
        for db, q, right in askings:
            hits = ls.entities.search(explained(ls.entities.request(question=q, max_results=30)))
            x = confidence.features(q, hits.results)
            kept = [
                h.model_dump(include={"kind", "id", "score", "explanation"})
                for h in confidence.first_hits(hits.results)
            ]
            if x is None or not kept:  # not judged: no plain word, or no entity hit
                continue
            rec = {"db": db, "layer": i, "frame": frame, "right": right, "question": q}
            out.append(rec | {"dense": confidence.has_dense(hits.results), "hits": kept, "x": x})

    def search(catalog: list[dict[str, Any]], i: int, frame: str, askings: list[Any]) -> None:
        path = Path(tmp) / f"layer{i}-{frame}.json"
        path.write_text(json.dumps(catalog), encoding="utf-8")
        with Layersearch(":memory:", embedder=embedder) as ls:
            ls.load(path)
            if ls.embedder is not None:
                ls.embed()
            ask(ls, i, frame, askings)

    with tempfile.TemporaryDirectory() as tmp:
        for i, group in enumerate(groups):
            other = groups[(i + 1) % len(groups)] if len(groups) > 1 else []
            askings = [(db, q, True) for db in group for q in chosen[db]]
            askings += [(db, q, False) for db in other for q in chosen[db]]
            search([by_db[d] for d in group], i, "layer", askings)
            if gold is not None:  # the layer without half of each database's tables
                halves = [halved(by_db[d]) for d in group]
                removed = set().union(*(r for _, r in halves))
                near = []
                for db in group:
                    for q in chosen[db]:
                        need = gold.get(q, set())
                        if need and need <= removed:
                            near.append((db, q, False))
                        elif need and not need & removed:
                            near.append((db, q, True))
                search([h for h, _ in halves], i, "halved", near)
            if progress is not None:
                progress(f"layer {i + 1}/{len(groups)}: {len(out)} askings")
    return out


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """ROC AUC: the chance a positive scores above a negative (ties count half)."""
    pairs = sorted(zip(scores, positive, strict=True))
    n_pos = sum(positive)
    n_neg = len(pairs) - n_pos
    if not n_pos or not n_neg:
        return None
    rank_sum, i = 0.0, 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # 1-based mean rank of the tie block
        rank_sum += mid * sum(1 for _, p in pairs[i:j] if p)
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def report(records: Sequence[dict[str, Any]], model: confidence.AnyModel) -> dict[str, Any]:
    """AUC of the model's probability for "unanswerable" and the shares flagged."""
    probs = [model.probability(r["x"]) for r in records]
    wrong = [not r["right"] for r in records]
    right_p = [p for p, w in zip(probs, wrong, strict=True) if not w]
    wrong_p = [p for p, w in zip(probs, wrong, strict=True) if w]

    def share(ps: list[float]) -> float | None:
        return round(sum(p >= model.threshold for p in ps) / len(ps), 3) if ps else None

    a = auc(probs, wrong)
    return {
        "model": model.name,
        "askings": len(records),
        "auc": round(a, 4) if a is not None else None,
        "threshold": round(model.threshold, 4),
        "unanswerable_flagged": share(wrong_p),
        "answerable_flagged": share(right_p),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the shared data folder")
    ap.add_argument("--set", choices=("validation", "dev"), default="validation")
    ap.add_argument("--per-db", type=int, default=10, help="questions sampled per database")
    ap.add_argument("--embedder", default=None, help="e.g. local; default: none")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    data = Path(args.data)
    doc = json.loads(confidence.MODEL_FILE.read_text(encoding="utf-8"))
    if args.set == "dev":
        questions = read_questions(data, "dev")
        dbs = sorted(questions)
        gold = None
    else:
        questions = read_questions(data, "syn")
        dbs = doc["validation_databases"]
        gold = read_gold_tables(data)
    records = collect(
        data, questions, dbs, per_db=args.per_db, embedder=args.embedder, seed=args.seed, gold=gold
    )
    models = confidence.read_models()
    name = "dense" if records and "dense_best" in records[0]["x"] else "lexical"
    out = {"set": args.set, **report(records, models[name])}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
