"""A chat model through litellm, for what an LLM adds at import time (facts extracted
from conversation sessions; see docs/conversations.md).

``litellm`` is imported on first use, with ``LITELLM_LOCAL_MODEL_COST_MAP`` set so that
its import reads no cost map from the network. A spec is ``litellm:<model>`` (the model
with its litellm route, e.g. ``litellm:openai/gpt-4o-mini``) or ``none``; options are
``api_base``, ``api_key``, ``timeout`` and ``max_tries``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from layersearch.embed.litellm import failure_hint, import_litellm, message_of, with_retries
from layersearch.errors import ConfigError, LLMUnavailable

__all__ = ["NO_LLM", "ChatModel", "LiteLLMChat", "make_llm"]

NO_LLM = "none"
OPTION_KEYS = frozenset({"api_base", "api_key", "timeout", "max_tries"})
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TRIES = 4


class ChatModel(Protocol):
    """What fact extraction needs of a model: a name and one answer per prompt."""

    model: str

    def complete(self, system: str, user: str) -> str: ...


class LiteLLMChat:
    """``litellm.completion`` at temperature 0; rate limits (429, 503) are retried with
    exponential backoff, any other failure is an :class:`LLMUnavailable` saying why."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tries: int = DEFAULT_MAX_TRIES,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("the facts LLM needs a model, e.g. litellm:openai/gpt-4o-mini")
        for name, value in (("timeout", timeout), ("max_tries", max_tries)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"facts LLM {name} must be a positive number, got {value!r}")
        self.model = model.strip()
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_tries = int(max_tries)
        self.backoff = backoff
        self._sleep = sleep
        self._litellm: Any = None

    def complete(self, system: str, user: str) -> str:
        litellm = self._import()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "timeout": self.timeout,
            "max_retries": 0,  # we retry ourselves, with a longer backoff
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        try:
            response = with_retries(
                lambda: litellm.completion(**kwargs),
                self.model,
                self.max_tries,
                self.backoff,
                self._sleep,
            )
        except Exception as exc:
            raise self._wrap(exc) from exc
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMUnavailable(f"{self.model} returned no message: {exc}") from exc
        if not isinstance(content, str):
            raise LLMUnavailable(f"{self.model} returned a message without text")
        return content

    def _import(self) -> Any:
        if self._litellm is None:
            self._litellm = import_litellm(LLMUnavailable, "the facts LLM")
        return self._litellm

    def _wrap(self, exc: Exception) -> LLMUnavailable:
        name = type(exc).__name__
        where = f" at {self.api_base}" if self.api_base else ""
        hint = failure_hint(
            exc,
            auth="authentication failed: set api_key or the provider's environment variable",
            rate_limited=f"still rate limited after {self.max_tries} tries",
        )
        return LLMUnavailable(f"{self.model}{where} failed: {hint} ({name}: {message_of(exc)})")


def make_llm(spec: str | None, options: Mapping[str, Any] | None = None) -> ChatModel | None:
    """The chat model of ``spec`` (``litellm:<model>``), or ``None`` for no spec or ``none``."""
    text = (spec or "").strip()
    if not text or text.lower() == NO_LLM:
        return None
    provider, _, model = text.partition(":")
    if provider.lower() != "litellm" or not model.strip():
        raise ConfigError(
            f"{spec!r} is not a facts LLM spec: use litellm:<model> "
            "(e.g. litellm:openai/gpt-4o-mini) or none"
        )
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(opts) - OPTION_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown facts LLM option(s) {', '.join(unknown)}: "
            f"known are {', '.join(sorted(OPTION_KEYS))}"
        )
    return LiteLLMChat(model.strip(), **opts)
