from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import VAULT

QUERIES = VAULT.parent / "vault_queries.jsonl"


@pytest.fixture(scope="session")
def vault() -> Path:
    return VAULT


def write_file(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


@pytest.fixture()
def write():  # type: ignore[no-untyped-def]
    """write(root, relative_path, text_or_bytes) -> Path"""
    return write_file
