"""The question's words read through the embedder, for the schema channel
(:mod:`layersearch.ranking.neighbours`): the catalog words' vectors, stored as the
dense corpus :data:`WORDS_CORPUS` by ``layersearch embed``, and each search's
question words embedded in one call, kept across searches."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from layersearch.corpora.dense import ENTITY_CORPUS
from layersearch.errors import LayersearchError
from layersearch.ranking.analyzer import read_words
from layersearch.ranking.neighbours import WordSpace, catalog_words
from layersearch.ranking.params import WORD_NEIGHBOURS, WordNeighbours

if TYPE_CHECKING:
    from layersearch.corpora.dense import DenseCorpus, DenseDoc
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.ranking.vector import VectorIndex
    from layersearch.semantic.model import Entity

__all__ = ["WORDS_CORPUS", "QuestionWords", "word_docs"]

#: The dense corpus of the catalog's words (one document per word, its text the word).
WORDS_CORPUS = "words"


def word_docs(entities: Iterable[Entity]) -> list[DenseDoc]:
    """The catalog's words (``neighbours.catalog_words`` of the visible entities' names
    and labels) as dense documents: id and text the word."""
    from layersearch.corpora.dense import DenseDoc

    names = [n for e in entities if not e.hidden for n in (e.name, e.label)]
    return [DenseDoc(w, w) for w in catalog_words(names)]


class QuestionWords:
    """One store's reader of question words: their vectors from the configured embedder
    (cached by the dense corpus), and per schema index the catalog words it holds (a
    :class:`WordSpace`, rebuilt when the stored word vectors change)."""

    def __init__(self, dense: Callable[[str], DenseCorpus]) -> None:
        self._dense = dense
        self._lock = threading.Lock()
        self._spaces: weakref.WeakKeyDictionary[CoverageIndex, tuple[VectorIndex, WordSpace]] = (
            weakref.WeakKeyDictionary()
        )

    def reader(
        self,
        warnings: list[str],
        gen: int | None = None,
        reading: WordNeighbours = WORD_NEIGHBOURS,
    ) -> Callable[[CoverageIndex, str], Bridges] | None:
        """The bridges of a search's question on a schema index, or None when the
        catalog's words have no vectors from this model (said in ``warnings`` when its
        entities have some: an embedding made before words were embedded). ``gen``: the
        store generation the search's snapshot was taken at."""
        try:
            dense = self._dense(WORDS_CORPUS)
            stored = dense.index(gen)
        except LayersearchError as exc:
            try:
                self._dense(ENTITY_CORPUS).check(gen)  # decided once per store generation
                has_entities = True
            except LayersearchError:
                has_entities = False
            if has_entities:
                warnings.append(f"question words not read through the embedder: {exc}")
            return None
        if not len(stored):
            return None
        return partial(self._bridges, dense, stored, warnings, reading)

    def _bridges(
        self,
        dense: DenseCorpus,
        stored: VectorIndex,
        warnings: list[str],
        reading: WordNeighbours,
        index: CoverageIndex,
        question: str,
    ) -> Bridges:
        space = self._space(index, stored)
        words = read_words(question)[: reading.question_words]
        if not len(space) or not words:
            return ()
        try:
            vectors = _word_vectors(dense, stored, [raw for raw, _ in words])
        except LayersearchError as exc:
            warnings.append(f"question words not read through the embedder: {exc}")
            return ()
        return space.bridges([key for _, key in words], vectors, k=reading.neighbours)

    def _space(self, index: CoverageIndex, stored: VectorIndex) -> WordSpace:
        with self._lock:
            found = self._spaces.get(index)
        if found is not None and found[0] is stored:
            return found[1]
        ids = stored.ids
        matrix = np.stack([stored.vector(i) for i in ids]) if ids else np.zeros((0, 1))
        space = WordSpace(ids, matrix, index.vocab)
        with self._lock:
            self._spaces[index] = (stored, space)
        return space


def _word_vectors(dense: DenseCorpus, stored: VectorIndex, texts: list[str]) -> np.ndarray:
    """The vectors of ``texts`` (rows) as the words corpus's documents: a text that is a
    stored catalog word (its id is its text) takes its stored vector, the others are
    embedded (``document_vectors``, kept across searches). A model gives a text one
    vector whichever batch it comes in (the local model bit for bit), so this spares
    the work and changes no reading."""
    missing = [t for t in texts if t not in stored]
    fresh = dict(zip(missing, dense.document_vectors(missing), strict=True)) if missing else {}
    return np.stack([fresh[t] if t in fresh else stored.vector(t) for t in texts])
