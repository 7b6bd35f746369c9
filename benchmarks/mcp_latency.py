"""MCP server latency: cold start of `layersearch serve` to a listed tool, and the
`search` round trip over stdio, on the bundled sample semantic layer (models/); and
(``--spider``) the round trip on the Spider catalog (166 databases) of three servers
asked the same questions in turn: the default install (the local model, the store
embedded), ``--embedder none`` (lexical), and the local model on a store loaded
without vectors (the dense channel falls back to lexical); and a fourth server whose
search returns a fixed response, the MCP SDK's own round trip (``floor``).

    PYTHONPATH=src python benchmarks/mcp_latency.py [--starts 7] [--calls 300]
    PYTHONPATH=src python benchmarks/mcp_latency.py --spider [--questions 300]
    PYTHONPATH=src python benchmarks/mcp_latency.py --overhead [--questions 300]

``--overhead``: the server's own part of a call, in one process (the SDK's in-memory
transport, no stdio): the lexical Spider server and the ``floor`` server asked the
same questions in turn, each call split by wrapping the SDK's and the server's steps
(results/mcp_overhead.json).

Prints a table and writes benchmarks/results/mcp_latency.json (``--spider``:
mcp_spider.json). Times are wall clock as a client sees them: the client's own
imports happen before the clock starts.
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
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
RESULTS = ROOT / "benchmarks" / "results" / "mcp_latency.json"
SPIDER_RESULTS = ROOT / "benchmarks" / "results" / "mcp_spider.json"
SPIDER = Path(os.environ.get("SPIDER_DIR", "/work/shared/data/spider"))

SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"entities": ["orders.order_total"], "question": "tax", "explain": True},
    {"entities": ["shop.orders.net_revenue"]},
    {"question": "which marketing campaigns brought signups"},
    {"question": "customers by country", "max_results": 20},
]


def params(store: Path, *extra: str, embedder: str | None = None) -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("LAYERSEARCH_CONFIG", None)
    env.pop("LAYERSEARCH_EMBEDDER", None)
    chosen = [] if embedder is None else ["--embedder", embedder]
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "layersearch", "--store", str(store), *chosen, "serve", *extra],
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


#: The Spider servers: name → (store, --embedder; None: the default install's choice).
SPIDER_SERVERS = {
    "default": ("dense", None),
    "lexical": ("lexical", "none"),
    "no_vectors": ("lexical_copy", None),
    # the MCP SDK's own round trip: a server whose search returns a fixed response of
    # ten hits, through the same tool class
    "floor": ("", None),
}


def floor_params() -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    return StdioServerParameters(
        command=sys.executable, args=[str(Path(__file__).resolve()), "--floor-server"], env=env
    )


def floor_server() -> None:
    """An MCP server over stdio whose ``search`` returns the same ten compact hits."""
    from mcp.server.mcpserver import MCPServer

    from layersearch.server import _StrictTool
    from layersearch.types import Hit, SearchResponse

    hits = [
        Hit(kind="column", id=f"concert_singer.singer.Singer_ID{i}", score=0.02, description="id")
        for i in range(10)
    ]

    def search(question: str | None = None) -> SearchResponse:
        """The same hits for any question."""
        return SearchResponse(results=hits, warnings=[])

    # (this module's annotations are strings; the SDK reads them from the function)
    search.__annotations__ = {"question": str | None, "return": SearchResponse}

    tool = _StrictTool.from_function(search, structured_output=True)
    MCPServer("floor", tools=[tool]).run("stdio")


def spider_stores(tmp: Path) -> dict[str, Path]:
    """The Spider catalog loaded twice (not timed): embedded by the local model, and
    loaded without vectors (with a copy, so that no two servers share a store)."""
    import shutil

    from layersearch import Layersearch

    stores = {}
    for name, embedder in (("dense", "local"), ("lexical", "none")):
        path = tmp / name / "store.duckdb"
        with Layersearch(path, embedder=embedder) as ls:
            ls.load(SPIDER / "tables.json")
            if embedder != "none":
                ls.embed()
        stores[name] = path
    shutil.copytree(tmp / "lexical", tmp / "lexical_copy")
    stores["lexical_copy"] = tmp / "lexical_copy" / "store.duckdb"
    return stores


async def spider_main(questions: int) -> dict[str, Any]:
    """Each question asked of every server in turn (the order rotates per question), so
    the servers share the host's load; p50/p95/p99 per server and their ratios."""
    from contextlib import AsyncExitStack

    asked = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())][:questions]
    with tempfile.TemporaryDirectory(prefix="ls-bench-") as tmp:
        stores = spider_stores(Path(tmp))
        with (Path(tmp) / "stderr.log").open("w") as errlog:
            async with AsyncExitStack() as stack:
                clients = {}
                for name, (store, embedder) in SPIDER_SERVERS.items():
                    server = (
                        floor_params()
                        if name == "floor"
                        else params(stores[store], embedder=embedder)
                    )
                    clients[name] = await stack.enter_async_context(
                        Client(stdio_client(server, errlog=errlog))
                    )
                    await clients[name].list_tools()
                names = list(clients)
                warnings: dict[str, set[str]] = {n: set() for n in names}
                for name in names:  # warm-up: every server answers a first question
                    for q in ("warm up", "how many singers are there"):
                        await clients[name].call_tool("search", {"question": q})
                times: dict[str, list[float]] = {n: [] for n in names}
                for i, question in enumerate(asked):
                    turn = i % len(names)
                    for name in names[turn:] + names[:turn]:
                        t0 = time.perf_counter()
                        result = await clients[name].call_tool("search", {"question": question})
                        times[name].append(time.perf_counter() - t0)
                        assert not result.is_error, result.content
                        warnings[name].update((result.structured_content or {}).get("warnings", []))
            stderr = (Path(tmp) / "stderr.log").read_text()
    lexical = statistics.median(times["lexical"])
    return {
        "servers": {
            name: {
                "p50_ms": pct(ts, 0.50) * 1000,
                "p95_ms": pct(ts, 0.95) * 1000,
                "p99_ms": pct(ts, 0.99) * 1000,
                "over_lexical_p50": statistics.median(ts) / lexical,
                "warnings": sorted(warnings[name]),
            }
            for name, ts in times.items()
        },
        "questions": len(asked),
        "targets_p50_ms": {"default": 6, "lexical": 3, "no_vectors": 6, "floor": None},
        "server_stderr": stderr[-2000:],
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1m": os.getloadavg()[0],
        },
    }


