"""One entity search on its way through the stages (``stages.ENTITY_PIPELINE``): the
request, the settings, the channel rankings and each list as the stages leave it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.lists import Picked, _Ordered, _Rankings
from layersearch.ranking.fusion import FusedList, fuse
from layersearch.ranking.pipeline import Trace

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EdgeMap, EntityMap
    from layersearch.ranking.bm25 import EntityOverlapIndex
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.semantic.canonical import Resolution, Resolver
    from layersearch.types import Memory

__all__ = [
    "RankedCorpus",
    "ScopedVector",
    "SearchScope",
    "SearchState",
    "VectorChannel",
    "WordReader",
    "resolve_scope",
]

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


#: A search's vector channel once its filters are resolved: (question, k, allowed ids
#: within the filter, memories) → ranked ids.
ScopedVector = Callable[[str, int, Collection[str] | None, bool], list[tuple[str, float]]]


@dataclass(frozen=True, eq=False)
class SearchScope:
    """A request's datasource and filter, resolved once before the stages run into what
    the stages read: which ids are admitted, the names the request gives, the schema and
    memory-overlap indexes and the vector channel confined to them, the full text's
    scopes. No stage reads the request or its datasource (``scripts/parameter_path.py``
    measures how far a parameter travels)."""

    #: the ids the Cypher filter allows (None: no filter)
    allow: frozenset[str] | None
    #: whether an id passes the filter and the datasource
    admits: Callable[[str], bool]
    #: (names, example query) → the entities they name, within the datasource
    resolve: Callable[[list[str] | None, dict[str, Any] | None], Resolution]
    #: the schema channel's index (the datasource's own), read on first use, then kept
    index: Callable[[], CoverageIndex]
    #: bm25 over the memories tagged with the named entities, within the scope
    overlap: Callable[[], EntityOverlapIndex]
    #: the full-text index's scope filter (None: every datasource)
    fulltext_scopes: list[str] | None
    #: the vector channel within the scope (None: not asked, or no embedder)
    vector: ScopedVector | None
    #: a search confined to one datasource (its unreached tables are still candidates)
    confined: bool
    #: where nothing matched, for the warning (" in datasource 'x'", " within the filter")
    where: str


def resolve_scope(
    corpus: RankedCorpus,
    datasource: str | None,
    allow: frozenset[str] | None,
    vector: VectorChannel | None,
) -> SearchScope:
    """The scope of one search: ``datasource`` and ``allow`` resolved for the stages."""
    memories = corpus.memories
    # The datasource as the stages need it: the prefix of its ids (``prod.x`` is in
    # ``prod``, ``prod_v2.x`` is not: ``semantic.canonical.in_scope``).
    under = None if datasource is None else datasource + "."

    def admits(doc_id: str) -> bool:
        if allow is not None and doc_id not in allow:
            return False
        if under is None:
            return True
        m = memories.get(doc_id)
        if m is not None:  # a memory is in the datasources of the entities it names
            return any(f"{d}." == under for d in corpus.memory_scopes(m))
        return doc_id.startswith(under) or f"{doc_id}." == under

    def scoped_vector(
        question: str, k: int, ids: Collection[str] | None, only_memories: bool
    ) -> list[tuple[str, float]]:
        assert vector is not None
        return vector(question, k, datasource, ids, only_memories)

    built: list[CoverageIndex] = []

    def index() -> CoverageIndex:
        if not built:
            built.append(corpus.coverage(datasource))
        return built[0]

    where = (f" in datasource '{datasource}'" if datasource else "") + (
        " within the filter" if allow is not None else ""
    )
    return SearchScope(
        allow=allow,
        admits=admits,
        resolve=partial(corpus.resolver.resolve, datasource=datasource),
        index=index,
        overlap=partial(corpus._overlap_index, datasource, allow),
        fulltext_scopes=[datasource] if datasource is not None else None,
        vector=scoped_vector if vector is not None else None,
        confined=datasource is not None,
        where=where,
    )


@dataclass(eq=False)
class SearchState:
    """One search on its way through :data:`ENTITY_PIPELINE`."""

    corpus: RankedCorpus
    scope: SearchScope
    config: EntityRankingConfig
    channels: Sequence[str]
    words: WordReader | None
    warnings: list[str]
    #: what the request asks: names, an example query, a question (None: none)
    asked: tuple[list[str] | None, dict[str, Any] | None, str | None]
    #: how many ``results``
    max_results: int
    #: whether stages trace what they did for an explanation (their what-if fusions)
    trace_stages: bool
    #: whether the hits are explained (their channels at least)
    explained: bool = False
    #: whether memories are ranked at all (False: ``results`` is the entity list alone)
    rank_memories: bool = True
    # read-question
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
    #: learned-tables: the tables of the first hits in the learned order (later stages keep it)
    tables: list[str] | None = None
    #: the learned orders: id → the question words the schema channel matched in it
    matched: Callable[[str], set[str]] | None = None
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

    def __post_init__(self) -> None:
        self.ranks = _Rankings(self.corpus.memories, self.corpus._kind_lookup())

    def fuse_entities(self) -> FusedList:
        """The entity channels fused, every channel weighing 1."""
        return fuse(
            self.ranks.entity,
            k=self.config.rrf_k,
            level=self.ranks.level,
            by_level=self.config.rank_by_level,
            superseded=self.superseded,
        )

    def ordered_ids(self) -> list[str]:
        assert self.fused is not None
        ids = self.fused.ids
        return ids if self.order is None else [ids[i] for i in self.order]
