"""The server as a client meets it: a real stdio subprocess and a real streamable-HTTP server."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from layersearch.server import tool_names
from tests.support import MINI, cli_env, free_port, layersearch_cmd, wait_for_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "test-token-123"

SEARCHES: list[dict[str, Any]] = [
    {"question": "monthly revenue by store"},
    {"question": "tax", "explain": True},
    {"entities": ["orders.order_total"], "question": "tax"},
    {"entities": ["shop.orders.net_revenue"]},
    {"question": "pipeline value of deals", "datasource": "crm"},
    {"query": {"measures": ["total_revenue"]}, "max_results": 3},
    {"question": "customers by country", "compact": False},
    {"entities": ["stores"], "channels": ["bm25"]},
    {"question": "order status returned", "max_results": 20},
    {"question": "store opened", "channels": ["fulltext"]},
]


async def test_stdio_subprocess_speaks_only_json_rpc_on_stdout(tmp_path: Path) -> None:
    # tee keeps a copy of everything the server writes on stdout while the SDK client reads it.
    log = tmp_path / "stdout.log"
    cmd = shlex.join(
        layersearch_cmd("--store", str(tmp_path / "s.duckdb"), "-v", "serve", "--models", str(MINI))
    )
    params = StdioServerParameters(
        command="sh", args=["-c", f"{cmd} | tee {shlex.quote(str(log))}"], env=cli_env()
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        from mcp.client.stdio import stdio_client

        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == tool_names()
            result = await client.call_tool("search", {"question": "tax", "max_results": 3})
            assert not result.is_error, result.content
            top = [h["id"] for h in result.structured_content["results"][:2]]
            assert "shop.orders.tax_paid" in top, top
            bad = await client.call_tool("search", {"question": "x", "datasource": "nope"})
            assert bad.is_error
    lines = log.read_text().splitlines()
    assert len(lines) >= 3
    for line in lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
    # -v logged to stderr, and none of it leaked onto stdout.
    assert "loaded" in (tmp_path / "stderr.log").read_text()


@pytest.fixture(scope="module")
def http_server(http_served: tuple[str, Path]) -> str:
    return http_served[0]


@pytest.fixture(scope="module")
def http_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server's URL and the file its stderr (the server log) goes to."""
    tmp = tmp_path_factory.mktemp("http")
    port = free_port()
    args = ("--store", str(tmp / "s.duckdb"), "serve", "--http", "--port", str(port))
    errlog = (tmp / "stderr.log").open("w")
    proc = subprocess.Popen(
        layersearch_cmd(*args, "--models", str(MINI), "--token", TOKEN),
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=errlog,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", tmp / "stderr.log"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        errlog.close()


def http_client(url: str, token: str | None = TOKEN) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
    return Client(streamable_http_client(url, http_client=http))


def test_http_requires_the_token(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx.post(http_server, json=body, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_bearer_scheme_is_case_insensitive(http_server: str) -> None:
    # issue 42: "bearer" and "BEARER" were refused (RFC 7235: the scheme is case-insensitive)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    for auth in ("bearer " + TOKEN, "BEARER " + TOKEN, "Bearer  " + TOKEN, "bEaReR " + TOKEN):
        response = httpx.post(
            http_server, json=body, headers={**accept, "Authorization": auth}, timeout=10
        )
        assert response.status_code != 401, auth
    for auth in ("Basic " + TOKEN, "Bearer" + TOKEN, "Bearer " + TOKEN.upper(), TOKEN):
        response = httpx.post(
            http_server, json=body, headers={**accept, "Authorization": auth}, timeout=10
        )
        assert response.status_code == 401, auth


def test_a_client_that_disconnects_mid_request_is_one_log_line(
    http_served: tuple[str, Path],
) -> None:
    """issue 42: each disconnect logged a ClientDisconnect traceback."""
    import socket
    import time
    from urllib.parse import urlsplit

    url, log = http_served
    where = urlsplit(url)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    before = log.read_text()
    for partial in ('{"jsonrpc"', "", '{"jsonrpc": "2.0", "id": 1, "method": "tools/li'):
        with socket.create_connection((where.hostname, where.port)) as sock:
            sock.sendall(head.encode() + partial.encode())
            time.sleep(0.3)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        new = log.read_text()[len(before) :]
        if new.count("client disconnected before its request was read") >= 3:
            break
        time.sleep(0.2)
    lines = new.splitlines()
    assert len([ln for ln in lines if "client disconnected" in ln]) == 3, new
    assert "Traceback" not in new and "ClientDisconnect" not in new, new
    assert len(lines) == 3, new  # one line each, nothing else


async def test_http_lists_tools_and_searches(http_server: str) -> None:
    async with http_client(http_server) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == set(tool_names())
        result = await client.call_tool("inspect", {"ids": ["shop.orders", "memory:1"]})
        assert not result.is_error, result.content
        assert result.structured_content["entities"][0]["id"] == "shop.orders"


async def test_http_50_concurrent_searches_match_sequential(http_server: str) -> None:
    calls = [SEARCHES[i % len(SEARCHES)] for i in range(50)]
    async with http_client(http_server) as client:
        sequential = []
        for args in calls:
            result = await client.call_tool("search", args)
            assert not result.is_error, result.content
            sequential.append(result.structured_content)

        concurrent: list[Any] = [None] * len(calls)

        async def one(i: int, args: dict[str, Any]) -> None:
            result = await client.call_tool("search", args)
            assert not result.is_error, result.content
            concurrent[i] = result.structured_content

        async with anyio.create_task_group() as tg:
            for i, args in enumerate(calls):
                tg.start_soon(one, i, args)
    assert concurrent == sequential


def test_non_loopback_host_without_token_is_refused(tmp_path: Path) -> None:
    env = cli_env()
    proc = subprocess.run(
        layersearch_cmd(
            "--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--host", "0.0.0.0"
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a bearer token" in proc.stderr
    assert proc.stdout == ""


def test_bad_config_file_is_a_one_line_error(tmp_path: Path) -> None:
    cfg = tmp_path / "layersearch.toml"
    cfg.write_text('stor = "x"\n')
    proc = subprocess.run(
        layersearch_cmd("serve", "--config", str(cfg)),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "unknown key 'stor'" in proc.stderr
    assert proc.stdout == ""
