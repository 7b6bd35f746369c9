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
from layersearch.ranking.neighbours import QUESTION_WORDS, WordSpace, catalog_words

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

    def reader(self, warnings: list[str]) -> Callable[[CoverageIndex, str], Bridges] | None:
        """The bridges of a search's question on a schema index, or None when the
        catalog's words have no vectors from this model (said in ``warnings`` when its
        entities have some: an embedding made before words were embedded)."""
        try:
            dense = self._dense(WORDS_CORPUS)
            stored = dense.index()
        except LayersearchError as exc:
            try:
                self._dense(ENTITY_CORPUS).check()  # decided once per store generation
                has_entities = True
            except LayersearchError:
                has_entities = False
            if has_entities:
                warnings.append(f"question words not read through the embedder: {exc}")
            return None
        if not len(stored):
            return None
        return partial(self._bridges, dense, stored, warnings)

    def _bridges(
        self,
        dense: DenseCorpus,
        stored: VectorIndex,
        warnings: list[str],
        index: CoverageIndex,
        question: str,
    ) -> Bridges:
        space = self._space(index, stored)
        words = read_words(question)[:QUESTION_WORDS]
        if not len(space) or not words:
            return ()
        try:
            vectors = dense.document_vectors([raw for raw, _ in words])
        except LayersearchError as exc:
            warnings.append(f"question words not read through the embedder: {exc}")
            return ()
        return space.bridges([key for _, key in words], vectors)

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
