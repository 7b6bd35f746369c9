"""A deterministic embedder for tests and offline demos.

Feature hashing over analyzer-like tokens: lowercased word unigrams (identifiers
split on ``_``, ``.`` and camelCase, the whole identifier kept too) and
character trigrams of each word. Each token adds a signed unit to one of ``d``
buckets chosen by blake2b, never Python's ``hash()`` (salted per process), so
the same text gets the same vector in every process and on every machine.
Texts that share words share buckets and therefore end up closer.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from layersearch.embed.base import Fingerprint, apply_prefix, check_query, check_texts
from layersearch.errors import ConfigError

__all__ = ["FakeEmbedder", "DEFAULT_FAKE_DIMENSIONS"]

DEFAULT_FAKE_DIMENSIONS = 256
#: Bumped whenever the hashing scheme changes, so old vectors are refused.
FAKE_MODEL_NAME = "hashing-v1"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_IDENT = re.compile(r"[\w.]+", re.UNICODE)
# Trigrams are weaker evidence than whole words: they give typo tolerance
# without letting shared suffixes dominate.
_TRIGRAM_WEIGHT = 0.5


def _tokens(text: str) -> list[tuple[str, float]]:
    text = unicodedata.normalize("NFKC", text)
    out: list[tuple[str, float]] = []
    for ident in _IDENT.findall(text):
        parts = [p.lower() for p in _WORD.findall(_CAMEL.sub(" ", ident))]
        whole = ident.lower().strip("._")
        if len(parts) > 1 and whole:
            out.append(("w:" + whole, 1.0))
        for word in parts:
            out.append(("w:" + word, 1.0))
            padded = f"#{word}#"
            out.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return out


class FakeEmbedder:
    """Hashing embedder; ``FakeEmbedder(64)`` gives 64-dimensional vectors."""

    def __init__(
        self,
        dimensions: int = DEFAULT_FAKE_DIMENSIONS,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if not isinstance(dimensions, int) or dimensions < 2:
            raise ConfigError(
                f"fake embedder dimensions must be an integer >= 2, got {dimensions!r}"
            )
        self._fingerprint = Fingerprint(
            provider="fake",
            model=FAKE_MODEL_NAME,
            dimensions=dimensions,
            normalized=True,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
        )
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        prefix = self._fingerprint.document_prefix
        out = np.zeros((len(items), self._fingerprint.dimensions), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = self._vector(apply_prefix(text, prefix))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        check_query(text)
        return self._vector(apply_prefix(text, self._fingerprint.query_prefix))

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self._fingerprint.dimensions, dtype=np.float64)
        # An empty text still needs a unit vector: normalized=True is a promise.
        for token, weight in _tokens(text) or [("empty:", 1.0)]:
            bucket, sign = self._bucket(token)
            vec[bucket] += sign * weight
        norm = float(np.linalg.norm(vec))
        if norm == 0:
            # Every token cancelled out; fall back to the empty-text vector.
            bucket, sign = self._bucket("empty:")
            vec[bucket] = sign
            norm = 1.0
        return (vec / norm).astype(np.float32)

    def _bucket(self, token: str) -> tuple[int, float]:
        hit = self._cache.get(token)
        if hit is None:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self._fingerprint.dimensions, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 200_000:
                self._cache[token] = hit
        return hit
