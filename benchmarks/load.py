"""Load test of the streamable-HTTP MCP server, on loopback only and bounded in time.

Starts `layersearch serve --http` on 127.0.0.1 and a free port over a fresh store loaded
with the bundled models/, runs N concurrent MCP clients (the SDK's streamable-HTTP
client, one session each) for a fixed time making mixed `search` / `save_memory` calls,
then stops the server and reports calls, errors and latency percentiles per tool.

    PYTHONPATH=src python benchmarks/load.py [--seconds 30] [--clients 20] [--out FILE]

Prints a table and writes benchmarks/results/load.json (or --out). Exits 1 when any
call failed. Nothing leaves the machine: the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
RESULTS = ROOT / "benchmarks" / "results" / "load.json"
HOST = "127.0.0.1"

SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"entities": ["orders.order_total"], "question": "tax", "explain": True},
    {"question": "which marketing campaigns brought signups"},
    {"question": "customers by country", "max_results": 20},
    {"question": "refund rate last quarter", "channels": ["bm25", "fulltext"]},
]
#: Share of calls that write a memory; the rest search.
WRITE_SHARE = 0.2


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def start_server(store: Path, port: int, errlog: Any) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for var in ("LAYERSEARCH_CONFIG", "LAYERSEARCH_TOKEN", "LAYERSEARCH_STORE"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "layersearch", "--store", str(store), "serve", "--http"]
    cmd += ["--host", HOST, "--port", str(port), "--models", str(MODELS)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errlog)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with {proc.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on {HOST}:{port} after {timeout}s")


def client(url: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0))
    return Client(streamable_http_client(url, http_client=http))


async def one_client(
    url: str, n: int, until: float, times: dict[str, list[float]], errors: list[str]
) -> None:
    rnd = random.Random(n)
    async with client(url) as session:
        i = 0
        while time.monotonic() < until:
            if rnd.random() < WRITE_SHARE:
                tool = "save_memory"
                args: dict[str, Any] = {"learning": f"load test note from client {n}, call {i}"}
            else:
                tool, args = "search", SEARCHES[rnd.randrange(len(SEARCHES))]
            started = time.perf_counter()
            try:
                result = await session.call_tool(tool, args)
                if result.is_error:
                    errors.append(f"{tool}: {result.content[0].text[:200]}")
            except Exception as exc:  # noqa: BLE001 - a failed call is counted, not fatal
                errors.append(f"{tool}: {type(exc).__name__}: {exc}"[:300])
            times[tool].append(time.perf_counter() - started)
            i += 1


async def drive(url: str, clients: int, seconds: float) -> dict[str, Any]:
    # One warm-up call, not timed: the first search builds the server's snapshot.
    async with client(url) as session:
        await session.call_tool("search", SEARCHES[0])
    times: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one_client, url, n, started + seconds, times, errors)
    elapsed = time.monotonic() - started
    return {"elapsed_s": elapsed, "times": times, "errors": errors}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(seconds: float, clients: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ls-load-") as tmp:
        port = free_port()
        with (Path(tmp) / "stderr.log").open("w") as errlog:
            proc = start_server(Path(tmp) / "store.duckdb", port, errlog)
            try:
                wait_for_port(port, proc)
                raw = anyio.run(drive, f"http://{HOST}:{port}/mcp", clients, seconds)
            finally:
                stop_server(proc)
    tools = {
        tool: {
            "calls": len(ts),
            "p50_ms": round(pct(ts, 0.50) * 1000, 1),
            "p99_ms": round(pct(ts, 0.99) * 1000, 1),
            "max_ms": round(max(ts) * 1000, 1),
        }
        for tool, ts in sorted(raw["times"].items())
    }
    calls = sum(t["calls"] for t in tools.values())
    return {
        "clients": clients,
        "seconds": round(raw["elapsed_s"], 1),
        "calls": calls,
        "calls_per_s": round(calls / raw["elapsed_s"], 1),
        "errors": len(raw["errors"]),
        "first_errors": raw["errors"][:10],
        "tools": tools,
        "machine": machine(),
    }


def machine() -> dict[str, Any]:
    """The host a run was measured on (the load moves every figure)."""
    return {
        "python": platform.python_version(),
        "mcp": version("mcp"),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "platform": platform.platform(),
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['clients']} clients for {result['seconds']} s: {result['calls']} calls "
        f"({result['calls_per_s']}/s), {result['errors']} errors",
        f"{'tool':<12} {'calls':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}",
    ]
    for tool, t in result["tools"].items():
        lines.append(
            f"{tool:<12} {t['calls']:>7} {t['p50_ms']:>8} {t['p99_ms']:>8} {t['max_ms']:>8}"
        )
    lines += [f"  error: {e}" for e in result["first_errors"]]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not 0 < args.seconds <= 600 or not 0 < args.clients <= 200:
        parser.error("--seconds must be in (0, 600] and --clients in 1..200")
    out = run(args.seconds, args.clients)
    print(report(out))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    sys.exit(1 if out["errors"] else 0)
