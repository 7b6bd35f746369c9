"""The embedder protocol, the model fingerprint and helpers every embedder shares.

An embedder turns text into float32 vectors. Each stored vector carries the
:class:`Fingerprint` of the model that made it, so that a store can refuse to
compare vectors from two different models (``ModelMismatch``) instead of
silently producing a meaningless ranking.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from layersearch.errors import ConfigError

__all__ = [
    "ModelEmbedder",
    "Embedder",
    "Fingerprint",
    "Provider",
    "apply_prefix",
    "l2_normalize",
]

Provider = Literal["litellm", "local", "fake"]


class Fingerprint(BaseModel):
    """Everything that decides which vector a text gets.

    Two fingerprints are equal only when every field is equal: the same model
    name with another dimension, prefix or normalisation makes incomparable
    vectors.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    model: str
    dimensions: int
    normalized: bool = True
    query_prefix: str = ""
    document_prefix: str = ""

    def describe(self) -> str:
        """Human label, e.g. ``openai/text-embedding-3-small (1536)``.

        litellm model names already carry their route (``openai/…``), so the
        provider is only spelled out for the in-process embedders.
        """
        name = self.model if self.provider == "litellm" else f"{self.provider}/{self.model}"
        return f"{name} ({self.dimensions})"

    def key(self) -> str:
        """Stable serialisation (JSON, sorted keys, no whitespace) for storage."""
        return json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str) -> Fingerprint:
        """Inverse of :meth:`key`."""
        try:
            return cls.model_validate_json(key)
        except ValidationError as exc:
            raise ConfigError(f"not a valid embedding fingerprint: {key!r} ({exc})") from exc


@runtime_checkable
class Embedder(Protocol):
    """What the rest of layersearch needs from an embedding model.

    ``fingerprint`` may load the model (or call the provider once) to learn the
    dimension. Both embed methods return float32 arrays, L2-normalised when
    ``fingerprint.normalized`` is true, with the configured prefix applied once.
    """

    @property
    def fingerprint(self) -> Fingerprint: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), d)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape ``(d,)``."""
        ...


def apply_prefix(text: str, prefix: str) -> str:
    """Prefix ``text`` unless it already starts with ``prefix``.

    Callers sometimes pass text that was prefixed upstream (e.g. an E5
    ``query: `` written by hand); prefixing twice would shift the vector.
    """
    if not prefix or text.startswith(prefix):
        return text
    return prefix + text


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation as float32; all-zero rows stay zero."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        norm = float(np.linalg.norm(out))
        return out / norm if norm > 0 else out.copy()
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (out / norms).astype(np.float32, copy=False)


def check_query(text: str) -> str:
    """Validate an embed_query argument."""
    if not isinstance(text, str):
        raise ConfigError(f"query is {type(text).__name__}, expected str")
    return text


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate an embed_documents argument; a bare string is a common slip."""
    if isinstance(texts, str):
        raise ConfigError("embed_documents takes a sequence of strings, not one string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise ConfigError(f"text {i} is {type(text).__name__}, expected str")
    return out


class ModelEmbedder(ABC):
    """What the embedders over a real model share (litellm's and the local one): the
    fingerprint, and ``embed_documents``/``embed_query`` checking their input and
    applying the prefix once. Each subclass says how it learns its dimension, prepares
    one text (prefix, truncation) and runs the model."""

    provider: ClassVar[Provider]
    query_prefix: str
    document_prefix: str

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name in the fingerprint."""

    @abstractmethod
    def _dimensions(self) -> int:
        """The vectors' dimension, learned (a model load, a probe call) when not yet known."""

    @abstractmethod
    def _prepare(self, text: str, prefix: str) -> str:
        """One text as the model gets it: prefixed once, cut to what the model takes."""

    @abstractmethod
    def _embed_prepared(self, items: list[str]) -> np.ndarray:
        """Vectors of prepared documents (never an empty list), shape ``(len(items), d)``."""

    @abstractmethod
    def _embed_one(self, item: str) -> np.ndarray:
        """The vector of one prepared query, shape ``(d,)``."""

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(
            provider=self.provider,
            model=self.model_name,
            dimensions=self._dimensions(),
            normalized=True,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = [self._prepare(t, self.document_prefix) for t in check_texts(texts)]
        if not items:
            return np.zeros((0, self.fingerprint.dimensions), dtype=np.float32)
        return self._embed_prepared(items)

    def embed_query(self, text: str) -> np.ndarray:
        check_query(text)
        return self._embed_one(self._prepare(text, self.query_prefix))
