"""The tuned numbers and switches of the ranking primitives, with their defaults, in one
place. A corpus's typed config (``corpora/entities/config.py``) takes its defaults from
here and passes its values in; nothing in ``ranking/`` reads a corpus's config.
docs/ranking.md lists every key, and which ones a built index holds."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ANCESTOR_WEIGHT",
    "QUESTION_READING",
    "EVIDENCE_TOP",
    "RRF_K",
    "SCHEMA_SEARCH",
    "BRIDGES",
    "WORD_NEIGHBOURS",
    "QuestionReading",
    "SchemaSearch",
    "VocabularyBridges",
    "WordNeighbours",
]

#: Reciprocal Rank Fusion's k: a vote counts weight / (k + rank).
RRF_K = 60
#: The rank at which ``fusion.evidence_weights`` reads how far a channel's scores fell.
EVIDENCE_TOP = 10
#: How much a tag counts for its ancestors (a note on shop.orders.total, asked about
#: shop.orders): half of an exact match (``bm25.EntityOverlapIndex``).
ANCESTOR_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class QuestionReading:
    """How the schema channel reads a question's words as catalog terms
    (``coverage_terms.read_query``; query-time)."""

    #: Whether a question word the catalog uses also gets bridges to other words.
    bridge_known_words: bool = False
    #: Whether a question word the catalog uses is also read in the catalog's
    #: abbreviations of it (``employees`` → ``empl`` where a catalog writes ``emp_num``
    #: somewhere and ``empl`` everywhere else): only an abbreviation that keeps the
    #: word's start (``bridges.keeps_word_start``) and that the catalog writes more
    #: often than the word itself (lower idf).
    abbreviate_known_words: bool = True
    #: Whether a question word the catalog uses is also read in its synonyms, but only in
    #: the databases that do not use the word (*clients* is ``client`` in a database
    #: that has clients, and may be ``customer`` in one that does not): each database is
    #: read as a search scoped to it reads it.
    elsewhere_synonyms: bool = True
    #: An abbreviation's (or truncation's) weight when it keeps the whole consonant
    #: skeleton of the word (``bridges.abbreviation_weight`` gives the share of it).
    abbreviation_weight: float = 1.0


#: The question reading's defaults.
QUESTION_READING = QuestionReading()


@dataclass(frozen=True, slots=True)
class SchemaSearch:
    """The schema channel's query-time settings, with their defaults (a corpus's ranking
    config gives its own: ``EntityRankingConfig``; docs/ranking.md)."""

    #: Weight of the join-neighbourhood coverage next to the table's own score: a
    #: round prior (a neighbour's words are weaker evidence than the table's own).
    link_prior: float = 0.5
    #: Leaves are ranked for the best ``top_tables`` tables only; the unmatched leaves
    #: of the best ``top_leaf_tables`` tables follow their matched ones (keys first).
    top_tables: int = 50
    top_leaf_tables: int = 10
    #: Weight of one value-like word of the question (a number, a year, a quoted or
    #: capitalised name) as evidence for the leaves whose type can hold it, as a share
    #: of one average question word.
    value_fit: float = 0.5
    #: How the question's words are read as the index's terms.
    reading: QuestionReading = field(default_factory=lambda: QUESTION_READING)


#: The schema channel's defaults.
SCHEMA_SEARCH = SchemaSearch()


@dataclass(frozen=True, slots=True)
class VocabularyBridges:
    """How WordNet's words bridge to a schema index's terms (``bridges.synonym_bridges``):
    read when the index is built, and held by it (index-time)."""

    #: A WordNet synonym: the same meaning in another word, but maybe another sense.
    synonym_weight: float = 0.5
    #: A broader or narrower WordNet word.
    related_weight: float = 0.3
    #: Only a word's most frequent senses bridge, on either side (WordNet orders them).
    max_senses: int = 3
    #: Synsets with more broader and narrower synsets than this lend only their synonyms.
    max_related: int = 40
    #: Shorter identifier parts are not read as abbreviations (``no``, ``dt``: too many
    #: words); longer ones are not, whatever the dictionary says (names, typos).
    min_abbreviation: int = 3
    max_abbreviation: int = 6
    #: Shorter parts are not read as truncations (``car`` is not *cargo*, nor ``pet``
    #: *petrol*).
    min_truncation: int = 4


#: WordNet's defaults.
BRIDGES = VocabularyBridges()


@dataclass(frozen=True, slots=True)
class WordNeighbours:
    """How a question's words are also read as their nearest catalog words by word
    vectors (``neighbours.WordSpace``; query-time)."""

    #: Catalog words each question word is also read as (0: none).
    neighbours: int = 3
    #: A question's first words read as their neighbours (a pasted paragraph is not).
    question_words: int = 32


#: The word neighbours' defaults.
WORD_NEIGHBOURS = WordNeighbours()
