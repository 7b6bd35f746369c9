"""The vault tools through the SDK's in-memory client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch import Layersearch
from layersearch.config import Settings
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
            "mode",
            "explain",
        }
        assert tools["vault_search"].input_schema["properties"]["mode"]["enum"] == [
            "vector",
            "hybrid",
        ]
        res = await client.call_tool(
            "vault_search", {"query": "how do we define churn", "limit": 3}
        )
        assert not res.is_error
        hits = res.structured_content["result"]
        assert [h["slug"] for h in hits] == [h.slug for h in direct]
        assert set(hits[0]) == {"slug", "title", "path", "score"}
        # the text content: one JSON block per note, as before, and no warning
        assert [json.loads(c.text) for c in res.content] == hits
        hybrid = await client.call_tool(
            "vault_search", {"query": "how do we define churn", "limit": 3, "mode": "hybrid"}
        )
        fused = vault_api.vault.search("how do we define churn", limit=3, mode="hybrid")
        assert hybrid.structured_content["result"] == [h.model_dump() for h in fused]
        # explain: each note's channels and the stages that moved it, as the library's
        args = {"query": "how do we define churn", "limit": 5, "mode": "hybrid", "explain": True}
        told = await client.call_tool("vault_search", args)
        shown = vault_api.vault.search(**args)
        assert told.structured_content["result"] == [h.model_dump() for h in shown]
        assert any(h.get("stages") for h in told.structured_content["result"])
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


@pytest.mark.slow
async def test_vault_search_on_a_base_install_ranks_by_full_text(tmp_path: Path) -> None:
    """A server with no embedder (a base install): both modes rank by full text, the hits
    as always in structured content and one text block each, then one warning block."""
    with Layersearch(tmp_path / "s.duckdb", embedder="none") as ls:
        ls.vault.index(VAULT)
    settings = Settings(store=str(tmp_path / "s.duckdb"), embedder="none")
    async with Client(create_server(settings)) as client:
        for args in ({}, {"mode": "vector"}, {"mode": "hybrid"}):
            res = await client.call_tool("vault_search", {"query": "churn rate", **args})
            assert not res.is_error, res.content
            hits = res.structured_content["result"]
            assert hits[0]["slug"] == "Metrics/Churn rate"
            assert all(set(h) == {"slug", "title", "path", "score"} for h in hits)
            *blocks, last = [c.text for c in res.content]
            assert [json.loads(b) for b in blocks] == hits
            assert last == (
                "warning: embedding unavailable: no embedder configured; ranked by full "
                "text alone (score is the RRF score)"
            )
        bad = await client.call_tool("vault_search", {"query": "churn", "mode": "bm25"})
        assert bad.is_error and "'vector'" in bad.content[0].text
