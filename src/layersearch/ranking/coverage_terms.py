"""What the schema channel's index (:mod:`layersearch.ranking.coverage`) reads from text:
each node's terms (the forward index), the vocabulary bridges, a question's value cues."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from layersearch.ranking.analyzer import (
    FUNCTION_WORDS,
    analyze,
    analyze_query,
    query_compounds,
    query_words,
    split_identifier,
    stem,
)
from layersearch.ranking.bridges import (
    abbreviation_candidates,
    synonym_bridges,
    truncation_candidates,
)
from layersearch.ranking.params import (
    BRIDGES,
    QUESTION_READING,
    QuestionReading,
    VocabularyBridges,
)


@dataclass(slots=True)
class CoverageNode:
    """One entity as the schema channel's index reads it (``coverage.CoverageIndex``)."""

    id: str
    level: str  # "group" | "table" | "leaf"
    parent: str | None
    #: field name → raw text
    fields: Mapping[str, str | None]
    #: a leaf's declared data type (``integer``, ``varchar(20)``, ``date``…), if known
    data_type: str | None = None


class TermIndex(Protocol):
    """What :func:`read_query` reads of an index (``coverage.CoverageIndex`` is one)."""

    @property
    def vocab(self) -> Mapping[str, int]: ...
    def has_bridges(self) -> bool: ...
    def _synonyms(self, key: str) -> list[tuple[int, float]]: ...
    def _abbreviating(self, word: str, known: int = -1) -> list[tuple[int, float]]: ...


VALUE_NONE, VALUE_NUMBER, VALUE_TEXT, VALUE_TIME = 0, 1, 2, 3
_NUMERIC_TYPES = re.compile(
    r"int|number|numeric|decimal|float|double|real|money|serial", re.IGNORECASE
)
_TIME_TYPES = re.compile(r"date|time|year", re.IGNORECASE)
_TEXT_TYPES = re.compile(r"char|text|string|clob", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)s?\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w.])")
_QUOTED = re.compile(r"['\"\u2018\u201c]([^'\"\u2019\u201d]{1,60})['\"\u2019\u201d]")
_CAPITALISED = re.compile(r"(?<=[\w,;:)] )[A-Z][\w.'-]*")


def value_kind(data_type: str | None, name: str | None) -> int:
    """What kind of question value a leaf can hold: a date or year (its type, or a
    name part ``year``/``date``), a number, a text; VALUE_NONE when its type is unknown
    and its name says nothing."""
    parts = split_identifier(name) if name else []
    if (data_type and _TIME_TYPES.search(data_type)) or any(p in ("year", "date") for p in parts):
        return VALUE_TIME
    if not data_type:
        return VALUE_NONE
    if _NUMERIC_TYPES.search(data_type):
        return VALUE_NUMBER
    if _TEXT_TYPES.search(data_type):
        return VALUE_TEXT
    return VALUE_NONE


def value_cues(text: str) -> frozenset[int]:
    """The kinds of values a question names: a year (1800–2099), another number, a
    quoted string or a capitalised word that does not start a sentence (a name:
    "flights from 'APG'", "cities in France")."""
    cues: set[int] = set()
    if _YEAR.search(text):
        cues.add(VALUE_TIME)
    if any(not _YEAR.fullmatch(m.group(0)) for m in _NUMBER.finditer(text)):
        cues.add(VALUE_NUMBER)
    if _QUOTED.search(text) or _CAPITALISED.search(text):
        cues.add(VALUE_TEXT)
    return frozenset(cues)


#: a node's own fields, as the entity documents name them (``documents.entity_doc``):
#: the terms of its name, label and description are its own (``coverage_cut.own_terms``),
#: the others' (a formula, values) are not
OWN_FIELDS = frozenset({"name", "label", "description"})


class Forward(NamedTuple):
    """The forward index: the vocabulary (term ids by first appearance) and, as CSR over
    nodes (``ptr``), each node's terms, the code of the strongest field weight it has
    each in (``field_w[code]``) and whether one of its :data:`OWN_FIELDS` has it."""

    vocab: dict[str, int]
    ptr: np.ndarray
    term: np.ndarray
    code: np.ndarray
    field_w: np.ndarray
    own: np.ndarray


