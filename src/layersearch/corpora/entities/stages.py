"""The entity and memory ranking as one declared pipeline (docs/ranking.md).

One search is a :class:`SearchState` that :data:`ENTITY_PIPELINE` runs through its
stages in order: read the question, rank the channels, fuse the entity channels, the
rules after fusion (each a stage with one entry point here, switched off by
``EntityRankingConfig.without``), the entity scores; the same for memories; then the
merge of both into ``results``. Every number a stage reads is in
:class:`~layersearch.corpora.entities.config.EntityRankingConfig`; what a stage did to
a hit goes into the list's :class:`~layersearch.ranking.pipeline.Trace`, which
``explain`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Protocol

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.lists import Picked, _Ordered, _Rankings
from layersearch.corpora.entities.matched import schema_words
from layersearch.corpora.entities.rank import (
    TABLE_CHANNEL,
    dense_columns,
    join_key_order,
    merge_kinds,
    name_joins,
    same_query_order,
    table_votes,
    unlisted_votes,
    visible_leaves,
)
from layersearch.corpora.entities.words import plain_share
from layersearch.ranking.fusion import FusedList, fuse, separation
from layersearch.ranking.pipeline import Pipeline, Stage, Trace, between, settle
from layersearch.semantic.canonical import in_scope
from layersearch.types import SearchRequest

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EdgeMap, EntityMap
    from layersearch.ranking.bm25 import EntityOverlapIndex
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.semantic.canonical import Resolver
    from layersearch.types import Memory

__all__ = ["ENTITY_PIPELINE", "SearchState"]

#: The vector channel a search is handed: (question, k, datasource, allowed ids,
#: memories) → ranked ids; ``memories`` asks for memories only, else entities only.
VectorChannel = Callable[
    [str, int, str | None, Collection[str] | None, bool], list[tuple[str, float]]
]
#: The question's words read through the embedder (``ranking.neighbours``): (schema
#: index, question) → the index's bridges
WordReader = Callable[["CoverageIndex", str], "Bridges"]
#: Memory channels that match the request itself: named ids, tags overlapping the named
#: entities, the question's words in the memory's text, the newest (no input).
_DIRECT_MEMORY_CHANNELS = frozenset({"input", "bm25", "fulltext", "words", "recent"})


class RankedCorpus(Protocol):
    """What the stages read of the corpus (``search.CorpusSearch`` provides it)."""

    entities: EntityMap
    memories: dict[str, Memory]
    edges_out: EdgeMap
    resolver: Resolver

    def coverage(self, datasource: str | None = None) -> CoverageIndex: ...
    def memory_scopes(self, m: Memory) -> set[str]: ...
    def _kind_lookup(self) -> Callable[[str], str | None]: ...
    def _overlap_index(
        self, datasource: str | None, allow: frozenset[str] | None
    ) -> EntityOverlapIndex: ...
    def _lexical(self, s: SearchState, question: str) -> None: ...
    def _vector(self, s: SearchState, question: str) -> None: ...
    def _table_of_id(self, level: Callable[[str], int]) -> Callable[[str], str | None]: ...
    def _question_share(
        self, question: str, ds: str | None
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
    def _query_key(self, memory_id: str) -> str | None: ...
    def _newest(self, admitted: Callable[[str], bool], depth: int) -> list[tuple[str, float]]: ...


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
    given: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)
    fused: FusedList | None = None
    order: list[int] | None = None
    trace: Trace = field(default_factory=Trace)
    entities: _Ordered | None = None
    # the memory list
    memory_lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    close: Callable[[str], tuple[float, float]] | None = None
    leads: Callable[[str, str], bool] | None = None
    memory_fused: FusedList | None = None
    memory_order: list[int] | None = None
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
        self.ds = self.req.datasource
        self.ranks = _Rankings(self.corpus.memories, self.corpus._kind_lookup())

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


# -- reading the request and ranking the channels ---------------------------------------------


def read_question(s: SearchState) -> None:
    """The named entities and the question (empty text is no question)."""
    res = s.corpus.resolver.resolve(s.req.entities, s.req.query, s.ds)
    s.warnings.extend(res.warnings)
    s.named = frozenset(res.ids)
    q = s.req.question
    s.question = q if q and q.strip() else None
    s.no_input = not s.req.entities and not s.req.query and s.question is None
    if s.named:
        # (in the resolver's order: ``input`` ranks the named ids as named)
        s.ranks.put_mixed("input", [(i, 1.0) for i in res.ids if s.admitted(i)])
    s.res_ids = res.ids


def rank_channels(s: SearchState) -> None:
    """bm25 (memories tagged with the named entities), the schema channel and full text,
    the vector channel, and the newest memories when nothing was asked."""
    depth = s.config.channel_depth
    if s.named and "bm25" in s.channels:
        idx = s.corpus._overlap_index(s.ds, s.allow)
        hits = idx.search(s.res_ids, depth)
        if hits:
            s.ranks.memory["bm25"] = hits
    if s.question is not None:
        if "fulltext" in s.channels:
            s.corpus._lexical(s, s.question)
        if "vector" in s.channels and s.vector is not None:
            s.corpus._vector(s, s.question)
    if s.no_input:
        s.warnings.append("no entities, query or question given: showing the newest memories")
        s.ranks.memory["recent"] = s.corpus._newest(s.admitted, depth)


# -- the entity list --------------------------------------------------------------------------


def schema_over_fulltext(s: SearchState) -> None:
    """Once the schema channel ranked, full text's votes on tables and leaves do not count."""
    # The schema channel scores those same words with their table and database context;
    # counting their per-entity full-text ranks as well would count the words twice and
    # let isolated matches from unrelated databases back in. Datasources keep their
    # full-text rank as it was (among all entities).
    if "schema" in s.ranks.entity:
        level = s.ranks.level
        s.superseded = {"fulltext": lambda i: level(i) >= 0}


