"""The message vectors: which corpora ``conversations embed`` fills, the store check
with its message, and message search's vector channel.

Each turn has one vector of the turn with the turn before it (the ``messages``
corpus, shared with ``semantic_search``, whose output is a fixed contract) and,
with ``MessageSearchConfig.turn_vector``, a second of the turn alone (the
``message-turns`` corpus, read by message search only). The channel ranks a turn by
the larger of its two cosines: a reply like "yes, last Tuesday" is found by the
question before it, a turn that states a fact by itself by its own words, which the
turn before only dilutes in the first vector.

The conversation corpora may have a model of their own, a turn encoder
(LAYERSEARCH_TURN_EMBEDDER, :func:`layersearch.embed.conversation_embedder`);
:class:`TurnVectors` keeps a store embedded with the configured model searchable with
the vectors it has, and says how to re-embed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Sequence

from layersearch.corpora.dense import DenseCorpus, DenseDoc
from layersearch.embed.base import Embedder
from layersearch.errors import EmbeddingUnavailable, ModelMismatch
from layersearch.store.base import Store

from .documents import dense_text
from .expansion import WORDS_CORPUS, word_docs
from .ranking import MessageSearchConfig
from .store import MessageRow

log = logging.getLogger("layersearch.corpora.conversations")

MESSAGE_CORPUS = "messages"
TURN_CORPUS = "message-turns"
SUMMARY_CORPUS = "summaries"
_WHAT = {
    MESSAGE_CORPUS: "message",
    TURN_CORPUS: "turn",
    SUMMARY_CORPUS: "summary",
    WORDS_CORPUS: "word",
}


def message_dense_docs(
    turns: Iterable[Sequence[MessageRow]], config: MessageSearchConfig
) -> dict[str, list[DenseDoc]]:
    """Corpus → its documents: the turns with context, with ``turn_vector`` the turns
    alone too, and with ``word_neighbours`` the conversations' words."""
    convs = list(turns)
    out = {
        MESSAGE_CORPUS: [
            DenseDoc(m.id, dense_text(ts, i, config)) for ts in convs for i, m in enumerate(ts)
        ]
    }
    if config.turn_vector:
        out[TURN_CORPUS] = [
            DenseDoc(m.id, dense_text(ts, i, config, context=False))
            for ts in convs
            for i, m in enumerate(ts)
        ]
    if config.word_neighbours > 0 and config.neighbour_weight > 0:
        out[WORDS_CORPUS] = word_docs(m for ts in convs for m in ts)
    return out


class TurnVectors(DenseCorpus):
    """A conversation corpus's vectors for the turn encoder, with ``older``: the same
    corpus for the configured embedder. A store whose conversations were embedded with
    that one (before a turn encoder was chosen) keeps searching its vectors, with a
    warning saying how to re-embed, until it has the turn encoder's."""

    def __init__(self, store: Store, corpus: str, embedder: Embedder, older: DenseCorpus):
        super().__init__(store, corpus, embedder)
        self.older = older


def turn_vectors(
    main: DenseCorpus,
    turns: Embedder | None,
    cache: dict[str, DenseCorpus],
    lock: threading.Lock | threading.RLock,
) -> DenseCorpus:
    """``main`` (the corpus's vectors for the configured embedder), or when ``turns`` is
    another model its :class:`TurnVectors`, made once and kept in ``cache``."""
    if turns is None or turns is main.embedder:
        return main
    with lock:
        d = cache.get(f"turns:{main.corpus}")
        if d is None:
            d = cache[f"turns:{main.corpus}"] = TurnVectors(main.store, main.corpus, turns, main)
        return d


def _stored_model(dense: DenseCorpus, stored: Collection[str]) -> DenseCorpus:
    """``dense``, or for :class:`TurnVectors` whose model has no vectors here its older
    model's corpus when that one has them."""
    older = dense.older if isinstance(dense, TurnVectors) else None
    if older is None or dense.fingerprint.key() in stored:
        return dense
    if older.fingerprint.key() not in stored:
        return dense
    log.warning(
        "the %s vectors of this store are %s's, not the turn encoder's (%s): searching "
        "with those; run `layersearch conversations embed` to re-embed them",
        _WHAT.get(dense.corpus, dense.corpus),
        older.fingerprint.describe(),
        dense.fingerprint.describe(),
    )
    return older


def checked_dense(
    store: Store,
    dense: DenseCorpus,
    checked: dict[str, tuple[int, str]],
) -> DenseCorpus:
    """``dense`` (or, for :class:`TurnVectors`, the model whose vectors are stored) once
    its vectors for its model are known to be stored, or EmbeddingUnavailable saying
    exactly why not; ``checked`` remembers the store generation of the last check per
    corpus (two store round trips saved a search)."""
    corpus = dense.corpus
    gen = store.generation()
    older = dense.older if isinstance(dense, TurnVectors) else None
    try:
        for known in (dense, older):
            if known is not None and checked.get(corpus) == (gen, known.fingerprint.key()):
                return known
        stored = store.vector_fingerprints(corpus)
        if not stored:
            raise EmbeddingUnavailable(
                f"no {_WHAT.get(corpus, corpus)} vectors stored yet; run `layersearch "
                "--embedder <spec> conversations embed`"
            )
        dense = _stored_model(dense, stored)
        dense.check()
    except (EmbeddingUnavailable, ModelMismatch) as exc:
        text = str(exc)
        if not text.startswith("embedding unavailable:"):
            text = f"embedding unavailable: {text}"
        raise EmbeddingUnavailable(text) from exc
    checked[corpus] = (gen, dense.fingerprint.key())
    return dense


def max_cosines(
    first: Sequence[tuple[str, float]], second: Sequence[tuple[str, float]], k: int
) -> list[tuple[str, float]]:
    """Each id's larger cosine over the two rankings, best ``k`` first (ties by id).

    An id in one ranking only keeps the cosine it has there: its other one is below
    that ranking's last, so the max is exact whenever the known cosine is at least
    that, which holds for every turn that can reach the top of the fused list.
    """
    best = dict(first)
    for doc_id, cos in second:
        if cos > best.get(doc_id, float("-inf")):
            best[doc_id] = cos
    return sorted(best.items(), key=lambda h: (-h[1], h[0]))[:k]


def vector_ranking(
    context: DenseCorpus,
    turn: Callable[[], DenseCorpus] | None,
    text: str,
    k: int,
    allow: Collection[str] | None,
    warnings: list[str],
) -> list[tuple[str, float]]:
    """The vector channel of message search: ``context``'s cosines to ``text``, and with
    ``turn`` (the checked turn-vector corpus) the max of both, one query embedding for
    the two. Turn vectors that cannot be read (an older store, another model) leave the
    context vectors alone, with a warning that says how to compute them."""
    found = context.search(text, k, allow)
    if turn is None:
        return found
    try:
        own = turn()
    except EmbeddingUnavailable as exc:
        warnings.append(
            f"{exc}; turn_vector is on but only the turn-with-context vectors are used "
            "until `conversations embed` computes the turns' own"
        )
        return found
    return max_cosines(found, own.search_vector(context.query_vector(text), k, allow), k)
