"""The built-in corpora of a scoped search (:class:`~layersearch.corpora.protocol.Corpus`):
the semantic layer's entities and the memories (one entity search ranks both), the
conversation messages, the vault notes and the conversation summaries (searched only
when ``scope`` names them: ``all`` leaves them out, as it did before they were a
corpus). Each ranks its own hits with the search it already has; the registry
(:mod:`layersearch.corpora.registry`) lists them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from layersearch.corpora.protocol import Ranked, ScopeRun
from layersearch.errors import ConfigError, LayersearchError, NotFound
from layersearch.types import (
    ChannelScore,
    DocumentDetail,
    Hit,
    InspectResponse,
    MessageDetail,
    SearchResponse,
)

__all__ = [
    "CONVERSATION_PREFIX",
    "MAX_RESULTS",
    "VAULT_PREFIX",
    "ConversationCorpus",
    "MemoryCorpus",
    "SemanticCorpus",
    "SummaryCorpus",
    "VaultCorpus",
    "conversation_hit_id",
    "entity_response",
    "summary_hit_id",
]

if TYPE_CHECKING:
    from layersearch.corpora.conversations.summaries import Summary

CONVERSATION_PREFIX = "conversation:"
VAULT_PREFIX = "vault:"
#: what a summary's hit id starts with (the ids made at import already do)
SUMMARY_PREFIX = "summary:"
DESCRIPTION_CHARS = 160
#: a role filter is applied to this many ranked messages (message search's depth)
ROLE_DEPTH = 100
#: the most hits a search returns (``max_results``)
MAX_RESULTS = 100
_NO_VAULT = "no vault indexed in this store: run `layersearch vault index PATH`"
#: the run's cache key of the entity search's response (None: nothing loaded)
_ENTITY_SEARCH = "semantic"


def summary_hit_id(summary_id: str) -> str:
    """The hit id of a summary: its id when it starts with ``summary:`` (the ids made
    at import), else ``summary:<id>`` (an id the summaries file gave)."""
    return summary_id if summary_id.startswith(SUMMARY_PREFIX) else SUMMARY_PREFIX + summary_id


def conversation_hit_id(message_id: str) -> str:
    """The hit id of a conversation message: ``conversation:<message_id>``. The message id
    (``<conversation id>#<position>-<hash>``) already names its conversation."""
    return f"{CONVERSATION_PREFIX}{message_id}"


# -- entities and memories: one entity search --------------------------------------------------


def entity_response(run: ScopeRun) -> SearchResponse | None:
    """The entity search's response for ``run`` (entities and memories interleaved), run
    once per scoped search; None when the store holds nothing it could return."""
    if _ENTITY_SEARCH not in run.cache:
        run.cache[_ENTITY_SEARCH] = _entity_search(run)
    out: SearchResponse | None = run.cache[_ENTITY_SEARCH]
    return out


def _entity_search(run: ScopeRun) -> SearchResponse | None:
    corpus = run.services.entities.corpus()
    both = "semantic" in run.sources
    if not corpus.entities and not corpus.memories or (not both and not corpus.memories):
        return None
    req = run.req
    # The entity search interleaves entities and memories: twice the depth gives each
    # kind ``depth`` hits of its own ranking when it has them.
    inner = req.model_copy(
        update={
            "scope": None,
            "max_per_source": None,
            "tags": None,
            "status": None,
            "role": None,
            "max_results": _inner_depth(run),
        }
    )
    return run.services.entities.search(inner)


def _inner_depth(run: ScopeRun) -> int:
    """How many hits to ask the entity search for: as many as asked for scope=semantic
    (its list as it is), twice the depth when entities and memories are fused apart
    (the list interleaves them), the most it gives for memories alone."""
    sources = set(run.sources)
    if sources == {"semantic", "memory"} and run.req.max_per_source is None:
        return run.req.max_results
    if "semantic" in sources and "memory" not in sources:
        return min(MAX_RESULTS, 2 * run.depth)
    return MAX_RESULTS


def _empty_entities(run: ScopeRun) -> Ranked:
    what = "no semantic layer or memories" if "semantic" in run.sources else "no memories"
    return Ranked(warnings=[f"{what} in this store: run `layersearch load PATH`"], empty=True)


class _EntityStore:
    """What entities and memories share: their documents, ids and inspect."""

    source: str

    filters: tuple[str, ...] = ("datasource", "cypher_filter")

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        corpus = run.services.entities.corpus()
        return [corpus.document_words(h.id) for h in hits]

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        try:
            got = run.services.entities.inspect(list(ids))
        except NotFound as exc:
            out.warnings.append(str(exc))
            return
        out.entities.extend(got.entities)
        out.memories.extend(got.memories)
        out.warnings.extend(got.warnings)

    def ids(self, run: ScopeRun) -> Iterable[str]:
        corpus = run.services.entities.corpus()
        return (e for e in corpus.entities if corpus.entities.is_visible(e))

    def _own_hits(self, run: ScopeRun, *, memories: bool, warnings: bool) -> Ranked:
        """This corpus's hits of the one entity search (memories or the rest), marked
        with its source; the search's warnings when ``warnings``."""
        resp = entity_response(run)
        if resp is None:
            return _empty_entities(run)
        return Ranked(
            hits=[
                h.model_copy(update={"source": self.source})
                for h in resp.results
                if (h.kind == "memory") == memories
            ],
            warnings=list(resp.warnings) if warnings else [],
        )


class SemanticCorpus(_EntityStore):
    """The semantic layer's entities, ranked by the entity search; ``scope=semantic``
    also searches the memories (and alone returns that search's own list)."""

    source = "semantic"
    scope = "semantic"
    also: tuple[str, ...] = ("memory",)
    prefix = ""
    opened_by: str | None = None
    what = "the semantic layer"
    tie = 0
    in_all = True

    def search(self, run: ScopeRun) -> Ranked:
        return self._own_hits(run, memories=False, warnings=True)


class MemoryCorpus(_EntityStore):
    """The saved memories, ranked among their kind by the entity search; their ids
    (``memory:N``) are opened with the entities'."""

    source = "memory"
    scope = "memory"
    also: tuple[str, ...] = ()
    prefix = "memory:"
    opened_by: str | None = "semantic"
    what = "memories"
    tie = 1
    in_all = True

    def search(self, run: ScopeRun) -> Ranked:
        # the entity search's warnings are said once, with the entities when searched
        return self._own_hits(run, memories=True, warnings="semantic" not in run.sources)


# -- conversation messages -------------------------------------------------------------------


class ConversationCorpus:
    """Conversation messages ranked by message search (full text, and vectors when an
    embedder is configured), then the ``role`` filter."""

    source = "conversation"
    scope = "conversations"
    also: tuple[str, ...] = ()
    prefix = CONVERSATION_PREFIX
    opened_by: str | None = None
    filters: tuple[str, ...] = ("role",)
    what = "conversations"
    tie = 3
    in_all = True

    def search(self, run: ScopeRun) -> Ranked:
        conversations = run.services.conversations()
        snap = conversations.snapshot()
        if not snap.messages:
            return Ranked(
                warnings=["no conversations imported: run `layersearch conversations import PATH`"],
                empty=True,
            )
        question = run.question
        if question is None:
            return Ranked(warnings=["needs a question: conversations not searched"])
        req = run.req
        role = req.role
        if role is not None and role not in ("user", "assistant"):
            raise ConfigError(f"role must be 'user' or 'assistant', got {role!r}")
        depth = run.depth
        channels = None if run.services.embedder() is not None else ["fulltext"]
        found = conversations.search_messages(
            question, ROLE_DEPTH if role else depth, channels=channels, explain=req.explain
        )
        hits = []
        for m in found.hits:
            if role is not None and m.role != role:
                continue
            row = snap.messages[m.message_id]
            explanation = _channel_ranks(m.channels) if req.explain else None
            hits.append(
                Hit(
                    kind="conversation",
                    id=conversation_hit_id(m.message_id),
                    score=round(m.score, 6),
                    description=_line(row.content),
                    text=None if req.compact else row.content,
                    explanation=explanation,
                    stages=m.stages,
                    source="conversation",
                    conv_id=m.conversation_id,
                    message_id=m.message_id,
                )
            )
            if len(hits) == depth:
                break
        return Ranked(hits=hits, warnings=list(found.warnings))

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        from layersearch.ranking.analyzer import analyze

        snap = run.services.conversations().snapshot()
        out = []
        for h in hits:
            m = snap.messages.get(h.message_id or "")
            out.append(frozenset(analyze(m.content)) if m is not None else frozenset())
        return out

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        snap = run.services.conversations().snapshot()
        found_all: list[MessageDetail] = []
        for raw in ids:
            key = raw.strip()
            rest = key[len(CONVERSATION_PREFIX) :]
            found = snap.messages.get(rest)
            # The older conversation:<conv_id>:<message_id>; a conversation id may itself
            # hold ':', so every split of the rest is tried.
            for i, ch in enumerate(rest):
                if found is not None:
                    break
                if ch != ":":
                    continue
                m = snap.messages.get(rest[i + 1 :])
                if m is not None and m.conversation_id == rest[:i]:
                    found = m
            if found is None:
                out.warnings.append(
                    f"unknown conversation message '{key}' (ids are conversation:<message_id>)"
                )
                continue
            c = snap.conversations.get(found.conversation_id)
            found_all.append(
                MessageDetail(
                    id=conversation_hit_id(found.id),
                    conv_id=found.conversation_id,
                    message_id=found.id,
                    conversation_title=c.title if c else None,
                    role=found.role,
                    speaker=found.speaker,
                    created=found.created,
                    content=found.content,
                )
            )
        out.conversations = found_all

    def ids(self, run: ScopeRun) -> Iterable[str]:
        return (conversation_hit_id(m) for m in run.services.conversations().snapshot().messages)


# -- vault notes -----------------------------------------------------------------------------


class VaultCorpus:
    """Vault notes ranked by vault search in hybrid mode (full text alone without an
    embedder), with the ``tags`` and ``status`` filters."""

    source = "vault"
    scope = "vault"
    also: tuple[str, ...] = ()
    prefix = VAULT_PREFIX
    opened_by: str | None = None
    filters: tuple[str, ...] = ("tags", "status")
    what = "the vault"
    tie = 2
    in_all = True

    def search(self, run: ScopeRun) -> Ranked:
        req = run.req
        question = run.question
        vault = run.services.vault()
        if question is None:
            from layersearch.corpora.vault.store import load_meta

            if load_meta(vault.store).root is None:
                return Ranked(warnings=[_NO_VAULT], empty=True)
            return Ranked(warnings=["needs a question: the vault not searched"])
        inner: list[str] = []
        try:
            found = vault.search(
                question,
                tags=req.tags,
                status=req.status,
                limit=run.depth,
                mode="hybrid",
                explain=req.explain,
                warnings=inner,
            )
        except NotFound as exc:
            return Ranked(warnings=[str(exc)], empty=True)
        if run.services.embedder() is None:
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
                    stages=v.stages,
                    source="vault",
                    slug=v.slug,
                )
            )
        return Ranked(hits=hits, warnings=inner)

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        notes = run.services.vault().note_words([h.slug or "" for h in hits], asked)
        return [notes.get(h.slug or "", frozenset()) for h in hits]

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        out.notes = []
        for raw in ids:
            try:
                out.notes.append(run.services.vault().get_note(raw.strip()[len(VAULT_PREFIX) :]))
            except LayersearchError as exc:
                out.warnings.append(str(exc))

    def ids(self, run: ScopeRun) -> Iterable[str]:
        from layersearch.corpora.vault.store import all_slugs

        return (f"{VAULT_PREFIX}{slug}" for slug in all_slugs(run.services.vault().store))


