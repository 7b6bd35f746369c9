"""Misnamed arguments answered with the name meant, and compact output: hits without
empty fields, JSON text on one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from layersearch.server_args import flat_json, meant
from tests.support import call_tool as call
from tests.support import tool_error_text as error_text

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("search", {"query": "revenue by store"}, "did you mean 'question'?"),
        (
            "search",
            {"question": "revenue", "limit": 3},
            "unknown argument 'limit'; did you mean 'max_results'?",
        ),
        ("search", {"q": "revenue"}, "unknown argument 'q'; did you mean 'question'?"),
        (
            "search_conversations",
            {"query": "churn"},
            "unknown argument 'query'; did you mean 'term'?",
        ),
        ("search_conversations", {"term": "churn", "max_results": 3}, "did you mean 'limit'?"),
        (
            "vault_search",
            {"question": "churn"},
            "unknown argument 'question'; did you mean 'query'?",
        ),
        ("inspect", {"id": "shop.orders"}, "did you mean 'ids'?"),
        ("list_models", {"database": "shop"}, "did you mean 'datasource'?"),
    ],
)
async def test_misnamed_arguments_say_the_name_meant(
    api: Any, tool: str, args: dict[str, Any], expected: str
) -> None:
    text = error_text(await call(api, tool, args))
    assert expected in text, text
    assert "invalid_argument" in text


def test_meant_uses_the_tools_own_names() -> None:
    assert meant("limit", ["question", "max_results"]) == "max_results"
    assert meant("limit", ["term", "limit"]) is None  # the tool takes it: not misnamed
    assert meant("questoin", ["question", "entities"]) == "question"
    assert meant("zzz", ["question"]) is None


async def test_compact_hits_carry_no_empty_fields(api: Any) -> None:
    res = await call(api, "search", {"question": "revenue by store", "max_results": 3})
    assert not res.is_error
    for hit in res.structured_content["results"]:
        assert "text" not in hit and "explanation" not in hit
        assert None not in hit.values()
    text = res.content[0].text
    assert "\n" not in text and ": " not in text.split('"description"')[0]
    assert json.loads(text) == res.structured_content
    full = await call(api, "search", {"question": "revenue", "compact": False, "explain": True})
    assert all(h["text"] and h["explanation"] for h in full.structured_content["results"])


def test_flat_json_leaves_other_text_alone() -> None:
    assert flat_json('{\n  "a": [1, 2]\n}') == '{"a":[1,2]}'
    assert flat_json("| date | source |\n|---|---|") == "| date | source |\n|---|---|"
    assert flat_json("{\nnot json") == "{\nnot json"
