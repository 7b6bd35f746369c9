"""The conversation search contracts: keyword, semantic, summaries, and message search.

:class:`ConversationService` owns the conversation corpus of one store: it
imports, keeps an in-memory snapshot (messages, conversations, summaries and
their tantivy indexes), reloads it when the store's conversations change, and
answers the three contracts. Each contract returns a pydantic result with the
structured hits and ``markdown``, the exact text agents rely on.

What a message means for ranking (see docs/conversations.md, "Message search"):
a turn alone ("yes, last Tuesday") often carries no words of the question it
answers, so both channels see the turn with its speaker, its date and its
neighbouring turns; the turn's own words count most.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from layersearch.corpora.dense import DenseCorpus, DenseDoc
from layersearch.errors import (
    ConfigError,
    EmbeddingUnavailable,
    LayersearchError,
    LimitExceeded,
    ModelMismatch,
)
from layersearch.ranking.fulltext import FTDoc, FullTextIndex, open_or_rebuild
from layersearch.ranking.fusion import Fused, rrf
from layersearch.store import migrations
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
from .dates import resolve_dates
from .importers import import_conversations
from .records import Conversation, has_question
from .store import ConversationRow, ImportReport, MessageRow, SummaryImportReport
from .summaries import IMPORTANCE, THINKING_STAGES, Summary, import_summaries

__all__ = [
    "ConversationService",
    "MessageSearchConfig",
    "MESSAGE_CORPUS",
    "SUMMARY_CORPUS",
    "ConversationHit",
    "ConversationSearchResult",
    "SemanticHit",
    "SemanticSearchResult",
    "SummaryHit",
    "SummarySearchResult",
    "MessageHit",
    "MessageSearchResult",
    "EXTRACTS",
    "MODES",
]

log = logging.getLogger("layersearch.corpora.conversations.search")

MESSAGE_CORPUS = "messages"
SUMMARY_CORPUS = "summaries"
ROLES = ("user", "assistant")
EXTRACTS = ("summary", "questions", "decisions", "quotes")
MODES = ("hybrid", "fts", "vector")
MAX_LIMIT = 100
#: every channel ranks this deep, whatever the limit, so results for n are a prefix of n + k
DEPTH = 100
KEYWORD_PREVIEW = 200
SEMANTIC_PREVIEW = 400
_FREE_TEXT = re.compile(r"^[a-zA-Z0-9\s\-_.,]+$")

SUMMARY_BOOSTS = {
    "summary": 1.0,
    "decisions": 0.8,
    "questions": 0.8,
    "quotes": 0.8,
    "concepts": 1.0,
    "domain": 0.5,
    "title": 0.5,
}

# Words that carry no content in questions about people's lives and chats, beyond the
# analyzer's own stop list: pronouns, auxiliaries and question scaffolding.
CONVERSATION_STOP_WORDS = frozenset(
    {
        "about",
        "after",
        "ago",
        "any",
        "anything",
        "around",
        "been",
        "before",
        "being",
        "both",
        "during",
        "else",
        "ever",
        "he",
        "her",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "kind",
        "kinds",
        "likely",
        "might",
        "most",
        "must",
        "not",
        "other",
        "others",
        "own",
        "recently",
        "same",
        "several",
        "she",
        "should",
        "some",
        "something",
        "still",
        "such",
        "thing",
        "things",
        "time",
        "type",
        "types",
        "us",
        "very",
        "way",
        "ways",
        "well",
        "yet",
    }
)
_RAW_WORD = re.compile(r"[\w'’-]+", re.UNICODE)

#: bumped whenever message_doc changes what it indexes, so stored indexes are rebuilt
DOC_FORMAT = 2

DenseGetter = Callable[[str], DenseCorpus]


@dataclass(frozen=True)
class MessageSearchConfig:
    """How messages become ranking documents and how the channels count.

    The defaults are argued from first principles in docs/conversations.md and were
    checked (not fitted) on two LoCoMo conversations; see docs/quality.md.
    """

    #: neighbouring turns added as context, before and after the turn
    context_before: int = 1
    context_after: int = 1
    #: tantivy field boosts: the turn itself counts most
    boost_text: float = 1.0
    boost_speaker: float = 1.0
    #: the turn before is usually what this turn answers, so it counts more than the one
    #: after; the reply to a question that matches is also lifted by answers_follow_questions,
    #: so the turn before need not count as much as the turn itself
    boost_before: float = 0.4
    boost_after: float = 0.2
    boost_date: float = 0.5
    #: the dense document: the turn, its speaker and date, and the turn before it
    dense_context_before: int = 1
    dense_context_chars: int = 300
    #: speaker names in the embedded text. Off is slightly better for message search
    #: (see docs/quality.md) but the vectors are shared with semantic_search, whose
    #: output is a fixed contract, so it stays on
    dense_speakers: bool = True
    #: how the channels are fused: "zscore" (each channel's scores standardised over its
    #: top DEPTH, then a weighted sum) or "rrf" (weighted reciprocal ranks with rrf_k)
    fusion: str = "zscore"
    #: channel weights: the dense channel is the weaker one on its own, so it counts less
    weight_fulltext: float = 1.0
    weight_vector: float = 0.5
    #: RRF's k when fusion is "rrf": within one conversation the first ranks carry the
    #: signal, so contributions decay faster than entity search's k = 60
    rrf_k: int = 10
    #: leave the conversation's speaker names out of the dense query: every embedded
    #: turn starts with a speaker name, so a name pulls towards that speaker's turns in
    #: general rather than the turns about the question (the full-text speaker field
    #: still matches it)
    dense_strip_speakers: bool = True
    #: a speaker's name in the query is matched against the speaker field only, not
    #: against turn text, where it names the person being addressed
    names_match_speaker_only: bool = True
    #: drop conversational function words from full-text queries
    extra_stop_words: bool = True
    #: a turn that answers a question ranks at least as high as the question: the
    #: question's words match the query, the answer is what was asked for
    answers_follow_questions: bool = True
    #: a question asking when ("When did …", "What year …") adds this many standard
    #: deviations of its fused scores to turns that state a time ("last Friday", "two
    #: days ago", "in 2022"): the answer to "when" says when, and a chat turn dates an
    #: event relative to the day it was written. Enough to reorder close turns, not to
    #: lift an unrelated turn over a clear match. 0 turns it off
    time_answer_bonus: float = 0.5
    #: index each turn's relative times ("last Friday") resolved against its date
    #: ("5 May 2023") in a ``resolved`` field, so a question naming a day, month or year
    #: matches the turn that dates an event relative to the day it was written
    resolve_dates: bool = False
    boost_resolved: float = 0.5

    def document_shape(self) -> str:
        """What the full-text documents depend on besides the messages (part of the index stamp)."""
        shape = f"doc{DOC_FORMAT}-ctx{self.context_before}.{self.context_after}"
        return shape + ("-resolved" if self.resolve_dates else "")

    def boosts(self) -> dict[str, float]:
        boosts = {
            "text": self.boost_text,
            "speaker": self.boost_speaker,
            "before": self.boost_before,
            "after": self.boost_after,
            "date": self.boost_date,
        }
        if self.resolve_dates:
            boosts["resolved"] = self.boost_resolved
        return boosts


# -- helpers -------------------------------------------------------------------------------------------


def _day(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d") if value is not None else None


def _one_line(text: str) -> str:
    return " ".join(text.split())


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


def searchable(m: MessageRow) -> bool:
    """People's words only: tool output and harness-injected text stay out of search."""
    return not m.injected and m.role in ("user", "assistant", "system")


