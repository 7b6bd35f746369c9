"""Vector search latency and recall, and local query-embedding latency.

    PYTHONPATH=src python benchmarks/vector_search.py                  # 100k and 1M
    PYTHONPATH=src python benchmarks/vector_search.py --sizes 100000   # quicker
    PYTHONPATH=src python benchmarks/vector_search.py --quick          # smoke run

For each size it builds ``VectorIndex(mode="exact")`` and ``VectorIndex(mode="ann")``
over synthetic unit vectors, times ``search(q, 10)`` for held-out queries, and
measures ANN recall@10 against the exact answers. The exact search is timed as it
runs by default (an int8 pass first from ``vector.SCREEN_MIN_ROWS`` rows, with
onnxruntime) and with the float32 product alone, in turn for each query
(``float32_p50_ms``; ``same_top_k``: queries whose results are identical). Data (``--data``):

- ``topical`` (default): topics, subtopics of ~50 documents, documents, so
  that, as in embedded corpora, a query has a handful of close neighbours and
  a long tail of weak ones;
- ``uniform``: isotropic random unit vectors, the worst case for HNSW (every
  neighbour is nearly as far as every other), reported for honesty.

Targets: exact 100k x 384 p50 <= 15 ms; ANN 1M x 384 p50 <= 2 ms with
recall@10 >= 0.98. Writes benchmarks/results/vector_search.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from layersearch.ranking import vector as vector_module
from layersearch.ranking.vector import VectorIndex

RESULTS = Path(__file__).resolve().parent / "results" / "vector_search.json"


def topical(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    topics = rng.standard_normal((1000, d)).astype(np.float32)
    subs = topics[rng.integers(0, len(topics), max(1, n // 50))]
    subs += 0.6 * rng.standard_normal(subs.shape).astype(np.float32)
    out = np.empty((n, d), dtype=np.float32)
    labels = rng.integers(0, len(subs), n)
    for start in range(0, n, 100_000):
        end = min(n, start + 100_000)
        noise = rng.standard_normal((end - start, d)).astype(np.float32)
        out[start:end] = subs[labels[start:end]] + 0.45 * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def uniform(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    out = rng.standard_normal((n, d), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def timed(index: VectorIndex, queries: np.ndarray, k: int) -> tuple[list[list[str]], np.ndarray]:
    index.search(queries[0], k)  # warm-up (and, for ANN, the lazy build is timed apart)
    results, times = [], []
    for q in queries:
        start = time.perf_counter()
        hits = index.search(q, k)
        times.append(time.perf_counter() - start)
        results.append([i for i, _ in hits])
    return results, np.asarray(times) * 1000


def timed_one(
    index: VectorIndex, q: np.ndarray, k: int, *, screen: bool
) -> tuple[list[tuple[str, float]], float]:
    """One exact search, with the int8 pass or the float32 product alone; ms."""
    kept = vector_module.SCREEN_MIN_ROWS
    vector_module.SCREEN_MIN_ROWS = kept if screen else 1 << 62
    try:
        start = time.perf_counter()
        hits = index.search(q, k)
        return hits, (time.perf_counter() - start) * 1000
    finally:
        vector_module.SCREEN_MIN_ROWS = kept


def bench_size(n: int, args: argparse.Namespace) -> dict[str, object]:
    rng = np.random.default_rng(42)
    make = topical if args.data == "topical" else uniform
    data = make(rng, n + args.queries, args.dims)
    matrix, queries = data[:n], data[n:]
    ids = [f"doc{i:08d}" for i in range(n)]
    row: dict[str, object] = {"size": n, "dims": args.dims, "data": args.data, "k": args.k}

    exact = VectorIndex(ids, matrix, mode="exact")
    start = time.perf_counter()
    exact.prepare_screen()  # made now: its timing is apart
    screened = exact._screen is not None
    row["int8_copy_s"] = round(time.perf_counter() - start, 2) if screened else None
    # the float32 product over every row, asked in turn with the default (the int8 pass
    # first, from vector.SCREEN_MIN_ROWS rows with onnxruntime)
    plain_ms, exact_ms, truth = [], [], []
    for q in queries:
        found, ms = timed_one(exact, q, args.k, screen=False)
        plain_ms.append(ms)
        got, ms = timed_one(exact, q, args.k, screen=True)
        exact_ms.append(ms)
        truth.append([i for i, _ in found])
        row["same_top_k"] = row.get("same_top_k", 0) + (got == found)  # type: ignore[operator]
    row["exact_p50_ms"] = round(float(np.percentile(exact_ms, 50)), 3)
    row["exact_p95_ms"] = round(float(np.percentile(exact_ms, 95)), 3)
    row["float32_p50_ms"] = round(float(np.percentile(plain_ms, 50)), 3)

    ann = VectorIndex(ids, matrix, mode="ann")
    if not ann.uses_ann:
        row["ann"] = "usearch not installed"
        return row
    start = time.perf_counter()
    ann._ann_index()  # build now so that search timings exclude it
    row["ann_build_s"] = round(time.perf_counter() - start, 1)
    # One build, several search widths: the rows differ only in ef.
    rows = []
    for ef in args.ef:
        ann.expansion_search = ef
        found, ann_ms = timed(ann, queries, args.k)
        hits = sum(len(set(a) & set(t)) for a, t in zip(found, truth, strict=True))
        rows.append(
            {
                "ef": ef,
                "ann_p50_ms": round(float(np.percentile(ann_ms, 50)), 3),
                "ann_p95_ms": round(float(np.percentile(ann_ms, 95)), 3),
                "ann_recall_at_k": round(hits / (args.k * len(queries)), 4),
            }
        )
    row["ann_by_ef"] = rows
    row["ann_params"] = {
        "connectivity": ann.connectivity,
        "expansion_add": ann.expansion_add,
        "expansion_search_default": VectorIndex.__init__.__kwdefaults__["expansion_search"],
        "dtype": ann.ann_dtype,
    }
    return row


def bench_local_model(n_queries: int) -> dict[str, object]:
    try:
        from layersearch.embed import LocalEmbedder

        embedder = LocalEmbedder()
        start = time.perf_counter()
        embedder.embed_query("warm up")
        load_s = time.perf_counter() - start
    except Exception as exc:  # report, don't fail the other numbers
        return {"local_model": f"unavailable: {exc}"}
    texts = [f"monthly revenue by region for product line {i}" for i in range(n_queries)]
    times = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed_query(text)
        times.append((time.perf_counter() - start) * 1000)
    out: dict[str, object] = {
        "local_model": embedder.fingerprint.describe(),
        "local_load_s": round(load_s, 1),
        "local_query_p50_ms": round(float(np.percentile(times, 50)), 2),
        "local_query_p95_ms": round(float(np.percentile(times, 95)), 2),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated corpus sizes")
    parser.add_argument("--quick", action="store_true", help="20k vectors, 50 queries")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--ef", default="128,256", help="comma-separated HNSW expansion_search values to time"
    )
    parser.add_argument("--data", choices=["topical", "uniform"], default="topical")
    parser.add_argument("--no-local", action="store_true", help="skip the local model timing")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.ef = [int(v) for v in args.ef.split(",") if v.strip()]
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.quick:
        args.queries = 50

    rows = []
    for n in sizes:
        print(f"size {n:,} ...", file=sys.stderr, flush=True)
        rows.append(bench_size(n, args))
    local = {} if args.no_local else bench_local_model(20 if args.quick else 100)

    header = [
        "size",
        "exact_p50_ms",
        "float32_p50_ms",
        "same_top_k",
        "ann_build_s",
        "ef",
        "ann_p50_ms",
        "ann_p95_ms",
        "ann_recall_at_k",
    ]
    print(" | ".join(f"{h:>15}" for h in header))
    for row in rows:
        for sub in row.get("ann_by_ef") or [{}]:  # type: ignore[union-attr]
            cells = {**row, **sub}
            print(" | ".join(f"{cells.get(h, '-')!s:>15}" for h in header))
    for key, value in local.items():
        print(f"{key}: {value}")

    report = {
        "command": "PYTHONPATH=src python benchmarks/vector_search.py "
        + " ".join(argv or sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "vector_search": rows,
        "local_model": local,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
