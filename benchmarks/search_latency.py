"""Search latency, build time and memory of layersearch on synthetic catalogs.

    PYTHONPATH=src python benchmarks/search_latency.py --sizes 10000,100000 --memories 10000

Each size runs in its own subprocess (so peak RSS is per size): generate a
catalog, load it through ``Layersearch.load_catalog`` (timed, split by phase),
time warm searches (question-only, entities-only, both), time a fresh process
that reopens the store and answers one search, and run the same queries
through a plain ``rank_bm25.BM25Plus`` baseline over the same documents
tokenised with our analyzer. Then ``import layersearch`` and the CLI end to end
on the bundled sample. Prints a table and writes JSON.

Memories: ``load_catalog`` saves memories one by one (a DuckDB transaction and a
tantivy commit each, ~0.1 s apiece), so 10k memories would take ~20 min per
size. The product path is timed on the first ``--memory-sample`` memories and
extrapolated; the rest are bulk-inserted into the store by this script, and the
snapshot (entities + all memories, tantivy rebuilt) is then taken through the
product path and timed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

SEARCH_KINDS = ("question", "entities", "both")
TARGETS = {
    "100000": {"p50_ms": 3, "p99_ms": 15, "build_s": 10, "reopen_first_search_s": 0.5},
    "1000000": {"p50_ms": 10, "p99_ms": 40, "build_s": 60, "lexical_rss_mib": 500},
    "import_ms": 150,
    "cli_search_s": 0.5,
}


# -- helpers ------------------------------------------------------------------------------------


def rss_mib() -> float:
    """Current resident set size (VmRSS), MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[i]


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    ms = [x * 1000 for x in samples_s]
    return {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 3),
        "p90_ms": round(pct(ms, 90), 3),
        "p99_ms": round(pct(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def dir_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


class PhaseTimer:
    """Wraps methods (by monkeypatching the class attribute) to accumulate wall time."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        # The attribute may be inherited (e.g. Store.replace_rows): time it on `owner`.
        original = next(k.__dict__[attr] for k in owner.__mro__ if attr in k.__dict__)
        func = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.totals[label] = self.totals.get(label, 0.0) + time.perf_counter() - t
                self.calls[label] = self.calls.get(label, 0) + 1

        wrapped: Any = timed
        if isinstance(original, staticmethod):
            wrapped = staticmethod(timed)
        elif isinstance(original, classmethod):
            wrapped = classmethod(timed)
        own = attr in owner.__dict__
        setattr(owner, attr, wrapped)
        if own:
            self._undo.append(lambda: setattr(owner, attr, original))
        else:
            self._undo.append(lambda: delattr(owner, attr))

    def reset(self) -> None:
        self.totals.clear()
        self.calls.clear()

    def snapshot(self) -> dict[str, dict[str, float]]:
        return {
            k: {"s": round(v, 3), "calls": self.calls[k]} for k, v in sorted(self.totals.items())
        }

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def instrument() -> PhaseTimer:
    from layersearch.corpora.entities import EntityCorpus, EntityService
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.store.duckdb import DuckDBStore

    timer = PhaseTimer()
    timer.wrap(DuckDBStore, "replace_rows", "store.replace_rows")
    timer.wrap(DuckDBStore, "add_memories_at", "store.add_memories_at")
    timer.wrap(DuckDBStore, "load_entities", "store.load_entities")
    timer.wrap(DuckDBStore, "load_memories", "store.load_memories")
    timer.wrap(DuckDBStore, "load_edges", "store.load_edges")
    timer.wrap(DuckDBStore, "add_memory", "store.add_memory")
    timer.wrap(FullTextIndex, "write", "tantivy.write (incl. analysis)")
    timer.wrap(FullTextIndex, "_document", "tantivy.write: analyze+Document")
    timer.wrap(EntityCorpus, "__post_init__", "snapshot: resolver build")
    timer.wrap(EntityService, "_reload", "snapshot: reload total")
    timer.wrap(EntityService, "_save", "memories: _save total")
    return timer


class GcPauses:
    """Collector pauses while installed (``gc.callbacks``): a warm search that happens to
    trigger a full collection pays for every tracked object of the process, which is what
    a long tail at 1M can be made of rather than the search itself."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.pause_s = [0.0, 0.0, 0.0]
        self.max_s = 0.0
        self._start = 0.0

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            return
        took = time.perf_counter() - self._start
        gen = min(2, int(info.get("generation", 0)))
        self.count[gen] += 1
        self.pause_s[gen] += took
        self.max_s = max(self.max_s, took)

    def summary(self) -> dict[str, Any]:
        return {
            "collections": self.count,
            "pause_ms": [round(x * 1000, 2) for x in self.pause_s],
            "max_pause_ms": round(self.max_s * 1000, 2),
            "tracked_objects": len(gc.get_objects()),
        }


@contextmanager
def clock() -> Iterator[list[float]]:
    out: list[float] = []
    t = time.perf_counter()
    try:
        yield out
    finally:
        out.append(time.perf_counter() - t)


def run_python(code: str, *, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of a fresh interpreter running ``code``, and its stdout."""
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return time.perf_counter() - t, proc.stdout


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("LAYERSEARCH_STORE", None)
    env["LAYERSEARCH_EMBEDDER"] = "none"  # lexical unless a command names one
    return env


def compile_package() -> None:
    """Write the package's bytecode before any process is timed, as an installed package
    has it. Without this, a module changed since its ``.pyc`` was written is compiled from
    source in every fresh process when ``PYTHONDONTWRITEBYTECODE`` is set (as on the
    machine these numbers come from): ~130 ms of a CLI search after editing four modules."""
    import compileall

    compileall.compile_dir(str(SRC / "layersearch"), quiet=1)


def interpreter_start_s(repeat: int = 5) -> float:
    return statistics.median(run_python("pass", env=child_env())[0] for _ in range(repeat))


# -- one size -------------------------------------------------------------------------------------


def bulk_insert_memories(ls: Any, specs: list[Any]) -> int:
    """Insert memories in one transaction (tags resolved like load_catalog does).

    Benchmark-only: the product loads memories one transaction + one tantivy
    commit at a time; this stands in for the batched path it lacks.
    """
    import numpy as np

    corpus = ls.corpus()
    rows: dict[str, list[Any]] = {"learning": [], "description": [], "entities": [], "query": []}
    for spec in specs:
        tags: list[str] = []
        for ref in spec.entities:
            ids, _ = corpus.resolver.resolve_one(ref)
            tags.extend(i for i in ids if i not in tags)
        if spec.query:
            res = corpus.resolver.resolve(None, spec.query)
            tags.extend(i for i in res.ids if i not in tags)
        rows["learning"].append(spec.learning)
        rows["description"].append(spec.description)
        rows["entities"].append(json.dumps(tags))
        rows["query"].append(json.dumps(spec.query, sort_keys=True) if spec.query else None)
    data = {k: np.array(v, dtype=object) for k, v in rows.items()}
    store = ls.store
    with store.connect(write=True) as con:
        con.register("mem_data", data)
        con.execute(
            "INSERT INTO memories SELECT nextval('memory_ids'), learning, description, entities, "
            "query, now() FROM mem_data"
        )
        gen = store._bump(con)
    store._write_gen_file(gen)
    return len(specs)


def baseline_documents(corpus: Any) -> tuple[list[str], list[list[str]]]:
    from layersearch.ranking.analyzer import analyze

    ids: list[str] = []
    docs: list[list[str]] = []
    for doc in corpus.documents():
        tokens: list[str] = []
        for text in doc.fields.values():
            if text:
                tokens.extend(analyze(text))
        ids.append(doc.id)
        docs.append(tokens)
    return ids, docs


def baseline_query(kind: str, question: str, refs: list[str]) -> list[str]:
    from layersearch.ranking.analyzer import analyze, analyze_query

    tokens: list[str] = []
    if kind in ("question", "both"):
        tokens.extend(analyze_query(question))
    if kind in ("entities", "both"):
        for r in refs:
            tokens.extend(analyze(r))
    return tokens


def search_kwargs(kind: str, question: str, refs: list[str]) -> dict[str, Any]:
    if kind == "question":
        return {"question": question}
    if kind == "entities":
        return {"entities": refs}
    return {"question": question, "entities": refs}


def run_size(args: argparse.Namespace) -> dict[str, Any]:
    from synthetic import generate_catalog, generate_queries

    out: dict[str, Any] = {"size": args.size, "memories": args.memories}
    rss0 = rss_mib()
    with clock() as t:
        catalog = generate_catalog(args.size, args.memories, seed=args.seed)
    out["generate_s"] = round(t[0], 3)
    out["entities"] = sum(1 for _ in catalog.entities())
    out["models"] = len(catalog.models)
    out["datasources"] = len(catalog.datasources)
    queries = generate_queries(catalog, args.queries, seed=args.seed + 1)

    from layersearch.api import Layersearch

    timer = instrument()
    workdir = Path(args.workdir)
    store_path = workdir / "store.duckdb"
    ls = Layersearch(store_path)
    sample = min(args.memory_sample, len(catalog.memories))
    all_memories = catalog.memories
    catalog.memories = all_memories[:sample]
    gc.collect()
    rss_before = rss_mib()
    out["rss_catalog_mib"] = round(rss_before - rss0, 1)

    # 1. load_catalog: entities + the memory sample, product path.
    with clock() as t:
        report = ls.load_catalog(catalog)
    phases = timer.snapshot()
    mem_s = phases.get("memories: _save total", {}).get("s", 0.0)
    build: dict[str, Any] = {
        "load_catalog_s": round(t[0], 3),
        "memories_via_product": report.memories_added,
        "load_catalog_without_memories_s": round(t[0] - mem_s, 3),
        "per_memory_ms": round(1000 * mem_s / max(1, report.memories_added), 2),
        "phases": phases,
    }
    build["memories_extrapolated_s"] = round(build["per_memory_ms"] * args.memories / 1000, 1)
    # 2. The remaining memories in bulk, then the snapshot through the product path.
    timer.reset()
    rest = all_memories[sample:]
    with clock() as t:
        # With every memory already loaded there is nothing to insert: an empty insert would
        # still bump the store's generation and time a second full snapshot for nothing.
        if rest:
            bulk_insert_memories(ls, rest)
    build["bulk_insert_rest_s"] = round(t[0], 3)
    with clock() as t:
        corpus = ls.corpus()
    build["snapshot_full_rebuild_s"] = round(t[0], 3)
    build["snapshot_phases"] = timer.snapshot()
    build["index_build_s"] = round(
        build["load_catalog_without_memories_s"]
        + build["bulk_insert_rest_s"]
        + build["snapshot_full_rebuild_s"],
        3,
    )
    timer.restore()
    out["build"] = build
    out["docs_indexed"] = corpus.fulltext.num_docs
    out["memories_total"] = len(corpus.memories)
    catalog.memories = all_memories
    gc.collect()
    rss_after = rss_mib()
    out["memory"] = {
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "rss_after_build_mib": round(rss_after, 1),
        "rss_snapshot_and_indexes_mib": round(rss_after - rss_before, 1),
        "tantivy_dir_mib": round(dir_mib(ls.entities._ft_dir), 1),
        "duckdb_file_mib": round(store_path.stat().st_size / 2**20, 1),
    }
    del catalog
    gc.collect()

    # 3. Warm searches. The first one builds the schema index: the building process's
    # resident memory once it serves searches.
    ls.search(question=queries.questions[0])
    gc.collect()
    out["memory"]["rss_after_first_search_mib"] = round(rss_mib(), 1)
    out["memory"]["rss_first_search_minus_catalog_mib"] = round(rss_mib() - rss_before, 1)
    searches: dict[str, Any] = {}
    empty: dict[str, int] = {}
    for kind in SEARCH_KINDS:
        for i in range(min(args.warmup, args.queries)):
            ls.search(**search_kwargs(kind, queries.questions[i], queries.entities[i]))
        samples: list[float] = []
        n_empty = 0
        with GcPauses() as pauses:
            for q, refs in zip(queries.questions, queries.entities, strict=True):
                kw = search_kwargs(kind, q, refs)
                t0 = time.perf_counter()
                resp = ls.search(**kw)
                samples.append(time.perf_counter() - t0)
                n_empty += not resp.results
        searches[kind] = summary_ms(samples)
        searches[kind]["gc"] = pauses.summary()
        # which searches were slow, in run order: a tail clustered in time is the machine's
        slow = sorted(range(len(samples)), key=lambda i: -samples[i])[:5]
        searches[kind]["slowest"] = [[i, round(samples[i] * 1000, 2)] for i in sorted(slow)]
        empty[kind] = n_empty
    out["search"] = searches
    out["search_empty_results"] = empty

    # 4. Reopen in a fresh process: open the store, answer one search.
    out["reopen"] = reopen(store_path, queries.questions[0], args.interpreter_s)

    # 5. rank-bm25 baseline, where it is feasible.
    if args.size <= args.baseline_max:
        out["baseline"] = run_baseline(corpus, queries, args, searches)
    else:
        out["baseline"] = {"skipped": f"size > --baseline-max {args.baseline_max}"}
    ls.close()
    return out


def reopen(store_path: Path, question: str, interpreter_s: float) -> dict[str, Any]:
    code = (
        "import time, json, resource\n"
        "t0 = time.perf_counter()\n"
        "from layersearch import Layersearch\n"
        "import layersearch.api\n"
        "t1 = time.perf_counter()\n"
        f"ls = Layersearch({str(store_path)!r}, create=False)\n"
        "t2 = time.perf_counter()\n"
        f"r = ls.search(question={question!r})\n"
        "t3 = time.perf_counter()\n"
        "rss = int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) / 1024\n"
        "print(json.dumps({'import_s': t1 - t0, 'open_s': t2 - t1, 'first_search_s': t3 - t2,"
        " 'hits': len(r.results), 'warnings': r.warnings, 'rss_mib': rss,"
        " 'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    wall, stdout = run_python(code, env=child_env())
    inner = json.loads(stdout.strip().splitlines()[-1])
    return {
        "wall_s": round(wall, 3),
        "interpreter_s": round(interpreter_s, 3),
        "wall_minus_interpreter_s": round(wall - interpreter_s, 3),
        "import_s": round(inner["import_s"], 3),
        "open_s": round(inner["open_s"], 3),
        "first_search_s": round(inner["first_search_s"], 3),
        "open_plus_first_search_s": round(inner["open_s"] + inner["first_search_s"], 3),
        "hits": inner["hits"],
        "warnings": inner["warnings"],
        "rss_after_first_search_mib": round(inner["rss_mib"], 1),
    }


def run_baseline(
    corpus: Any, queries: Any, args: argparse.Namespace, ours: dict[str, Any]
) -> dict[str, Any]:
    import numpy as np
    from rank_bm25 import BM25Plus

    rss_before = rss_mib()
    with clock() as t_tok:
        ids, docs = baseline_documents(corpus)
    with clock() as t_build:
        bm = BM25Plus(docs)
    del docs
    gc.collect()
    res: dict[str, Any] = {
        "tokenize_s": round(t_tok[0], 3),
        "build_s": round(t_build[0], 3),
        "rss_delta_mib": round(rss_mib() - rss_before, 1),
        "docs": len(ids),
    }
    n = min(args.baseline_queries, len(queries.questions))
    for kind in SEARCH_KINDS:
        samples: list[float] = []
        for q, refs in zip(queries.questions[:n], queries.entities[:n], strict=True):
            t0 = time.perf_counter()
            toks = baseline_query(kind, q, refs)
            scores = bm.get_scores(toks)
            top = np.argpartition(-scores, 10)[:10] if len(scores) > 10 else np.arange(len(scores))
            _ = [ids[i] for i in top[np.argsort(-scores[top])]]
            samples.append(time.perf_counter() - t0)
        s = summary_ms(samples)
        s["ratio_baseline_over_ours_p50"] = round(s["p50_ms"] / ours[kind]["p50_ms"], 2)
        res[kind] = s
    return res


# -- whole-package measurements ----------------------------------------------------------------


def _timed_import(module: str, env: dict[str, str]) -> float:
    """Seconds a fresh interpreter spends importing ``module``, timed inside it: the
    difference of two process wall times is noise of the same size as a light import
    (it came out negative once)."""
    code = f"import time\nt = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - t)"
    return float(run_python(code, env=env)[1].strip())


def import_time(interpreter_s: float, repeat: int = 5) -> dict[str, Any]:
    env = child_env()
    walls = [_timed_import("layersearch", env) for _ in range(repeat)]
    api = [_timed_import("layersearch.api", env) for _ in range(repeat)]
    return {
        "import_layersearch_ms": round(1000 * statistics.median(walls), 1),
        "import_layersearch_api_ms": round(1000 * statistics.median(api), 1),
        "interpreter_ms": round(1000 * interpreter_s, 1),
    }


def cli_search(workdir: Path, interpreter_s: float, repeat: int = 5) -> dict[str, Any]:
    from layersearch.api import Layersearch

    store = workdir / "sample.duckdb"
    with Layersearch(store) as ls:
        ls.load(ROOT / "models")
        ls.search(question="warm the index")
    cmd = [
        sys.executable,
        "-m",
        "layersearch",
        "--store",
        str(store),
        "search",
        "monthly revenue by store",
        "--json",
    ]
    walls = []
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), check=True)
        walls.append(time.perf_counter() - t)
    top = json.loads(proc.stdout)["results"][0]["id"]
    wall = statistics.median(walls)
    return {
        "cli_search_s": round(wall, 3),
        "cli_search_minus_interpreter_s": round(wall - interpreter_s, 3),
        "top_hit": top,
    }


# -- driver ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--sizes", default="10000,100000,1000000", help="entity counts, comma-separated"
    )
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300, help="timed searches per kind")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--memory-sample", type=int, default=200,
                    help="memories loaded through load_catalog one by one (the rest in bulk)")  # fmt: skip
    ap.add_argument("--baseline-max", type=int, default=100_000,
                    help="largest size the rank-bm25 baseline runs at")  # fmt: skip
    ap.add_argument("--baseline-queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per size")
    ap.add_argument("--quick", action="store_true",
                    help="few queries and repeats, no package-level timing loops (for smoke tests)")  # fmt: skip
    ap.add_argument("--out", default=str(HERE / "results" / "search_latency.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--interpreter-s", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.queries = min(args.queries, 30)
        args.warmup = min(args.warmup, 3)
        args.memory_sample = min(args.memory_sample, 10)
        args.baseline_queries = min(args.baseline_queries, 10)
    return args


def run_worker_subprocess(args: argparse.Namespace, size: int, interpreter_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"ls-bench-{size}-") as tmp:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            "--size", str(size),
            "--workdir", tmp,
            "--memories", str(args.memories),
            "--queries", str(args.queries),
            "--warmup", str(args.warmup),
            "--memory-sample", str(args.memory_sample),
            "--baseline-max", str(args.baseline_max),
            "--baseline-queries", str(args.baseline_queries),
            "--seed", str(args.seed),
            "--interpreter-s", str(interpreter_s),
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env=child_env(), timeout=args.timeout
            )
        except subprocess.TimeoutExpired:
            return {"size": size, "error": f"timed out after {args.timeout:.0f} s"}
        if proc.returncode != 0:
            return {"size": size, "error": proc.stderr.strip()[-2000:]}
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def machine() -> dict[str, Any]:
    from importlib.metadata import version

    import duckdb
    import tantivy  # noqa: F401

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "duckdb": duckdb.__version__,
        "tantivy": version("tantivy"),
        "rank_bm25": version("rank-bm25"),
        "note": "2 cores shared with other jobs, noisy: compare ratios within one run",
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        "| entities | build s | reopen+1st s | q p50/p99 ms | e p50/p99 ms | both p50/p99 ms "
        "| peak RSS MiB | snapshot RSS MiB | bm25 q p50 ms (×) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["sizes"]:
        if "error" in r:
            lines.append(f"| {r['size']} | error: {r['error'][:80]} |")
            continue
        s = r["search"]
        b = r["baseline"]
        base = (
            f"{b['question']['p50_ms']} ({b['question']['ratio_baseline_over_ours_p50']}×)"
            if "question" in b
            else "skipped"
        )
        cells = [
            f"{r['entities']:,}",
            f"{r['build']['index_build_s']}",
            f"{r['reopen']['open_plus_first_search_s']}",
            *(f"{s[k]['p50_ms']} / {s[k]['p99_ms']}" for k in SEARCH_KINDS),
            f"{r['memory']['peak_rss_mib']}",
            f"{r['memory']['rss_snapshot_and_indexes_mib']}",
            base,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    pkg = result.get("package", {})
    if pkg:
        lines.append("")
        lines.append(
            f"import layersearch: {pkg['import_layersearch_ms']} ms (layersearch.api: "
            f"{pkg['import_layersearch_api_ms']} ms); CLI search on the sample: "
            f"{pkg['cli_search_s']} s ({pkg['cli_search_minus_interpreter_s']} s without the "
            f"interpreter's {pkg['interpreter_ms']} ms)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(run_size(args)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    compile_package()
    interpreter_s = interpreter_start_s(3 if args.quick else 5)
    result: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "targets": TARGETS,
        "options": {k: v for k, v in vars(args).items() if k not in ("worker", "size", "workdir")},
        "sizes": [],
    }
    for size in sizes:
        print(f"… {size:,} entities", file=sys.stderr, flush=True)
        result["sizes"].append(run_worker_subprocess(args, size, interpreter_s))
        _write(result, args.out)
    with tempfile.TemporaryDirectory(prefix="ls-bench-pkg-") as tmp:
        repeat = 3 if args.quick else 5
        pkg = import_time(interpreter_s, repeat)
        pkg.update(cli_search(Path(tmp), interpreter_s, repeat))
    result["package"] = pkg
    _write(result, args.out)
    print(table(result))
    print(f"\nJSON: {args.out}")
    return 0 if all("error" not in r for r in result["sizes"]) else 1


def _write(result: dict[str, Any], out: str) -> None:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