def query_text(query: str, config: MessageSearchConfig) -> str:
    """The full-text query with conversational function words removed."""
    if not config.extra_stop_words:
        return query
    words = [
        w
        for w in _RAW_WORD.findall(query)
        if w.lower().replace("’", "'") not in CONVERSATION_STOP_WORDS
    ]
    return " ".join(words)


def strip_names(query: str, names: Collection[str]) -> str:
    """``query`` without the given names (and their possessive 's); the query itself
    when nothing else would be left."""
    if not names:
        return query
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"\b(?:{alternation})(?:['’]s)?\b", re.IGNORECASE)
    stripped = " ".join(pattern.sub(" ", query).split())
    return stripped if _RAW_WORD.search(stripped) else query


def zscore_fusion(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
) -> list[Fused]:
    """Weighted sum of each channel's standardised scores, best first.

    BM25 and cosine scores live on different scales; standardising each channel over
    its own ranked list (mean 0, unit spread) puts them on one, and unlike RRF keeps
    how far a channel's top hits stand out from the rest. A document a channel did not
    rank gets that channel's lowest standardised score. Ties: best single-channel
    rank, then id.
    """
    fused: dict[str, Fused] = {}
    floors: dict[str, float] = {}
    for channel in sorted(rankings):
        ranked = _first_per_id(rankings[channel])
        if not ranked:
            continue
        w = float(weights.get(channel, 1.0))
        scores = [score for _, score in ranked]
        mean = sum(scores) / len(scores)
        spread = (sum((x - mean) ** 2 for x in scores) / len(scores)) ** 0.5 or 1.0
        floors[channel] = w * (min(scores) - mean) / spread
        for rank, (doc_id, score) in enumerate(ranked, start=1):
            f = fused.get(doc_id)
            if f is None:
                f = fused[doc_id] = Fused(doc_id, 0.0, rank)
            f.best_rank = min(f.best_rank, rank)
            f.channels[channel] = (rank, score, w * (score - mean) / spread)
    for f in fused.values():
        f.score = sum(f.channels[c][2] if c in f.channels else floor for c, floor in floors.items())
    return sorted(fused.values(), key=lambda f: (-f.score, f.best_rank, f.id))


