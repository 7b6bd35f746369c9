"""The HTTP transport's small rules (issue 42), without a server: the bearer scheme in any
case; a client's disconnect logged as one line; credentials masked in the server log.
``test_mcp_transports.py`` checks the same through a running server."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
from starlette.requests import ClientDisconnect

from layersearch.errors import register_secrets
from layersearch.httpauth import BearerAuth
from layersearch.logfilter import LogHygiene

pytestmark = pytest.mark.anyio

TOKEN = "tok-0123456789"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _status(authorization: bytes | None) -> int:
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [] if authorization is None else [(b"authorization", authorization)]
    await BearerAuth(app, TOKEN)({"type": "http", "headers": headers}, None, send)
    return 200 if reached else int(sent[0]["status"])


@pytest.mark.parametrize(
    "header, status",
    [
        (b"Bearer " + TOKEN.encode(), 200),
        (b"bearer " + TOKEN.encode(), 200),  # the reported case
        (b"BEARER " + TOKEN.encode(), 200),
        (b"Bearer   " + TOKEN.encode(), 200),  # one or more spaces
        (b"Bearer " + TOKEN.upper().encode(), 401),  # the token itself is exact
        (b"Basic " + TOKEN.encode(), 401),
        (b"Bearer" + TOKEN.encode(), 401),
        (b"Bearer", 401),
        (TOKEN.encode(), 401),
        (None, 401),
    ],
)
async def test_bearer_scheme_in_any_case(header: bytes | None, status: int) -> None:
    assert await _status(header) == status


def _record(msg: str, *args: Any, exc: BaseException | None = None) -> logging.LogRecord:
    info = None
    if exc is not None:
        try:
            raise exc
        except BaseException:  # noqa: BLE001 - captured for the record
            info = sys.exc_info()
    return logging.LogRecord(
        "mcp.server.streamable_http", logging.ERROR, __file__, 1, msg, args, info
    )


def test_a_client_disconnect_is_one_warning_line() -> None:
    record = _record("Error handling POST request", exc=ClientDisconnect())
    assert LogHygiene().filter(record)
    text = logging.Formatter("%(levelname)s %(message)s").format(record)
    assert text == (
        "WARNING client disconnected before its request was read (Error handling POST "
        "request); nothing answered"
    )
    # raised from another exception (anyio's cancellation wraps it): the same
    try:
        try:
            raise ClientDisconnect()
        except ClientDisconnect as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        wrapped = _record("SSE response error", exc=outer)
    LogHygiene().filter(wrapped)
    assert "Traceback" not in logging.Formatter().format(wrapped)


def test_credentials_are_masked_in_messages_and_tracebacks() -> None:
    address = "postgresql://alice:S3cretLogPW@[::1:bad/db"
    register_secrets(address)
    record = _record("could not open %s", address, exc=ValueError('bad token "S3cretLogPW"'))
    assert LogHygiene().filter(record)
    text = logging.Formatter().format(record)
    assert "S3cretLogPW" not in text
    assert "postgresql://alice:***@[::1:bad/db" in text and "Traceback" in text
