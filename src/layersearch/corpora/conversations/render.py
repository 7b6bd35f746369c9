"""The exact contract text of the conversation tools (markdown agents rely on)."""

from __future__ import annotations

from collections.abc import Sequence

from layersearch.types import (
    ConversationHit,
    SemanticHit,
    SummaryHit,
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- rendering (the exact contract text) -----------------------------------------------------------


def _cell(text: str) -> str:
    """A table cell: one line, pipes escaped so the row keeps its columns."""
    return _one_line(text).replace("|", "\\|")


def render_conversations(term: str, hits: Sequence[ConversationHit]) -> str:
    if not hits:
        return f"No conversations found containing '{term}'"
    lines = ["| Date | Source | Role | conv_id | Preview |", "|---|---|---|---|---|"]
    for h in hits:
        lines.append(
            f"| {h.date or 'unknown'} | {_cell(h.source)} | {h.role} | {h.conversation_id} "
            f"| {_cell(h.preview)} |"
        )
    return "\n".join(lines)


def render_semantic(query: str, hits: Sequence[SemanticHit]) -> str:
    if not hits:
        return f"No messages found for '{query}'"
    blocks = []
    for h in hits:
        blocks.append(
            f"### [{h.rank}] {_one_line(h.conversation_title)}\n"
            f"**Similarity**: {h.similarity:.4f}\n"
            f"**Source**: {h.source} · **Date**: {h.date or 'unknown'} · "
            f"**conv_id**: {h.conversation_id}\n\n"
            f"> {_one_line(h.preview)}"
        )
    return "\n\n".join(blocks)


def render_summaries(
    query: str, extract: str, hits: Sequence[SummaryHit], warnings: Sequence[str] = ()
) -> str:
    lines = [f"> warning: {w}" for w in warnings]
    if warnings:
        lines.append("")
    if not hits:
        lines.append(f"No summaries found for '{query}'")
        return "\n".join(lines)
    n = 0
    for h in hits:
        tag = f"[{h.conversation_id} · {h.date or 'unknown'}] [{h.summary_id}]"
        for item in h.items:
            n += 1
            lines.append(f"{n}. {item} {tag}")
    return "\n".join(lines)
