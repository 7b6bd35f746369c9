"""The corpora a scoped search can name, in one list: ``scope``, the API, the server and
the CLI read it instead of naming corpora. Adding a corpus is a folder with a class of
the :class:`~layersearch.corpora.protocol.Corpus` protocol and one line of
:data:`CORPORA` (or :func:`registered`, for the time of a ``with`` block)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from layersearch.corpora.protocol import Corpus
from layersearch.corpora.scope_sources import (
    ConversationCorpus,
    MemoryCorpus,
    SemanticCorpus,
    SummaryCorpus,
    VaultCorpus,
)
from layersearch.errors import ConfigError

__all__ = [
    "CORPORA",
    "all_names",
    "by_source",
    "corpus_of_id",
    "registered",
    "scope_names",
    "scoped_id",
    "source_order",
    "sources_of",
]

#: every corpus, in the order of the scope names (``semantic, memory, conversations,
#: vault, summaries``): a scoped search ranks them in this order
CORPORA: list[Corpus] = [
    SemanticCorpus(),
    MemoryCorpus(),
    ConversationCorpus(),
    VaultCorpus(),
    SummaryCorpus(),
]


def scope_names() -> tuple[str, ...]:
    """The names ``scope`` takes (``all`` aside), in their canonical order."""
    return tuple(c.scope for c in CORPORA)


def all_names() -> tuple[str, ...]:
    """The names ``scope=all`` searches (the corpora whose ``in_all`` is set)."""
    return tuple(c.scope for c in CORPORA if c.in_all)


def by_source(source: str) -> Corpus:
    """The corpus whose hits carry ``source``."""
    for c in CORPORA:
        if c.source == source:
            return c
    raise KeyError(source)


def source_order() -> tuple[str, ...]:
    """The sources in the fusion's tie order: among hits of the same place, the lower
    ``tie`` first (then the registry's order)."""
    return tuple(c.source for c in sorted(CORPORA, key=lambda c: c.tie))


def sources_of(names: Sequence[str]) -> tuple[str, ...]:
    """The sources the scope names search (each name's corpus and its ``also``), in the
    fusion's tie order."""
    wanted: set[str] = set()
    for c in CORPORA:
        if c.scope in names:
            wanted.update((c.source, *c.also))
    return tuple(s for s in source_order() if s in wanted)


def corpus_of_id(hit_id: str) -> Corpus:
    """The corpus a hit id belongs to: the one with the longest prefix it starts with
    (entity ids, with no prefix, the semantic layer's)."""
    key = hit_id.strip()
    found = [c for c in CORPORA if key.startswith(c.prefix)]
    if not found:
        raise ConfigError(f"no corpus has ids like {hit_id!r}")
    return max(found, key=lambda c: len(c.prefix))


def scoped_id(hit_id: str) -> bool:
    """Whether ``hit_id`` is opened by a corpus other than the entity store's (entity ids
    and ``memory:N``): then ``inspect`` needs no semantic layer loaded."""
    c = corpus_of_id(hit_id)
    return (c.opened_by or c.source) != CORPORA[0].source


@contextmanager
def registered(corpus: Corpus) -> Iterator[Corpus]:
    """``corpus`` in the registry for the time of the block (a corpus made by a test, or
    by a program embedding layersearch), removed after it."""
    taken = [c for c in CORPORA if c.source == corpus.source or c.scope == corpus.scope]
    if taken or corpus.scope == "all":
        raise ConfigError(f"a corpus named {corpus.scope!r} ({corpus.source}) is registered")
    CORPORA.append(corpus)
    try:
        yield corpus
    finally:
        CORPORA.remove(corpus)
