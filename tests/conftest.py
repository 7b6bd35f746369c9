from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "fixtures" / "mini"
MODELS = ROOT / "models"


def shared_data() -> Path:
    env = os.environ.get("LAYERSEARCH_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_network_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never read the user's store or embedder configuration.
    monkeypatch.delenv("LAYERSEARCH_STORE", raising=False)
    monkeypatch.delenv("LAYERSEARCH_EMBEDDER", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def mini(tmp_path: Path) -> Iterator:
    from layersearch import Layersearch

    ls = Layersearch(tmp_path / "store.duckdb")
    ls.load(MINI)
    yield ls
    ls.close()
