"""The vault tools through the SDK's in-memory client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch import Layersearch
from layersearch.server import create_server
from tests.support import ROOT

pytestmark = pytest.mark.anyio
VAULT = ROOT / "fixtures" / "vault"


@pytest.fixture
def vault_api(tmp_path: Path) -> Any:
    ls = Layersearch(tmp_path / "s.duckdb", embedder="fake")
    ls.vault.index(VAULT)
    yield ls
    ls.close()


async def test_vault_search_and_get(vault_api: Any) -> None:
    direct = vault_api.vault.search("how do we define churn", limit=3)
    async with Client(create_server(api=vault_api)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools["vault_search"].input_schema["properties"]) == {
            "query",
            "tags",
            "domain",
            "status",
            "note_type",
            "date_range",
            "limit",
        }
        res = await client.call_tool(
            "vault_search", {"query": "how do we define churn", "limit": 3}
        )
        assert not res.is_error
        hits = res.structured_content["result"]
        assert [h["slug"] for h in hits] == [h.slug for h in direct]
        assert set(hits[0]) == {"slug", "title", "path", "score"}
        note = await client.call_tool("vault_get_note", {"slug": hits[0]["slug"]})
        assert not note.is_error and note.structured_content["body"]
        bad = await client.call_tool("vault_get_note", {"slug": "../etc/passwd"})
        assert bad.is_error and "Traceback" not in bad.content[0].text
        missing = await client.call_tool("vault_get_note", {"slug": "no/such/note"})
        assert missing.is_error and "no note with slug" in missing.content[0].text
        bad_date = await client.call_tool(
            "vault_search", {"query": "x", "date_range": {"start": "last tuesday"}}
        )
        assert bad_date.is_error and "YYYY-MM-DD" in bad_date.content[0].text


async def test_vault_search_without_embedder_is_a_tool_error(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.vault.index(VAULT)
    async with Client(create_server(api=ls)) as client:
        res = await client.call_tool("vault_search", {"query": "churn"})
    assert res.is_error and "embedder" in res.content[0].text
    ls.close()
