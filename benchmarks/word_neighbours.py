"""Cost of reading question words through the embedder (``ranking.neighbours``).

Loads the Spider catalog (166 databases) into an in-memory store with the local
embedder, embeds it, then asks Spider dev questions with the dense channel, each
question twice in alternation: with the question words read through the embedder
(the default) and without them (the schema channel's bridges from WordNet alone; the
shipped word vectors of lexical search are off too), so both run on the same host at
the same moment. A question's own vector is
cached by the first of its two searches, so both searches of a pair reuse it and
the difference is the words' embedding and their bridges; which mode goes first
alternates. Prints a table; writes ``benchmarks/results/word_neighbours.json``.

    PYTHONPATH=src python benchmarks/word_neighbours.py [--questions 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))
OUT = Path(__file__).parent / "results" / "word_neighbours.json"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    args = parser.parse_args()

    import layersearch.corpora.entities.search as entity_search
    from layersearch import Layersearch
    from layersearch.corpora.entities.vector import VectorSearch

    # "without" is WordNet's bridges alone: not the shipped word vectors either
    entity_search.static_bridges = lambda index, question, names: ()

    questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
    questions = questions[: args.questions]
    ls = Layersearch(":memory:", embedder="local")
    ls.load(SPIDER / "tables.json")
    t = time.perf_counter()
    ls.embed()
    embed_s = time.perf_counter() - t
    with_words = VectorSearch.words

    def off(self, request, warnings):  # type: ignore[no-untyped-def]
        return None

    times: dict[str, list[float]] = {"with words": [], "without": []}
    ls.search(question="warm up the search path")
    for i, q in enumerate(questions):
        modes = ["with words", "without"] if i % 2 == 0 else ["without", "with words"]
        for mode in modes:
            VectorSearch.words = with_words if mode == "with words" else off  # type: ignore[method-assign]
            t = time.perf_counter()
            ls.search(question=q, max_results=20)
            times[mode].append((time.perf_counter() - t) * 1000)
    VectorSearch.words = with_words  # type: ignore[method-assign]
    rows = {
        mode: {
            "p50_ms": round(statistics.median(xs), 3),
            "p95_ms": round(_pct(xs, 0.95), 3),
            "mean_ms": round(statistics.fmean(xs), 3),
        }
        for mode, xs in times.items()
    }
    ratio = round(rows["with words"]["p50_ms"] / rows["without"]["p50_ms"], 3)
    print(f"Spider catalog, {len(questions)} dev questions, local embedder, dense search")
    print(f"{'mode':<12} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for mode, r in rows.items():
        print(f"{mode:<12} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['mean_ms']:>8.2f}")
    print(f"p50 ratio with/without: {ratio}   (embed of the catalog: {embed_s:.1f} s)")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        json.dumps(
            {"questions": len(questions), "rows": rows, "p50_ratio": ratio, "embed_s": embed_s},
            indent=2,
        )
        + "\n"
    )
    ls.close()


if __name__ == "__main__":
    main()
