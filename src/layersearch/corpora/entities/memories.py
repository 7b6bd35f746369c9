"""Checks on memories before they are written: their text, query and entity tags, and
the memories a semantic layer's files define."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from layersearch.errors import ConfigError, LayersearchError, LimitExceeded
from layersearch.semantic.canonical import Resolver
from layersearch.semantic.model import Catalog
from layersearch.textcheck import check_text, check_texts
from layersearch.types import Memory

MAX_DESCRIPTION_CHARS = 500
MAX_LEARNING_CHARS = 20_000

#: a memory as written: (learning, description, entity tags, query)
MemoryRow = tuple[str, str | None, list[str], dict[str, Any] | None]


def checked_memories(resolver: Resolver, items: Sequence[Mapping[str, Any]]) -> list[MemoryRow]:
    """The rows of ``items`` (mappings with ``learning`` and optionally ``description``,
    ``entities`` and ``query``), each checked by :func:`checked_memory`; a refusal names
    the item's position."""
    batch: list[MemoryRow] = []
    for n, item in enumerate(items):
        where = "" if len(items) == 1 else f"memory {n + 1} of {len(items)}: "
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}a memory is a mapping with learning, not {item!r:.40}")
        unknown = set(item) - {"learning", "description", "entities", "query"}
        if unknown:
            raise ConfigError(
                f"{where}unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                "a memory has learning, description, entities, query"
            )
        try:
            batch.append(checked_memory(resolver, **item))
        except LayersearchError as exc:
            raise type(exc)(f"{where}{exc}") from exc
    return batch


def checked_memory(
    resolver: Resolver,
    learning: str,
    description: str | None = None,
    entities: Iterable[str] | None = None,
    query: dict[str, Any] | None = None,
) -> MemoryRow:
    if not isinstance(learning, str) or not learning.strip():
        raise ConfigError("a memory needs non-empty learning text")
    if len(learning) > MAX_LEARNING_CHARS:
        raise LimitExceeded(
            f"learning text is {len(learning)} characters; the limit is {MAX_LEARNING_CHARS} "
            "(save the gist, or split it into several memories)"
        )
    if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
        raise ConfigError(
            f"description is {len(description)} characters; at most {MAX_DESCRIPTION_CHARS} allowed"
        )
    check_query(query)
    if isinstance(entities, str):
        entities = [entities]
    entities = list(entities or [])
    check_text(learning, "learning")
    check_text(description, "description")
    check_texts(entities, "an entity reference")
    tags: list[str] = []
    problems: list[str] = []
    for ref in entities or []:
        ids, warning = resolver.resolve_one(ref)
        if warning:
            problems.append(warning.replace(" dropped", ""))
        tags.extend(i for i in ids if i not in tags)
    if query is not None:
        res = resolver.resolve(None, query)
        problems.extend(w.replace(" dropped", "") for w in res.warnings)
        tags.extend(i for i in res.ids if i not in tags)
    if problems:
        raise ConfigError("cannot save the memory: " + "; ".join(problems))
    return learning.strip(), description, tags, query


def file_memories(
    catalog: Catalog, resolver: Resolver, stored: Iterable[Memory], skipped: list[str]
) -> list[MemoryRow]:
    """The memories ``catalog``'s files define that are not ``stored`` yet, their tags
    resolved with ``resolver``; what does not resolve is added to ``skipped``."""
    # A file memory is new unless a stored one has its learning and query (its
    # tags follow from the catalog, which may have changed since it was saved).
    existing = {memory_identity(m.learning, m.query) for m in stored}
    batch: list[MemoryRow] = []
    for spec in catalog.memories:
        if memory_identity(spec.learning, spec.query) in existing:
            continue
        tags: list[str] = []
        for ref in spec.entities:
            ids, warning = resolver.resolve_one(ref)
            if warning:
                skipped.append(f"{spec.source}: {warning}")
            tags.extend(i for i in ids if i not in tags)
        if spec.query:
            res = resolver.resolve(None, spec.query)
            skipped.extend(f"{spec.source}: {w}" for w in res.warnings)
            tags.extend(i for i in res.ids if i not in tags)
        item = (spec.learning, spec.description, tags, spec.query)
        if item not in batch:
            batch.append(item)
    return batch


def memory_identity(learning: str, query: dict[str, Any] | None) -> tuple[str, str | None]:
    """What makes a memory from a file the same memory on a reload: its learning and its
    query (keys sorted), not its tags, which are resolved against the catalog of the day."""
    return learning.strip(), None if query is None else json.dumps(query, sort_keys=True)


def check_query(query: Any) -> None:
    """A memory's query must be a bounded JSON object: it is stored as JSON and shown as JSON."""
    if query is None:
        return
    from layersearch.semantic.canonical import query_strings

    # The type, nesting depth and size checks (a bounded walk) come before json.dumps,
    # which recurses without a bound; nothing is resolved here.
    query_strings(query)
    try:
        text = json.dumps(query, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"query must hold only JSON values (strings, numbers, lists, objects): {exc}"
        ) from exc
    check_text(text, "query")


def check_catalog_queries(catalog: Catalog) -> None:
    """Refuse bad memory queries of a catalog's files before anything is written."""
    for spec in catalog.memories:
        try:
            check_query(spec.query)
        except ConfigError as exc:
            raise type(exc)(f"{spec.source}: {exc}") from exc


def check_page(limit: object, offset: object) -> None:
    if not _is_int(limit) or not _is_int(offset) or limit < 1 or offset < 0:  # type: ignore[operator]
        raise ConfigError(
            f"limit and offset must be integers, limit ≥ 1 and offset ≥ 0; got {limit!r}, {offset!r}"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