#: how far above its question an answer is placed: enough to order the two, too little to
#: pass any other turn that scores between them
_ANSWER_STEP = 1e-9


def answers_follow_questions(
    fused: Sequence[Fused],
    next_turn: Callable[[str], str | None],
    is_question: Callable[[str], bool],
) -> list[Fused]:
    """Lift each turn that answers a ranked question to just above that question.

    A question turn ("What made you pick it?") shares the words of a search that asks
    the same thing, but what the searcher wants is the reply. So the turn after a
    question scores at least the question's score (and, on a tie, comes first); the
    question keeps its own place just below. ``channels`` of a lifted turn records the
    question's fused rank under ``"answers"``. Order is deterministic as in fusion.
    """
    by_id = {f.id: f for f in fused}
    floor = min((f.score for f in fused), default=0.0)
    lifted: dict[str, Fused] = {}
    for rank, f in enumerate(fused, start=1):
        if not is_question(f.id):
            continue
        answer = next_turn(f.id)
        if answer is None:
            continue
        target = f.score + _ANSWER_STEP
        current = lifted.get(answer) or by_id.get(answer)
        if current is not None and current.score >= target:
            continue
        if current is None:
            current = Fused(answer, floor, f.best_rank)
        new = Fused(answer, target, min(current.best_rank, f.best_rank), dict(current.channels))
        new.channels["answers"] = (rank, f.score, target - current.score)
        lifted[answer] = new
    out = [lifted.pop(f.id, f) for f in fused]
    out.extend(lifted.values())
    return sorted(out, key=lambda f: (-f.score, f.best_rank, f.id))


