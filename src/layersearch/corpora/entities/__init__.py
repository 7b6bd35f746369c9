"""The semantic layer + memories corpus and the service that keeps it.

- ``documents``: entities and memories as ranking documents and rendered hits;
- ``coverage``: the schema channel's index built from entities and joins;
- ``config``: :class:`EntityRankingConfig`, every tuned number and switch of the ranking;
- ``stages``: the ranking as declared stages (``ENTITY_PIPELINE``, docs/ranking.md), on
  a ``state.SearchState``; ``channels``: the channels; ``texts``: the memory texts;
- ``rank``: the rules the stages apply (dense and join-key context, the
  merge of the two kinds); ``learned``: the learned column order; ``lists``: the
  rankings and ordered lists;
- ``corpus`` / ``search``: one snapshot (:class:`EntityCorpus`) and its search;
- ``vector``: the dense channel a search is handed;
- ``memories``, ``detail``: memory checks and the memories of loaded files, ``inspect``;
- ``service``: :class:`EntityService`, the snapshot's reload protocol, loads,
  searches and memory writes of one store;
- ``process``: process-wide settings (garbage collection, fork threshold, pool).
"""

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.corpora.entities.coverage import build_coverage, coverage_of
from layersearch.corpora.entities.documents import (
    describe_entity,
    describe_memory,
    entity_doc,
    memory_doc,
    one_line_query,
    render_entity,
    render_memory,
)
from layersearch.corpora.entities.rank import (
    CHANNEL_DEPTH,
    JOIN_KEY_TABLES,
    MAX_QUESTION_CHARS,
    MAX_RESULTS_LIMIT,
    dense_in_context,
    join_key_order,
    join_keys_in_context,
    merge_kinds,
    visible_tags,
)
from layersearch.corpora.entities.service import EntityService
from layersearch.corpora.entities.state import VectorChannel

__all__ = [
    "CHANNEL_DEPTH",
    "JOIN_KEY_TABLES",
    "MAX_QUESTION_CHARS",
    "MAX_RESULTS_LIMIT",
    "EntityCorpus",
    "EntityService",
    "VectorChannel",
    "build_coverage",
    "coverage_of",
    "dense_in_context",
    "describe_entity",
    "describe_memory",
    "entity_doc",
    "join_key_order",
    "join_keys_in_context",
    "memory_doc",
    "merge_kinds",
    "one_line_query",
    "render_entity",
    "render_memory",
    "visible_tags",
]
