"""Per-hit explanations: which channels ranked a hit, at which rank and score."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from layersearch.ranking.fusion import Fused
from layersearch.ranking.pipeline import Move
from layersearch.types import ChannelScore, StageMove

__all__ = ["explain", "explain_stages", "explain_text", "stages_text"]


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


def explain_stages(moves: Sequence[Move]) -> list[StageMove]:
    """A hit's :class:`~layersearch.ranking.pipeline.Move` list as it is shown."""
    return [
        StageMove(
            stage=m.stage,
            before=m.before,
            after=m.after,
            note=m.note,
            adjustment=round(m.adjustment, 6),
        )
        for m in moves
    ]


def stages_text(moves: Sequence[StageMove]) -> str:
    """``join-keys #9→#4 +0.0021 (join key of two first tables); table-votes new→#3``."""
    return "; ".join(
        f"{m.stage} {'#' + str(m.before) if m.before else 'new'}→#{m.after}"
        + (f" {m.adjustment:+.4f}" if m.adjustment else "")
        + (f" ({m.note})" if m.note else "")
        for m in moves
    )
