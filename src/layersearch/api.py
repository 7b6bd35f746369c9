"""The object a user opens on a store: load, search, inspect, memories.

    >>> from layersearch import Layersearch
    >>> ls = Layersearch(":memory:")            # or a path, or $LAYERSEARCH_STORE
    >>> report = ls.load("models/")
    >>> ls.search(question="monthly revenue by store").results[0].id

It keeps an in-memory snapshot of the store (entities, memories, indexes) and
refreshes it when the store's generation changes, whoever changed it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersearch.corpora.entities import (
    ENTITY_BOOSTS,
    EntityCorpus,
    coverage_of,
    entity_doc,
    memory_doc,
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
    EmbeddingUnavailable,
    LayersearchError,
    LimitExceeded,
    NotFound,
    StoreEmpty,
    StoreError,
)
from layersearch.ranking.fulltext import FullTextIndex, build_index
from layersearch.semantic.model import Catalog, EdgeRecord, Entity
from layersearch.store.base import Store, catalog_rows
from layersearch.store.duckdb import DuckDBStore, memory_number
from layersearch.textcheck import check_text, check_texts
from layersearch.types import (
    EmbedReport,
    EntityInfo,
    InspectResponse,
    LoadReport,
    Memory,
    SearchRequest,
    SearchResponse,
)

if TYPE_CHECKING:
    # Dense vectors (numpy-heavy embedders, models) are imported when first used: a
    # search without an embedder never needs them.
    from layersearch.corpora.dense import DenseCorpus
    from layersearch.embed.base import Embedder

__all__ = ["Layersearch", "DEFAULT_STORE", "MAX_DESCRIPTION_CHARS", "MAX_LEARNING_CHARS"]

log = logging.getLogger("layersearch.api")

DEFAULT_STORE = "./.layersearch/store.duckdb"
MAX_DESCRIPTION_CHARS = 500
MAX_LEARNING_CHARS = 20_000
MAX_INSPECT_IDS = 200
#: the dense corpus of entities and memories (``layersearch.corpora.dense.ENTITY_CORPUS``)
ENTITY_CORPUS = "entities"
#: snapshots taken before giving up on a store that keeps changing under the reload
_RELOAD_TRIES = 20


def resolve_store_location(store: str | os.PathLike[str] | None) -> str:
    if store is None:
        store = os.environ.get("LAYERSEARCH_STORE") or DEFAULT_STORE
    return str(store)


def open_store(location: str, *, create: bool = True) -> Store:
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from layersearch.store.postgres import PostgresStore  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "PostgreSQL stores need the [postgres] extra: pip install 'layersearch[postgres]'"
            ) from exc
        return PostgresStore(location)  # type: ignore[no-any-return]
    return DuckDBStore(location, create=create)


#: A load of at least this many entities builds its schema index in a forked process beside
#: the rest (see CoverageBuild): below it, the fork and the wait cost more than they save.
FORK_MIN_ENTITIES = 50_000


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a load runs. A load allocates millions of objects
    that live until it ends (rows, tables, documents): every full collection it triggers
    walks all of them again, ~8% of a 300k-entity load, and finds nothing (the rows hold
    no cycles). Collections resume afterwards (and the next one reclaims any cycle made
    meanwhile)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _settle_heap() -> None:
    """Keep a newly installed snapshot out of later full garbage collections.

    A process serving searches holds long-lived objects (memories, caches, the objects
    its build left behind); every full collection walks all of them, and one of 224 ms
    landed in the middle of a run of 1M searches. Collect the young generations, then
    freeze what survives: later collections walk only what was allocated since. Frozen
    objects are still freed by reference counting (a replaced snapshot is: it holds no
    cycles); only cyclic garbage among them is never reclaimed. Not a full collection:
    it walks every object, 120 ms of a reopened 100k store's first search."""
    gc.collect(1)
    gc.freeze()