def evidence_weights_stage(s: SearchState) -> None:
    """The schema and vector channels weighed by their evidence: separation x reach."""
    from layersearch.ranking.fusion import evidence_weights

    cfg = s.config
    if s.question is None or not cfg.evidence_channels:
        return
    rankings = s.ranks.entity
    reach = (
        {"schema": s.corpus.coverage(s.ds).query_reach(s.question, s.ranks.bridges)}
        if "schema" in rankings
        else {}
    )
    level = s.ranks.level
    s.weighed = evidence_weights(
        rankings,
        cfg.evidence_channels,
        keep=lambda i: level(i) == 1,
        reach=reach,
        top=cfg.evidence_top,
    )


def unlisted_votes_stage(s: SearchState) -> None:
    """The schema channel votes for tables and leaves it did not list, just after its list."""
    s.given = unlisted_votes(
        s.ranks.entity, s.config.unlisted_channels, s.ranks.level, s.superseded
    )


def fuse_entities(s: SearchState) -> None:
    """Reciprocal Rank Fusion of the entity channels (with the stages' weights and votes)."""
    s.fused = s.fuse_entities(s.given)
    if s.req.explain:
        _trace_fusion_stages(s)


def _trace_fusion_stages(s: SearchState) -> None:
    """For an explanation: the fusion each stage before it changed, without that stage."""
    assert s.fused is not None
    after = s.fused.ids
    saved = (s.superseded, s.weighed)
    if s.given:
        before = s.fuse_entities({}).ids
        s.trace.reorder("unlisted-votes", before, after, "votes for ids its list left out")
    if s.weighed:
        s.weighed = {}
        s.trace.reorder("evidence-weights", s.fuse_entities(s.given).ids, after, "channels weighed")
        s.weighed = saved[1]
    if s.superseded:
        s.superseded = None
        before = s.fuse_entities(s.given).ids
        s.superseded = saved[0]
        s.trace.reorder("schema-over-fulltext", before, after, "full text's vote dropped")


def dense_columns_stage(s: SearchState) -> None:
    """The vector channel ranks every leaf of the best fused tables; fused again."""
    vector = s.ranks.entity.get("vector")
    dense = s.ranks.dense
    tables = s.config.dense_column_tables
    if s.question is None or not vector or dense is None or not tables or s.fused is None:
        return
    # (weights are read on table scores, which this does not change)
    leaves = partial(visible_leaves, s.corpus.entities)
    filled = dense_columns(s.fused, s.ranks.level, vector, leaves, dense, tables)
    if filled is None:
        return
    s.ranks.entity["vector"] = filled
    if s.config.on("unlisted-votes"):
        # (the column fill changed the vector ranking: its ids are read again)
        unlisted_votes_stage(s)
    before = s.fused.ids
    s.fused = s.fuse_entities(s.given)
    s.trace.reorder("dense-columns", before, s.fused.ids, "the best tables' leaves scored")


