"""The places of a scoped list as a declared pipeline (``ranking.pipeline``): after each
corpus ranked its own hits, the stages of :data:`SCOPE_PIPELINE` run in order on a
:class:`Places` state, each switchable from :class:`ScopeRankingConfig` (``without``)
and from ``layersearch eval scope --without STAGE``.

- ``tagged-first``: the entities the best memory is tagged with go first in the entity
  list (two corpora agree on them) and never wait;
- ``tagged-join``: when that memory reads the question better than the entity list, the
  entities it is tagged with that the entity search did not return join them;
- ``shares`` (always): each kept hit's share of the question;
- ``waiting-unmatched``: the hits after the first of a source with no real match, and a
  first hit far under its source's best, wait after every other hit (tier 0);
- ``waiting-weak``: a hit after its source's first far under its source's best share
  waits after those (tier 1);
- ``leading``: the hits holding the top share take their source's first turns;
- ``share-ties``: hits of the same place go by their share, then by source;
- ``fuse`` (always): the sources' turns fused by RRF (k=60), the waiting hits after
  them; the shown scores follow the order (``ranking.pipeline.settle``).

With ``explain``, each stage that moved a hit in the fused list is in the hit's
``stages`` (positions in the list fused as it stood before and after the stage)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from layersearch.corpora.protocol import Ranked
from layersearch.corpora.scope_places import (
    ScopeRankingConfig,
    Shares,
    leading_hits,
    share_note,
    tie_order,
    waiting_tiers,
)
from layersearch.ranking.explain import explain_stages
from layersearch.ranking.fusion import RRF_K, rrf
from layersearch.ranking.pipeline import Pipeline, Stage, Trace, settle
from layersearch.types import ChannelScore, Hit, SearchRequest

__all__ = [
    "LIST_STAGES",
    "Lists",
    "SCOPE_PIPELINE",
    "Places",
    "ScopeRankingConfig",
    "Memo",
    "place",
]

#: (id, rank in its source, fused score, RRF contribution), in the fused order
Placed = tuple[str, int, float, float]
#: per source, the kept hits' ids and their shares of the question, within one search
Memo = dict[str, tuple[tuple[str, ...], list[float]]]


class Lists(Protocol):
    """What the stages ask of the scoped search (``corpora.scope.ScopeService``)."""

    def shares(
        self, ranked: dict[str, Ranked], req: SearchRequest, cap: int, memo: Memo | None = None
    ) -> Shares: ...

    def lift_tagged(
        self,
        ranked: dict[str, Ranked],
        req: SearchRequest,
        memo: Memo | None = None,
        config: ScopeRankingConfig | None = None,
    ) -> Ranked: ...

    def join_tagged(
        self,
        ranked: dict[str, Ranked],
        req: SearchRequest,
        memo: Memo | None = None,
        config: ScopeRankingConfig | None = None,
    ) -> Ranked: ...


@dataclass
class Places:
    """One scoped search's lists on their way to the fused list."""

    service: Lists
    ranked: dict[str, Ranked]
    req: SearchRequest
    config: ScopeRankingConfig
    memo: Memo = field(default_factory=dict)
    #: what the stages did, with ``explain`` (None without)
    trace: Trace | None = None
    shares: Shares = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)
    leading: set[str] = field(default_factory=set)
    tie: dict[str, int] = field(default_factory=dict)
    #: the fused order as it stands (kept only when tracing)
    order: list[str] = field(default_factory=list)
    results: list[Hit] = field(default_factory=list)

    @property
    def cap(self) -> int:
        return self.req.max_per_source or self.req.max_results

    def placed(self) -> list[Placed]:
        tie = self.tie or tie_order(self.ranked, {}, self.cap)
        return place(self.ranked, self.cap, self.waiting, self.leading, tie)

    def moved(self, stage: str, note: Callable[[str], str]) -> None:
        """Record in the trace how ``stage`` changed the fused order."""
        if self.trace is None:
            return
        after = [p[0] for p in self.placed()]
        self.trace.reorder(stage, self.order, after, note)
        self.order = after


def place(
    ranked: dict[str, Ranked],
    cap: int,
    waiting: dict[str, int],
    leading: set[str],
    tie: dict[str, int],
) -> list[Placed]:
    """The sources' kept hits fused by RRF: each source's turns (its hits that do not
    wait, those in ``leading`` first), ties of fused score and rank by ``tie``; then the
    waiting hits by (tier, rank in their source, ``tie``), as if ranked ``cap`` places
    lower per tier."""
    channels: dict[str, list[tuple[str, float]]] = {}
    late: list[tuple[int, int, int, str]] = []  # (tier, rank in its source, tie, id)
    source_of: dict[str, str] = {}
    for source, r in ranked.items():
        kept = r.hits[:cap]
        turns = [(h.id, h.score) for h in kept if h.id not in waiting]
        channels[source] = [t for t in turns if t[0] in leading] + [
            t for t in turns if t[0] not in leading
        ]
        late.extend(
            (waiting[h.id], n, tie[h.id], h.id) for n, h in enumerate(kept, 1) if h.id in waiting
        )
        source_of.update((h.id, source) for h in kept)
    out: list[Placed] = []
    for f in rrf(channels, level=tie.__getitem__, by_level=()):
        rank, _score, contribution = f.channels[source_of[f.id]]
        out.append((f.id, rank, f.score, contribution))
    for tier, rank, _o, hid in sorted(late):
        score = 1.0 / (RRF_K + (tier + 1) * cap + rank)
        out.append((hid, rank, score, score))
    return out


