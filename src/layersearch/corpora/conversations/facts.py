"""Facts an LLM extracts from each session of a conversation, for the turns' index keys.

A session (a conversation's turns split where one was written ``session_gap_minutes``
after the one before, see :func:`session_groups`) is sent once, as numbered lines
``[n] speaker (date): text``; the model answers strict JSON::

    {"facts": [{"fact": "Caroline went to an LGBTQ support group on 7 May 2023", "turns": [3]}]}

Each fact is a short standalone sentence tied to the turn numbers it comes from. The
answer is cached in the store under a hash of the session's text, the model and
:data:`PROMPT_VERSION`: unchanged text is never sent again. A malformed answer or an
API error is a warning naming the session; the session then has no facts, nothing is
cached, and the next import asks again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from layersearch.errors import LayersearchError
from layersearch.store.base import Store

from . import store as db
from .store import FactsRow, MessageRow

if TYPE_CHECKING:
    from layersearch.embed.llm import ChatModel

__all__ = [
    "FACTS_FORMAT",
    "PROMPT_VERSION",
    "FactsReport",
    "FactsAnswerError",
    "extract_facts",
    "parse_answer",
    "session_groups",
    "session_text",
    "turn_facts",
]

log = logging.getLogger("layersearch.corpora.conversations.facts")

#: bumped whenever the prompt or the answer format changes: cached answers of another
#: version are not reused (the cache key holds it)
PROMPT_VERSION = 1
#: part of the message index's stamp when turns carry facts
FACTS_FORMAT = 1
#: the longest fact kept, and the most facts one session may give
MAX_FACT_CHARS = 400
MAX_FACTS = 200
#: a turn longer than this is cut in the prompt (a pasted log or file), and a session
#: whose lines pass this many characters is sent in parts of whole turns (~6k tokens)
MAX_TURN_CHARS = 4000
MAX_PROMPT_CHARS = 24000
#: sessions extracted between two writes of the cache (work done survives an interrupt)
_SAVE_EVERY = 10

SYSTEM_PROMPT = """You extract facts from one session of a conversation so that a search \
engine can find its turns later. Read the numbered turns. Write short standalone facts: \
each names the people and things it is about (no pronouns that need the conversation), \
states dates as calendar dates when the session's date makes them clear, and lists the \
numbers of the turns it comes from. Give facts about events, plans, preferences, \
possessions, relationships and opinions; skip greetings and small talk.

Answer with JSON only, exactly this shape and nothing else:
{"facts": [{"fact": "<one sentence>", "turns": [<turn number>, ...]}, ...]}
Answer {"facts": []} when the session holds no facts."""


class FactsReport(BaseModel):
    """What fact extraction did in an import."""

    model: str
    sessions: int = Field(default=0, description="sessions of the imported conversations")
    extracted: int = Field(default=0, description="sessions sent to the LLM and answered")
    cached: int = Field(default=0, description="sessions whose facts were already stored")
    failed: int = Field(
        default=0, description="sessions without facts: API error or malformed answer"
    )
    facts: int = Field(default=0, description="facts the extracted sessions gave")
    warnings: list[str] = Field(default_factory=list)


class FactsAnswerError(LayersearchError):
    """The model's answer is not the JSON asked for."""

    code = "bad_llm_answer"


@dataclass(frozen=True)
class _Session:
    conversation_id: str
    number: int
    #: 1, 2, … when a long session is sent in parts, else 0
    part: int
    turns: tuple[MessageRow, ...]
    text: str

    def label(self) -> str:
        first = self.turns[0]
        part = f" (part {self.part})" if self.part else ""
        when = f", {first.created:%Y-%m-%d}" if first.created else ""
        turn = f", from turn {first.turn_id}" if first.turn_id else ""
        return f"session {self.number}{part} of conversation {self.conversation_id}{when}{turn}"


def session_groups(turns: Sequence[MessageRow], gap_minutes: int) -> list[list[MessageRow]]:
    """One conversation's turns split where one was written ``gap_minutes`` or more after
    the turn before it (a turn without a time stays in the session of the turn before)."""
    gap = timedelta(minutes=gap_minutes)
    groups: list[list[MessageRow]] = []
    last: datetime | None = None
    for m in turns:
        if m.created is not None:
            if groups and last is not None and m.created - last >= gap:
                groups.append([])
            last = m.created
        if not groups:
            groups.append([])
        groups[-1].append(m)
    return groups


def _line(n: int, m: MessageRow) -> str:
    who = m.speaker or m.role
    when = f" ({m.created.day} {m.created:%B %Y})" if m.created else ""
    text = m.content if len(m.content) <= MAX_TURN_CHARS else m.content[:MAX_TURN_CHARS] + " …"
    return f"[{n}] {who}{when}: {text}"


def session_text(turns: Sequence[MessageRow]) -> str:
    """What the model reads of a session (and what its cache key hashes): one numbered
    line per turn, ``[n] speaker (date): text``, a turn cut at ``MAX_TURN_CHARS``."""
    return "\n".join(_line(n, m) for n, m in enumerate(turns, start=1))


