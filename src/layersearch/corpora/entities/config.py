"""Every tuned number and switch of the entity and memory ranking, in one place.

:class:`EntityRankingConfig` holds the query-time ones, :class:`EntityIndexConfig`
(its ``index``) those a built index holds; the defaults of the channels' own numbers
are the ranking primitives' (``ranking/params.py``). A project config overrides them
under ``[ranking.entities]`` and ``[ranking.entities.index]`` (docs/ranking.md), an
evaluation switches stages off with ``--without``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from layersearch.errors import ConfigError
from layersearch.ranking.params import (
    ANCESTOR_WEIGHT,
    BRIDGES,
    EVIDENCE_TOP,
    QUESTION_READING,
    RRF_K,
    SCHEMA_SEARCH,
    WORD_NEIGHBOURS,
    QuestionReading,
    SchemaSearch,
    VocabularyBridges,
    WordNeighbours,
)
from layersearch.ranking.pipeline import RankingConfig, typed_config

__all__ = [
    "DEFAULT_INDEX",
    "ENTITY_STAGES",
    "MAX_RESULTS_LIMIT",
    "EntityIndexConfig",
    "EntityRankingConfig",
]

#: The largest max_results (and max_entities, …) a request may ask for.
MAX_RESULTS_LIMIT = 100

#: The entity pipeline's stages that can be switched off, in the order they run
#: (``search_stages.ENTITY_PIPELINE`` declares them with their entry points).
ENTITY_STAGES: tuple[str, ...] = (
    "schema-over-fulltext",
    "join-keys",
    "learned-tables",
    "learned-columns",
    "memory-words",
    "memory-tags",
    "memory-lead",
    "memory-runs",
)


@dataclass(frozen=True, slots=True)
class EntityIndexConfig:
    """The index-time settings of the entity corpus: what its built indexes hold.

    The field weights weigh an entity's fields in the schema channel's index (baked
    into it) and in full text (read at query time); the vocabulary bridges and their
    WordNet weights are read when the schema index is built. A schema index built with
    other values is not read back: it is rebuilt (the snapshot's, on first use after
    the change; :meth:`key`). ``[ranking.entities.index]`` in the settings file.
    """

    #: Field weights: a name match is the strongest evidence that an entity is meant;
    #: labels are curated names; the parent (model / datasource name) and sample values
    #: give context; formulas are code, weakest.
    name_weight: float = 3.0
    label_weight: float = 2.0
    parent_weight: float = 1.0
    description_weight: float = 1.0
    values_weight: float = 1.0
    formula_weight: float = 0.7
    text_weight: float = 1.5
    tags_weight: float = 0.7
    #: Whether the schema channel leads question words the catalog does not use to words
    #: it does (abbreviations in identifiers, WordNet synonyms; ranking.bridges).
    vocabulary_bridges: bool = True
    #: WordNet: a synonym's weight, a broader or narrower word's, how many of a word's
    #: most frequent senses bridge, and the most broader and narrower synsets a synset
    #: may have and still lend them.
    synonym_weight: float = BRIDGES.synonym_weight
    related_weight: float = BRIDGES.related_weight
    max_senses: int = BRIDGES.max_senses
    max_related: int = BRIDGES.max_related
    #: Identifier parts of this many letters are read as abbreviations of a word, of
    #: these as truncations (the first letters of a longer word).
    min_abbreviation: int = BRIDGES.min_abbreviation
    max_abbreviation: int = BRIDGES.max_abbreviation
    min_truncation: int = BRIDGES.min_truncation

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, bool) and value < 0:
                raise ConfigError(f"ranking.entities.index.{name} must not be negative")
        if not any(self.field_weights().values()):
            raise ConfigError("ranking.entities.index: at least one field weight above 0")

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], where: str = "ranking.entities.index"
    ) -> EntityIndexConfig:
        """The settings from a config table (an unknown key is refused)."""
        return typed_config(cls, values, where)

    def field_weights(self) -> dict[str, float]:
        """Field name → weight, for the indexes (``documents.entity_doc``'s fields)."""
        return {
            name.removesuffix("_weight"): getattr(self, name)
            for name in self.__dataclass_fields__
            if name.endswith("_weight") and name not in ("synonym_weight", "related_weight")
        }

    def vocabulary(self) -> VocabularyBridges:
        """How the schema index's vocabulary bridges are built."""
        return VocabularyBridges(
            self.synonym_weight,
            self.related_weight,
            self.max_senses,
            self.max_related,
            self.min_abbreviation,
            self.max_abbreviation,
            self.min_truncation,
        )

    def key(self) -> str:
        """A key of these settings that a built schema index keeps: empty for the
        defaults (an index built before the settings existed reads as theirs), else a
        hash of every value."""
        if self == DEFAULT_INDEX:
            return ""
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The defaults.
DEFAULT_INDEX = EntityIndexConfig()


@dataclass(frozen=True, slots=True)
class EntityRankingConfig(RankingConfig):
    """The entity and memory ranking's settings (``without``: stages switched off)."""

    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = ENTITY_STAGES

    #: Every channel ranks this deep whatever max_results is, so that the results for n
    #: are a prefix of those for n+k.
    channel_depth: int = MAX_RESULTS_LIMIT
    #: Reciprocal Rank Fusion's k: a vote counts weight / (k + rank).
    rrf_k: int = RRF_K
    #: channel-evidence: the rank at which a channel's separation is read (explanations).
    evidence_top: int = EVIDENCE_TOP
    #: Channels whose vote on a table is its rank among tables, on a leaf its rank among
    #: leaves (the vector channel interleaves a table and a leaf ranking).
    rank_by_level: tuple[str, ...] = ("vector",)
    #: join-keys: how many of the best-ranked tables count as the question's tables.
    join_key_tables: int = 5
    #: join-keys: whether joins no catalog declares are inferred from column names.
    infer_joins: bool = True
    #: learned-columns: the first entity hits among which the column hits are re-ordered
    #: by the learned model (the depth it was trained at).
    learned_column_depth: int = 50
    #: learned-tables: the first entity hits whose tables are re-ordered by the learned
    #: table model (the depth it was trained at).
    learned_table_depth: int = 50
    #: memory-tags: entities whose memories the ``tags`` channel ranks (the list this deep).
    tag_depth: int = MAX_RESULTS_LIMIT
    #: A memory only ``tags`` (or dense retrieval) ranks joins ``results`` when one of its
    #: tags is among this many first entities (a fixed depth keeps results prefixes).
    merge_tag_depth: int = 10
    #: memory-runs: at most this many memories in a row in ``results``.
    memory_run: int = 2

    # -- the channels' own settings (query-time; the defaults are the channels')
    #: schema channel: weight of a table's join-neighbourhood coverage beside its own.
    link_prior: float = SCHEMA_SEARCH.link_prior
    #: schema channel: leaves are ranked under this many best tables only...
    top_tables: int = SCHEMA_SEARCH.top_tables
    #: ...and the unmatched leaves of this many best tables follow their matched ones.
    top_leaf_tables: int = SCHEMA_SEARCH.top_leaf_tables
    #: schema channel: weight of a value-like question word (a number, a year, a name)
    #: for the leaves whose type can hold it, as a share of one average question word.
    value_fit: float = SCHEMA_SEARCH.value_fit
    #: schema channel, reading the question: whether a word the catalog uses also gets
    #: bridges to other words; is also read in the catalog's commoner abbreviations of
    #: it; is also read in its synonyms in the databases that do not use it...
    bridge_known_words: bool = QUESTION_READING.bridge_known_words
    abbreviate_known_words: bool = QUESTION_READING.abbreviate_known_words
    elsewhere_synonyms: bool = QUESTION_READING.elsewhere_synonyms
    #: ...and the weight of an abbreviation that keeps the word's whole skeleton.
    abbreviation_weight: float = QUESTION_READING.abbreviation_weight
    #: bm25: how much a memory's tag counts for its ancestors (a model, a datasource).
    ancestor_weight: float = ANCESTOR_WEIGHT
    #: word neighbours: catalog words each question word is also read as (0: none)...
    neighbours: int = WORD_NEIGHBOURS.neighbours
    #: ...for the question's first this many words.
    question_words: int = WORD_NEIGHBOURS.question_words
    #: The index-time settings (``[ranking.entities.index]``).
    index: EntityIndexConfig = field(default=DEFAULT_INDEX)

    def __post_init__(self) -> None:
        RankingConfig.__post_init__(self)
        for name in ("channel_depth", "rrf_k", "evidence_top", "tag_depth", "memory_run"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ranking.entities.{name} must be at least 1")
        for name in ("top_tables", "top_leaf_tables", "question_words"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ranking.entities.{name} must be at least 1")
        for name in (
            "join_key_tables",
            "merge_tag_depth",
            "link_prior",
            "value_fit",
            "ancestor_weight",
            "neighbours",
            "abbreviation_weight",
            "learned_column_depth",
            "learned_table_depth",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"ranking.entities.{name} must not be negative")

    def word_neighbours(self) -> WordNeighbours:
        """How the question's words are read as their nearest catalog words."""
        return WordNeighbours(self.neighbours, self.question_words)

    def question_reading(self) -> QuestionReading:
        """How the schema channel reads the question's words as catalog terms."""
        return QuestionReading(
            self.bridge_known_words,
            self.abbreviate_known_words,
            self.elsewhere_synonyms,
            self.abbreviation_weight,
        )

    def schema_search(self) -> SchemaSearch:
        """The schema channel's query-time settings."""
        return SchemaSearch(
            self.link_prior,
            self.top_tables,
            self.top_leaf_tables,
            self.value_fit,
            self.question_reading(),
        )
