"""Saved example queries on the Spider catalog: how long saving takes, and what
10,000 saved examples cost a lexical search.

    PYTHONPATH=src python benchmarks/memories.py \
        [--catalog ../shared/data/spider/tables.json] \
        [--pairs ../shared/data/spider-syn/train.jsonl] [--examples 10000] [--queries 500]

Loads the catalog (166 databases) into a temporary DuckDB store, asks ``--queries``
questions with no memory saved (the baseline, same process, same window), saves the
first 7,000 pairs as example-query memories in one ``save_memories`` call (timed),
tops them up to ``--examples`` (each pair's rewritten question saved as a second
example), and asks the same questions again. Prints a table and writes
benchmarks/results/memories.json.

Targets (issue #16): saving 7,000 examples <= 30 s; search p50 with 10,000 saved
examples <= 5 ms, lexical channels.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from layersearch import Layersearch
from layersearch.eval.examples import _memory_items, read_pairs

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "memories.json"
LEXICAL = ["bm25", "fulltext"]


def _latencies(ls: Layersearch, questions: list[str], warmup: int = 20) -> list[float]:
    for q in questions[:warmup]:
        ls.search(question=q, channels=LEXICAL)
    out = []
    for q in questions:
        t0 = time.perf_counter()
        ls.search(question=q, channels=LEXICAL)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(p * len(s)))], 3)


def main() -> int:
    data = next(
        (
            d
            for d in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data")
            if d.is_dir()
        ),
        ROOT.parent / "shared" / "data",
    )
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", default=str(data / "spider" / "tables.json"))
    ap.add_argument("--pairs", default=str(data / "spider-syn" / "train.jsonl"))
    ap.add_argument("--examples", type=int, default=10_000)
    ap.add_argument("--saved-first", type=int, default=7_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    pairs = read_pairs(args.pairs)
    questions = [p["question"] for p in pairs[: args.queries]]
    with tempfile.TemporaryDirectory() as tmp, Layersearch(Path(tmp) / "s.duckdb") as ls:
        t0 = time.perf_counter()
        ls.load(args.catalog)
        ls.corpus()
        load_s = time.perf_counter() - t0
        base = _latencies(ls, questions)
        first = pairs[: args.saved_first]
        items, _ = _memory_items(ls, first)
        t0 = time.perf_counter()
        ls.save_memories(items)
        save_s = time.perf_counter() - t0
        extra = max(0, args.examples - len(items))
        more, _ = _memory_items(ls, (pairs * 2)[:extra])
        for item, pair in zip(more, (pairs * 2)[:extra], strict=True):
            item["learning"] = pair["question"]
        if more:
            ls.save_memories(more)
        saved = len(ls.corpus().memories)
        with_memories = _latencies(ls, questions)
    row = {
        "catalog": Path(args.catalog).name,
        "load_s": round(load_s, 2),
        "saved_first": len(items),
        "save_s": round(save_s, 2),
        "examples": saved,
        "p50_ms_without": _pct(base, 0.5),
        "p50_ms_with": _pct(with_memories, 0.5),
        "p99_ms_with": _pct(with_memories, 0.99),
        "p50_ratio": round(statistics.median(with_memories) / statistics.median(base), 2),
    }
    print(f"{'measure':<28} {'value':>10}")
    for k, v in row.items():
        print(f"{k:<28} {v!s:>10}")
    out = {"machine": platform.platform(), "python": sys.version.split()[0], "result": row}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
