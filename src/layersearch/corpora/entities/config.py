"""Every tuned number and switch of the entity and memory ranking, in one place.

:class:`EntityRankingConfig` holds the defaults; a project config overrides them
under ``[ranking.entities]`` (docs/configuration.md), an evaluation switches stages
off with ``--without`` (docs/ranking.md lists the stages and what each is worth).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from layersearch.errors import ConfigError
from layersearch.ranking.fusion import EVIDENCE_TOP, RRF_K
from layersearch.ranking.pipeline import RankingConfig

__all__ = ["ENTITY_STAGES", "MAX_RESULTS_LIMIT", "EntityRankingConfig"]

#: The largest max_results (and max_entities, …) a request may ask for.
MAX_RESULTS_LIMIT = 100

#: The entity pipeline's stages that can be switched off, in the order they run
#: (``search_stages.ENTITY_PIPELINE`` declares them with their entry points).
ENTITY_STAGES: tuple[str, ...] = (
    "schema-over-fulltext",
    "table-votes",
    "join-keys",
    "learned-columns",
    "memory-words",
    "memory-tags",
    "memory-lead",
    "memory-runs",
)


@dataclass(frozen=True, slots=True)
class EntityRankingConfig(RankingConfig):
    """The entity and memory ranking's settings (``without``: stages switched off)."""

    PIPELINE_STAGES: ClassVar[tuple[str, ...]] = ENTITY_STAGES

    #: Every channel ranks this deep whatever max_results is, so that the results for n
    #: are a prefix of those for n+k.
    channel_depth: int = MAX_RESULTS_LIMIT
    #: Reciprocal Rank Fusion's k: a vote counts weight / (k + rank).
    rrf_k: int = RRF_K
    #: table-votes: the rank at which the fused tables' separation is read.
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
    #: memory-tags: entities whose memories the ``tags`` channel ranks (the list this deep).
    tag_depth: int = MAX_RESULTS_LIMIT
    #: A memory only ``tags`` (or dense retrieval) ranks joins ``results`` when one of its
    #: tags is among this many first entities (a fixed depth keeps results prefixes).
    merge_tag_depth: int = 10
    #: memory-runs: at most this many memories in a row in ``results``.
    memory_run: int = 2

    def __post_init__(self) -> None:
        RankingConfig.__post_init__(self)
        for name in ("channel_depth", "rrf_k", "evidence_top", "tag_depth", "memory_run"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ranking.entities.{name} must be at least 1")
        for name in (
            "join_key_tables",
            "merge_tag_depth",
            "learned_column_depth",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"ranking.entities.{name} must not be negative")
