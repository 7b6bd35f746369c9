"""Plain-word questions over imported semantic layers (dbt artifacts, Cube, LookML, OSI…).

Questions are JSONL records ``{sample, question, gold}``: ``sample`` names a
folder under the data directory (``dbt-manifest`` is read from its ``docs/``),
``gold`` lists the column or measure ids that answer the question; any one of
them counts. Each sample is loaded into its own in-memory store and every
question asked through :meth:`Layersearch.search`; recall@k is the share of
questions with a gold id among the first ``k`` column/measure/aggregation hits.

    python -m layersearch.eval.layers --data ../shared/data \\
        --questions tests/eval_data/semantic_layers.jsonl [--channels fulltext,bm25]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError
from layersearch.eval.jsonl import json_lines
from layersearch.types import CHANNELS

#: where a sample's catalog is, under the data directory
SAMPLE_PATHS = {"dbt-manifest": "dbt-manifest/docs"}
KS = (1, 5, 10)
_LEAF_KINDS = ("column", "measure", "aggregation")


def read_layer_questions(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such questions file")
    out: list[dict[str, Any]] = []
    for _, where, rec in json_lines(p, "questions file"):
        if not (
            isinstance(rec, dict)
            and isinstance(rec.get("sample"), str)
            and isinstance(rec.get("question"), str)
            and isinstance(rec.get("gold"), list)
            and rec["gold"]
        ):
            raise ConfigError(f"{where}: needs sample, question and a non-empty gold list")
        out.append(rec)
    return out


def run_layers(
    data: str | Path,
    questions: list[dict[str, Any]],
    *,
    channels: list[str] | None = None,
    embedder: str | None = None,
) -> dict[str, Any]:
    """Per-sample and overall recall@k, and each question's first hits."""
    from layersearch.api import Layersearch

    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_sample[q["sample"]].append(q)
    rows: list[dict[str, Any]] = []
    for sample, qs in sorted(by_sample.items()):
        path = Path(data) / SAMPLE_PATHS.get(sample, sample)
        with Layersearch(":memory:", embedder=embedder) as ls:
            ls.load(path)
            if ls.embedder is not None:
                ls.embed()
            for q in qs:
                resp = ls.search(question=q["question"], channels=channels, max_results=30)
                leaves = [h.id for h in resp.results if h.kind in _LEAF_KINDS]
                gold = {g.lower() for g in q["gold"]}
                rank = next((i for i, h in enumerate(leaves, 1) if h.lower() in gold), None)
                rows.append({**q, "rank": rank, "top": leaves[:5]})
    summary: dict[str, Any] = {}
    for sample in [*sorted(by_sample), "all"]:
        mine = [r for r in rows if sample in ("all", r["sample"])]
        summary[sample] = {"questions": len(mine)} | {
            f"recall@{k}": round(
                sum(1 for r in mine if r["rank"] and r["rank"] <= k) / len(mine), 3
            )
            for k in KS
        }
    return {"summary": summary, "questions": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the shared data folder")
    ap.add_argument("--questions", required=True, help="JSONL of {sample, question, gold}")
    ap.add_argument("--channels", default=None, help=f"comma list of {', '.join(CHANNELS)}")
    ap.add_argument("--embedder", default=None, help="e.g. local (dense); default none")
    ap.add_argument("--details", action="store_true", help="print each question's top hits")
    args = ap.parse_args(argv)
    channels = [c.strip() for c in args.channels.split(",")] if args.channels else None
    result = run_layers(
        args.data,
        read_layer_questions(args.questions),
        channels=channels,
        embedder=args.embedder,
    )
    print(f"| sample | questions | {' | '.join(f'recall@{k}' for k in KS)} |")
    print(f"|---|---|{'---|' * len(KS)}")
    for sample, s in result["summary"].items():
        vals = " | ".join(f"{s[f'recall@{k}']:.3f}" for k in KS)
        print(f"| {sample} | {s['questions']} | {vals} |")
    if args.details:
        for r in result["questions"]:
            print(f"{r['sample']}\t{r['rank']}\t{r['question']}\t{', '.join(r['top'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
