"""The object a user opens on a store: load, search, inspect, memories.

    >>> from layersearch import Layersearch
    >>> ls = Layersearch(":memory:")            # or a path, or $LAYERSEARCH_STORE
    >>> report = ls.load("models/")
    >>> ls.search(question="monthly revenue by store").results[0].id

It keeps an in-memory snapshot of the store (entities, memories, indexes) and
refreshes it when the store's generation changes, whoever changed it.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.corpora.entities.corpus import EntityCorpus
from layersearch.corpora.entities.detail import MAX_INSPECT_IDS
from layersearch.corpora.entities.memories import (
    MAX_DESCRIPTION_CHARS,
    MAX_LEARNING_CHARS,
    check_query,
    memory_identity,
)
from layersearch.corpora.entities.process import FORK_MIN_ENTITIES, one_blas_thread
from layersearch.corpora.entities.service import EntityService
from layersearch.corpora.entities.vector import ENTITY_CORPUS, NO_EMBEDDER, corpus_model
from layersearch.errors import EmbeddingUnavailable
from layersearch.plan import answer, physical
from layersearch.ranking import generations
from layersearch.semantic.model import Catalog
from layersearch.store.base import Store
from layersearch.store.location import (
    DEFAULT_STORE,
    open_store,
    resolve_store_location,
    store_missing,
)
from layersearch.types import (
    EmbedReport,
    InspectResponse,
    LoadReport,
    Memory,
    SearchRequest,
    SearchResponse,
)

if TYPE_CHECKING:
    # Dense vectors (numpy-heavy embedders, models) are imported when first used: a
    # search without an embedder never needs them.
    import networkx as nx

    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.corpora.dense import DenseCorpus
    from layersearch.corpora.scope import ScopeService
    from layersearch.corpora.vault.search import VaultService
    from layersearch.embed.base import Embedder
    from layersearch.plan.browse import Browser

__all__ = [
    "Layersearch",
    "DEFAULT_STORE",
    "ENTITY_CORPUS",
    "FORK_MIN_ENTITIES",
    "MAX_DESCRIPTION_CHARS",
    "MAX_INSPECT_IDS",
    "MAX_LEARNING_CHARS",
    "check_query",
    "memory_identity",
    "open_store",
    "resolve_store_location",
    "store_missing",
]


class Layersearch:
    """Search over one store. Thread-safe; cheap to keep open for a server's lifetime.

    It opens the store and the embedder and hands out one service per corpus:
    ``entities`` (the semantic layer and memories, which its own methods delegate to),
    ``conversations`` and ``vault``."""

    def __init__(
        self,
        store: str | os.PathLike[str] | Store | None = None,
        *,
        create: bool = True,
        embedder: str | Embedder | None = None,
        embedder_config: dict[str, Any] | None = None,
        ranking: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        """``ranking``: corpus → its ranking settings, as ``[ranking.<corpus>]`` of the
        settings file gives them (docs/ranking.md); unknown keys are refused."""
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        one_blas_thread()
        if isinstance(store, Store):
            self.store = store
        else:
            location = resolve_store_location(store)
            if location == ":memory:":
                # A throwaway store in a temporary directory (DuckDB + tantivy both need files).
                self._tmp = tempfile.TemporaryDirectory(prefix="layersearch-")
                location = str(Path(self._tmp.name) / "store.duckdb")
            self.store = open_store(location, create=create)
        self._lock = threading.RLock()
        if embedder is None:
            embedder = os.environ.get("LAYERSEARCH_EMBEDDER") or None
        if isinstance(embedder, str):
            from layersearch.embed import make_embedder, resolve_spec

            # Building an embedder is cheap (models load on first use); a bad spec fails now.
            spec = resolve_spec(embedder, use_default=False)
            embedder = None if spec is None else make_embedder(spec, config=embedder_config)
        self.embedder: Embedder | None = embedder
        #: the conversation corpora's embedder, chosen on first use (conversation_dense)
        self._turns: Embedder | None = None
        self._turns_chosen = False
        self._dense: dict[str, DenseCorpus] = {}
        self.entities = EntityService(self.store, self.dense, lambda: self.embedder)
        self.set_ranking(ranking or {})
        # The index generations this object reads are locked against sweeps while it is open
        # (ranking.generations); closed, it lets go of them.
        self._index_root: Path | None = Path(self.store.index_dir)
        generations.using(self._index_root)

    def set_ranking(self, ranking: Mapping[str, Mapping[str, Any]]) -> None:
        """Each corpus's ranking settings (``[ranking.<corpus>]``), checked: an unknown
        corpus, key, value type or stage name is a :class:`ConfigError`."""
        from layersearch.corpora.settings import ranking_settings

        self.entities.ranking, self._scope_ranking = ranking_settings(ranking)
        if getattr(self, "_scope", None) is not None:
            self.scope.config = self._scope_ranking

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        for dense in list(self._dense.values()):
            dense.close()
        self.store.close()
        if self._index_root is not None:
            generations.done_with(self._index_root)
            self._index_root = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Layersearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dense vectors ------------------------------------------------------------------------

    def dense(self, corpus: str = ENTITY_CORPUS) -> DenseCorpus:
        """The vectors of one corpus for the configured embedder."""
        if self.embedder is None:
            raise EmbeddingUnavailable(NO_EMBEDDER)
        with self._lock:
            d = self._dense.get(corpus)
            if d is None:
                from layersearch.corpora.dense import DenseCorpus

                model = corpus_model(self.embedder, corpus)
                d = self._dense[corpus] = DenseCorpus(self.store, corpus, model)
            return d

    def conversation_dense(self, corpus: str) -> DenseCorpus:
        """The vectors of one conversation corpus: the configured embedder's, or those of
        LAYERSEARCH_TURN_EMBEDDER's model (:func:`layersearch.embed.conversation_embedder`),
        which fall back to the configured model's while a store has only those."""
        from layersearch.corpora.conversations.vectors import turn_vectors

        with self._lock:
            if not self._turns_chosen:
                from layersearch.embed import conversation_embedder

                self._turns, self._turns_chosen = conversation_embedder(self.embedder), True
        return turn_vectors(self.dense(corpus), self._turns, self._dense, self._lock)

    # -- conversations (corpora/conversations) ----------------------------------------------

    @property
    def conversations(self) -> ConversationService:
        """The conversation corpus: import, embed, and the three search contracts
        (a :class:`~layersearch.corpora.conversations.search.ConversationService`)."""
        with self._lock:
            service = getattr(self, "_conversations", None)
            if service is None:
                from layersearch.corpora.conversations.search import ConversationService

                service = ConversationService(self.store, self.conversation_dense)
                self._conversations = service
            return service

    # -- vault (corpora/vault) ----------------------------------------------------------------

    @property
    def vault(self) -> VaultService:
        """The vault of markdown notes in this store (``index``, ``search``, ``get_note``)."""
        with self._lock:
            service = getattr(self, "_vault", None)
            if service is None:
                from layersearch.corpora.vault.search import VaultService

                service = self._vault = VaultService(
                    self.store, embedder=lambda: corpus_model(self.embedder, "vault")
                )
            return service

    # -- every corpus at once (corpora/scope) --------------------------------------------------

    @property
    def scope(self) -> ScopeService:
        """Search across corpora (``search(scope=...)``) and ``inspect`` of any hit's id."""
        with self._lock:
            service = getattr(self, "_scope", None)
            if service is None:
                from layersearch.corpora.scope import ScopeService

                service = self._scope = ScopeService(
                    self.entities,
                    lambda: self.conversations,
                    lambda: self.vault,
                    lambda: self.embedder,
                    self._scope_ranking,
                )
            return service

    # -- the semantic layer and memories (corpora/entities) -------------------------------------

    def corpus(self) -> EntityCorpus:
        """The current snapshot, reloaded when the store changed since it was taken."""
        return self.entities.corpus()

    def require_content(self) -> EntityCorpus:
        """The current snapshot, or :class:`StoreEmpty` when the store holds no semantic
        layer and no memories (what a read command says instead of "no results")."""
        return self.entities.require_content()

    def load(
        self,
        path: str | os.PathLike[str],
        fmt: str = "auto",
        *,
        datasource: str | None = None,
        sample_values: int = 0,
    ) -> LoadReport:
        """Load (or re-load) a semantic layer; memories are kept, file memories added once."""
        return self.entities.load(path, fmt, datasource=datasource, sample_values=sample_values)

    @staticmethod
    def read_catalog(
        path: str | os.PathLike[str],
        fmt: str = "auto",
        *,
        datasource: str | None = None,
        sample_values: int = 0,
    ) -> Catalog:
        """Read and check the semantic layer at ``path`` as :meth:`load` would, writing
        nothing; :meth:`load_catalog` then loads it."""
        return EntityService.read_catalog(
            path, fmt, datasource=datasource, sample_values=sample_values
        )

    def load_catalog(self, catalog: Catalog) -> LoadReport:
        return self.entities.load_catalog(catalog)

    def search(self, request: SearchRequest | None = None, /, **kwargs: Any) -> SearchResponse:
        """Search the semantic layer and memories, or the corpora ``scope`` names
        (semantic, memory, conversations, vault, summaries, all). Takes a SearchRequest or its fields."""
        if request is None:
            request, kwargs = self.entities.request(**kwargs), {}
        if getattr(request, "scope", None) is None:
            resp = self.entities.search(answer.explained(request), **kwargs)
        else:
            resp = self.scope.search(request)
        return answer.finish(self.store, self.entities, request, resp)

    def warm(self) -> list[str]:
        """Do now what the first search would do (see :meth:`EntityService.warm`); returns
        why the dense channel is not ready (empty when it is, or without an embedder)."""
        return self.entities.warm()

    def embed(self, progress: Any = None, again: bool = False) -> list[EmbedReport]:
        """Compute the stored vectors of the semantic layer and memories (incremental,
        resumable; ``again``: every text, stored or not)."""
        return self.entities.embed(progress, again=again)

    def graph(self) -> nx.MultiDiGraph:
        """The entity graph (networkx, via layersearch.graph), built on first use."""
        return self.entities.graph()

    def filter_ids(self, cypher: str, params: dict[str, Any] | None = None) -> set[str]:
        """Ids a read-only openCypher filter returns (hidden entities never included)."""
        return self.entities.filter_ids(cypher, params)

    def inspect(self, ids: Iterable[str]) -> InspectResponse:
        """Full detail for ids (entities, hidden ones included when named exactly, memories,
        ``conversation:<message_id>`` messages and ``vault:<slug>`` notes)."""
        resp = self.scope.inspect(ids)
        physical.attach_to_inspect(self.store, resp)
        return resp

    @staticmethod
    def scoped_ids(ids: Iterable[str]) -> bool:
        """Whether any of ``ids`` is opened by another corpus than the semantic layer and
        memories (a conversation message, a vault note; ``corpora.registry``): then
        ``inspect`` needs no semantic layer loaded."""
        from layersearch.corpora.registry import scoped_id

        return any(scoped_id(i) for i in ids)

    def save_memory(
        self,
        learning: str,
        *,
        description: str | None = None,
        entities: Iterable[str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Memory:
        """Save a note or example query against entities (each must resolve)."""
        item = {"learning": learning, "description": description, "entities": entities}
        return self.entities.save_memories([{**item, "query": query}])[0]

    def save_memories(self, items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Save many memories in one write (see :meth:`EntityService.save_memories`)."""
        return self.entities.save_memories(items)

    def get_memory(self, memory_id: str) -> Memory:
        return self.entities.get_memory(memory_id)

    def list_memories(self, limit: int = 50, offset: int = 0) -> list[Memory]:
        return self.entities.list_memories(limit, offset)

    def forget_memory(self, memory_id: str) -> None:
        self.entities.forget_memory(memory_id)

    @property
    def browse(self) -> Browser:
        """Pages of datasources, models, measures and memories; one model described."""
        from layersearch.plan.browse import Browser

        return Browser(self.store, self.entities)