def table_votes_stage(s: SearchState) -> None:
    """Every table and leaf votes once more, at its table's rank among the fused tables."""
    if s.question is None or s.fused is None:
        return
    level = s.ranks.level
    fused = s.fused
    votes = table_votes(fused, level, _table_of(s))
    if not votes:
        return
    # weighed by how far the fused tables stand apart
    sep = separation(
        [x for i, x in zip(fused.ids, fused.scores, strict=True) if level(i) == 1],
        s.config.evidence_top,
    )
    s.weighed = {**s.weighed, TABLE_CHANNEL: (sep, sep, 1.0)}
    s.fused = s.fuse_entities({**s.given, TABLE_CHANNEL: votes})
    s.trace.reorder("table-votes", fused.ids, s.fused.ids, "a vote at its table's rank")


def join_keys(s: SearchState) -> None:
    """The join keys between the first tables move right after the later table's first hit."""
    tables = s.config.join_key_tables
    if s.question is None or tables <= 0 or s.fused is None:
        return
    # (a snapshot decodes only the JOINS edges, not its CONTAINS)
    joins_of = partial(s.corpus.edges_out.of_type, edge_type="JOINS")
    infer = name_joins(s.corpus.entities) if s.config.infer_joins else None
    lifted = join_key_order(s.fused.ids, _table_of(s), joins_of, tables, infer)
    if lifted is not None:
        s.order = [i for i, _ in lifted]
        note = "a join key between two of the first tables, after the later one"
        s.trace.reorder("join-keys", s.fused.ids, s.ordered_ids(), note, up_only=True)


def entity_scores(s: SearchState) -> None:
    """The entity list's shown scores: non-increasing, a moved hit lifted (the score rule)."""
    fused = s.fused if s.fused is not None else fuse({})
    s.fused = fused
    order = list(range(len(fused))) if s.order is None else s.order
    scores = [fused.scores[i] for i in order]
    shown = settle(s.ordered_ids(), scores, s.trace, "join-keys")
    corpus = s.corpus
    words = schema_words(
        lambda: corpus.coverage(s.ds),
        s.ranks.entity,
        s.ranks.bridges,
        s.question,
        corpus.entities.get,
    )
    s.entities = _Ordered(
        fused, list(zip(order, shown, strict=True)), weighed=s.weighed, words=words, trace=s.trace
    )


def _table_of(s: SearchState) -> Callable[[str], str | None]:
    return s.corpus._table_of_id(s.ranks.level)


# -- the memory list --------------------------------------------------------------------------


def read_memory_question(s: SearchState) -> None:
    """How close each memory's own text is to the question, and whether it covers more."""
    s.memory_lists = {c: h for c, h in s.ranks.memory.items() if h}
    if s.question is None:
        return
    share = s.corpus._question_share(s.question, s.ds)
    s.close = s.corpus._closeness(share, plain_share(s.question))
    s.leads = s.corpus._covers_more(share, plain_share(s.question, stop_words_only=True))


def memory_words(s: SearchState) -> None:
    """Full text's memories ranked by the share of the question their own words hold."""
    if s.close is not None and "fulltext" in s.memory_lists:
        s.memory_lists["words"] = s.corpus._words_ranking(s.memory_lists.pop("fulltext"), s.close)


def fuse_memories(s: SearchState) -> None:
    """Reciprocal Rank Fusion of the memory channels."""
    s.memory_fused = fuse(s.memory_lists, k=s.config.rrf_k)


def memory_tags(s: SearchState) -> None:
    """Memories tagged with the ranked entities, after those the request matched."""
    cfg = s.config
    entities = s.entities
    fused = s.memory_fused
    if "bm25" not in s.channels or not s.corpus.memories or fused is None:
        return
    if entities is None or not entities.order:
        return
    ids = [i for i in entities.ids(cfg.tag_depth + len(s.named)) if i not in s.named]
    text = s.ranks.memory.get("fulltext", ())
    tagged = s.corpus._tag_ranking(ids[: cfg.tag_depth], s.admitted, text, cfg.channel_depth)
    seen = set(fused.ids)
    rest = [h for h in tagged if h[0] not in seen]
    if not rest:
        return
    tail = fuse({"tags": rest}, k=cfg.rrf_k)
    s.memory_fused = fused.then(tail)
    # after the memories the request matched: the tail's scores scaled below their last
    n0 = len(fused)
    last = fused.scores[-1] if n0 else None
    top = tail.scores[0]
    if last is not None and top >= last:
        first = between(last, None, top)
        scale = first / top if last > 0 and top > 0 else None
        for j, own in enumerate(tail.scores):
            adj = own * (scale - 1.0) if scale is not None else first - top
            s.memory_adjust[n0 + j] = adj
            s.memory_trace.note(
                "memory-tags", tail.ids[j], 0, n0 + j + 1, "tagged with a ranked entity", adj
            )
    else:
        note = "tagged with a ranked entity"
        s.memory_trace.reorder("memory-tags", fused.ids, s.memory_fused.ids, note)