_UNITS = (
    "day|days|week|weeks|weekend|weekends|month|months|year|years|night|morning|evening"
    "|afternoon|summer|spring|fall|autumn|winter|mon|tue|tues|wed|thu|thurs|fri|sat|sun"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# May is left out here (it is mostly the verb) and matched capitalised below
_MONTH_NAMES = "january|february|march|april|june|july|august|september|october|november|december"
#: words that place something in time, as people write them in chat
TIME_EXPRESSION = re.compile(
    rf"(?i:\b(?:yesterday|today|tonight|tomorrow|ago|weekend|{_WEEKDAYS}|{_MONTH_NAMES})\b"
    rf"|\b(?:last|next|this|past|coming|few|couple of|every|each|the other)\s+(?:{_UNITS})\b"
    r"|\b(?:19|20)\d\d\b)|\bMay\b"
)
#: questions whose answer is a time
ASKS_WHEN = re.compile(
    r"^\W*(?:when|since when|how long ago"
    r"|(?:in |on )?(?:what|which) (?:date|day|year|month|time|week))\b",
    re.IGNORECASE,
)


def states_time(text: str) -> bool:
    """Whether ``text`` places something in time ("last Fri", "two days ago", "in 2022")."""
    return TIME_EXPRESSION.search(text) is not None


def prefer_times(
    fused: Sequence[Fused], says_when: Callable[[str], bool], weight: float
) -> list[Fused]:
    """Add ``weight`` standard deviations of the fused scores to the turns that state a
    time; ``channels`` of such a turn records its rank before under ``"when"``."""
    if not fused or weight <= 0:
        return list(fused)
    scores = [f.score for f in fused]
    mean = sum(scores) / len(scores)
    bonus = weight * ((sum((x - mean) ** 2 for x in scores) / len(scores)) ** 0.5 or 1.0)
    out = []
    for rank, f in enumerate(fused, start=1):
        if says_when(f.id):
            f = Fused(f.id, f.score + bonus, f.best_rank, {**f.channels})
            f.channels["when"] = (rank, bonus, bonus)
        out.append(f)
    return sorted(out, key=lambda f: (-f.score, f.best_rank, f.id))


def _first_per_id(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    seen: set[str] = set()
    out = []
    for doc_id, score in ranked:
        if doc_id not in seen:
            seen.add(doc_id)
            out.append((doc_id, float(score)))
    return out


def _speaker(m: MessageRow) -> str:
    return m.speaker or m.role


def _date_words(m: MessageRow) -> str:
    # "8 May 2023": day, month name and year, as people write them in questions
    return f"{m.created.day} {m.created:%B %Y}" if m.created else ""


def dense_text(turns: Sequence[MessageRow], i: int, config: MessageSearchConfig) -> str:
    """What is embedded for turn ``i``: speaker, date, the turn, then the turn(s) before it.

    The turn comes first so that a model's input limit cuts the context, not the turn.
    """
    m = turns[i]
    head = f"{_speaker(m)}" if config.dense_speakers else ""
    if m.created:
        head = f"{head} ({_date_words(m)})".strip()
    parts = [f"{head}: {m.content}" if head else m.content]
    for j in range(max(0, i - config.dense_context_before), i):
        prev = turns[j]
        who = f" {_speaker(prev)}" if config.dense_speakers else ""
        parts.append(f"[replying to{who}: {prev.content[: config.dense_context_chars]}]")
    return "\n".join(parts)


def message_doc(turns: Sequence[MessageRow], i: int, config: MessageSearchConfig) -> FTDoc:
    m = turns[i]
    lo, hi = max(0, i - config.context_before), min(len(turns), i + 1 + config.context_after)
    fields = {
        "text": m.content,
        "speaker": _speaker(m),
        "before": " ".join(turns[j].content for j in range(lo, i)),
        "after": " ".join(turns[j].content for j in range(i + 1, hi)),
        "date": _date_words(m),
    }
    if config.resolve_dates:
        fields["resolved"] = " ".join(resolve_dates(m.content, m.created))
    return FTDoc(id=m.id, kind=m.role, scopes=(m.conversation_id,), fields=fields)


def summary_doc(s: Summary, title: str | None) -> FTDoc:
    return FTDoc(
        id=s.id,
        kind="summary",
        scopes=(s.conversation_id,),
        fields={
            "summary": s.summary,
            "decisions": "\n".join(s.decisions),
            "questions": "\n".join(s.open_questions),
            "quotes": "\n".join(s.quotables),
            "concepts": "\n".join(s.concepts),
            "domain": s.domain,
            "title": title,
        },
    )


def summary_dense_text(s: Summary) -> str:
    parts = [s.summary]
    if s.concepts:
        parts.append("Concepts: " + ", ".join(s.concepts) + ".")
    parts.extend(s.decisions)
    parts.extend(s.open_questions)
    return "\n".join(parts)


def projection(s: Summary, extract: str) -> list[str]:
    if extract == "summary":
        return [s.summary]
    if extract == "questions":
        return list(s.open_questions)
    if extract == "decisions":
        return list(s.decisions)
    return list(s.quotables)


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

    def import_summaries(self, path: str | Path) -> SummaryImportReport:
        summaries, problems = import_summaries(path)
        with self._lock:
            return db.save_summaries(self.store, summaries, problems=problems)

    def embed(self, progress: Callable[[int, int], None] | None = None) -> list[EmbedReport]:
        """Compute message and summary vectors for the configured embedder (incremental)."""
        snap = self.snapshot()
        dense = self._dense_corpus(MESSAGE_CORPUS)
        docs = [
            DenseDoc(m.id, dense_text(turns, i, self.config))
            for turns in snap.turns.values()
            for i, m in enumerate(turns)
        ]
        reports = [dense.embed(docs, progress=progress)]
        if snap.summaries:
            sums = [DenseDoc(s.id, summary_dense_text(s)) for s in snap.summaries.values()]
            reports.append(self._dense_corpus(SUMMARY_CORPUS).embed(sums, progress=progress))
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
        turns: dict[str, list[MessageRow]] = {}
        for m in messages:
            if searchable(m):
                turns.setdefault(m.conversation_id, []).append(m)
        # The documents depend on the context window too: a changed config rebuilds the index.
        stamp = f"conversations-{version}-{self.config.document_shape()}"
        base = Path(self.store.index_dir)

        def message_docs() -> list[FTDoc]:
            return [
                message_doc(ts, i, self.config) for ts in turns.values() for i in range(len(ts))
            ]

        def summary_docs() -> list[FTDoc]:
            titles = {c.id: c.title for c in conversations.values()}
            return [summary_doc(s, titles.get(s.conversation_id)) for s in summaries.values()]

        boosts = self.config.boosts()
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
            mirror=_mirror(messages, conversations, summaries),
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
        what = "message" if corpus == MESSAGE_CORPUS else "summary"
        gen = self.store.generation()
        try:
            dense = self._dense_corpus(corpus)
            if self._checked.get(corpus) == (gen, dense.fingerprint.key()):
                return dense  # checked since the last write: skip two store round trips
            if not self.store.vector_fingerprints(corpus):
                raise EmbeddingUnavailable(
                    f"no {what} vectors stored yet; run `layersearch --embedder <spec> "
                    "conversations embed`"
                )
            dense.check()
        except (EmbeddingUnavailable, ModelMismatch) as exc:
            text = str(exc)
            if not text.startswith("embedding unavailable:"):
                text = f"embedding unavailable: {text}"
            raise EmbeddingUnavailable(text) from exc
        self._checked[corpus] = (gen, dense.fingerprint.key())
        return dense

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
    ) -> MessageSearchResult:
        """Messages ranked by full text and vectors over turns-with-context, fused
        (standardised scores by default, see :func:`zscore_fusion`).

        ``channels`` is a subset of ``fulltext`` and ``vector``; by default both, with
        the vector channel skipped (and a warning) when it cannot run.
        """
        _check_limit(limit)
        wanted = list(channels) if channels is not None else ["fulltext", "vector"]
        unknown = set(wanted) - {"fulltext", "vector"}
        if unknown or not wanted:
            raise ConfigError("channels must be a non-empty subset of fulltext, vector")
        snap = self.snapshot()
        warnings: list[str] = []
        rankings: dict[str, list[tuple[str, float]]] = {}
        scope = None if conversation_id is None else [conversation_id]
        if "fulltext" in wanted:
            rankings["fulltext"] = self._fulltext(snap, query, scope)
        if "vector" in wanted:
            try:
                dense = self._checked_dense(MESSAGE_CORPUS)
                allow = None
                if conversation_id is not None:
                    allow = [m.id for m in snap.turns.get(conversation_id, [])]
                rankings["vector"] = dense.search(
                    self._dense_query(snap, query, scope), DEPTH, allow
                )
            except LayersearchError as exc:
                if channels is not None:
                    raise
                warnings.append(str(exc))
        weights = {"fulltext": self.config.weight_fulltext, "vector": self.config.weight_vector}
        if self.config.fusion == "rrf":
            fused = rrf(rankings, k=self.config.rrf_k, weights=weights)
        else:
            fused = zscore_fusion(rankings, weights)
        if self.config.answers_follow_questions:
            fused = answers_follow_questions(fused, snap.next_turn.get, snap.questions.__contains__)
        if self.config.time_answer_bonus > 0 and ASKS_WHEN.match(query):
            fused = prefer_times(
                fused,
                lambda mid: states_time(snap.messages[mid].content),
                self.config.time_answer_bonus,
            )
        hits = []
        for f in fused[:limit]:
            m = snap.messages[f.id]
            hits.append(
                MessageHit(
                    message_id=m.id,
                    conversation_id=m.conversation_id,
                    turn_id=m.turn_id,
                    role=m.role,
                    speaker=m.speaker,
                    score=f.score,
                    channels={c: r for c, (r, _, _) in sorted(f.channels.items())},
                )
            )
        return MessageSearchResult(query=query, hits=hits, warnings=warnings)

    def _fulltext(
        self, snap: _Snapshot, query: str, scope: list[str] | None
    ) -> list[tuple[str, float]]:
        """BM25 over the turn documents; a speaker named in the query counts only through
        the ``speaker`` field.

        A name in a question says whose turn is wanted, not which words: matched against
        the text it finds the turns that *address* that person ("Thanks, Melanie!"), which
        are the other speaker's. So names are taken out of the content query, and the
        candidates it ranks get the name's ``speaker``-field score on top.
        """
        text = query_text(query, self.config)
        names = self._names(snap, scope) if self.config.names_match_speaker_only else frozenset()
        named = sorted(n for n in names if strip_names(query, {n}) != query)
        if not named:
            return snap.messages_ft.search(text, DEPTH, scopes=scope)
        content = {**self.config.boosts(), "speaker": 0.0}
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
    ) -> SummarySearchResult:
        """Summaries ranked by full text and/or vectors, projected to one stored field."""
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
        ranked = self._rank_summaries(snap, query, mode_, allow, warnings)
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
    ) -> list[tuple[str, float, dict[str, int]]]:
        if not query.strip():
            # No query: the newest summaries passing the filters.
            pool = [s for s in snap.summaries.values() if allow is None or s.id in allow]
            pool.sort(
                key=lambda s: (-(s.created.timestamp() if s.created else float("-inf")), s.id)
            )
            return [(s.id, 0.0, {}) for s in pool]
        rankings: dict[str, list[tuple[str, float]]] = {}
        if mode in ("hybrid", "fts"):
            rankings["fulltext"] = snap.summaries_ft.search(query, DEPTH, ids=allow)
        if mode in ("hybrid", "vector"):
            try:
                dense = self._checked_dense(SUMMARY_CORPUS)
                rankings["vector"] = dense.search(query, DEPTH, allow)
            except EmbeddingUnavailable as exc:
                if mode == "vector":
                    raise
                warnings.append(f"{exc}; showing full-text results only")
        return [
            (f.id, f.score, {c: r for c, (r, _, _) in sorted(f.channels.items())})
            for f in rrf(rankings)
        ]


