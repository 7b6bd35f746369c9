from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import MINI, shared_data


@pytest.fixture
def data_dir() -> Path:
    """The shared real data; tests that need it skip with the reason when it is absent."""
    found = shared_data()
    if not found.is_dir():
        pytest.skip(f"shared real data not found at {found} (set LAYERSEARCH_SHARED_DATA)")
    return found


@pytest.fixture(autouse=True)
def _no_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never read the user's store or embedder configuration. The CLI and the MCP
    # server default to the local model when it is installed (it is, with [dev]); a test
    # gets the lexical channels unless it names an embedder or unsets this.
    monkeypatch.delenv("LAYERSEARCH_STORE", raising=False)
    monkeypatch.setenv("LAYERSEARCH_EMBEDDER", "none")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def mini(tmp_path: Path) -> Iterator:
    from layersearch import Layersearch

    ls = Layersearch(tmp_path / "store.duckdb")
    ls.load(MINI)
    yield ls
    ls.close()
