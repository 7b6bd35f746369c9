"""Bearer-token authentication for the HTTP transport: ASGI middleware with no MCP in it."""

from __future__ import annotations

import hmac
from typing import Any

__all__ = ["BearerAuth"]


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``
    (the scheme in any case, RFC 7235; one or more spaces before the token)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, credentials = given.partition(b" ")
            ok = scheme.lower() == b"bearer" and hmac.compare_digest(
                credentials.lstrip(b" "), self._expected
            )
            if not ok:
                await _reject(send)
                return
        await self.app(scope, receive, send)


async def _reject(send: Any) -> None:
    body = b'{"error": "missing or wrong bearer token (Authorization: Bearer <token>)"}'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="layersearch"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