#: --overhead: the steps of one call, outermost first (label, what it times)
OVERHEAD_STEPS = (
    ("SDK: request in, response out (outside the tool)", "call"),
    ("tool: argument checks and validation, result to JSON", "tool"),
    ("server: worker thread, budget, request, content check", "limiter"),
    ("search (Layersearch.search)", "search"),
)


async def overhead_main(questions: int) -> dict[str, Any]:
    """Per call of the lexical Spider server in this process, p50 of each step's own
    time (a step's time less the next one's), beside the ``floor`` server's call. The
    requests skip the Python client's check of each result against the output schema
    (as ``local_embedder.py`` does): a cost of this client, not of the server."""
    from contextlib import AsyncExitStack
    from functools import wraps

    from mcp import types
    from mcp.server.mcpserver import MCPServer

    import layersearch.calls as calls
    import layersearch.server as server_mod
    from layersearch import Layersearch
    from layersearch.types import Hit, SearchResponse

    asked = [q["question"] for q in json.loads((SPIDER / "dev.json").read_text())]
    spans: dict[str, list[float]] = {key: [] for _, key in OVERHEAD_STEPS}

    floor_tools: list[Any] = []

    def timed(key: str, fn: Any) -> Any:
        @wraps(fn)
        async def run(*a: Any, **k: Any) -> Any:
            if a and a[0] in floor_tools:  # the floor server's tool: not ours
                return await fn(*a, **k)
            t0 = time.perf_counter()
            try:
                return await fn(*a, **k)
            finally:
                spans[key].append(time.perf_counter() - t0)

        return run

    def floor() -> MCPServer[Any]:
        hits = [
            Hit(kind="column", id=f"db.t.c{i}", score=0.02, description="id") for i in range(10)
        ]

        def search(question: str | None = None) -> SearchResponse:
            """The same hits for any question."""
            return SearchResponse(results=hits, warnings=[])

        search.__annotations__ = {"question": str | None, "return": SearchResponse}
        tool = server_mod._StrictTool.from_function(search, structured_output=True)
        floor_tools.append(tool)
        return MCPServer("floor", tools=[tool])

    async def call(client: Any, question: str) -> None:
        params = types.CallToolRequestParams(name="search", arguments={"question": question})
        result = await client.session.send_request(
            types.CallToolRequest(params=params), types.CallToolResult
        )
        assert not result.is_error, result.content

    with tempfile.TemporaryDirectory(prefix="ls-bench-") as tmp:
        ls = Layersearch(Path(tmp) / "store.duckdb", embedder="none")
        ls.load(SPIDER / "tables.json")
        ls.warm()
        search = ls.search

        def inner(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return search(*a, **k)
            finally:
                spans["search"].append(time.perf_counter() - t0)

        ls.search = inner  # type: ignore[method-assign]
        run_tool, run_limited = server_mod._StrictTool.run, calls.CallLimiter.run
        server_mod._StrictTool.run = timed("tool", run_tool)  # type: ignore[method-assign]
        calls.CallLimiter.run = timed("limiter", run_limited)  # type: ignore[method-assign]
        floor_ms: list[float] = []
        try:
            async with AsyncExitStack() as stack:
                ours = await stack.enter_async_context(Client(server_mod.create_server(api=ls)))
                fixed = await stack.enter_async_context(Client(floor()))
                for q in asked[:20]:
                    await call(ours, q)
                    await call(fixed, q)
                for values in spans.values():
                    values.clear()
                for q in asked[20 : 20 + questions]:
                    t0 = time.perf_counter()
                    await call(ours, q)
                    spans["call"].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await call(fixed, q)
                    floor_ms.append((time.perf_counter() - t0) * 1000)
        finally:
            server_mod._StrictTool.run = run_tool  # type: ignore[method-assign]
            calls.CallLimiter.run = run_limited  # type: ignore[method-assign]
            ls.close()
    keys = [key for _, key in OVERHEAD_STEPS]
    own: dict[str, float] = {}
    for outer, nested in zip(keys, keys[1:] + [None], strict=True):
        mine = (
            spans[outer]
            if nested is None
            else [a - b for a, b in zip(spans[outer], spans[nested], strict=True)]
        )
        own[outer] = statistics.median(mine) * 1000
    return {
        "steps_p50_ms": {label: own[key] for label, key in OVERHEAD_STEPS},
        "call_p50_ms": statistics.median(spans["call"]) * 1000,
        "server_beyond_search_p50_ms": statistics.median(
            [a - b for a, b in zip(spans["call"], spans["search"], strict=True)]
        )
        * 1000,
        "floor_call_p50_ms": statistics.median(floor_ms),
        "questions": len(spans["call"]),
        "load_average_1m": os.getloadavg()[0],
    }


def overhead_report(result: dict[str, Any]) -> str:
    lines = [f"{'step of a call (lexical Spider server, in process)':<56} {'p50 ms':>7}"]
    lines += [f"{label:<56} {ms:>7.3f}" for label, ms in result["steps_p50_ms"].items()]
    lines.append(
        f"call p50 {result['call_p50_ms']:.2f} ms; the server beyond its search "
        f"{result['server_beyond_search_p50_ms']:.2f} ms; floor server's call "
        f"{result['floor_call_p50_ms']:.2f} ms ({result['questions']} questions, "
        f"load {result['load_average_1m']:.1f})"
    )
    return "\n".join(lines)


def spider_report(result: dict[str, Any]) -> str:
    lines = [f"{'server':<12} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'× lexical':>10} target"]
    lines.append("-" * 60)
    for name, r in result["servers"].items():
        target = result["targets_p50_ms"][name]
        lines.append(
            f"{name:<12} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['p99_ms']:>8.2f} "
            f"{r['over_lexical_p50']:>10.2f} " + (f"≤ {target} ms" if target else "(no search)")
        )
    lines.append(
        f"({result['questions']} Spider dev questions per server, one after the other; "
        f"load {result['machine']['load_average_1m']:.1f})"
    )
    return "\n".join(lines)


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
    ap.add_argument("--spider", action="store_true", help="The three Spider servers instead.")
    ap.add_argument("--overhead", action="store_true", help="The server's steps, in process.")
    ap.add_argument("--questions", type=int, default=300, help="Spider questions per server.")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.floor_server:
        floor_server()
        sys.exit(0)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True)
    if ns.overhead:
        overhead = anyio.run(overhead_main, ns.questions)
        out_path = ns.out or ROOT / "benchmarks" / "results" / "mcp_overhead.json"
        out_path.write_text(json.dumps(overhead, indent=2) + "\n")
        print(overhead_report(overhead))
        print(f"wrote {out_path}")
        sys.exit(0)
    if ns.spider:
        spider = anyio.run(spider_main, ns.questions)
        out_path = ns.out or SPIDER_RESULTS
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(spider, indent=2) + "\n")
        print(spider_report(spider))
        print(f"wrote {out_path}")
        sys.exit(0)
    out = anyio.run(main, ns.starts, ns.calls)
    out_path = ns.out or RESULTS
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2) + "\n")
    print(report(out))
    print(f"wrote {out_path}")
