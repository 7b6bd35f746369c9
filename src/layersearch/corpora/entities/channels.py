"""The channels of an entity search: the names the request gives, bm25 over the
memories tagged with them, the schema channel and full text, the vector channel, and
the newest memories when nothing is asked (stages ``read-question`` and ``channels``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from layersearch.corpora.entities.rank import (
    _COVERAGE_FUSION_LEVEL,
    _memory_order,
    dense_in_context,
    fulltext_searches,
)
from layersearch.corpora.entities.state import SearchState
from layersearch.ranking.analyzer import analyze_query
from layersearch.ranking.static_words import static_bridges

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.types import Memory

__all__ = ["lexical", "rank_channels", "read_question", "vector_channel"]


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
            lexical(s, s.question)
        if "vector" in s.channels and s.vector is not None:
            vector_channel(s, s.question)
    if s.no_input:
        s.warnings.append("no entities, query or question given: showing the newest memories")
        s.ranks.memory["recent"] = newest(s.corpus.memories, s.admitted, depth)


def newest(
    memories: Mapping[str, Memory], admitted: Callable[[str], bool], depth: int
) -> list[tuple[str, float]]:
    """The newest memories, for a search that asks nothing."""
    newest = sorted(
        (m for m in memories.values() if admitted(m.id)),
        key=lambda m: (m.created_at, _memory_order(m.id)),
        reverse=True,
    )
    return [(m.id, 0.0) for m in newest[:depth]]


def vector_channel(s: SearchState, question: str) -> None:
    """The vector channel: entities in their table's context, and memories apart."""
    corpus = s.corpus
    vector = s.vector
    assert vector is not None
    depth, ds, allow_set, admitted, ranks = (
        s.config.channel_depth,
        s.ds,
        s.allow,
        s.admitted,
        s.ranks,
    )
    hits = [h for h in vector(question, depth, ds, allow_set, False)]
    hits = [h for h in hits if admitted(h[0]) and h[0] not in corpus.memories]
    hits = [h for h in dense_in_context(hits, corpus.entities) if admitted(h[0])]
    if hits:
        ranks.entity["vector"] = hits
    if corpus.memories:
        found = vector(question, depth, ds, allow_set, True)
        mems = [h for h in found if h[0] in corpus.memories and admitted(h[0])]
        if mems:
            ranks.memory["vector"] = mems


def lexical(s: SearchState, question: str) -> None:
    """The schema channel and full text (entities and memories in their own lists);
    ``s.words``: the question's words read through the embedder, for the schema
    channel."""
    corpus = s.corpus
    ds, allow_set, admitted, ranks, warnings, words = (
        s.ds,
        s.allow,
        s.admitted,
        s.ranks,
        s.warnings,
        s.words,
    )
    # Rankings are prefixes of deeper ones: the over-fetch only pays when a filter
    # may drop hits (a scoped search has its datasource's own index).
    top = s.config.channel_depth
    depth = top if allow_set is None else top * 2
    scopes = [ds] if ds is not None else None
    # Full text of a large index ranks on workers while the schema channel ranks
    # here: tantivy searches outside the GIL, so a search pays for the longest of
    # them; a small one ranks here first (``process.fulltext_future``). With
    # memories present each kind is its own search, so that ten thousand saved
    # examples cannot push every entity out of the entity list, nor the reverse.
    ft_levels: dict[str, int] = {}
    pending, pending_memories = fulltext_searches(
        corpus.fulltext,
        corpus.entities,
        bool(corpus.memories),
        question,
        scopes,
        allow_set,
        ft_levels,
        top,
    )
    try:
        index = s.index()
        ranks.bridges = (
            words(index, question)
            if words is not None
            else static_bridges(index, question, partial(entity_names, corpus.entities))
        )
        ranked, node_levels = index.search_levels(question, depth, extra=ranks.bridges)
    except BaseException:
        pending.cancel()
        if pending_memories is not None:
            pending_memories.cancel()
        raise
    # The schema channel says which of its ids are tables and which leaves: most
    # of the ids fusion needs a level for need no lookup in the snapshot.
    for (doc_id, _), at in zip(ranked, node_levels, strict=True):
        ranks.levels[doc_id] = _COVERAGE_FUSION_LEVEL.get(at, -1)
    schema = [h for h in ranked if admitted(h[0])][:top]
    if ds is not None and len(schema) < top:
        schema += unreached_tables(index, schema, admitted, top)
    hits = pending.result()
    ranks.levels.update(ft_levels)
    # The index on disk may already hold a document another process added after
    # this snapshot was taken: it is answered by the next snapshot, not half now.
    hits = [h for h in hits if ranks.known(h[0]) and h[0] not in corpus.memories]
    mem_hits = [] if pending_memories is None else pending_memories.result()
    mem_hits = [h for h in mem_hits if h[0] in corpus.memories]
    if not hits and not mem_hits and not has_words(question):
        warnings.append("question has no searchable words (only stop words or punctuation)")
    if schema:
        ranks.entity["schema"] = schema
    if hits:
        ranks.entity["fulltext"] = hits
    if mem_hits:
        ranks.memory["fulltext"] = mem_hits


def unreached_tables(
    index: CoverageIndex,
    ranked: list[tuple[str, float]],
    admitted: Callable[[str], bool],
    depth: int,
) -> list[tuple[str, float]]:
    """The datasource's tables the schema channel did not rank, after those it did.

    A search confined to one datasource asks which of its tables matter, and
    every one of them is a candidate: a question that names its subject only by
    a value ("Jetblue Airways", "English") or a synonym reaches none of a table's
    words, but the table is still more likely than nothing. The most joined
    tables come first; they score 0, below every match.
    """
    seen = {doc_id for doc_id, _ in ranked}
    room = depth - len(ranked)
    out: list[tuple[str, float]] = []
    for table in index.tables_by_links():
        if len(out) >= room:
            break
        if table not in seen and admitted(table):
            out.append((table, 0.0))
    return out


def entity_names(entities: Iterable[str]) -> Iterator[str]:
    """Every entity's own name, the last part of its id (read without decoding)."""
    return (i.rsplit(".", 1)[-1] for i in entities)


@lru_cache(maxsize=1024)
def has_words(text: str) -> bool:
    """Whether the question has a word analysis keeps."""
    return bool(analyze_query(text))
