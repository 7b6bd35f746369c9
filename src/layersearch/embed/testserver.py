"""A tiny OpenAI-compatible ``/v1/embeddings`` server backed by any embedder, and its
chat twin :class:`ChatServer` (``/v1/chat/completions``, answered by a function).

It lets the real litellm code path run offline: point
``make_embedder("litellm:openai/<name>", config={"api_base": url, "api_key": "x"})``
at it and the vectors come from the wrapped embedder. It can also misbehave on
purpose (a 429 for the first N requests, a 400 for batches containing given
inputs) so retry and fallback logic can be tested against real HTTP.

    with serve_embeddings(FakeEmbedder()) as base_url:
        ...

or from a shell: ``python -m layersearch.embed.testserver --embedder fake --port 8000``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, Self

import numpy as np

from layersearch.embed.base import Embedder

__all__ = ["ChatServer", "EmbeddingServer", "RequestRecord", "serve_chat", "serve_embeddings"]

log = logging.getLogger("layersearch.embed.testserver")


@dataclass
class RequestRecord:
    """One request the server received, for assertions in tests."""

    path: str
    inputs: list[str]
    status: int
    body: dict[str, Any] = field(default_factory=dict)


class _LocalServer(ABC):
    """What both servers share: a threaded HTTP server on ``host:port`` (0: any free
    port) that hands each POST to ``handle``, started on a daemon thread."""

    _thread_name = "layersearch-test-server"

    def __init__(self, host: str, port: int) -> None:
        self.requests: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> str:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=self._thread_name, daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @abstractmethod
    def handle(self, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        """Answer one POST: (HTTP status, JSON payload)."""


class EmbeddingServer(_LocalServer):
    """The server object; use :func:`serve_embeddings` unless you need ``requests``.

    ``fail_429`` answers that many first embedding requests with HTTP 429.
    ``reject_inputs`` answers HTTP 400 to any request containing one of them.
    ``max_batch`` answers HTTP 400 to requests with more inputs than that.
    ``api_key``, when set, must arrive as ``Authorization: Bearer <key>``.
    """

    _thread_name = "layersearch-embed-server"

    def __init__(
        self,
        embedder: Embedder,
        *,
        model_name: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
        fail_429: int = 0,
        reject_inputs: Collection[str] = (),
        max_batch: int | None = None,
        api_key: str | None = None,
    ) -> None:
        self.embedder = embedder
        self.model_name = model_name
        self.fail_429 = fail_429
        self.reject_inputs = set(reject_inputs)
        self.max_batch = max_batch
        self.api_key = api_key
        super().__init__(host, port)

    # The handler calls this; returns (status, payload).
    def handle(self, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            return 404, _error(f"no route {path}; POST /v1/embeddings", "not_found")
        if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, _error("invalid api key", "invalid_api_key")
        try:
            body = json.loads(raw or b"{}")
            inputs = _inputs(body.get("input"))
        except (ValueError, TypeError) as exc:
            return 400, _error(f"bad request: {exc}", "invalid_request_error")
        status, payload = self._answer(body, inputs)
        with self._lock:
            self.requests.append(RequestRecord(path, inputs, status, body))
        return status, payload

    def _answer(self, body: dict[str, Any], inputs: list[str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if self.fail_429 > 0:
                self.fail_429 -= 1
                return 429, _error("rate limited, slow down", "rate_limit_exceeded")
        if self.max_batch is not None and len(inputs) > self.max_batch:
            return 400, _error(
                f"batch of {len(inputs)} exceeds the limit of {self.max_batch}",
                "invalid_request_error",
            )
        bad = [text for text in inputs if text in self.reject_inputs]
        if bad:
            return 400, _error(f"input rejected: {bad[0][:40]!r}", "invalid_request_error")
        dims = body.get("dimensions")
        have = self.embedder.fingerprint.dimensions
        if dims is not None and dims != have:
            return 400, _error(
                f"this model has {have} dimensions, not {dims}", "invalid_request_error"
            )
        # The wrapped embedder applies its own document prefix; the server is a
        # transport and should not add a second one.
        vectors = self.embedder.embed_documents(inputs)
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": _encode(vec, as_base64),
            }
            for i, vec in enumerate(vectors)
        ]
        tokens = sum(len(text.split()) for text in inputs)
        return 200, {
            "object": "list",
            "data": data,
            "model": body.get("model") or self.model_name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _encode(vec: np.ndarray, as_base64: bool) -> Any:
    if as_base64:
        return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vec]


def _inputs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if not value:
            raise ValueError("input must not be empty")
        return list(value)
    raise ValueError("input must be a string or a list of strings (token arrays are not supported)")


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


class _Handles(Protocol):
    def handle(self, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]: ...


#: what a :class:`ChatServer` answers with: the reply's text, or an HTTP error status
ChatAnswer = Callable[[list[dict[str, Any]]], "str | int"]


class ChatServer(_LocalServer):
    """An OpenAI-compatible ``/v1/chat/completions`` server for tests: ``answer`` gets the
    request's messages and returns the reply's text, or an HTTP status (an int) to fail
    with. ``requests`` records every request (``inputs`` are the messages' contents).

        with ChatServer(lambda messages: '{"facts": []}') as server:
            ... server.base_url ...
    """

    _thread_name = "layersearch-chat-server"

    def __init__(
        self,
        answer: ChatAnswer,
        *,
        model_name: str = "fake-chat",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.answer = answer
        self.model_name = model_name
        super().__init__(host, port)

    @property
    def calls(self) -> int:
        """Chat requests received (answered or failed)."""
        with self._lock:
            return len(self.requests)

    def handle(self, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return 404, _error(f"no route {path}; POST /v1/chat/completions", "not_found")
        try:
            body = json.loads(raw or b"{}")
            messages = body["messages"]
            if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages
            ):
                raise ValueError("messages must be a list of {role, content}")
        except (ValueError, TypeError, KeyError) as exc:
            return 400, _error(f"bad request: {exc}", "invalid_request_error")
        reply = self.answer(messages)
        if isinstance(reply, int):
            status, payload = reply, _error(f"failing on purpose with {reply}", "server_error")
        else:
            status, payload = 200, _completion(reply, body.get("model") or self.model_name)
        with self._lock:
            self.requests.append(
                RequestRecord(path, [m["content"] for m in messages], status, body)
            )
        return status, payload


def _completion(text: str, model: str) -> dict[str, Any]:
    tokens = len(text.split())
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens},
    }


@contextlib.contextmanager
def serve_chat(answer: ChatAnswer, **options: Any) -> Iterator[ChatServer]:
    """Run a :class:`ChatServer` for the ``with`` block; yields the server."""
    server = ChatServer(answer, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _handler_for(server: _Handles) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                status, payload = server.handle(self.path, self.headers, raw)
            except Exception as exc:  # the server must answer, not hang the client
                log.exception("request failed")
                status, payload = 500, _error(f"server error: {exc}", "server_error")
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            if status == 429 or (status >= 500 and isinstance(server, ChatServer)):
                # The openai SDK under litellm obeys this header; without it the
                # SDK's own retries would hide the 429s (and a chat server's 5xx)
                # from the caller's backoff, which is what tests want to observe.
                self.send_header("x-should-retry", "false")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return Handler


@contextlib.contextmanager
def serve_embeddings(embedder: Embedder, **options: Any) -> Iterator[str]:
    """Run an :class:`EmbeddingServer` for the ``with`` block; yields its base URL."""
    server = EmbeddingServer(embedder, **options)
    try:
        yield server.start()
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    from layersearch.embed import make_embedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", default="fake", help="embedder spec, e.g. fake, local")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    server = EmbeddingServer(make_embedder(args.embedder), host=args.host, port=args.port)
    log.info("serving %s at %s", server.embedder.fingerprint.describe(), server.base_url)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
