"""A vault of markdown notes (Obsidian-style): notes, chunks and filters.

See docs/vault.md for the rules (slugs, tags, dates, boilerplate).
"""

from __future__ import annotations

from .chunking import Chunk, chunk_note, note_scores, sections
from .config import (
    CONFIG_FILE,
    VaultConfig,
    VaultFilters,
    load_config,
    normalize_tag,
    parse_iso_date,
    validate_filters,
)
from .notes import (
    Note,
    SyncPlan,
    iter_notes,
    load_note,
    matches,
    parse_date,
    parse_note,
    plan_sync,
    resolve_slug,
    scan_vault,
    slug_for,
)

__all__ = [
    "CONFIG_FILE",
    "Chunk",
    "Note",
    "SyncPlan",
    "VaultConfig",
    "VaultFilters",
    "chunk_note",
    "iter_notes",
    "load_config",
    "load_note",
    "matches",
    "normalize_tag",
    "note_scores",
    "parse_date",
    "parse_iso_date",
    "parse_note",
    "plan_sync",
    "resolve_slug",
    "scan_vault",
    "sections",
    "slug_for",
    "validate_filters",
]
