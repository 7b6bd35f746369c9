"""The channels of an entity search: the names the request gives, bm25 over the
memories tagged with them, the schema channel and full text, the vector channel, and
the newest memories when nothing is asked (stages ``read-question`` and ``channels``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from layersearch.corpora.entities.process import fulltext_future
from layersearch.corpora.entities.rank import (
    _COVERAGE_FUSION_LEVEL,
    _memory_order,
    dense_in_context,
    ids_by_hash,
)
from layersearch.corpora.entities.state import SearchState, WordReader
from layersearch.ranking.analyzer import analyze_query
from layersearch.ranking.params import WORD_NEIGHBOURS, WordNeighbours
from layersearch.ranking.static_words import static_words

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges
    from layersearch.types import Memory

__all__ = [
    "dense_channel",
    "lexical_channels",
    "newest_memories",
    "tagged_memories",
    "read_question",
    "static_reader",
]


def read_question(s: SearchState) -> None:
    """The named entities and the question (empty text is no question)."""
    entities, query, q = s.asked
    res = s.scope.resolve(entities, query)
    s.warnings.extend(res.warnings)
    s.named = frozenset(res.ids)
    s.question = q if q and q.strip() else None
    s.no_input = not entities and not query and s.question is None
    if s.named:
        # (in the resolver's order: ``input`` ranks the named ids as named)
        s.ranks.put_mixed("input", [(i, 1.0) for i in res.ids if s.scope.admits(i)])
    s.res_ids = res.ids


def tagged_memories(s: SearchState) -> None:
    """bm25: the memories tagged with the entities the search names."""
    if s.named and "bm25" in s.channels and s.rank_memories:
        idx = s.scope.overlap()
        hits = idx.search(s.res_ids, s.config.channel_depth, s.config.ancestor_weight)
        if hits:
            s.ranks.memory["bm25"] = hits


def newest_memories(s: SearchState) -> None:
    """The newest memories, when the search asks nothing."""
    if s.no_input and s.rank_memories:
        s.warnings.append("no entities, query or question given: showing the newest memories")
        s.ranks.memory["recent"] = newest(s.corpus.memories, s.scope.admits, s.config.channel_depth)


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


def dense_channel(s: SearchState) -> None:
    """The vector channel, for a question, when the store has vectors: entities in
    their table's context, and memories apart."""
    question = s.question
    if question is None or "vector" not in s.channels or s.scope.vector is None:
        return
    corpus = s.corpus
    vector = s.scope.vector
    assert vector is not None
    depth, allow_set, admitted, ranks = (
        s.config.channel_depth,
        s.scope.allow,
        s.scope.admits,
        s.ranks,
    )
    hits = [h for h in vector(question, depth, allow_set, False)]
    hits = [h for h in hits if admitted(h[0]) and h[0] not in corpus.memories]
    hits = [h for h in dense_in_context(hits, corpus.entities) if admitted(h[0])]
    if hits:
        ranks.entity["vector"] = hits
    if corpus.memories and s.rank_memories:
        found = vector(question, depth, allow_set, True)
        mems = [h for h in found if h[0] in corpus.memories and admitted(h[0])]
        if mems:
            ranks.memory["vector"] = mems


def lexical_channels(s: SearchState) -> None:
    """The schema channel and full text, for a question (entities and memories in
    their own lists); ``s.words``: the question's words read through the embedder or
    the shipped word vectors, for the schema channel."""
    question = s.question
    if question is None or "fulltext" not in s.channels:
        return
    corpus = s.corpus
    allow_set, admitted, ranks, warnings, words = (
        s.scope.allow,
        s.scope.admits,
        s.ranks,
        s.warnings,
        s.words,
    )
    # Rankings are prefixes of deeper ones: the over-fetch only pays when a filter
    # may drop hits (a scoped search has its datasource's own index).
    top = s.config.channel_depth
    depth = top if allow_set is None else top * 2
    # Full text of a large index ranks on workers while the schema channel ranks
    # here: tantivy searches outside the GIL, so a search pays for the longest of
    # them; a small one ranks here first (``process.fulltext_future``). With
    # memories present each kind is its own search, so that ten thousand saved
    # examples cannot push every entity out of the entity list, nor the reverse.
    ft_levels: dict[str, int] = {}
    pending, pending_memories = _fulltext_searches(s, question, top, ft_levels)
    try:
        index = s.scope.index()
        ranks.bridges = words(index, question) if words is not None else ()
        ranked, node_levels = index.search_levels(
            question, depth, extra=ranks.bridges, params=s.config.schema_search()
        )
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
    if s.scope.confined and len(schema) < top:
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


def _fulltext_searches(
    s: SearchState, question: str, top: int, ft_levels: dict[str, int]
) -> tuple[Future[list[tuple[str, float]]], Future[list[tuple[str, float]]] | None]:
    """Full text's entity search and, with memories present, its memory search, started
    (``ft_levels``: the levels of the entities it returns, filled as it resolves them)."""
    corpus, scopes, allow_set = s.corpus, s.scope.fulltext_scopes, s.scope.allow
    fulltext, memories = corpus.fulltext, bool(corpus.memories)
    tokens = " ".join(analyze_query(question))  # read once for both searches
    search = partial(
        fulltext_future,
        fulltext.num_docs,
        fulltext.search,
        tokens,
        top,
        scopes=scopes,
        ids=allow_set,
        analysed=True,
    )
    pending = search(
        exclude_kinds=("memory",) if memories else (),
        resolve=ids_by_hash(corpus.entities, ft_levels),
    )
    return pending, search(kinds=("memory",)) if memories and s.rank_memories else None


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


def static_reader(entities: Iterable[str], reading: WordNeighbours = WORD_NEIGHBOURS) -> WordReader:
    """The question's words read through the shipped word vectors as their nearest
    entity names (``ranking.static_words``): the schema channel's reader when the
    embedder gives none; it reads nothing without the vectors."""
    found = static_words()
    if found is None:
        return _no_bridges
    names = partial(entity_names, entities)
    return partial(found.bridges, names=names, reading=reading, catalog=entities)


def _no_bridges(index: CoverageIndex, question: str) -> Bridges:
    return ()


def entity_names(entities: Iterable[str]) -> Iterator[str]:
    """Every entity's own name, the last part of its id (read without decoding)."""
    return (i.rsplit(".", 1)[-1] for i in entities)


@lru_cache(maxsize=1024)
def has_words(text: str) -> bool:
    """Whether the question has a word analysis keeps."""
    return bool(analyze_query(text))
