"""The HTTP server under load (a short run of benchmarks/load.py) and its default bind address.

That a configured token is required is tested in tests/mcp/test_mcp_transports.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import MINI, ROOT, cli_env, free_port, layersearch_cmd, wait_for_port

pytestmark = pytest.mark.slow


def listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as the kernel lists them) of sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def test_http_binds_loopback_by_default(tmp_path: Path) -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc/net/tcp to read the bound address")
    port = free_port()
    args = ("--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--port", str(port))
    proc = subprocess.Popen(
        layersearch_cmd(*args, "--models", str(MINI)),
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        # 0100007F is 127.0.0.1 in /proc/net/tcp's little-endian hex.
        assert listening_addresses(port) == ["0100007F"]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.slow
def test_load_smoke_has_no_errors(tmp_path: Path) -> None:
    # 4 clients for 3 s of mixed search / save_memory over real HTTP on loopback.
    out = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load.py")]
        + ["--seconds", "3", "--clients", "4", "--out", str(out)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["errors"] == 0 and result["calls"] >= 8
    assert set(result["tools"]) == {"search", "save_memory"}
