from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ROOT, shared_data

FIXTURES = ROOT / "fixtures" / "conversations"


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
