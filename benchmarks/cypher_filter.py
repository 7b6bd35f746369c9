"""Time Cypher filters (parse + evaluate) on a synthetic 100k-entity / 10k-memory graph.

    PYTHONPATH=src python benchmarks/cypher_filter.py [--entities 100000] [--memories 10000]

Prints a table and writes benchmarks/results/cypher_filter.json. The parse cache is
cleared before every run so each timing includes parsing. Target: the two-hop
filter at p50 <= 20 ms.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from layersearch.graph.cypher import parse, run_filter
from layersearch.graph.graph import EntityGraph

RESULTS = Path(__file__).resolve().parent / "results" / "cypher_filter.json"

FILTERS = {
    "two_hop": (
        "MATCH (m:Memory)-[:MENTIONS]->(c:ModelColumn)<-[:CONTAINS]-(t:Model) "
        "WHERE t.name = 'orders' RETURN m.id AS id"
    ),
    "label_scan_where": "MATCH (c:ModelColumn) WHERE c.data_type = 'boolean' RETURN c.id AS id",
    "pattern_predicate": (
        "MATCH (t:Model) WHERE t.datasource = 'ds3' AND (t)<-[:MENTIONS]-(:Memory) RETURN t.id AS id"
    ),
    "var_length_joins": "MATCH (t:Model {name: 'orders'})-[:JOINS*1..3]-(u) RETURN u.id AS id",
    "memory_text": "MATCH (m:Memory) WHERE m.learning CONTAINS 'refund' RETURN m.id AS id",
}


def synthetic_graph(entities: int, memories: int, seed: int = 7) -> EntityGraph:
    """Datasources of 50 models of 40 leaves each, a few joins per model, and memories
    tagging 1-4 random entities. The name 'orders' recurs once per datasource."""
    rng = random.Random(seed)
    g = EntityGraph()
    leaf_ids: list[str] = []
    model_ids: list[str] = []
    names = ["orders", "customers", "products", "payments", "refunds", "stores", "sessions"]
    count = 0
    ds_index = 0
    while count < entities:
        ds = f"ds{ds_index}"
        g.add_node(ds, "Datasource", {"name": ds})
        count += 1
        ds_models = []
        for m in range(50):
            if count >= entities:
                break
            name = names[m] if m < len(names) else f"model_{m}"
            mid = f"{ds}.{name}"
            g.add_node(mid, "Model", {"name": name, "datasource": ds, "model": name})
            g.add_edge(ds, mid, "CONTAINS")
            model_ids.append(mid)
            ds_models.append(mid)
            count += 1
            for leaf in range(40):
                if count >= entities:
                    break
                label = "ModelColumn" if leaf < 32 else "Measure" if leaf < 39 else "Aggregation"
                lid = f"{mid}.f{leaf}"
                g.add_node(
                    lid,
                    label,
                    {
                        "name": f"f{leaf}",
                        "datasource": ds,
                        "model": name,
                        "data_type": rng.choice(["text", "integer", "boolean", "numeric"]),
                    },
                )
                g.add_edge(mid, lid, "CONTAINS")
                leaf_ids.append(lid)
                count += 1
        for mid in ds_models:
            for other in rng.sample(ds_models, min(2, len(ds_models))):
                if other != mid:
                    g.add_edge(mid, other, "JOINS", {"cardinality": "many_to_one"})
        ds_index += 1
    words = ["revenue", "refund", "churn", "tax", "margin", "orders", "status", "region"]
    targets = leaf_ids + model_ids
    for i in range(1, memories + 1):
        mid = f"memory:{i}"
        g.add_node(mid, "Memory", {"learning": " ".join(rng.sample(words, 3))})
        for target in rng.sample(targets, rng.randint(1, 4)):
            g.add_edge(mid, target, "MENTIONS")
    return g


def time_filter(graph: EntityGraph, text: str, runs: int) -> dict[str, float]:
    samples = []
    result = []
    for _ in range(runs):
        parse.cache_clear()
        start = time.perf_counter()
        result = run_filter(graph, text)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
        "max_ms": round(samples[-1], 3),
        "ids": len(result),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    graph = synthetic_graph(args.entities, args.memories)
    build_s = time.perf_counter() - start
    rows = {name: time_filter(graph, text, args.runs) for name, text in FILTERS.items()}
    print(
        f"graph: {len(graph):,} nodes, {graph.nx.number_of_edges():,} relationships, built in {build_s:.1f} s"
    )
    print(f"{'filter':<20} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'ids':>7}")
    for name, row in rows.items():
        print(
            f"{name:<20} {row['p50_ms']:>9.2f} {row['p95_ms']:>9.2f} {row['max_ms']:>9.2f} {row['ids']:>7}"
        )
    target_ok = rows["two_hop"]["p50_ms"] <= 20
    print(f"target two_hop p50 <= 20 ms: {'met' if target_ok else 'MISSED'}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "entities": args.entities,
                "memories": args.memories,
                "nodes": len(graph),
                "relationships": graph.nx.number_of_edges(),
                "runs": args.runs,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "filters": {name: {"query": FILTERS[name], **rows[name]} for name in FILTERS},
                "target": {"two_hop_p50_ms_max": 20, "met": target_ok},
            },
            indent=2,
        )
        + "\n"
    )
    return 0 if target_ok else 1


if __name__ == "__main__":
    sys.exit(main())
