"""One search of the entity corpus: the channels a request asks for, each kind's
fused list, and the hits (the search half of :class:`EntityCorpus`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from layersearch.corpora.entities.channels import static_reader
from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.documents import (
    describe_entity,
    describe_memory,
    render_entity,
    render_memory,
)
from layersearch.corpora.entities.lists import Picked, _Ordered
from layersearch.corpora.entities.stages import ENTITY_PIPELINE
from layersearch.corpora.entities.state import (
    SearchState,
    VectorChannel,
    WordReader,
    resolve_scope,
)
from layersearch.corpora.entities.texts import ENTITY_WORDS, CorpusText
from layersearch.ranking.explain import explain, explain_stages
from layersearch.ranking.pipeline import Trace
from layersearch.types import ChannelScore, Hit, SearchRequest, SearchResponse

if TYPE_CHECKING:
    from layersearch.corpora.snapshot import EdgeMap, EntityMap
    from layersearch.ranking.fulltext import FullTextIndex
    from layersearch.semantic.canonical import Resolver
    from layersearch.types import Memory

__all__ = ["ENTITY_WORDS", "CorpusSearch", "VectorChannel", "WordReader"]

#: The ranking a search runs with when it is given none (every default, every stage).
DEFAULT_RANKING = EntityRankingConfig()


class CorpusSearch(CorpusText):
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

        def check_request(self, req: SearchRequest) -> list[str]: ...
        def mentions(self, entity_id: str) -> list[str]: ...
        def _kind_lookup(self) -> Callable[[str], str | None]: ...

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
            # the datasource and filter resolved here, once: no stage reads them
            scope=resolve_scope(
                self, req.datasource, frozenset(allow) if allow is not None else None, vector
            ),
            config=cfg,
            channels=channels,
            # the schema channel's reader: the embedder's, else the shipped word vectors'
            words=words
            if words is not None or not req.question
            else static_reader(self.entities, cfg.word_neighbours()),
            warnings=list(warnings or []),
            asked=(req.entities, req.query, req.question),
            max_results=req.max_results,
            trace_stages=req.explain and not req._channels_only,
            explained=req.explain,
            rank_memories=not req._entities_only,
        )
        off = cfg.without if vector is not None else cfg.without | req._lexical_without
        for stage in ENTITY_PIPELINE.active(off):
            stage.run(state)
        assert state.entities is not None and state.memories is not None
        results = self._hits(state.merged, req, state.merge_trace)
        resp = SearchResponse(results=results, warnings=state.warnings)
        self._buckets(resp, req, state.entities, state.memories)
        return resp

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

    def _hits(
        self, picked: Sequence[Picked], req: SearchRequest, merged: Trace | None = None
    ) -> list[Hit]:
        """The hits of a list as shown (``merged``: what the merge did, for ``results``)."""
        if req._entities_only and not req.explain:
            return self._bare_hits(picked)
        out = []
        unexplained = req._explain_entities if req._channels_only else None
        for lst, i, score in picked:
            doc_id = lst.fused.ids[i]
            hit = self.hit(doc_id, score, compact=req.compact)
            if req.explain and (unexplained is None or unexplained > 0):
                if unexplained is not None and hit.kind not in ("memory", "datasource"):
                    unexplained -= 1
                moves = lst.trace.moves(doc_id) + (merged.moves(doc_id) if merged else [])
                hit.explanation = explain(lst.fused.fused(i), lst.weighed, lst.words)
                hit.stages = explain_stages(moves) or None
            out.append(hit)
        return out

    def _bare_hits(self, picked: Sequence[Picked]) -> list[Hit]:
        """A plan's part search: each hit's kind, id and score only (the plan reads no
        more), its kind read without decoding the entity where the map can."""
        kind_of = getattr(self.entities, "kind_of", None)
        out = []
        for lst, i, score in picked:
            doc_id = lst.fused.ids[i]
            kind = kind_of(doc_id) if kind_of is not None else None
            if kind is None:  # (a map that cannot, or an id it does not hold: decoded)
                kind = self.entities[doc_id].kind
            out.append(Hit.model_construct(kind=kind, id=doc_id, score=round(score, 6)))
        return out

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
