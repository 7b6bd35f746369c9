"""Sessions as documents: message search's evidence that a turn's session is about the
question.

A question's words are often spread over the exchange that answers it ("Why did
Caroline choose the adoption agency?": *adoption* in one turn, *agency* in the
next, *chose* two turns later), and each turn alone holds one of them. Scored as
one document, the session holds them all. So every session of a snapshot is a
bag of its searchable turns' analysed words, ranked by BM25 (``ranking.bm25`` with
:data:`SESSION_BM25`: the textbook k1 = 1.2, b = 0.75, Lucene's idf over sessions) against the full-text query, and each fused
turn gains ``weight`` standard deviations of the fused scores times its session's
standard score among the sessions searched (the conversation in scope, else all).
A session matching no better than the average one moves nothing up; one that
stands out lifts its turns, and a turn of a session that matches only there loses
a little to them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from layersearch.ranking.analyzer import analyze
from layersearch.ranking.bm25 import OKAPI, BM25Params, idf, term_scores
from layersearch.ranking.fusion import Fused

from .ranking import shift_turns
from .store import MessageRow

#: sessions are ranked by the textbook Okapi BM25 with Lucene's idf
SESSION_BM25: BM25Params = OKAPI
#: the ``channels`` key of a turn whose session moved it: (its rank before, its
#: session's standard score, the shift)
LABEL = "session_text"


@dataclass(frozen=True, slots=True)
class SessionIndex:
    """Sessions ``0 … n-1`` (the snapshot's numbers) as bags of words: their lengths, and
    per word the sessions holding it with its count there (arrays, for one pass per
    question word over every session that holds it)."""

    lengths: np.ndarray
    postings: dict[str, tuple[np.ndarray, np.ndarray]]
    #: conversation → its sessions
    sessions_of: dict[str, np.ndarray]

    @classmethod
    def build(
        cls, turns: Mapping[str, Sequence[MessageRow]], session: Mapping[str, int]
    ) -> SessionIndex:
        """``turns``: conversation → its searchable turns; ``session``: turn id → its
        session (``service._sessions``: numbered from 0 across the snapshot)."""
        counts: dict[int, Counter[str]] = {}
        sessions_of: dict[str, np.ndarray] = {}
        for conv, ts in turns.items():
            seen: dict[int, None] = {}
            for m in ts:
                s = session[m.id]
                seen.setdefault(s, None)
                counts.setdefault(s, Counter()).update(analyze(m.content))
            sessions_of[conv] = np.fromiter(seen, dtype=np.int64, count=len(seen))
        size = max(counts, default=-1) + 1
        lengths = np.zeros(size, dtype=np.float64)
        lists: dict[str, tuple[list[int], list[int]]] = {}
        for s in sorted(counts):
            lengths[s] = sum(counts[s].values())
            for word, n in counts[s].items():
                at, tf = lists.setdefault(word, ([], []))
                at.append(s)
                tf.append(n)
        postings = {
            w: (np.asarray(at, dtype=np.int64), np.asarray(tf, dtype=np.float64))
            for w, (at, tf) in lists.items()
        }
        return cls(lengths, postings, sessions_of)

    def searched(self, scope: Collection[str] | None) -> np.ndarray | None:
        """The sessions a search reads, as a mask: those of the conversations in ``scope``;
        None for every session."""
        if scope is None:
            return None
        mask = np.zeros(len(self.lengths), dtype=bool)
        for c in scope:
            at = self.sessions_of.get(c)
            if at is not None:
                mask[at] = True
        return mask

    def scores(
        self, tokens: Iterable[str], mask: np.ndarray | None, params: BM25Params = SESSION_BM25
    ) -> np.ndarray:
        """BM25 of ``tokens`` (each counted once) against every session, with idf and
        mean length over the sessions ``mask`` keeps (None: all); the others score 0."""
        out = np.zeros(len(self.lengths), dtype=np.float64)
        n = len(self.lengths) if mask is None else int(mask.sum())
        if n == 0:
            return out
        kept = self.lengths if mask is None else self.lengths[mask]
        mean = float(kept.mean()) or 1.0
        for word in dict.fromkeys(tokens):
            found = self.postings.get(word)
            if found is None:
                continue
            at, tf = found
            if mask is not None:
                inside = mask[at]
                at, tf = at[inside], tf[inside]
            if len(at) == 0:
                continue
            (word_idf,) = idf(n, [len(at)], params.idf)
            out[at] += term_scores(word_idf, tf, self.lengths[at], mean, params)
        return out


def standard_scores(scores: np.ndarray, mask: np.ndarray | None) -> Callable[[int], float]:
    """A session's score as standard deviations from the mean over the sessions ``mask``
    keeps (None: all); 0 for every session when they do not differ."""
    kept = scores if mask is None else scores[mask]
    if len(kept) == 0:
        return lambda _s: 0.0
    mean, spread = float(kept.mean()), float(kept.std())
    if spread <= 1e-12:
        return lambda _s: 0.0
    return lambda s: (float(scores[s]) - mean) / spread


def lift_sessions(
    fused: Sequence[Fused],
    session_of: Callable[[str], int | None],
    z: Callable[[int], float],
    weight: float,
) -> list[Fused]:
    """Each fused turn moved by ``weight`` standard deviations of the fused scores times
    its session's standard score ``z``; re-sorted as in fusion. A turn whose session
    moved it records ``LABEL`` → (its rank before, the session's z, the shift)."""
    if weight <= 0:
        return list(fused)

    def amount(mid: str) -> float:
        s = session_of(mid)
        return 0.0 if s is None else z(s)

    return shift_turns(fused, amount, weight, LABEL)


def session_lift(
    fused: Sequence[Fused],
    index: SessionIndex,
    session_of: Callable[[str], int | None],
    tokens: Sequence[str],
    scope: Collection[str] | None,
    weight: float,
    params: BM25Params = SESSION_BM25,
) -> list[Fused]:
    """The fused turns moved by their sessions' BM25 (``params``) against ``tokens`` (the
    full-text query's words), standardised over the sessions in ``scope`` (see the
    module)."""
    mask = index.searched(scope)
    z = standard_scores(index.scores(tokens, mask, params), mask)
    return lift_sessions(fused, session_of, z, weight)