# -- conversation summaries -----------------------------------------------------------------


class SummaryCorpus:
    """Conversation summaries ranked by summary search (hybrid with an embedder, full
    text alone without), their hit ids ``summary:…`` (:func:`summary_hit_id`). Not in ``scope=all``
    (``in_all``): a summary restates its conversation's messages, which ``all`` already
    searches; ``scope=summaries`` searches them."""

    source = "summary"
    scope = "summaries"
    also: tuple[str, ...] = ()
    prefix = SUMMARY_PREFIX
    opened_by: str | None = None
    filters: tuple[str, ...] = ()
    what = "summaries"
    tie = 4
    in_all = False

    def search(self, run: ScopeRun) -> Ranked:
        conversations = run.services.conversations()
        if not conversations.snapshot().summaries:
            return Ranked(
                warnings=["no summaries imported: run `layersearch summaries import PATH`"],
                empty=True,
            )
        question = run.question
        if question is None:
            return Ranked(warnings=["needs a question: summaries not searched"])
        req = run.req
        mode = "hybrid" if run.services.embedder() is not None else "fts"
        found = conversations.search_summaries(
            question, limit=run.depth, mode=mode, explain=req.explain
        )
        hits = []
        for s in found.hits:
            text = s.items[0] if s.items else ""
            explanation = _channel_ranks(s.channels) if req.explain else None
            hits.append(
                Hit(
                    kind="summary",
                    id=summary_hit_id(s.summary_id),
                    score=round(s.score, 6),
                    description=_line(text),
                    text=None if req.compact else text,
                    explanation=explanation,
                    stages=s.stages,
                    source=self.source,
                    conv_id=s.conversation_id,
                )
            )
        return Ranked(hits=hits, warnings=list(found.warnings))

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        from layersearch.corpora.conversations.documents import summary_dense_text
        from layersearch.ranking.analyzer import analyze

        snap = run.services.conversations().snapshot()
        out = []
        for h in hits:
            s = _summary(snap.summaries, h.id)
            out.append(frozenset(analyze(summary_dense_text(s))) if s else frozenset())
        return out

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        snap = run.services.conversations().snapshot()
        found = []
        for raw in ids:
            s = _summary(snap.summaries, raw.strip())
            if s is None:
                out.warnings.append(f"unknown summary '{raw.strip()}'")
                continue
            c = snap.conversations.get(s.conversation_id)
            title = c.title if c is not None and c.title else s.conversation_id
            hit_id = summary_hit_id(s.id)
            found.append(DocumentDetail(id=hit_id, source=self.source, title=title, text=s.summary))
        out.documents = [*(out.documents or []), *found]

    def ids(self, run: ScopeRun) -> Iterable[str]:
        return (summary_hit_id(i) for i in run.services.conversations().snapshot().summaries)


def _summary(summaries: Mapping[str, Summary], hit_id: str) -> Summary | None:
    """The summary of a hit id: the id itself, else the id after ``summary:``."""
    found = summaries.get(hit_id)
    return found if found is not None else summaries.get(hit_id[len(SUMMARY_PREFIX) :])


def _channel_ranks(channels: dict[str, int]) -> list[ChannelScore]:
    """A hit's explanation when its corpus gives only each channel's rank of it."""
    return [
        ChannelScore(channel=c, rank=r, score=0.0, contribution=0.0)
        for c, r in sorted(channels.items(), key=lambda kv: (kv[1], kv[0]))
    ]


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= DESCRIPTION_CHARS else one[: DESCRIPTION_CHARS - 1] + "…"
