"""How the places of a scoped list are shared (``corpora.scope``): which hits wait, which
lead their source, how hits of the same place are ordered, and when the best memory reads
the question better than the entity list, with the numbers of
:class:`ScopeRankingConfig`. Everything here reads each hit's share of the
question (:meth:`ScopeService.shares <layersearch.corpora.scope.ScopeService.shares>`):
the idf-weighted share of the question's analysed words its full-text document holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from layersearch.corpora import registry
from layersearch.corpora.protocol import Ranked
from layersearch.ranking.pipeline import RankingConfig
from layersearch.types import ChannelScore

__all__ = [
    "DEFAULTS",
    "ScopeRankingConfig",
    "Ranked",
    "Shares",
    "leading_hits",
    "memory_reads_better",
    "share_note",
    "tie_order",
    "waiting_tiers",
]


@dataclass(frozen=True, slots=True)
class ScopeRankingConfig(RankingConfig):
    """The tuned numbers of a scoped list's places, and the stages switched off.

    ``weak_share``: a hit after its source's first holding less than this fraction of
    its source's best share waits (``waiting-weak``); a best memory under it in its own
    list lifts nothing (``tagged-first``, ``tagged-join``). ``unmatched_share``: a
    source whose best share is under this fraction of the top share has no real match
    (``waiting-unmatched``, and no ``tagged-join`` from such a memory list)."""

    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = (
        "tagged-first",
        "tagged-join",
        "waiting-unmatched",
        "waiting-weak",
        "leading",
        "share-ties",
    )

    weak_share: float = 0.7
    unmatched_share: float = 0.5


#: the defaults, one place
DEFAULTS = ScopeRankingConfig()
#: per source with hits, (its best share, each kept hit's share)
Shares = dict[str, tuple[float, list[float]]]


def memory_reads_better(shares: Shares, unmatched: float = DEFAULTS.unmatched_share) -> bool:
    """Whether the best memory holds more of the question than the entity list's best
    hit, in a memory list with a real match (its best share at least ``unmatched`` of
    the best-matched source's). False without shares (one source with hits, no
    question)."""
    if "memory" not in shares:
        return False
    top = max(best for best, _values in shares.values())
    memory_best, values = shares["memory"]
    entity_best = shares["semantic"][0] if "semantic" in shares else 0.0
    return memory_best >= unmatched * top and values[0] > entity_best


def waiting_tiers(
    ranked: dict[str, Ranked],
    shares: Shares,
    cap: int,
    *,
    weak: float | None = DEFAULTS.weak_share,
    unmatched: float | None = DEFAULTS.unmatched_share,
) -> dict[str, int]:
    """The hits that wait after every other source's hits, id → tier (0 first). Tier 0
    (``unmatched``; None: none): the hits after the first of a source with no real
    match, whose best hit holds less than ``unmatched`` of the share the best-matched
    source's best hit holds, and a source's first hit when it holds less than
    ``unmatched`` of its source's best share (then the source's turns go to its next
    hits). Tier 1 (``weak``; None: none): a hit after its source's first holding less
    than ``weak`` of its source's best share. The entities the best memory is tagged with never wait, even in
    an entity list with no real match: two corpora agree on them, and the memory's share
    of the question is their evidence. Nothing waits without shares (one source, no
    question)."""
    if not shares:
        return {}
    top = max(best for best, _values in shares.values())
    out: dict[str, int] = {}
    for source, (best, values) in shares.items():
        r = ranked[source]
        no_match = unmatched is not None and best < unmatched * top
        for n, h in enumerate(r.hits[:cap]):
            if h.id in r.lifted:
                continue  # a tagged entity keeps its turn: its evidence is the memory's
            if n == 0:
                # the first keeps its source's turn unless it is no real match of what its
                # source holds best
                if unmatched is not None and values[0] < unmatched * best:
                    out[h.id] = 0
            elif weak is not None and values[n] < weak * best:
                out[h.id] = 1
            elif no_match:
                out[h.id] = 0
    return out


def leading_hits(ranked: dict[str, Ranked], shares: Shares, cap: int) -> set[str]:
    """The kept hits holding the top share (the largest share of the question any hit
    of any source holds, above 0), whatever their rank: they take their source's first
    turns, in their source's order, its other hits the turns after them (a source gains
    no turn by them). None without shares (one source, no question)."""
    top = max((best for best, _values in shares.values()), default=0.0)
    if top <= 0:
        return set()
    bar = round(top, 9)  # rounded as in :func:`tie_order`
    return {
        h.id
        for source, (_best, values) in shares.items()
        for h, v in zip(ranked[source].hits[:cap], values, strict=False)
        if round(v, 9) >= bar
    }


def tie_order(ranked: dict[str, Ranked], shares: Shares, cap: int) -> dict[str, int]:
    """Each kept hit's place among hits of the same place in their sources (the same turn,
    or the same tier and rank when waiting), id → position: the hit holding the larger
    share of the question first, then the sources' tie order
    (:func:`registry.source_order`). Without shares (one source,
    no question) the source order alone."""
    order = {s: i for i, s in enumerate(registry.source_order())}
    keys = []
    for source, r in ranked.items():
        values = shares[source][1] if source in shares else []
        for n, h in enumerate(r.hits[:cap]):
            # rounded so shares summed in a different order still tie
            held = round(values[n], 9) if n < len(values) else 0.0
            keys.append((-held, order[source], h.id))
    return {hid: i for i, (_held, _source, hid) in enumerate(sorted(keys))}


def share_note(shares: Shares, source: str, rank: int) -> list[ChannelScore]:
    """The explanation of a hit's evidence in the fused list (see :func:`waiting_tiers`):
    ``share``, the share of the question its document holds; ``share/source best``, that
    over its source's best (below ``weak_share``, after the first: weak);
    ``source best/top``, its source's best over the best source's (below
    ``unmatched_share``: a source with no real match)."""
    if source not in shares:
        return []
    best, values = shares[source]
    top = max(b for b, _values in shares.values())
    mine = values[rank - 1]
    return [
        ChannelScore(channel="share", rank=rank, score=round(mine, 6), contribution=0.0),
        ChannelScore(
            channel="share/source best",
            rank=rank,
            score=round(mine / best if best > 0 else 1.0, 6),
            contribution=0.0,
        ),
        ChannelScore(
            channel="source best/top",
            rank=rank,
            score=round(best / top if top > 0 else 1.0, 6),
            contribution=0.0,
        ),
    ]
