"""The conversation service: :class:`ConversationService` answers the keyword, semantic,
summary and message search contracts over the conversations of one store.

It imports, keeps an in-memory snapshot (messages, conversations, summaries, their
tantivy indexes and a DuckDB mirror), reloads it when the store's conversations change,
and answers the contracts. Each contract returns a pydantic result (a wire model in
:mod:`layersearch.types`) with the structured hits and, where agents read it, the
exact ``markdown`` (:mod:`.render`). How turns become documents is in
:mod:`.documents`, how message search ranks them in :mod:`.ranking`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.corpora.dense import DenseCorpus, DenseDoc
from layersearch.errors import (
    ConfigError,
    EmbeddingUnavailable,
    LayersearchError,
    LimitExceeded,
    ModelMismatch,
)
from layersearch.ranking.explain import explain_stages
from layersearch.ranking.fulltext import FTDoc, FullTextIndex, open_or_rebuild
from layersearch.ranking.pipeline import Trace, settle
from layersearch.store.base import Store
from layersearch.types import (
    ConversationHit,
    ConversationSearchResult,
    EmbedReport,
    MessageHit,
    MessageSearchResult,
    SemanticHit,
    SemanticSearchResult,
    SummaryHit,
    SummarySearchResult,
)

from . import store as db
from .dates import Period
from .documents import (
    SUMMARY_BOOSTS,
    message_doc,
    projection,
    searchable,
    summary_dense_text,
    summary_doc,
)
from .expansion import WORDS_CORPUS, MessageWords
from .facts import FACTS_FORMAT, FactsReport, extract_facts, session_groups, turn_facts
from .importers import import_conversations
from .mirror import build_mirror
from .ranking import (
    DEPTH,
    MessageSearchConfig,
    query_text,
    strip_names,
)
from .records import Conversation, has_question
from .render import render_conversations, render_semantic, render_summaries
from .sessions import SessionIndex
from .stages import MESSAGE_PIPELINE, SUMMARY_PIPELINE, MessageRanking, SummaryRanking
from .store import ConversationRow, ImportReport, MessageRow, SummaryImportReport
from .summaries import IMPORTANCE, THINKING_STAGES, Summary, import_summaries
from .vectors import (
    MESSAGE_CORPUS,
    SUMMARY_CORPUS,
    TURN_CORPUS,
    checked_dense,
    message_dense_docs,
    vector_ranking,
)

if TYPE_CHECKING:
    from layersearch.embed.llm import ChatModel

__all__ = [
    "DEPTH",
    "EXTRACTS",
    "MESSAGE_CORPUS",
    "MODES",
    "SUMMARY_CORPUS",
    "TURN_CORPUS",
    "ConversationService",
    "DenseGetter",
]


ROLES = ("user", "assistant")
EXTRACTS = ("summary", "questions", "decisions", "quotes")
MODES = ("hybrid", "fts", "vector")
MAX_LIMIT = 100
KEYWORD_PREVIEW = 200
SEMANTIC_PREVIEW = 400
_FREE_TEXT = re.compile(r"^[a-zA-Z0-9\s\-_.,]+$")


DenseGetter = Callable[[str], DenseCorpus]


# -- helpers -------------------------------------------------------------------------------------------


def _day(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d") if value is not None else None


#: longest term or query a conversation search takes (the same bound as entity questions)
MAX_TEXT_CHARS = 100_000


def _check_text(name: str, value: str) -> None:
    if len(value) > MAX_TEXT_CHARS:
        raise LimitExceeded(
            f"{name} is {len(value)} characters; the limit is {MAX_TEXT_CHARS} "
            "(search for a distinctive phrase, not the whole text)"
        )


def _check_limit(limit: int) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")


def _choice(name: str, value: str | None, allowed: Sequence[str]) -> str | None:
    if value is None:
        return None
    norm = value.strip().lower() if isinstance(value, str) else value
    if norm not in allowed:
        raise ConfigError(f"invalid {name} {value!r}: valid values are {', '.join(allowed)}")
    return str(norm)


def _free_text(name: str, value: str | None) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or not _FREE_TEXT.match(value):
        raise ConfigError(
            f"invalid {name} {value!r}: only letters, digits, spaces and - _ . , are allowed"
        )
    return value.strip()


def _turns(messages: Sequence[MessageRow]) -> dict[str, list[MessageRow]]:
    """The searchable turns of each conversation, in order."""
    turns: dict[str, list[MessageRow]] = {}
    for m in messages:
        if searchable(m):
            turns.setdefault(m.conversation_id, []).append(m)
    return turns


def _sessions(turns: dict[str, list[MessageRow]], gap_minutes: int) -> dict[str, int]:
    """Each turn's session (see :func:`session_groups`), numbered across the snapshot."""
    session: dict[str, int] = {}
    number = -1
    for ts in turns.values():
        for group in session_groups(ts, gap_minutes):
            number += 1
            for m in group:
                session[m.id] = number
    return session