class Layersearch:
    """Search over one store. Thread-safe; cheap to keep open for a server's lifetime."""

    def __init__(
        self,
        store: str | os.PathLike[str] | Store | None = None,
        *,
        create: bool = True,
        embedder: str | Embedder | None = None,
        embedder_config: dict[str, Any] | None = None,
    ):
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
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
            from layersearch.embed import make_embedder

            # Building an embedder is cheap (models load on first use); a bad spec fails now.
            embedder = make_embedder(embedder, config=embedder_config)
        self.embedder: Embedder | None = embedder
        self._dense: dict[str, DenseCorpus] = {}
        #: ((store generation, model key), entities and memories with a vector, all of them)
        self._coverage: tuple[tuple[int, str], int, int] | None = None
        self._corpus: EntityCorpus | None = None
        self._gen = -1
        self._graph: Any = None
        self._pending: list[str] = []
        #: (generation, tables, their entities in table order, a process building their
        #: schema index or None) just written by load_catalog
        self._built: tuple[int, EntityTables, list[Entity], CoverageBuild | None] | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        for dense in list(self._dense.values()):
            dense.close()
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Layersearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _ft_dir(self) -> Path:
        return Path(self.store.index_dir) / "entities"

    def corpus(self) -> EntityCorpus:
        """The current snapshot, reloaded when the store changed since it was taken."""
        gen = self.store.generation()
        with self._lock:
            if self._corpus is None or gen != self._gen:
                self._reload()
            assert self._corpus is not None
            return self._corpus

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
            if corpus.snapshot is not None:
                corpus.snapshot.release_pages()
            release_freed_memory()
        _settle_heap()

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
        ft, reason = FullTextIndex.open(self._ft_dir, ENTITY_BOOSTS, stamp)
        corpus = EntityCorpus.from_snapshot(snapshot, memories, ft or _EMPTY_FT())
        if rebuilt:
            # Published with its schema index, so no later search (of any process) builds it.
            corpus.ensure_coverage(objects, None if built is None else built[3])
        if (
            ft is None
            and previous is not None
            and previous.snapshot is not None
            and previous.fulltext.path is not None
            and previous.fulltext.path.parent == self._ft_dir
            and previous.fulltext.is_current()
            and FullTextIndex.read_stamp(self._ft_dir) == str(self._gen)
        ):
            # The index on disk is exactly our previous snapshot: apply the difference.
            stale, fresh = changed_entities(previous.snapshot.tables, snapshot.tables)
            old = {d.id: d for d in previous.documents(entities=False)}
            new = {d.id: d for d in corpus.documents(entities=False)}
            stale += [i for i, d in old.items() if new.get(i) != d]
            tables = snapshot.tables
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
            corpus.fulltext = previous.fulltext
            rebuilt = True
        elif ft is None:
            # Missing with content in the store means someone deleted it: say so once.
            # (A read-only store's indexes live in a cache: missing there on first use.)
            lost = (
                reason == "missing"
                and bool(len(corpus.entities) or memories)
                and getattr(self.store, "read_only", None) is None
            )
            if reason not in ("missing", "stale") or lost:
                msg = f"full-text index was {reason}; rebuilt it from the store"
                log.warning(msg)
                self._pending.append(msg)
            log.info("building the full-text index (%s)", reason)
            ft, kept = build_index(
                ENTITY_BOOSTS, self._ft_dir, stamp, lambda: corpus.documents(rows=objects)
            )
            if kept is not None:
                self._pending.append(f"full-text index kept in memory for this process ({kept})")
            corpus.fulltext = ft
            rebuilt = True
        return corpus, rebuilt

    def _after_write(self, gen_before: int, apply: Any) -> None:
        """Apply an incremental update for our own memory write; reload if others wrote too.

        Only memory writes come through here: entities and edges are unchanged, so the
        entity snapshot stays valid for the new generation and is re-stamped."""
        gen = self.store.generation()
        with self._lock:
            corpus = self._corpus
            if corpus is None:
                return
            contiguous = gen == gen_before + 1 and self._gen == gen_before
            # A marker that matches the store only when nothing else wrote in between;
            # otherwise force a rebuild on the next reload.
            apply(corpus, str(gen) if contiguous else f"dirty-{gen}")
            if contiguous:
                self._gen = gen
                if corpus.snapshot is not None:
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
        if not str(path).strip():
            raise ConfigError("load needs a path (a folder, file or database); got an empty one")
        catalog = _load_catalog(path, fmt, datasource=datasource, sample_values=sample_values)
        return self.load_catalog(catalog)

    def load_catalog(self, catalog: Catalog) -> LoadReport:
        names = catalog.datasource_names()
        if not names:
            raise ConfigError("nothing to load: the files define no datasource or model")
        # Refuse bad memory queries before anything is written: a load either happens or not.
        for spec in catalog.memories:
            try:
                check_query(spec.query)
            except ConfigError as exc:
                raise type(exc)(f"{spec.source}: {exc}") from exc
        with self._lock, _gc_paused():
            return self._load_rows(catalog, names)

    def _start_coverage(
        self,
        before: EntityCorpus,
        keep: list[Entity],
        ents: list[Entity],
        kept: list[EdgeRecord],
        edges: list[EdgeRecord],
    ) -> CoverageBuild | None:
        """Start building the schema index of the rows a load is about to write (the
        entities ``keep`` and ``ents``, the edges ``kept`` and ``edges``), in a forked
        process beside the rest of the load (large loads only: a fork of a big process
        and the wait cost more than a small index takes to build)."""
        if before.snapshot is None or len(keep) + len(ents) < FORK_MIN_ENTITIES:
            return None
        return CoverageBuild.start(
            self._snapshot_dir,
            lambda: coverage_of({e.id: e for e in chain(keep, ents)}, chain(kept, edges)),
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
        job = self._start_coverage(before, keep, ents, kept, edges)
        try:
            # The tables of the store as this load leaves it: their resolver is the one the
            # next snapshot serves, and they become that snapshot unless another write
            # comes between (then it is read back from the store).
            tables, objects = tables_from_objects([*keep, *ents], [*kept, *edges])
            del keep, kept
            tables.complete()
            resolver = Snapshot(tables, None).resolver(before.memories.__contains__)
            skipped = list(catalog.skipped)
            # A file memory is new unless a stored one has its learning and query (its
            # tags follow from the catalog, which may have changed since it was saved).
            existing = {memory_identity(m.learning, m.query) for m in before.memories.values()}
            batch: list[tuple[str, str | None, list[str], dict[str, Any] | None]] = []
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
            existing.update(memory_identity(i[0], i[3]) for i in batch)
            del resolver, existing  # the resolver holds the tables
            before_gen = self._gen
            n, gen = self.store.replace_rows(catalog, names, ents, edges)
            del ents, edges
            # One transaction for all file memories; the next snapshot indexes entities and
            # memories by difference in one pass.
            saved, mem_gen = self.store.add_memories_at(batch)
            added = len(saved)
            if batch:
                # Memories leave entities alone, but another writer may have come between.
                gen = mem_gen if mem_gen == gen + 1 else -1
            if gen >= 0 and gen == before_gen + 1 + bool(batch) and before.snapshot is not None:
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
            unresolved = [
                f"{m.id} → {t}"
                for m in corpus.memories.values()
                for t in m.entities
                if not t.startswith("memory:") and not corpus.visible(t)
            ]
            return LoadReport(
                datasources=names,
                models=len(catalog.models),
                entities=n,
                memories_added=added,
                skipped=skipped,
                unresolved_tags=unresolved,
            )
        finally:
            if job is not None:
                job.cancel()  # unless the snapshot took its index

    # -- search -------------------------------------------------------------------------------

    def search(self, request: SearchRequest | None = None, /, **kwargs: Any) -> SearchResponse:
        """Search the semantic layer and memories. Takes a SearchRequest or its fields."""
        if request is None:
            try:
                request = SearchRequest(**kwargs)
            except ValueError as exc:
                raise ConfigError(_pydantic_message(exc)) from exc
        elif kwargs:
            raise ConfigError("pass either a SearchRequest or keyword arguments, not both")
        elif not isinstance(request, SearchRequest):
            raise ConfigError(
                f"search takes a SearchRequest or keyword arguments, not {type(request).__name__}"
                " (e.g. search(question=...))"
            )
        corpus = self.corpus()
        warnings = self._take_pending()
        vector_warnings: list[str] = []
        vector = self._vector_channel(corpus, request, vector_warnings)
        allow = None
        if request.cypher_filter is not None and request.cypher_filter.strip():
            corpus.check_request(request)
            allow = self.filter_ids(request.cypher_filter, request.params)
            if not allow:
                warnings.append("the cypher filter matched no entities or memories: no results")
                return SearchResponse(results=[], warnings=warnings)
        resp = corpus.search(request, allow=allow, warnings=warnings, vector=vector)
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
        if self.embedder is not None:
            load = getattr(self.embedder, "load", None)
            try:
                if callable(load):
                    load()
                self.dense().warm()
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

    # -- dense vectors ------------------------------------------------------------------------

    def dense(self, corpus: str = ENTITY_CORPUS) -> DenseCorpus:
        """The vectors of one corpus for the configured embedder."""
        if self.embedder is None:
            raise EmbeddingUnavailable(
                "no embedder configured; pass --embedder local|fake|litellm:<model> "
                "or set LAYERSEARCH_EMBEDDER"
            )
        with self._lock:
            d = self._dense.get(corpus)
            if d is None:
                from layersearch.corpora.dense import DenseCorpus

                d = self._dense[corpus] = DenseCorpus(self.store, corpus, self.embedder)
            return d

    def _vector_channel(
        self, corpus: EntityCorpus, request: SearchRequest, warnings: list[str]
    ) -> Any:
        wanted = request.channels is None or "vector" in request.channels
        if not wanted or not (request.question and request.question.strip()):
            return None
        if self.embedder is None:
            if request.channels is not None:
                warnings.append(
                    "embedding unavailable: no embedder configured; pass --embedder "
                    "local|fake|litellm:<model> or set LAYERSEARCH_EMBEDDER"
                )
            return None

        # The query is embedded while the lexical channels rank (a model's forward pass runs
        # outside the GIL); the vector channel joins it when it needs the vector.
        with contextlib.suppress(LayersearchError):
            dense = self.dense(ENTITY_CORPUS)
            if dense.confirmed:
                dense.prefetch(request.question)

        def run(
            question: str, k: int, ds: str | None, allow: Any, memories: bool
        ) -> list[tuple[str, float]]:
            try:
                dense = self.dense(ENTITY_CORPUS)
                scope = allow
                if ds is not None:
                    in_ds = corpus.scope_ids(ds)
                    scope = in_ds if allow is None else in_ds & set(allow)
                found = dense.search(question, k, scope, memories=memories)
                partial = self._partial_vectors(dense)
                if partial is not None and partial not in warnings:
                    warnings.append(partial)
                return found
            except LayersearchError as exc:
                message = f"embedding unavailable: {exc}"
                if message not in warnings:
                    warnings.append(message)
                return []

        return run

    def _partial_vectors(self, dense: DenseCorpus) -> str | None:
        """A warning when some entities or memories have no vector from the configured
        model (an interrupted ``layersearch embed``): counted once per store generation."""
        key = (self.store.generation(), dense.fingerprint.key())
        with self._lock:
            cached = self._coverage
        if cached is None or cached[0] != key:
            have, total = self.store.entity_vector_coverage(ENTITY_CORPUS, key[1])
            cached = (key, have, total)
            with self._lock:
                self._coverage = cached
        _, have, total = cached
        if have >= total:
            return None
        return (
            f"vector channel ranked {have:,} of {total:,} entities and memories: "
            f"{total - have:,} have no vector from {dense.fingerprint.describe()} yet "
            "(an interrupted `layersearch embed`?); run `layersearch embed` to finish"
        )

    def embed(self, progress: Any = None) -> list[EmbedReport]:
        """Compute the stored vectors of the semantic layer and memories (incremental, resumable)."""
        from layersearch.corpora.dense import DenseDoc, entity_docs, memory_text

        corpus = self.corpus()
        docs = entity_docs(corpus.entities.values())
        docs += [DenseDoc(m.id, memory_text(m)) for m in corpus.memories.values()]
        return [self.dense(ENTITY_CORPUS).embed(docs, progress=progress)]

    def _take_pending(self) -> list[str]:
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def graph(self) -> Any:
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
        ids = run_filter(self.graph(), cypher, params or {})
        return {i for i in ids if isinstance(i, str) and corpus.visible(i)}

    # -- inspect ------------------------------------------------------------------------------

    def inspect(self, ids: Iterable[str]) -> InspectResponse:
        """Full detail for ids (entities, hidden ones included when named exactly, and memories)."""
        # A lone string is one id, not a sequence of one-character ids.
        ids = [ids] if isinstance(ids, str) else list(ids)
        if not ids:
            raise ConfigError("inspect needs at least one id")
        if not all(isinstance(i, str) for i in ids):
            raise ConfigError("inspect takes ids as strings")
        if len(ids) > MAX_INSPECT_IDS:
            raise LimitExceeded(
                f"{len(ids)} ids given; inspect takes at most {MAX_INSPECT_IDS} "
                "(inspect them in batches)"
            )
        corpus = self.corpus()
        out = InspectResponse()
        for raw in ids:
            key = raw.strip()
            if key.lower().startswith("memory:"):
                try:
                    mid = f"memory:{memory_number(key)}"
                except ConfigError as exc:
                    out.warnings.append(str(exc))
                    continue
                m = corpus.memories.get(mid)
                if m is None:
                    out.warnings.append(f"unknown memory '{key}'")
                else:
                    out.memories.append(m)
                continue
            e = corpus.entities.get(key)
            if e is None:
                # Not an exact id: resolve it like search does (visible entities only).
                found, warning = corpus.resolver.resolve_one(key)
                if not found:
                    out.warnings.append(warning or f"unknown id '{key}'")
                    continue
                e = corpus.entities[found[0]]
            children = [
                edge.dst
                for edge in corpus.edges_out.get(e.id, [])
                if edge.type == "CONTAINS"
                and edge.dst in corpus.entities
                and not corpus.entities[edge.dst].hidden
            ]
            joins = [
                {"target": edge.dst, **edge.props}
                for edge in corpus.edges_out.get(e.id, [])
                if edge.type == "JOINS"
            ]
            refs = [
                edge.dst for edge in corpus.edges_out.get(e.id, []) if edge.type == "REFERENCES"
            ]
            out.entities.append(
                EntityInfo(
                    kind=e.kind,  # type: ignore[arg-type]
                    id=e.id,
                    name=e.name,
                    datasource=e.datasource,
                    model=e.model,
                    label=e.label,
                    description=e.description,
                    data_type=e.data_type,
                    formula=e.formula,
                    hidden=e.hidden,
                    primary_key=e.primary_key,
                    values=list(e.values),
                    children=children,
                    joins=joins,
                    references=refs,
                    memories=corpus.mentions(e.id),
                )
            )
        if not out.entities and not out.memories:
            raise NotFound("; ".join(out.warnings) or "nothing found")
        return out

    # -- conversations (corpora/conversations) ----------------------------------------------

    @property
    def conversations(self) -> Any:
        """The conversation corpus: import, embed, and the three search contracts
        (a :class:`~layersearch.corpora.conversations.search.ConversationService`)."""
        with self._lock:
            service = getattr(self, "_conversations", None)
            if service is None:
                from layersearch.corpora.conversations.search import ConversationService

                service = ConversationService(self.store, self.dense)
                self._conversations = service
            return service

    # -- vault (corpora/vault) ----------------------------------------------------------------

    @property
    def vault(self) -> Any:
        """The vault of markdown notes in this store (``index``, ``search``, ``get_note``)."""
        with self._lock:
            service = getattr(self, "_vault", None)
            if service is None:
                from layersearch.corpora.vault.search import VaultService

                service = self._vault = VaultService(self.store, embedder=lambda: self.embedder)
            return service

    # -- memories -----------------------------------------------------------------------------

    def save_memory(
        self,
        learning: str,
        *,
        description: str | None = None,
        entities: Iterable[str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Memory:
        """Save a note or example query against entities (each must resolve)."""
        return self.save_memories(
            [
                {
                    "learning": learning,
                    "description": description,
                    "entities": entities,
                    "query": query,
                }
            ]
        )[0]

    def save_memories(self, items: Sequence[Mapping[str, Any]]) -> list[Memory]:
        """Save many memories in one write: each item has ``learning`` and optionally
        ``description``, ``entities`` and ``query``, checked as :meth:`save_memory` checks
        one; nothing is saved when any of them is refused (the error names its position)."""
        if isinstance(items, Mapping | str) or not isinstance(items, Sequence):
            raise ConfigError("save_memories takes a list of memories (mappings with learning)")
        corpus = self.corpus()
        batch: list[tuple[str, str | None, list[str], dict[str, Any] | None]] = []
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
                batch.append(self._checked_memory(corpus, **item))
            except LayersearchError as exc:
                raise type(exc)(f"{where}{exc}") from exc
        if not batch:
            return []
        with self._lock:
            return self._save(batch)

    def _checked_memory(
        self,
        corpus: EntityCorpus,
        learning: str,
        description: str | None = None,
        entities: Iterable[str] | None = None,
        query: dict[str, Any] | None = None,
    ) -> tuple[str, str | None, list[str], dict[str, Any] | None]:
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
            ids, warning = corpus.resolver.resolve_one(ref)
            if warning:
                problems.append(warning.replace(" dropped", ""))
            tags.extend(i for i in ids if i not in tags)
        if query is not None:
            res = corpus.resolver.resolve(None, query)
            problems.extend(w.replace(" dropped", "") for w in res.warnings)
            tags.extend(i for i in res.ids if i not in tags)
        if problems:
            raise ConfigError("cannot save the memory: " + "; ".join(problems))
        return learning.strip(), description, tags, query

    def _save(
        self, batch: list[tuple[str, str | None, list[str], dict[str, Any] | None]]
    ) -> list[Memory]:
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
        if self.embedder is not None:
            from layersearch.corpora.dense import DenseDoc, memory_text

            try:
                self.dense(ENTITY_CORPUS).add_many([DenseDoc(m.id, memory_text(m)) for m in saved])
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
        if not _is_int(limit) or not _is_int(offset) or limit < 1 or offset < 0:
            raise ConfigError(
                f"limit and offset must be integers, limit ≥ 1 and offset ≥ 0; got {limit!r}, {offset!r}"
            )
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


def _entities_at(
    tables: EntityTables, positions: Iterable[int], objects: list[Entity] | None
) -> Iterator[Entity]:
    """The entities at ``positions`` (ascending) of ``tables``: taken from ``objects`` (the
    same entities in table order, when the caller has them) or decoded from their rows."""
    for j in positions:
        yield tables.entity(int(j)) if objects is None else objects[int(j)]


def memory_identity(learning: str, query: dict[str, Any] | None) -> tuple[str, str | None]:
    """What makes a memory from a file the same memory on a reload: its learning and its
    query (keys sorted), not its tags, which are resolved against the catalog of the day."""
    return learning.strip(), None if query is None else json.dumps(query, sort_keys=True)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


def _EMPTY_FT() -> FullTextIndex:
    return FullTextIndex.create(ENTITY_BOOSTS, None)


def _load_catalog(
    path: str | os.PathLike[str], fmt: str, *, datasource: str | None, sample_values: int
) -> Catalog:
    from layersearch.semantic.importers import load_catalog

    return load_catalog(Path(path), fmt, datasource=datasource, sample_values=sample_values)


def _pydantic_message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for err in errors():
            loc = ".".join(str(x) for x in err.get("loc", ()))
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        return "invalid request: " + "; ".join(parts)
    return f"invalid request: {exc}"
