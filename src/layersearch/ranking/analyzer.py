"""The one analyzer every channel uses, for queries and documents alike.

Unicode-normalised (NFKC), lowercased, identifiers split (``order_total``,
``orderTotal``, ``orders.total`` give ``order`` and ``total`` and keep the
whole identifier), standard data-modelling abbreviations expanded (``qty``
also gives ``quantity``; see :data:`ABBREVIATIONS`), English stemming
(Snowball). It never raises: any string, of any size or content, gives a
(possibly empty) token list.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

from layersearch.ranking.wordlists import word_pairs, word_set

__all__ = [
    "ABBREVIATIONS",
    "FUNCTION_WORDS",
    "STOP_WORDS",
    "analyze",
    "analyze_query",
    "normalize",
    "query_compounds",
    "query_words",
    "read_words",
    "split_identifier",
    "stem",
]

# A word: letters/digits with inner `_ . -` joins (identifiers stay whole).
_WORD = re.compile(r"[^\W_]+(?:[_.\-'][^\W_]+)*|[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PARTS = re.compile(r"[_.\-']+")
_DIGIT_SPLIT = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")

# Small English stop list for queries: function words that carry no schema
# meaning. Documents keep every token (BM25's idf already discounts them);
# questions drop them so "how many" does not pull in every `many` column.
STOP_WORDS = word_set("stop_words")

# Words a question uses to quantify, determine, compare or relate rather than to name:
# English grammar's determiners and quantifiers that are not already stop words, the
# adjectives SQL spells as keywords ("different", "distinct", "same", "only"), the
# light verbs that say a relation ("documents that use templates", "makes", "took",
# "get"), and the request verbs that say what to do with the answer ("Return the
# names", "Display", "Compute"; "show", "list", "find" are stop words). A schema that
# uses one is matched on it as written (``most_popular_in``, ``Make``, ``returns``),
# but it has no synonym in a schema: read through a vocabulary bridge, such a word
# reaches look-alikes ("distinct" → ``dst``, "least" → *last*, "some" → *most*, "use"
# → ``role``, WordNet's noun sense; "compute" → ``cmpt``, a computer).
FUNCTION_WORDS = word_set("function_words")

# Standard data-modelling abbreviations and the word each stands for. Applied the
# same way to documents and questions: the abbreviation *adds* its full word
# (it is kept too), so ``qty`` and ``quantity`` meet whichever side abbreviates,
# and an index built before an entry was added still matches the abbreviation.
# Only unambiguous ones: ``no``, ``min``, ``cat``, ``pop``, ``temp`` are words
# or stand for several things; ``id`` is what people say as well as write.
ABBREVIATIONS: dict[str, str] = word_pairs("abbreviations")

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def stem(word: str) -> str:
    """The analyzer's stem of one lowercase word."""
    return _stem(word)


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


def _part_tokens(part: str) -> tuple[str, ...]:
    full = ABBREVIATIONS.get(part)
    return (_stem(part),) if full is None else (_stem(part), _stem(full))


@lru_cache(maxsize=500_000)
def _word_tokens(raw: str, drop_stop: bool) -> tuple[str, ...]:
    """The tokens of one word; words repeat across documents, so this is cached."""
    parts = split_identifier(raw)
    kept = [p for p in parts if not (drop_stop and p in STOP_WORDS)]
    out = tuple(t for p in kept for t in _part_tokens(p))
    if len(parts) > 1:
        # The whole identifier is kept as one token so an exact name scores above its parts.
        return (raw.lower(), *out)
    return out


def _tokens(text: str, *, drop_stop: bool) -> list[str]:
    if not text:
        return []
    out: list[str] = []
    for raw in _WORD.findall(normalize(text)):
        out.extend(_word_tokens(raw, drop_stop))
    return out


def analyze(text: str | None) -> list[str]:
    """Tokens for a document field (nothing dropped)."""
    if text and len(text) <= 64:
        # Names, labels, types and short values repeat across a catalog: cache them whole.
        return list(_short_field(text))
    return _tokens(text or "", drop_stop=False)


@lru_cache(maxsize=200_000)
def _short_field(text: str) -> tuple[str, ...]:
    return tuple(_tokens(text, drop_stop=False))


def analyze_query(text: str | None, *, sql_words: bool = True) -> list[str]:
    """Tokens for a query: stop words dropped, duplicates kept in order once.

    The counting phrases of a question ("the number of X", "the total number of
    X", "count the X", "a count of X") ask *how many*, like "how many" itself
    (whose words are stop words): their head words name an aggregate, not a
    column, and are dropped. "number" and "count" elsewhere ("flight number",
    "room count", a query that is just "count") stay. With ``sql_words=False`` (the
    schema channel) so are the names of the other aggregates, SQL's AVG, MAX and MIN,
    before what they aggregate ("the average age", "maximum and minimum weight", "the
    mean of the prices"), and the words of ORDER BY ("in descending order of age",
    "sorted alphabetically", "ordered by date"): they say which aggregate or which
    order, not which column; an aggregate name alone or last ("which average"), and
    "order" elsewhere ("each order"), stay. Text matched against text that says the same (a
    saved example, a note) keeps them: there "average" tells "the average age" from
    "the maximum age".
    """
    seen: dict[str, None] = {}
    words = _WORD.findall(normalize(text or ""))
    for i, raw in enumerate(words):
        if _counting(words, i, sql_words):
            continue
        for t in _word_tokens(raw, True):
            seen.setdefault(t, None)
    if not seen and not sql_words:  # nothing but phrases ("in descending order")
        return analyze_query(text)
    return list(seen)


