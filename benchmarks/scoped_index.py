"""A datasource's schema index, cut from the catalog's or built from its entities.

    PYTHONPATH=src python benchmarks/scoped_index.py [--store FILE] [--groups 11]
        [--out FILE]

A search confined to one datasource (each part the query plan searches) reads that
datasource's own schema index, made on its first use. This times both ways of making
it, one right after the other, for datasources of every size in a store (default: the
warehouse catalog ``warehouse_bench.py --scale 1`` leaves in
``/tmp/layersearch-warehouse``): ``coverage_cut.within`` (what a search does) and
``coverage_of`` over the datasource's entities (how it was made before). Both give the
same index (``tests/test_coverage_within.py``). Prints a table and writes JSON
(``--out``, default ``benchmarks/results/scoped_index.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from itertools import chain
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "scoped_index.json"
WAREHOUSE = Path("/tmp/layersearch-warehouse/scale_1.0/store.duckdb")


def measure(store: Path, n_groups: int) -> list[dict[str, Any]]:
    import numpy as np

    from layersearch import Layersearch
    from layersearch.corpora.entities.coverage import coverage_of
    from layersearch.ranking.coverage_cut import inverted, within

    out = []
    with Layersearch(store, embedder="none", create=False) as ls:
        corpus = ls.corpus()
        wide = corpus.coverage()
        inverted(wide, "vocab")  # once per index, whatever the datasource
        sizes = np.bincount(wide.group_idx[wide.group_idx >= 0])
        order = np.argsort(-sizes)
        step = max(1, len(order) // n_groups)
        for k in order[::step][:n_groups].tolist():
            group = wide.ids[int(wide.group_nodes[k])]
            t = time.perf_counter()
            within(wide, group)
            cut = time.perf_counter() - t
            t = time.perf_counter()
            ents = {i: corpus.entities[i] for i in corpus.entities.visible_in_scope(group)}
            edges = chain.from_iterable(corpus.edges_out.get(e, []) for e in ents)
            coverage_of(ents, edges, bridges_from=wide, config=corpus.index_config)
            built = time.perf_counter() - t
            out.append(
                {"datasource": group, "nodes": int(sizes[k]), "cut_ms": cut * 1e3,
                 "build_ms": built * 1e3}
            )  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=WAREHOUSE)
    ap.add_argument("--groups", type=int, default=11)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if not args.store.is_file():
        raise SystemExit(
            f"{args.store}: no such store; make one with "
            "`PYTHONPATH=src python benchmarks/warehouse_bench.py --scale 1`"
        )
    rows = measure(args.store, args.groups)
    print(f"{'datasource':22s} {'nodes':>7s} {'cut ms':>8s} {'build ms':>9s}")
    for r in rows:
        print(f"{r['datasource']:22s} {r['nodes']:7,d} {r['cut_ms']:8.1f} {r['build_ms']:9.1f}")
    doc = {"store": str(args.store), "rows": rows, "load_average_1m": os.getloadavg()[0]}
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
