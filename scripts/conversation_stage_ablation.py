"""Measure message search's stages and fusion on two halves of the LoCoMo conversations.

Each question is searched within its own conversation (full text + vector, as
``layersearch eval conversations`` does) under several configurations, and any-evidence
R@10, all-evidence R@10, evidence R@10 and MRR are reported per half:

- ``default``: :class:`MessageSearchConfig` as shipped;
- ``without <stage>``: each switchable stage of ``MESSAGE_PIPELINE`` off;
- ``weight_vector=<w>``: the dense channel's fusion weight against full text's 1.0;
- ``learned``: a logistic regression over each candidate's channel features (standardised
  score, reciprocal rank, present) replaces the z-score fusion, the stages after it kept;
  trained on one half's questions and tested on the other, then swapped.

A change pays when it improves the mean of any@10, all@10 and MRR on *both* halves.
The store (with its vectors) is kept in ``--cache``, query vectors are embedded once per
run, so one embedder's vectors serve every configuration::

    python scripts/conversation_stage_ablation.py --locomo ../shared/data/locomo \\
        --embedder local:<turn encoder dir> --cache <dir> --json out.json

Needs numpy only (and the embedder's extra); writes the table to stdout, logs to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from layersearch.corpora.conversations import stages
from layersearch.corpora.conversations.locomo import import_locomo, read_locomo_questions
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed import make_embedder
from layersearch.eval.conversations import RANK_DEPTH, score_question, summarise
from layersearch.ranking.fusion import Fused
from layersearch.store.duckdb import DuckDBStore

log = logging.getLogger("conversation_stage_ablation")

HEADLINE = ("recall_any@10", "recall_all@10", "mrr")
KEYS = (*HEADLINE, "evidence_recall@10")
CHANNELS = ("fulltext", "vector")
#: a stage is kept when switching it off costs at least this much (mean of any@10,
#: all@10 and MRR) on one half at least
KEEP_MARGIN = 0.005


class MemoEmbedder:
    """The embedder with its query vectors remembered for the whole run."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.memo: dict[str, np.ndarray] = {}

    @property
    def fingerprint(self) -> Any:
        return self.inner.fingerprint

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vec = self.memo.get(text)
        if vec is None:
            vec = self.memo[text] = self.inner.embed_query(text)
        return vec


def features(rankings: Mapping[str, Sequence[tuple[str, float]]]) -> tuple[list[str], np.ndarray]:
    """Each candidate's row: per channel its standardised score (the channel's lowest when
    absent), 1 / rank (0) and present (1 / 0)."""
    ids: dict[str, int] = {}
    for c in CHANNELS:
        for doc_id, _ in rankings.get(c, ()):
            ids.setdefault(doc_id, len(ids))
    x = np.zeros((len(ids), 3 * len(CHANNELS)))
    for j, c in enumerate(CHANNELS):
        ranked = list(dict.fromkeys(d for d, _ in rankings.get(c, ())))
        scores = dict(reversed(list(rankings.get(c, ()))))
        if not ranked:
            continue
        s = np.array([scores[d] for d in ranked])
        z = (s - s.mean()) / (s.std() or 1.0)
        x[:, 3 * j] = z.min()
        for rank, (doc_id, zz) in enumerate(zip(ranked, z, strict=True), start=1):
            row = ids[doc_id]
            x[row, 3 * j] = zz
            x[row, 3 * j + 1] = 1.0 / rank
            x[row, 3 * j + 2] = 1.0
    return list(ids), x


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 30) -> np.ndarray:
    """Logistic regression by Newton's method with an L2 penalty (not on the intercept);
    returns [intercept, coefficients…]."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    reg = np.full(a.shape[1], l2)
    reg[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + reg * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


class FusionHook:
    """Replaces ``stages.zscore_fusion``: records each search's channel rankings, and
    with ``coef`` set ranks by the logistic regression instead."""

    def __init__(self) -> None:
        self.original = stages.zscore_fusion
        self.last: dict[str, list[tuple[str, float]]] = {}
        self.coef: np.ndarray | None = None

    def __call__(
        self, rankings: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float]
    ) -> list[Fused]:
        self.last = {c: list(r) for c, r in rankings.items()}
        if self.coef is None:
            return self.original(rankings, weights)
        ids, x = features(rankings)
        scores = self.coef[0] + x @ self.coef[1:]
        best = {
            d: r
            for c in CHANNELS
            for r, (d, _) in reversed(list(enumerate(rankings.get(c, ()), 1)))
        }
        out = []
        for i, doc_id in enumerate(ids):
            f = Fused(doc_id, float(scores[i]), best.get(doc_id, RANK_DEPTH))
            for c in CHANNELS:
                for r, (d, s) in enumerate(rankings.get(c, ()), start=1):
                    if d == doc_id:
                        f.channels[c] = (r, s, 0.0)
                        break
            out.append(f)
        return sorted(out, key=lambda f: (-f.score, f.best_rank, f.id))


def run(
    service: ConversationService,
    questions: Sequence[Any],
    config: MessageSearchConfig,
    hook: FusionHook,
    capture: dict[int, dict[str, list[tuple[str, float]]]] | None = None,
) -> list[dict[str, float]]:
    """Each question's metrics under ``config`` (``capture`` collects the rankings fused)."""
    service.config = config
    out = []
    for i, q in enumerate(questions):
        res = service.search_messages(
            q.question, RANK_DEPTH, conversation_id=q.conversation_id, channels=CHANNELS
        )
        if capture is not None:
            capture[i] = hook.last
        out.append(score_question([h.turn_id or h.message_id for h in res.hits], q.evidence))
    return out


