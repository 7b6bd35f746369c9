"""Cost of reading question words as their nearest catalog words: through the
embedder (``ranking.neighbours``, dense search) or, with ``--lexical``, through the
word vectors shipped for lexical search (``ranking.static_words``).

Loads the Spider catalog (166 databases) into an in-memory store (dense: with the
local embedder, embedded first; lexical: no embedder), then asks Spider dev
questions, each twice in alternation: with the question's words read (the
default) and without them (the schema channel's bridges from WordNet alone; in
dense mode the shipped vectors are off for the whole run too), so both run on
the same host at the same moment; which mode goes first alternates. In dense
mode a question's own vector is cached by the first of its two searches, so the
difference is the words' embedding and their bridges. With ``--joins``, the same
alternation on a lexical store measures the joins inferred from names between the
best tables (``corpora.entities.rank.inferred_joins``) instead. Prints a table;
writes ``benchmarks/results/word_neighbours.json`` (``word_neighbours_lexical.json``,
``inferred_joins.json``).

    PYTHONPATH=src python benchmarks/word_neighbours.py [--lexical|--joins [--size N]]
        [--questions 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))
RESULTS = Path(__file__).parent / "results"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _dense() -> tuple[Any, Callable[[bool], None], dict[str, float]]:
    """The store and the switch of the embedder's readings."""
    from layersearch import Layersearch
    from layersearch.corpora.entities.config import EntityRankingConfig
    from layersearch.corpora.entities.vector import VectorSearch

    ls = Layersearch(":memory:", embedder="local")
    ls.load(SPIDER / "tables.json")
    t = time.perf_counter()
    ls.embed()
    embed_s = time.perf_counter() - t
    with_words = VectorSearch.words

    def off(self, request, warnings, gen=None, reading=None):  # type: ignore[no-untyped-def]
        return None

    def switch(on: bool) -> None:
        # off: neither the embedder's readings nor the shipped vectors' (neighbours 0)
        VectorSearch.words = with_words if on else off  # type: ignore[method-assign]
        ls.entities.ranking = EntityRankingConfig(neighbours=3 if on else 0)

    return ls, switch, {"embed_s": round(embed_s, 1)}


def _lexical() -> tuple[Any, Callable[[bool], None], dict[str, float]]:
    """The store and the switch of the shipped vectors' readings."""
    from layersearch import Layersearch
    from layersearch.corpora.entities.config import EntityRankingConfig
    from layersearch.ranking.static_words import static_words

    ls = Layersearch(":memory:")
    ls.load(SPIDER / "tables.json")
    t = time.perf_counter()
    words = static_words()
    read_s = time.perf_counter() - t
    if words is None:
        raise SystemExit("no word vectors (LAYERSEARCH_WORD_VECTORS is empty or unreadable)")

    def switch(on: bool) -> None:
        # the shipped vectors' readings on or off (``neighbours`` 0 reads none)
        ls.entities.ranking = EntityRankingConfig(neighbours=3 if on else 0)

    return ls, switch, {"read_ms": round(read_s * 1000, 1), "vectors": len(words)}


def _joins(catalog: Any) -> tuple[Any, Callable[[bool], None], dict[str, float]]:
    """A lexical store (Spider, or the synthetic ``catalog``) and the switch of the
    joins inferred from names."""
    from layersearch import Layersearch
    from layersearch.corpora.entities.config import EntityRankingConfig

    ls = Layersearch(":memory:")
    if catalog is not None:
        ls.load_catalog(catalog)
    else:
        ls.load(SPIDER / "tables.json")

    def switch(on: bool) -> None:
        ls.entities.ranking = EntityRankingConfig(infer_joins=on)

    return ls, switch, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--lexical", action="store_true", help="the shipped word vectors")
    mode.add_argument("--joins", action="store_true", help="joins inferred from names")
    parser.add_argument(
        "--size", type=int, default=0, help="with --joins: a synthetic catalog of N entities"
    )
    parser.add_argument("--questions", type=int, default=200)
    args = parser.parse_args()

    if args.size and not args.joins:
        parser.error("--size needs --joins")
    catalog = None
    if args.size:
        from synthetic import generate_catalog, generate_queries

        catalog = generate_catalog(args.size, 0, seed=0)
        questions = generate_queries(catalog, args.questions, seed=1).questions
    else:
        questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
        questions = questions[: args.questions]
    ls, switch, extra = _joins(catalog) if args.joins else _lexical() if args.lexical else _dense()
    on = "with joins" if args.joins else "with words"
    times: dict[str, list[float]] = {on: [], "without": []}
    ls.search(question="warm up the search path")
    for i, q in enumerate(questions):
        modes = [on, "without"] if i % 2 == 0 else ["without", on]
        for mode in modes:
            switch(mode == on)
            t = time.perf_counter()
            ls.search(question=q, max_results=20)
            times[mode].append((time.perf_counter() - t) * 1000)
    switch(True)
    rows = {
        mode: {
            "p50_ms": round(statistics.median(xs), 3),
            "p95_ms": round(_pct(xs, 0.95), 3),
            "mean_ms": round(statistics.fmean(xs), 3),
        }
        for mode, xs in times.items()
    }
    ratio = round(rows[on]["p50_ms"] / rows["without"]["p50_ms"], 3)
    dense = not (args.lexical or args.joins)
    kind = "local embedder, dense search" if dense else "no embedder, lexical search"
    where = f"{args.size:,} synthetic entities" if args.size else "Spider catalog"
    print(f"{where}, {len(questions)} questions, {kind}")
    print(f"{'mode':<12} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for mode, r in rows.items():
        print(f"{mode:<12} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['mean_ms']:>8.2f}")
    print(f"p50 ratio with/without: {ratio}" + (f"   ({extra})" if extra else ""))
    name = "inferred_joins" if args.joins else "word_neighbours"
    name += f"_{args.size}" if args.size else ""
    out = RESULTS / (f"{name}_lexical.json" if args.lexical else f"{name}.json")
    RESULTS.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {"questions": len(questions), "rows": rows, "p50_ratio": ratio, **extra}, indent=2
        )
        + "\n"
    )
    ls.close()


if __name__ == "__main__":
    main()
