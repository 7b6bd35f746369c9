"""The conversation tools: their markdown contract is the text content, exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch import Layersearch
from layersearch.server import create_server
from tests.support import ROOT

pytestmark = pytest.mark.anyio
FIXTURES = ROOT / "fixtures" / "conversations"


@pytest.fixture
def conv_api(tmp_path: Path) -> Any:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="fake")
    ls.conversations.import_path(FIXTURES)
    ls.conversations.import_summaries(FIXTURES / "summaries.jsonl")
    ls.conversations.embed()
    yield ls
    ls.close()


async def test_contracts_are_the_text_content(conv_api: Any) -> None:
    conv = conv_api.conversations
    calls = [
        ("search_conversations", {"term": "mrr"}, conv.search_conversations("mrr")),
        ("search_conversations", {"term": "zzz"}, conv.search_conversations("zzz")),
        (
            "search_conversations",
            {"term": "", "role": "user", "limit": 3},
            conv.search_conversations("", limit=3, role="user"),
        ),
        ("semantic_search", {"query": "churn", "limit": 3}, conv.semantic_search("churn", limit=3)),
        (
            "search_summaries",
            {"query": "metrics", "extract": "decisions"},
            conv.search_summaries("metrics", extract="decisions"),
        ),
    ]
    async with Client(create_server(api=conv_api)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("search_conversations", "semantic_search", "search_summaries"):
            assert tools[name].output_schema is not None
        for tool, args, direct in calls:
            res = await client.call_tool(tool, args)
            assert not res.is_error, res.content
            assert res.content[0].text == direct.markdown
            assert res.structured_content["markdown"] == direct.markdown
    assert calls[1][2].markdown == "No conversations found containing 'zzz'"


async def test_errors_say_how_to_fix(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.conversations.import_path(FIXTURES)
    async with Client(create_server(api=ls)) as client:
        res = await client.call_tool("semantic_search", {"query": "churn"})
        assert res.is_error and "embedding unavailable:" in res.content[0].text
        res = await client.call_tool("search_summaries", {"query": "x", "importance": "huge"})
        assert res.is_error and "breakthrough" in res.content[0].text
        res = await client.call_tool("search_summaries", {"query": "x", "domain": "a;drop"})
        assert res.is_error and "Traceback" not in res.content[0].text
    ls.close()
