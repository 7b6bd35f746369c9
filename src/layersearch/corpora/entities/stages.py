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

from collections.abc import Callable
from functools import partial

from layersearch.corpora.entities.channels import (
    dense_channel,
    lexical_channels,
    newest_memories,
    read_question,
    tagged_memories,
)
from layersearch.corpora.entities.learned import learned_columns, learned_tables
from layersearch.corpora.entities.lists import _Ordered
from layersearch.corpora.entities.matched import schema_words
from layersearch.corpora.entities.rank import join_key_order, merge_kinds, name_joins
from layersearch.corpora.entities.state import SearchState
from layersearch.corpora.entities.words import plain_share
from layersearch.ranking.fusion import fuse, separation
from layersearch.ranking.pipeline import Pipeline, Stage, between, settle

__all__ = ["ENTITY_PIPELINE", "SearchState"]

#: Memory channels that match the request itself: named ids, tags overlapping the named
#: entities, the question's words in the memory's text, the newest (no input).
_DIRECT_MEMORY_CHANNELS = frozenset({"input", "bm25", "fulltext", "words", "recent"})


# -- the entity list --------------------------------------------------------------------------


def schema_over_fulltext(s: SearchState) -> None:
    """Once the schema channel ranked, full text's votes on tables and leaves do not count."""
    # The schema channel scores those same words with their table and database context;
    # counting their per-entity full-text ranks as well would count the words twice and
    # let isolated matches from unrelated databases back in. Datasources keep their
    # full-text rank as it was (among all entities).
    if "schema" in s.ranks.entity:
        s.superseded = {"fulltext": s.ranks.is_schema}


#: the channels whose evidence an explanation states
EVIDENCE_CHANNELS = ("schema", "vector")


def channel_evidence(s: SearchState) -> None:
    """Each channel's evidence, stated in its explanation (it weighs nothing): how far
    its tables stand out, and the share of the question it could read."""
    if s.question is None or not s.explained:
        return
    level = s.ranks.level
    for c in EVIDENCE_CHANNELS:
        ranked = s.ranks.entity.get(c)
        if not ranked:
            continue
        sep = separation([x for i, x in ranked if level(i) == 1], s.config.evidence_top)
        reach = 1.0
        if c == "schema":
            index = s.scope.index()
            reach = index.query_reach(s.question, s.ranks.bridges, s.config.question_reading())
        s.weighed[c] = (1.0, sep, min(1.0, max(0.0, reach)))


def fuse_entities(s: SearchState) -> None:
    """Reciprocal Rank Fusion of the entity channels (with the stages' weights and votes)."""
    s.fused = s.fuse_entities()
    if s.trace_stages:
        _trace_fusion_stages(s)


def _trace_fusion_stages(s: SearchState) -> None:
    """For an explanation: the fusion each stage before it changed, without that stage."""
    assert s.fused is not None
    after = s.fused.ids
    saved = s.superseded
    if s.superseded:
        s.superseded = None
        before = s.fuse_entities().ids
        s.superseded = saved
        s.trace.reorder("schema-over-fulltext", before, after, "full text's vote dropped")


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
    # (a hit no stage moved up is lifted for the last stage that reordered the list)
    shown = settle(s.ordered_ids(), scores, s.trace, s.trace.last_stage() or "join-keys")
    corpus = s.corpus
    words = schema_words(
        s.scope.index,
        s.ranks.entity,
        s.ranks.bridges,
        s.question,
        corpus.entities.get,
        s.config.question_reading(),
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
    if s.question is None or not s.rank_memories:
        return
    share = s.corpus._question_share(s.question, None, s.scope.index)
    s.close = s.corpus._closeness(share, plain_share(s.question))
    s.leads = s.corpus._covers_more(share, plain_share(s.question, stop_words_only=True))


def memory_words(s: SearchState) -> None:
    """Full text's memories ranked by the share of the question their own words hold."""
    if s.close is not None and "fulltext" in s.memory_lists:
        s.memory_lists["words"] = s.corpus._words_ranking(s.memory_lists.pop("fulltext"), s.close)


def fuse_memories(s: SearchState) -> None:
    """Reciprocal Rank Fusion of the memory channels."""
    s.memory_fused = fuse(s.memory_lists, k=s.config.rrf_k)
    text = s.ranks.memory.get("fulltext")
    if s.trace_stages and text and "words" in s.memory_lists:
        # for an explanation: the list full text's own order would have given
        lists = {c: h for c, h in s.memory_lists.items() if c != "words"}
        before = fuse({**lists, "fulltext": text}, k=s.config.rrf_k).ids
        note = "full text's memories by the share of the question they hold"
        s.memory_trace.reorder("memory-words", before, s.memory_fused.ids, note)


def memory_tags(s: SearchState) -> None:
    """Memories tagged with the ranked entities, after those the request matched."""
    cfg = s.config
    entities = s.entities
    fused = s.memory_fused
    if "bm25" not in s.channels or not s.corpus.memories or fused is None:
        return
    if not s.rank_memories:
        return
    if entities is None or not entities.order:
        return
    ids = [i for i in entities.ids(cfg.tag_depth + len(s.named)) if i not in s.named]
    text = s.ranks.memory.get("fulltext", ())
    tagged = s.corpus._tag_ranking(ids[: cfg.tag_depth], s.scope.admits, text, cfg.channel_depth)
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


def memory_scores(s: SearchState) -> None:
    """The memory list's shown scores, and which memories may take a turn in ``results``."""
    fused = s.memory_fused if s.memory_fused is not None else fuse({})
    order = list(range(len(fused)))
    ids = fused.ids
    adjust = s.memory_adjust
    own = [fused.scores[i] + adjust.get(i, 0.0) for i in order]
    shown = settle(ids, own, s.memory_trace, "memory-scores")
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
        s.max_results,
        s.leads,
        lead=s.lead,
        run=s.run,
        trace=s.merge_trace,
    )
    if not s.merged and not s.no_input:
        s.warnings.append("no results: nothing matched" + s.scope.where)


def _stage(
    name: str, run: Callable[[SearchState], None], switchable: bool = True
) -> Stage[SearchState]:
    """A stage documented by its entry point's docstring (one line)."""
    return Stage(name, " ".join((run.__doc__ or "").split()), run, switchable)


ENTITY_PIPELINE: Pipeline[SearchState] = Pipeline(
    "entities",
    (
        _stage("read-question", read_question, switchable=False),
        _stage("tagged-memories", tagged_memories, switchable=False),
        _stage("lexical-channels", lexical_channels, switchable=False),
        _stage("dense-channel", dense_channel, switchable=False),
        _stage("newest-memories", newest_memories, switchable=False),
        _stage("schema-over-fulltext", schema_over_fulltext),
        _stage("channel-evidence", channel_evidence, switchable=False),
        _stage("fuse", fuse_entities, switchable=False),
        _stage("join-keys", join_keys),
        _stage("learned-tables", learned_tables),
        _stage("learned-columns", learned_columns),
        _stage("entity-scores", entity_scores, switchable=False),
        _stage("read-memories", read_memory_question, switchable=False),
        _stage("memory-words", memory_words),
        _stage("fuse-memories", fuse_memories, switchable=False),
        _stage("memory-tags", memory_tags),
        _stage("memory-scores", memory_scores, switchable=False),
        _stage("memory-lead", memory_lead),
        _stage("memory-runs", memory_runs),
        _stage("merge", merge, switchable=False),
    ),
)
