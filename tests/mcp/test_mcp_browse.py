"""The browsing tools through the SDK's in-memory client: listings, paging, filters,
describe_model's joins with keys, list_memories, and their errors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import call_tool as call
from tests.support import tool_error_text as error_text

pytestmark = pytest.mark.anyio


async def test_list_datasources_and_models(api: Any) -> None:
    res = await call(api, "list_datasources", {})
    assert not res.is_error
    assert [i["id"] for i in res.structured_content["items"]] == ["crm", "shop"]
    res = await call(api, "list_models", {"datasource": "shop"})
    page = res.structured_content
    assert [i["id"] for i in page["items"]] == ["shop.customers", "shop.orders", "shop.stores"]
    assert page["total"] == 3 and page["next_offset"] is None
    assert all(i["kind"] == "model" for i in page["items"])


async def test_list_measures_pages_and_filters(api: Any) -> None:
    first = (await call(api, "list_measures", {"limit": 2})).structured_content
    assert first["total"] == 4 and first["next_offset"] == 2 and len(first["items"]) == 2
    rest = (await call(api, "list_measures", {"offset": 2, "limit": 2})).structured_content
    assert rest["next_offset"] is None
    ids = [i["id"] for i in first["items"] + rest["items"]]
    assert ids == sorted(ids) and len(set(ids)) == 4
    aggs = (await call(api, "list_measures", {"kind": "aggregation"})).structured_content
    assert [i["id"] for i in aggs["items"]] == ["shop.orders.weighted_avg"]
    one = (await call(api, "list_measures", {"model": "crm.deals"})).structured_content
    assert [i["id"] for i in one["items"]] == ["crm.deals.pipeline_value"]
    assert one["items"][0]["formula"]


async def test_describe_model_has_columns_measures_and_join_keys(api: Any) -> None:
    res = await call(api, "describe_model", {"model": "shop.orders"})
    d = res.structured_content
    assert d["model"]["id"] == "shop.orders"
    assert "shop.orders.customer_id" in [c["id"] for c in d["dimensions"]]
    assert "shop.orders.total_revenue" in [m["id"] for m in d["measures"]]
    join = next(j for j in d["joins"] if j["target"] == "shop.customers")
    assert join["keys"] == [["shop.orders.customer_id", "shop.customers.id"]]
    # the joins other models declare to it are listed too
    back = (await call(api, "describe_model", {"model": "customers"})).structured_content
    assert any(j["source"] == "shop.orders" for j in back["joins"])


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("list_models", {"datasource": "shopp"}, "did you mean shop?"),
        ("list_measures", {"model": "shop.order"}, "did you mean shop.orders"),
        ("describe_model", {"model": "nothing_like_it"}, "list_models shows them"),
        ("list_models", {"limit": 0}, "limit"),
    ],
)
async def test_browse_errors_say_what_exists(
    api: Any, tool: str, args: dict[str, Any], expected: str
) -> None:
    assert expected in error_text(await call(api, tool, args))


async def test_list_memories_and_forget_points_at_it(api: Any) -> None:
    page = (await call(api, "list_memories", {"limit": 1})).structured_content
    assert page["total"] == len(api.list_memories(100)) and page["next_offset"] == 1
    newest = page["memories"][0]["id"]
    assert newest == api.list_memories(1)[0].id
    text = error_text(await call(api, "forget_memory", {"memory_id": "memory:9999"}))
    assert "list_memories" in text and "layersearch memory list" not in text
