"""The one analyzer every channel uses, for queries and documents alike.

Unicode-normalised (NFKC), lowercased, identifiers split (``order_total``,
``orderTotal``, ``orders.total`` give ``order`` and ``total`` and keep the
whole identifier), English stemming (Snowball). It never raises: any string,
of any size or content, gives a (possibly empty) token list.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

__all__ = ["analyze", "analyze_query", "normalize", "split_identifier", "STOP_WORDS"]

# A word: letters/digits with inner `_ . -` joins (identifiers stay whole).
_WORD = re.compile(r"[^\W_]+(?:[_.\-'][^\W_]+)*|[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PARTS = re.compile(r"[_.\-']+")
_DIGIT_SPLIT = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")

# Small English stop list for queries: function words that carry no schema
# meaning. Documents keep every token (BM25's idf already discounts them);
# questions drop them so "how many" does not pull in every `many` column.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "give",
        "list",
        "find",
        "tell",
        "all",
        "each",
        "every",
        "also",
        "just",
        "many",
        "much",
    ]
)

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def normalize(text: str) -> str:
    """NFKC-normalised text with surrogates and control characters blanked.

    Idempotent: ``normalize(normalize(s)) == normalize(s)``.
    """
    if text.isascii() and text.isprintable():
        return text
    text = unicodedata.normalize("NFKC", text)
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() or ch in "\t\n" else " " for ch in text)
        text = unicodedata.normalize("NFKC", text)
    return text


def split_identifier(word: str) -> list[str]:
    """``orderTotal`` → [order, total]; ``orders.total_amt`` → [orders, total, amt]."""
    pieces = _PARTS.split(_CAMEL.sub(" ", word).replace(" ", "_"))
    out: list[str] = []
    for p in pieces:
        for q in _DIGIT_SPLIT.split(p.lower()):
            if q:
                out.append(q)
    return out


@lru_cache(maxsize=500_000)
def _word_tokens(raw: str, drop_stop: bool) -> tuple[str, ...]:
    """The tokens of one word; words repeat across documents, so this is cached."""
    parts = split_identifier(raw)
    if len(parts) > 1:
        # The whole identifier is kept as one token so an exact name scores above its parts.
        return (raw.lower(), *(_stem(p) for p in parts if not (drop_stop and p in STOP_WORDS)))
    if parts and not (drop_stop and parts[0] in STOP_WORDS):
        return (_stem(parts[0]),)
    return ()


def _tokens(text: str, *, drop_stop: bool) -> list[str]:
    if not text:
        return []
    out: list[str] = []
    for raw in _WORD.findall(normalize(text)):
        out.extend(_word_tokens(raw, drop_stop))
    return out


def analyze(text: str | None) -> list[str]:
    """Tokens for a document field (nothing dropped)."""
    return _tokens(text or "", drop_stop=False)


def analyze_query(text: str | None) -> list[str]:
    """Tokens for a query: stop words dropped, duplicates kept in order once."""
    seen: dict[str, None] = {}
    for t in _tokens(text or "", drop_stop=True):
        seen.setdefault(t, None)
    return list(seen)
