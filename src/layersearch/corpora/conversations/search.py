"""The conversation search contracts: keyword, semantic, summaries, and message search.

The corpus is split by concern; this module keeps the names it always exported:

- :mod:`.service`: :class:`ConversationService`, the corpus of one store (import,
  snapshot, the four searches);
- :mod:`.ranking`: how message search ranks (its configuration, query words, the rules
  applied after fusion);
- :mod:`.documents`: what a message or summary is to the full-text and dense channels;
- :mod:`.mirror`: the in-memory DuckDB copy keyword search and the filters run on;
- :mod:`.render`: the exact markdown of the contracts;
- the result models are wire models, in :mod:`layersearch.types`.
"""

from __future__ import annotations

from layersearch.types import (
    ConversationHit,
    ConversationSearchResult,
    MessageHit,
    MessageSearchResult,
    SemanticHit,
    SemanticSearchResult,
    SummaryHit,
    SummarySearchResult,
)

from .documents import (
    SUMMARY_BOOSTS,
    dense_text,
    message_doc,
    projection,
    searchable,
    summary_dense_text,
    summary_doc,
)
from .ranking import (
    ASKS_AMOUNT,
    ASKS_NAME,
    ASKS_PLACE,
    ASKS_WHEN,
    CONVERSATION_STOP_WORDS,
    DOC_FORMAT,
    TIME_EXPRESSION,
    MessageSearchConfig,
    answer_type,
    answers_follow_questions,
    demote,
    holds_answer,
    keep_channel_tops,
    names_something,
    prefer_answer_types,
    prefer_times,
    query_text,
    question_sentences,
    states_amount,
    states_time,
    strip_names,
    zscore_fusion,
)
from .render import render_conversations, render_semantic, render_summaries
from .service import (
    DEPTH,
    EXTRACTS,
    KEYWORD_PREVIEW,
    MAX_LIMIT,
    MAX_TEXT_CHARS,
    MESSAGE_CORPUS,
    MODES,
    ROLES,
    SEMANTIC_PREVIEW,
    SUMMARY_CORPUS,
    TURN_CORPUS,
    ConversationService,
    DenseGetter,
)

__all__ = [
    "ASKS_AMOUNT",
    "ASKS_NAME",
    "ASKS_PLACE",
    "ASKS_WHEN",
    "CONVERSATION_STOP_WORDS",
    "DEPTH",
    "DOC_FORMAT",
    "EXTRACTS",
    "KEYWORD_PREVIEW",
    "MAX_LIMIT",
    "MAX_TEXT_CHARS",
    "MESSAGE_CORPUS",
    "MODES",
    "ROLES",
    "SEMANTIC_PREVIEW",
    "SUMMARY_BOOSTS",
    "SUMMARY_CORPUS",
    "TIME_EXPRESSION",
    "TURN_CORPUS",
    "ConversationHit",
    "ConversationSearchResult",
    "ConversationService",
    "DenseGetter",
    "MessageHit",
    "MessageSearchConfig",
    "MessageSearchResult",
    "SemanticHit",
    "SemanticSearchResult",
    "SummaryHit",
    "SummarySearchResult",
    "answer_type",
    "answers_follow_questions",
    "demote",
    "dense_text",
    "holds_answer",
    "keep_channel_tops",
    "message_doc",
    "names_something",
    "prefer_answer_types",
    "prefer_times",
    "projection",
    "query_text",
    "question_sentences",
    "render_conversations",
    "render_semantic",
    "render_summaries",
    "searchable",
    "states_amount",
    "states_time",
    "strip_names",
    "summary_dense_text",
    "summary_doc",
    "zscore_fusion",
]