# -- the snapshot --------------------------------------------------------------------------------------


@dataclass
class _Snapshot:
    version: int
    messages: dict[str, MessageRow]
    #: searchable turns of each conversation, in order
    turns: dict[str, list[MessageRow]]
    conversations: dict[str, ConversationRow]
    summaries: dict[str, Summary]
    messages_ft: FullTextIndex
    summaries_ft: FullTextIndex
    #: conversation → the speaker names of its turns
    speakers: dict[str, frozenset[str]]
    #: searchable turn → the searchable turn after it in its conversation
    next_turn: dict[str, str]
    #: searchable turns that ask something
    questions: frozenset[str]
    #: searchable turn → the dates it is within (written, resolved), filled on demand
    #: by the turns a question naming a date ranks (see :func:`.stages._periods`)
    periods: dict[str, tuple[Period, ...]]
    #: searchable turn → its session (a number unique in the snapshot, see :func:`_sessions`)
    session: dict[str, int]
    #: question turn → the analysed words of its question sentences, filled on demand
    asked: dict[str, frozenset[str]]
    #: (turn, answer type) → whether the turn holds one (see :func:`.stages._holds`), on demand
    answers: dict[tuple[str, str], bool]
    #: the sessions as documents (``sessions``), built on the first search that needs them
    session_docs: SessionIndex | None
    #: an in-memory DuckDB copy of messages and conversations: keyword search runs the
    #: same bound SQL as on the store, without opening the store file per query
    mirror: Any


