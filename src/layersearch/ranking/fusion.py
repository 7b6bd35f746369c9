"""Reciprocal Rank Fusion, deterministic.

fused(d) = Σ_c w_c / (k + rank_c(d)), k = 60, ranks 1-based. Ties are broken
by the fused score, then the best single-channel rank, then the level (when
levels are given), then the id, so the same input always gives the same
order, whatever the order of the channels.

A channel may rank by level: its rank for a document is then the rank among
its documents of the same level (tables among tables, columns among
columns), for a channel whose list interleaves two rankings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from layersearch.ranking.params import EVIDENCE_TOP, RRF_K

__all__ = [
    "EVIDENCE_TOP",
    "RRF_K",
    "Fused",
    "FusedList",
    "fuse",
    "rrf",
    "separation",
]


@dataclass(slots=True)
class Fused:
    id: str
    score: float
    best_rank: int
    #: channel → (rank, channel score, contribution to the fused score)
    channels: dict[str, tuple[int, float, float]] = field(default_factory=dict)


def rrf(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    level: Callable[[str], int] | None = None,
    by_level: Collection[str] | None = None,
) -> list[Fused]:
    """Fuse ranked lists ``channel → [(id, channel score), …]`` (best first).

    A duplicate id within one channel keeps its first (best) rank. With
    ``level`` (id → level number), a channel named in ``by_level`` (every
    channel when None) ranks an id among its ids of the same level; an id of
    a negative level keeps its rank among all of them. On equal fused score
    and best rank the lower level comes first (negative levels count as 0).
    """
    fused = fuse(rankings, k=k, weights=weights, level=level, by_level=by_level)
    return [fused.fused(i) for i in range(len(fused))]


class FusedList:
    """A fused ranking as columns, best first: ``ids[i]`` and ``scores[i]``.

    A search fuses a few hundred ranked ids and returns ten: a :class:`Fused`
    (with its per-channel dict) is made only for the positions asked for."""

    __slots__ = ("ids", "scores", "best_ranks", "_entries", "_start", "_names")

    def __init__(
        self,
        ids: list[str],
        scores: list[float],
        best_ranks: list[int],
        entries: tuple[list[int], list[int], list[float], list[float]],
        start: list[int],
        names: list[str],
    ) -> None:
        self.ids = ids
        self.scores = scores
        self.best_ranks = best_ranks
        # (channel number, rank, channel score, contribution) of every vote, grouped by
        # position: position i's votes are entries[start[i]:start[i + 1]], in channel order
        self._entries = entries
        self._start = start
        self._names = names

    def __len__(self) -> int:
        return len(self.ids)

    def then(self, other: FusedList) -> FusedList:
        """This ranking followed by ``other`` (whose ids must not be in this one)."""
        names = sorted(set(self._names) | set(other._names))
        number = {name: c for c, name in enumerate(names)}
        chan: list[int] = []
        rank: list[int] = []
        score: list[float] = []
        contrib: list[float] = []
        for part in (self, other):
            chan.extend(number[part._names[c]] for c in part._entries[0])
            rank.extend(part._entries[1])
            score.extend(part._entries[2])
            contrib.extend(part._entries[3])
        offset = self._start[-1]
        return FusedList(
            self.ids + other.ids,
            self.scores + other.scores,
            self.best_ranks + other.best_ranks,
            (chan, rank, score, contrib),
            self._start + [offset + s for s in other._start[1:]],
            names,
        )

    def fused(self, i: int) -> Fused:
        chan, rank, score, contrib = self._entries
        names = self._names
        return Fused(
            self.ids[i],
            self.scores[i],
            self.best_ranks[i],
            {
                names[chan[j]]: (rank[j], score[j], contrib[j])
                for j in range(self._start[i], self._start[i + 1])
            },
        )


def fuse(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    level: Callable[[str], int] | None = None,
    by_level: Collection[str] | None = None,
    superseded: Mapping[str, Callable[[str], bool]] | None = None,
) -> FusedList:
    """:func:`rrf` as columns, with the same arithmetic, order and tie-breaks.

    ``superseded``: channel → predicate on ids whose vote in that channel does not
    count. The channel still ranks them (the ids after them keep their ranks); an id
    no other channel ranked is left out. The same as fusing everything and then
    deleting those votes, without making them first.
    """
    names = sorted(rankings)
    ids, levels, best, votes = _votes(rankings, names, weights, level, by_level, superseded)
    return _columns(names, ids, levels, best, votes, k)


#: the counted votes, one entry each in channel order: (document, channel, rank, channel
#: score, channel weight)
_Votes = tuple[list[int], list[int], list[int], list[float], list[float]]


def _votes(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    names: list[str],
    weights: Mapping[str, float] | None,
    level: Callable[[str], int] | None,
    by_level: Collection[str] | None,
    superseded: Mapping[str, Callable[[str], bool]] | None,
) -> tuple[list[str], list[int], list[int], _Votes]:
    """The fused ids in order of first vote, their levels and best ranks, and the votes."""
    index: dict[str, int] = {}
    ids: list[str] = []
    levels: list[int] = []
    best: list[int] = []
    # one entry per counted vote, in channel order
    e_doc: list[int] = []
    e_chan: list[int] = []
    e_rank: list[int] = []
    e_score: list[float] = []
    e_weight: list[float] = []
    for c, channel in enumerate(names):
        w = 1.0 if weights is None else float(weights.get(channel, 1.0))
        ranked_by_level = level is not None and (by_level is None or channel in by_level)
        drop = superseded.get(channel) if superseded is not None else None
        seen: set[str] = set()
        ranks: dict[int, int] = {}
        overall = 0
        for doc_id, score in rankings[channel]:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            overall += 1
            j = index.get(doc_id)
            at = -1
            if ranked_by_level:
                at = levels[j] if j is not None else level(doc_id)  # type: ignore[misc]
            if at >= 0:
                ranks[at] = rank = ranks.get(at, 0) + 1
            else:
                rank = overall
            if drop is not None and drop(doc_id):
                continue
            if j is None:
                j = index[doc_id] = len(ids)
                ids.append(doc_id)
                levels.append(at if ranked_by_level else (0 if level is None else level(doc_id)))
                best.append(rank)
            elif rank < best[j]:
                best[j] = rank
            e_doc.append(j)
            e_chan.append(c)
            e_rank.append(rank)
            e_score.append(float(score))
            e_weight.append(w)
    return ids, levels, best, (e_doc, e_chan, e_rank, e_score, e_weight)


def _columns(
    names: list[str],
    ids: list[str],
    levels: list[int],
    best: list[int],
    counted: _Votes,
    k: int,
) -> FusedList:
    """The fused scores of the votes, and the ids ordered by them (with the tie-breaks)."""
    e_doc, e_chan, e_rank, e_score, e_weight = counted
    n = len(ids)
    if n == 0:
        return FusedList([], [], [], ([], [], [], []), [0], names)
    doc = np.asarray(e_doc, dtype=np.intp)
    # the same IEEE division as w / (k + rank) in Python
    contrib = np.asarray(e_weight) / (k + np.asarray(e_rank, dtype=np.float64))
    # In entry order (channel order), each id's votes are added from 0.0 one by one: with
    # at most two votes that is the exact sum of Python's sum(); more take math.fsum.
    total = np.bincount(doc, weights=contrib, minlength=n)
    votes = np.bincount(doc, minlength=n)
    many = np.flatnonzero(votes > 2)
    if len(many):
        by_doc = np.argsort(doc, kind="stable")
        ends = np.cumsum(votes)
        for j in many.tolist():
            total[j] = math.fsum(contrib[by_doc[ends[j] - votes[j] : ends[j]]].tolist())
    by_id = np.empty(n, dtype=np.intp)
    by_id[sorted(range(n), key=ids.__getitem__)] = np.arange(n)
    lv = np.maximum(np.asarray(levels, dtype=np.int64), 0)
    best_a = np.asarray(best, dtype=np.int64)
    order = np.lexsort((by_id, lv, best_a, -total))
    # the votes grouped by position (a stable sort keeps channel order within an id)
    pos = np.empty(n, dtype=np.intp)
    pos[order] = np.arange(n)
    grouped = np.argsort(pos[doc], kind="stable")
    start = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(votes[order], out=start[1:])
    ol = order.tolist()
    return FusedList(
        [ids[j] for j in ol],
        total[order].tolist(),
        best_a[order].tolist(),
        (
            np.asarray(e_chan)[grouped].tolist(),
            np.asarray(e_rank)[grouped].tolist(),
            np.asarray(e_score)[grouped].tolist(),
            contrib[grouped].tolist(),
        ),
        start.tolist(),
        names,
    )


def separation(scores: Sequence[float], top: int = EVIDENCE_TOP) -> float:
    """How far a ranked list's scores fall from its first to its ``top``-th, as a fraction
    of their whole range (first to last): 1 − (s_top − s_last) / (s_1 − s_last).

    0 when the ``top`` first are as good as one another (a flat list: the channel cannot
    tell them apart), near 1 when a few stand out. Invariant to any increasing affine map
    of the scores (a cosine, a BM25 sum and a coverage fraction read alike), so it depends
    on no model's score scale. A list with one score is fully separated; with every score
    equal, not at all.
    """
    if not scores:
        return 0.0
    if len(scores) == 1:
        return 1.0
    first, last = float(scores[0]), float(scores[-1])
    spread = first - last
    if not spread > 0:
        return 0.0
    at = float(scores[min(top, len(scores)) - 1])
    return min(1.0, max(0.0, 1.0 - (at - last) / spread))
