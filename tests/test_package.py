"""The public surface and the weight of importing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import layersearch
from layersearch.corpora.entities.process import BLAS_THREAD_VARIABLES
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


@pytest.mark.slow
@pytest.mark.parametrize(("chosen", "expected"), [(None, 1), ("2", 2)])
def test_opening_a_store_runs_blas_on_one_thread_unless_chosen(
    tmp_path: Path, chosen: str | None, expected: int
) -> None:
    """A search's matrix products are small: BLAS's spinning workers only slow it, so a
    process that opens a store runs BLAS on one thread, unless the user chose a count."""
    pytest.importorskip("threadpoolctl")
    code = (
        "import json, numpy, threadpoolctl\n"
        "from layersearch import Layersearch\n"
        f"Layersearch({str(tmp_path / 's.duckdb')!r}).close()\n"
        "print(json.dumps(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info()"
        " if i['user_api'] == 'blas'})))"
    )
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    env["PYTHONPATH"] = str(ROOT / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    threads = json.loads(out.stdout)
    assert threads in ([expected], []), threads  # [] : numpy without a BLAS threadpoolctl knows


def test_the_cli_starts_without_the_garbage_collector_and_gets_it_back() -> None:
    """Importing the CLI pauses the cyclic collector (its imports make objects that live
    as long as the process) and a timer turns it back on after ``GC_PAUSE_S``; a process
    that turned it off itself keeps it off."""
    code = (
        "import gc, json, time\n"
        "import layersearch.cli as cli\n"
        "during = gc.isenabled()\n"
        "time.sleep(cli.GC_PAUSE_S + 1.0)\n"
        "print(json.dumps([during, gc.isenabled()]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, True]
    off = "import gc; gc.disable(); " + code.replace("\n", "; ").replace("; ;", ";")
    out = subprocess.run([sys.executable, "-c", off], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [False, False]
