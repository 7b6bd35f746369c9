"""Train the weak-match detector: a logistic regression over the signals of
:func:`layersearch.plan.confidence.features`, written to
``src/layersearch/plan/weak_match.json``.

    python scripts/train_weak_match.py --data ../shared/data --cache build/weak

Data: Spider-Syn train questions (rewritten wording and Spider's own, both), each
asked of a layer that holds its database (answerable) and of one that does not
(unanswerable), and of its layer with half of each database's tables removed
(unanswerable when all its gold tables are gone, answerable when none is), as
:func:`layersearch.eval.weak.collect` frames it. The databases are
split as the schema encoder's are (``stacked_split(seed=0)`` of
``layersearch.eval.splits``, over the Spider-Syn databases that are not Spider
dev ones): the model is fitted on the stack databases, which the schema encoder
never read (its dense scores on its own training questions would overstate it);
every question of theirs is asked (``--train-per-db``), 30 of each validation
database's (``--per-db``). Two kinds of model are fitted: a logistic regression over
the standardised features, and boosted trees (LightGBM, a small grid of settings);
the kind and the trees' settings are chosen by their ROC AUC in a 4-fold
cross-validation over the stack databases (grouped by database), never by the
validation ones. The flag threshold is chosen on the validation databases (never
fitted on) as the lowest that flags at most ``--max-false`` of their answerable
askings. Two models: ``dense`` (searched with ``--embedder``, default local) and
``lexical`` (searched without a model, its features only). Spider dev is a check
(``python -m layersearch.eval.weak --set dev``); the agent set (``layersearch eval
agent``) is never read here.

Needs numpy and lightgbm (the ``train`` extra; without lightgbm only the regression
is fitted) and the ``local`` extra for the dense model's searches. The searched
records are cached under ``--cache``, so a second run only fits.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.eval import weak
from layersearch.eval.splits import stacked_split
from layersearch.plan import confidence
from layersearch.types import Hit

log = logging.getLogger("train_weak_match")
HERE = Path(__file__).resolve().parent
DENSE = ("dense_best", "dense_mean", "dense_spread", "dense_separation")
#: L2 penalty on the standardised coefficients (fixed, not tuned)
L2 = 1.0
#: the boosted trees' settings tried: (leaves, rounds, learning rate, least rows a leaf)
TREE_GRID = tuple(itertools.product((4, 8, 16), (100, 300), (0.03, 0.1), (20, 50)))
#: cross-validation folds over the stack databases
FOLDS = 4


def records(
    data: Path, cache: Path, name: str, questions: dict[str, list[str]], dbs: list[str], **kw: Any
) -> list[dict[str, Any]]:
    """The searched askings (cached); their features read again from the kept hits."""
    path = cache / f"{name}.json"
    if path.is_file():
        out = list(json.loads(path.read_text(encoding="utf-8")))
    else:
        out = weak.collect(
            data, questions, dbs, progress=lambda m: log.info("%s: %s", name, m), **kw
        )
        path.write_text(json.dumps(out), encoding="utf-8")
    for r in out:
        hits = [Hit.model_validate(h) for h in r["hits"]]
        r["x"] = confidence.features(r["question"], hits, dense=r["dense"])
    return [r for r in out if r["x"] is not None and r["hits"]]


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method (L2 on the weights, not the intercept)."""
    n, d = x.shape
    a = np.hstack([np.ones((n, 1)), x])
    w = np.zeros(d + 1)
    pen = np.full(d + 1, l2)
    pen[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + pen * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(pen)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[1:], float(w[0])


def threshold_for(probs: Sequence[float], max_false: float) -> float:
    """The lowest threshold flagging at most ``max_false`` of ``probs`` (answerable)."""
    desc = sorted(probs, reverse=True)
    k = int(max_false * len(desc))  # how many may be flagged
    if k >= len(desc):
        return 0.0
    above = desc[k - 1] if k else 1.0
    return (desc[k] + above) / 2 if above > desc[k] else float(np.nextafter(desc[k], 1.0))


def regression(x: np.ndarray, y: np.ndarray, names: list[str]) -> dict[str, Any]:
    """A logistic regression's entry of the coefficient file (threshold to be set)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    coef, intercept = fit((x - mean) / scale, y)
    return {
        "features": names,
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "coef": [round(float(v), 6) for v in coef],
        "intercept": round(intercept, 6),
        "threshold": 0.5,
    }


def trees(
    x: np.ndarray, y: np.ndarray, names: list[str], setting: tuple[int, int, float, int]
) -> dict[str, Any]:
    """Boosted trees' entry of the coefficient file (threshold to be set)."""
    import lightgbm as lgb

    from layersearch.ranking.trees import from_lightgbm

    leaves, rounds, rate, least = setting
    params = {
        "objective": "binary",
        "num_leaves": leaves,
        "learning_rate": rate,
        "min_data_in_leaf": least,
        "feature_fraction": 0.9,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "lambda_l2": 1.0,
        "num_threads": 2,
        "seed": 0,
        "deterministic": True,
        "verbose": -1,
    }
    data = lgb.Dataset(x, y, feature_name=names)
    model = lgb.train(params, data, num_boost_round=rounds)
    setting_text = f"leaves {leaves}, rounds {rounds}, learning rate {rate}, min leaf {least}"
    return {
        "kind": "trees",
        "forest": from_lightgbm(model.dump_model(), {"settings": setting_text}),
        "threshold": 0.5,
    }


def cross_validated(
    make: Any, x: np.ndarray, y: np.ndarray, names: list[str], dbs: list[str]
) -> float:
    """ROC AUC of ``make``'s models over :data:`FOLDS` folds of the databases."""
    order = sorted(set(dbs))
    np.random.RandomState(0).shuffle(order)
    fold_of = {d: k % FOLDS for k, d in enumerate(order)}
    folds = np.array([fold_of[d] for d in dbs])
    scores = np.zeros(len(y))
    for k in range(FOLDS):
        model = confidence.model_from_dict("cv", make(x[folds != k], y[folds != k], names))
        scores[folds == k] = [
            model.probability(dict(zip(names, row, strict=True))) for row in x[folds == k]
        ]
    return weak.auc(scores.tolist(), (y == 1).tolist()) or 0.0


def train_model(
    name: str,
    names: list[str],
    train: list[dict[str, Any]],
    val: list[dict[str, Any]],
    max_false: float,
) -> tuple[dict[str, Any], dict[str, Any]]:
    x = np.array([[r["x"][f] for f in names] for r in train], dtype=float)
    y = np.array([0.0 if r["right"] else 1.0 for r in train])
    dbs = [r["db"] for r in train]
    tried = {"regression": (cross_validated(regression, x, y, names, dbs), regression)}
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        log.warning("lightgbm is not installed: only the logistic regression is fitted")
    else:
        for setting in TREE_GRID:
            make = partial(trees, setting=setting)
            tried[f"trees {setting}"] = (cross_validated(make, x, y, names, dbs), make)
    chosen = max(tried, key=lambda k: tried[k][0])
    log.info(
        "%s: cross-validated AUC, regression %.4f, best trees %.4f: %s",
        name,
        tried["regression"][0],
        max((v[0] for k, v in tried.items() if k != "regression"), default=float("nan")),
        chosen,
    )
    d = tried[chosen][1](x, y, names)
    model = confidence.model_from_dict(name, d)
    right = [model.probability(r["x"]) for r in val if r["right"]]
    d["threshold"] = round(threshold_for(right, max_false), 6)
    model = confidence.model_from_dict(name, d)
    return d, {
        "chosen": chosen,
        "cross_validated_auc": {k: round(v[0], 4) for k, v in tried.items()},
        "train": weak.report(train, model),
        "validation": weak.report(val, model),
    } | {
        f"validation_{frame}": weak.report([r for r in val if r["frame"] == frame], model)
        for frame in weak.FRAMES
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--cache", default="build/weak", help="searched records, reused")
    ap.add_argument("--embedder", default="local", help="the dense model's embedder")
    ap.add_argument("--per-db", type=int, default=30, help="questions per validation database")
    ap.add_argument(
        "--train-per-db", type=int, default=None, help="questions per stack database (all)"
    )
    ap.add_argument("--max-false", type=float, default=0.05)
    ap.add_argument("--out", default=str(confidence.MODEL_FILE))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    data, cache = Path(args.data), Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    syn = weak.read_questions(data, "syn")
    original = weak.read_questions(data, "original")
    gold = weak.read_gold_tables(data)
    dev_dbs = set(weak.read_questions(data, "dev"))
    _, train_dbs, val_dbs = stacked_split([db for db in syn if db not in dev_dbs])
    out: dict[str, Any] = {
        "about": "weak-match detector (scripts/train_weak_match.py), per model: a logistic "
        "regression over standardised features, p = 1/(1+exp(-(intercept + sum "
        "coef*(x-mean)/scale))), or boosted trees (kind trees: p = 1/(1+exp(-sum of the "
        "trees' leaf values)))",
        "max_answerable_flagged": args.max_false,
        "models": {},
        "metrics": {},
        "validation_databases": val_dbs,
    }
    for name, embedder in (("lexical", None), ("dense", args.embedder)):
        every = args.train_per_db or max(len(v) for v in syn.values())
        kw = {"per_db": every, "embedder": embedder, "gold": gold}
        train = records(data, cache, f"{name}-train-syn", syn, train_dbs, **kw)
        train += records(data, cache, f"{name}-train-original", original, train_dbs, **kw)
        kw["per_db"] = args.per_db
        val = records(data, cache, f"{name}-validation", syn, val_dbs, **kw)
        names = [f for f in train[0]["x"] if name == "dense" or f not in DENSE]
        model, metrics = train_model(name, names, train, val, args.max_false)
        out["models"][name] = model
        out["metrics"][name] = metrics
        log.info("%s: %s", name, json.dumps(metrics))
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out["metrics"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
