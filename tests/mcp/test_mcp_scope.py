"""The MCP ``search`` tool's ``scope`` and ``inspect`` of scoped ids, through the SDK's
in-memory client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch import Layersearch
from layersearch.server import create_server
from tests.support import MINI, ROOT, VAULT

pytestmark = pytest.mark.anyio
CHATS = ROOT / "fixtures" / "conversations" / "generic" / "messages.jsonl"


@pytest.fixture
def scoped_api(tmp_path: Path) -> Any:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MINI)
    ls.conversations.import_path(CHATS)
    ls.vault.index(VAULT)
    yield ls
    ls.close()


async def test_search_scope_all_and_inspect(scoped_api: Any) -> None:
    args = {"question": "customers churn", "scope": "all", "max_per_source": 1, "explain": True}
    async with Client(create_server(api=scoped_api)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        props = tools["search"].input_schema["properties"]
        assert {"scope", "max_per_source", "tags", "status", "role"} <= set(props)
        res = await client.call_tool("search", args)
        assert not res.is_error, res.content
        assert res.structured_content == scoped_api.search(**args).model_dump(mode="json")
        hits = res.structured_content["results"]
        assert {h["source"] for h in hits} == {"semantic", "memory", "conversation", "vault"}
        shown = await client.call_tool("inspect", {"ids": [h["id"] for h in hits]})
        assert not shown.is_error, shown.content
        body = shown.structured_content
        assert len(body["conversations"]) == 1 and len(body["notes"]) == 1
        bad = await client.call_tool("search", {"question": "x", "scope": "nowhere"})
        assert bad.is_error and "unknown scope 'nowhere'" in bad.content[0].text


async def test_scoped_search_on_a_store_with_only_a_vault(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.vault.index(VAULT)
    async with Client(create_server(api=ls)) as client:
        res = await client.call_tool("search", {"question": "churn", "scope": "all"})
        plain = await client.call_tool("search", {"question": "churn"})
    ls.close()
    assert not res.is_error, res.content
    hits = res.structured_content["results"]
    assert hits and {h["source"] for h in hits} == {"vault"}
    assert any("semantic:" in w for w in res.structured_content["warnings"])
    assert plain.is_error and "empty" in plain.content[0].text  # unscoped: as before
