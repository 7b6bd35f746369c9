"""A response-level warning when nothing matches the question well.

Two signals of the first :data:`TOP` entity hits, read from their explanations:

- ``coverage``: the share of the question's plain words that the hits' own names,
  labels and descriptions hold exactly (the schema channel's ``matched`` words
  without a bridge);
- ``similarity``: the best dense (vector channel) score among them, when the dense
  channel ran.

A question is weakly matched when its coverage is under :data:`MIN_COVERAGE` and its
similarity under :data:`MIN_SIMILARITY`. The thresholds were set on Spider-Syn train
questions asked of their own database and of another one (``python -m
layersearch.eval.weak``; docs/agent.md), not on the agent set. Without the dense
channel nothing is flagged: coverage alone found no threshold there that flags a
wrong database without flagging more than 5% of the right ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layersearch.ranking.analyzer import query_words
from layersearch.types import Hit

TOP = 5
#: under this share of the question's words found exactly in the first hits …
MIN_COVERAGE = 0.4
#: … and under this dense score of the best of them (the dense channel must have run)
MIN_SIMILARITY = 0.35
_ENTITY_KINDS = ("model", "column", "measure", "aggregation")


@dataclass(frozen=True)
class Match:
    coverage: float
    similarity: float | None

    @property
    def weak(self) -> bool:
        if self.similarity is None:
            return False
        return self.coverage < MIN_COVERAGE and self.similarity < MIN_SIMILARITY


def measure(question: str, hits: Sequence[Hit], top: int = TOP) -> Match | None:
    """The two signals of an answer whose hits carry their explanations, over its first
    ``top`` entity hits; None when the question has no plain word to match (only ids,
    numbers or stop words)."""
    words = {w for w, _ in query_words(question)}
    if not words:
        return None
    first = [h for h in hits if h.kind in _ENTITY_KINDS][:top]
    found: set[str] = set()
    similarity: float | None = None
    for h in first:
        for c in h.explanation or []:
            if c.channel == "schema" and c.matched:
                found.update(m.lower() for m in c.matched if "→" not in m)
            elif c.channel == "vector":
                similarity = c.score if similarity is None else max(similarity, c.score)
    return Match(len(words & found) / len(words), similarity)


def warning(m: Match) -> str:
    dense = f", best dense score {m.similarity:.2f}" if m.similarity is not None else ""
    return (
        f"weak match: the first hits hold {m.coverage:.0%} of the question's words{dense}; "
        "the layer may not have what was asked for"
    )
