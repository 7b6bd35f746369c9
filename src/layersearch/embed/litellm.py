"""Embeddings through litellm: hosted APIs and local OpenAI-compatible servers.

``litellm`` is imported on first use (it is slow to import and an optional
extra). Inputs are truncated to ``max_input_chars`` characters (default 8000,
roughly the 8191-token limit of OpenAI's embedding models for English text;
lower it for models with 512-token windows), sent in batches of ``batch_size``,
retried with exponential backoff on rate limits, and, when a provider rejects a
whole batch, re-sent one document at a time so a single bad document cannot
fail the others. Vectors are L2-normalised here whatever the provider returns.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from layersearch.embed.base import ModelEmbedder, apply_prefix, l2_normalize
from layersearch.errors import ConfigError, EmbeddingUnavailable

__all__ = ["LiteLLMEmbedder", "DEFAULT_BATCH_SIZE", "DEFAULT_MAX_INPUT_CHARS"]

log = logging.getLogger("layersearch.embed.litellm")

DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_INPUT_CHARS = 8000
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_TRIES = 6
_PROBE_TEXT = "layersearch dimension probe"
# Status codes worth waiting for: rate limits and "overloaded, try later".
_RETRY_STATUS = {429, 503}
_REJECT_STATUS = {400, 413, 422}


class LiteLLMEmbedder(ModelEmbedder):
    """An :class:`~layersearch.embed.base.Embedder` over ``litellm.embedding``.

    ``model`` is a litellm model name including its route, e.g.
    ``openai/text-embedding-3-small`` or ``hosted_vllm/BAAI/bge-small-en``.
    ``dimensions``, when given, is both sent to the provider (for models that
    can shorten their output) and used as the fingerprint dimension without a
    network call; otherwise one probe string is embedded on first use.
    """

    provider = "litellm"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
        timeout: float = DEFAULT_TIMEOUT,
        max_tries: int = DEFAULT_MAX_TRIES,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError(
                "litellm embedder needs a model, e.g. litellm:openai/text-embedding-3-small"
            )
        _positive("batch_size", batch_size)
        _positive("max_input_chars", max_input_chars)
        _positive("timeout", timeout)
        _positive("max_tries", max_tries)
        if dimensions is not None:
            _positive("dimensions", dimensions)
        self.model = model.strip()
        self.api_base = api_base
        self.api_key = api_key
        self.dimensions = dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self.max_input_chars = max_input_chars
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self._sleep = sleep
        self._litellm: Any = None
        self._dims: int | None = dimensions

    # -- ModelEmbedder ------------------------------------------------------

    @property
    def model_name(self) -> str:
        return self.model

    def _dimensions(self) -> int:
        if self._dims is None:
            self._dims = int(self._embed_batch([_PROBE_TEXT], offset=0).shape[1])
        return self._dims

    def _embed_prepared(self, items: list[str]) -> np.ndarray:
        parts = [
            self._embed_batch(items[start : start + self.batch_size], offset=start)
            for start in range(0, len(items), self.batch_size)
        ]
        return np.vstack(parts)

    def _embed_one(self, item: str) -> np.ndarray:
        return self._embed_batch([item], offset=0)[0]

    # -- internals ---------------------------------------------------------

    def _prepare(self, text: str, prefix: str) -> str:
        text = apply_prefix(text, prefix)[: self.max_input_chars]
        # OpenAI-compatible APIs reject empty strings outright.
        return text if text.strip() else " "

    def _embed_batch(self, batch: list[str], *, offset: int) -> np.ndarray:
        try:
            return self._call_with_retry(batch)
        except Exception as exc:
            # litellm raises UnsupportedParams (a 400) before sending anything;
            # retrying documents one by one cannot help.
            if (
                status_of(exc) not in _REJECT_STATUS
                or type(exc).__name__ == "UnsupportedParamsError"
            ):
                raise self._wrap(exc) from exc
            if len(batch) == 1:
                raise EmbeddingUnavailable(
                    f"{self.model} rejected document {offset}: {message_of(exc)} "
                    f"(lower max_input_chars, now {self.max_input_chars}, if it is too long)"
                ) from exc
            log.warning(
                "%s rejected a batch of %d documents; retrying one by one", self.model, len(batch)
            )
        rows = [self._embed_batch([text], offset=offset + i) for i, text in enumerate(batch)]
        return np.vstack(rows)

    def _call_with_retry(self, batch: list[str]) -> np.ndarray:
        litellm = self._import()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": batch,
            "timeout": self.timeout,
            # We retry ourselves with a longer backoff. litellm maps 0 to its
            # default for the openai route, so that SDK may still retry a few
            # times quickly inside each of our tries (unless the server sends
            # x-should-retry: false); other routes honour 0.
            "max_retries": 0,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions
        response = with_retries(
            lambda: litellm.embedding(**kwargs),
            self.model,
            self.max_tries,
            self.backoff,
            self._sleep,
        )
        return self._to_matrix(response, len(batch))

    def _to_matrix(self, response: Any, expected: int) -> np.ndarray:
        data = sorted(_get(response, "data") or [], key=lambda item: _get(item, "index") or 0)
        if len(data) != expected:
            raise EmbeddingUnavailable(
                f"{self.model} returned {len(data)} embeddings for {expected} inputs"
            )
        matrix = np.asarray([_get(item, "embedding") for item in data], dtype=np.float32)
        if matrix.ndim != 2:
            raise EmbeddingUnavailable(f"{self.model} returned embeddings of uneven length")
        if self._dims is not None and matrix.shape[1] != self._dims:
            raise EmbeddingUnavailable(
                f"{self.model} returned {matrix.shape[1]}-dimensional vectors, expected {self._dims}; "
                "check the dimensions setting"
            )
        # The first real answer tells the dimension; no probe needed later.
        self._dims = int(matrix.shape[1])
        return l2_normalize(matrix)

    def _import(self) -> Any:
        if self._litellm is None:
            self._litellm = import_litellm(EmbeddingUnavailable, "the litellm embedder")
        return self._litellm

    def _wrap(self, exc: Exception) -> EmbeddingUnavailable:
        if isinstance(exc, EmbeddingUnavailable):
            return exc
        name = type(exc).__name__
        where = f" at {self.api_base}" if self.api_base else ""
        if name == "UnsupportedParamsError":
            hint = "litellm does not send this setting to this model; remove dimensions from the config"
        else:
            hint = failure_hint(
                exc,
                auth="authentication failed: set api_key in the embedder config or the "
                "provider's environment variable (e.g. OPENAI_API_KEY)",
                rate_limited=f"still rate limited after {self.max_tries} tries; try again "
                "later or lower batch_size",
            )
        return EmbeddingUnavailable(
            f"embedding with {self.model}{where} failed: {hint} ({name}: {message_of(exc)})"
        )


def import_litellm(error: type[Exception], who: str) -> Any:
    """litellm, imported offline and quiet; ``error`` (naming ``who`` needs it) when it is
    not installed."""
    # Without this litellm fetches its cost map from GitHub at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise error(f"{who} needs litellm: pip install 'layersearch[litellm]'") from exc
    # litellm prints "Give Feedback" banners to stdout on errors; stdout belongs to the
    # MCP protocol and to --json output.
    litellm.suppress_debug_info = True
    return litellm


def with_retries(
    call: Callable[[], Any], model: str, tries: int, backoff: float, sleep: Callable[[float], None]
) -> Any:
    """``call()``, tried up to ``tries`` times while the provider rate limits (HTTP 429 or
    503), waiting ``backoff`` × 2^(attempt−1) seconds (+ up to 25% jitter) in between;
    any other error, or the last one, is raised as it is."""
    for attempt in range(1, tries + 1):
        try:
            return call()
        except Exception as exc:
            if status_of(exc) not in _RETRY_STATUS or attempt == tries:
                raise
            delay = backoff * 2 ** (attempt - 1) * (1 + random.random() / 4)  # noqa: S311
            log.warning(
                "%s is rate limiting (attempt %d/%d); waiting %.1fs", model, attempt, tries, delay
            )
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def failure_hint(exc: BaseException, *, auth: str, rate_limited: str) -> str:
    """What to do about a failed litellm call, by its HTTP status or exception name:
    ``auth`` for 401/403, ``rate_limited`` when the retries ran out on 429/503."""
    status = status_of(exc)
    name = type(exc).__name__.lower()
    if status in (401, 403):
        return auth
    if status == 404:
        return "model or endpoint not found: check the model name and api_base"
    if status in _RETRY_STATUS:
        return rate_limited
    if "connect" in name or "timeout" in name:
        return "could not reach the provider: check api_base and that the server is running"
    return "check the model name, api_base and api_key"


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a litellm exception carries, if any."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def message_of(exc: BaseException) -> str:
    """A litellm exception's message, cut at 300 characters."""
    text = str(getattr(exc, "message", None) or exc)
    return text if len(text) <= 300 else text[:297] + "..."


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
