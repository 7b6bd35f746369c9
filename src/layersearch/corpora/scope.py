"""One search across every corpus: ``scope`` (issue #24).

Each corpus ranks its own hits with the search it already has: the semantic layer and
memories with :meth:`EntityService.search`, conversation messages with
:meth:`ConversationService.search_messages`, vault notes with :meth:`VaultService.search`
(hybrid). Each source's list is one channel of the fusion core (RRF, k=60): sources'
ids never overlap, so the fused list takes the sources in turn, rank by rank, ties broken
by source (semantic, memory, vault, conversation) and then by id. ``max_per_source``
caps each source, ``max_results`` the list. When two or more sources are fused, the
places go by evidence: every hit's share of the question (the idf-weighted share of the
question's analysed words its full-text document holds, the same quantity and the same
idf for every source) is read (:meth:`ScopeService._shares`), and hits wait after every
hit in turn (:func:`waiting_tiers`): those after the first of a source with no real match
(its best share under :data:`UNMATCHED_SHARE` of the best-matched source's) and a first
hit holding under :data:`UNMATCHED_SHARE` of its own source's best, then the weak ones
(after their source's first, under :data:`WEAK_SHARE` of its best share). A source whose
hits hold the question alike keeps its turns; one whose best hit stands out keeps only
the hits close to it. A source's hits holding the top share (the largest share any hit
holds) take its first turns (:func:`leading_hits`). Hits at the same place (the same turn,
or the same tier and rank when waiting) go by their share, then by source. The entities
the best memory is tagged with go first in the entity list and never wait (two corpora
agree on them); when that memory reads the question better than the entity list, those
the entity search did not return join them.

Hit ids: an entity's id, ``memory:N``, ``conversation:<message_id>`` (a message id
starts with its conversation's id), ``vault:<slug>``; :meth:`ScopeService.inspect` opens
any of them, and the longer ``conversation:<conv_id>:<message_id>`` of earlier versions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from layersearch.calls import checkpoint
from layersearch.corpora import registry
from layersearch.corpora.entities.corpus import bounded_request
from layersearch.corpora.protocol import ScopeRun, Services
from layersearch.corpora.scope_places import (
    WEAK_SHARE,
    Ranked,
    Shares,
    leading_hits,
    memory_reads_better,
    share_note,
    tie_order,
    waiting_tiers,
)
from layersearch.corpora.scope_sources import (
    MAX_RESULTS,
    conversation_hit_id,
    entity_response,
)
from layersearch.errors import ConfigError, NotFound
from layersearch.ranking.fusion import RRF_K, rrf
from layersearch.types import (
    ChannelScore,
    Hit,
    InspectResponse,
    SearchRequest,
    SearchResponse,
)

if TYPE_CHECKING:
    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.corpora.entities.corpus import EntityCorpus
    from layersearch.corpora.entities.service import EntityService
    from layersearch.corpora.vault.search import VaultService
    from layersearch.embed.base import Embedder

__all__ = ["ScopeService", "conversation_hit_id", "parse_scope"]

#: what a table puts in the middle of an id too long for it (``cli/output.elide``)
ELIDED = "…"


def parse_scope(scope: str | Sequence[str] | None) -> tuple[str, ...]:
    """The scope names of ``scope`` (a name, a comma list, or a list of them), in the
    canonical order (:func:`registry.scope_names`); ``all`` is every one. Unknown names
    are a ConfigError."""
    if scope is None:
        return ("semantic",)
    scopes = registry.scope_names()
    items = [scope] if isinstance(scope, str) else list(scope)
    names: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"scope names are strings, got {item!r}")
        for part in item.split(","):
            name = part.strip().lower()
            if not name:
                continue  # "vault," or an empty --scope
            if name == "all":
                names.update(scopes)
            elif name in scopes:
                names.add(name)
            else:
                raise ConfigError(
                    f"unknown scope {part.strip()!r}: use {', '.join(scopes)} or all "
                    "(or a list of them)"
                )
    if not names:
        raise ConfigError(f"scope is empty: use {', '.join(scopes)} or all")
    return tuple(s for s in scopes if s in names)


#: per source, the kept hits' ids and their shares of the question, within one search
_Memo = dict[str, tuple[tuple[str, ...], list[float]]]


@dataclass
class _Gathered:
    """What one scoped search gathered before fusing: see :meth:`ScopeService._gather`."""

    sources: tuple[str, ...]
    ranked: dict[str, Ranked]
    semantic: SearchResponse | None  # the entity search's response, when it ran
    warnings: list[str]
    memo: _Memo
    alone: bool  # scope=semantic: the entity search's own list, not fused


class ScopeService:
    """The cross-corpus search of one store; the facade hands it out as ``scope``."""

    def __init__(
        self,
        entities: EntityService,
        conversations: Callable[[], ConversationService],
        vault: Callable[[], VaultService],
        embedder: Callable[[], Embedder | None],
    ) -> None:
        self._entities = entities
        self._services = Services(entities, conversations, vault, embedder)

    # -- search -------------------------------------------------------------------------------

    def search(self, req: SearchRequest) -> SearchResponse:
        req, cut = bounded_request(req)
        g = self._gather(req)
        if cut:
            g.warnings.insert(0, cut)
        if g.alone:
            # scope=semantic: today's list (entities and memories interleaved), tagged
            assert g.semantic is not None
            results = _capped(g.semantic, req)
        else:
            results = self._fuse(g.ranked, req, g.memo)
        resp = SearchResponse(results=results, warnings=g.warnings)
        if g.semantic is not None and "semantic" in g.sources:
            resp.entities = g.semantic.entities
            resp.memories = g.semantic.memories
            resp.example_queries = g.semantic.example_queries
        return resp

    def source_lists(self, req: SearchRequest) -> dict[str, list[Hit]]:
        """Per source the scope names, the list :meth:`search` fuses, as the fusion reads
        it: capped at ``max_per_source`` (else ``max_results``), the entity list with the
        best memory's tagged entities lifted and joined. For diagnostics (``eval scope``'s
        ``own_split``): what ten places drawn from these lists could hold. For
        ``scope="semantic"`` the entity and memory lists apart, before the lift, which
        that scope does not apply."""
        g = self._gather(bounded_request(req)[0])
        cap = req.max_per_source or req.max_results
        return {s: r.hits[:cap] for s, r in g.ranked.items()}

    def _gather(self, req: SearchRequest) -> _Gathered:
        """Each source's ranked list for ``req`` (the request checked, filters' warnings
        said), with the tagged entities lifted when the lists will be fused."""
        names = parse_scope(req.scope)
        if req.max_per_source is not None and req.max_per_source < 1:
            raise ConfigError(f"max_per_source must be at least 1, got {req.max_per_source}")
        if not 1 <= req.max_results <= MAX_RESULTS:
            raise ConfigError(f"max_results must be from 1 to {MAX_RESULTS}, got {req.max_results}")
        sources = registry.sources_of(names)
        warnings = self._misplaced_filters(req, sources)
        run = ScopeRun(req, sources, self._services)
        ranked: dict[str, Ranked] = {}
        for corpus in list(registry.CORPORA):
            if corpus.source in sources:
                checkpoint()
                ranked[corpus.source] = corpus.search(run)
        checkpoint()
        semantic = entity_response(run) if "semantic" in sources or "memory" in sources else None
        empty = [s for s in sources if ranked[s].empty]
        explicit_all = any(
            p.strip().lower() == "all"
            for item in ([req.scope] if isinstance(req.scope, str) else req.scope or [])
            for p in item.split(",")
        )
        if empty and len(empty) == len(sources) and not explicit_all:
            raise NotFound("; ".join(w for s in empty for w in ranked[s].warnings))
        for s in sources:
            warnings.extend(f"{s}: {w}" for w in ranked[s].warnings)
        warnings.extend(self._filter_warnings(req, ranked))
        alone = set(sources) == {"semantic", "memory"} and semantic is not None
        memo: _Memo = {}  # the shares, read once for the lists the lift leaves alone
        if not alone and "semantic" in ranked and "memory" in ranked:
            ranked["semantic"] = self._tagged_first(ranked, req, memo)
        return _Gathered(sources, ranked, semantic, warnings, memo, alone)

    def _fuse(
        self, ranked: dict[str, Ranked], req: SearchRequest, memo: _Memo | None = None
    ) -> list[Hit]:
        """The sources' lists fused by RRF, each capped at ``max_per_source``; with two or
        more sources, the hits :func:`leading_hits` names first in their source's turns and
        the hits :func:`waiting_tiers` names after every other hit."""
        cap = req.max_per_source or req.max_results
        by_id: dict[str, tuple[str, Hit]] = {}
        channels: dict[str, list[tuple[str, float]]] = {}
        late: list[tuple[int, int, int, str]] = []  # (tier, rank in its source, tie, id)
        shares = self._shares(ranked, req, cap, memo)
        waiting = waiting_tiers(ranked, shares, cap)
        tie = tie_order(ranked, shares, cap)
        leading = leading_hits(ranked, shares, cap)
        for source, r in ranked.items():
            kept = r.hits[:cap]
            turns = [(h.id, h.score) for h in kept if h.id not in waiting]
            # the hits holding the top share take their source's first turns
            channels[source] = [t for t in turns if t[0] in leading] + [
                t for t in turns if t[0] not in leading
            ]
            late.extend(
                (waiting[h.id], n, tie[h.id], h.id)
                for n, h in enumerate(kept, 1)
                if h.id in waiting
            )
            by_id.update((h.id, (source, h)) for h in kept)
        fused = rrf(channels, level=tie.__getitem__, by_level=())
        # (id, rank in its source, fused score, RRF contribution) in the fused order: the
        # waiting hits after every other hit, as if ranked ``cap`` places lower per tier
        placed = []
        for f in fused:
            source = by_id[f.id][0]
            rank, _score, contribution = f.channels[source]
            placed.append((f.id, rank, f.score, contribution))
        for tier, rank, _o, hid in sorted(late):
            score = 1.0 / (RRF_K + (tier + 1) * cap + rank)
            placed.append((hid, rank, score, score))
        out = []
        ranks = {h.id: n for r in ranked.values() for n, h in enumerate(r.hits[:cap], 1)}
        for hid, _rank, fused_score, contribution in placed[: req.max_results]:
            source, hit = by_id[hid]
            rank, score = ranks[hid], hit.score
            update: dict[str, Any] = {"score": round(fused_score, 6)}
            if req.explain:
                head = ChannelScore(
                    channel=source,
                    rank=rank,
                    score=round(score, 6),
                    contribution=round(contribution, 6),
                )
                inner = [
                    c.model_copy(update={"channel": f"{source}/{c.channel}"})
                    for c in hit.explanation or []
                ]
                update["explanation"] = [head, *inner, *share_note(shares, source, rank)]
            out.append(hit.model_copy(update=update))
        return out

    def _shares(
        self, ranked: dict[str, Ranked], req: SearchRequest, cap: int, memo: _Memo | None = None
    ) -> Shares:
        """Per source with hits, (its best share, each kept hit's share): the idf-weighted
        share of the question's analysed words (idf of the schema index, a word it does not
        know counting as its rarest) that the hit's full-text document holds: an entity's
        or memory's document, a message's content, a note's title, tags, headings and
        body. None of it when fewer than two sources have hits (a source alone keeps its
        own order) or there is no question. ``memo`` keeps each source's values for its
        kept ids across the calls of one search."""
        question = _question(req)
        present = [s for s, r in ranked.items() if r.hits]
        if question is None or len(present) < 2:
            return {}
        from layersearch.ranking.analyzer import analyze_query

        share = self._entities.corpus().question_share(question, req.datasource)
        asked = list(dict.fromkeys(analyze_query(question)))
        run = ScopeRun(req, tuple(ranked), self._services)
        out: Shares = {}
        for source in present:
            kept = ranked[source].hits[:cap]
            ids = tuple(h.id for h in kept)
            if memo is not None and source in memo and memo[source][0] == ids:
                out[source] = (max(memo[source][1]), memo[source][1])
                continue
            words = registry.by_source(source).documents(run, kept, asked)
            values = [share(w) for w in words]
            out[source] = (max(values), values)
            if memo is not None:
                memo[source] = (ids, values)
        return out

    def _tagged_first(
        self, ranked: dict[str, Ranked], req: SearchRequest, memo: _Memo | None = None
    ) -> Ranked:
        """The entity list with the entities the best memory is tagged with first (in their
        own order), the rest after: two corpora agreeing on an entity is evidence neither
        ranking has alone. The hits' order within each part is kept. When the best memory
        reads the question better than the entity list (:func:`memory_reads_better`), the
        entities it is tagged with that the entity search did not return join them, after
        the returned ones: the memory was saved against them. A best memory that is weak in
        its own list (holding less than :data:`WEAK_SHARE` of the share its list's best
        holds: ranked first by vectors, say) lifts nothing."""
        semantic, memory = ranked["semantic"], ranked["memory"]
        if not memory.hits or not semantic.hits:
            return semantic
        cap = req.max_per_source or req.max_results
        shares = self._shares(ranked, req, cap, memo)
        if "memory" in shares and shares["memory"][1][0] < WEAK_SHARE * shares["memory"][0]:
            return semantic
        best = memory.hits[0].id
        corpus = self._entities.corpus()
        found = corpus.memories.get(best)
        tagged = list(dict.fromkeys(found.entities)) if found is not None else []
        tags = set(tagged)
        first = [h for h in semantic.hits if h.id in tags]
        note = ChannelScore(channel=f"tagged by {best}", rank=1, score=0.0, contribution=0.0)
        first = [
            h.model_copy(update={"explanation": [note, *h.explanation]})
            if h.explanation is not None
            else h
            for h in first
        ]
        if memory_reads_better(shares):
            have = {h.id for h in first}
            missing = [t for t in tagged if t not in have and _joinable(corpus, t, req)]
            # said apart: the entity search did not return them
            joined = note.model_copy(update={"channel": f"{note.channel} (joined)"})
            first.extend(
                corpus.hit(
                    t, 0.0, compact=req.compact, explanation=[joined] if req.explain else None
                ).model_copy(update={"source": "semantic"})
                for t in missing
            )
        if not first:
            return semantic
        rest = [h for h in semantic.hits if h.id not in tags]
        return Ranked(
            hits=first + rest,
            warnings=semantic.warnings,
            empty=semantic.empty,
            lifted=frozenset(h.id for h in first),
        )

    # -- filters --------------------------------------------------------------------------------

    @staticmethod
    def _misplaced_filters(req: SearchRequest, sources: Sequence[str]) -> list[str]:
        """A filter for a corpus the scope does not search is ignored, and said so (the
        filters in the request's field order)."""
        out = []
        for name in SearchRequest.model_fields:
            applies = [c for c in registry.CORPORA if name in c.filters]
            value = getattr(req, name)
            if not applies or value is None or {c.source for c in applies} & set(sources):
                continue
            what = " and ".join(c.what for c in applies)
            out.append(f"{name} applies only to {what}, which the scope leaves out: ignored")
        return out

    @staticmethod
    def _filter_warnings(req: SearchRequest, ranked: dict[str, Ranked]) -> list[str]:
        """A source-only filter that left its source without a hit."""
        out = []
        for source, r in ranked.items():
            filters = registry.by_source(source).filters
            given = [name for name in filters if getattr(req, name) is not None]
            if given and not r.hits and not r.empty:
                out.append(f"{' and '.join(given)} excluded every {source} hit")
        return out

    # -- inspect --------------------------------------------------------------------------------

    def inspect(self, ids: Iterable[str]) -> InspectResponse:
        """Full detail for ids of any source: entities and memories as ``inspect`` always
        showed them, and each other corpus's ids (``conversation:…`` messages, ``vault:…``
        notes) by the corpus its prefix names."""
        from layersearch.corpora.entities.detail import checked_ids

        run = ScopeRun(SearchRequest.model_validate({}), (), self._services)
        checked = [self._whole(run, i) if ELIDED in i else i for i in checked_ids(ids)]
        by: dict[str, list[str]] = {}
        for i in checked:
            c = registry.corpus_of_id(i)
            by.setdefault(c.opened_by or c.source, []).append(i)
        rest = by.pop("semantic", [])
        if not by:
            return self._entities.inspect(rest)
        out = InspectResponse()
        if rest:
            registry.by_source("semantic").inspect(run, rest, out)
        for corpus in list(registry.CORPORA):
            if corpus.source in by:
                corpus.inspect(run, by[corpus.source], out)
        found = out.entities or out.memories or out.conversations or out.notes
        if not (found or out.documents):
            raise NotFound("; ".join(out.warnings) or "nothing found")
        return out

    @staticmethod
    def _whole(run: ScopeRun, shown: str) -> str:
        """The id a table printed shortened in the middle (``conversation:sl…#1-dd10b246``,
        see the CLI's ``elide``): the one id of its kind with that start and end, else
        ``shown`` as it is (then unknown, or an id that holds the character)."""
        key = shown.strip()
        head, _, tail = key.partition(ELIDED)
        corpus = registry.corpus_of_id(key)
        if corpus.opened_by is not None:
            corpus = registry.by_source(corpus.opened_by)
        found = []
        for i in corpus.ids(run):
            if i == key:
                return key
            if len(i) > len(head) + len(tail) and i.startswith(head) and i.endswith(tail):
                found.append(i)
        return found[0] if len(found) == 1 else shown


def _joinable(corpus: EntityCorpus, entity_id: str, req: SearchRequest) -> bool:
    """Whether a memory's tagged entity may join the entity list: a visible entity of the
    asked datasource in ``corpus``. Never under a cypher filter, whose ids the entity
    search alone knows."""
    from layersearch.semantic.canonical import in_scope

    if req.cypher_filter is not None and req.cypher_filter.strip():
        return False
    if entity_id not in corpus.entities or not corpus.entities.is_visible(entity_id):
        return False
    return req.datasource is None or in_scope(entity_id, req.datasource)


def _capped(resp: SearchResponse, req: SearchRequest) -> list[Hit]:
    """The entity search's own list (entities and memories merged), each hit tagged with
    its source, at most ``max_per_source`` of each source."""
    cap = req.max_per_source or req.max_results
    seen = {"semantic": 0, "memory": 0}
    out = []
    for h in resp.results:
        source = "memory" if h.kind == "memory" else "semantic"
        if seen[source] < cap:
            seen[source] += 1
            out.append(h.model_copy(update={"source": source}))
    return out[: req.max_results]


def _question(req: SearchRequest) -> str | None:
    q = req.question
    return q if q is not None and q.strip() else None
