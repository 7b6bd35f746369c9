"""The vector channel a search of the entity corpus is handed: the question embedded
while the lexical channels rank, scoped to the request's datasource and filter, with
a warning when the store's vectors are incomplete or the embedder fails."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import TYPE_CHECKING, overload

from layersearch.corpora.entities.neighbours import WORDS_CORPUS, QuestionWords
from layersearch.errors import LayersearchError
from layersearch.ranking.params import WORD_NEIGHBOURS, WordNeighbours
from layersearch.store.base import Store
from layersearch.types import SearchRequest

if TYPE_CHECKING:
    from layersearch.corpora.dense import DenseCorpus
    from layersearch.corpora.entities.corpus import EntityCorpus
    from layersearch.corpora.entities.state import VectorChannel, WordReader
    from layersearch.embed.base import Embedder

#: the dense corpus of entities and memories (``layersearch.corpora.dense.ENTITY_CORPUS``)
ENTITY_CORPUS = "entities"
#: the dense corpus of a corpus name for the configured embedder (raises
#: EmbeddingUnavailable without one), and the configured embedder or None
DenseGetter = Callable[[str], "DenseCorpus"]
EmbedderGetter = Callable[[], "Embedder | None"]
#: The corpora the configured model reads: the semantic layer with its memories, and the
#: question's words the schema channel reads through it.
LAYER_CORPORA = frozenset({ENTITY_CORPUS, WORDS_CORPUS})


@overload
def corpus_model(embedder: Embedder, corpus: str) -> Embedder: ...
@overload
def corpus_model(embedder: None, corpus: str) -> None: ...
def corpus_model(embedder: Embedder | None, corpus: str) -> Embedder | None:
    """The model of ``corpus``: ``embedder`` for :data:`LAYER_CORPORA`, its prose model
    (:func:`layersearch.embed.prose_embedder`) for the vault and the conversations."""
    from layersearch.embed import prose_embedder

    return embedder if corpus in LAYER_CORPORA else prose_embedder(embedder)


NO_EMBEDDER = (
    "no embedder configured; pass --embedder local|fake|litellm:<model> or set LAYERSEARCH_EMBEDDER"
)


class VectorSearch:
    """Dense retrieval over the entities and memories of one store.

    ``dense`` gives the :class:`DenseCorpus` of a corpus name for the configured
    embedder (raising :class:`EmbeddingUnavailable` when there is none); ``embedder``
    gives the configured embedder, or None."""

    def __init__(self, store: Store, dense: DenseGetter, embedder: EmbedderGetter) -> None:
        self.store = store
        self.dense = dense
        self.embedder = embedder
        self._lock = threading.Lock()
        #: ((store generation, model key), entities and memories with a vector, all of them)
        self._coverage: tuple[tuple[int, str], int, int] | None = None
        self._words = QuestionWords(dense)

    def channel(
        self,
        corpus: EntityCorpus,
        request: SearchRequest,
        warnings: list[str],
        gen: int | None = None,
    ) -> VectorChannel | None:
        """The channel for one search of ``corpus`` (None when the request does not use it);
        its problems are added to ``warnings``. ``gen``: the store generation ``corpus``
        was taken at (read from the store when not given)."""
        if not self._wanted(request) or request.question is None:
            return None
        if self.embedder() is None:
            if request.channels is not None:
                warnings.append(f"embedding unavailable: {NO_EMBEDDER}")
            return None

        # The query is embedded while the lexical channels rank (a model's forward pass runs
        # outside the GIL); the vector channel joins it when it needs the vector.
        self.prefetch([request.question])
        return partial(self._ranked, corpus, warnings, gen)

    def prefetch(self, texts: Sequence[str]) -> None:
        """Start embedding ``texts`` as queries, in this order, in the dense corpus's
        workers (once its vectors were found in the store: a hosted model is not paid
        for a store without them); a search of one of them joins its embedding."""
        if self.embedder() is None:
            return
        with contextlib.suppress(LayersearchError):
            dense = self.dense(ENTITY_CORPUS)
            if dense.confirmed:
                for text in texts:
                    dense.prefetch(text)

    def words(
        self,
        request: SearchRequest,
        warnings: list[str],
        gen: int | None = None,
        reading: WordNeighbours = WORD_NEIGHBOURS,
    ) -> WordReader | None:
        """The question's words read through the embedder for the schema channel, when
        the vector channel runs (``ranking.neighbours``); problems go to ``warnings``."""
        if not self._wanted(request) or self.embedder() is None:
            return None
        return self._words.reader(warnings, gen, reading)

    @staticmethod
    def _wanted(request: SearchRequest) -> bool:
        wanted = request.channels is None or "vector" in request.channels
        return wanted and bool(request.question and request.question.strip())

    def _ranked(
        self,
        corpus: EntityCorpus,
        warnings: list[str],
        gen: int | None,
        question: str,
        k: int,
        ds: str | None,
        allow: Collection[str] | None,
        memories: bool,
    ) -> list[tuple[str, float]]:
        try:
            dense = self.dense(ENTITY_CORPUS)
            scope = allow
            if ds is not None:
                in_ds = corpus.scope_ids(ds)
                scope = in_ds if allow is None else in_ds & set(allow)
            found = dense.search(question, k, scope, memories=memories, gen=gen)
            partial_vectors = self._partial_vectors(dense, gen)
            if partial_vectors is not None and partial_vectors not in warnings:
                warnings.append(partial_vectors)
            return found
        except LayersearchError as exc:
            message = f"embedding unavailable: {exc}"
            if message not in warnings:
                warnings.append(message)
            return []

    def _partial_vectors(self, dense: DenseCorpus, gen: int | None = None) -> str | None:
        """A warning when some entities or memories have no vector from the configured
        model (an interrupted ``layersearch embed``): counted once per store generation."""
        key = (self.store.generation() if gen is None else gen, dense.fingerprint.key())
        with self._lock:
            cached = self._coverage
        if cached is None or cached[0] != key:
            have, total = self.store.entity_vector_coverage(ENTITY_CORPUS, key[1])
            cached = (key, have, total)
            with self._lock:
                self._coverage = cached
        _, have, total = cached
        if have >= total:
            return None
        return (
            f"vector channel ranked {have:,} of {total:,} entities and memories: "
            f"{total - have:,} have no vector from {dense.fingerprint.describe()} yet "
            "(an interrupted `layersearch embed`?); run `layersearch embed` to finish"
        )
