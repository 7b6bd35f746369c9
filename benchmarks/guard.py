"""Speed guard: search p50s against the last recorded ones, each as a ratio.

    PYTHONPATH=src python benchmarks/guard.py [--quick] [--record] [--questions 200]

Asks the same questions of a few stores in this process (built once under
``--workdir`` by ``ab.build_store``): the Spider catalog lexical and with the local
embedder (when installed), and 100,000 synthetic entities with 10,000 memories
(``--quick``: Spider lexical only). After every search it runs a fixed reference
workload that does not use layersearch (sorting strings, a dict walk, small numpy
sorts), so the host's speed at that moment is measured beside it: a workload's
figure is its search p50 over the reference's p50, in wall time and in process CPU
time (which other jobs on the host move less), and each figure is compared with the
one in ``benchmarks/results/guard.json`` (the last recorded run). A ratio above 1.2
(20% slower) is flagged and the exit status is 1. ``--record`` writes this run
as the new reference after comparing. Not a test: timings on a shared host are
noisy, and a flag says to look (rerun, or ``benchmarks/ab.py`` against the code
before), not that something is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ab import build_store  # noqa: E402

RESULTS = HERE / "results" / "guard.json"
#: A ratio to the recorded figure above this is flagged.
SLOWER = 1.2
#: name → (corpus, memories, embedder)
WORKLOADS: dict[str, tuple[str, int, str]] = {
    "spider_lexical": ("spider", 0, "none"),
    "spider_dense": ("spider", 0, "local"),
    "synthetic_100k_lexical": ("synthetic:100000", 10_000, "none"),
}


def reference_workload() -> Callable[[], None]:
    """A fixed unit of work of a search's kind (Python objects, dicts, short numpy
    calls), independent of layersearch's code: ~1 ms on the 2-core reference host."""
    import numpy as np

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghij") for _ in range(8)) for _ in range(3000)]
    values = np.random.default_rng(0).random(20_000)

    def unit() -> None:
        counts: dict[str, int] = {}
        for w in sorted(words):
            counts[w[:3]] = counts.get(w[:3], 0) + 1
        order = np.argsort(values, kind="stable")
        np.bincount(order[:5000] % 97, weights=values[:5000])

    return unit


def measure(
    name: str, questions: int, workdir: Path, reference: Callable[[], None]
) -> dict[str, Any]:
    corpus, memories, embedder = WORKLOADS[name]
    store, asked = build_store(corpus, memories, embedder, workdir)
    from layersearch import Layersearch

    ls = Layersearch(store, embedder=embedder, create=False)
    ls.warm()
    for q in asked[:20]:
        ls.search(question=q)
        reference()
    searches, units, search_cpu, unit_cpu = [], [], [], []
    for q in asked[20 : 20 + questions]:
        t0, c0 = time.perf_counter(), time.process_time()
        ls.search(question=q)
        t1, c1 = time.perf_counter(), time.process_time()
        reference()
        units.append(time.perf_counter() - t1)
        unit_cpu.append(time.process_time() - c1)
        searches.append(t1 - t0)
        search_cpu.append(c1 - c0)
    ls.close()
    p50, ref = statistics.median(searches) * 1000, statistics.median(units) * 1000
    cpu, ref_cpu = statistics.median(search_cpu) * 1000, statistics.median(unit_cpu) * 1000
    return {
        "search_p50_ms": p50,
        "reference_p50_ms": ref,
        "figure": p50 / ref,
        "search_cpu_p50_ms": cpu,
        "reference_cpu_p50_ms": ref_cpu,
        "cpu_figure": cpu / ref_cpu,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Spider lexical only.")
    ap.add_argument("--record", action="store_true", help="Write this run as the reference.")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/layersearch-ab"))
    ap.add_argument("--against", type=Path, default=RESULTS, help="The recorded run.")
    args = ap.parse_args()
    names = ["spider_lexical"] if args.quick else list(WORKLOADS)
    if find_spec("onnxruntime") is None:
        names = [n for n in names if WORKLOADS[n][2] == "none"]
    recorded: dict[str, Any] = {}
    if args.against.exists():
        recorded = json.loads(args.against.read_text()).get("workloads", {})
    reference = reference_workload()
    run: dict[str, Any] = {}
    flagged = []
    header = (
        f"{'workload':<24} {'p50 ms':>7} {'ref ms':>7} {'figure':>7} {'ratio':>6} "
        f"{'cpu fig':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        got = run[name] = measure(name, args.questions, args.workdir, reference)
        was = recorded.get(name, {})
        notes = []
        for key in ("figure", "cpu_figure"):
            before = was.get(key)
            ratio = None if before is None else got[key] / before
            got[f"{key}_ratio"] = ratio
            if ratio is not None and ratio > SLOWER:
                notes.append("wall" if key == "figure" else "cpu")
        if notes:
            flagged.append(f"{name} ({' and '.join(notes)})")

        def shown(x: float | None) -> str:
            return "-" if x is None else f"{x:.2f}"

        print(
            f"{name:<24} {got['search_p50_ms']:>7.2f} {got['reference_p50_ms']:>7.3f} "
            f"{got['figure']:>7.3f} {shown(got['figure_ratio']):>6} "
            f"{got['cpu_figure']:>8.3f} {shown(got['cpu_figure_ratio']):>6}"
            + (f"  SLOWER ({', '.join(notes)})" if notes else "")
        )
    print(
        "figure: search p50 / reference p50 in this run (wall; cpu: process CPU time); "
        f"ratio: figure / the recorded one ({args.against.name}); load {os.getloadavg()[0]:.1f}"
    )
    if args.record:
        out = {"workloads": run, "questions": args.questions, "load_average_1m": os.getloadavg()[0]}
        if args.against.exists() and args.quick:  # keep the workloads this run left out
            kept = json.loads(args.against.read_text()).get("workloads", {})
            out["workloads"] = {**kept, **run}
        args.against.write_text(json.dumps(out, indent=2) + "\n")
        print(f"recorded {args.against}")
    if flagged:
        print(f"slower than recorded by more than {SLOWER:.1f}x: {', '.join(flagged)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
