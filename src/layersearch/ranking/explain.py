"""Per-hit explanations: which channels ranked a hit, at which rank and score."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from layersearch.ranking.fusion import Fused
from layersearch.ranking.pipeline import Move, Trace
from layersearch.types import ChannelScore, StageMove, explain_text, stages_text

__all__ = ["explain", "explain_stages", "explain_text", "stages_text", "trace_channels"]


def explain(
    f: Fused,
    weighed: Mapping[str, tuple[float, float, float]] | None = None,
    matched: Mapping[str, Callable[[str], list[str]]] | None = None,
) -> list[ChannelScore]:
    """``weighed``: channel → (fusion weight, separation, reach) of the channels whose
    evidence is stated (``channel-evidence``); the others have weight 1.
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


def trace_channels(
    trace: Trace,
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    fuse: Callable[[Mapping[str, Sequence[tuple[str, float]]]], Sequence[Fused]],
    after: Sequence[str],
    stages: Sequence[str],
) -> None:
    """For an explanation: each channel of ``rankings`` that is a switchable stage
    (``stages``) moved the hits of the fused list ``after`` from where the fusion of the
    other channels put them (``fuse`` of the rest). A lone channel is the list itself:
    nothing is recorded for it."""
    if len(rankings) < 2:
        return
    for name in stages:
        ranked = rankings.get(name)
        if ranked is None:
            continue
        rank = {doc_id: r for r, (doc_id, _) in enumerate(ranked, 1)}
        before = [f.id for f in fuse({c: v for c, v in rankings.items() if c != name})]

        def note(doc_id: str, name: str = name, rank: dict[str, int] = rank) -> str:
            r = rank.get(doc_id)
            return f"fused in at its #{r}" if r else f"passed by the hits {name} ranked"

        trace.reorder(name, before, after, note)
