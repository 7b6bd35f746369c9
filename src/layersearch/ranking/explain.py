"""Per-hit explanations: which channels ranked a hit, at which rank and score."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from layersearch.ranking.fusion import Fused
from layersearch.types import ChannelScore

__all__ = ["explain", "explain_text"]


def explain(
    f: Fused,
    weighed: Mapping[str, tuple[float, float, float]] | None = None,
    matched: Mapping[str, Callable[[str], list[str]]] | None = None,
) -> list[ChannelScore]:
    """``weighed``: channel → (fusion weight, separation, reach) of the channels fusion
    weighed by their evidence (``fusion.evidence_weights``); the others have weight 1.
    ``matched``: channel → the question words a hit matched in it, by id."""
    weighed = weighed or {}
    matched = matched or {}
    out = []
    for c, (r, s, contrib) in sorted(f.channels.items(), key=lambda kv: (kv[1][0], kv[0])):
        w, sep, reach = weighed.get(c, (1.0, None, None))
        out.append(
            ChannelScore(
                channel=c,
                rank=r,
                score=round(s, 6),
                contribution=round(contrib, 6),
                weight=round(w, 6),
                separation=None if sep is None else round(sep, 6),
                reach=None if reach is None else round(reach, 6),
                matched=matched[c](f.id) if c in matched else None,
            )
        )
    return out


def explain_text(parts: list[ChannelScore]) -> str:
    """``schema #1 (0.93) x1.24 [name, divisions→department 0.31] + vector #3 (0.61)
    x0.76``: a weight other than 1 is shown, and the words a channel matched."""
    return " + ".join(
        f"{p.channel} #{p.rank} ({p.score:.3g})"
        + (f" x{p.weight:.2f}" if p.weight is not None and p.weight != 1.0 else "")
        + (f" [{', '.join(p.matched)}]" if p.matched else "")
        for p in parts
    )
