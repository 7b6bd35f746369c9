"""Cost of lexical search's word readings from the shipped word vectors
(``ranking.static_words``).

Loads the Spider catalog (166 databases) into an in-memory store with no embedder
and asks Spider dev questions, each twice in alternation: with the question's
words read as their nearest catalog words by the shipped vectors (the default)
and without them (WordNet's bridges alone), so both run on the same host at the
same moment; which mode goes first alternates. Prints a table; writes
``benchmarks/results/static_words.json``.

    PYTHONPATH=src python benchmarks/static_words.py [--questions 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))
OUT = Path(__file__).parent / "results" / "static_words.json"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()

    import layersearch.corpora.entities.search as entity_search
    from layersearch import Layersearch
    from layersearch.ranking.static_words import static_words

    questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
    questions = questions[: args.questions]
    ls = Layersearch(":memory:")
    ls.load(SPIDER / "tables.json")
    t = time.perf_counter()
    words = static_words()
    read_s = time.perf_counter() - t
    if words is None:
        raise SystemExit("no word vectors (LAYERSEARCH_WORD_VECTORS is empty or unreadable)")
    with_words = entity_search.static_bridges

    def off(index, question, names):  # type: ignore[no-untyped-def]
        return ()

    times: dict[str, list[float]] = {"with words": [], "without": []}
    ls.search(question="warm up the search path")
    for i, q in enumerate(questions):
        modes = ["with words", "without"] if i % 2 == 0 else ["without", "with words"]
        for mode in modes:
            entity_search.static_bridges = with_words if mode == "with words" else off
            t = time.perf_counter()
            ls.search(question=q, max_results=20)
            times[mode].append((time.perf_counter() - t) * 1000)
    entity_search.static_bridges = with_words
    rows = {
        mode: {
            "p50_ms": round(statistics.median(xs), 3),
            "p95_ms": round(_pct(xs, 0.95), 3),
            "mean_ms": round(statistics.fmean(xs), 3),
        }
        for mode, xs in times.items()
    }
    ratio = round(rows["with words"]["p50_ms"] / rows["without"]["p50_ms"], 3)
    print(f"Spider catalog, {len(questions)} dev questions, no embedder, lexical search")
    print(f"{'mode':<12} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for mode, r in rows.items():
        print(f"{mode:<12} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['mean_ms']:>8.2f}")
    print(f"p50 ratio with/without: {ratio}   (reading the vectors: {read_s * 1000:.0f} ms)")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "questions": len(questions),
                "rows": rows,
                "p50_ratio": ratio,
                "vectors": len(words),
                "read_ms": round(read_s * 1000, 1),
            },
            indent=2,
        )
        + "\n"
    )
    ls.close()


if __name__ == "__main__":
    main()
