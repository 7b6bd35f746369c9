from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import MINI


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def api(tmp_path: Path) -> Iterator:
    from layersearch.api import Layersearch

    ls = Layersearch(tmp_path / "store.duckdb")
    ls.load(MINI)
    yield ls
    ls.close()
