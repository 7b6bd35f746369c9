"""How message search ranks: its configuration, the query's words and the rules
applied after fusion (answers follow questions, times answer "when").

See docs/conversations.md, "Message search"."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from layersearch.ranking.fusion import Fused
from layersearch.ranking.pipeline import RankingConfig
from layersearch.ranking.wordlists import word_list, word_set

# Words that carry no content in questions about people's lives and chats, beyond the
# analyzer's own stop list: pronouns, auxiliaries and question scaffolding.
CONVERSATION_STOP_WORDS = word_set("conversation_stop_words")
_RAW_WORD = re.compile(r"[\w'’-]+", re.UNICODE)

#: every channel ranks this deep, whatever the limit, so results for n are a prefix of n + k
DEPTH = 100

#: bumped whenever message_doc changes what it indexes, so stored indexes are rebuilt
DOC_FORMAT = 2


@dataclass(frozen=True)
class MessageSearchConfig(RankingConfig):
    """How messages become ranking documents and how the channels count: every tuned
    number and switch of message search (the conversations corpus's ranking config);
    ``without`` names the stages of ``stages.MESSAGE_PIPELINE`` switched off.

    The defaults are argued from first principles in docs/conversations.md and were
    checked (not fitted) on two LoCoMo conversations; see docs/quality.md.
    """

    #: the stages ``without`` may name (``stages.MESSAGE_PIPELINE.switchable``; a test
    #: keeps the two equal)
    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = (
        "word-neighbours",
        "channel-tops",
        "session-text",
        "answers-follow-questions",
        "date-match",
        "answer-types",
    )

    @classmethod
    def corpus_name(cls) -> str:
        return "conversations"

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
    #: the reply goes above its question only when the query's words are in the question
    #: sentences themselves, else just below it: chat turns often tell news and end with a
    #: question on another subject ("We went camping. Any plans for the summer?"); the
    #: reply answers the question, so a query that matches the news wants the news first
    answers_need_question_words: bool = True
    #: a question turn whose reply was placed above it moves down this many standard
    #: deviations of the fused scores: the reply holds what was asked, the question
    #: mostly repeats the query's words. 0 turns it off
    answered_question_penalty: float = 0.0
    #: each channel's best ``channel_top_turns`` turns that fuse below rank
    #: 2 × ``channel_top_turns`` move to just above the turn there: a sum of
    #: standardised scores lets a turn one channel ranks first (a paraphrase the other
    #: cannot see, an exact phrase the model blurs) fall behind turns both channels
    #: find middling. Needs two channels; 0 turns it off
    channel_top_turns: int = 2
    #: a question asking when ("When did …", "What year …") adds this many standard
    #: deviations of its fused scores to turns that state a time ("last Friday", "two
    #: days ago", "in 2022"): the answer to "when" says when, and a chat turn dates an
    #: event relative to the day it was written. Enough to reorder close turns, not to
    #: lift an unrelated turn over a clear match. 0 turns it off
    time_answer_bonus: float = 0.5
    #: the same for the other answer types a question's first words ask for (see
    #: :func:`prefer_answer_types`): an amount for "How many …", a name or title for
    #: "Where …", "What city …", "What book …". 0 turns it off
    answer_type_bonus: float = 0.5
    #: index each turn's relative times ("last Friday") resolved against its date
    #: ("5 May 2023") in a ``resolved`` field, so a question naming a day, month or year
    #: matches the turn that dates an event relative to the day it was written
    resolve_dates: bool = False
    boost_resolved: float = 0.5
    #: the boost of a turn's ``facts`` field: the facts an LLM extracted from its session
    #: (see :mod:`.facts`), present only when a store holds extracted facts. Low: a fact
    #: restates the turn in other words, the turn's own words stay what counts most
    boost_facts: float = 0.3
    #: a question that names a date ("on May 3, 2023", "in December 2023", "in 2022")
    #: adds this many standard deviations of its fused scores to the turns dated within
    #: it: written on that day (month, year), or, with ``date_match_resolved``, naming a
    #: relative time that resolves into it ("last month" written on 2 January 2024 is in
    #: December 2023). A named date is close to a filter: the turns of that day should
    #: pass the close matches of other days, a clear match elsewhere still shows. 0
    #: turns it off
    date_match_bonus: float = 2.0
    date_match_resolved: bool = True
    #: each session scored as one document (BM25 over its turns' words, against the
    #: full-text query), and each fused turn moved by this many standard deviations of the
    #: fused scores times its session's standard score among the sessions searched (see
    #: ``sessions``): the words of a question are often spread over the exchange that
    #: answers it. 0 turns it off
    session_weight: float = 0.2
    #: the sessions' BM25 (``sessions.SESSION_BM25``: the textbook k1 and b, Lucene's idf)
    session_k1: float = 1.2
    session_b: float = 0.75
    #: a turn starts a new session when it was written this many minutes or more after
    #: the turn before it (LoCoMo's sessions are days apart, all turns of one share a time)
    session_gap_minutes: int = 30

    #: message search's vector channel also ranks each turn by a second vector, of the
    #: turn alone (``dense_text(..., context=False)``, stored as the ``message-turns``
    #: corpus, embedded by ``conversations embed`` while this is on), and scores a turn by
    #: the larger of its two cosines: the turn-with-context vector finds an elliptical
    #: reply by its question, the turn's own one a turn that states a fact by itself.
    #: ``semantic_search`` keeps the context vectors only. A store embedded without them
    #: searches with the context vectors and a warning until the next embed
    turn_vector: bool = True
    #: with the vector channel on, the full-text query is widened by each question word's
    #: ``word_neighbours`` nearest words of the searched conversations (by the embedder's
    #: cosine of the single words, at least ``neighbour_min_cosine``), one more BM25 query
    #: at ``neighbour_weight`` of the field boosts whose scores add to the turns' (see
    #: ``conversations.expansion``); the words' vectors are the ``message-words`` corpus
    word_neighbours: int = 3
    neighbour_weight: float = 0.3
    neighbour_min_cosine: float = 0.6

    def document_shape(self) -> str:
        """What the full-text documents depend on besides the messages (part of the index stamp)."""
        shape = f"doc{DOC_FORMAT}-ctx{self.context_before}.{self.context_after}"
        return shape + ("-resolved" if self.resolve_dates else "")

    def boosts(self, *, facts: bool = False) -> dict[str, float]:
        """The full-text fields and their boosts; ``facts`` adds the extracted facts' field."""
        boosts = {
            "text": self.boost_text,
            "speaker": self.boost_speaker,
            "before": self.boost_before,
            "after": self.boost_after,
            "date": self.boost_date,
        }
        if self.resolve_dates:
            boosts["resolved"] = self.boost_resolved
        if facts:
            boosts["facts"] = self.boost_facts
        return boosts


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


def keep_channel_tops(
    fused: Sequence[Fused], rankings: Mapping[str, Sequence[tuple[str, float]]], turns: int
) -> list[Fused]:
    """Move each channel's best ``turns`` turns that rank below 2 × ``turns`` to just
    above the turn at that rank (several in their fused order).

    ``channels`` of a moved turn records its fused rank before under ``"top"``. Nothing
    changes with fewer than two channels. Order is deterministic as in fusion.
    """
    ranked = [r for r in rankings.values() if r]
    place = 2 * turns
    if turns <= 0 or len(ranked) < 2 or len(fused) <= place:
        return list(fused)
    tops = {doc_id for r in ranked for doc_id, _ in r[:turns]}
    lifted = [(rank, f) for rank, f in enumerate(fused, start=1) if rank > place and f.id in tops]
    if not lifted:
        return list(fused)
    bar = fused[place - 1].score
    moved: dict[str, Fused] = {}
    for i, (rank, f) in enumerate(lifted):
        score = bar + (len(lifted) - i) * _ANSWER_STEP
        new = moved[f.id] = Fused(f.id, score, f.best_rank, dict(f.channels))
        new.channels["top"] = (rank, f.score, score - f.score)
    out = [moved.get(f.id, f) for f in fused]
    return sorted(out, key=lambda f: (-f.score, f.best_rank, f.id))


#: how far above its question an answer is placed: enough to order the two, too little to
#: pass any other turn that scores between them
_ANSWER_STEP = 1e-9


def answers_follow_questions(
    fused: Sequence[Fused],
    next_turn: Callable[[str], str | None],
    is_question: Callable[[str], bool],
    below: Callable[[str], bool] | None = None,
) -> list[Fused]:
    """Lift each turn that answers a ranked question to just above that question.

    A question turn ("What made you pick it?") shares the words of a search that asks
    the same thing, but what the searcher wants is the reply. So the turn after a
    question scores at least the question's score (and, on a tie, comes first); the
    question keeps its own place just below. When ``below`` says so for a question, its
    answer is placed just below it instead. ``channels`` of a lifted turn records the
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
        target = f.score + (-_ANSWER_STEP if below is not None and below(f.id) else _ANSWER_STEP)
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


_UNITS = "|".join(word_list("time_units"))
_WEEKDAYS = "|".join(word_list("weekdays"))
# May is left out of the list (it is mostly the verb) and matched capitalised below
_MONTH_NAMES = "|".join(word_list("month_names"))
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


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WH_START = re.compile(r"^\W*(?:what|why|how|when|where|who|whom|whose|which)\b", re.IGNORECASE)


def question_sentences(text: str) -> str:
    """The sentences of ``text`` that ask something: ending with ``?`` or opening with a
    wh-word ("What made you pick it?", "how was the trip")."""
    sentences = (s.strip() for s in _SENTENCE.findall(text))
    asked = [s for s in sentences if s.endswith("?") or _WH_START.match(s)]
    return " ".join(asked)


def states_time(text: str) -> bool:
    """Whether ``text`` places something in time ("last Fri", "two days ago", "in 2022")."""
    return TIME_EXPRESSION.search(text) is not None


#: questions whose answer is an amount: "How many …", "How much …", "How long has …"
#: ("how long ago" asks when, and ASKS_WHEN is read first)
ASKS_AMOUNT = re.compile(r"^\W*how (?:many|much|old|long|far|often)\b", re.IGNORECASE)
#: questions whose answer is a place: "Where …", "What city …", "In which country …"
ASKS_PLACE = re.compile(
    rf"^\W*(?:where|(?:in |to |from )?(?:what|which) (?:{'|'.join(word_list('place_nouns'))}))\b",
    re.IGNORECASE,
)
#: questions whose answer is a name or a title: "What is the name of …", "What book …",
#: "Which songs …" (a name or title noun within the first words after the wh-word)
ASKS_NAME = re.compile(
    r"^\W*(?:what|which)(?: is| was| are| were)?(?:\s+\S+){0,2}?\s+"
    rf"(?:{'|'.join(w + 's?' for w in word_list('title_nouns'))})\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = word_set("number_words")
_LOWER_WORD = re.compile(r"[a-z]+|\d")
_SENTENCE_WORDS = re.compile(r"[A-Za-z][\w'’-]*")
_FIRST_PERSON = word_set("first_person")


def states_amount(text: str) -> bool:
    """Whether ``text`` states an amount: a number in digits or words ("two", "a dozen",
    "twice")."""
    return any(w in _NUMBER_WORDS or w.isdigit() for w in _LOWER_WORD.findall(text.lower()))


def names_something(text: str, speakers: Collection[str] = ()) -> bool:
    """Whether ``text`` names something: a quoted phrase, or a capitalised word that does
    not open its sentence and is not "I" or one of the ``speakers``, as a place, a person,
    a book or a band is written ("we went to Paris", "I read 'Becoming Nicole'")."""
    if '"' in text or "“" in text:
        return True
    own_names = {s.lower() for s in speakers}
    for sentence in _SENTENCE.findall(text):
        for word in _SENTENCE_WORDS.findall(sentence)[1:]:
            own = word.lower().removesuffix("'s").removesuffix("’s")
            if word[0].isupper() and word not in _FIRST_PERSON and own not in own_names:
                return True
    return False


def answer_type(query: str) -> str | None:
    """What a question's first words ask for: ``when`` (a time), ``amount`` ("How many
    …"), ``name`` ("Where …", "What city …", "What book …"), or None."""
    if ASKS_WHEN.match(query):
        return "when"
    if ASKS_AMOUNT.match(query):
        return "amount"
    if ASKS_PLACE.match(query) or ASKS_NAME.match(query):
        return "name"
    return None


def holds_answer(kind: str, text: str, speakers: Collection[str]) -> bool:
    """Whether a turn's ``text`` holds an answer of ``kind`` (see :func:`answer_type`);
    ``speakers``: its conversation's, which are not names an answer gives."""
    if kind == "when":
        return states_time(text)
    if kind == "amount":
        return states_amount(text)
    return names_something(text, speakers)


def prefer_answer_types(
    fused: Sequence[Fused],
    query: str,
    holds: Callable[[str, str], bool],
    config: MessageSearchConfig,
) -> list[Fused]:
    """The turns that hold what the question asks for (``holds(turn, kind)``, see
    :func:`holds_answer`), moved up by :func:`prefer_times`: a time for "When …" at
    ``time_answer_bonus``, an amount or a name at ``answer_type_bonus``, in standard
    deviations of the fused scores. The expected answer type read from the question's
    first words is the classic cue of question answering; ``channels`` of a moved turn
    records it under ``when``, ``amount`` or ``name``."""
    kind = answer_type(query)
    if kind is None:
        return list(fused)
    weight = config.time_answer_bonus if kind == "when" else config.answer_type_bonus
    return prefer_times(fused, lambda mid: holds(mid, kind), weight, kind)


def demote(fused: Sequence[Fused], demoted: Callable[[str], bool], weight: float) -> list[Fused]:
    """Subtract ``weight`` standard deviations of the fused scores from the turns
    ``demoted`` names; ``channels`` of such a turn records its rank before under
    ``"answered"``."""
    return _shift(fused, demoted, -weight, "answered") if weight > 0 else list(fused)


def prefer_times(
    fused: Sequence[Fused], says_when: Callable[[str], bool], weight: float, label: str = "when"
) -> list[Fused]:
    """Add ``weight`` standard deviations of the fused scores to the turns that state a
    time; ``channels`` of such a turn records its rank before under ``label``."""
    return _shift(fused, says_when, weight, label) if weight > 0 else list(fused)


def _shift(
    fused: Sequence[Fused], chosen: Callable[[str], bool], weight: float, label: str
) -> list[Fused]:
    """Move the ``chosen`` turns by ``weight`` (signed) standard deviations of the fused
    scores (see :func:`shift_turns`)."""
    return shift_turns(fused, lambda mid: 1.0 if chosen(mid) else 0.0, weight, label)


def shift_turns(
    fused: Sequence[Fused], amount: Callable[[str], float], weight: float, label: str
) -> list[Fused]:
    """Move each turn by ``weight`` (signed) standard deviations of the fused scores times
    its ``amount`` (0: it stays), recording a moved turn's (rank before, amount, shift)
    under ``label``; re-sorted as in fusion."""
    if not fused:
        return []
    scores = [f.score for f in fused]
    mean = sum(scores) / len(scores)
    step = weight * ((sum((x - mean) ** 2 for x in scores) / len(scores)) ** 0.5 or 1.0)
    out = []
    for rank, f in enumerate(fused, start=1):
        times = amount(f.id)
        if times != 0.0:
            shift = step * times
            f = Fused(f.id, f.score + shift, f.best_rank, {**f.channels})
            f.channels[label] = (rank, times, shift)
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