class ConversationService:
    """Conversations of one store: import, embed, and the search contracts.

    ``dense`` gives the :class:`DenseCorpus` of a corpus name for the configured
    embedder, and raises :class:`EmbeddingUnavailable` when there is none.
    """

    def __init__(
        self,
        store: Store,
        dense: DenseGetter | None = None,
        *,
        config: MessageSearchConfig | None = None,
    ) -> None:
        self.store = store
        self._dense = dense
        self.config = config or MessageSearchConfig()
        self._snap: _Snapshot | None = None
        self._gen = -1
        self._lock = threading.RLock()
        #: corpus → (store generation, fingerprint) at which its vectors were last checked
        self._checked: dict[str, tuple[int, str]] = {}
        self._words = MessageWords()

    # -- import -------------------------------------------------------------------------------------

    def import_path(
        self,
        path: str | Path,
        fmt: str = "auto",
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Parse a file or folder of exports and upsert it; malformed records are reported."""
        result = import_conversations(path, fmt)
        return self.import_conversations(
            result.conversations, problems=result.problems, progress=progress
        )

    def import_conversations(
        self,
        conversations: Sequence[Conversation],
        *,
        problems: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        with self._lock:
            return db.save_conversations(
                self.store, conversations, problems=problems, progress=progress
            )

    def extract_facts(
        self,
        llm: ChatModel,
        conversation_ids: Sequence[str] | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> FactsReport:
        """Ask ``llm`` (a :class:`layersearch.embed.llm.ChatModel`) for the facts of each session
        of these conversations (all by default) not already cached; see :mod:`.facts`."""
        # No lock: the model is slow, searches go on; each cache write is one transaction.
        turns = _turns(db.load_messages(self.store, conversation_ids))
        gap = self.config.session_gap_minutes
        return extract_facts(self.store, llm, turns, gap_minutes=gap, progress=progress)

    def import_summaries(self, path: str | Path) -> SummaryImportReport:
        summaries, problems = import_summaries(path)
        with self._lock:
            return db.save_summaries(self.store, summaries, problems=problems)

    def embed(
        self, progress: Callable[[int, int], None] | None = None, again: bool = False
    ) -> list[EmbedReport]:
        """Compute message and summary vectors for the configured embedder (incremental;
        ``again``: every text, stored or not)."""
        snap = self.snapshot()
        docs = message_dense_docs(snap.turns.values(), self.config)
        reports = [
            self._dense_corpus(c).embed(d, progress=progress, again=again) for c, d in docs.items()
        ]
        if snap.summaries:
            sums = [DenseDoc(s.id, summary_dense_text(s)) for s in snap.summaries.values()]
            summaries = self._dense_corpus(SUMMARY_CORPUS)
            reports.append(summaries.embed(sums, progress=progress, again=again))
        return reports

    # -- snapshot -----------------------------------------------------------------------------------

    def snapshot(self) -> _Snapshot:
        gen = self.store.generation()
        with self._lock:
            if self._snap is None or gen != self._gen:
                version = db.corpus_version(self.store)
                if self._snap is None or version != self._snap.version:
                    self._snap = self._load(version)
                self._gen = gen
            return self._snap

    def _load(self, version: int) -> _Snapshot:
        messages = db.load_messages(self.store)
        conversations = db.load_conversations(self.store)
        summaries = {s.id: s for s in db.load_summaries(self.store)}
        turns = _turns(messages)
        # The documents depend on the context window too: a changed config rebuilds the index.
        stamp = f"conversations-{version}-{self.config.document_shape()}"
        gap = self.config.session_gap_minutes
        facts = turn_facts(turns, gap, db.load_facts(self.store))
        if facts:
            stamp += f"-facts{FACTS_FORMAT}"
        base = Path(self.store.index_dir)

        def message_docs() -> list[FTDoc]:
            # without facts, no facts field: the documents of a store that never had any
            return [
                message_doc(ts, i, self.config, facts.get(ts[i].id, ()) if facts else None)
                for ts in turns.values()
                for i in range(len(ts))
            ]

        def summary_docs() -> list[FTDoc]:
            titles = {c.id: c.title for c in conversations.values()}
            return [summary_doc(s, titles.get(s.conversation_id)) for s in summaries.values()]

        boosts = self.config.boosts(facts=bool(facts))
        messages_ft = open_or_rebuild(base / "messages", boosts, stamp, message_docs).index
        summaries_ft = open_or_rebuild(
            base / "summaries", SUMMARY_BOOSTS, stamp, summary_docs
        ).index
        return _Snapshot(
            version=version,
            messages={m.id: m for m in messages},
            turns=turns,
            conversations=conversations,
            summaries=summaries,
            messages_ft=messages_ft,
            summaries_ft=summaries_ft,
            speakers={
                cid: frozenset(m.speaker for m in ts if m.speaker) for cid, ts in turns.items()
            },
            next_turn={
                a.id: b.id for ts in turns.values() for a, b in zip(ts, ts[1:], strict=False)
            },
            questions=frozenset(
                m.id for ts in turns.values() for m in ts if has_question(m.content)
            ),
            mirror=build_mirror(messages, conversations, summaries),
            periods={},
            session=_sessions(turns, gap),
            asked={},
            answers={},
            session_docs=None,
        )

    def _dense_corpus(self, corpus: str) -> DenseCorpus:
        if self._dense is None:
            raise EmbeddingUnavailable(
                "no embedder configured; pass --embedder local|fake|litellm:<model> "
                "or set LAYERSEARCH_EMBEDDER"
            )
        return self._dense(corpus)

    def _checked_dense(self, corpus: str) -> DenseCorpus:
        """The corpus's vectors, or EmbeddingUnavailable saying exactly why not."""
        try:
            dense = self._dense_corpus(corpus)
        except EmbeddingUnavailable as exc:
            text = str(exc)
            prefix = "" if text.startswith("embedding unavailable:") else "embedding unavailable: "
            raise EmbeddingUnavailable(prefix + text) from exc
        return checked_dense(self.store, dense, self._checked)

    # -- search_conversations -----------------------------------------------------------------------

    def search_conversations(
        self, term: str = "", limit: int = 15, role: str | None = None
    ) -> ConversationSearchResult:
        """Keyword retrieval: messages whose content ILIKE ``%term%``, newest first."""
        if not isinstance(term, str):
            raise ConfigError("term must be a string")
        _check_text("term", term)
        _check_limit(limit)
        role = _choice("role", role, ROLES)
        snap = self.snapshot()
        cursor = snap.mirror.cursor()
        try:
            rows = db.mirror_keyword_rows(
                cursor, term, limit=limit, role=role, questions_only=term == "" and role == "user"
            )
        finally:
            cursor.close()
        hits = [
            ConversationHit(
                date=_day(m.created),
                source=c.source,
                role=m.role,
                conversation_id=c.id,
                message_id=m.id,
                created=m.created,
                preview=m.content[:KEYWORD_PREVIEW],
            )
            for m, c in rows
        ]
        return ConversationSearchResult(
            term=term, role=role, limit=limit, hits=hits, markdown=render_conversations(term, hits)
        )

    # -- semantic_search ----------------------------------------------------------------------------

    def semantic_search(self, query: str, limit: int = 10) -> SemanticSearchResult:
        """Vector retrieval over messages, nearest first (cosine distance ascending)."""
        if not isinstance(query, str) or not query.strip():
            raise ConfigError("semantic search needs a non-empty query")
        _check_text("query", query)
        _check_limit(limit)
        dense = self._checked_dense(MESSAGE_CORPUS)
        snap = self.snapshot()
        try:
            found = dense.search(query, limit + 20)
        except (EmbeddingUnavailable, ModelMismatch) as exc:
            raise EmbeddingUnavailable(f"embedding unavailable: {exc}") from exc
        hits: list[SemanticHit] = []
        for doc_id, cosine in found:
            m = snap.messages.get(doc_id)
            if m is None or not searchable(m):
                continue  # a vector whose message was removed since the last embed
            c = snap.conversations.get(m.conversation_id)
            distance = 1.0 - cosine
            hits.append(
                SemanticHit(
                    rank=len(hits) + 1,
                    conversation_id=m.conversation_id,
                    conversation_title=(c.title if c and c.title else "(untitled)"),
                    source=c.source if c else "unknown",
                    date=_day(m.created),
                    message_id=m.id,
                    distance=distance,
                    similarity=round(1.0 / (1.0 + distance), 4),
                    preview=m.content[:SEMANTIC_PREVIEW],
                )
            )
            if len(hits) == limit:
                break
        return SemanticSearchResult(
            query=query, limit=limit, hits=hits, markdown=render_semantic(query, hits)
        )

    # -- message search (both channels, fused) ------------------------------------------------------

    def search_messages(
        self,
        query: str,
        limit: int = 10,
        *,
        conversation_id: str | None = None,
        channels: Sequence[str] | None = None,
        trace: Trace | None = None,
        explain: bool = False,
    ) -> MessageSearchResult:
        """Messages ranked by full text and vectors over turns-with-context, fused
        (standardised scores by default, see :func:`zscore_fusion`), then the rules of
        :data:`.stages.MESSAGE_PIPELINE` (those in ``config.without`` switched off).

        ``channels`` is a subset of ``fulltext`` and ``vector``; by default both, with
        the vector channel skipped (and a warning) when it cannot run. ``trace``, when
        given, records what each stage did to each turn; ``explain`` puts each hit's
        moves in its ``stages``. The scores shown never increase down the list
        (:func:`~layersearch.ranking.pipeline.settle`).
        """
        _check_limit(limit)
        wanted = list(channels) if channels is not None else ["fulltext", "vector"]
        unknown = set(wanted) - {"fulltext", "vector"}
        if unknown or not wanted:
            raise ConfigError("channels must be a non-empty subset of fulltext, vector")
        scope = None if conversation_id is None else [conversation_id]
        state = MessageRanking(
            self, self.snapshot(), query, scope, wanted, channels is not None, self.config
        )
        if trace is not None:
            state.trace = trace
        MESSAGE_PIPELINE.run(state, self.config.without)
        snap, fused = state.snap, state.fused
        shown = settle([f.id for f in fused], [f.score for f in fused], state.trace, "fuse")
        hits = []
        for f, score in zip(fused[:limit], shown, strict=False):
            m = snap.messages[f.id]
            moves = explain_stages(state.trace.moves(f.id)) if explain else None
            hits.append(
                MessageHit(
                    message_id=m.id,
                    conversation_id=m.conversation_id,
                    turn_id=m.turn_id,
                    role=m.role,
                    speaker=m.speaker,
                    score=score,
                    channels={c: r for c, (r, _, _) in sorted(f.channels.items())},
                    stages=moves or None,
                )
            )
        return MessageSearchResult(query=query, hits=hits, warnings=state.warnings)

    def _vector_pass(
        self, snap: _Snapshot, query: str, scope: list[str] | None, warnings: list[str]
    ) -> list[tuple[str, float]]:
        """The vector channel's ranking of the turns in ``scope`` (LayersearchError when
        it cannot run)."""
        dense = self._checked_dense(MESSAGE_CORPUS)
        allow = None if scope is None else [m.id for m in snap.turns.get(scope[0], [])]
        turn = (lambda: self._checked_dense(TURN_CORPUS)) if self.config.turn_vector else None
        text = self._dense_query(snap, query, scope)
        return vector_ranking(dense, turn, text, DEPTH, allow, warnings)

    def _widened(
        self,
        snap: _Snapshot,
        query: str,
        scope: list[str] | None,
        rankings: dict[str, list[tuple[str, float]]],
        warnings: list[str],
    ) -> list[tuple[str, float]]:
        """The full-text ranking widened by the question words' neighbours (see
        ``expansion``), or as it was when the conversations' words have no vectors."""
        ranked, cfg = rankings["fulltext"], self.config
        if cfg.word_neighbours < 1 or cfg.neighbour_weight <= 0:
            return ranked
        try:
            dense = self._checked_dense(WORDS_CORPUS)
        except LayersearchError as exc:
            why = str(exc).removeprefix("embedding unavailable: ")
            warnings.append(f"question words not read through the embedder: {why}")
            return ranked
        content = query_text(strip_names(query, self._names(snap, scope)), cfg)

        def turns() -> Iterable[MessageRow]:
            return snap.turns.get(scope[0], []) if scope else snap.messages.values()

        return self._words.widened(ranked, content, turns, scope, dense, snap.messages_ft, cfg)

    def _fulltext_pass(
        self, snap: _Snapshot, query: str, scope: list[str] | None
    ) -> list[tuple[str, float]]:
        """One BM25 ranking of ``query`` (names through the speaker field only)."""
        text = query_text(query, self.config)
        names = self._names(snap, scope) if self.config.names_match_speaker_only else frozenset()
        named = sorted(n for n in names if strip_names(query, {n}) != query)
        if not named:
            return snap.messages_ft.search(text, DEPTH, scopes=scope)
        content = {**snap.messages_ft.boosts, "speaker": 0.0}
        ranked = dict(
            snap.messages_ft.search(strip_names(text, named), DEPTH, scopes=scope, boosts=content)
        )
        if not ranked:
            return []
        bonus = snap.messages_ft.search(
            " ".join(named),
            len(ranked),
            ids=list(ranked),
            boosts={"speaker": self.config.boost_speaker},
        )
        for doc_id, score in bonus:
            ranked[doc_id] += score
        return sorted(ranked.items(), key=lambda h: (-h[1], h[0]))

    @staticmethod
    def _names(snap: _Snapshot, scope: list[str] | None) -> frozenset[str]:
        if scope is not None:
            return snap.speakers.get(scope[0], frozenset())
        return frozenset().union(*snap.speakers.values()) if snap.speakers else frozenset()

    def _dense_query(self, snap: _Snapshot, query: str, scope: list[str] | None) -> str:
        if not self.config.dense_strip_speakers:
            return query
        return strip_names(query, self._names(snap, scope))

    # -- search_summaries ---------------------------------------------------------------------------

    def search_summaries(
        self,
        query: str,
        extract: str = "summary",
        limit: int = 10,
        domain: str | None = None,
        importance: str | None = None,
        thinking_stage: str | None = None,
        source: str | None = None,
        mode: str = "hybrid",
        explain: bool = False,
    ) -> SummarySearchResult:
        """Summaries ranked by full text and/or vectors, projected to one stored field;
        with ``explain``, each hit's ``stages`` (the channels whose fusion moved it)."""
        if not isinstance(query, str):
            raise ConfigError("query must be a string")
        _check_text("query", query)
        extract_ = _choice("extract", extract, EXTRACTS)
        mode_ = _choice("mode", mode, MODES)
        assert extract_ is not None and mode_ is not None
        _check_limit(limit)
        importance = _choice("importance", importance, IMPORTANCE)
        thinking_stage = _choice("thinking_stage", thinking_stage, THINKING_STAGES)
        domain = _free_text("domain", domain)
        source = _free_text("source", source)
        snap = self.snapshot()
        allow: set[str] | None = None
        if any(v is not None for v in (domain, importance, thinking_stage, source)):
            # On the snapshot's mirror (the store's rows as of the snapshot): no store
            # connection per search.
            sql, params = db.summary_filter_query(
                domain=domain, importance=importance, thinking_stage=thinking_stage, source=source
            )
            cursor = snap.mirror.cursor()
            try:
                allow = {r[0] for r in cursor.execute(sql, params).fetchall()}
            finally:
                cursor.close()
        warnings: list[str] = []
        trace = Trace() if explain else None
        ranked = self._rank_summaries(snap, query, mode_, allow, warnings, trace)
        hits: list[SummaryHit] = []
        for sid, score, chans in ranked:
            s = snap.summaries.get(sid)
            if s is None:
                continue
            items = projection(s, extract_)
            if not items:
                continue  # the summary has nothing to show for this projection
            c = snap.conversations.get(s.conversation_id)
            when = s.created or (c.updated or c.created if c else None)
            hits.append(
                SummaryHit(
                    rank=len(hits) + 1,
                    summary_id=s.id,
                    conversation_id=s.conversation_id,
                    conversation_title=c.title if c else None,
                    date=_day(when),
                    extract=extract_,
                    items=items,
                    score=score,
                    channels=chans,
                    stages=(explain_stages(trace.moves(sid)) or None)
                    if trace is not None
                    else None,
                )
            )
            if len(hits) == limit:
                break
        return SummarySearchResult(
            query=query,
            extract=extract_,
            mode=mode_,
            limit=limit,
            hits=hits,
            warnings=warnings,
            markdown=render_summaries(query, extract_, hits, warnings),
        )

    def _rank_summaries(
        self,
        snap: _Snapshot,
        query: str,
        mode: str,
        allow: set[str] | None,
        warnings: list[str],
        trace: Trace | None = None,
    ) -> list[tuple[str, float, dict[str, int]]]:
        """(id, shown score, channel → rank) of the summaries, best first; the scores
        settled (non-increasing)."""
        if not query.strip():
            # No query: the newest summaries passing the filters.
            pool = [s for s in snap.summaries.values() if allow is None or s.id in allow]
            pool.sort(
                key=lambda s: (-(s.created.timestamp() if s.created else float("-inf")), s.id)
            )
            return [(s.id, 0.0, {}) for s in pool]
        state = SummaryRanking(self, snap, query, mode, allow, warnings, trace=trace)
        fused = SUMMARY_PIPELINE.run(state).fused
        shown = settle([f.id for f in fused], [f.score for f in fused], trace, "fuse")
        return [
            (f.id, score, {c: r for c, (r, _, _) in sorted(f.channels.items())})
            for f, score in zip(fused, shown, strict=True)
        ]
