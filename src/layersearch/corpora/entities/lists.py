"""The lists one entity search works on: the channel rankings (:class:`_Rankings`) and
each kind's ordered list (:class:`_Ordered`) with the scores it shows."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping

from layersearch.ranking.coverage_terms import Bridges
from layersearch.ranking.fusion import FusedList
from layersearch.ranking.pipeline import Trace

__all__ = ["FUSION_LEVEL", "Picked", "_Ordered", "_Rankings"]

#: Levels for ranking by level (memories and datasources keep their rank among all
#: hits); on equal fused scores a leaf, the specific evidence, precedes a table. A level
#: of 0 or more says "a model or a leaf".
FUSION_LEVEL = {"column": 0, "measure": 0, "aggregation": 0, "model": 1}


class _Rankings:
    """The channel rankings of one search, entities and memories apart, and the fusion
    levels of the ids seen (from the channels that know them, else the snapshot)."""

    __slots__ = ("entity", "memory", "levels", "bridges", "_memories", "_kind_of")

    def __init__(self, memories: Collection[str], kind_of: Callable[[str], str | None]) -> None:
        self.entity: dict[str, list[tuple[str, float]]] = {}
        self.memory: dict[str, list[tuple[str, float]]] = {}
        # id → fusion level (-1: datasources, anything not a ranked schema entity)
        self.levels: dict[str, int] = {}
        #: the schema channel's bridges from the embedder (``ranking.neighbours``)
        self.bridges: Bridges = ()
        self._memories = memories
        self._kind_of = kind_of

    def put_mixed(self, channel: str, hits: list[tuple[str, float]]) -> None:
        """A channel that ranks both kinds: each kind's hits in its own list."""
        memories = self._memories
        ents = [h for h in hits if h[0] not in memories]
        mems = [h for h in hits if h[0] in memories]
        if ents:
            self.entity[channel] = ents
        if mems:
            self.memory[channel] = mems

    def known(self, doc_id: str) -> bool:
        """Whether this snapshot holds the id (an entity's level is remembered)."""
        if doc_id in self.levels or doc_id in self._memories:
            return True
        kind = self._kind_of(doc_id)
        if kind is None:
            return False
        self.levels[doc_id] = FUSION_LEVEL.get(kind, -1)
        return True

    def is_schema(self, doc_id: str) -> bool:
        """Whether an id is a table or a leaf (fusion level 0 or more)."""
        return self.level(doc_id) >= 0

    def level(self, doc_id: str) -> int:
        at = self.levels.get(doc_id)
        if at is None:
            self.known(doc_id)  # remembers an entity's level; any other id is -1
            at = self.levels.setdefault(doc_id, -1)
        return at


#: one hit of a list as it is shown: (its list, its position in the fused ranking, the
#: score it shows)
Picked = tuple["_Ordered", int, float]


class _Ordered:
    """One kind's ranking: fused positions in their final order with the score each
    shows (non-increasing: ``ranking.pipeline.settle``), which positions may be merged
    into ``results``, and what the stages did to each hit (``trace``)."""

    __slots__ = ("fused", "order", "_matched", "weighed", "words", "trace")

    def __init__(
        self,
        fused: FusedList,
        order: list[tuple[int, float]],
        matched: Callable[[int], bool] | None = None,
        weighed: Mapping[str, tuple[float, float, float]] | None = None,
        words: Mapping[str, Callable[[str], list[str]]] | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.fused = fused
        self.order = order
        self._matched = matched
        #: channel → (weight, separation, reach) of the channels fusion weighed
        self.weighed = weighed
        #: channel → the question words an id matched in it (for explanations)
        self.words = words
        #: what the stages after fusion did to each hit
        self.trace = trace if trace is not None else Trace()

    def ids(self, n: int) -> list[str]:
        return [self.fused.ids[i] for i, _ in self.order[:n]]

    def top(self, n: int) -> list[Picked]:
        return [(self, i, score) for i, score in self.order[:n]]

    def where(self, keep: Callable[[str], bool], n: int) -> list[Picked]:
        out: list[Picked] = []
        for i, score in self.order:
            if len(out) >= n:
                break
            if keep(self.fused.ids[i]):
                out.append((self, i, score))
        return out

    def mergeable(self) -> Iterator[Picked]:
        for i, score in self.order:
            if self._matched is None or self._matched(i):
                yield (self, i, score)
