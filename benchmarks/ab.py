"""Two source trees answer the same searches in alternation, in one run.

    PYTHONPATH=src python benchmarks/ab.py --old /tmp/base/src [--new src] \
        [--corpus spider|synthetic:100000|warehouse:0.1] [--memories 10000] \
        [--embedder none|local] [--exact] [--random-vectors] [--questions 300] \
        [--rounds 2] [--out FILE]

A speed change is judged by the ratio of its p50 to the code before it, measured on
the same host at the same moments (and by the process CPU time a search takes, all its
threads, which the host's other work moves less than wall time): each tree runs in a worker process of its own (its
``src`` first on ``PYTHONPATH``) over its own copy of one store, and every question is
asked of both, one right after the other (which goes first alternates). Each worker
times ``Layersearch.search`` in process and returns a digest of the response (ids,
scores, kinds, warnings): a speed change must not change a ranking, and any question
whose digests differ is reported (exit status 1). ``--also NAME=SRC`` adds further
trees to the same run (e.g. the code before and after a change, both against a base);
the order in which the trees answer a question rotates.

Get the code before a change without touching the checkout, e.g.
``mkdir -p /tmp/base && git archive HEAD~1 src | tar -x -C /tmp/base``.

Corpora: ``spider`` is the Spider catalog (166 databases, ``SPIDER_DIR``) asked its
dev questions; ``synthetic:N`` is ``synthetic.generate_catalog(N, --memories)`` asked
its generated questions; ``warehouse:SCALE`` is ``warehouse.generate_warehouse(SCALE)``
asked ``warehouse_questions`` (``--memories 0``). Stores are built once by the new tree
under ``--workdir`` and reused (embedded first with ``--embedder local``, or given
random vectors with ``--random-vectors``). ``--exact``: vector search without HNSW,
as the default install (without the ``[ann]`` extra) searches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))


def digest(resp: Any) -> str:
    """What a ranking change would change: every hit's kind, id and score, the buckets,
    the warnings and the query plan."""
    parts = [
        [(h.kind, h.id, h.score) for h in lst or []]
        for lst in (resp.results, resp.entities, resp.memories, resp.example_queries)
    ]
    plan = getattr(resp, "plan", None)
    plan = plan.model_dump(mode="json") if plan is not None else None
    text = json.dumps([parts, resp.warnings, plan], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def worker() -> None:
    """A tree's side: a store, then one search per line of stdin, its time and digest."""
    config = json.loads(sys.stdin.readline())
    from layersearch import Layersearch

    if config.get("exact"):  # as the default install searches: without usearch's HNSW
        import layersearch.ranking.vector as vector_module

        vector_module.ann_available = lambda: False  # type: ignore[assignment]

    ls = Layersearch(config["store"], embedder=config["embedder"], create=False)
    ls.warm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        kwargs = json.loads(line)
        t0, c0 = time.perf_counter(), time.process_time()
        resp = ls.search(**kwargs)
        ms = (time.perf_counter() - t0) * 1000
        cpu = (time.process_time() - c0) * 1000
        print(json.dumps({"ms": ms, "cpu_ms": cpu, "digest": digest(resp)}), flush=True)
    ls.close()


class Worker:
    def __init__(self, src: Path, store: Path, embedder: str, exact: bool = False) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(src)
        env.pop("LAYERSEARCH_CONFIG", None)
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.ask({"store": str(store), "embedder": embedder, "exact": exact})

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


def build_store(
    corpus: str, memories: int, embedder: str, workdir: Path, *, random_vectors: bool = False
) -> tuple[Path, list[str]]:
    """The store of ``corpus`` (built once, by the tree this script runs from) and its
    questions. ``random_vectors``: the entities and memories get random unit vectors
    under the embedder's fingerprint instead of the model's (the catalog's words are
    embedded): a search's timing without the embedding of a large corpus."""
    sys.path.insert(0, str(HERE))
    from layersearch import Layersearch

    name = corpus.replace(":", "_") + (f"_m{memories}" if corpus != "spider" else "")
    base = workdir / (f"{name}_{embedder}" + ("_random" if random_vectors else ""))
    store = base / "store.duckdb"
    if corpus == "spider":
        questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
        catalog = None
    elif corpus.startswith("warehouse:"):  # warehouse.py's catalog at a scale
        from warehouse import generate_warehouse, warehouse_questions

        catalog = generate_warehouse(float(corpus.split(":", 1)[1]))
        questions = warehouse_questions(1000)
    else:
        from synthetic import generate_catalog, generate_queries

        size = int(corpus.split(":", 1)[1])
        catalog = generate_catalog(size, memories, seed=0)
        questions = generate_queries(catalog, 1000, seed=1).questions
    if not (base / "done").exists():
        shutil.rmtree(base, ignore_errors=True)
        t0 = time.perf_counter()
        with Layersearch(store, embedder=embedder) as ls:
            if catalog is None:
                ls.load(SPIDER / "tables.json")
            else:
                ls.load_catalog(catalog)
            if embedder != "none" and random_vectors:
                _random_vectors(ls)
            elif embedder != "none":
                ls.embed()
        (base / "done").write_text(f"{time.perf_counter() - t0:.1f} s\n")
    return store, questions


