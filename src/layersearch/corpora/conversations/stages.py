"""Message search and summary search as declared pipelines: :data:`MESSAGE_PIPELINE`,
:data:`SUMMARY_PIPELINE`.

The stages run in this order on a :class:`MessageRanking` (one search's state); each
one reads :class:`~.ranking.MessageSearchConfig` (every tuned number and switch of
message search) and can be switched off by name (``MessageSearchConfig.without``,
``layersearch eval conversations --without STAGE``):

- ``fulltext`` and ``vector``: the channels (chosen by ``channels``, not switched off);
- ``word-neighbours``: the full-text channel widened by each question word's nearest
  words of the conversations (needs the vector channel);
- ``fuse``: the channels fused (z-scores, or RRF), not switched off;
- ``channel-tops``, ``session-text``, ``answers-follow-questions``,
  ``date-match``, ``answer-types``: the rules after fusion (see :mod:`.ranking`).

Every rule after fusion moves turns by changing their scores and re-sorts, so the
scores of the list are non-increasing after each stage and no turn takes another
position's score; a moved turn's ``channels`` keeps what the rule did (its rank before)
under the rule's label, as it always has, and the :class:`Trace` of the search records
each stage's reordering and the score it added to each turn it moved
(``ConversationService.search_messages(trace=..., explain=True)``: each hit's
``stages``, as entity hits have them).

Summary search has no rule after fusion: ``fulltext`` and ``vector`` (chosen by its
``mode``: ``fts``, ``vector`` or ``hybrid``), then ``fuse`` (RRF, k = 60), each
ranking ``DEPTH`` summaries; none is switched off by name (``mode`` chooses). With a
trace (``explain``), each channel of a hybrid search records how fusing it moved each
summary (from its place in the other channel's list), as vault search does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from layersearch.errors import EmbeddingUnavailable, LayersearchError
from layersearch.ranking.analyzer import analyze, analyze_query
from layersearch.ranking.bm25 import BM25Params
from layersearch.ranking.explain import trace_channels
from layersearch.ranking.fusion import Fused, rrf
from layersearch.ranking.pipeline import Pipeline, Stage, Trace

from .dates import Period, named_periods, period_of, resolve_dates, within
from .ranking import (
    DEPTH,
    MessageSearchConfig,
    answer_type,
    answers_follow_questions,
    demote,
    holds_answer,
    keep_channel_tops,
    prefer_answer_types,
    prefer_times,
    query_text,
    question_sentences,
    strip_names,
    zscore_fusion,
)
from .sessions import LABEL as SESSION_LABEL
from .sessions import SessionIndex, session_lift
from .vectors import SUMMARY_CORPUS

if TYPE_CHECKING:
    from .service import ConversationService, _Snapshot

__all__ = [
    "MESSAGE_PIPELINE",
    "MESSAGE_STAGES",
    "SUMMARY_PIPELINE",
    "MessageRanking",
    "SummaryRanking",
]


@dataclass(slots=True)
class MessageRanking:
    """One message search as its stages read and update it."""

    service: ConversationService
    snap: _Snapshot
    query: str
    scope: list[str] | None
    wanted: list[str]
    #: whether the caller chose the channels (then a failing vector channel raises)
    chosen: bool
    config: MessageSearchConfig
    rankings: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    fused: list[Fused] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)

    def words(self) -> list[str]:
        """The full-text query's words (names out), as the full-text channel reads them."""
        names = self.service._names(self.snap, self.scope)
        return analyze_query(query_text(strip_names(self.query, names), self.config))

    def reorder(self, stage: str, after: list[Fused], label: str, note: Callable[..., str]) -> None:
        """``after`` becomes the fused list; the trace records the move, what the stage
        did to each moved turn (``note`` of its ``channels[label]`` entry: rank before,
        amount, shift) and the score it added (the entry's shift)."""
        before = [f.id for f in self.fused]
        self.fused = after
        entries = {f.id: f.channels[label] for f in after if label in f.channels}

        def say(doc_id: str) -> str:
            entry = entries.get(doc_id)
            return note(*entry) if entry is not None else "moved by the turns it passed"

        def shift(doc_id: str) -> float:
            entry = entries.get(doc_id)
            return float(entry[2]) if entry is not None else 0.0

        self.trace.reorder(stage, before, [f.id for f in after], say, adjust=shift)


