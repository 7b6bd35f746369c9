"""MCP server latency: cold start of `layersearch serve` to a listed tool, and the
`search` round trip over stdio, on the bundled sample semantic layer (models/).

    PYTHONPATH=src python benchmarks/mcp_latency.py [--starts 7] [--calls 300]

Prints a table and writes benchmarks/results/mcp_latency.json. Times are wall
clock as a client sees them: the client's own imports happen before the clock starts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
RESULTS = ROOT / "benchmarks" / "results" / "mcp_latency.json"

SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"entities": ["orders.order_total"], "question": "tax", "explain": True},
    {"entities": ["shop.orders.net_revenue"]},
    {"question": "which marketing campaigns brought signups"},
    {"question": "customers by country", "max_results": 20},
]


def params(store: Path, *extra: str) -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("LAYERSEARCH_CONFIG", None)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "layersearch", "--store", str(store), "serve", *extra],
        env=env,
    )


async def cold_start(store: Path, errlog: Any) -> tuple[float, float]:
    """Seconds from spawning the server to (a) tools listed, (b) a first search answered."""
    t0 = time.perf_counter()
    async with Client(stdio_client(params(store), errlog=errlog)) as client:
        tools = await client.list_tools()
        listed = time.perf_counter() - t0
        assert any(t.name == "search" for t in tools.tools)
        result = await client.call_tool("search", SEARCHES[0])
        first = time.perf_counter() - t0
        assert not result.is_error, result.content
    return listed, first


async def round_trips(store: Path, calls: int, errlog: Any) -> list[float]:
    out: list[float] = []
    async with Client(stdio_client(params(store), errlog=errlog)) as client:
        for args in SEARCHES:  # warm-up: the snapshot is built and every path taken once
            await client.call_tool("search", args)
        for i in range(calls):
            args = SEARCHES[i % len(SEARCHES)]
            t0 = time.perf_counter()
            result = await client.call_tool("search", args)
            out.append(time.perf_counter() - t0)
            assert not result.is_error, result.content
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(starts: int, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ls-bench-") as tmp:
        store = Path(tmp) / "store.duckdb"
        with (Path(tmp) / "stderr.log").open("w") as errlog:
            # Load the sample once (not timed): later starts find a non-empty store.
            async with Client(
                stdio_client(params(store, "--models", str(MODELS)), errlog=errlog)
            ) as c:
                await c.call_tool("search", SEARCHES[0])
            starts_s = [await cold_start(store, errlog) for _ in range(starts)]
            trips = await round_trips(store, calls, errlog)
    listed = [s[0] for s in starts_s]
    first = [s[1] for s in starts_s]
    return {
        "cold_start_to_list_tools_s": {
            "median": statistics.median(listed),
            "min": min(listed),
            "max": max(listed),
            "runs": len(listed),
        },
        "cold_start_to_first_search_s": {
            "median": statistics.median(first),
            "min": min(first),
            "max": max(first),
        },
        "search_round_trip_ms": {
            "p50": pct(trips, 0.50) * 1000,
            "p95": pct(trips, 0.95) * 1000,
            "p99": pct(trips, 0.99) * 1000,
            "calls": len(trips),
        },
        "targets": {"cold_start_to_list_tools_s": 1.5, "search_round_trip_p50_ms": 10},
        "machine": {
            "python": platform.python_version(),
            "mcp": version("mcp"),
            "cpus": os.cpu_count(),
            "load_average_1m": os.getloadavg()[0],
            "platform": platform.platform(),
        },
    }


def report(result: dict[str, Any]) -> str:
    cs, fs, rt = (
        result["cold_start_to_list_tools_s"],
        result["cold_start_to_first_search_s"],
        result["search_round_trip_ms"],
    )
    rows = [
        (
            "cold start → tools listed",
            f"{cs['median']:.2f} s",
            f"{cs['min']:.2f}–{cs['max']:.2f} s",
            "≤ 1.5 s",
        ),
        (
            "cold start → first search",
            f"{fs['median']:.2f} s",
            f"{fs['min']:.2f}–{fs['max']:.2f} s",
            "",
        ),
        ("search round trip p50", f"{rt['p50']:.2f} ms", f"p95 {rt['p95']:.2f} ms", "≤ 10 ms"),
    ]
    lines = [f"{'measure':<28} {'value':>10}  {'spread':<18} target", "-" * 68]
    lines += [f"{a:<28} {b:>10}  {c:<18} {d}" for a, b, c, d in rows]
    m = result["machine"]
    lines.append(
        f"({cs['runs']} starts, {rt['calls']} searches; python {m['python']}, mcp {m['mcp']}, "
        f"{m['cpus']} cpus, load {m['load_average_1m']:.1f})"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=7)
    ap.add_argument("--calls", type=int, default=300)
    ns = ap.parse_args()
    out = anyio.run(main, ns.starts, ns.calls)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(report(out))
    print(f"wrote {RESULTS.relative_to(ROOT)}")
