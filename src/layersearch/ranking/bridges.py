"""Vocabulary bridges: question words the catalog does not use, led to words it does.

Two kinds, both weighed below an exact match (a bridge is a guess about what
the question means; the catalog's own word is evidence):

- **Abbreviations** (:func:`abbreviation_weight`). An identifier part that is
  not a word (``fclt``, ``qty``, ``sngr``, ``stu``) abbreviates a question word
  when it starts with the same letter, is at least :data:`MIN_ABBREVIATION`
  letters long, is shorter than the word and its letters appear in the word in
  order (``fclt`` in *f*a*c*i*l*i*t*y). Its weight is
  ``QuestionReading.abbreviation_weight`` times the mean of two shares of the word's
  consonant skeleton (first letter, then its consonants, repeats collapsed:
  ``facility`` → ``fclty``; a plural's final ``s`` does not count):
  the part's length, and the length of the prefix the part's own skeleton
  shares with it, capped at 1. ``fclt`` scores (4 + 4) / (2 · 5) = 0.8 for
  *facility*; for *airports* (``arprt``) ``arpr`` scores 0.8 and ``aprt``
  (apartment) (4 + 1) / 10 = 0.5: an abbreviation keeps the word's first
  consonants in order, a look-alike skips some. What is a word is
  WordNet's call when it is installed, else "has a vowel after its first
  letter". No hand list: the two-letter forms (``no``, ``dt``) stay with the
  analyzer's short list of standard abbreviations.
- **Truncations** (:func:`truncation_weight`). An identifier part of
  :data:`MIN_TRUNCATION` to :data:`MAX_ABBREVIATION` letters, word or not, that
  is the start of a longer question word (``peop`` for *people*, ``stat`` for
  *states*, ``info``, ``prod``): weight ``QuestionReading.abbreviation_weight`` times the
  share of the word's letters it keeps (a plural's ``s`` not counted): ``stat``
  0.8 for *states*, ``peop`` 0.67 for *people*. Such a part is often a word of
  its own (``make``, ``form``), so a truncation only reads a question word the
  catalog does not use.
- **Synonyms and related words** (:func:`synonym_bridges`), from WordNet
  (:mod:`layersearch.ranking.lexicon`), computed from the catalog side: every
  catalog word's synsets give their other lemmas (synonyms, weight
  ``synonym_weight``: *client* → ``customer``) and the lemmas of their
  hypernyms and hyponyms (weight ``related_weight``: *leader* → ``head``,
  *plane* → ``aircraft``). A synset with more than ``max_related`` broader
  and narrower synsets is too general to stand for any one of them and lends
  only its synonyms. Only nouns, and only the ``max_senses`` most frequent
  senses of either word (WordNet lists senses by frequency): a catalog names
  things, and a word's rare senses ("lighter": a barge) bridge to noise. These four
  are index-time settings (``params.VocabularyBridges``): a built index holds them.

A question word is one *slot* of the query: its exact term and its bridges;
an entity gets the best of them (a slot is counted once, see
``CoverageIndex``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from layersearch.ranking.params import BRIDGES, VocabularyBridges

__all__ = [
    "MIN_ABBREVIATION",
    "MIN_TRUNCATION",
    "SYNONYM_WEIGHT",
    "abbreviation_weight",
    "abbreviation_candidates",
    "keeps_word_start",
    "truncation_candidates",
    "truncation_weight",
    "looks_like_word",
    "skeleton",
    "synonym_bridges",
]

if TYPE_CHECKING:
    from layersearch.ranking.lexicon import WordNet

#: The defaults of the part lengths (``params.VocabularyBridges``, index-time).
MIN_ABBREVIATION = BRIDGES.min_abbreviation
MAX_ABBREVIATION = BRIDGES.max_abbreviation
MIN_TRUNCATION = BRIDGES.min_truncation
#: A WordNet synonym's default weight (``params.VocabularyBridges``); the embedder's word
#: neighbours (``ranking.neighbours``) are read at this weight × their cosine.
SYNONYM_WEIGHT = BRIDGES.synonym_weight
_VOWELS = frozenset("aeiou")


def skeleton(word: str) -> str:
    """First letter, then the consonants, runs of one letter collapsed: facility → fclty."""
    if not word:
        return ""
    out = [word[0]]
    for ch in word[1:]:
        if ch in _VOWELS or ch == out[-1]:
            continue
        out.append(ch)
    return "".join(out)


def looks_like_word(part: str) -> bool:
    """The fallback dictionary: a vowel after the first letter (``dept`` yes, ``qty`` no)."""
    return any(ch in _VOWELS for ch in part[1:])


def abbreviation_candidates(
    parts: Iterable[str],
    is_word: Callable[[str], bool] | None = None,
    lengths: VocabularyBridges = BRIDGES,
) -> list[str]:
    """Identifier parts that may abbreviate a word (sorted, unique)."""
    word = is_word or looks_like_word
    return sorted(
        {
            p
            for p in parts
            if lengths.min_abbreviation <= len(p) <= lengths.max_abbreviation
            and p.isalpha()
            and p.isascii()
            and not word(p)
        }
    )


def abbreviation_weight(part: str, word: str, shortest: int = MIN_ABBREVIATION) -> float:
    """How strongly ``part`` abbreviates ``word`` (0: not at all); see the module doc."""
    if len(part) < shortest or len(part) >= len(word) or part[0] != word[0]:
        return 0.0
    at = 0
    for ch in part:
        at = word.find(ch, at) + 1
        if not at:
            return 0.0
    target = _word_skeleton(word)
    common = 0
    for a, b in zip(skeleton(part), target, strict=False):
        if a != b:
            break
        common += 1
    return min(1.0, (len(part) + common) / (2 * len(target)))


def _singular(word: str) -> str:
    """The word without a plural's s: not a letter an abbreviation leaves out."""
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _word_skeleton(word: str) -> str:
    """The skeleton an abbreviation of ``word`` is measured against."""
    return skeleton(_singular(word))


