from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import MINI, ROOT


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


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    for var in (
        "LAYERSEARCH_STORE",
        "LAYERSEARCH_CONFIG",
        "LAYERSEARCH_TOKEN",
        "LAYERSEARCH_DEBUG",
    ):
        env.pop(var, None)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listening on port {port} after {timeout}s")


def layersearch_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "layersearch", *args]


__all__ = ["MINI", "ROOT", "cli_env", "free_port", "layersearch_cmd", "wait_for_port"]
