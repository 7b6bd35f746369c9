"""The entity service: one store's semantic layer and memories as a snapshot kept in
step with the store (its reload protocol), loads of a semantic layer, searches with the
Cypher filter and the vector channel, ``inspect``, and memory writes.

:class:`~layersearch.api.Layersearch` hands it out as ``ls.entities`` and delegates to
it, as it does to the conversation and vault services.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.calls import checkpoint
from layersearch.calls import current as current_call
from layersearch.corpora.entities import process
from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.corpus import EntityCorpus, bounded_request
from layersearch.corpora.entities.coverage import coverage_of
from layersearch.corpora.entities.detail import checked_ids, inspect
from layersearch.corpora.entities.documents import entity_doc, memory_doc
from layersearch.corpora.entities.memories import (
    MemoryRow,
    check_catalog_queries,
    check_page,
    checked_memories,
    file_memories,
)
from layersearch.corpora.entities.vector import (
    ENTITY_CORPUS,
    DenseGetter,
    EmbedderGetter,
    VectorSearch,
)
from layersearch.corpora.snapshot import (
    CoverageBuild,
    EntityTables,
    Snapshot,
    changed_entities,
    open_snapshot,
    publish_snapshot,
    release_freed_memory,
    restamp,
    tables_from_objects,
    tables_from_store,
)
from layersearch.errors import (
    ConfigError,
    LayersearchError,
    ModelLoadError,
    NotFound,
    StoreEmpty,
    StoreError,
)
from layersearch.ranking.fulltext import FullTextIndex, open_or_rebuild
from layersearch.semantic.model import Catalog, EdgeRecord, Entity
from layersearch.store.base import Store, catalog_rows
from layersearch.store.duckdb import memory_number
from layersearch.textcheck import check_id, invisible_at
from layersearch.types import LoadReport, SearchRequest, SearchResponse

if TYPE_CHECKING:
    import networkx as nx

    from layersearch.types import EmbedReport, InspectResponse, Memory


# The facade's logger name, which its messages (and the tests and users filtering on it)
# have always carried.
log = logging.getLogger("layersearch.api")

#: snapshots taken before giving up on a store that keeps changing under the reload
_RELOAD_TRIES = 20


class EntityService:
    """The semantic layer and memories of one store. Thread-safe.

    ``dense`` gives the :class:`DenseCorpus` of a corpus name for the configured embedder
    (raising :class:`EmbeddingUnavailable` when there is none); ``embedder`` gives the
    configured embedder, or None.
    """

    def __init__(self, store: Store, dense: DenseGetter, embedder: EmbedderGetter) -> None:
        self.store = store
        self.vectors = VectorSearch(store, dense, embedder)
        self._lock = threading.RLock()
        self._corpus: EntityCorpus | None = None
        self._gen = -1
        self._graph: nx.MultiDiGraph | None = None
        self._pending: list[str] = []
        #: (generation, tables, their entities in table order, a process building their
        #: schema index or None) just written by load_catalog
        self._built: tuple[int, EntityTables, list[Entity], CoverageBuild | None] | None = None
        self._ranking = EntityRankingConfig()

    @property
    def ranking(self) -> EntityRankingConfig:
        """The ranking's settings and the stages switched off (``[ranking.entities]``)."""
        return self._ranking

    @ranking.setter
    def ranking(self, value: EntityRankingConfig) -> None:
        with self._lock:
            if value.index != self._ranking.index:
                # other index-time settings: the next search takes the snapshot again,
                # and its schema index is rebuilt when it was built with others
                self._corpus = None
            self._ranking = value

    # -- the snapshot and its reload protocol ---------------------------------------------------

    @property
    def _ft_dir(self) -> Path:
        return Path(self.store.index_dir) / "entities"

    def corpus(self) -> EntityCorpus:
        """The current snapshot, reloaded when the store changed since it was taken."""
        return self._current()[0]

    def _current(self) -> tuple[EntityCorpus, int | None]:
        """The current snapshot and the store generation it was taken at (None when it
        is not known to be current: the next call takes another one)."""
        gen = self.store.generation()
        with self._lock:
            if self._corpus is None or gen != self._gen:
                self._reload()
            assert self._corpus is not None
            return self._corpus, (self._gen if self._gen >= 0 else None)

    def require_content(self) -> EntityCorpus:
        """The current snapshot, or :class:`StoreEmpty` when the store holds no semantic
        layer and no memories (what a read command says instead of "no results")."""
        corpus = self.corpus()
        if not corpus.entities and not corpus.memories:
            raise StoreEmpty(
                f"store {self.store.location} is empty (no semantic layer, no memories): "
                "run 'layersearch load PATH' first"
            )
        return corpus

    @property
    def _snapshot_dir(self) -> Path:
        return Path(self.store.index_dir) / "snapshot"

    def _reload(self) -> None:
        """Take a snapshot whose memories, entity tables and full-text searcher all describe
        one store generation, retried while writers move the store under it.

        Full-text content for a generation is committed only after the generation file
        shows it (a writer bumps the store, then its index; a reload starts only once the
        file has caught up with the database). So a searcher opened while the file stays
        at ``gen`` holds no later document, and its marker says it holds all of ``gen``'s."""
        corpus: EntityCorpus | None = None
        for attempt in range(_RELOAD_TRIES):
            gen, rows = self.store.load_memories_at()
            memories = {m.id: m for m in rows}
            if self.store.generation() != gen:
                # A writer committed and has not published its generation yet: wait for
                # it; after a while, repair the file (the writer may have died in between).
                if attempt >= _RELOAD_TRIES // 2:
                    self.store.publish_generation(self.store.stored_generation())
                time.sleep(0.001 * (attempt + 1))
                continue
            corpus, rebuilt = self._take(gen, memories)
            if self.store.generation() == gen and (
                not rebuilt or self.store.stored_generation() == gen
            ):
                self._install(corpus, gen, rebuilt)
                return
            log.info("the store changed while a snapshot was taken; taking it again")
        if corpus is None:
            raise StoreError(
                f"store {self.store.location}: its generation file keeps disagreeing with the "
                "database; check that its directory is writable"
            )
        # Never called current: the next call takes another one.
        self._install(corpus, -1, True)

    def _install(self, corpus: EntityCorpus, gen: int, rebuilt: bool) -> None:
        self._corpus = corpus
        self._gen = gen
        if self._graph is not None:
            from layersearch.semantic.graphing import sync_graph

            changed = sync_graph(
                self._graph, corpus.entities.values(), corpus.edges(), corpus.memories.values()
            )
            log.debug("graph synced: %d nodes, %d relationships changed", *changed)
        if rebuilt:
            # Indexing read every row of the mapped tables: keep them in the page cache only.
            corpus.snapshot.release_pages()
            release_freed_memory()
        process.settle_heap()

    def _take(self, gen: int, memories: dict[str, Memory]) -> tuple[EntityCorpus, bool]:
        """The snapshot of generation ``gen`` (its memories given); whether the entity
        tables or the full-text index were rebuilt from the store."""
        stamp = str(gen)
        previous = self._corpus
        snapshot, why = open_snapshot(self._snapshot_dir, stamp)
        rebuilt = snapshot is None
        built = self._built if self._built is not None and self._built[0] == gen else None
        objects = None
        if snapshot is None:
            # Derived data, like the full-text index: rebuilt from the store whenever it does
            # not reflect this generation (re-stamped when only memories or vectors changed).
            if why is not None and why.startswith("corrupt"):
                msg = f"entity snapshot was {why}; rebuilt it from the store"
                log.warning(msg)
                self._pending.append(msg)
            if built is not None:
                log.info("entity snapshot %s; taking the rows just written", why)
                tables, objects = built[1], built[2]
            else:
                log.info("entity snapshot %s; reading the semantic layer from the store", why)
                tables = tables_from_store(self.store)
            snapshot = publish_snapshot(self._snapshot_dir, tables, stamp)
            del tables
        index = self.ranking.index
        boosts = index.field_weights()
        corpus = EntityCorpus.from_snapshot(
            snapshot, memories, FullTextIndex.create(boosts, None), index
        )
        if rebuilt:
            # Published with its schema index, so no later search (of any process) builds it.
            corpus.ensure_coverage(objects, None if built is None else built[3])
        opened = open_or_rebuild(
            self._ft_dir,
            boosts,
            stamp,
            lambda: corpus.documents(rows=objects),
            update=lambda: self._update_fulltext(previous, corpus, objects, stamp),
            warn=False,  # reported below, to the response's warnings as well
        )
        corpus.fulltext = opened.index
        if opened.how == "rebuilt":
            # Missing with content in the store means someone deleted it: say so once.
            # (A read-only store's indexes live in a cache: missing there on first use.)
            lost = (
                opened.reason == "missing"
                and bool(len(corpus.entities) or memories)
                and getattr(self.store, "read_only", None) is None
            )
            if opened.damaged or lost:
                msg = f"full-text index was {opened.reason}; rebuilt it from the store"
                log.warning(msg)
                self._pending.append(msg)
            if opened.kept is not None:
                self._pending.append(
                    f"full-text index kept in memory for this process ({opened.kept})"
                )
        rebuilt = rebuilt or opened.how != "opened"
        return corpus, rebuilt

    def _update_fulltext(
        self,
        previous: EntityCorpus | None,
        corpus: EntityCorpus,
        objects: list[Entity] | None,
        stamp: str,
    ) -> FullTextIndex | None:
        """The previous corpus's index brought to ``corpus`` by writing the difference, when
        the index on disk is exactly that previous snapshot's; None otherwise (rebuild)."""
        if not (
            previous is not None
            and previous.fulltext.path is not None
            and previous.fulltext.path.parent == self._ft_dir
            and previous.fulltext.is_current()
            and FullTextIndex.read_stamp(self._ft_dir) == str(self._gen)
        ):
            return None
        stale, fresh = changed_entities(previous.snapshot.tables, corpus.snapshot.tables)
        old = {d.id: d for d in previous.documents(entities=False)}
        new = {d.id: d for d in corpus.documents(entities=False)}
        stale += [i for i, d in old.items() if new.get(i) != d]
        tables = corpus.snapshot.tables
        adds = chain(
            (
                entity_doc(e, h)
                for e, h in zip(
                    _entities_at(tables, fresh, objects), tables.hashes_at(fresh), strict=True
                )
            ),
            (d for i, d in new.items() if old.get(i) != d),
        )
        n = previous.fulltext.write(add=adds, delete=stale, stamp=stamp)
        log.info("full-text index updated: %d removed or changed, %d added", len(stale), n)
        return previous.fulltext

    def _after_write(self, gen_before: int, apply: Callable[[EntityCorpus, str], None]) -> None:
        """Apply an incremental update for our own memory write; reload if others wrote too.

        Only memory writes come through here: entities and edges are unchanged, so the
        entity snapshot stays valid for the new generation and is re-stamped."""
        gen = self.store.generation()
        with self._lock:
            corpus = self._corpus
            if corpus is None:
                return
            contiguous = gen == gen_before + 1 and self._gen == gen_before
            # Searches in flight keep the corpus they started with, unchanged: the write
            # goes to a copy with memory maps of its own, which replaces it (a memory
            # forgotten under a search that had found it failed it with a KeyError).
            corpus = corpus.with_own_memories()
            # A marker that matches the store only when nothing else wrote in between;
            # otherwise force a rebuild on the next reload.
            apply(corpus, str(gen) if contiguous else f"dirty-{gen}")
            if contiguous:
                self._corpus = corpus
                self._gen = gen
                restamp(corpus.snapshot, str(gen_before), str(gen))
            else:
                self._corpus = None

    # -- semantic layer ------------------------------------------------------------------------

    def load(
        self,
        path: str | os.PathLike[str],
        fmt: str = "auto",
        *,
        datasource: str | None = None,
        sample_values: int = 0,
    ) -> LoadReport:
        """Load (or re-load) a semantic layer; memories are kept, file memories added once."""
        return self.load_catalog(
            self.read_catalog(path, fmt, datasource=datasource, sample_values=sample_values)
        )

    @staticmethod
    def read_catalog(
        path: str | os.PathLike[str],
        fmt: str = "auto",
        *,
        datasource: str | None = None,
        sample_values: int = 0,
    ) -> Catalog:
        """The semantic layer at ``path``, read and checked as :meth:`load` would load it;
        nothing is written (the CLI reads before it creates a store)."""
        if not str(path).strip():
            raise ConfigError("load needs a path (a folder, file or database); got an empty one")
        from layersearch.semantic.importers import load_catalog
        from layersearch.semantic.importers.database import is_dsn

        # A database address stays a string: as a Path its "//" would collapse to "/".
        where = str(path) if is_dsn(str(path)) else Path(path)
        catalog = load_catalog(where, fmt, datasource=datasource, sample_values=sample_values)
        _check_catalog(catalog)
        return catalog

    def load_catalog(self, catalog: Catalog) -> LoadReport:
        names = _check_catalog(catalog)
        with self._lock, process.gc_paused():
            return self._load_rows(catalog, names)

    def _start_coverage(
        self,
        keep: list[Entity],
        ents: list[Entity],
        kept: list[EdgeRecord],
        edges: list[EdgeRecord],
    ) -> CoverageBuild | None:
        """Start building the schema index of the rows a load is about to write (the
        entities ``keep`` and ``ents``, the edges ``kept`` and ``edges``), in a forked
        process beside the rest of the load (large loads only: a fork of a big process
        and the wait cost more than a small index takes to build)."""
        if len(keep) + len(ents) < process.FORK_MIN_ENTITIES:
            return None
        return CoverageBuild.start(
            self._snapshot_dir,
            lambda: coverage_of(
                {e.id: e for e in chain(keep, ents)},
                chain(kept, edges),
                config=self.ranking.index,
            ),
        )

    def _load_rows(self, catalog: Catalog, names: list[str]) -> LoadReport:
        """:meth:`load_catalog` under the lock."""
        before = self.corpus()
        # File memories resolve against what the store will hold after this load: the
        # other datasources as they are, these as the catalog defines them. That needs
        # no snapshot in between, so the load costs one reload, not two.
        keep = [e for e in before.entities.values() if e.datasource not in names]
        kept = [
            e
            for src in before.edges_out
            if src.split(".", 1)[0] not in names
            for e in before.edges_out[src]
        ]
        ents, edges = catalog_rows(catalog, names)
        job = self._start_coverage(keep, ents, kept, edges)
        try:
            # The tables of the store as this load leaves it: their resolver is the one the
            # next snapshot serves, and they become that snapshot unless another write
            # comes between (then it is read back from the store).
            tables, objects = tables_from_objects([*keep, *ents], [*kept, *edges])
            del keep, kept
            tables.complete()
            resolver = Snapshot(tables, None).resolver(before.memories.__contains__)
            skipped = list(catalog.skipped)
            batch = file_memories(catalog, resolver, before.memories.values(), skipped)
            del resolver  # it holds the tables
            before_gen = self._gen
            n, gen = self.store.replace_rows(catalog, names, ents, edges)
            del ents, edges
            # One transaction for all file memories; the next snapshot indexes entities and
            # memories by difference in one pass.
            saved, mem_gen = self.store.add_memories_at(batch)
            if batch:
                # Memories leave entities alone, but another writer may have come between.
                gen = mem_gen if mem_gen == gen + 1 else -1
            if gen >= 0 and gen == before_gen + 1 + bool(batch):
                # Nobody else wrote since the last snapshot: the store holds exactly the
                # rows of ``tables``, so the next snapshot is them instead of being read
                # back (and decoded again for full text), with the schema index ``job``
                # builds from the same rows.
                self._built = (gen, tables, objects, job)
            del tables, objects
            try:
                corpus = self.corpus()
            finally:
                if self._built is not None:
                    # The rows' objects go only now, after the reload trimmed the heap.
                    self._built = None
                    release_freed_memory()
            return LoadReport(
                datasources=names,
                models=len(catalog.models),
                entities=n,
                memories_added=len(saved),
                skipped=skipped,
                unresolved_tags=_unresolved_tags(corpus),
            )
        finally:
            if job is not None:
                job.cancel()  # unless the snapshot took its index

    # -- search -------------------------------------------------------------------------------

    @staticmethod
    def request(**kwargs: Any) -> SearchRequest:
        """A SearchRequest of these fields, or a ConfigError naming what is wrong."""
        try:
            return SearchRequest(**kwargs)
        except ValueError as exc:
            raise ConfigError(_pydantic_message(exc)) from exc

    def search(self, request: SearchRequest | None = None, /, **kwargs: Any) -> SearchResponse:
        """Search the semantic layer and memories. Takes a SearchRequest or its fields."""
        if request is None:
            request = self.request(**kwargs)
        elif kwargs:
            raise ConfigError("pass either a SearchRequest or keyword arguments, not both")
        elif not isinstance(request, SearchRequest):
            raise ConfigError(
                f"search takes a SearchRequest or keyword arguments, not {type(request).__name__}"
                " (e.g. search(question=...))"
            )
        # One read of the store's generation per search: the vector channel ranks the
        # vectors of the generation the snapshot was taken at.
        corpus, gen = self._current()
        warnings = self._take_pending()
        channels = corpus.check_request(request)
        request, cut = bounded_request(request)
        warnings += [cut] if cut else []
        vector_warnings: list[str] = []
        vector = self.vectors.channel(corpus, request, vector_warnings, gen)
        words = self.vectors.words(request, vector_warnings, gen, self.ranking.word_neighbours())
        allow = None
        if request.cypher_filter is not None and request.cypher_filter.strip():
            allow = self.filter_ids(request.cypher_filter, request.params)
            checkpoint()
            if not allow:
                warnings.append("the cypher filter matched no entities or memories: no results")
                return SearchResponse(results=[], warnings=warnings)
        checkpoint()
        resp = corpus.search(
            request,
            channels=channels,
            allow=allow,
            warnings=warnings,
            vector=vector,
            words=words,
            ranking=self.ranking,
        )
        resp.warnings.extend(vector_warnings)
        return resp

    def warm(self) -> list[str]:
        """Do now what the first search would do: build the snapshot, load an in-process
        embedding model (and run it once), read the stored vectors, and run one search's
        code paths. Returns why the dense channel is not ready (empty when it is, or when
        no embedder is configured); warnings kept for the next search stay kept.
        """
        self.corpus()
        problems: list[str] = []
        embedder = self.vectors.embedder()
        if embedder is not None:
            load = getattr(embedder, "load", None)
            try:
                if callable(load):
                    load()
                self.vectors.dense(ENTITY_CORPUS).warm()
            except LayersearchError as exc:
                problems.append(str(exc))
        with self._lock:
            kept = list(self._pending)
        try:
            self.search(question="warm up the search path", max_results=1)
        finally:
            with self._lock:
                self._pending[:0] = kept
        return problems

    def embed(self, progress: Any = None, again: bool = False) -> list[EmbedReport]:
        """Compute the stored vectors of the semantic layer and memories, and of the
        catalog's words (``ranking.neighbours``); incremental, resumable (``again``:
        every text, stored or not)."""
        from layersearch.corpora.dense import DenseDoc, entity_docs, memory_text
        from layersearch.corpora.entities.neighbours import WORDS_CORPUS, word_docs
        from layersearch.ranking.vector import EXACT_THRESHOLD, ann_available

        corpus = self.corpus()
        docs = entity_docs(corpus.entities.values())
        docs += [DenseDoc(m.id, memory_text(m)) for m in corpus.memories.values()]
        words = word_docs(corpus.entities.values())
        dense = self.vectors.dense(ENTITY_CORPUS)
        reports = [
            dense.embed(docs, progress=progress, again=again),
            self.vectors.dense(WORDS_CORPUS).embed(words, progress=progress, again=again),
        ]
        # a catalog large enough for approximate search gets its graph now, not on the
        # first search after (540k vectors: about a minute)
        if reports[0].documents >= EXACT_THRESHOLD and ann_available():
            relabel = getattr(progress, "relabel", None)  # (the CLI's bar says so)
            if relabel is not None:
                relabel("building the search graph")
            dense.keep_graphs()
        return reports

    def _take_pending(self) -> list[str]:
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def graph(self) -> nx.MultiDiGraph:
        """The entity graph (networkx, via layersearch.graph), built on first use."""
        corpus = self.corpus()
        with self._lock:
            if self._graph is None:
                from layersearch.semantic.graphing import build_graph

                self._graph = build_graph(
                    corpus.entities.values(), corpus.edges(), corpus.memories.values()
                )
            return self._graph

    def filter_ids(self, cypher: str, params: dict[str, Any] | None = None) -> set[str]:
        """Ids a read-only openCypher filter returns (hidden entities never included)."""
        from layersearch.graph.cypher import run_filter

        corpus = self.corpus()
        budget = current_call()
        ids = run_filter(
            self.graph(),
            cypher,
            params or {},
            stop=None if budget is None else budget.check,
            stop_at=math.inf if budget is None else budget.deadline,
        )
        return {i for i in ids if isinstance(i, str) and corpus.visible(i)}

    def inspect(self, ids: Iterable[str]) -> InspectResponse:
        """Full detail for ids (entities, hidden ones included when named exactly, and memories)."""
        checked = checked_ids(ids)
        return inspect(self.corpus(), checked)

    # -- memories -----------------------------------------------------------------------------

    def save_memories(self, items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Save many memories in one write: each item has ``learning`` and optionally
        ``description``, ``entities`` and ``query``, checked as :meth:`save_memory` checks
        one; nothing is saved when any of them is refused (the error names its position)."""
        if isinstance(items, Mapping | str) or not isinstance(items, Sequence):
            raise ConfigError("save_memories takes a list of memories (mappings with learning)")
        batch = checked_memories(self.corpus().resolver, items)
        if not batch:
            return []
        with self._lock:
            return self._save(batch)

    def _save(self, batch: list[MemoryRow]) -> list[Memory]:
        before = self._gen
        if len(batch) == 1:
            saved = [self.store.add_memory(*batch[0])]
        else:
            saved = self.store.add_memories_at(batch)[0]

        def apply(corpus: EntityCorpus, stamp: str) -> None:
            corpus.fulltext.write(add=[memory_doc(m) for m in saved], stamp=stamp)
            for m in saved:
                corpus.memory_added(m)
            if self._graph is not None:
                from layersearch.semantic.graphing import add_memory

                for m in saved:
                    add_memory(self._graph, m)

        self._after_write(before, apply)
        if self.vectors.embedder() is not None:
            from layersearch.corpora.dense import DenseDoc, memory_text

            try:
                self.vectors.dense(ENTITY_CORPUS).add_many(
                    [DenseDoc(m.id, memory_text(m)) for m in saved]
                )
            except LayersearchError as exc:
                log.warning("%d memories saved without a vector: %s", len(saved), exc)
        return saved

    def get_memory(self, memory_id: str) -> Memory:
        mid = f"memory:{memory_number(memory_id)}"
        m = self.corpus().memories.get(mid)
        if m is None:
            raise NotFound(f"no memory {memory_id}: `layersearch memory list` shows the ids")
        return m

    def list_memories(self, limit: int = 50, offset: int = 0) -> list[Memory]:
        check_page(limit, offset)
        ordered = sorted(self.corpus().memories.values(), key=lambda m: -memory_number(m.id))
        return ordered[offset : offset + limit]

    def forget_memory(self, memory_id: str) -> None:
        mid = f"memory:{memory_number(memory_id)}"
        with self._lock:
            self.corpus()
            before = self._gen
            self.store.delete_memory(mid)

            def apply(corpus: EntityCorpus, stamp: str) -> None:
                corpus.fulltext.write(delete=[mid], stamp=stamp)
                corpus.memory_removed(mid)
                if self._graph is not None:
                    from layersearch.semantic.graphing import remove_memory

                    remove_memory(self._graph, mid)

            self._after_write(before, apply)


def _check_catalog_ids(catalog: Catalog) -> None:
    """Refuse a catalog whose names make an id holding an invisible character (a NUL, a
    zero-width space, a right-to-left override: an id that prints like another one),
    naming the file it came from."""
    sources = {m.id: m.source for m in catalog.models}
    for e in catalog.entities():
        if invisible_at(e.id) is not None:
            where = sources.get(f"{e.datasource}.{e.model}") if e.model else None
            check_id(e.id, f"{where}: {e.kind} id" if where else f"{e.kind} id", ModelLoadError)


def _unresolved_tags(corpus: EntityCorpus) -> list[str]:
    """Memory tags that name no visible entity (a load reports them)."""
    return [
        f"{m.id} → {t}"
        for m in corpus.memories.values()
        for t in m.entities
        if not t.startswith("memory:") and not corpus.visible(t)
    ]


def _entities_at(
    tables: EntityTables, positions: Iterable[int], objects: list[Entity] | None
) -> Iterator[Entity]:
    """The entities at ``positions`` (ascending) of ``tables``: taken from ``objects`` (the
    same entities in table order, when the caller has them) or decoded from their rows."""
    for j in positions:
        yield tables.entity(int(j)) if objects is None else objects[int(j)]


def _pydantic_message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for err in errors():
            loc = ".".join(str(x) for x in err.get("loc", ()))
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        return "invalid request: " + "; ".join(parts)
    return f"invalid request: {exc}"


def _check_catalog(catalog: Catalog) -> list[str]:
    """The datasources a catalog defines; an error when none, when a name makes an id
    holding an invisible character, or when a memory's query is bad (refused before
    anything is written: a load either happens or not)."""
    names = catalog.datasource_names()
    if not names:
        raise ConfigError("nothing to load: the files define no datasource or model")
    _check_catalog_ids(catalog)
    check_catalog_queries(catalog)
    return names
