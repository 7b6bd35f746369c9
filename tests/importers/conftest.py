"""Locating the shared real data and this branch's small fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "importers"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
