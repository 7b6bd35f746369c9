"""What a message or a summary is to the ranking channels: the full-text documents,
the embedded texts, and a summary's projections.

A turn alone ("yes, last Tuesday") often carries no words of the question it
answers, so both channels see the turn with its speaker, its date and its
neighbouring turns; the turn's own words count most."""

from __future__ import annotations

from collections.abc import Sequence

from layersearch.ranking.fulltext import FTDoc

from .dates import resolve_dates
from .ranking import MessageSearchConfig
from .store import MessageRow
from .summaries import Summary

SUMMARY_BOOSTS = {
    "summary": 1.0,
    "decisions": 0.8,
    "questions": 0.8,
    "quotes": 0.8,
    "concepts": 1.0,
    "domain": 0.5,
    "title": 0.5,
}


def searchable(m: MessageRow) -> bool:
    """People's words only: tool output and harness-injected text stay out of search."""
    return not m.injected and m.role in ("user", "assistant", "system")


def _speaker(m: MessageRow) -> str:
    return m.speaker or m.role


def _date_words(m: MessageRow) -> str:
    # "8 May 2023": day, month name and year, as people write them in questions
    return f"{m.created.day} {m.created:%B %Y}" if m.created else ""


def dense_text(
    turns: Sequence[MessageRow], i: int, config: MessageSearchConfig, *, context: bool = True
) -> str:
    """What is embedded for turn ``i``: speaker, date, the turn, then the turn(s) before it.

    The turn comes first so that a model's input limit cuts the context, not the turn.
    ``context=False`` is the turn's own vector text (message search's second vector,
    ``MessageSearchConfig.turn_vector``): the same speaker, date and turn, no turn before.
    """
    m = turns[i]
    head = f"{_speaker(m)}" if config.dense_speakers else ""
    if m.created:
        head = f"{head} ({_date_words(m)})".strip()
    parts = [f"{head}: {m.content}" if head else m.content]
    before = config.dense_context_before if context else 0
    for j in range(max(0, i - before), i):
        prev = turns[j]
        who = f" {_speaker(prev)}" if config.dense_speakers else ""
        parts.append(f"[replying to{who}: {prev.content[: config.dense_context_chars]}]")
    return "\n".join(parts)


def message_doc(
    turns: Sequence[MessageRow],
    i: int,
    config: MessageSearchConfig,
    facts: Sequence[str] | None = None,
) -> FTDoc:
    """Turn ``i``'s full-text document; ``facts``, when the store holds extracted facts,
    are the turn's (possibly none), in a field of their own."""
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
    if facts is not None:
        fields["facts"] = "\n".join(facts)
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