def paraphrase_order(s: SearchState) -> None:
    """Paraphrases of one example query ordered by the share of the question they hold."""
    fused = s.memory_fused
    if s.close is None or fused is None or len(fused) < 2:
        return
    moved = same_query_order(fused.ids, s.corpus._query_key, s.close)
    if moved is not None:
        s.memory_order = [i for i, _ in moved]
        after = [fused.ids[i] for i in s.memory_order]
        note = "a paraphrase of the same example query, closer to the question"
        s.memory_trace.reorder("paraphrase-order", fused.ids, after, note)


def memory_scores(s: SearchState) -> None:
    """The memory list's shown scores, and which memories may take a turn in ``results``."""
    fused = s.memory_fused if s.memory_fused is not None else fuse({})
    order = list(range(len(fused))) if s.memory_order is None else s.memory_order
    ids = [fused.ids[i] for i in order]
    adjust = s.memory_adjust
    own = [fused.scores[i] + adjust.get(i, 0.0) for i in order]
    shown = settle(ids, own, s.memory_trace, "paraphrase-order")
    memories = s.corpus.memories
    entities = s.entities
    # A memory that only tags (or only dense retrieval) reaches takes no place from an
    # entity in ``results`` unless one of its own tags is an entity shown there.
    depth = s.config.merge_tag_depth + len(s.named)
    shown_ids = set() if entities is None else set(entities.ids(depth)) - s.named

    def matched(i: int) -> bool:
        f = fused.fused(i)
        if any(c in f.channels for c in _DIRECT_MEMORY_CHANNELS):
            return True
        return "tags" in f.channels and not shown_ids.isdisjoint(memories[fused.ids[i]].entities)

    s.memories = _Ordered(
        fused, list(zip(order, shown, strict=True)), matched, trace=s.memory_trace
    )


# -- results ----------------------------------------------------------------------------------


def memory_lead(s: SearchState) -> None:
    """A memory goes first when it covers more of the question than the first entity."""
    s.lead = True


def memory_runs(s: SearchState) -> None:
    """Up to ``memory_run`` memories in a row, each covering more than the entity it passes."""
    s.run = s.config.memory_run


def merge(s: SearchState) -> None:
    """``results``: entities and memories in turn (a memory only if the request matches it)."""
    assert s.entities is not None and s.memories is not None
    s.merged = merge_kinds(
        s.entities,
        s.memories,
        s.req.max_results,
        s.leads,
        lead=s.lead,
        run=s.run,
        trace=s.merge_trace,
    )
    if not s.merged and not s.no_input:
        s.warnings.append(
            "no results: nothing matched"
            + (f" in datasource '{s.ds}'" if s.ds else "")
            + (" within the filter" if s.allow is not None else "")
        )


def _stage(
    name: str, run: Callable[[SearchState], None], switchable: bool = True
) -> Stage[SearchState]:
    """A stage documented by its entry point's docstring (one line)."""
    return Stage(name, " ".join((run.__doc__ or "").split()), run, switchable)


ENTITY_PIPELINE: Pipeline[SearchState] = Pipeline(
    "entities",
    (
        _stage("read-question", read_question, switchable=False),
        _stage("channels", rank_channels, switchable=False),
        _stage("schema-over-fulltext", schema_over_fulltext),
        _stage("evidence-weights", evidence_weights_stage),
        _stage("unlisted-votes", unlisted_votes_stage),
        _stage("fuse", fuse_entities, switchable=False),
        _stage("dense-columns", dense_columns_stage),
        _stage("table-votes", table_votes_stage),
        _stage("join-keys", join_keys),
        _stage("entity-scores", entity_scores, switchable=False),
        _stage("read-memories", read_memory_question, switchable=False),
        _stage("memory-words", memory_words),
        _stage("fuse-memories", fuse_memories, switchable=False),
        _stage("memory-tags", memory_tags),
        _stage("paraphrase-order", paraphrase_order),
        _stage("memory-scores", memory_scores, switchable=False),
        _stage("memory-lead", memory_lead),
        _stage("memory-runs", memory_runs),
        _stage("merge", merge, switchable=False),
    ),
)
