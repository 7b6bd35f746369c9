"""Every MCP catalogue row through the SDK's in-memory client: the promised result, or a
tool error (``is_error``) carrying our error code and message (for input the schema
rejects, ``invalid_argument`` naming the argument, without pydantic's report); never a
protocol error or a traceback, and the store unchanged after an error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from layersearch import Layersearch
from layersearch.server import create_server, tool_names

from .catalogue import MCP_CASES, SECRET, Case, Err, Invalid, build_corpus_store, by_entry
from .snapshot import snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    path = tmp_path_factory.mktemp("mcp") / "store.duckdb"
    build_corpus_store(path)
    ls = Layersearch(path, embedder="fake")
    yield ls
    ls.close()


def check(case: Case, result: Any) -> None:
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert "Traceback" not in text and "internal_error" not in text, (case.id, text[:1000])
    assert SECRET not in text, case.id
    expect = case.expect
    if isinstance(expect, Err):
        assert result.is_error, (case.id, text[:500])
        assert f"{expect.error.code}: " in text, (case.id, text[:500])
        assert expect.match in text, (case.id, text[:500])
    elif isinstance(expect, Invalid):
        assert result.is_error, (case.id, text[:500])
        assert "invalid_argument: " in text and expect.argument in text, (case.id, text[:500])
        assert "errors.pydantic.dev" not in text, (case.id, text[:500])
    else:
        assert not result.is_error, (case.id, text[:500])
        if expect.check is not None:
            assert expect.check(result), (case.id, str(result.structured_content)[:500])


@pytest.mark.parametrize("case", by_entry("mcp", MCP_CASES), ids=lambda c: c.id)
async def test_mcp(corpus: Layersearch, case: Case) -> None:
    assert case.mcp is not None
    tool, args = case.mcp
    before = snapshot(corpus)
    # A protocol-level failure (McpError) raises here and fails the row.
    async with Client(create_server(api=corpus)) as client:
        result = await client.call_tool(tool, args)
    check(case, result)
    if not case.writes:
        assert snapshot(corpus) == before, f"{case.id} changed the store"


def test_every_tool_has_rows() -> None:
    tools = {c.mcp[0] for c in MCP_CASES if c.mcp is not None}
    assert tools == set(tool_names())
