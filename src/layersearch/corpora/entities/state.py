"""One entity search on its way through the stages (``stages.ENTITY_PIPELINE``): the
request, the settings, the channel rankings and each list as the stages leave it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.lists import Picked, _Ordered, _Rankings
from layersearch.ranking.fusion import FusedList, fuse
from layersearch.ranking.pipeline import Trace
from layersearch.semantic.canonical import in_scope
from layersearch.types import SearchRequest

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EdgeMap, EntityMap
    from layersearch.ranking.bm25 import EntityOverlapIndex
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.semantic.canonical import Resolver
    from layersearch.types import Memory

__all__ = ["RankedCorpus", "SearchState", "VectorChannel", "WordReader"]

#: The vector channel a search is handed: (question, k, datasource, allowed ids,
#: memories) → ranked ids; ``memories`` asks for memories only, else entities only.
VectorChannel = Callable[
    [str, int, str | None, Collection[str] | None, bool], list[tuple[str, float]]
]
#: The question's words read through the embedder (``ranking.neighbours``): (schema
#: index, question) → the index's bridges
WordReader = Callable[["CoverageIndex", str], "Bridges"]


class RankedCorpus(Protocol):
    """What the stages read of the corpus (``search.CorpusSearch`` provides it)."""

    entities: EntityMap
    memories: dict[str, Memory]
    edges_out: EdgeMap
    fulltext: FullTextIndex
    resolver: Resolver

    def coverage(self, datasource: str | None = None) -> CoverageIndex: ...
    def memory_scopes(self, m: Memory) -> set[str]: ...
    def _kind_lookup(self) -> Callable[[str], str | None]: ...
    def _overlap_index(
        self, datasource: str | None, allow: frozenset[str] | None
    ) -> EntityOverlapIndex: ...
    def _table_of_id(self, level: Callable[[str], int]) -> Callable[[str], str | None]: ...
    def _question_share(
        self,
        question: str,
        ds: str | None,
        index: Callable[[], CoverageIndex] | None = None,
    ) -> Callable[[Collection[str]], float]: ...
    def _closeness(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str], tuple[float, float]]: ...
    def _covers_more(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str, str], bool]: ...
    def _words_ranking(
        self, text_hits: Sequence[tuple[str, float]], close: Callable[[str], tuple[float, float]]
    ) -> list[tuple[str, float]]: ...
    def _tag_ranking(
        self,
        entity_ids: Sequence[str],
        admitted: Callable[[str], bool],
        text_hits: Sequence[tuple[str, float]] = (),
        depth: int = ...,
    ) -> list[tuple[str, float]]: ...


@dataclass(eq=False)
class SearchState:
    """One search on its way through :data:`ENTITY_PIPELINE`."""

    corpus: RankedCorpus
    req: SearchRequest
    config: EntityRankingConfig
    channels: Sequence[str]
    allow: frozenset[str] | None
    vector: VectorChannel | None
    words: WordReader | None
    warnings: list[str]
    # read-question
    ds: str | None = None
    ranks: _Rankings = field(init=False)
    named: frozenset[str] = frozenset()
    res_ids: list[str] = field(default_factory=list)
    question: str | None = None
    no_input: bool = False
    # the entity list
    superseded: dict[str, Callable[[str], bool]] | None = None
    weighed: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    fused: FusedList | None = None
    order: list[int] | None = None
    trace: Trace = field(default_factory=Trace)
    entities: _Ordered | None = None
    # the memory list
    memory_lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    close: Callable[[str], tuple[float, float]] | None = None
    leads: Callable[[str, str], bool] | None = None
    memory_fused: FusedList | None = None
    #: position in ``memory_fused`` → the score a stage added to that memory's own
    memory_adjust: dict[int, float] = field(default_factory=dict)
    memory_trace: Trace = field(default_factory=Trace)
    memories: _Ordered | None = None
    # results
    lead: bool = False
    run: int = 1
    merge_trace: Trace = field(default_factory=Trace)
    merged: list[Picked] = field(default_factory=list)
    _index: CoverageIndex | None = None

    def __post_init__(self) -> None:
        self.ds = self.req.datasource
        self.ranks = _Rankings(self.corpus.memories, self.corpus._kind_lookup())

    def index(self) -> CoverageIndex:
        """The schema channel's index this search reads (its datasource's), once."""
        if self._index is None:
            self._index = self.corpus.coverage(self.ds)
        return self._index

    def admitted(self, doc_id: str) -> bool:
        """Whether the filter and the datasource admit an id."""
        if self.allow is not None and doc_id not in self.allow:
            return False
        if self.ds is None:
            return True
        m = self.corpus.memories.get(doc_id)
        if m is not None:
            return self.ds in self.corpus.memory_scopes(m)
        return in_scope(doc_id, self.ds)

    def fuse_entities(self, given: Mapping[str, list[tuple[str, int, float]]]) -> FusedList:
        """The entity channels fused with this search's weights and ``given`` votes."""
        weights = {c: w for c, (w, _, _) in self.weighed.items()}
        return fuse(
            self.ranks.entity,
            k=self.config.rrf_k,
            weights=weights,
            level=self.ranks.level,
            by_level=self.config.rank_by_level,
            superseded=self.superseded,
            given=given,
        )

    def ordered_ids(self) -> list[str]:
        assert self.fused is not None
        ids = self.fused.ids
        return ids if self.order is None else [ids[i] for i in self.order]