def _periods(snap: _Snapshot, mid: str, config: MessageSearchConfig) -> tuple[Period, ...]:
    """The day turn ``mid`` was written, and with ``date_match_resolved`` the dates its
    relative times resolve to; computed once per snapshot (a regex over the turn costs
    ~20 µs, too much for every turn at load, nothing for the ~200 a query ranks)."""
    found = snap.periods.get(mid)
    if found is None:
        m = snap.messages[mid]
        if m.created is None:
            found = ()
        else:
            own: Period = (m.created.year, m.created.month, m.created.day)
            resolved = resolve_dates(m.content, m.created) if config.date_match_resolved else []
            found = (own, *(period_of(w) for w in resolved))
        snap.periods[mid] = found
    return found


def _asked(snap: _Snapshot, mid: str) -> frozenset[str]:
    """The analysed words of turn ``mid``'s question sentences, computed once per snapshot."""
    found = snap.asked.get(mid)
    if found is None:
        found = snap.asked[mid] = frozenset(analyze(question_sentences(snap.messages[mid].content)))
    return found


def _holds(snap: _Snapshot, mid: str, kind: str) -> bool:
    """:func:`holds_answer` for a turn, remembered in the snapshot."""
    if (mid, kind) not in snap.answers:
        m = snap.messages[mid]
        who = snap.speakers.get(m.conversation_id, frozenset())
        snap.answers[mid, kind] = holds_answer(kind, m.content, who)
    return snap.answers[mid, kind]


def _fulltext(state: MessageRanking) -> None:
    if "fulltext" in state.wanted:
        state.rankings["fulltext"] = state.service._fulltext_pass(
            state.snap, state.query, state.scope
        )


def _vector(state: MessageRanking) -> None:
    if "vector" not in state.wanted:
        return
    try:
        state.rankings["vector"] = state.service._vector_pass(
            state.snap, state.query, state.scope, state.warnings
        )
    except LayersearchError as exc:
        if state.chosen:
            raise
        state.warnings.append(str(exc))


def _word_neighbours(state: MessageRanking) -> None:
    if "fulltext" not in state.rankings or "vector" not in state.rankings:
        return
    before = state.rankings["fulltext"]
    try:
        after = state.service._widened(
            state.snap, state.query, state.scope, state.rankings, state.warnings
        )
    except LayersearchError as exc:
        if state.chosen:
            raise
        state.warnings.append(str(exc))
        return
    state.rankings["fulltext"] = after
    state.trace.reorder(
        "word-neighbours",
        [d for d, _ in before],
        [d for d, _ in after],
        "full-text channel: the question words' nearest words searched as well",
    )


def _fuse(state: MessageRanking) -> None:
    cfg = state.config
    weights = {"fulltext": cfg.weight_fulltext, "vector": cfg.weight_vector}
    if cfg.fusion == "rrf":
        state.fused = rrf(state.rankings, k=cfg.rrf_k, weights=weights)
    else:
        state.fused = zscore_fusion(state.rankings, weights)


def _channel_tops(state: MessageRanking) -> None:
    turns = state.config.channel_top_turns
    after = keep_channel_tops(state.fused, state.rankings, turns)
    state.reorder(
        "channel-tops",
        after,
        "top",
        lambda rank, _score, _shift: f"a channel's top {turns} turn, lifted from fused #{rank}",
    )


def _session_text(state: MessageRanking) -> None:
    weight = state.config.session_weight
    if weight <= 0:
        return
    snap = state.snap
    if snap.session_docs is None:  # built on the first search that reads it
        snap.session_docs = SessionIndex.build(snap.turns, snap.session)
    cfg = state.config
    params = BM25Params(k1=cfg.session_k1, b=cfg.session_b, idf="lucene", delta=0.0)
    after = session_lift(
        state.fused, snap.session_docs, snap.session.get, state.words(), state.scope, weight, params
    )
    state.reorder(
        "session-text",
        after,
        SESSION_LABEL,
        lambda _rank, z, _shift: f"its session's words against the question: z {z:+.2f}",
    )


def _answers_follow_questions(state: MessageRanking) -> None:
    cfg = state.config
    if not cfg.answers_follow_questions:
        return
    snap = state.snap
    is_question: Callable[[str], bool] = snap.questions.__contains__
    below: Callable[[str], bool] | None = None
    if cfg.answers_need_question_words:
        content = frozenset(state.words())

        def below(mid: str) -> bool:
            return content.isdisjoint(_asked(snap, mid))

    after = answers_follow_questions(state.fused, snap.next_turn.get, is_question, below)
    state.reorder(
        "answers-follow-questions",
        after,
        "answers",
        lambda rank, _score, _shift: f"answers the question at #{rank}",
    )
    if cfg.answered_question_penalty > 0:
        score = {f.id: f.score for f in state.fused}

        def answered(mid: str) -> bool:
            reply = snap.next_turn.get(mid)
            return (
                is_question(mid)
                and reply is not None
                and score.get(reply, float("-inf")) > score[mid]
            )

        state.reorder(
            "answers-follow-questions",
            demote(state.fused, answered, cfg.answered_question_penalty),
            "answered",
            lambda rank, _times, _shift: f"a question its reply passed, from #{rank}",
        )


