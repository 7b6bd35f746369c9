"""Message search's full-text query, widened with the vector channel by the
conversations' words nearest each question word (:class:`MessageWords`,
``MessageSearchConfig.word_neighbours``): a question asks "what
instruments does she play" and the turn says "my violin"; BM25 sees no shared word,
and the dense channel, which reads the whole turn, may rank it among many. So every word the conversations use (letters only, three or
more, not a stop word) has a vector, stored as the dense corpus
:data:`WORDS_CORPUS` by ``conversations embed``, and each content word of the
question (names taken out, as the full-text query takes them out) is embedded
once per search (one call, cached per word). Its ``word_neighbours`` nearest
words of the searched conversations with a cosine of ``neighbour_min_cosine`` or
more form one more BM25 query, at ``neighbour_weight`` of the field boosts (the
speaker field left out), whose scores add to the full-text ranking's. It runs
only with the vector channel: full text alone never loads the model.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

import numpy as np

from layersearch.corpora.dense import DenseCorpus, DenseDoc
from layersearch.ranking.analyzer import STOP_WORDS, query_words
from layersearch.ranking.fulltext import FullTextIndex
from layersearch.ranking.neighbours import word_key
from layersearch.ranking.vector import VectorIndex

from .ranking import MessageSearchConfig
from .store import MessageRow

__all__ = ["WORDS_CORPUS", "MessageWords", "added", "turn_words", "word_docs"]

#: The dense corpus of the conversations' words (one document per word, its text the word).
WORDS_CORPUS = "message-words"
#: Rankings are cut at this depth (message search's ``DEPTH``).
DEPTH = 100
#: Words shorter than this are not embedded.
MIN_WORD = 3
_WORD = re.compile(r"[^\W\d_]+")


def turn_words(turns: Iterable[MessageRow]) -> list[str]:
    """The words of turns (lower case, letters only, :data:`MIN_WORD` or more, no stop
    words, one analysed token each), each once, sorted."""
    out: set[str] = set()
    for m in turns:
        for w in _WORD.findall(m.content.lower()):
            if len(w) >= MIN_WORD and w not in STOP_WORDS and w not in out and word_key(w):
                out.add(w)
    return sorted(out)


def word_docs(turns: Iterable[MessageRow]) -> list[DenseDoc]:
    """The conversations' words as dense documents (id and text the word)."""
    return [DenseDoc(w, w) for w in turn_words(turns)]


def added(
    ranked: list[tuple[str, float]], extra: Iterable[tuple[str, float]], depth: int
) -> list[tuple[str, float]]:
    """``ranked`` with ``extra``'s scores added, best first (ties by id), ``depth`` deep."""
    scores = dict(ranked)
    for doc_id, score in extra:
        scores[doc_id] = scores.get(doc_id, 0.0) + score
    return sorted(scores.items(), key=lambda h: (-h[1], h[0]))[:depth]


class MessageWords:
    """One conversation store's reader of question words through the embedder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: the stored word vectors read last, and per searched conversations (() for all)
        #: their words' analysed keys and vectors
        self._space_of: VectorIndex | None = None
        self._spaces: dict[tuple[str, ...], tuple[list[str], np.ndarray]] = {}

    def widened(
        self,
        ranked: list[tuple[str, float]],
        query: str,
        turns: Callable[[], Iterable[MessageRow]],
        scope: list[str] | None,
        dense: DenseCorpus,
        ft: FullTextIndex,
        config: MessageSearchConfig,
        depth: int = DEPTH,
    ) -> list[tuple[str, float]]:
        """``ranked`` (the full-text ranking of ``query``, names already out of it) with
        the scores of the neighbour query added; ``turns`` gives the searched turns (read
        once per stored word vectors and ``scope``)."""
        words = query_words(query)
        if not words:
            return ranked
        keys, matrix = self._space(dense.index(), turns, scope)
        if not keys:
            return ranked
        q = dense.document_vectors([raw for raw, _ in words])
        own = {key for _, key in words}
        chosen: set[str] = set()
        for row in q @ matrix.T:
            order = np.lexsort((np.arange(len(row)), -row))[: 4 * config.word_neighbours + 4]
            got = 0
            for i in order.tolist():
                if row[i] < config.neighbour_min_cosine or got >= config.word_neighbours:
                    break
                if keys[i] not in own and keys[i] not in chosen:
                    chosen.add(keys[i])
                    got += 1
        if not chosen:
            return ranked
        boosts = {f: b * config.neighbour_weight for f, b in ft.boosts.items() if f != "speaker"}
        extra = ft.search(
            " ".join(sorted(chosen)), depth, scopes=scope, boosts=boosts, analysed=True
        )
        return added(ranked, extra, depth)

    def _space(
        self,
        stored: VectorIndex,
        turns: Callable[[], Iterable[MessageRow]],
        scope: list[str] | None,
    ) -> tuple[list[str], np.ndarray]:
        """The searched conversations' words that have vectors: analysed keys, vectors."""
        name = tuple(scope) if scope is not None else ()
        with self._lock:
            if self._space_of is not stored:
                self._spaces, self._space_of = {}, stored
            found = self._spaces.get(name)
        if found is not None:
            return found
        words = [w for w in turn_words(turns()) if w in stored]
        keys = [k for w in words if (k := word_key(w)) is not None]
        matrix = np.stack([stored.vector(w) for w in words]) if words else np.zeros((0, 1))
        with self._lock:
            if self._space_of is stored:
                self._spaces[name] = (keys, matrix)
        return keys, matrix
