"""The local embedder (all-MiniLM-L6-v2 int8 on ONNX Runtime): install, start-up, speed.

    PYTHONPATH=src python benchmarks/local_embedder.py [--skip-install] [--runs 5]

(a) ``pip install -e '.[local]'`` into a fresh virtualenv: seconds, MB the install added
    to the venv, and that no torch / NVIDIA / CUDA package came with it;
(b) a new process ``layersearch --embedder local search "…"`` on the bundled sample
    against the same command with the lexical channels only (no embedder), interleaved;
(c) query embedding p50 / p95 (in process, Spider dev questions);
(d) ``embed`` of the Spider catalog (``/work/shared/data/spider/tables.json``);
(e) the MCP server: the first dense ``search`` after ``initialize`` (and a pause) against
    later ones after the same pause (the target's ratio) and later ones back to back.

Prints a table and writes benchmarks/results/local_embedder.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))
RESULTS = ROOT / "benchmarks" / "results" / "local_embedder.json"
QUESTION = "how much did each store make per month"
LATER = [
    "which marketing campaigns brought signups",
    "customers by country",
    "tax paid on orders",
    "refund rate per product",
    "average basket size",
]
IDLE_QUERIES, IDLE_GAP_S = 20, 0.2  # query embedding after idle spells
IDLE_CALLS = 3  # MCP: later calls, each after the same pause as the first
HEAVY = ("torch", "nvidia", "cuda", "triton", "sentence-transformers", "transformers")


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT / "src")
    out["LAYERSEARCH_EMBEDDER"] = "none"  # lexical unless a command names one
    out.pop("LAYERSEARCH_CONFIG", None)
    return out


def du_mb(path: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink():
                total += p.stat().st_size
    return total / 1e6


def bench_install() -> dict[str, Any]:
    """The core install, then the [local] extra on top, each timed (no pip cache)."""
    with tempfile.TemporaryDirectory(prefix="ls-venv-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir", "-q", "-e"]
        steps: dict[str, Any] = {}
        for name, target in (("core", str(ROOT)), ("local_extra", f"{ROOT}[local]")):
            before = du_mb(venv)
            t0 = time.perf_counter()
            proc = subprocess.run([*pip, target], capture_output=True, text=True)
            if proc.returncode != 0:
                return {"error": proc.stderr[-2000:]}
            steps[name] = {
                "seconds": round(time.perf_counter() - t0, 1),
                "mb_added": round(du_mb(venv) - before, 1),
            }
        listed = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
        names = sorted(p["name"].lower() for p in json.loads(listed.stdout))
        return {
            **steps,
            "seconds": round(sum(x["seconds"] for x in steps.values()), 1),
            "venv_mb_added": round(sum(x["mb_added"] for x in steps.values()), 1),
            "packages": len(names),
            "heavy_packages": [n for n in names if any(h in n for h in HEAVY)],
        }


def make_sample_store(tmp: Path) -> Path:
    store = tmp / "sample.duckdb"
    subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(store), "--embedder", "local"]
        + ["load", str(MODELS), "--json"],
        env=env(),
        check=True,
        capture_output=True,
    )
    return store


def bench_cli(store: Path, runs: int, old: Path | None = None) -> dict[str, Any]:
    """The CLI search in a new process, lexical and dense, interleaved; with ``old`` (the
    ``src`` of the code before) both trees' commands in the same rounds, on copies of
    the store (``old_*`` keys)."""
    trees = {"": (ROOT / "src", store)}
    if old is not None:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(old)], check=True)
        copy = store.with_name("old_" + store.name)
        shutil.copy(store, copy)
        trees["old_"] = (old.resolve(), copy)
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    for prefix, (src, at) in trees.items():
        base = [sys.executable, "-m", "layersearch", "--store", str(at)]
        tree_env = {**env(), "PYTHONPATH": str(src)}
        commands[prefix + "lexical"] = ([*base, "search", QUESTION], tree_env)
        commands[prefix + "dense"] = (
            [*base, "--embedder", "local", "search", QUESTION, "--explain"],
            tree_env,
        )
    times: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    stderr: dict[str, str] = {}
    for i in range(runs + 1):
        for name in list(commands) if i % 2 == 0 else list(commands)[::-1]:
            cmd, cmd_env = commands[name]
            t0 = time.perf_counter()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run(cmd, env=cmd_env, capture_output=True, text=True, check=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i > 0:
                cpu[name].append(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
            if i == 0:  # warm-up of the OS file cache, not timed
                stderr[name] = proc.stderr
                if name.endswith("dense"):
                    assert "vector" in proc.stdout, proc.stdout
                continue
            times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {"runs": runs, "stderr": stderr}
    for prefix in trees:
        lex, dense = (statistics.median(times[prefix + k]) for k in ("lexical", "dense"))
        lex_cpu, dense_cpu = (statistics.median(cpu[prefix + k]) for k in ("lexical", "dense"))
        out.update(
            {
                f"{prefix}lexical_s": round(lex, 3),
                f"{prefix}dense_s": round(dense, 3),
                f"{prefix}ratio": round(dense / lex, 2),
                f"{prefix}lexical_cpu_s": round(lex_cpu, 3),
                f"{prefix}dense_cpu_s": round(dense_cpu, 3),
                f"{prefix}cpu_ratio": round(dense_cpu / lex_cpu, 2),
            }
        )
    return out


def bench_query(n: int) -> dict[str, Any]:
    from layersearch.embed import LocalEmbedder

    questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())[:n]]
    e = LocalEmbedder()
    t0 = time.perf_counter()
    e.load()
    load_s = time.perf_counter() - t0
    times, cpu = [], []
    for q in questions:
        t0, c0 = time.perf_counter(), time.thread_time()
        e.embed_query(q)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    times.sort()
    cpu.sort()
    # The same model after short idle spells: the CPU is slower to a call that follows
    # idle time than to one right behind another (caches, clock), whatever the code does.
    idle = []
    for q in questions[:IDLE_QUERIES]:
        time.sleep(IDLE_GAP_S)
        t0 = time.perf_counter()
        e.embed_query(f"{q} (after idle)")
        idle.append((time.perf_counter() - t0) * 1000)
    return {
        "model": e.fingerprint.describe(),
        "load_s": round(load_s, 3),
        "p50_ms": round(times[len(times) // 2], 2),
        "p95_ms": round(times[int(len(times) * 0.95)], 2),
        "cpu_p50_ms": round(cpu[len(cpu) // 2], 2),
        "after_idle_gap_s": IDLE_GAP_S,
        "after_idle_p50_ms": round(statistics.median(idle), 2),
        "queries": len(times),
    }


def bench_embed_catalog(tmp: Path) -> dict[str, Any]:
    from layersearch import Layersearch

    ls = Layersearch(tmp / "spider.duckdb", embedder="local")
    ls.load(str(SPIDER / "tables.json"), "spider")
    t0, c0 = time.perf_counter(), time.process_time()
    reports = ls.embed()  # the entities', then the catalog words'
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    ls.close()
    return {
        "documents": sum(r.documents for r in reports),
        "embedded": sum(r.embedded for r in reports),
        "seconds": round(seconds, 1),
        "cpu_s": round(cpu, 1),
    }


def bench_mcp(store: Path, starts: int, later: int, pause: float) -> dict[str, Any]:
    import anyio
    from mcp import Client, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    async def call(client: Any, question: str) -> types.CallToolResult:
        # The request as ``call_tool`` sends it, without the Python client's check of the
        # result against the tool's output schema: on a session's first call that check
        # imports jsonschema and compiles the schema (30-50 ms in this process), a cost of
        # this client, not of the server, that other MCP clients do not have.
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name="search", arguments={"question": question, "explain": True}
            )
        )
        result: types.CallToolResult = await client.session.send_request(
            request, types.CallToolResult
        )
        return result

    # Each search asks a question of its own: a repeated one would take its vector
    # from the query cache instead of embedding it.
    questions = [QUESTION] + [f"{q} (run {i})" for i, q in enumerate(LATER * 4)][:later]
    idle_questions = [f"{q} (after a pause)" for q in LATER[:IDLE_CALLS]]

    async def one(
        errlog: Any, wait: float, dense: bool = True
    ) -> tuple[float, list[float], list[float]]:
        embedder = ["--embedder", "local"] if dense else []
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "layersearch", "--store", str(store), *embedder, "serve"],
            env=env(),
        )
        async with Client(stdio_client(server, errlog=errlog)) as client:
            await client.list_tools()
            # An agent reads the tool list before its first call; the server opens the
            # store and loads the model meanwhile, on its lifespan's thread.
            await anyio.sleep(wait)
            t0 = time.perf_counter()
            first = await call(client, questions[0])
            first_s = time.perf_counter() - t0
            assert not first.is_error, first.content
            has_vector = "vector" in json.dumps(first.structured_content)
            assert has_vector == dense, "dense channel expected" if dense else "lexical only"
            rest = []
            for q in questions[1:]:
                t0 = time.perf_counter()
                await call(client, q)
                rest.append(time.perf_counter() - t0)
            # Later calls after the same pause as the first: an agent's calls come after
            # it has thought, and a call after an idle spell costs more than one right
            # behind another (the in-process embedding alone: see query_embedding).
            idle = []
            for q in idle_questions if wait > 0 else []:
                await anyio.sleep(wait)
                t0 = time.perf_counter()
                await call(client, q)
                idle.append(time.perf_counter() - t0)
        return first_s, rest, idle

    firsts, laters, idles, immediate = [], [], [], []
    lex_first, lex_later, lex_idle = [], [], []
    with (store.parent / "serve.log").open("w") as errlog:
        for _ in range(starts):
            f, r, i = anyio.run(one, errlog, pause)
            firsts.append(f)
            laters.append(statistics.median(r))
            idles.extend(i)
            immediate.append(anyio.run(one, errlog, 0.0)[0])
            f, r, i = anyio.run(one, errlog, pause, False)
            lex_first.append(f)
            lex_later.append(statistics.median(r))
            lex_idle.extend(i)
    first, later_s = statistics.median(firsts), statistics.median(laters)
    idle_s = statistics.median(idles)
    return {
        "first_search_ms": round(first * 1000, 1),
        "later_search_ms": round(later_s * 1000, 1),
        "later_after_pause_ms": round(idle_s * 1000, 1),
        # The first call against a later one made after the same pause (like for like),
        # and against later ones made back to back.
        "ratio": round(first / idle_s, 2),
        "ratio_back_to_back": round(first / later_s, 2),
        "pause_after_list_tools_s": pause,
        "first_search_without_pause_ms": round(statistics.median(immediate) * 1000, 1),
        # The same server without an embedder: what a first call costs the MCP layer and
        # the lexical channels by themselves.
        "lexical_first_search_ms": round(statistics.median(lex_first) * 1000, 1),
        "lexical_later_search_ms": round(statistics.median(lex_later) * 1000, 1),
        "lexical_later_after_pause_ms": round(statistics.median(lex_idle) * 1000, 1),
        "starts": starts,
        "server_stderr": (store.parent / "serve.log").read_text()[-2000:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-install", action="store_true", help="Leave out (a).")
    parser.add_argument("--runs", type=int, default=5, help="CLI runs per command.")
    parser.add_argument(
        "--pause",
        type=float,
        default=2.0,
        help="MCP: seconds between list_tools and the first search.",
    )
    parser.add_argument(
        "--only", default="cli,query,embed,mcp", help="Comma-separated parts after the install."
    )
    parser.add_argument(
        "--old", type=Path, default=None, help="CLI: also the src folder of the code before."
    )
    args = parser.parse_args()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True
    )  # PYTHONDONTWRITEBYTECODE may be set: time running code, not compiling it
    load_at_start = round(os.getloadavg()[0], 2)
    out: dict[str, Any] = {}
    if not args.skip_install:
        out["install"] = bench_install()
    with tempfile.TemporaryDirectory(prefix="ls-bench-") as tmp_name:
        tmp = Path(tmp_name)
        store = make_sample_store(tmp)
        parts = set(args.only.split(","))
        if "cli" in parts:
            out["cli_search"] = bench_cli(store, args.runs, args.old)
        if "query" in parts:
            out["query_embedding"] = bench_query(200)
        if "embed" in parts:
            out["embed_spider"] = bench_embed_catalog(tmp)
        if "mcp" in parts:
            out["mcp"] = bench_mcp(store, starts=3, later=20, pause=args.pause)
    out["targets"] = {
        "install_mb": 400,
        "install_s": 90,
        "cli_ratio": 1.5,
        "query_p50_ms": 5,
        "embed_spider_s": 30,
        "mcp_first_over_later": 1.5,
    }
    out["machine"] = {
        "load_average_1m_at_start": load_at_start,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    if RESULTS.exists() and args.only != parser.get_default("only"):
        # A partial run keeps the other parts' last numbers.
        out = {**json.loads(RESULTS.read_text()), **out}
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(report(out))


def report(out: dict[str, Any]) -> str:
    rows = []
    inst = out.get("install")
    if inst and "error" not in inst:
        rows.append(("install -e '.[local]' (fresh venv)", f"{inst['seconds']} s", "≤ 90 s"))
        rows.append(("  venv MB added", f"{inst['venv_mb_added']} MB", "≤ 400 MB"))
        if le := inst.get("local_extra"):
            rows.append(
                ("  of which the [local] extra", f"{le['seconds']} s, {le['mb_added']} MB", "")
            )
        rows.append(
            ("  torch / CUDA packages", ", ".join(inst["heavy_packages"]) or "none", "none")
        )
    elif inst:
        rows.append(("install", "failed", inst["error"][-200:]))
    if c := out.get("cli_search"):
        rows.append(("CLI search, lexical only", f"{c['lexical_s']} s", ""))
        rows.append(("CLI search, --embedder local", f"{c['dense_s']} s", ""))
        rows.append(("  ratio", f"{c['ratio']}×", "≤ 1.5×"))
        if "old_ratio" in c:
            rows.append(
                (
                    "  the code before (--old): ratio, CPU ratio",
                    f"{c['old_ratio']}×, {c['old_cpu_ratio']}× (now {c['cpu_ratio']}×)",
                    "",
                )
            )
        rows.append(
            (
                "  CPU s lexical / dense",
                f"{c.get('lexical_cpu_s', '–')} / {c.get('dense_cpu_s', '–')} s",
                "",
            )
        )
    if q := out.get("query_embedding"):
        rows.append(
            ("query embedding p50 / p95", f"{q['p50_ms']} / {q['p95_ms']} ms", "p50 ≤ 5 ms")
        )
        rows.append(("  CPU p50", f"{q.get('cpu_p50_ms', '–')} ms", ""))
        if "after_idle_p50_ms" in q:
            rows.append(
                (f"  p50 after {q['after_idle_gap_s']} s idle", f"{q['after_idle_p50_ms']} ms", "")
            )
        rows.append(("model load (+ one query)", f"{q['load_s']} s", ""))
    if e := out.get("embed_spider"):
        rows.append((f"embed Spider ({e['documents']} docs)", f"{e['seconds']} s", "≤ 30 s"))
        rows.append(("  CPU", f"{e.get('cpu_s', '–')} s", ""))
    if m := out.get("mcp"):
        rows.append(("MCP first dense search", f"{m['first_search_ms']} ms", ""))
        if "later_after_pause_ms" in m:
            pause = m["pause_after_list_tools_s"]
            rows.append(
                (f"MCP later dense, {pause} s pause", f"{m['later_after_pause_ms']} ms", "")
            )
            rows.append(("  ratio first / later", f"{m['ratio']}×", "≤ 1.5×"))
            rows.append(("MCP later dense, back to back", f"{m['later_search_ms']} ms", ""))
            rows.append(("  ratio first / back to back", f"{m['ratio_back_to_back']}×", ""))
        else:
            rows.append(("MCP later dense search", f"{m['later_search_ms']} ms", ""))
            rows.append(("  ratio", f"{m['ratio']}×", "≤ 1.5×"))
        if "lexical_first_search_ms" in m:
            rows.append(
                (
                    "MCP lexical-only first / later",
                    f"{m['lexical_first_search_ms']} / {m['lexical_later_search_ms']} ms"
                    + (
                        f" ({m['lexical_later_after_pause_ms']} after a pause)"
                        if "lexical_later_after_pause_ms" in m
                        else ""
                    ),
                    "",
                )
            )
        if "first_search_without_pause_ms" in m:
            rows.append(
                ("MCP first search, no pause", f"{m['first_search_without_pause_ms']} ms", "")
            )
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure':<{width}}  {'value':<22} target", "-" * (width + 32)]
    lines += [f"{a:<{width}}  {b:<22} {t}" for a, b, t in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
