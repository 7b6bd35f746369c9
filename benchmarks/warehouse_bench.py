"""Load, embed and search a warehouse-shaped catalog (``warehouse.py``).

    PYTHONPATH=src python benchmarks/warehouse_bench.py [--scale 1.0] [--workers N]
        [--store DIR] [--kill-after S] [--questions 100] [--out FILE]

1. Generates the catalog at ``--scale`` (1.0: 162 databases, 8,255 tables, 532,000
   columns) and loads it into a store under ``--store`` (kept: a second run reuses it).
2. Embeds it with the local model, as ``layersearch embed`` does, in a child process
   (progress on stderr). With ``--kill-after S`` the child is killed after S seconds
   and a second one resumes: the report says how many vectors the first kept and the
   second still had to embed.
3. Asks ``--questions`` questions in words (``warehouse_questions``) with the local
   embedder (the default install), p50/p95, the vector channel's own time apart.

``--exact`` searches the vectors exactly, as the default install does (usearch, the
``[ann]`` extra, turns search above 200,000 vectors approximate, after building its
graph in the first search, or reading the one a run before kept beside the store:
the report's ``warm_s`` is either). ``--random-vectors`` skips step 2's model for the entities: every entity gets a random
unit vector under the local model's fingerprint (the catalog's words are embedded for
real), so that a search at full scale can be timed without the embedding's hour; the
vector search costs the same whatever the vectors hold, the rankings mean nothing.

Prints a table and writes JSON (``--out``, default
``benchmarks/results/warehouse.json``). Times at a scale below 1 are extrapolated
linearly in the report (``*_at_scale_1_s``), which embedding and loading follow.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from warehouse import generate_warehouse, warehouse_questions  # noqa: E402

RESULTS = HERE / "results" / "warehouse.json"


def embed_child(store: Path, workers: int | None) -> None:
    """The child: ``Layersearch.embed`` with the local model, progress on stderr."""
    from layersearch import Layersearch

    started = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 5 or done == total:
            last[0] = now
            rate = done / max(now - started, 1e-9)
            print(f"embedded {done:,}/{total:,} ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    with Layersearch(store, embedder="local", create=False) as ls:
        embedder = ls.embedder
        if workers is not None and embedder is not None:
            type(embedder).bulk_workers = property(lambda self: workers)  # type: ignore[method-assign]
        reports = ls.embed(progress=progress)
    print(json.dumps([r.model_dump() for r in reports]), flush=True)


def run_embed(store: Path, workers: int | None, kill_after: float | None) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent / "src")
    args = [sys.executable, str(Path(__file__).resolve()), "--embed-child", str(store)]
    if workers is not None:
        args += ["--workers", str(workers)]
    t0, c0 = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=kill_after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        return {"killed_after_s": kill_after, "wall_s": time.perf_counter() - t0}
    if proc.returncode != 0:
        raise SystemExit(f"embedding failed (exit {proc.returncode})")
    reports = json.loads(out.strip().splitlines()[-1])
    return {
        "wall_s": time.perf_counter() - t0,
        "cpu_s": _children_cpu() - c0,
        "reports": [
            {k: r[k] for k in ("corpus", "documents", "embedded", "unchanged")} for r in reports
        ],
    }


def random_vectors(store: Path) -> dict[str, Any]:
    """Random unit vectors for every entity under the local model's fingerprint, and the
    catalog's words embedded by the model (see ``--random-vectors``)."""
    import numpy as np

    from layersearch import Layersearch
    from layersearch.corpora.dense import ENTITY_CORPUS, content_hash, entity_docs
    from layersearch.corpora.entities.neighbours import WORDS_CORPUS, word_docs

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    with Layersearch(store, embedder="local", create=False) as ls:
        entities = list(ls.corpus().entities.values())
        docs = entity_docs(entities)
        key = ls.dense(ENTITY_CORPUS).fingerprint.key()
        have = ls.store.vector_hashes(ENTITY_CORPUS, key)
        docs = [d for d in docs if have.get(d.id) != content_hash(d.text)]
        for i in range(0, len(docs), 50_000):
            part = docs[i : i + 50_000]
            m = rng.standard_normal((len(part), 384), dtype=np.float32)
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            ls.store.upsert_vectors(
                ENTITY_CORPUS, key, [d.id for d in part], [content_hash(d.text) for d in part], m
            )
        words = ls.dense(WORDS_CORPUS).embed(word_docs(entities))
    return {"wall_s": time.perf_counter() - t0, "entities": len(docs), "words": words.embedded}