#: the names of SQL's AVG, MAX and MIN (see :func:`analyze_query`)
AGGREGATE_WORDS = word_set("aggregate_words")
#: the words of ORDER BY: its directions, said anywhere ("sorted alphabetically") …
ORDER_DIRECTIONS = word_set("order_directions")
#: … the words that say an order before "order" ("in reverse order") …
_ORDER_KINDS = ORDER_DIRECTIONS | word_set("order_kinds")
#: … its head words, before "by" or "of" or a direction, or after one of those
#: ("ordered by age", "in descending order of size") …
_ORDER_HEADS = word_set("order_heads")
#: … of which these name nothing else ("Sort the names")
_SORTING = word_set("sorting_words")
_ORDER_WORDS = _ORDER_KINDS | _ORDER_HEADS


def _counting(words: list[str], i: int, sql_words: bool = True) -> bool:
    """Whether ``words[i]`` is a word of a counting phrase, or without ``sql_words`` of
    another aggregate's or of ORDER BY (see :func:`analyze_query`)."""
    w = words[i].lower()
    nxt = words[i + 1].lower() if i + 1 < len(words) else ""
    after = words[i + 2].lower() if i + 2 < len(words) else ""
    if not sql_words:
        if w in AGGREGATE_WORDS:  # before a word, "and", or "of" and a word
            return nxt != "" and (nxt not in STOP_WORDS or (nxt in ("of", "and") and after != ""))
        if w in _SORTING or w in ORDER_DIRECTIONS or (w in _ORDER_KINDS and nxt in _ORDER_WORDS):
            return True
        if w in _ORDER_HEADS:
            prev = words[i - 1].lower() if i > 0 else ""
            return nxt in ("by", "of") or nxt in ORDER_DIRECTIONS or prev in _ORDER_KINDS
    if w == "total":  # "the total number of X" is the same phrase
        return nxt == "number" and _counting(words, i + 1)
    if w not in ("number", "count"):
        return False
    return (nxt == "of" and after != "") or (w == "count" and i == 0 and nxt != "")


def query_words(text: str | None, *, sql_words: bool = True) -> list[tuple[str, str]]:
    """The question's plain words as (lowercase word, stem), in order, each once: the
    parts of its identifiers, without stop words, counting phrases or numbers. What
    vocabulary bridges start from (an abbreviation is matched against the word, a
    synonym looked up by the stem)."""
    words = _WORD.findall(normalize(text or ""))
    seen: dict[str, str] = {}
    for i, raw in enumerate(words):
        if _counting(words, i, sql_words):
            continue
        for part in split_identifier(raw):
            if part.isalpha() and part not in STOP_WORDS:
                seen.setdefault(part, _stem(part))
    if not seen and not sql_words:
        return query_words(text)
    return list(seen.items())


def read_words(text: str | None) -> list[tuple[str, str]]:
    """The question's words that vocabulary bridges read (:func:`query_words` of the
    schema reading, ``sql_words=False``), without :data:`FUNCTION_WORDS`."""
    return [w for w in query_words(text, sql_words=False) if w[0] not in FUNCTION_WORDS]


def token_words(text: str | None) -> dict[str, str]:
    """Each token a text analyses to → the word (identifier part) it comes from, the
    first one: ``dept`` gives ``dept`` and ``depart`` (its expansion), both → dept."""
    out: dict[str, str] = {}
    for raw in _WORD.findall(normalize(text or "")):
        for token, word in _word_token_words(raw):
            out.setdefault(token, word)
    return out


@lru_cache(maxsize=500_000)
def _word_token_words(raw: str) -> tuple[tuple[str, str], ...]:
    """:func:`token_words` of one word, in order (words repeat across a catalog's names,
    labels and descriptions, so this is cached)."""
    parts = split_identifier(raw)
    out = [(raw.lower(), raw)] if len(parts) > 1 else []
    out += [(t, part) for part in parts for t in _part_tokens(part)]
    return tuple(out)


def query_compounds(text: str | None) -> list[str]:
    """Closed compounds a question writes open: ``high schoolers`` → ``highschool``.

    Schemas often close compounds that people write as two words
    (``Highschooler``, ``firstname``, ``zipcode``). Each pair of adjacent plain
    words (no stop word, no identifier punctuation, letters only) gives the stem
    of the two joined; a caller keeps those its vocabulary knows. Documents need
    no counterpart: their closed compounds are already single tokens, and their
    open ones (``first_name``) split into the question's own words.
    """
    words = _WORD.findall(normalize(text or ""))
    seen: dict[str, None] = {}
    for a, b in zip(words, words[1:], strict=False):
        if _plain(a) and _plain(b):
            seen.setdefault(_stem(a.lower() + b.lower()), None)
    return list(seen)


def _plain(word: str) -> bool:
    return word.isalpha() and word.lower() not in STOP_WORDS and len(split_identifier(word)) == 1