def _forward(ordered: Sequence[CoverageNode], weights: Mapping[str, float]) -> Forward:
    """The :class:`Forward` index of ``ordered`` (fields of weight 0 are not read)."""
    codes = {w: c for c, w in enumerate(sorted(set(weights.values())))}
    field_w = np.array(sorted(codes), dtype=np.float64)
    vocab: dict[str, int] = {}
    # Catalogs repeat themselves (the same column, label and description in many models):
    # analyse each distinct field text once, and merge each distinct set of fields once.
    analysed: dict[str, tuple[int, ...]] = {}
    merged: dict[tuple[tuple[str, str | None], ...], tuple[list[int], list[int], list[bool]]] = {}
    ptr = np.zeros(len(ordered) + 1, dtype=np.int64)
    terms: list[int] = []
    coded: list[int] = []
    owned: list[bool] = []
    for i, n in enumerate(ordered):
        fields = tuple(n.fields.items())
        done = merged.get(fields)
        if done is None:
            mine: dict[int, float] = {}
            own: set[int] = set()
            for name, text in fields:
                w = weights.get(name, 0.0)
                if w <= 0 or not text:
                    continue
                toks = analysed.get(text)
                if toks is None:
                    toks = analysed[text] = tuple(
                        vocab.setdefault(tok, len(vocab)) for tok in analyze(text)
                    )
                for tok in toks:
                    if mine.get(tok, 0.0) < w:
                        mine[tok] = w
                if name in OWN_FIELDS:
                    own.update(toks)
            done = merged[fields] = (
                list(mine),
                [codes[w] for w in mine.values()],
                [tok in own for tok in mine],
            )
        terms += done[0]
        coded += done[1]
        owned += done[2]
        ptr[i + 1] = len(terms)
    return Forward(
        vocab,
        ptr,
        np.array(terms, dtype=np.int32),
        np.array(coded, dtype=np.int8),
        field_w,
        np.array(owned, dtype=bool),
    )


#: Identifier parts that may shorten a question word, their terms, and whether each is a
#: word of its own (then it is only read as a truncation, see ``ranking.bridges``).
Abbreviations = tuple[list[str], list[int], list[bool]]


def _bridges(
    ordered: Sequence[CoverageNode],
    vocab: Mapping[str, int],
    vocabulary: VocabularyBridges = BRIDGES,
) -> tuple[Abbreviations, dict[str, list[tuple[int, float]]]]:
    """The index's vocabulary bridges: the identifier parts of names and labels that may
    abbreviate or truncate a word, with their terms; WordNet synonyms of its terms, read
    as ``vocabulary`` says."""
    from layersearch.ranking.lexicon import wordnet

    parts: set[str] = set()
    seen: set[str] = set()
    for n in ordered:
        for name in ("name", "label"):
            text = n.fields.get(name)
            if not text or text in seen:
                continue
            seen.add(text)
            for word in text.split():
                parts.update(split_identifier(word))
    wn = wordnet()
    is_word = wn.is_word if wn is not None else None
    shortened = set(abbreviation_candidates(parts, is_word, vocabulary))
    candidates = sorted(shortened.union(truncation_candidates(parts, vocabulary)))
    found = [(p, vocab[stem(p)]) for p in candidates if stem(p) in vocab]
    terms = {t: j for t, j in vocab.items() if t.replace("_", "").isalpha()}
    abbr = ([p for p, _ in found], [j for _, j in found], [p not in shortened for p, _ in found])
    surfaces: dict[str, set[str]] = {}
    for p in parts:
        surfaces.setdefault(stem(p), set()).add(p)
    return abbr, synonym_bridges(terms, surfaces, vocabulary)


#: Bridges a search brings for one index (``ranking.neighbours``): per question word
#: (its stem), the index's terms it also reads as, with their weights
Bridges = tuple[tuple[str, tuple[tuple[int, float], ...]], ...]


class QueryReading(NamedTuple):
    """A question as an index reads it (:func:`read_query`)."""

    #: one per question word: its terms with their weights, the best first
    slots: tuple[tuple[tuple[int, float], ...], ...]
    #: the share of the question's plain words the index reads (``query_reach``)
    share: float
    #: per slot: the readings that count only in the databases that do not hold the
    #: word's own term, and that term (None: every reading counts everywhere)
    elsewhere: tuple[tuple[frozenset[int], int] | None, ...]
    #: per slot: the question's word it reads (its stem, a compound, or two stems
    #: joined by ``_`` for a pair read as one synonym)
    keys: tuple[str, ...] = ()


