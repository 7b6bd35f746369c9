"""Where a new process's `layersearch search` spends its wall time, phase by phase.

Each run is a fresh interpreter that imports the heavy libraries one after the other
(numpy, duckdb, pydantic, our types, the API, the CLI: each phase is what its import
adds to those before it), then runs `layersearch search "monthly revenue by store"` on
the bundled sample with the store's open and the search timed; `exit` is the output
and the interpreter's teardown up to the last atexit hook. Medians over the runs, with
the interpreter's own start (`python -c pass`) apart.

    PYTHONPATH=src python benchmarks/cli_phases.py [--runs 9] [--embedder none] \
        [--src OTHER/src] [--out benchmarks/results/cli_phases.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cli_phases.json"
QUESTION = "monthly revenue by store"

#: the timed process: phases marked as they end, printed as JSON on stderr at exit
PROBE = """
import time, sys, atexit, json
T0 = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, time.perf_counter() - T0))
def show():
    mark("output and exit")
    sys.stderr.write("PHASES " + json.dumps(marks) + "\\n")
atexit.register(show)
import numpy; mark("import numpy")
import duckdb; mark("import duckdb")
import pydantic; mark("import pydantic")
import layersearch.types; mark("import layersearch.types")
import layersearch.api as api; mark("import layersearch.api")
import layersearch.cli.app as app; mark("import the CLI")
init, search = api.Layersearch.__init__, api.Layersearch.search
def timed_init(self, *a, **k):
    mark("settings, embedder"); init(self, *a, **k); mark("open the store")
def timed_search(self, *a, **k):
    mark("checks before the search"); out = search(self, *a, **k); mark("search and plan")
    return out
api.Layersearch.__init__ = timed_init
api.Layersearch.search = timed_search
sys.argv = ["layersearch", "--store", STORE, "--embedder", EMBEDDER, "search", QUESTION]
try:
    app.main()
except SystemExit:
    pass
"""


def run_once(src: Path, store: Path, embedder: str) -> list[tuple[str, float]]:
    code = (
        PROBE.replace("STORE", repr(str(store)))
        .replace("EMBEDDER", repr(embedder))
        .replace("QUESTION", repr(QUESTION))
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("PHASES "))
    marks = json.loads(line[len("PHASES ") :])
    out, before = [], 0.0
    for name, at in marks:
        out.append((name, at - before))
        before = at
    return out


def interpreter_start(runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="The tree to measure.")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    sys.path.insert(0, str(args.src))
    import compileall

    compileall.compile_dir(str(args.src), quiet=1)  # (as an installed package has it)
    from layersearch import Layersearch

    with tempfile.TemporaryDirectory(prefix="ls-cli-phases-") as tmp:
        store = Path(tmp) / "store.duckdb"
        with Layersearch(store, embedder=args.embedder) as ls:
            ls.load(ROOT / "models")
            if args.embedder != "none":
                ls.embed()
        runs = [run_once(args.src, store, args.embedder) for _ in range(args.runs + 1)][1:]
    names = [name for name, _ in runs[0]]
    phases = {n: statistics.median(dict(r)[n] for r in runs) for n in names}
    totals = [sum(t for _, t in r) for r in runs]
    start = interpreter_start(args.runs)
    print(f"{'phase':<28} {'ms':>8}")
    print("-" * 37)
    print(f"{'interpreter start':<28} {1000 * start:8.1f}")
    for name, seconds in phases.items():
        print(f"{name:<28} {1000 * seconds:8.1f}")
    print(f"{'total after the start':<28} {1000 * statistics.median(totals):8.1f}")
    load = os.getloadavg()[0]
    print(
        f"({args.runs} runs after one warm-up, medians; embedder {args.embedder}; load {load:.1f})"
    )
    result = {
        "command": "python " + " ".join(sys.argv),
        "runs": args.runs,
        "embedder": args.embedder,
        "interpreter_start_s": round(start, 4),
        "phases_s": {n: round(v, 4) for n, v in phases.items()},
        "total_after_start_s": round(statistics.median(totals), 4),
        "load_average_1m": round(load, 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