# -- the stages -------------------------------------------------------------------------------


def _tagged_first(s: Places) -> None:
    if "semantic" in s.ranked and "memory" in s.ranked:
        before = s.ranked["semantic"]
        s.ranked["semantic"] = s.service.lift_tagged(s.ranked, s.req, s.memo, s.config)
        lifted = s.ranked["semantic"].lifted - before.lifted
        s.moved(
            "tagged-first",
            lambda i: (
                "tagged by the best memory: first in the entity list"
                if i in lifted
                else "after the entities the best memory is tagged with"
            ),
        )


def _tagged_join(s: Places) -> None:
    if "semantic" in s.ranked and "memory" in s.ranked:
        s.ranked["semantic"] = s.service.join_tagged(s.ranked, s.req, s.memo, s.config)
        s.moved("tagged-join", lambda i: "joined: tagged by the best memory")


def _shares(s: Places) -> None:
    s.shares = s.service.shares(s.ranked, s.req, s.cap, s.memo)


def _waiting(tier: int, stage: str, what: str) -> Callable[[Places], None]:
    def run(s: Places) -> None:
        # each tier as the other's switch leaves it: a weak hit of a source with no real
        # match waits in tier 1 when ``waiting-weak`` runs, else in tier 0
        c = s.config
        found = waiting_tiers(
            s.ranked,
            s.shares,
            s.cap,
            weak=c.weak_share if tier == 1 or c.on("waiting-weak") else None,
            unmatched=c.unmatched_share if tier == 0 or c.on("waiting-unmatched") else None,
        )
        mine = {i for i, t in found.items() if t == tier}
        s.waiting.update((i, tier) for i in mine if i not in s.waiting)
        s.moved(stage, lambda i: what if i in mine else "up: hits above it wait")

    return run


def _leading(s: Places) -> None:
    s.leading = leading_hits(s.ranked, s.shares, s.cap)
    s.moved(
        "leading",
        lambda i: (
            "holds the top share: its source's first turn"
            if i in s.leading
            else "a turn later: a hit holding the top share leads its source"
        ),
    )


def _share_ties(s: Places) -> None:
    s.tie = tie_order(s.ranked, s.shares, s.cap)
    s.moved("share-ties", lambda i: "a tie of places: the hit holding more of the question first")


def _fuse(s: Places) -> None:
    placed = s.placed()[: s.req.max_results]
    own = [round(p[2], 6) for p in placed]
    shown = settle([p[0] for p in placed], own, s.trace, "fuse")
    hits = {
        h.id: (source, n, h)
        for source, r in s.ranked.items()
        for n, h in enumerate(r.hits[: s.cap], 1)
    }
    for (hid, _rank, _fused, contribution), score in zip(placed, shown, strict=True):
        source, rank, hit = hits[hid]
        update: dict[str, Any] = {"score": round(score, 6)}
        if s.req.explain:
            head = ChannelScore(
                channel=source,
                rank=rank,
                score=round(hit.score, 6),
                contribution=round(contribution, 6),
            )
            inner = [
                c.model_copy(update={"channel": f"{source}/{c.channel}"})
                for c in hit.explanation or []
            ]
            update["explanation"] = [head, *inner, *share_note(s.shares, source, rank)]
            # the stages of the source's own ranking (positions in its list), then these
            stages = [
                m.model_copy(update={"stage": f"{source}/{m.stage}"}) for m in hit.stages or []
            ]
            stages += explain_stages(s.trace.moves(hid)) if s.trace is not None else []
            update["stages"] = stages or None
        s.results.append(hit.model_copy(update=update))


#: the stages that change the sources' lists themselves (``ScopeService.source_lists``)
LIST_STAGES: tuple[Stage[Places], ...] = (
    Stage(
        "tagged-first", "the best memory's tagged entities first in the entity list", _tagged_first
    ),
    Stage("tagged-join", "its tagged entities the entity search missed join them", _tagged_join),
)

SCOPE_PIPELINE: Pipeline[Places] = Pipeline(
    "scope",
    (
        *LIST_STAGES,
        Stage("shares", "each kept hit's share of the question", _shares, switchable=False),
        Stage(
            "waiting-unmatched",
            "a source with no real match waits after its first hit (tier 0)",
            _waiting(0, "waiting-unmatched", "waits: no real match in its source (tier 0)"),
        ),
        Stage(
            "waiting-weak",
            "a hit far under its source's best share waits (tier 1)",
            _waiting(1, "waiting-weak", "waits: far under its source's best share (tier 1)"),
        ),
        Stage("leading", "hits holding the top share take their source's first turns", _leading),
        Stage("share-ties", "hits of the same place go by their share, then source", _share_ties),
        Stage(
            "fuse", "the sources' turns fused by RRF, waiting hits after", _fuse, switchable=False
        ),
    ),
)