def read_query(
    index: TermIndex, text: str, extra: Bridges = (), reading: QuestionReading = QUESTION_READING
) -> QueryReading:
    """The question as slots: each known term of ``index.query_terms`` alone at weight 1,
    then for each question word the catalog does not use, the catalog terms its bridges
    reach (abbreviations and synonyms); a word it uses gets its commoner abbreviations
    (``reading.abbreviate_known_words``) and its synonyms in the other databases only
    (``reading.elsewhere_synonyms``). A term of the question's own is never a bridge.
    ``extra``: more synonyms of some words (a search's embedder neighbours), read as
    WordNet's are; a term reached both ways keeps the better weight."""
    slots: dict[str, dict[int, float]] = {}
    exact: set[int] = set()
    for q in (*analyze_query(text, sql_words=False), *query_compounds(text)):
        j = index.vocab.get(q)
        if j is not None and j not in exact:
            exact.add(j)
            slots[q] = {j: 1.0}
    words = query_words(text, sql_words=False)
    known = {key: next(iter(slot)) for key, slot in slots.items()}
    read: dict[str, float] = {key: 1.0 for _, key in words if key in known}
    away: dict[str, tuple[frozenset[int], int]] = {}
    more = dict(extra)
    if index.has_bridges() or more:
        keyed = [(key, raw, _merged(index._synonyms(key), more.get(key))) for raw, key in words]
        for (_, a, _), (_, b, _) in zip(keyed, keyed[1:], strict=False):
            pair = index._synonyms(f"{a}_{b}")
            if pair:  # "family name" → surname: the pair is a slot of its own
                keyed.append((f"{a}_{b}", "", pair))
        for key, raw, bridged in keyed:
            if raw in FUNCTION_WORDS:
                continue  # read as written only
            # the word's own term, when the catalog uses it (-1: a word it does not use)
            own = known.get(key, -1) if not reading.bridge_known_words else -1
            reach: dict[int, float] = dict(bridged) if own < 0 else {}
            if raw and (own < 0 or reading.abbreviate_known_words):
                for j, share in index._abbreviating(raw, own):
                    w = reading.abbreviation_weight * share
                    if w > reach.get(j, 0.0):
                        reach[j] = w
            if own >= 0 and reading.elsewhere_synonyms:
                others = {j: w for j, w in bridged if j not in exact and j not in reach}
                if others:
                    away[key] = (frozenset(others), own)
                    reach.update(others)
            for j, w in reach.items():
                if j in exact:
                    continue
                slot = slots.setdefault(key, {})
                if w > slot.get(j, 0.0):
                    slot[j] = w
            if reach and raw:
                read[key] = max(read.get(key, 0.0), max(reach.values()))
    share = sum(read.get(key, 0.0) for _, key in words) / len(words) if words else 1.0
    ordered = tuple(
        tuple(sorted(slot.items(), key=lambda t: (-t[1], t[0]))) for slot in slots.values()
    )
    return QueryReading(ordered, share, tuple(away.get(key) for key in slots), tuple(slots))


def _merged(
    bridged: list[tuple[int, float]], more: Sequence[tuple[int, float]] | None
) -> list[tuple[int, float]]:
    """Two sets of bridges of one word, each term once at its better weight, by term."""
    if not more:
        return bridged
    best = dict(bridged)
    for j, w in more:
        if w > best.get(j, 0.0):
            best[j] = w
    return sorted(best.items())


def value_fit(kinds: np.ndarray, keys: np.ndarray, cues: frozenset[int]) -> np.ndarray:
    """1 for each node (of value ``kinds``, ``keys`` whether each is a key) whose value
    kind one of the question's value cues fits (a number: a numeric leaf that is not a
    key; a year: a date or year leaf; a name: a text leaf that is not a key), else 0."""
    fit = np.zeros(len(kinds))
    for cue in cues:
        hit = kinds == cue
        if cue != VALUE_TIME:
            hit &= ~keys
        fit[hit] = 1.0
    return fit


def links_from_edges(edges: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Undirected pairs, deduplicated, in a stable order."""
    return sorted({(a, b) if a < b else (b, a) for a, b in edges if a != b})
