"""Words of a question and of a document, as the entity search compares them: analysed
tokens, plain (written) words, and the share of a question's plain words a text holds."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable

__all__ = ["analysed_tokens", "plain_share", "surface_words"]


def analysed_tokens(texts: Iterable[str | None]) -> set[str]:
    from layersearch.ranking.analyzer import analyze

    return {t for text in texts if text for t in analyze(text)}


_PLAIN_WORD = re.compile(r"\w+")


def surface_words(*texts: str | None) -> frozenset[str]:
    """Texts' words as written (lower-cased), stop words and inflections kept."""
    return frozenset(w for text in texts if text for w in _PLAIN_WORD.findall(text.lower()))


def plain_share(
    question: str, *, stop_words_only: bool = False
) -> Callable[[Collection[str]], float]:
    """The share of ``question``'s plain words (:func:`surface_words`), or of only those
    that analysis drops as stop words (how it is asked: "how many", "are there"), among
    the given plain words."""
    asked = surface_words(question)
    if stop_words_only:
        from layersearch.ranking.analyzer import STOP_WORDS

        asked = frozenset(w for w in asked if w in STOP_WORDS)

    def plain(have: Collection[str]) -> float:
        return len(asked.intersection(have)) / len(asked) if asked else 0.0

    return plain
