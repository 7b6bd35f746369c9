"""The public surface and the weight of importing it."""

from __future__ import annotations

import json
import subprocess
import sys

import layersearch
from tests.support import ROOT

EXPECTED = {
    "__version__",
    "Layersearch",
    "SearchRequest",
    "SearchResponse",
    "Hit",
    "ChannelScore",
    "Memory",
    "EntityInfo",
    "InspectResponse",
    "LoadReport",
    "LayersearchError",
    "ConfigError",
    "LimitExceeded",
    "NotFound",
    "ModelLoadError",
    "ImportFailed",
    "CypherError",
    "CypherSyntaxError",
    "CypherReadOnlyError",
    "CypherUnknownError",
    "CypherReturnError",
    "CypherLimitError",
    "EmbeddingUnavailable",
    "ModelMismatch",
    "StoreError",
}


def test_exported_members() -> None:
    assert set(layersearch.__all__) == EXPECTED
    for name in layersearch.__all__:
        assert getattr(layersearch, name) is not None
    assert all(
        issubclass(getattr(layersearch, n), layersearch.LayersearchError)
        for n in EXPECTED
        if n.endswith("Error")
        or n
        in ("NotFound", "LimitExceeded", "EmbeddingUnavailable", "ModelMismatch", "ImportFailed")
    )


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "; import sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


HEAVY = {"mcp", "litellm", "duckdb", "torch", "onnxruntime", "tokenizers", "kuzu", "psycopg"}


def test_ranking_and_graph_stay_light() -> None:
    mods = _modules_after(
        "import layersearch.ranking.fusion, layersearch.ranking.bm25, "
        "layersearch.ranking.analyzer, layersearch.ranking.fulltext, layersearch.graph"
    )
    assert not (HEAVY & {m.split(".")[0] for m in mods})


def test_import_layersearch_is_light() -> None:
    mods = _modules_after("import layersearch")
    top = {m.split(".")[0] for m in mods}
    assert not (HEAVY | {"tantivy", "numpy", "pydantic", "rich", "click"}) & top
