"""What a corpus gives the search across corpora (``scope``): the :class:`Corpus` protocol
and :class:`ScopeRun`, the context of one scoped search that a corpus reads.

A corpus is one source of hits: its name in ``scope`` and in a hit's ``source``, the
prefix of its hit ids, the request fields that filter it alone, how it ranks its own
hits for a question (its pipeline), the analysed words of each hit's full-text document
(what the places of the fused list read), and how ``inspect`` opens its ids. The
registry (:mod:`layersearch.corpora.registry`) lists the corpora; ``scope``, the API,
the server and the CLI read it instead of naming corpora."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from layersearch.types import Hit, InspectResponse, SearchRequest

if TYPE_CHECKING:
    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.corpora.entities.service import EntityService
    from layersearch.corpora.vault.search import VaultService
    from layersearch.embed.base import Embedder

__all__ = ["Corpus", "Ranked", "ScopeRun", "Services"]


@dataclass
class Ranked:
    """One source's hits, best first, and what it had to say."""

    hits: list[Hit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    empty: bool = False  # nothing loaded in this corpus
    #: entity hits moved first because the best memory is tagged with them
    lifted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Services:
    """The services of one store a corpus may read (the later ones opened on first use)."""

    entities: EntityService
    conversations: Callable[[], ConversationService]
    vault: Callable[[], VaultService]
    embedder: Callable[[], Embedder | None]


@dataclass
class ScopeRun:
    """One scoped search (or inspect) as the corpora see it: the request, the sources it
    searches (in the fusion's tie order), the store's services and what one corpus left
    for another within this search (``cache``: the entity search runs once for entities
    and memories)."""

    req: SearchRequest
    sources: tuple[str, ...]
    services: Services
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str | None:
        """The question, None when there is none (or only blanks)."""
        q = self.req.question
        return q if q is not None and q.strip() else None

    @property
    def depth(self) -> int:
        """How many hits each source ranks: ``max_per_source``, else ``max_results``."""
        return self.req.max_per_source or self.req.max_results


class Corpus(Protocol):
    """One source of a scoped search. Attributes:

    - ``source``: the hits' ``source`` (``conversation``);
    - ``scope``: its name in ``scope`` (``conversations``); ``also``: the other sources
      that name searches (``semantic`` searches memories too);
    - ``prefix``: what each hit id starts with (``conversation:``; ``""`` for entity ids);
      ``opened_by``: the source whose :meth:`inspect` opens its ids (None: its own);
    - ``filters``: the ``SearchRequest`` fields that filter this corpus alone;
      ``what``: how a warning names it (``the vault``);
    - ``tie``: its place among sources' hits of the same place (lower first);
    - ``in_all``: whether ``scope=all`` searches it (else only when ``scope`` names it).
    """

    source: str
    scope: str
    also: tuple[str, ...]
    prefix: str
    opened_by: str | None
    filters: tuple[str, ...]
    what: str
    tie: int
    in_all: bool

    def search(self, run: ScopeRun) -> Ranked:
        """Its hits for ``run.req``, best first, at most ``run.depth`` (its own ranking
        pipeline), and its warnings; ``empty`` when nothing of it is in the store."""
        ...

    def documents(
        self, run: ScopeRun, hits: Sequence[Hit], asked: list[str]
    ) -> list[frozenset[str]]:
        """The analysed words of each hit's full-text document (``asked``: the question's
        analysed words, for a corpus that reads only those)."""
        ...

    def inspect(self, run: ScopeRun, ids: Sequence[str], out: InspectResponse) -> None:
        """Open ``ids`` (each starting with :attr:`prefix`) into ``out``; an unknown one
        is a warning in ``out.warnings``."""
        ...

    def ids(self, run: ScopeRun) -> Iterable[str]:
        """Every id ``inspect`` opens (to resolve an id a table printed shortened)."""
        ...
