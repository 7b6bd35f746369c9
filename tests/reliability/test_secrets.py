"""A PostgreSQL address's password never shows (issue 42): not in a CLI error, an MCP tool
error or the server log, for a malformed address (``[::1:bad``, a ``%zz`` escape, a port
that is no number) as for a well-formed one. The catalogue rows ``load.dsn-*`` and
``store.dsn-*`` check the API and ``load``; this file the store option, MCP and the log."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from layersearch.cli import main
from layersearch.config import Settings
from layersearch.errors import mask_address, mask_secrets, register_secrets
from layersearch.server import create_server
from tests.hostile.catalogue import BAD_DSNS, SECRET
from tests.support import cli_env, free_port, layersearch_cmd

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("name", sorted(BAD_DSNS))
@pytest.mark.parametrize("as_json", [False, True])
def test_cli_store_option_masks_the_password(name: str, as_json: bool) -> None:
    args = ["--store", BAD_DSNS[name], "search", "tax", *(["--json"] if as_json else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    text = result.stdout + result.stderr
    assert SECRET not in text, text
    message = json.loads(result.stdout)["error"]["message"] if as_json else result.stderr
    assert "alice:***@" in message or "password=***" in message, message


@pytest.mark.parametrize("name", sorted(BAD_DSNS))
async def test_mcp_tool_errors_and_the_log_mask_the_password(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = create_server(Settings(store=BAD_DSNS[name]))
    async with Client(server) as client:
        result = await client.call_tool("search", {"question": "tax"})
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error and "store_error: cannot connect to" in text, text
    assert SECRET not in text and "***" in text, text
    formatter = logging.Formatter("%(message)s")
    logged = "\n".join(formatter.format(r) for r in caplog.records)
    assert "could not open the store" in logged
    assert SECRET not in logged, logged


@pytest.mark.slow
def test_the_server_log_masks_the_password(tmp_path: Path) -> None:
    """``serve --http`` over a malformed address: the store fails to open in the server's
    opening thread, every call says so, and the log on stderr holds no password."""
    port = free_port()
    proc = subprocess.Popen(
        layersearch_cmd("--store", BAD_DSNS["percent-zz"], "-v", "serve", "--http")
        + ["--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        time.sleep(6)  # the opening thread fails at once; give the log time to say so
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert "could not open the store" in err, err[-2000:]
    assert SECRET not in out + err, err[-2000:]


@pytest.mark.parametrize(
    "address, shown",
    [
        ("postgresql://alice:S3cretPW@[::1:bad/db", "postgresql://alice:***@[::1:bad/db"),
        ("postgresql://alice:S3cr%zzPW@localhost/db", "postgresql://alice:***@localhost/db"),
        ("postgres://u:p@ss:w0rd@h:5432/d", "postgres://u:***@h:5432/d"),
        ("postgresql://alice@h/db", "postgresql://alice@h/db"),
        (
            "postgresql://h/db?sslmode=require&password=S3cretPW",
            "postgresql://h/db?sslmode=require&password=***",
        ),
    ],
)
def test_mask_address(address: str, shown: str) -> None:
    assert mask_secrets(mask_address(address)) == shown


def test_a_registered_password_is_masked_wherever_it_is_repeated() -> None:
    register_secrets("host=db user=bob password='Tr0ub4dor&3 x' dbname=a")
    register_secrets("postgresql://carol:Zz%41zzy9@h/db")
    for text, leaked in [
        ('invalid token: "Tr0ub4dor&3 x"', "Tr0ub4dor"),
        ("connection to h failed for password Zz%41zzy9", "Zz%41zzy9"),
        ("decoded: ZzAzzy9.", "ZzAzzy9"),
    ]:
        assert leaked not in mask_secrets(text), text
    assert mask_secrets("postgresql and Zz%41zzy9x") == "postgresql and Zz%41zzy9x"  # a word part
