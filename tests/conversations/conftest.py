from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "conversations"


def shared_data() -> Path:
    """LAYERSEARCH_SHARED_DATA, else ``shared/data`` beside the checkout (or beside the
    folder of worktrees that holds it)."""
    env = os.environ.get("LAYERSEARCH_SHARED_DATA")
    if env:
        return Path(env)
    candidates = [REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def chat_exports() -> Path:
    folder = shared_data() / "chat-exports"
    if not folder.is_dir():
        pytest.skip(f"shared chat export samples not found at {folder}")
    return folder


@pytest.fixture
def locomo_dir() -> Path:
    folder = shared_data() / "locomo"
    if not folder.is_dir():
        pytest.skip(f"shared LoCoMo data not found at {folder}")
    return folder
