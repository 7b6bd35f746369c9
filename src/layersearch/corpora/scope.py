"""One search across every corpus: ``scope`` (issue #24).

The corpora are those of the registry (:mod:`layersearch.corpora.registry`). Each ranks
its own hits with the search it already has: the semantic layer and memories with
:meth:`EntityService.search`, conversation messages with
:meth:`ConversationService.search_messages`, vault notes with :meth:`VaultService.search`
(hybrid). Each source's list is one channel of the fusion core (RRF, k=60): sources'
ids never overlap, so the fused list takes the sources in turn, rank by rank, ties broken
by source (the corpora's ``tie``: semantic, memory, vault, conversation) and then by id.
``max_per_source`` caps each source, ``max_results`` the list. When two or more sources
are fused, the places go by evidence: every hit's share of the question (the
idf-weighted share of the question's analysed words its full-text document holds, the
same quantity and the same idf for every source; :meth:`ScopeService.shares`). The rules
on top are the declared stages of :data:`~layersearch.corpora.scope_stages.SCOPE_PIPELINE`
(the entities the best memory is tagged with first, and joined; the waiting tiers; the
hits holding the top share leading their source; ties by share), their numbers in
:class:`~layersearch.corpora.scope_places.ScopeRankingConfig` (:attr:`ScopeService.config`).
A source whose hits hold the question alike keeps its turns; one whose best hit stands
out keeps only the hits close to it.

Hit ids: an entity's id, ``memory:N``, ``conversation:<message_id>`` (a message id
starts with its conversation's id), ``vault:<slug>``; :meth:`ScopeService.inspect` opens
any of them, and the longer ``conversation:<conv_id>:<message_id>`` of earlier versions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from layersearch.calls import checkpoint
from layersearch.corpora import registry
from layersearch.corpora.entities.corpus import bounded_request
from layersearch.corpora.protocol import ScopeRun, Services
from layersearch.corpora.scope_places import (
    Ranked,
    ScopeRankingConfig,
    Shares,
    memory_reads_better,
)
from layersearch.corpora.scope_sources import (
    MAX_RESULTS,
    conversation_hit_id,
    entity_response,
)
from layersearch.corpora.scope_stages import LIST_STAGES, SCOPE_PIPELINE, Memo, Places
from layersearch.errors import ConfigError, NotFound
from layersearch.ranking.pipeline import Pipeline, Trace
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
    canonical order (:func:`registry.scope_names`); ``all`` is every one whose corpus
    joins it (:func:`registry.all_names`). Unknown names are a ConfigError."""
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
                names.update(registry.all_names())
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


@dataclass
class _Gathered:
    """What one scoped search gathered before fusing: see :meth:`ScopeService._gather`."""

    sources: tuple[str, ...]
    ranked: dict[str, Ranked]
    semantic: SearchResponse | None  # the entity search's response, when it ran
    warnings: list[str]
    alone: bool  # scope=semantic: the entity search's own list, not fused


