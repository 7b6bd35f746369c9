"""The readable Reciprocal Rank Fusion that ``layersearch.ranking.fusion.fuse`` must equal:
one object per id, then full text's superseded votes deleted and the list re-sorted, as the
entity search did before it fused in columns."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence

from layersearch.ranking.fusion import Fused


def score_of(f: Fused) -> float:
    cs = list(f.channels.values())
    if len(cs) <= 2:
        return sum(c[2] for c in cs)
    return math.fsum(c[2] for c in cs)


def rrf_ref(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    level: Callable[[str], int] | None = None,
    by_level: Collection[str] | None = None,
    superseded: Mapping[str, Callable[[str], bool]] | None = None,
) -> list[Fused]:
    fused: dict[str, Fused] = {}

    def lv(doc_id: str) -> int:
        return 0 if level is None else level(doc_id)

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
            f = fused.get(doc_id)
            if f is None:
                f = fused[doc_id] = Fused(doc_id, 0.0, rank)
            f.best_rank = min(f.best_rank, rank)
            f.channels[channel] = (rank, float(score), w / (k + rank))
    out = []
    for f in fused.values():
        for channel, drop in (superseded or {}).items():
            if channel in f.channels and drop(f.id):
                del f.channels[channel]
        if not f.channels:
            continue
        f.score = score_of(f)
        f.best_rank = min(c[0] for c in f.channels.values())
        out.append(f)
    return sorted(out, key=lambda f: (-f.score, f.best_rank, max(lv(f.id), 0), f.id))
