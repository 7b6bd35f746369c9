"""Reciprocal Rank Fusion, deterministic.

fused(d) = Σ_c w_c / (k + rank_c(d)), k = 60, ranks 1-based. Ties are broken
by the fused score, then the best single-channel rank, then the id, so the
same input always gives the same order, whatever the order of the channels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["RRF_K", "Fused", "rrf"]

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
) -> list[Fused]:
    """Fuse ranked lists ``channel → [(id, channel score), …]`` (best first).

    A duplicate id within one channel keeps its first (best) rank.
    """
    fused: dict[str, Fused] = {}
    for channel in sorted(rankings):
        w = 1.0 if weights is None else float(weights.get(channel, 1.0))
        seen: set[str] = set()
        rank = 0
        for doc_id, score in rankings[channel]:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            rank += 1
            contribution = w / (k + rank)
            f = fused.get(doc_id)
            if f is None:
                f = fused[doc_id] = Fused(doc_id, 0.0, rank)
            f.score += contribution
            f.best_rank = min(f.best_rank, rank)
            f.channels[channel] = (rank, float(score), contribution)
    return sorted(fused.values(), key=lambda f: (-f.score, f.best_rank, f.id))