class ScopeService:
    """The cross-corpus search of one store; the facade hands it out as ``scope``."""

    def __init__(
        self,
        entities: EntityService,
        conversations: Callable[[], ConversationService],
        vault: Callable[[], VaultService],
        embedder: Callable[[], Embedder | None],
        config: ScopeRankingConfig | None = None,
    ) -> None:
        self._entities = entities
        self._services = Services(entities, conversations, vault, embedder)
        self._config = config or ScopeRankingConfig()

    # -- search -------------------------------------------------------------------------------

    @property
    def config(self) -> ScopeRankingConfig:
        """The tuned numbers and switched-off stages of the fused list's places."""
        return self._config

    @config.setter
    def config(self, config: ScopeRankingConfig) -> None:
        self._config = config

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
            places = Places(self, g.ranked, req, self._config)
            if req.explain:
                places.trace = Trace()
                places.order = [p[0] for p in places.placed()]
            results = SCOPE_PIPELINE.run(places, self._config.without).results
        resp = SearchResponse(results=results, warnings=g.warnings)
        if g.semantic is not None and "semantic" in g.sources:
            resp.entities = g.semantic.entities
            resp.memories = g.semantic.memories
            resp.example_queries = g.semantic.example_queries
        return resp

    def source_lists(self, req: SearchRequest) -> dict[str, list[Hit]]:
        """Per source the scope names, the list :meth:`search` fuses, as the fusion reads
        it: capped at ``max_per_source`` (else ``max_results``), the entity list with the
        best memory's tagged entities lifted and joined (the stages of
        :data:`LIST_STAGES` that run). For diagnostics (``eval scope``'s ``own_split``):
        what ten places drawn from these lists could hold. For ``scope="semantic"`` the
        entity and memory lists apart, before the lift, which that scope does not
        apply."""
        req = bounded_request(req)[0]
        g = self._gather(req)
        if not g.alone:
            places = Places(self, g.ranked, req, self._config)
            lists = Pipeline("scope", LIST_STAGES)
            lists.run(places, self._config.without & set(lists.switchable))
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
        return _Gathered(sources, ranked, semantic, warnings, alone)

    def shares(
        self, ranked: dict[str, Ranked], req: SearchRequest, cap: int, memo: Memo | None = None
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
        self, ranked: dict[str, Ranked], req: SearchRequest, memo: Memo | None = None
    ) -> Ranked:
        """The entity list after ``tagged-first`` and ``tagged-join`` (see
        :meth:`lift_tagged` and :meth:`join_tagged`)."""
        lifted = dict(ranked)
        lifted["semantic"] = self.lift_tagged(ranked, req, memo)
        return self.join_tagged(lifted, req, memo)

    def _best_tags(
        self, ranked: dict[str, Ranked], req: SearchRequest, memo: Memo | None, weak: float
    ) -> tuple[str, list[str], Shares] | None:
        """The best memory's id, the entities it is tagged with and the lists' shares;
        None with no entity or memory hit, or a best memory weak in its own list (under
        ``weak`` of the share its list's best holds: ranked first by vectors, say)."""
        semantic, memory = ranked["semantic"], ranked["memory"]
        if not memory.hits or not semantic.hits:
            return None
        cap = req.max_per_source or req.max_results
        shares = self.shares(ranked, req, cap, memo)
        if "memory" in shares and shares["memory"][1][0] < weak * shares["memory"][0]:
            return None
        best = memory.hits[0].id
        found = self._entities.corpus().memories.get(best)
        tagged = list(dict.fromkeys(found.entities)) if found is not None else []
        return best, tagged, shares

    def lift_tagged(
        self,
        ranked: dict[str, Ranked],
        req: SearchRequest,
        memo: Memo | None = None,
        config: ScopeRankingConfig | None = None,
    ) -> Ranked:
        """``tagged-first``: the entity list with the entities the best memory is tagged
        with first (in their own order), the rest after: two corpora agreeing on an
        entity is evidence neither ranking has alone. The hits' order within each part
        is kept. A best memory weak in its own list lifts nothing."""
        c = config or self._config
        semantic = ranked["semantic"]
        got = self._best_tags(ranked, req, memo, c.weak_share)
        if got is None:
            return semantic
        best, tagged, _shares = got
        tags = set(tagged)
        note = ChannelScore(channel=f"tagged by {best}", rank=1, score=0.0, contribution=0.0)
        first = [
            h.model_copy(update={"explanation": [note, *h.explanation]})
            if h.explanation is not None
            else h
            for h in semantic.hits
            if h.id in tags
        ]
        if not first:
            return semantic
        rest = [h for h in semantic.hits if h.id not in tags]
        return Ranked(
            hits=first + rest,
            warnings=semantic.warnings,
            empty=semantic.empty,
            lifted=semantic.lifted | frozenset(h.id for h in first),
        )

    def join_tagged(
        self,
        ranked: dict[str, Ranked],
        req: SearchRequest,
        memo: Memo | None = None,
        config: ScopeRankingConfig | None = None,
    ) -> Ranked:
        """``tagged-join``: when the best memory reads the question better than the
        entity list (:func:`memory_reads_better`), the entities it is tagged with that
        the entity search did not return join the list after the lifted ones: the
        memory was saved against them."""
        c = config or self._config
        semantic = ranked["semantic"]
        got = self._best_tags(ranked, req, memo, c.weak_share)
        if got is None:
            return semantic
        best, tagged, shares = got
        if not memory_reads_better(shares, c.unmatched_share):
            return semantic
        corpus = self._entities.corpus()
        have = {h.id for h in semantic.hits}
        missing = [t for t in tagged if t not in have and _joinable(corpus, t, req)]
        if not missing:
            return semantic
        # said apart: the entity search did not return them
        joined = ChannelScore(
            channel=f"tagged by {best} (joined)", rank=1, score=0.0, contribution=0.0
        )
        hits = [
            corpus.hit(
                t, 0.0, compact=req.compact, explanation=[joined] if req.explain else None
            ).model_copy(update={"source": "semantic"})
            for t in missing
        ]
        head = next(
            (n for n, h in enumerate(semantic.hits) if h.id not in semantic.lifted),
            len(semantic.hits),
        )
        return Ranked(
            hits=semantic.hits[:head] + hits + semantic.hits[head:],
            warnings=semantic.warnings,
            empty=semantic.empty,
            lifted=semantic.lifted | frozenset(missing),
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
