"""Which question words a hit's own text matched in the schema channel, for ``explain``.

The schema channel scores an entity by the question's words its text holds, exactly
or through a bridge (an abbreviation, a WordNet synonym, a nearest word by vectors).
``explain`` lists them per hit: ``name`` for an exact match, ``divisions→department
0.31`` for a bridge at its weight. Computed only when an explanation is asked for.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from layersearch.ranking.analyzer import query_words, token_words
from layersearch.ranking.coverage import query_reading
from layersearch.ranking.coverage_cut import own_terms as index_own_terms
from layersearch.ranking.params import QUESTION_READING, QuestionReading

if TYPE_CHECKING:
    from layersearch.ranking.coverage import CoverageIndex
    from layersearch.ranking.coverage_terms import Bridges, QueryReading
    from layersearch.semantic.model import Entity


def own_terms(index: CoverageIndex, e: Entity) -> dict[int, str]:
    """The index's terms in an entity's own name, label and description → the word of
    the entity's that gives each (an identifier part, or the whole identifier)."""
    out: dict[int, str] = {}
    for text in (e.name, e.label, e.description):
        for token, word in token_words(text).items():
            j = index.vocab.get(token)
            if j is not None:
                out.setdefault(j, word)
    return out


def question_words(question: str) -> dict[str, str]:
    """The question's reading keys → the word as written (lowercase)."""
    raw_of = {key: raw for raw, key in query_words(question, sql_words=False)}
    for token, word in token_words(question).items():
        raw_of.setdefault(token, word.lower())
    return raw_of


def matched_words(
    reading: QueryReading,
    question: str,
    terms: dict[int, str],
    raw_of: dict[str, str] | None = None,
) -> list[str]:
    """Per question word, in question order, its best reading among ``terms``: the word
    alone when matched exactly, ``word→term weight`` through a bridge (``raw_of``: the
    question's :func:`question_words`, when already read)."""
    if raw_of is None:
        raw_of = question_words(question)
    out: list[str] = []
    for key, slot in zip(reading.keys, reading.slots, strict=True):
        for j, w in slot:  # (the best weight first)
            if j in terms:
                word = raw_of.get(key) or key.replace("_", " ")
                out.append(word if w >= 1.0 else f"{word}→{terms[j]} {w:.2f}")
                break
    return out


def matched_reader(
    index: CoverageIndex,
    question: str,
    bridges: Bridges,
    entity_of: Callable[[str], Entity | None],
    read: QuestionReading = QUESTION_READING,
) -> Callable[[str], list[str]]:
    """id → :func:`matched_words` of that entity, from the reading the schema channel
    scored (kept by the index: the question is not read again)."""

    raw_of: dict[str, str] | None = None  # read once per search, on the first hit asked

    def matched(entity_id: str) -> list[str]:
        nonlocal raw_of
        e = entity_of(entity_id)
        if e is None:
            return []
        reading = query_reading(index, question, bridges, read)
        if raw_of is None:
            raw_of = question_words(question)
        return matched_words(reading, question, own_terms(index, e), raw_of)

    return matched


def schema_words(
    coverage: Callable[[], CoverageIndex],
    rankings: Mapping[str, Any],
    bridges: Bridges,
    question: str | None,
    entity_of: Callable[[str], Entity | None],
    read: QuestionReading = QUESTION_READING,
) -> dict[str, Callable[[str], list[str]]] | None:
    """The schema channel's :func:`matched_reader` for a search's explanations
    (``coverage``: the search's schema index; ``rankings``: its entity channels); None
    when the channel did not rank (no question, or a layer without a schema index)."""
    if question is None or "schema" not in rankings:
        return None
    return {"schema": matched_reader(coverage(), question, bridges, entity_of, read)}


#: per index, an entity's own terms (:func:`own_terms`), read once
_OWN_TERMS: weakref.WeakKeyDictionary[CoverageIndex, dict[str, frozenset[int]]] = (
    weakref.WeakKeyDictionary()
)
_OWN_TERMS_LOCK = threading.Lock()


def matched_word_sets(
    index: CoverageIndex,
    question: str,
    bridges: Bridges,
    entity_of: Callable[[str], Entity | None],
    read: QuestionReading = QUESTION_READING,
) -> Callable[[str], set[str]]:
    """id → the question words :func:`matched_words` lists for it, as a set of lower
    case words (a bridge's word without its target): what the learned column order
    reads. The question is read once, and each entity's own terms once per index (the
    index's forward index: ``coverage_cut.own_terms``)."""
    reading = query_reading(index, question, bridges, read)
    raw_of = question_words(question)
    words = [(raw_of.get(k) or k.replace("_", " ")).strip().lower() for k in reading.keys]
    slots = [frozenset(j for j, _ in slot) for slot in reading.slots]
    with _OWN_TERMS_LOCK:
        kept = _OWN_TERMS.setdefault(index, {})

    def matched(entity_id: str) -> set[str]:
        terms = kept.get(entity_id)
        if terms is None:
            # (from the index's forward index; an entity it does not hold, read itself)
            terms = index_own_terms(index, entity_id)
            if terms is None:
                e = entity_of(entity_id)
                terms = frozenset(own_terms(index, e)) if e is not None else frozenset()
            kept[entity_id] = terms
        return {w for w, slot in zip(words, slots, strict=True) if not slot.isdisjoint(terms)}

    return matched
