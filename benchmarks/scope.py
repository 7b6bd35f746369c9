"""``scope=all`` latency: one lexical search across every corpus of a synthetic store.

    PYTHONPATH=src python benchmarks/scope.py [--scale 1.0] [--runs 60] [--out PATH]

At ``--scale 1`` the store holds 100k entities + 10k memories (benchmarks/synthetic.py),
100k conversation messages (benchmarks/conversations.py's generator) and a vault of
10k notes of 5 sections, ~50k chunks (benchmarks/vault_search.py's generator); no
embedder, so every corpus ranks by its lexical channels. ``--scale`` multiplies every
size (a smoke test runs 0.01). Times warm searches of ``scope=all`` (and each source
alone, for reference), then ``scope=all`` with and without reading its hits' shares of
the question (alternating), prints a table and writes benchmarks/results/scope.json.

Target (issue #24): p50 of ``scope=all`` <= 15 ms at scale 1.
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT / "src"), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

RESULTS = HERE / "results" / "scope.json"
TARGET_P50_MS = 15.0
SIZES = {"entities": 100_000, "memories": 10_000, "messages": 100_000, "notes": 10_000}
QUERIES = [
    "churn by region",
    "weekly active customers",
    "revenue dashboard definition",
    "subscription plan cost",
    "how do we compute retention",
    "orders total amount",
]
SCOPES: list[Any] = ["all", "semantic", "conversations", "vault"]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def build(ls: Any, tmp: Path, scale: float) -> dict[str, Any]:
    import synthetic
    import vault_search as vault_bench

    import conversations as conv_bench

    sizes = {k: max(1, int(v * scale)) for k, v in SIZES.items()}
    sizes["messages"] = max(20, sizes["messages"])
    timings: dict[str, float] = {}
    t = time.perf_counter()
    ls.load_catalog(synthetic.generate_catalog(sizes["entities"], sizes["memories"], seed=0))
    ls.corpus()
    timings["load_catalog_s"] = time.perf_counter() - t
    t = time.perf_counter()
    convs, _ = conv_bench.synth(sizes["messages"])
    ls.conversations.import_conversations(convs)
    ls.conversations.snapshot()
    timings["conversations_import_s"] = time.perf_counter() - t
    t = time.perf_counter()
    root = tmp / "vault"
    vault_bench.write_vault(root, sizes["notes"])
    report = ls.vault.index(root)
    timings["vault_index_s"] = time.perf_counter() - t
    return {
        "entities": len(ls.corpus().entities),
        "memories": len(ls.corpus().memories),
        "messages": len(ls.conversations.snapshot().messages),
        "notes": report.notes,
        "chunks": report.chunks_written,
        "build": {k: round(v, 2) for k, v in timings.items()},
    }


def time_scope(ls: Any, scope: Any, runs: int) -> dict[str, Any]:
    for q in QUERIES:  # warm: snapshots, full-text readers
        ls.search(question=q, scope=scope)
    samples = []
    sources: set[str] = set()
    for i in range(runs):
        t = time.perf_counter()
        resp = ls.search(question=QUERIES[i % len(QUERIES)], scope=scope)
        samples.append((time.perf_counter() - t) * 1000)
        sources.update(h.source for h in resp.results if h.source)
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(_pct(samples, 0.95), 2),
        "n": runs,
        "sources": sorted(sources),
    }


def time_shares(ls: Any, runs: int) -> dict[str, Any]:
    """``scope=all`` with and without reading the hits' shares of the question (the
    evidence its fusion splits the places by), the two alternating search by search so
    both see the same host load: what the evidence costs."""
    from layersearch.corpora import scope as scope_module

    real = scope_module.ScopeService.shares
    samples: dict[str, list[float]] = {"with shares": [], "without shares": []}
    try:
        for i in range(2 * runs):
            mode = "with shares" if i % 2 == 0 else "without shares"
            scope_module.ScopeService.shares = (  # type: ignore[method-assign]
                real
                if mode == "with shares"
                else (lambda _self, _ranked, _req, _cap, _memo=None: {})
            )
            t = time.perf_counter()
            ls.search(question=QUERIES[(i // 2) % len(QUERIES)], scope="all")
            samples[mode].append((time.perf_counter() - t) * 1000)
    finally:
        scope_module.ScopeService.shares = real  # type: ignore[method-assign]
    return {
        m: {"p50_ms": round(statistics.median(v), 2), "p95_ms": round(_pct(v, 0.95), 2)}
        for m, v in samples.items()
    }


def main(argv: list[str] | None = None) -> int:
    from layersearch import Layersearch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every corpus size")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    if not 0 < args.scale <= 10:
        ap.error("--scale must be in (0, 10]")
    with (
        tempfile.TemporaryDirectory(prefix="scope-bench-") as tmp,
        Layersearch(Path(tmp) / "s.duckdb") as ls,
    ):
        store = build(ls, Path(tmp), args.scale)
        latency = {str(s): time_scope(ls, s, args.runs) for s in SCOPES}
        shares = time_shares(ls, args.runs)
    result = {
        "command": "PYTHONPATH=src python benchmarks/scope.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "scale": args.scale,
        "store": store,
        "target": {"scope=all p50_ms": TARGET_P50_MS, "at scale": 1.0},
        "latency": latency,
        "scope=all evidence": shares,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"store: {store}")
    print("| scope | p50 ms | p95 ms | sources in hits |")
    print("|---|---|---|---|")
    for s, row in latency.items():
        print(f"| {s} | {row['p50_ms']} | {row['p95_ms']} | {', '.join(row['sources'])} |")
    for m, row in shares.items():
        print(f"scope=all {m} (alternating): p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms")
    print(f"target: scope=all p50 <= {TARGET_P50_MS} ms at scale 1; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