def _date_match(state: MessageRanking) -> None:
    cfg = state.config
    asked = named_periods(state.query) if cfg.date_match_bonus > 0 else []
    if not asked:
        return
    snap = state.snap
    after = prefer_times(
        state.fused,
        lambda mid: any(within(p, q) for p in _periods(snap, mid, cfg) for q in asked),
        cfg.date_match_bonus,
        label="date",
    )
    state.reorder(
        "date-match",
        after,
        "date",
        lambda _rank, _times, _shift: "dated within the date the question names",
    )


def _answer_types(state: MessageRanking) -> None:
    kind = answer_type(state.query)
    if kind is None:
        return
    after = prefer_answer_types(state.fused, state.query, partial(_holds, state.snap), state.config)
    state.reorder(
        "answer-types",
        after,
        kind,
        lambda _rank, _times, _shift: f"holds the {kind} the question asks for",
    )


#: the stages of message search, in the order they run
MESSAGE_STAGES: tuple[Stage[MessageRanking], ...] = (
    Stage("fulltext", "BM25 over the turns with their context", _fulltext, switchable=False),
    Stage("vector", "cosine of the turn vectors", _vector, switchable=False),
    Stage(
        "word-neighbours", "full text widened by the question words' neighbours", _word_neighbours
    ),
    Stage("fuse", "the channels fused (z-scores or RRF)", _fuse, switchable=False),
    Stage("channel-tops", "each channel's top turns kept near the top", _channel_tops),
    Stage("session-text", "turns of sessions whose words match lifted", _session_text),
    Stage(
        "answers-follow-questions",
        "the reply to a matching question placed by it",
        _answers_follow_questions,
    ),
    Stage("date-match", "turns dated within a date the question names lifted", _date_match),
    Stage("answer-types", "turns holding the asked-for time, amount or name lifted", _answer_types),
)
MESSAGE_PIPELINE: Pipeline[MessageRanking] = Pipeline("conversations", MESSAGE_STAGES)


@dataclass(slots=True)
class SummaryRanking:
    """One summary search as its stages read and update it."""

    service: ConversationService
    snap: _Snapshot
    query: str
    mode: str
    allow: set[str] | None
    warnings: list[str]
    rankings: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    fused: list[Fused] = field(default_factory=list)
    #: what the stages did to each summary, with ``explain`` (None without)
    trace: Trace | None = None


def _summary_fulltext(state: SummaryRanking) -> None:
    if state.mode in ("hybrid", "fts"):
        state.rankings["fulltext"] = state.snap.summaries_ft.search(
            state.query, DEPTH, ids=state.allow
        )


def _summary_vector(state: SummaryRanking) -> None:
    if state.mode not in ("hybrid", "vector"):
        return
    try:
        dense = state.service._checked_dense(SUMMARY_CORPUS)
        state.rankings["vector"] = dense.search(state.query, DEPTH, state.allow)
    except EmbeddingUnavailable as exc:
        if state.mode == "vector":
            raise
        state.warnings.append(f"{exc}; showing full-text results only")


def _summary_fuse(state: SummaryRanking) -> None:
    state.fused = rrf(state.rankings)
    if state.trace is not None:
        after = [f.id for f in state.fused]
        trace_channels(state.trace, state.rankings, rrf, after, SUMMARY_CHANNELS)


#: the channels of summary search (stages that ``mode`` chooses)
SUMMARY_CHANNELS = ("fulltext", "vector")

#: the stages of summary search, in the order they run (``mode`` chooses the channels)
SUMMARY_PIPELINE: Pipeline[SummaryRanking] = Pipeline(
    "summaries",
    (
        Stage("fulltext", "BM25 over the summaries", _summary_fulltext, switchable=False),
        Stage("vector", "cosine of the summary vectors", _summary_vector, switchable=False),
        Stage("fuse", "Reciprocal Rank Fusion of the channels", _summary_fuse, switchable=False),
    ),
)