def _mirror(
    messages: Sequence[MessageRow],
    conversations: dict[str, ConversationRow],
    summaries: Mapping[str, Summary],
) -> Any:
    import duckdb
    import numpy as np

    con = duckdb.connect(":memory:")
    con.execute("SET threads = 1")  # one query at a time per cursor; no pool contention
    # The mirror holds the store's own messages and conversations tables, wherever in the
    # migration history they were created.
    for version in migrations.DUCKDB:
        for stmt in version:
            head = stmt.split("(")[0]
            if "TABLE" in head and ("messages" in head or "conversations" in head):
                con.execute(stmt)

    def col(values: list[Any]) -> Any:
        return np.array(values, dtype=object)

    con.register(
        "m_data",
        {
            "id": col([m.id for m in messages]),
            "conversation_id": col([m.conversation_id for m in messages]),
            "role": col([m.role for m in messages]),
            "content": col([m.content for m in messages]),
            "created": col([m.created for m in messages]),
            "has_question": np.array([m.has_question for m in messages], dtype=bool),
            "position": np.array([m.position for m in messages], dtype=np.int64),
            "injected": np.array([m.injected for m in messages], dtype=bool),
            "speaker": col([m.speaker for m in messages]),
            "turn_id": col([m.turn_id for m in messages]),
        },
    )
    convs = list(conversations.values())
    con.register(
        "c_data",
        {
            "id": col([c.id for c in convs]),
            "title": col([c.title for c in convs]),
            "source": col([c.source for c in convs]),
            "created": col([c.created for c in convs]),
            "updated": col([c.updated for c in convs]),
        },
    )
    # Keyword search's order (newest first, ties by id) as a column, rows stored in it, and
    # DuckDB's own lower() of the content: see conversations.store.mirror_keyword_rows.
    con.execute("ALTER TABLE messages ADD COLUMN ord BIGINT")
    con.execute("ALTER TABLE messages ADD COLUMN content_lc VARCHAR")
    if messages:
        con.execute(
            "INSERT INTO messages (id, conversation_id, role, content, created, has_question, "
            "position, injected, speaker, turn_id, ord, content_lc) "
            "SELECT id, conversation_id, role, content, created, has_question, position, "
            "injected, speaker, turn_id, "
            "row_number() OVER (ORDER BY created DESC NULLS LAST, id) - 1 AS ord, "
            "lower(content) FROM m_data ORDER BY ord"
        )
    if convs:
        con.execute(
            "INSERT INTO conversations (id, title, source, created, updated) "
            "SELECT id, title, source, created, updated FROM c_data"
        )
    # Summaries: only what their filters read (summary_filter_query).
    con.execute(
        "CREATE TABLE summaries (id VARCHAR PRIMARY KEY, conversation_id VARCHAR, "
        "domain VARCHAR, importance VARCHAR, thinking_stage VARCHAR)"
    )
    sums = list(summaries.values())
    if sums:
        con.register(
            "s_data",
            {
                "id": col([x.id for x in sums]),
                "conversation_id": col([x.conversation_id for x in sums]),
                "domain": col([x.domain for x in sums]),
                "importance": col([x.importance for x in sums]),
                "thinking_stage": col([x.thinking_stage for x in sums]),
            },
        )
        con.execute(
            "INSERT INTO summaries SELECT id, conversation_id, domain, importance, "
            "thinking_stage FROM s_data"
        )
        con.unregister("s_data")
    con.unregister("m_data")
    con.unregister("c_data")
    return con


