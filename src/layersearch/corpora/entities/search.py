"""One search of the entity corpus: the channels a request asks for, each kind's
fused list, and the hits (the search half of :class:`EntityCorpus`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.documents import (
    describe_entity,
    describe_memory,
    entity_doc,
    memory_doc,
    query_key,
    render_entity,
    render_memory,
)
from layersearch.corpora.entities.lists import Picked, _Ordered
from layersearch.corpora.entities.rank import (
    _COVERAGE_FUSION_LEVEL,
    _LEAF_KINDS,
    _memory_order,
    _table_of,
    dense_in_context,
    fulltext_searches,
)
from layersearch.corpora.entities.stages import (
    ENTITY_PIPELINE,
    SearchState,
    VectorChannel,
    WordReader,
)
from layersearch.corpora.entities.words import analysed_tokens, surface_words
from layersearch.ranking.explain import explain, explain_stages
from layersearch.ranking.pipeline import Trace
from layersearch.ranking.static_words import static_bridges
from layersearch.semantic.model import Entity
from layersearch.types import ChannelScore, Hit, SearchRequest, SearchResponse

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EdgeMap, EntityMap
    from layersearch.ranking.bm25 import EntityOverlapIndex
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.semantic.canonical import Resolver
    from layersearch.types import Memory

__all__ = ["ENTITY_WORDS", "CorpusSearch", "VectorChannel", "WordReader"]

#: Analysed entity documents kept for the merge of ``results`` (beside every memory's).
ENTITY_WORDS = 50_000
#: The ranking a search runs with when it is given none (every default, every stage).
DEFAULT_RANKING = EntityRankingConfig()


class CorpusSearch:
    """The search methods of :class:`~layersearch.corpora.entities.corpus.EntityCorpus`
    (its data, lookups and schema indexes are declared here for the type checker)."""

    if TYPE_CHECKING:
        entities: EntityMap
        memories: dict[str, Memory]
        edges_out: EdgeMap
        fulltext: FullTextIndex
        resolver: Resolver
        _tags: tuple[dict[str, list[str]], dict[str, list[str]]] | None
        _words: dict[str, frozenset[str]]
        _surface: dict[str, frozenset[str]]
        _doc_plain: dict[str, frozenset[str]]
        _doc_words: dict[str, frozenset[str]]
        _query_keys: dict[str, str | None]

        def check_request(self, req: SearchRequest) -> list[str]: ...
        def coverage(self, datasource: str | None = None) -> CoverageIndex: ...
        def mentions(self, entity_id: str) -> list[str]: ...
        def memory_scopes(self, m: Memory) -> set[str]: ...
        def _kind_lookup(self) -> Callable[[str], str | None]: ...
        def _overlap_index(
            self, datasource: str | None, allow: frozenset[str] | None
        ) -> EntityOverlapIndex: ...

    def search(
        self,
        req: SearchRequest,
        *,
        channels: Sequence[str] | None = None,
        allow: Collection[str] | None = None,
        vector: VectorChannel | None = None,
        warnings: list[str] | None = None,
        words: WordReader | None = None,
        ranking: EntityRankingConfig | None = None,
    ) -> SearchResponse:
        """Entities and memories ranked in their own lists, then merged: the stages of
        ``stages.ENTITY_PIPELINE`` with ``ranking``'s settings (the defaults when None);
        the buckets a request sizes come from the same two lists. ``channels``: the
        request's channels, when :meth:`check_request` already checked it (else it is
        checked here)."""
        if channels is None:
            channels = self.check_request(req)
        cfg = DEFAULT_RANKING if ranking is None else ranking
        state = SearchState(
            corpus=self,
            req=req,
            config=cfg,
            channels=channels,
            allow=frozenset(allow) if allow is not None else None,
            vector=vector,
            words=words,
            warnings=list(warnings or []),
        )
        ENTITY_PIPELINE.run(state, cfg.without)
        assert state.entities is not None and state.memories is not None
        results = self._hits(state.merged, req, state.merge_trace)
        resp = SearchResponse(results=results, warnings=state.warnings)
        self._buckets(resp, req, state.entities, state.memories)
        return resp

    def _newest(self, admitted: Callable[[str], bool], depth: int) -> list[tuple[str, float]]:
        """The newest memories, for a search that asks nothing."""
        newest = sorted(
            (m for m in self.memories.values() if admitted(m.id)),
            key=lambda m: (m.created_at, _memory_order(m.id)),
            reverse=True,
        )
        return [(m.id, 0.0) for m in newest[:depth]]

    def _vector(self, s: SearchState, question: str) -> None:
        """The vector channel: entities in their table's context, and memories apart."""
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
        hits = [h for h in hits if admitted(h[0]) and h[0] not in self.memories]
        hits = [h for h in dense_in_context(hits, self.entities) if admitted(h[0])]
        if hits:
            ranks.entity["vector"] = hits

            def cosine(ids: Collection[str]) -> dict[str, float]:
                # the question's vector is cached: this ranks only the given ids
                wanted = frozenset(ids) if allow_set is None else allow_set.intersection(ids)
                if not wanted:
                    return {}
                found = vector(question, len(wanted), ds, wanted, False)
                return {i: s for i, s in found if admitted(i)}

            ranks.dense = cosine
        if self.memories:
            found = vector(question, depth, ds, allow_set, True)
            mems = [h for h in found if h[0] in self.memories and admitted(h[0])]
            if mems:
                ranks.memory["vector"] = mems

    def _buckets(
        self, resp: SearchResponse, req: SearchRequest, entities: _Ordered, memories: _Ordered
    ) -> None:
        """The lists a request sizes apart from ``results``: entities, notes, examples."""
        if req.max_entities is not None:
            resp.entities = self._hits(entities.top(req.max_entities), req)
        if req.max_memories is not None:
            notes = memories.where(lambda i: self.memories[i].query is None, req.max_memories)
            resp.memories = self._hits(notes, req)
        if req.max_example_queries is not None:
            examples = memories.where(
                lambda i: self.memories[i].query is not None, req.max_example_queries
            )
            resp.example_queries = self._hits(examples, req)

    def _lexical(self, s: SearchState, question: str) -> None:
        """The schema channel and full text (entities and memories in their own lists);
        ``s.words``: the question's words read through the embedder, for the schema
        channel."""
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
            self.fulltext,
            self.entities,
            bool(self.memories),
            question,
            scopes,
            allow_set,
            ft_levels,
            top,
        )
        try:
            index = self.coverage(ds)
            ranks.bridges = (
                words(index, question)
                if words is not None
                else static_bridges(index, question, self._entity_names)
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
            schema += self._unreached_tables(ds, schema, admitted, top)
        hits = pending.result()
        ranks.levels.update(ft_levels)
        # The index on disk may already hold a document another process added after
        # this snapshot was taken: it is answered by the next snapshot, not half now.
        hits = [h for h in hits if ranks.known(h[0]) and h[0] not in self.memories]
        mem_hits = [] if pending_memories is None else pending_memories.result()
        mem_hits = [h for h in mem_hits if h[0] in self.memories]
        if not hits and not mem_hits and not self._has_words(question):
            warnings.append("question has no searchable words (only stop words or punctuation)")
        if schema:
            ranks.entity["schema"] = schema
        if hits:
            ranks.entity["fulltext"] = hits
        if mem_hits:
            ranks.memory["fulltext"] = mem_hits

    def question_share(
        self, question: str, ds: str | None = None
    ) -> Callable[[Collection[str]], float]:
        """:meth:`_question_share` for other corpora's hits: a scoped search reads the share
        of the question every source's hits hold with the same idf (``corpora.scope``)."""
        return self._question_share(question, ds)

    def document_words(self, item_id: str) -> frozenset[str]:
        """The analysed words of an entity's or a memory's full-text document (kept per
        snapshot); empty for an id the corpus does not hold."""
        if item_id in self.memories:
            return self._memory_doc_words(item_id)
        e = self.entities.get(item_id)
        return self._entity_words(e) if e is not None else frozenset()

    def _question_share(self, question: str, ds: str | None) -> Callable[[Collection[str]], float]:
        """The idf-weighted share of ``question``'s words among the given analysed tokens.
        Idf is the schema index's (a word it does not know counts as its rarest)."""
        from layersearch.ranking.analyzer import analyze_query

        words = list(dict.fromkeys(analyze_query(question)))
        # (word, idf) pairs and their total, read from the index on the first call
        pairs: list[tuple[str, float]] = []
        totals: list[float] = []

        def share(have: Collection[str]) -> float:
            if not totals:
                cov = self.coverage(ds)
                rare = cov.rarest_idf()
                pairs.extend(
                    (w, float(cov.idf[j]) if (j := cov.vocab.get(w)) is not None else rare)
                    for w in words
                )
                totals.append(sum(w for _, w in pairs))
            total = totals[0]
            if total <= 0:
                return 0.0
            held = 0.0  # the same additions, in the same order, as sum() over the held words
            for word, w in pairs:
                if word in have:
                    held += w
            return held / total

        return share

    def _closeness(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str], tuple[float, float]]:
        """How close a memory's own text (learning and description) is to the question:
        the idf-weighted share of the question's analysed words it holds (``share``),
        then, to order memories that share alike, the share of the question's plain words
        (``plain``: lower-cased, stop words and inflections kept) it holds. Analysis
        folds "How many accounts do we have?" and "Count the number of accounts." to the
        same evidence (``account``); of two saved examples that say the question's words,
        the one worded as the question comes first. Both are shares of the question, not
        similarities, so no length enters: memories that tie on both keep their
        full-text order."""
        cache: dict[str, tuple[float, float]] = {}

        def close(memory_id: str) -> tuple[float, float]:
            got = cache.get(memory_id)
            if got is None:
                mine = self._memory_words(memory_id)
                got = cache[memory_id] = (share(mine), plain(self._memory_surface(memory_id)))
            return got

        return close

    def _memory_doc_plain(self, memory_id: str) -> frozenset[str]:
        """The plain words of a memory's whole document, kept per snapshot."""
        words = self._doc_plain.get(memory_id)
        if words is None:
            doc = memory_doc(self.memories[memory_id]).fields
            # the learning and description's own words are kept apart: read them once
            words = self._memory_surface(memory_id) | surface_words(doc["formula"], doc["tags"])
            self._doc_plain[memory_id] = words
        return words

    def _doc_plain_words(self, e: Entity) -> frozenset[str]:
        """The plain words of an entity's full-text document, kept as :meth:`_entity_words`
        keeps its analysed ones."""
        words = self._doc_plain.get(e.id)
        if words is None:
            if len(self._doc_plain) >= ENTITY_WORDS + len(self.memories):
                self._doc_plain.clear()
            words = self._doc_plain[e.id] = surface_words(*entity_doc(e).fields.values())
        return words

    def _memory_surface(self, memory_id: str) -> frozenset[str]:
        """The plain words of a memory's learning and description, kept per snapshot."""
        words = self._surface.get(memory_id)
        if words is None:
            m = self.memories[memory_id]
            words = self._surface[memory_id] = surface_words(m.learning, m.description)
        return words

    def _covers_more(
        self,
        share: Callable[[Collection[str]], float],
        plain: Callable[[Collection[str]], float],
    ) -> Callable[[str, str], bool]:
        """Whether a memory accounts for more of the question than an entity does: the
        share (:meth:`_question_share`) of the question's words found in the memory's text
        (its learning, description, query and tag names) against the share found in the
        entity's text with its table's; when both hold the same share (more than none),
        the share of the question's stop words (``plain``: the words that say how it is
        asked, which analysis drops) in the same two texts. Rank fusion says how each
        kind's hits compare among themselves, not across kinds; this puts the two heads on
        one scale. An entity's text is names and descriptions, a saved question is worded
        as questions are: asked "How many farms are there?", the example saved with those
        words leads the column ``Farm_ID``, which holds the same content word. A keyword
        search ("store") has no stop words, and its entity keeps the lead."""

        def leads(memory_id: str, entity_id: str) -> bool:
            mine = share(self._memory_doc_words(memory_id))
            e = self.entities.get(entity_id)
            if e is None:
                return mine > 0
            words = self._entity_words(e)
            table = _table_of(e, self.entities)
            t = self.entities[table] if table is not None and table != e.id else None
            if t is not None:
                words = words | self._entity_words(t)
            theirs = share(words)
            if mine != theirs or mine <= 0:
                return mine > theirs
            said = self._doc_plain_words(e)
            if t is not None:
                said = said | self._doc_plain_words(t)
            return plain(self._memory_doc_plain(memory_id)) > plain(said)

        return leads

    def _memory_words(self, memory_id: str) -> frozenset[str]:
        """The analysed words of a memory's own text (learning and description), kept
        per snapshot: the memory list reads them for every question."""
        words = self._words.get(memory_id)
        if words is None:
            m = self.memories[memory_id]
            words = self._words[memory_id] = frozenset(analysed_tokens((m.learning, m.description)))
        return words

    def _memory_doc_words(self, memory_id: str) -> frozenset[str]:
        """The analysed words of a memory's whole document (learning, description, query,
        tag names), kept per snapshot: the merge of ``results`` reads them at every turn."""
        words = self._doc_words.get(memory_id)
        if words is None:
            doc = memory_doc(self.memories[memory_id]).fields
            # the learning and description's own words are kept apart: analyse them once
            words = self._memory_words(memory_id) | analysed_tokens((doc["formula"], doc["tags"]))
            self._doc_words[memory_id] = words
        return words

    def _query_key(self, memory_id: str) -> str | None:
        """:func:`query_key` of a memory, kept per snapshot."""
        if memory_id not in self._query_keys:
            self._query_keys[memory_id] = query_key(self.memories[memory_id])
        return self._query_keys[memory_id]

    def _entity_words(self, e: Entity) -> frozenset[str]:
        """The analysed words of an entity's full-text document, kept for the entities
        searches merged against (at most ENTITY_WORDS of them)."""
        words = self._doc_words.get(e.id)
        if words is None:
            if len(self._doc_words) >= ENTITY_WORDS + len(self.memories):
                self._doc_words.clear()
            words = self._doc_words[e.id] = frozenset(
                analysed_tokens(entity_doc(e).fields.values())
            )
        return words

    def _words_ranking(
        self, text_hits: Sequence[tuple[str, float]], close: Callable[[str], tuple[float, float]]
    ) -> list[tuple[str, float]]:
        """``words``: the memories full text found, ranked by the share of the question's
        words their own text holds, then by the share of its plain words
        (:meth:`_closeness`; ties in full-text order). BM25 ranks by term weights
        normalised by length, so a short note that shares a few rare words outranks one
        that says everything the question says; this ranks by how much of it is said."""
        scored = [(mid, close(mid)) for mid, _ in text_hits]
        order = sorted(range(len(scored)), key=lambda r: (-scored[r][1][0], -scored[r][1][1], r))
        return [(scored[r][0], scored[r][1][0]) for r in order]

    def _tag_ranking(
        self,
        entity_ids: Sequence[str],
        admitted: Callable[[str], bool],
        text_hits: Sequence[tuple[str, float]] = (),
        depth: int = DEFAULT_RANKING.channel_depth,
    ) -> list[tuple[str, float]]:
        """``tags``: memories tagged with the ranked ``entity_ids`` (see the stage
        ``memory-tags``), the first ``depth``."""
        by_tag, by_table = self._tag_index()
        # Among memories tagged alike, the one whose words match the question goes first.
        words = {mid: r for r, (mid, _) in enumerate(text_hits)}
        last = len(words)
        # A memory's place is where one of its tags first ranks. The tag lists are in
        # memory order and the places only grow, so the memories come out in place
        # order group by group, and the walk stops once a group fills ``depth``.
        seen: set[str] = set()
        walked: set[str] = set()  # tables whose memories are all in ``seen`` already
        ranked: list[tuple[str, float]] = []
        for pos, eid in enumerate(entity_ids):
            table = eid if eid in by_table else eid.rsplit(".", 1)[0]
            of_table = None if table in walked else by_table.get(table)
            walked.add(table)
            for at, mids in ((float(pos), by_tag.get(eid)), (pos + 0.5, of_table)):
                if not mids:  # most ranked entities have no memory tagged with them
                    continue
                group = [m for m in mids if m not in seen]
                seen.update(group)
                group = [m for m in group if admitted(m)]
                group.sort(key=lambda m: words.get(m, last))  # stable: memory order kept
                ranked.extend((m, 1.0 / (1.0 + at)) for m in group)
            if len(ranked) >= depth:
                break
        return ranked[:depth]

    def _tag_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """tag → memories tagged with it; table → memories tagged with it or its leaves."""
        if self._tags is None:
            by_tag: dict[str, list[str]] = {}
            by_table: dict[str, list[str]] = {}
            for m in sorted(self.memories.values(), key=lambda m: _memory_order(m.id)):
                tables: set[str] = set()
                for t in m.entities:
                    if t.startswith("memory:"):
                        continue
                    by_tag.setdefault(t, []).append(m.id)
                    tables.update(self._tag_keys_of(t))
                for table in sorted(tables):
                    by_table.setdefault(table, []).append(m.id)
            self._tags = (by_tag, by_table)
        return self._tags

    def _tag_keys_of(self, tag: str) -> list[str]:
        """A tag's table (itself for a model); none for a datasource."""
        kind = self._kind_lookup()(tag)
        if kind == "model":
            return [tag]
        if kind in _LEAF_KINDS:
            return [tag.rsplit(".", 1)[0]]
        return []

    def _hits(
        self, picked: Sequence[Picked], req: SearchRequest, merged: Trace | None = None
    ) -> list[Hit]:
        """The hits of a list as shown (``merged``: what the merge did, for ``results``)."""
        out = []
        for lst, i, score in picked:
            doc_id = lst.fused.ids[i]
            hit = self.hit(doc_id, score, compact=req.compact)
            if req.explain:
                moves = lst.trace.moves(doc_id) + (merged.moves(doc_id) if merged else [])
                hit.explanation = explain(lst.fused.fused(i), lst.weighed, lst.words)
                hit.stages = explain_stages(moves) or None
            out.append(hit)
        return out

    def _unreached_tables(
        self,
        ds: str,
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
        for table in self.coverage(ds).tables_by_links():
            if len(out) >= room:
                break
            if table not in seen and admitted(table):
                out.append((table, 0.0))
        return out

    def _table_of_id(self, level: Callable[[str], int]) -> Callable[[str], str | None]:
        """:func:`_table_of` by id, from fusion levels and visibility: nothing is decoded."""
        visible = self.entities.is_visible
        found: dict[str, str | None] = {}  # per search: the table votes ask ~100 times

        def table_of(doc_id: str) -> str | None:
            if doc_id in found:
                return found[doc_id]
            at = level(doc_id)
            table = None
            if at >= 0:  # a model or a leaf
                table = doc_id if at == 1 else doc_id.rsplit(".", 1)[0]
                if not (level(table) == 1 and visible(table)):
                    table = None
            found[doc_id] = table
            return table

        return table_of

    def _entity_names(self) -> Iterator[str]:
        """Every entity's own name, the last part of its id (read without decoding)."""
        return (i.rsplit(".", 1)[-1] for i in self.entities)

    @staticmethod
    @lru_cache(maxsize=1024)
    def _has_words(text: str) -> bool:
        from layersearch.ranking.analyzer import analyze_query

        return bool(analyze_query(text))

    def hit(
        self,
        doc_id: str,
        score: float,
        *,
        compact: bool,
        explanation: list[ChannelScore] | None = None,
    ) -> Hit:
        m = self.memories.get(doc_id)
        if m is not None:
            return Hit(
                kind="memory",
                id=m.id,
                score=round(score, 6),
                description=describe_memory(m),
                text=None if compact else render_memory(m),
                explanation=explanation,
            )
        e = self.entities[doc_id]
        return Hit(
            kind=e.kind,  # type: ignore[arg-type]
            id=e.id,
            score=round(score, 6),
            description=describe_entity(e),
            text=None
            if compact
            else render_entity(e, self.edges_out.get(e.id, []), self.mentions(e.id)),
            explanation=explanation,
        )
