"""The wire contract in one place: every model that crosses the API/MCP boundary is
defined in layersearch.types, the old import paths name the same classes, and the
server takes them from there."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import layersearch.types as wire
from layersearch.corpora.conversations import search as conversations_search
from layersearch.corpora.vault import search as vault_search

SRC = Path(wire.__file__).resolve().parent

CONVERSATION_MODELS = (
    "ConversationHit",
    "ConversationSearchResult",
    "SemanticHit",
    "SemanticSearchResult",
    "SummaryHit",
    "SummarySearchResult",
    "MessageHit",
    "MessageSearchResult",
)
VAULT_MODELS = ("VaultHit", "NoteDetail", "VaultIndexReport")


def test_wire_models_are_defined_in_types_and_reexported() -> None:
    for module, names in (
        (conversations_search, CONVERSATION_MODELS),
        (vault_search, VAULT_MODELS),
    ):
        for name in names:
            model = getattr(wire, name)
            assert model.__module__ == "layersearch.types", name
            assert getattr(module, name) is model, f"{module.__name__}.{name}"


def test_the_forget_result_and_search_arguments_are_wire_types_too() -> None:
    import layersearch.server as server

    assert server.ForgetResult is wire.ForgetResult
    assert wire.ForgetResult.__module__ == "layersearch.types"
    assert wire.ChannelsArg.__metadata__[0].description.startswith("Restrict ranking")


def test_channel_lists_schema_and_requests_take_the_three() -> None:
    assert set(get_args(wire.Channel)) == {"bm25", "fulltext", "schema", "vector"}
    assert wire.CHANNELS == get_args(wire.RequestChannel) == ("bm25", "fulltext", "vector")


def test_the_server_takes_wire_models_from_types_only() -> None:
    tree = ast.parse((SRC / "server.py").read_text())
    sources = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("layersearch")
    }
    assert not any(s.startswith("layersearch.corpora") for s in sources), sorted(sources)
    assert "layersearch.types" in sources
