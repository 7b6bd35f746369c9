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

__all__ = ["RRF_K", "Fused", "fused_score", "rrf"]

RRF_K = 60


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
    fused: dict[str, Fused] = {}
    levels: dict[str, int] = {}

    def lv(doc_id: str) -> int:
        if level is None:
            return 0
        try:
            return levels[doc_id]
        except KeyError:
            at = levels[doc_id] = level(doc_id)
            return at

    for channel in sorted(rankings):
        w = 1.0 if weights is None else float(weights.get(channel, 1.0))
        seen: set[str] = set()
        ranks: dict[int, int] = {}
        overall = 0
        for doc_id, score in rankings[channel]:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            overall += 1
            at = lv(doc_id) if by_level is None or channel in by_level else -1
            if at >= 0:
                ranks[at] = rank = ranks.get(at, 0) + 1
            else:
                rank = overall
            contribution = w / (k + rank)
            f = fused.get(doc_id)
            if f is None:
                f = fused[doc_id] = Fused(doc_id, 0.0, rank)
            f.best_rank = min(f.best_rank, rank)
            f.channels[channel] = (rank, float(score), contribution)
    for f in fused.values():
        f.score = fused_score(f)
    return sorted(fused.values(), key=lambda f: (-f.score, f.best_rank, max(lv(f.id), 0), f.id))


def fused_score(f: Fused) -> float:
    """The sum of a document's channel contributions, correctly rounded (``math.fsum``):
    the same in any channel order, so equal sums tie exactly and the tie-break decides."""
    cs = list(f.channels.values())
    if len(cs) <= 2:  # one addition is exact whatever the order
        return sum(c[2] for c in cs)
    return math.fsum(c[2] for c in cs)
