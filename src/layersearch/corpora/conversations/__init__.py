"""Conversations: chat exports and benchmark dialogues parsed into records."""

from __future__ import annotations

from .importers import FORMATS, clean_user_text, detect_format, import_conversations
from .locomo import (
    LocomoQuestion,
    LocomoQuestions,
    import_locomo,
    locomo_questions,
    read_locomo_questions,
)
from .records import Conversation, ImportResult, Message, has_question
from .summaries import Summary, import_summaries

__all__ = [
    "FORMATS",
    "Conversation",
    "ImportResult",
    "LocomoQuestion",
    "LocomoQuestions",
    "Message",
    "Summary",
    "clean_user_text",
    "detect_format",
    "has_question",
    "import_conversations",
    "import_locomo",
    "import_summaries",
    "locomo_questions",
    "read_locomo_questions",
]