def keeps_word_start(part: str, word: str, shortest: int = MIN_ABBREVIATION) -> bool:
    """Whether ``part``'s skeleton is the start of ``word``'s: the part keeps the word's
    first consonants in order and skips none (``empl``, ``emp`` for *employees*,
    ``dprt`` for *department*; not ``end`` for *enrolled*, nor ``crs`` for
    *countries*). A reading of a word the catalog also spells out must be this
    faithful (``CoverageIndex``)."""
    return len(part) >= shortest and _word_skeleton(word).startswith(skeleton(part))


def truncation_candidates(parts: Iterable[str], lengths: VocabularyBridges = BRIDGES) -> list[str]:
    """Identifier parts that may be the first letters of a longer word (sorted, unique)."""
    lo, hi = lengths.min_truncation, lengths.max_abbreviation
    return sorted({p for p in parts if lo <= len(p) <= hi and p.isalpha() and p.isascii()})


def truncation_weight(part: str, word: str, shortest: int = MIN_TRUNCATION) -> float:
    """How strongly ``part`` truncates ``word`` (0: it is not the start of a longer word)."""
    single = _singular(word)
    if len(part) < shortest or len(part) >= len(single) or not single.startswith(part):
        return 0.0
    return len(part) / len(single)


def synonym_bridges(
    catalog_terms: Mapping[str, int],
    surfaces: Mapping[str, Collection[str]] | None = None,
    reading: VocabularyBridges = BRIDGES,
) -> dict[str, list[tuple[int, float]]]:
    """Question-side token → [(catalog term id, weight)], from WordNet (empty without it).

    ``catalog_terms``: the catalog's terms (analysed tokens) → ids. WordNet's lemmas are
    read as the analyzer's tokens (``lexicon.lemma_key``: a stem for one word, the
    lowercased identifier for ``last_name``). A token never bridges to its own term.
    ``surfaces``: a term → the catalog's own words that analyse to it (``custom`` →
    *customer*); such a term's senses are its words' most frequent ones, not those of
    every lemma that stems alike (*custom*, *customs* would take customer's place).
    ``reading``: the weights and cut-offs (index-time settings).
    """
    from layersearch.ranking.lexicon import lemma_key as key
    from layersearch.ranking.lexicon import wordnet

    wn = wordnet()
    if wn is None:
        return {}
    by_key = wn.by_key
    best: dict[str, dict[int, float]] = {}
    for term, j in catalog_terms.items():
        senses = _term_senses(wn, term, (surfaces or {}).get(term, ()), reading.max_senses)
        for sid in senses:
            lent: list[tuple[int, float]] = [(sid, reading.synonym_weight)]
            if len(wn.related[sid]) <= reading.max_related:
                lent += [(r, reading.related_weight) for r in wn.related[sid]]
            for via, w in lent:
                for lemma in wn.lemmas[via]:
                    k = key(lemma)
                    if k == term or not k or via not in by_key.get(k, ())[: reading.max_senses]:
                        continue
                    slot = best.setdefault(k, {})
                    if slot.get(j, 0.0) < w:
                        slot[j] = w
    return {k: sorted(v.items()) for k, v in sorted(best.items())}


def _term_senses(
    wn: WordNet, term: str, words: Collection[str], max_senses: int = BRIDGES.max_senses
) -> list[int]:
    """A catalog term's senses: the most frequent of each of its own words (a plural
    read as its singular), else of every lemma that analyses to the term."""
    own: dict[int, None] = {}
    for w in sorted(words):
        for form in (w, _singular(w)):
            if form in wn.senses:
                own.update(dict.fromkeys(wn.senses[form][:max_senses]))
                break
    return list(own) if own else list(wn.by_key.get(term, ())[:max_senses])