# -- rendering (the exact contract text) -----------------------------------------------------------


def _cell(text: str) -> str:
    """A table cell: one line, pipes escaped so the row keeps its columns."""
    return _one_line(text).replace("|", "\\|")


def render_conversations(term: str, hits: Sequence[ConversationHit]) -> str:
    if not hits:
        return f"No conversations found containing '{term}'"
    lines = ["| Date | Source | Role | conv_id | Preview |", "|---|---|---|---|---|"]
    for h in hits:
        lines.append(
            f"| {h.date or 'unknown'} | {_cell(h.source)} | {h.role} | {h.conversation_id} "
            f"| {_cell(h.preview)} |"
        )
    return "\n".join(lines)


def render_semantic(query: str, hits: Sequence[SemanticHit]) -> str:
    if not hits:
        return f"No messages found for '{query}'"
    blocks = []
    for h in hits:
        blocks.append(
            f"### [{h.rank}] {_one_line(h.conversation_title)}\n"
            f"**Similarity**: {h.similarity:.4f}\n"
            f"**Source**: {h.source} · **Date**: {h.date or 'unknown'} · "
            f"**conv_id**: {h.conversation_id}\n\n"
            f"> {_one_line(h.preview)}"
        )
    return "\n\n".join(blocks)


def render_summaries(
    query: str, extract: str, hits: Sequence[SummaryHit], warnings: Sequence[str] = ()
) -> str:
    lines = [f"> warning: {w}" for w in warnings]
    if warnings:
        lines.append("")
    if not hits:
        lines.append(f"No summaries found for '{query}'")
        return "\n".join(lines)
    n = 0
    for h in hits:
        tag = f"[{h.conversation_id} · {h.date or 'unknown'}] [{h.summary_id}]"
        for item in h.items:
            n += 1
            lines.append(f"{n}. {item} {tag}")
    return "\n".join(lines)