def _children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def search(store: Path, questions: list[str], exact: bool) -> dict[str, Any]:
    import layersearch.ranking.vector as vector_mod
    from layersearch import Layersearch
    from layersearch.corpora.dense import DenseCorpus

    if exact:  # as the default install searches: without the [ann] extra's usearch
        vector_mod.ann_available = lambda: False  # type: ignore[assignment]

    vector: list[float] = []
    original = DenseCorpus.search

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            vector.append(time.perf_counter() - t)

    with Layersearch(store, embedder="local", create=False) as ls:
        t = time.perf_counter()
        ls.warm()
        warm_s = time.perf_counter() - t
        for q in questions[:10]:
            ls.search(question=q)
        DenseCorpus.search = timed  # type: ignore[method-assign]
        times = []
        per_search = []
        try:
            for q in questions[10:]:
                vector.clear()
                t = time.perf_counter()
                ls.search(question=q)
                times.append(time.perf_counter() - t)
                per_search.append(sum(vector))
        finally:
            DenseCorpus.search = original  # type: ignore[method-assign]
    return {
        "warm_s": warm_s,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": sorted(times)[int(0.95 * len(times))] * 1000,
        "vector_search_p50_ms": statistics.median(per_search) * 1000,
        "approximate": vector_mod.ann_available(),
        "questions": len(times),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embed-child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workers", type=int, help="Embedding threads (default: the model's).")
    ap.add_argument("--store", type=Path, default=Path("/tmp/layersearch-warehouse"))
    ap.add_argument("--kill-after", type=float, help="Kill the first embedding after S s.")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--random-vectors", action="store_true", help="See the module doc.")
    ap.add_argument(
        "--exact",
        action="store_true",
        help="Exact vector search even with usearch installed (as the default install).",
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.embed_child is not None:
        embed_child(args.embed_child, args.workers)
        return 0
    from layersearch import Layersearch

    out: dict[str, Any] = {"scale": args.scale}
    base = args.store / f"scale_{args.scale}"
    store = base / "store.duckdb"
    t = time.perf_counter()
    catalog = generate_warehouse(args.scale)
    out["generate_s"] = time.perf_counter() - t
    out["catalog"] = {
        "databases": len(catalog.datasources),
        "tables": len(catalog.models),
        "columns": sum(len(m.columns) for m in catalog.models),
    }
    if not (base / "loaded").exists():
        t = time.perf_counter()
        with Layersearch(store, embedder="none") as ls:
            ls.load_catalog(catalog)
        out["load_s"] = time.perf_counter() - t
        (base / "loaded").write_text(f"{out['load_s']:.1f}\n")
    else:
        out["load_s"] = float((base / "loaded").read_text())
    del catalog
    print(f"loaded {out['catalog']} in {out['load_s']:.1f} s", file=sys.stderr)
    runs = []
    if args.random_vectors:
        out["random_vectors"] = random_vectors(store)
        out["embed_s"] = 0.0
    else:
        if args.kill_after is not None:
            runs.append(run_embed(store, args.workers, args.kill_after))
        runs.append(run_embed(store, args.workers, None))
        out["embed_s"] = sum(r["wall_s"] for r in runs)
    out["embed_runs"] = runs
    out["search"] = search(store, warehouse_questions(args.questions + 10), args.exact)
    if args.scale < 1 and not args.random_vectors:
        out["load_at_scale_1_s"] = out["load_s"] / args.scale
        out["embed_at_scale_1_s"] = out["embed_s"] / args.scale
    out["load_average_1m"] = os.getloadavg()[0]
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    s = out["search"]
    print(f"scale {args.scale}: {out['catalog']}")
    print(f"load {out['load_s']:.1f} s, embed {out['embed_s']:.1f} s", end="")
    if "random_vectors" in out:
        print(f" (random vectors: {json.dumps(out['random_vectors'])})")
    elif args.scale < 1:
        print(
            f" (at scale 1, linearly: load {out['load_at_scale_1_s']:.0f} s, "
            f"embed {out['embed_at_scale_1_s']:.0f} s)"
        )
    else:
        print()
    for r in runs:
        print(f"  embed run: {json.dumps(r)}")
    print(
        f"search p50 {s['p50_ms']:.1f} ms, p95 {s['p95_ms']:.1f} ms, vector search p50 "
        f"{s['vector_search_p50_ms']:.1f} ms ({'HNSW' if s['approximate'] else 'exact'}), "
        f"first open + warm {s['warm_s']:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
