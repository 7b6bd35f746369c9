"""Per-hit explanations: which channels ranked a hit, at which rank and score."""

from __future__ import annotations

from layersearch.ranking.fusion import Fused
from layersearch.types import ChannelScore

__all__ = ["explain", "explain_text"]


def explain(f: Fused) -> list[ChannelScore]:
    return [
        ChannelScore(channel=c, rank=r, score=round(s, 6), contribution=round(contrib, 6))
        for c, (r, s, contrib) in sorted(f.channels.items(), key=lambda kv: (kv[1][0], kv[0]))
    ]


def explain_text(parts: list[ChannelScore]) -> str:
    """``fulltext #1 (7.31) + bm25 #3 (2.05)``"""
    return " + ".join(f"{p.channel} #{p.rank} ({p.score:.3g})" for p in parts)