def per_half(scores: list[dict[str, float]], halves: list[list[int]]) -> list[dict[str, Any]]:
    return [summarise([scores[i] for i in h], KEYS) for h in halves]


def open_service(args: argparse.Namespace) -> tuple[ConversationService, Any, MessageSearchConfig]:
    """The LoCoMo conversations imported into ``--cache``'s store and embedded (only what
    is not there yet), with the embedder (its query vectors remembered) and the config."""
    imported = import_locomo(args.locomo)
    embedder = MemoEmbedder(make_embedder(args.embedder))
    store = DuckDBStore(Path(args.cache) / "locomo.duckdb")
    dense: dict[str, DenseCorpus] = {}

    def getter(corpus: str) -> DenseCorpus:
        return dense.setdefault(corpus, DenseCorpus(store, corpus, embedder))  # type: ignore[arg-type]

    base = MessageSearchConfig()
    for pair in args.sets:
        name, _, raw = pair.partition("=")
        kind = type(getattr(base, name))
        value: Any = raw.lower() in ("1", "true", "on") if kind is bool else kind(raw)
        base = dataclasses.replace(base, **{name: value})
    service = ConversationService(store, getter, config=base)
    service.import_conversations(imported.conversations, problems=imported.problems)
    service.embed()
    return service, embedder, base


def learned_rows(
    service: ConversationService,
    questions: Sequence[Any],
    halves: list[list[int]],
    base: MessageSearchConfig,
    hook: FusionHook,
    captured: Mapping[int, Mapping[str, Sequence[tuple[str, float]]]],
    learned: dict[str, Any],
) -> list[dict[str, Any]]:
    """Per half, the metrics with the logistic fusion trained on the other half's
    questions (their captured rankings); ``learned`` gains each fit's coefficients."""
    turn_of = {mid: (m.turn_id or mid) for mid, m in service.snapshot().messages.items()}
    scores: dict[int, dict[str, float]] = {}
    for train, test in ((0, 1), (1, 0)):
        xs, ys = [], []
        for i in halves[train]:
            ids, x = features(captured[i])
            evidence = set(questions[i].evidence)
            xs.append(x)
            ys.append(np.array([turn_of.get(d, d) in evidence for d in ids], dtype=float))
        coef = fit_logistic(np.vstack(xs), np.concatenate(ys))
        learned[f"trained on half {train + 1}"] = [round(float(c), 4) for c in coef]
        hook.coef = coef
        try:
            tested = run(service, [questions[i] for i in halves[test]], base, hook)
        finally:
            hook.coef = None
        scores.update(zip(halves[test], tested, strict=True))
    return [summarise([scores[i] for i in h], KEYS) for h in halves]


