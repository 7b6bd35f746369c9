"""Locating the shared real data and this branch's small fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "importers"


def shared_data() -> Path | None:
    env = os.environ.get("LAYERSEARCH_SHARED_DATA")
    candidates = [Path(env)] if env else []
    # The repo may be a checkout beside shared/ or a worktree one level deeper.
    candidates += [REPO / ".." / "shared" / "data", REPO / ".." / ".." / "shared" / "data"]
    return next((c.resolve() for c in candidates if c.is_dir()), None)


@pytest.fixture
def data_dir() -> Path:
    found = shared_data()
    if found is None:
        pytest.skip("shared real data not found (set LAYERSEARCH_SHARED_DATA)")
    return found


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