def _parts(turns: Sequence[MessageRow]) -> list[list[MessageRow]]:
    """A session in parts of whole turns whose lines stay within ``MAX_PROMPT_CHARS``
    (a part holds at least one turn); one part when the session fits."""
    parts: list[list[MessageRow]] = [[]]
    size = 0
    for m in turns:
        length = len(_line(len(parts[-1]) + 1, m)) + 1
        if parts[-1] and size + length > MAX_PROMPT_CHARS:
            parts.append([])
            size = 0
            length = len(_line(1, m)) + 1
        parts[-1].append(m)
        size += length
    return parts


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(text: str, model: str) -> str:
    joined = "\x1f".join((f"prompt{PROMPT_VERSION}", model, text))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


def parse_answer(answer: str, n_turns: int) -> list[tuple[str, list[int]]]:
    """The facts of an answer, turns 0-based; :class:`FactsAnswerError` saying what is
    wrong when it is not ``{"facts": [{"fact": str, "turns": [int, …]}, …]}`` with turn
    numbers from 1 to ``n_turns`` (one enclosing ```json fence is tolerated)."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FactsAnswerError(f"the answer is not JSON ({exc}): {answer[:80]!r}") from exc
    if not isinstance(data, dict) or set(data) != {"facts"} or not isinstance(data["facts"], list):
        raise FactsAnswerError('the answer must be an object {"facts": [...]} and nothing else')
    items = data["facts"]
    if len(items) > MAX_FACTS:
        raise FactsAnswerError(f"the answer has {len(items)} facts; at most {MAX_FACTS}")
    out: list[tuple[str, list[int]]] = []
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict) or set(item) != {"fact", "turns"}:
            raise FactsAnswerError(f'fact {i} must be {{"fact": ..., "turns": [...]}}')
        fact, turns = item["fact"], item["turns"]
        if not isinstance(fact, str) or not fact.strip():
            raise FactsAnswerError(f"fact {i}: 'fact' must be a non-empty string")
        if len(fact) > MAX_FACT_CHARS:
            raise FactsAnswerError(f"fact {i} is {len(fact)} characters; at most {MAX_FACT_CHARS}")
        if (
            not isinstance(turns, list)
            or not turns
            or not all(isinstance(t, int) and not isinstance(t, bool) for t in turns)
        ):
            raise FactsAnswerError(f"fact {i}: 'turns' must be a non-empty list of turn numbers")
        bad = [t for t in turns if not 1 <= t <= n_turns]
        if bad:
            raise FactsAnswerError(
                f"fact {i} names turn {bad[0]}; the session has turns 1 to {n_turns}"
            )
        out.append((" ".join(fact.split()), sorted({t - 1 for t in turns})))
    return out


def _sessions(turns: dict[str, list[MessageRow]], gap_minutes: int) -> Iterable[_Session]:
    for cid, ts in turns.items():
        for number, group in enumerate(session_groups(ts, gap_minutes), start=1):
            parts = _parts(group)
            for part, turns_ in enumerate(parts, start=1 if len(parts) > 1 else 0):
                yield _Session(cid, number, part, tuple(turns_), session_text(turns_))


def extract_facts(
    store: Store,
    llm: ChatModel,
    turns: dict[str, list[MessageRow]],
    *,
    gap_minutes: int,
    progress: Callable[[int, int], None] | None = None,
) -> FactsReport:
    """Ask ``llm`` (a :class:`layersearch.embed.llm.ChatModel`) for the facts of every session of
    these conversations' searchable ``turns`` whose answer is not cached, and cache them."""
    model: str = llm.model
    sessions = list(_sessions(turns, gap_minutes))
    report = FactsReport(model=model, sessions=len(sessions))
    keys = [cache_key(s.text, model) for s in sessions]
    have = db.stored_fact_keys(store, keys)
    todo = [(s, k) for s, k in zip(sessions, keys, strict=True) if k not in have]
    report.cached = len(sessions) - len(todo)
    pending: list[FactsRow] = []
    if progress and todo:
        progress(0, len(todo))
    for done, (s, key) in enumerate(todo, start=1):
        try:
            answer = llm.complete(SYSTEM_PROMPT, s.text)
            facts = parse_answer(answer, len(s.turns))
        except LayersearchError as exc:
            report.failed += 1
            warning = f"no facts for {s.label()}: {exc}"
            report.warnings.append(warning)
            log.warning("%s", warning)
        else:
            report.extracted += 1
            report.facts += len(facts)
            pending.append(
                FactsRow(
                    key=key,
                    text_hash=text_hash(s.text),
                    conversation_id=s.conversation_id,
                    model=model,
                    prompt_version=PROMPT_VERSION,
                    facts=json.dumps(
                        [{"fact": f, "turns": t} for f, t in facts], ensure_ascii=False
                    ),
                    created=datetime.now(UTC),
                )
            )
        if len(pending) >= _SAVE_EVERY:
            db.save_facts(store, pending)
            pending = []
        if progress:
            progress(done, len(todo))
    db.save_facts(store, pending)
    return report


def turn_facts(
    turns: dict[str, list[MessageRow]],
    gap_minutes: int,
    stored: dict[str, list[tuple[str, list[int]]]],
) -> dict[str, list[str]]:
    """Each turn's facts (message id → fact texts), from the stored facts of the sessions
    whose text is unchanged; ``{}`` when nothing is stored."""
    if not stored:
        return {}
    out: dict[str, list[str]] = {}
    for s in _sessions(turns, gap_minutes):
        facts = stored.get(text_hash(s.text))
        if not facts:
            continue
        for fact, numbers in facts:
            for t in numbers:
                if 0 <= t < len(s.turns):
                    out.setdefault(s.turns[t].id, []).append(fact)
    return out