def measure_all(
    args: argparse.Namespace,
    service: ConversationService,
    questions: Sequence[Any],
    halves: list[list[int]],
    base: MessageSearchConfig,
) -> dict[str, Any]:
    """Every configuration's per-half metrics (``rows``), the learned fusion's
    coefficients and what pays on both halves (``chosen``)."""
    hook = FusionHook()
    rows: dict[str, list[dict[str, Any]]] = {}
    learned: dict[str, Any] = {}
    chosen: dict[str, Any] = {}

    def measure(name: str, config: MessageSearchConfig, capture: Any = None) -> None:
        t0 = time.perf_counter()
        rows[name] = per_half(run(service, questions, config, hook, capture), halves)
        log.info("%s: %s (%.0f s)", name, rows[name], time.perf_counter() - t0)

    stages.zscore_fusion = hook  # type: ignore[assignment]
    try:
        captured: dict[int, dict[str, list[tuple[str, float]]]] = {}
        measure("default", base, captured)
        if not args.only_default:
            for stage in MessageSearchConfig.PIPELINE_STAGES:
                measure(f"without {stage}", base.without_stages([stage]))
            for w in (float(v) for v in args.weights.split(",")):
                measure(f"weight_vector={w:g}", dataclasses.replace(base, weight_vector=w))
            measure("fusion=rrf", dataclasses.replace(base, fusion="rrf"))
            rows["learned (other half)"] = learned_rows(
                service, questions, halves, base, hook, captured, learned
            )
            chosen = choose(rows, args.weights)
            config = dataclasses.replace(base, weight_vector=chosen["weight_vector"])
            measure("chosen", config.without_stages(chosen["without"]))
    finally:
        stages.zscore_fusion = hook.original
    return {"rows": rows, "learned_coefficients": learned, "chosen": chosen}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--embedder", required=True, help="an embedder spec, e.g. local:<dir>")
    ap.add_argument("--cache", required=True, help="the store folder (kept; vectors reused)")
    ap.add_argument(
        "--halves",
        default="1,2,3:4,5",
        help="two groups of 1-based conversation positions in file order (default 1,2,3:4,5)",
    )
    ap.add_argument("--weights", default="0.25,0.75,1.0,1.5", help="weight_vector values")
    ap.add_argument("--only-default", action="store_true", help="measure the default only")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--json", dest="json_path", default=None)
    ap.add_argument(
        "--reference", default=None, help="another run's --json whose default to compare with"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("layersearch").setLevel(logging.WARNING)

    service, embedder, base = open_service(args)
    questions = list(read_locomo_questions(args.locomo).questions)
    ids = [c.id for c in import_locomo(args.locomo).conversations]
    groups = [[ids[int(p) - 1] for p in g.split(",")] for g in args.halves.split(":")]
    halves = [[i for i, q in enumerate(questions) if q.conversation_id in g] for g in groups]
    if len(halves) != 2 or not all(halves):
        ap.error(f"--halves {args.halves}: two groups of conversations with questions needed")
    result: dict[str, Any] = {
        "embedder": embedder.fingerprint.describe(),
        "halves": [
            {"conversations": g, "questions": len(h)} for g, h in zip(groups, halves, strict=True)
        ],
        "sets": args.sets,
        **measure_all(args, service, questions, halves, base),
        "feature_names": [f"{c}.{f}" for c in CHANNELS for f in ("z", "inv_rank", "present")],
    }
    rows = result["rows"]
    if args.reference:
        reference = json.loads(Path(args.reference).read_text(encoding="utf-8"))
        ref = reference["rows"]["default"]
        result["beats_reference"] = {
            name: [all(m[k] > r[k] for k in HEADLINE) for m, r in zip(row, ref, strict=True)]
            for name, row in rows.items()
        }
        rows[f"reference default ({reference['embedder']})"] = ref
    print(table(rows))
    if result["chosen"]:
        print(f"chosen: {result['chosen']}")
    for name, beats in result.get("beats_reference", {}).items():
        if any(beats):
            print(f"{name} beats the reference default on every headline metric of halves {beats}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


def gain(row: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]]) -> list[float]:
    """Per half, the change of the headline metrics' mean from ``base``."""
    return [
        sum(r[k] - b[k] for k in HEADLINE) / len(HEADLINE) for r, b in zip(row, base, strict=True)
    ]


def choose(rows: Mapping[str, list[dict[str, Any]]], weights: str) -> dict[str, Any]:
    """What pays on both halves: the dense weight whose gain over the default is positive
    on both halves (the largest smaller gain of the two; the default's weight when none
    is), and the stages whose removal costs less than ``KEEP_MARGIN`` on both halves."""
    base = rows["default"]
    weight, best = MessageSearchConfig().weight_vector, 0.0
    for w in (float(v) for v in weights.split(",")):
        g = min(gain(rows[f"weight_vector={w:g}"], base))
        if g > best:
            weight, best = w, g
    drop = [
        stage
        for stage in MessageSearchConfig.PIPELINE_STAGES
        if all(-d < KEEP_MARGIN for d in gain(rows[f"without {stage}"], base))
    ]
    return {"weight_vector": weight, "without": drop}


def table(rows: Mapping[str, list[dict[str, Any]]]) -> str:
    """A markdown table: any/all/MRR per half and the change of their mean from default."""
    base = rows["default"]
    head = "| configuration | " + " | ".join(
        f"h{h + 1} any@10 | h{h + 1} all@10 | h{h + 1} MRR | h{h + 1} Δmean"
        for h in range(len(base))
    )
    lines = [head + " |", "|---" * (1 + 4 * len(base)) + "|"]
    for name, halves in rows.items():
        cells = []
        for h, r in enumerate(halves):
            delta = sum(r[k] - base[h][k] for k in HEADLINE) / len(HEADLINE)
            cells += [f"{r[k]:.3f}" for k in HEADLINE] + [f"{delta:+.4f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
