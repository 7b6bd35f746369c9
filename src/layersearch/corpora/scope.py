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
hit in turn (:func:`_waiting`): those after the first of a source with no real match
(its best share under :data:`UNMATCHED_SHARE` of the best-matched source's) and a first
hit holding under :data:`UNMATCHED_SHARE` of its own source's best, then the weak ones
(after their source's first, under :data:`WEAK_SHARE` of its best share). A source whose
hits hold the question alike keeps its turns; one whose best hit stands out keeps only
the hits close to it. A source's hits holding the top share (the largest share any hit
holds) take its first turns (:func:`_leading`). Hits at the same place (the same turn,
or the same tier and rank when waiting) go by their share, then by source. The entities
the best memory is tagged with go first in the entity list and never wait (two corpora
agree on them); when that memory reads the question better than the entity list, those
the entity search did not return join them.

Hit ids: an entity's id, ``memory:N``, ``conversation:<conv_id>:<message_id>``,
``vault:<slug>``; :meth:`ScopeService.inspect` opens any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from layersearch.errors import ConfigError, LayersearchError, NotFound
from layersearch.ranking.fusion import RRF_K, rrf
from layersearch.types import (
    SCOPES,
    ChannelScore,
    Hit,
    InspectResponse,
    MessageDetail,
    SearchRequest,
    SearchResponse,
)

if TYPE_CHECKING:
    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.corpora.entities.service import EntityService
    from layersearch.corpora.vault.search import VaultService
    from layersearch.embed.base import Embedder

__all__ = ["SOURCE_ORDER", "ScopeService", "parse_scope"]

#: fusion's tie-break between sources' hits of the same rank, first to last
SOURCE_ORDER = ("semantic", "memory", "vault", "conversation")
#: scope name → the sources it searches
_SOURCES = {
    "semantic": ("semantic", "memory"),
    "memory": ("memory",),
    "conversations": ("conversation",),
    "vault": ("vault",),
}
CONVERSATION_PREFIX = "conversation:"
VAULT_PREFIX = "vault:"
DESCRIPTION_CHARS = 160
#: a role filter is applied to this many ranked messages (message search's depth)
ROLE_DEPTH = 100
_MAX_RESULTS = 100
#: a hit (after its source's first) holding less than this fraction of the share of the
#: question its source's best hit holds is weak evidence: it goes after every source's
#: other hits
WEAK_SHARE = 0.7
#: a source whose best hit holds less than this fraction of the share of the question the
#: best-matched source's best hit holds has no real match: its hits after the first wait;
#: a source's first hit holding less than this fraction of its source's best share waits
UNMATCHED_SHARE = 0.5
_NO_VAULT = "no vault indexed in this store: run `layersearch vault index PATH`"


def parse_scope(scope: str | Sequence[str] | None) -> tuple[str, ...]:
    """The scope names of ``scope`` (a name, a comma list, or a list of them), in the
    canonical order; ``all`` is every one. Unknown names are a ConfigError."""
    if scope is None:
        return ("semantic",)
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
                names.update(SCOPES)
            elif name in SCOPES:
                names.add(name)
            else:
                raise ConfigError(
                    f"unknown scope {part.strip()!r}: use {', '.join(SCOPES)} or all "
                    "(or a list of them)"
                )
    if not names:
        raise ConfigError(f"scope is empty: use {', '.join(SCOPES)} or all")
    return tuple(s for s in SCOPES if s in names)


def _sources(names: Sequence[str]) -> tuple[str, ...]:
    wanted = {src for n in names for src in _SOURCES[n]}
    return tuple(s for s in SOURCE_ORDER if s in wanted)


@dataclass
class _Ranked:
    """One source's hits, best first, and what it had to say."""

    hits: list[Hit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    empty: bool = False  # nothing loaded in this corpus
    #: entity hits moved first because the best memory is tagged with them
    lifted: frozenset[str] = frozenset()


#: per source, the kept hits' ids and their shares of the question, within one search
_Memo = dict[str, tuple[tuple[str, ...], list[float]]]


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
        self._conversations = conversations
        self._vault = vault
        self._embedder = embedder

    # -- search -------------------------------------------------------------------------------

    def search(self, req: SearchRequest) -> SearchResponse:
        names = parse_scope(req.scope)
        if req.max_per_source is not None and req.max_per_source < 1:
            raise ConfigError(f"max_per_source must be at least 1, got {req.max_per_source}")
        if not 1 <= req.max_results <= _MAX_RESULTS:
            raise ConfigError(
                f"max_results must be from 1 to {_MAX_RESULTS}, got {req.max_results}"
            )
        sources = _sources(names)
        warnings = self._misplaced_filters(req, sources)
        ranked: dict[str, _Ranked] = {}
        semantic: SearchResponse | None = None
        if "semantic" in sources or "memory" in sources:
            semantic = self._semantic(req, sources, ranked)
        if "conversation" in sources:
            ranked["conversation"] = self._messages(req)
        if "vault" in sources:
            ranked["vault"] = self._notes(req)
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
        if set(sources) == {"semantic", "memory"} and semantic is not None:
            # scope=semantic: today's list (entities and memories interleaved), tagged
            results = _capped(semantic, req)
        else:
            memo: _Memo = {}  # the shares, read once for the lists the lift leaves alone
            if "semantic" in ranked and "memory" in ranked:
                ranked["semantic"] = self._tagged_first(ranked, req, memo)
            results = self._fuse(ranked, req, memo)
        resp = SearchResponse(results=results, warnings=warnings)
        if semantic is not None and "semantic" in sources:
            resp.entities = semantic.entities
            resp.memories = semantic.memories
            resp.example_queries = semantic.example_queries
        return resp

    def _fuse(
        self, ranked: dict[str, _Ranked], req: SearchRequest, memo: _Memo | None = None
    ) -> list[Hit]:
        """The sources' lists fused by RRF, each capped at ``max_per_source``; with two or
        more sources, the hits :func:`_leading` names first in their source's turns and
        the hits :func:`_waiting` names after every other hit."""
        cap = req.max_per_source or req.max_results
        by_id: dict[str, tuple[str, Hit]] = {}
        channels: dict[str, list[tuple[str, float]]] = {}
        late: list[tuple[int, int, int, str]] = []  # (tier, rank in its source, tie, id)
        shares = self._shares(ranked, req, cap, memo)
        waiting = _waiting(ranked, shares, cap)
        tie = _tie_order(ranked, shares, cap)
        leading = _leading(ranked, shares, cap)
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
                update["explanation"] = [head, *inner, *_share_note(shares, source, rank)]
            out.append(hit.model_copy(update=update))
        return out

    def _shares(
        self, ranked: dict[str, _Ranked], req: SearchRequest, cap: int, memo: _Memo | None = None
    ) -> dict[str, tuple[float, list[float]]]:
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

        corpus = self._entities.corpus()
        share = corpus.question_share(question, req.datasource)
        asked = list(dict.fromkeys(analyze_query(question)))
        out: dict[str, tuple[float, list[float]]] = {}
        for source in present:
            kept = ranked[source].hits[:cap]
            ids = tuple(h.id for h in kept)
            if memo is not None and source in memo and memo[source][0] == ids:
                out[source] = (max(memo[source][1]), memo[source][1])
                continue
            if source in ("semantic", "memory"):
                words = [corpus.document_words(h.id) for h in kept]
            elif source == "vault":
                notes = self._vault().note_words([h.slug or "" for h in kept], asked)
                words = [notes.get(h.slug or "", frozenset()) for h in kept]
            else:
                words = self._message_words(kept)
            values = [share(w) for w in words]
            out[source] = (max(values), values)
            if memo is not None:
                memo[source] = (ids, values)
        return out

    def _message_words(self, hits: Sequence[Hit]) -> list[frozenset[str]]:
        from layersearch.ranking.analyzer import analyze

        snap = self._conversations().snapshot()
        out = []
        for h in hits:
            m = snap.messages.get(h.message_id or "")
            out.append(frozenset(analyze(m.content)) if m is not None else frozenset())
        return out

    def _tagged_first(
        self, ranked: dict[str, _Ranked], req: SearchRequest, memo: _Memo | None = None
    ) -> _Ranked:
        """The entity list with the entities the best memory is tagged with first (in their
        own order), the rest after: two corpora agreeing on an entity is evidence neither
        ranking has alone. The hits' order within each part is kept. When the best memory
        reads the question better than the entity list (:func:`_memory_reads_better`), the
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
        have = {h.id for h in first}
        missing = [t for t in tagged if t not in have and self._joinable(t, req)]
        note = ChannelScore(channel=f"tagged by {best}", rank=1, score=0.0, contribution=0.0)
        first = [
            h.model_copy(update={"explanation": [note, *h.explanation]})
            if h.explanation is not None
            else h
            for h in first
        ]
        if missing and _memory_reads_better(shares):
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
        return _Ranked(
            hits=first + rest,
            warnings=semantic.warnings,
            empty=semantic.empty,
            lifted=frozenset(h.id for h in first),
        )

    def _joinable(self, entity_id: str, req: SearchRequest) -> bool:
        """Whether a memory's tagged entity may join the entity list: a visible entity of
        the asked datasource. Never under a cypher filter, whose ids the entity search
        alone knows."""
        from layersearch.semantic.canonical import in_scope

        corpus = self._entities.corpus()
        if req.cypher_filter is not None and req.cypher_filter.strip():
            return False
        if entity_id not in corpus.entities or not corpus.entities.is_visible(entity_id):
            return False
        return req.datasource is None or in_scope(entity_id, req.datasource)

    # -- the sources ----------------------------------------------------------------------------

    def _semantic(
        self, req: SearchRequest, sources: Sequence[str], ranked: dict[str, _Ranked]
    ) -> SearchResponse | None:
        """Entities and memories from today's search; memories alone for ``memory``."""
        corpus = self._entities.corpus()
        both = "semantic" in sources
        if not corpus.entities and not corpus.memories or (not both and not corpus.memories):
            what = "no semantic layer or memories" if both else "no memories"
            for s in ("semantic", "memory"):
                if s in sources:
                    ranked[s] = _Ranked(
                        warnings=[f"{what} in this store: run `layersearch load PATH`"],
                        empty=True,
                    )
            return None
        depth = req.max_per_source or req.max_results
        # The entity search interleaves entities and memories: twice the depth gives each
        # kind ``depth`` hits of its own ranking when it has them.
        inner = req.model_copy(
            update={
                "scope": None,
                "max_per_source": None,
                "tags": None,
                "status": None,
                "role": None,
                "max_results": _inner_depth(req, sources, depth),
            }
        )
        resp = self._entities.search(inner)
        warnings = list(resp.warnings)
        if both:
            ranked["semantic"] = _Ranked(
                hits=[
                    h.model_copy(update={"source": "semantic"})
                    for h in resp.results
                    if h.kind != "memory"
                ],
                warnings=warnings,
            )
            warnings = []
        if "memory" in sources:
            ranked["memory"] = _Ranked(
                hits=[
                    h.model_copy(update={"source": "memory"})
                    for h in resp.results
                    if h.kind == "memory"
                ],
                warnings=warnings,
            )
        return resp

    def _messages(self, req: SearchRequest) -> _Ranked:
        """Conversation messages ranked by message search (full text, and vectors when an
        embedder is configured), then the ``role`` filter."""
        question = _question(req)
        conversations = self._conversations()
        snap = conversations.snapshot()
        if not snap.messages:
            return _Ranked(
                warnings=["no conversations imported: run `layersearch conversations import PATH`"],
                empty=True,
            )
        if question is None:
            return _Ranked(warnings=["needs a question: conversations not searched"])
        role = req.role
        if role is not None and role not in ("user", "assistant"):
            raise ConfigError(f"role must be 'user' or 'assistant', got {role!r}")
        depth = req.max_per_source or req.max_results
        channels = None if self._embedder() is not None else ["fulltext"]
        found = conversations.search_messages(
            question, ROLE_DEPTH if role else depth, channels=channels
        )
        hits = []
        for m in found.hits:
            if role is not None and m.role != role:
                continue
            row = snap.messages[m.message_id]
            explanation = None
            if req.explain:
                explanation = [
                    ChannelScore(channel=c, rank=r, score=0.0, contribution=0.0)
                    for c, r in sorted(m.channels.items(), key=lambda kv: (kv[1], kv[0]))
                ]
            hits.append(
                Hit(
                    kind="conversation",
                    id=f"{CONVERSATION_PREFIX}{m.conversation_id}:{m.message_id}",
                    score=round(m.score, 6),
                    description=_line(row.content),
                    text=None if req.compact else row.content,
                    explanation=explanation,
                    source="conversation",
                    conv_id=m.conversation_id,
                    message_id=m.message_id,
                )
            )
            if len(hits) == depth:
                break
        return _Ranked(hits=hits, warnings=list(found.warnings))

    def _notes(self, req: SearchRequest) -> _Ranked:
        """Vault notes ranked by vault search in hybrid mode (full text alone without an
        embedder), with the ``tags`` and ``status`` filters."""
        question = _question(req)
        vault = self._vault()
        if question is None:
            from layersearch.corpora.vault.store import load_meta

            if load_meta(vault.store).root is None:
                return _Ranked(warnings=[_NO_VAULT], empty=True)
            return _Ranked(warnings=["needs a question: the vault not searched"])
        depth = req.max_per_source or req.max_results
        inner: list[str] = []
        try:
            found = vault.search(
                question,
                tags=req.tags,
                status=req.status,
                limit=depth,
                mode="hybrid",
                explain=req.explain,
                warnings=inner,
            )
        except NotFound as exc:
            return _Ranked(warnings=[str(exc)], empty=True)
        if self._embedder() is None:
            # Without an embedder, lexical is what was asked for, as in entity search.
            inner = [w for w in inner if not w.startswith("embedding unavailable")]
        hits = []
        for v in found:
            text = None if req.compact else vault.get_note(v.slug).body
            hits.append(
                Hit(
                    kind="vault",
                    id=f"{VAULT_PREFIX}{v.slug}",
                    score=v.score,
                    description=v.title,
                    text=text,
                    explanation=v.explanation,
                    source="vault",
                    slug=v.slug,
                )
            )
        return _Ranked(hits=hits, warnings=inner)

    # -- filters --------------------------------------------------------------------------------

    @staticmethod
    def _misplaced_filters(req: SearchRequest, sources: Sequence[str]) -> list[str]:
        """A filter for a corpus the scope does not search is ignored, and said so."""
        out = []
        checks = (
            (
                "datasource",
                req.datasource,
                ("semantic", "memory"),
                "the semantic layer and memories",
            ),
            (
                "cypher_filter",
                req.cypher_filter,
                ("semantic", "memory"),
                "the semantic layer and memories",
            ),
            ("tags", req.tags, ("vault",), "the vault"),
            ("status", req.status, ("vault",), "the vault"),
            ("role", req.role, ("conversation",), "conversations"),
        )
        for name, value, applies, what in checks:
            if value is not None and not set(applies) & set(sources):
                out.append(f"{name} applies only to {what}, which the scope leaves out: ignored")
        return out

    @staticmethod
    def _filter_warnings(req: SearchRequest, ranked: dict[str, _Ranked]) -> list[str]:
        """A source-only filter that left its source without a hit."""
        filters: dict[str, list[tuple[str, object]]] = {
            "semantic": [("datasource", req.datasource), ("cypher_filter", req.cypher_filter)],
            "memory": [("datasource", req.datasource), ("cypher_filter", req.cypher_filter)],
            "conversation": [("role", req.role)],
            "vault": [("tags", req.tags), ("status", req.status)],
        }
        out = []
        for source, r in ranked.items():
            given = [name for name, value in filters[source] if value is not None]
            if given and not r.hits and not r.empty:
                out.append(f"{' and '.join(given)} excluded every {source} hit")
        return out

    # -- inspect --------------------------------------------------------------------------------

    def inspect(self, ids: Iterable[str]) -> InspectResponse:
        """Full detail for ids of any source: entities and memories as ``inspect`` always
        showed them, ``conversation:…`` messages, ``vault:…`` notes."""
        from layersearch.corpora.entities.detail import checked_ids

        checked = checked_ids(ids)
        convs = [i for i in checked if i.strip().startswith(CONVERSATION_PREFIX)]
        notes = [i for i in checked if i.strip().startswith(VAULT_PREFIX)]
        rest = [i for i in checked if i not in convs and i not in notes]
        if not convs and not notes:
            return self._entities.inspect(rest)
        out = InspectResponse()
        if rest:
            try:
                out = self._entities.inspect(rest)
            except NotFound as exc:
                out.warnings.append(str(exc))
        if convs:
            out.conversations = self._open_messages(convs, out.warnings)
        if notes:
            out.notes = []
            for raw in notes:
                try:
                    out.notes.append(self._vault().get_note(raw.strip()[len(VAULT_PREFIX) :]))
                except LayersearchError as exc:
                    out.warnings.append(str(exc))
        if not (out.entities or out.memories or out.conversations or out.notes):
            raise NotFound("; ".join(out.warnings) or "nothing found")
        return out

    def _open_messages(self, ids: Sequence[str], warnings: list[str]) -> list[MessageDetail]:
        snap = self._conversations().snapshot()
        out = []
        for raw in ids:
            key = raw.strip()
            rest = key[len(CONVERSATION_PREFIX) :]
            found = None
            # A conversation id may itself hold ':': try every split of the rest.
            for i, ch in enumerate(rest):
                if ch != ":":
                    continue
                m = snap.messages.get(rest[i + 1 :])
                if m is not None and m.conversation_id == rest[:i]:
                    found = m
                    break
            if found is None:
                warnings.append(
                    f"unknown conversation message '{key}' "
                    "(ids are conversation:<conv_id>:<message_id>)"
                )
                continue
            c = snap.conversations.get(found.conversation_id)
            out.append(
                MessageDetail(
                    id=key,
                    conv_id=found.conversation_id,
                    message_id=found.id,
                    conversation_title=c.title if c else None,
                    role=found.role,
                    speaker=found.speaker,
                    created=found.created,
                    content=found.content,
                )
            )
        return out


def _inner_depth(req: SearchRequest, sources: Sequence[str], depth: int) -> int:
    """How many hits to ask the entity search for: as many as asked for scope=semantic
    (its list as it is), twice the depth when entities and memories are fused apart
    (the list interleaves them), the most it gives for memories alone."""
    if set(sources) == {"semantic", "memory"} and req.max_per_source is None:
        return req.max_results
    if "semantic" in sources and "memory" not in sources:
        return min(_MAX_RESULTS, 2 * depth)
    return _MAX_RESULTS


def _memory_reads_better(shares: dict[str, tuple[float, list[float]]]) -> bool:
    """Whether the best memory holds more of the question than the entity list's best
    hit, in a memory list with a real match (its best share at least
    :data:`UNMATCHED_SHARE` of the best-matched source's). False without shares (one
    source with hits, no question)."""
    if "memory" not in shares:
        return False
    top = max(best for best, _values in shares.values())
    memory_best, values = shares["memory"]
    entity_best = shares["semantic"][0] if "semantic" in shares else 0.0
    return memory_best >= UNMATCHED_SHARE * top and values[0] > entity_best


def _waiting(
    ranked: dict[str, _Ranked], shares: dict[str, tuple[float, list[float]]], cap: int
) -> dict[str, int]:
    """The hits that wait after every other source's hits, id → tier (0 first). Tier 0:
    the hits after the first of a source with no real match, whose best hit holds less
    than :data:`UNMATCHED_SHARE` of the share the best-matched source's best hit holds,
    and a source's first hit when it holds less than :data:`UNMATCHED_SHARE` of its
    source's best share (then the source's turns go to its next hits).
    Tier 1: a hit after its source's first holding less than :data:`WEAK_SHARE` of its
    source's best share. The entities the best memory is tagged with never wait, even in
    an entity list with no real match: two corpora agree on them, and the memory's share
    of the question is their evidence. Nothing waits without shares (one source, no
    question)."""
    if not shares:
        return {}
    top = max(best for best, _values in shares.values())
    out: dict[str, int] = {}
    for source, (best, values) in shares.items():
        r = ranked[source]
        unmatched = best < UNMATCHED_SHARE * top
        for n, h in enumerate(r.hits[:cap]):
            if h.id in r.lifted:
                continue  # a tagged entity keeps its turn: its evidence is the memory's
            if n == 0:
                # the first keeps its source's turn unless it is no real match of what its
                # source holds best
                if values[0] < UNMATCHED_SHARE * best:
                    out[h.id] = 0
            elif values[n] < WEAK_SHARE * best:
                out[h.id] = 1
            elif unmatched:
                out[h.id] = 0
    return out


def _leading(
    ranked: dict[str, _Ranked], shares: dict[str, tuple[float, list[float]]], cap: int
) -> set[str]:
    """The kept hits holding the top share (the largest share of the question any hit
    of any source holds, above 0), whatever their rank: they take their source's first
    turns, in their source's order, its other hits the turns after them (a source gains
    no turn by them). None without shares (one source, no question)."""
    top = max((best for best, _values in shares.values()), default=0.0)
    if top <= 0:
        return set()
    bar = round(top, 9)  # rounded as in :func:`_tie_order`
    return {
        h.id
        for source, (_best, values) in shares.items()
        for h, v in zip(ranked[source].hits[:cap], values, strict=False)
        if round(v, 9) >= bar
    }


def _tie_order(
    ranked: dict[str, _Ranked], shares: dict[str, tuple[float, list[float]]], cap: int
) -> dict[str, int]:
    """Each kept hit's place among hits of the same place in their sources (the same turn,
    or the same tier and rank when waiting), id → position: the hit holding the larger
    share of the question first, then :data:`SOURCE_ORDER`. Without shares (one source,
    no question) the source order alone."""
    order = {s: i for i, s in enumerate(SOURCE_ORDER)}
    keys = []
    for source, r in ranked.items():
        values = shares[source][1] if source in shares else []
        for n, h in enumerate(r.hits[:cap]):
            # rounded so shares summed in a different order still tie
            held = round(values[n], 9) if n < len(values) else 0.0
            keys.append((-held, order[source], h.id))
    return {hid: i for i, (_held, _source, hid) in enumerate(sorted(keys))}


def _share_note(
    shares: dict[str, tuple[float, list[float]]], source: str, rank: int
) -> list[ChannelScore]:
    """The explanation of a hit's evidence in the fused list (see :func:`_waiting`):
    ``share``, the share of the question its document holds; ``share/source best``, that
    over its source's best (below :data:`WEAK_SHARE`, after the first: weak);
    ``source best/top``, its source's best over the best source's (below
    :data:`UNMATCHED_SHARE`: a source with no real match)."""
    if source not in shares:
        return []
    best, values = shares[source]
    top = max(b for b, _values in shares.values())
    mine = values[rank - 1]
    return [
        ChannelScore(channel="share", rank=rank, score=round(mine, 6), contribution=0.0),
        ChannelScore(
            channel="share/source best",
            rank=rank,
            score=round(mine / best if best > 0 else 1.0, 6),
            contribution=0.0,
        ),
        ChannelScore(
            channel="source best/top",
            rank=rank,
            score=round(best / top if top > 0 else 1.0, 6),
            contribution=0.0,
        ),
    ]


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


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= DESCRIPTION_CHARS else one[: DESCRIPTION_CHARS - 1] + "…"