def _random_vectors(ls: Any) -> None:
    import numpy as np

    from layersearch.corpora.dense import (
        ENTITY_CORPUS,
        DenseDoc,
        content_hash,
        entity_docs,
        memory_text,
    )
    from layersearch.corpora.entities.neighbours import WORDS_CORPUS, word_docs

    corpus = ls.corpus()
    entities = list(corpus.entities.values())
    docs = entity_docs(entities) + [
        DenseDoc(m.id, memory_text(m)) for m in corpus.memories.values()
    ]
    dense = ls.dense(ENTITY_CORPUS)
    key, dims = dense.fingerprint.key(), dense.fingerprint.dimensions
    rng = np.random.default_rng(0)
    for i in range(0, len(docs), 50_000):
        part = docs[i : i + 50_000]
        m = rng.standard_normal((len(part), dims), dtype=np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        ls.store.upsert_vectors(
            ENTITY_CORPUS, key, [d.id for d in part], [content_hash(d.text) for d in part], m
        )
    ls.dense(WORDS_CORPUS).embed(word_docs(entities))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--old", type=Path, help="The src folder of the code before.")
    ap.add_argument("--new", type=Path, default=ROOT / "src")
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="A further tree asked in the same run (repeatable), e.g. before=/tmp/b/src.",
    )
    ap.add_argument("--corpus", default="spider")
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2, help="Times each question is asked.")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--kwargs", default="{}", help="Extra search arguments (JSON).")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/layersearch-ab"))
    ap.add_argument(
        "--exact",
        action="store_true",
        help="Exact vector search even with usearch installed (as the default install).",
    )
    ap.add_argument(
        "--random-vectors",
        action="store_true",
        help="With a model: random stored vectors (build_store's), not the corpus embedded.",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    if args.old is None:
        ap.error("--old is required")
    trees: dict[str, Path] = {"old": args.old, "new": args.new}
    for spec in args.also:
        name, sep, src = spec.partition("=")
        if not sep or not name or not src or name in trees:
            ap.error(f"--also wants NAME=SRC with a new name, got {spec!r}")
        trees[name] = Path(src)
    for tree in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    store, questions = build_store(
        args.corpus, args.memories, args.embedder, args.workdir, random_vectors=args.random_vectors
    )
    extra = json.loads(args.kwargs)
    workers = {}
    for name, src in trees.items():
        copy = args.workdir / f"ab_{name}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(store.parent, copy)
        workers[name] = Worker(src.resolve(), copy / store.name, args.embedder, args.exact)
    asked = questions[args.warmup : args.warmup + args.questions]
    for q in questions[: args.warmup]:
        for w in workers.values():
            w.ask({"question": q, **extra})
    times: dict[str, list[float]] = {n: [] for n in workers}
    cpu: dict[str, list[float]] = {n: [] for n in workers}
    differ: dict[str, list[str]] = {n: [] for n in workers if n != "old"}
    names = list(workers)
    for r in range(args.rounds):
        for i, q in enumerate(asked):
            k = (i + r) % len(names)  # which tree goes first rotates
            order = names[k:] + names[:k]
            got = {n: workers[n].ask({"question": q, **extra}) for n in order}
            for n in order:
                times[n].append(got[n]["ms"])
                cpu[n].append(got[n]["cpu_ms"])
            for n in differ:
                if r == 0 and got["old"]["digest"] != got[n]["digest"]:
                    differ[n].append(q)
    for w in workers.values():
        w.close()
    old50, new50 = statistics.median(times["old"]), statistics.median(times["new"])
    mean_cpu = {n: statistics.mean(c) for n, c in cpu.items()}
    old_cpu, new_cpu = mean_cpu["old"], mean_cpu["new"]
    out = {
        "corpus": args.corpus,
        "memories": args.memories if args.corpus != "spider" else 0,
        "embedder": args.embedder,
        "kwargs": extra,
        "trees": {n: str(src) for n, src in trees.items()},
        "searches_per_tree": len(times["old"]),
        **{
            f"{n}_ms": {"p50": statistics.median(ts), "p90": pct(ts, 0.9), "p99": pct(ts, 0.99)}
            for n, ts in times.items()
        },
        "new_over_old_p50": new50 / old50,
        "over_old_p50": {n: statistics.median(ts) / old50 for n, ts in times.items()},
        "cpu_ms_mean": mean_cpu,
        # (the mean holds one-off work, a scoped index built on first use; the median not)
        "cpu_ms_p50": {n: statistics.median(c) for n, c in cpu.items()},
        "new_over_old_cpu": new_cpu / old_cpu,
        "rankings_differ": len(differ["new"]),
        "differing_questions": differ["new"][:10],
        "rankings_differ_from_old": {n: len(d) for n, d in differ.items()},
        "load_average_1m": os.getloadavg()[0],
    }
    print(
        f"{args.corpus} ({out['memories']} memories), embedder {args.embedder}, "
        f"{len(times['old'])} searches per tree"
    )
    width = max(5, *(len(n) for n in workers))
    print(
        f"{'tree':<{width}} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'/old p50':>9} "
        f"{'CPU ms':>7} {'/old CPU':>9} {'CPU p50':>8} {'differ':>6}"
    )
    for n in workers:
        s = out[f"{n}_ms"]
        print(
            f"{n:<{width}} {s['p50']:>8.2f} {s['p90']:>8.2f} {s['p99']:>8.2f} "
            f"{s['p50'] / old50:>9.3f} {mean_cpu[n]:>7.2f} {mean_cpu[n] / old_cpu:>9.3f} "
            f"{out['cpu_ms_p50'][n]:>8.2f} {len(differ.get(n, [])):>6}"
        )
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 1 if any(differ.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
