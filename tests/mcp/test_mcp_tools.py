"""Every tool through the SDK's in-memory client: schemas, happy paths, errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from layersearch.config import Settings
from layersearch.server import create_server, tool_names
from layersearch.types import SearchRequest
from tests.support import MINI
from tests.support import call_tool as call
from tests.support import tool_error_text as error_text

pytestmark = pytest.mark.anyio

SEARCH_INPUTS = {
    "entities",
    "query",
    "question",
    "datasource",
    "max_results",
    "compact",
    "cypher_filter",
    "params",
    "explain",
    "channels",
    "max_entities",
    "max_memories",
    "max_example_queries",
    "scope",
    "max_per_source",
    "tags",
    "status",
    "role",
}


# -- schemas ----------------------------------------------------------------------------------


async def test_tools_listed_with_typed_schemas(api: Any) -> None:
    async with Client(create_server(api=api)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert (
        sorted(tools)
        == sorted(tool_names())
        == [
            "describe_model",
            "forget_memory",
            "inspect",
            "list_datasources",
            "list_measures",
            "list_memories",
            "list_models",
            "save_memory",
            "search",
            "search_conversations",
            "search_summaries",
            "semantic_search",
            "vault_get_note",
            "vault_search",
        ]
    )
    for tool in tools.values():
        assert tool.description and len(tool.description) > 150
        assert tool.output_schema is not None, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    search = tools["search"]
    assert set(search.input_schema["properties"]) == SEARCH_INPUTS
    assert set(search.input_schema["properties"]) == set(SearchRequest.model_fields)
    assert search.input_schema.get("required", []) == []
    assert set(search.output_schema["properties"]) == {
        "results",
        "warnings",
        "entities",
        "memories",
        "example_queries",
        "weak_match",
        "plan",
    }
    assert set(search.output_schema.get("required", [])) == {"results"}
    mr = search.input_schema["properties"]["max_results"]
    assert (mr["minimum"], mr["maximum"], mr["default"]) == (1, 100, 10)
    assert "BEFORE" in search.description and "inspect" in search.description
    assert tools["inspect"].input_schema["required"] == ["ids"]
    assert tools["save_memory"].input_schema["required"] == ["learning"]
    assert tools["forget_memory"].input_schema["required"] == ["memory_id"]
    assert search.annotations.read_only_hint is True
    assert tools["forget_memory"].annotations.destructive_hint is True


# -- search -----------------------------------------------------------------------------------


async def test_search_returns_what_the_api_returns(api: Any) -> None:
    args = {
        "question": "monthly revenue by store",
        "entities": ["orders.tax_paid"],
        "explain": True,
    }
    result = await call(api, "search", args)
    assert not result.is_error
    assert result.structured_content == api.search(**args).model_dump(mode="json")
    hits = result.structured_content["results"]
    assert hits[0]["explanation"]
    assert "shop.orders.tax_paid" in [h["id"] for h in hits]


async def test_search_every_input(api: Any) -> None:
    args = {
        "question": "revenue",
        "query": {"measures": ["total_revenue"]},
        "datasource": "shop",
        "max_results": 3,
        "compact": False,
        "channels": ["fulltext", "bm25"],
    }
    result = await call(api, "search", args)
    assert not result.is_error, result.content
    hits = result.structured_content["results"]
    assert 0 < len(hits) <= 3
    assert all(h["text"] for h in hits)
    assert all(h["id"].startswith(("shop", "memory:")) for h in hits)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"question": "x", "datasource": "nope"}, "known datasources: crm, shop"),
        ({"question": "x", "max_results": 0}, "greater than or equal to 1"),
        ({"question": "x", "max_results": 101}, "less than or equal to 100"),
        ({"question": "x", "channels": ["bogus"]}, "'bm25', 'fulltext' or 'vector'"),
        ({"entities": "shop.orders"}, "entities"),
        ({"question": "x" * 100_001}, "limit_exceeded"),
    ],
)
async def test_search_errors_say_how_to_fix(api: Any, args: dict[str, Any], expected: str) -> None:
    text = error_text(await call(api, "search", args))
    assert expected in text
    assert "Traceback" not in text


async def test_unresolved_entity_is_a_warning_not_an_error(api: Any) -> None:
    result = await call(api, "search", {"entities": ["orders.no_such_column"]})
    assert not result.is_error
    assert any("no_such_column" in w for w in result.structured_content["warnings"])


async def test_bad_cypher_filter_is_a_tool_error(api: Any) -> None:
    text = error_text(await call(api, "search", {"question": "x", "cypher_filter": "MATCH (n"}))
    assert "cypher" in text and "line 1, column" in text and "^" in text
    text = error_text(
        await call(api, "search", {"question": "x", "cypher_filter": "MATCH (n) DELETE n"})
    )
    assert "read-only" in text


# -- inspect ----------------------------------------------------------------------------------


async def test_inspect_batches_kinds(api: Any) -> None:
    ids = ["shop.orders", "shop.orders.net_revenue", "memory:1", "crm", "no.such.thing"]
    result = await call(api, "inspect", {"ids": ids})
    assert not result.is_error
    out = result.structured_content
    assert [e["id"] for e in out["entities"]] == ["shop.orders", "shop.orders.net_revenue", "crm"]
    assert [m["id"] for m in out["memories"]] == ["memory:1"]
    assert any("no.such.thing" in w for w in out["warnings"])
    orders = out["entities"][0]
    assert "shop.orders.tax_paid" in orders["children"]
    assert out == api.inspect(ids).model_dump(mode="json")


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["nothing.here"], "not_found"),
        ([], "at least 1 item"),
        ([f"x{i}" for i in range(201)], "at most 200 items"),
        (["memory:abc"], "not a memory id"),
    ],
)
async def test_inspect_errors(api: Any, ids: list[str], expected: str) -> None:
    assert expected in error_text(await call(api, "inspect", {"ids": ids}))


# -- memories ---------------------------------------------------------------------------------


async def test_save_search_inspect_forget(api: Any) -> None:
    async with Client(create_server(api=api)) as client:
        saved = await client.call_tool(
            "save_memory",
            {
                "learning": "Store 7 was closed for renovation in March; exclude it.",
                "entities": ["stores.store_name"],
                "description": "store 7 closure",
            },
        )
        assert not saved.is_error, saved.content
        memory = saved.structured_content
        assert memory["entities"] == ["shop.stores.store_name"]
        mid = memory["id"]
        found = await client.call_tool("search", {"entities": ["shop.stores.store_name"]})
        assert mid in [h["id"] for h in found.structured_content["results"]]
        gone = await client.call_tool("forget_memory", {"memory_id": mid.split(":")[1]})
        assert gone.structured_content == {"forgotten": mid}
        again = await client.call_tool("inspect", {"ids": [mid]})
        assert "not_found" in error_text(again)
        twice = await client.call_tool("forget_memory", {"memory_id": mid})
        assert "not_found" in error_text(twice)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"learning": "x", "entities": ["no_such_column_anywhere"]}, "cannot save the memory"),
        ({"learning": ""}, "at least 1 character"),
        ({"learning": "   "}, "non-empty learning text"),
        ({"learning": "x", "description": "d" * 501}, "at most 500 characters"),
        ({"entities": ["shop"]}, "learning"),
    ],
)
async def test_save_memory_errors(api: Any, args: dict[str, Any], expected: str) -> None:
    assert expected in error_text(await call(api, "save_memory", args))
    assert len(api.list_memories()) == 4  # nothing was saved


async def test_forget_memory_bad_id(api: Any) -> None:
    text = error_text(await call(api, "forget_memory", {"memory_id": "orders"}))
    assert "invalid_argument" in text and "memory:<number>" in text


# -- what never reaches the client ------------------------------------------------------------


async def test_internal_error_is_one_line_without_traceback(
    api: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(api, "search", boom)
    with caplog.at_level(logging.ERROR, logger="layersearch.server"):
        text = error_text(await call(api, "search", {"question": "x"}))
    assert "internal_error: RuntimeError" in text
    assert "secret internal detail" not in text and "Traceback" not in text
    logged = [r for r in caplog.records if r.name == "layersearch.server"]
    assert logged and logged[0].exc_info is not None


async def test_unknown_tool_is_a_tool_error(api: Any) -> None:
    assert "Unknown tool" in error_text(await call(api, "no_such_tool", {}))


# -- the factory opens its own store ----------------------------------------------------------


async def test_factory_loads_models_into_an_empty_store_once(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "s.duckdb"), models=MINI, embedder="none")
    for _ in range(2):
        async with Client(create_server(settings)) as client:
            result = await client.call_tool("inspect", {"ids": ["memory:4", "memory:5"]})
            assert not result.is_error, result.content
            assert [m["id"] for m in result.structured_content["memories"]] == ["memory:4"]


async def test_a_store_that_cannot_open_is_reported_by_every_tool(tmp_path: Path) -> None:
    bad = tmp_path / "models"
    bad.mkdir()
    (bad / "broken.yaml").write_text("name: [unclosed\n")
    settings = Settings(store=str(tmp_path / "s.duckdb"), models=bad, embedder="none")
    async with Client(create_server(settings)) as client:
        assert len((await client.list_tools()).tools) == len(tool_names())
        text = error_text(await client.call_tool("search", {"question": "x"}))
    assert "broken.yaml" in text
