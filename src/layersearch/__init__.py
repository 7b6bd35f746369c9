"""layersearch: the search layer analytics agents call before they write a query.

    from layersearch import Layersearch, SearchRequest
    ls = Layersearch("./.layersearch/store.duckdb")
    ls.load("models/")
    ls.search(question="monthly revenue by store")

Names are imported lazily so that ``import layersearch`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Layersearch": "layersearch.api",
    "SearchRequest": "layersearch.types",
    "SearchResponse": "layersearch.types",
    "Hit": "layersearch.types",
    "ChannelScore": "layersearch.types",
    "Memory": "layersearch.types",
    "EntityInfo": "layersearch.types",
    "InspectResponse": "layersearch.types",
    "LoadReport": "layersearch.types",
    "LayersearchError": "layersearch.errors",
    "ConfigError": "layersearch.errors",
    "LimitExceeded": "layersearch.errors",
    "NotFound": "layersearch.errors",
    "ModelLoadError": "layersearch.errors",
    "ImportFailed": "layersearch.errors",
    "CypherError": "layersearch.errors",
    "CypherSyntaxError": "layersearch.errors",
    "CypherReadOnlyError": "layersearch.errors",
    "CypherUnknownError": "layersearch.errors",
    "CypherReturnError": "layersearch.errors",
    "CypherLimitError": "layersearch.errors",
    "EmbeddingUnavailable": "layersearch.errors",
    "ModelMismatch": "layersearch.errors",
    "StoreError": "layersearch.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:
    from layersearch.api import Layersearch
    from layersearch.errors import (
        ConfigError,
        CypherError,
        CypherLimitError,
        CypherReadOnlyError,
        CypherReturnError,
        CypherSyntaxError,
        CypherUnknownError,
        EmbeddingUnavailable,
        ImportFailed,
        LayersearchError,
        LimitExceeded,
        ModelLoadError,
        ModelMismatch,
        NotFound,
        StoreError,
    )
    from layersearch.types import (
        ChannelScore,
        EntityInfo,
        Hit,
        InspectResponse,
        LoadReport,
        Memory,
        SearchRequest,
        SearchResponse,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'layersearch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
