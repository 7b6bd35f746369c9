"""Vocabulary bridges by an embedder: a question word read as its nearest catalog words.

WordNet (:mod:`layersearch.ranking.bridges`) knows *clients* is ``customer`` but
not that *divisions* are ``departments`` in a catalog of companies, nor
*populace* ``population``; an embedding model read on single words often does.
With an embedder configured, every catalog word (:func:`catalog_words`: a part,
of :data:`MIN_WORD` letters or more, of an entity's name or label) has a
stored vector, and a question's plain words are embedded when it is asked. Each
question word is then also read as the :data:`NEIGHBOURS` catalog words of the
searched index nearest it, each at :data:`bridges.SYNONYM_WEIGHT` × cosine: a
WordNet synonym's weight for a word the model reads as the same one, less as
the two drift apart. They join the word's WordNet bridges (a term reached both
ways keeps the better weight) and count as those do: for a word the catalog
does not use, everywhere; for one it uses, only in the databases that do not
use it (``coverage_terms.read_query``).

Pure: numpy and the analyzer; the vectors come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from layersearch.ranking.analyzer import STOP_WORDS, analyze, split_identifier
from layersearch.ranking.bridges import SYNONYM_WEIGHT
from layersearch.ranking.coverage_terms import Bridges
from layersearch.ranking.params import WORD_NEIGHBOURS

__all__ = ["MIN_WORD", "WordSpace", "catalog_words", "word_key"]

#: Shorter identifier parts are not embedded (``id``, ``no``: codes, not words).
MIN_WORD = 3


def catalog_words(names: Iterable[str | None]) -> list[str]:
    """The words of names (identifier parts, lower case, letters only, of
    :data:`MIN_WORD` letters or more, no stop words), each once, sorted."""
    out: set[str] = set()
    for name in names:
        for part in split_identifier(name or ""):
            if len(part) >= MIN_WORD and part.isalpha() and part not in STOP_WORDS:
                out.add(part)
    return sorted(out)


def word_key(word: str) -> str | None:
    """A single word's analysed token (its stem), or None when analysis drops it or
    splits it: the key a stored word's vector is compared under."""
    tokens = analyze(word)
    return tokens[0] if len(tokens) == 1 else None


class WordSpace:
    """The catalog words one index holds (by their analysed term), with unit vectors."""

    __slots__ = ("terms", "keys", "matrix")

    def __init__(self, words: Sequence[str], matrix: np.ndarray, vocab: Mapping[str, int]):
        rows, terms, keys = [], [], []
        for i, word in enumerate(words):
            key = word_key(word)
            j = vocab.get(key) if key is not None else None
            if key is not None and j is not None:
                rows.append(i)
                terms.append(j)
                keys.append(key)
        self.terms = np.array(terms, dtype=np.int64)
        self.keys: list[str] = keys
        self.matrix = np.ascontiguousarray(matrix[rows], dtype=np.float32)

    def __len__(self) -> int:
        return len(self.keys)

    def bridges(
        self, keys: Sequence[str], vectors: np.ndarray, k: int | None = None, floor: float = 0.0
    ) -> Bridges:
        """Per question word (its analysed ``keys``, their unit ``vectors`` in rows): the
        terms of its ``k`` (``WordNeighbours.neighbours``) nearest words by cosine, above
        ``floor``, its own term never, each term once at ``SYNONYM_WEIGHT`` × its best
        cosine; ties go to the lower term id."""
        k = WORD_NEIGHBOURS.neighbours if k is None else k
        if not len(self) or not len(keys) or k < 1:
            return ()
        sims = np.asarray(vectors, dtype=np.float32) @ self.matrix.T
        out = []
        for key, row in zip(keys, sims, strict=True):
            # the nearest words, enough of them to leave k terms after the word's own
            # term and repeats (``department`` and ``departments``) are dropped
            near = min(len(row), 4 * k + 4)
            pick = np.argpartition(-row, near - 1)[:near] if near < len(row) else np.arange(near)
            pick = pick[np.lexsort((self.terms[pick], -row[pick]))]
            best: dict[int, float] = {}
            for i in pick.tolist():
                cos = float(row[i])
                j = int(self.terms[i])
                if cos <= floor or len(best) >= k:
                    break
                if self.keys[i] != key and j not in best:
                    best[j] = round(SYNONYM_WEIGHT * cos, 6)
            if best:
                out.append((key, tuple(sorted(best.items()))))
        return tuple(out)
