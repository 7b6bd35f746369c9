"""Dense vectors for any corpus: incremental embedding, fingerprint checks, search.

Every corpus (entities + memories, conversation messages, vault chunks) hands
its documents as ``(id, text)``; vectors are stored per (corpus, document,
model fingerprint) with a content hash, so unchanged text is never embedded
again and an interrupted run resumes where it stopped (each batch is committed
on its own).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from layersearch.embed.base import Embedder, Fingerprint
from layersearch.errors import EmbeddingUnavailable, LayersearchError, ModelMismatch
from layersearch.ranking.vector import VectorIndex
from layersearch.recent import Recent
from layersearch.semantic.model import Entity
from layersearch.store.base import Store
from layersearch.types import EmbedReport, Memory

__all__ = [
    "DenseDoc",
    "DenseCorpus",
    "ENTITY_CORPUS",
    "content_hash",
    "describe_key",
    "entity_docs",
    "entity_text",
    "memory_text",
]

log = logging.getLogger("layersearch.corpora.dense")

BATCH = 64
#: The ids of memories in the entity corpus (``memory:<n>``).
MEMORY_PREFIX = "memory:"
#: Query embeddings kept, per question or plan part text (a 384-dimension vector is
#: 1.5 KB: 1,024 of them ~1.5 MB). A grouped question's plan adds the parts it searches.
QUERY_CACHE = 1024
#: Short texts embedded as documents at search time (a question's words), kept per corpus.
TEXT_CACHE = 4096
#: Query embeddings started ahead of the search that needs them (see ``prefetch``). Two
#: workers: concurrent searches each get one, as they would embedding inline.
PREFETCH_WORKERS = 2
#: ``embed`` writes its vectors in one transaction per this many rows, or per this many
#: seconds of embedding, whichever comes first: a store transaction costs ~0.1 s (a new
#: DuckDB connection and a WAL sync), so one per batch of 64 took 10 s of the Spider
#: catalog's embedding; a killed run loses at most what it embedded since the last one.
FLUSH_ROWS = 2048
FLUSH_SECONDS = 10.0

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class DenseDoc:
    id: str
    text: str


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def describe_key(key: str) -> str:
    try:
        return Fingerprint.from_key(key).describe()
    except LayersearchError:
        return key


#: every DenseCorpus alive, for the fork hook below
_LIVE: weakref.WeakSet[DenseCorpus] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for corpus in list(_LIVE):
        corpus._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Pending:
    """Embedded batches not written yet: one store transaction takes them all, when there
    are ``FLUSH_ROWS`` of them or the oldest waited ``FLUSH_SECONDS``."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.hashes: list[str] = []
        self.parts: list[np.ndarray] = []
        self.since = 0.0

    @property
    def rows(self) -> int:
        return len(self.ids)

    def add(self, batch: Sequence[DenseDoc], matrix: np.ndarray) -> None:
        if not self.ids:
            self.since = time.monotonic()
        self.ids.extend(d.id for d in batch)
        self.hashes.extend(content_hash(d.text) for d in batch)
        self.parts.append(matrix)

    def due(self) -> bool:
        return self.rows >= FLUSH_ROWS or time.monotonic() - self.since >= FLUSH_SECONDS

    def take(self) -> tuple[list[str], list[str], np.ndarray]:
        out = (self.ids, self.hashes, np.vstack(self.parts))
        self.ids, self.hashes, self.parts = [], [], []
        return out


class DenseCorpus:
    """One corpus's vectors for one embedder."""

    def __init__(self, store: Store, corpus: str, embedder: Embedder) -> None:
        self.store = store
        self.corpus = corpus
        self.embedder = embedder
        self._fp: Fingerprint | None = None
        self._index: VectorIndex | None = None
        self._index_gen = -1
        self._parts: tuple[VectorIndex, dict[bool, VectorIndex]] | None = None
        self._checked_gen = -1
        #: (store generation, why this model has no vectors here then): decided once per
        #: generation (every write of vectors moves it), so a search served without
        #: vectors reads nothing from the store
        self._missing: tuple[int, LayersearchError] | None = None
        self._queries: Recent[str, np.ndarray] = Recent(QUERY_CACHE)
        self._texts: Recent[str, np.ndarray] = Recent(TEXT_CACHE)
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _LIVE.add(self)

    def _after_fork(self) -> None:
        """In a forked child: the parent's prefetch threads are not there, so neither its
        pool nor its pending embeddings (they would never finish) are kept."""
        self._lock = threading.Lock()
        self._pool = None
        self._pending = {}

    @property
    def fingerprint(self) -> Fingerprint:
        if self._fp is None:
            self._fp = self.embedder.fingerprint
        return self._fp

    def check(self, gen: int | None = None) -> None:
        """Raise ModelMismatch when vectors exist for this corpus but none from this model;
        EmbeddingUnavailable when there are none at all, or when the embedder cannot run
        here (saying which extra to install); decided once per generation (``gen``: the
        store's generation, when the caller has just read it)."""
        gen = self.store.generation() if gen is None else gen
        with self._lock:
            error = self._verdict(gen)
        if error is not None:
            raise error

    def _known_missing(self, gen: int) -> LayersearchError | None:
        """A new error saying why this model had no vectors at generation ``gen``, when
        that was decided; under the lock."""
        if self._missing is None or self._missing[0] != gen:
            return None
        known = self._missing[1]
        return type(known)(known.message)

    def _verdict(self, gen: int) -> LayersearchError | None:
        """:meth:`check`'s error at generation ``gen``, or None; under the lock."""
        known = self._known_missing(gen)
        if known is not None:
            return known
        key = self.fingerprint.key()
        stored = self.store.vector_fingerprints(self.corpus)
        if key in stored:
            return None
        # An embedder that cannot run here (its extra not installed) is the first thing to
        # fix: `layersearch embed` would fail on it too.
        missing = getattr(self.embedder, "unavailable", None)
        reason = missing() if missing is not None else None
        if reason:
            unavailable = EmbeddingUnavailable(reason)
            self._missing = (gen, unavailable)
            return EmbeddingUnavailable(reason)
        configured = self.fingerprint.describe()
        error: LayersearchError
        if stored:
            names = ", ".join(describe_key(k) for k in stored)
            error = ModelMismatch(
                f"stored: {names} — configured: {configured}; run `layersearch embed` with the "
                "configured model, or configure the stored one"
            )
        else:
            error = EmbeddingUnavailable(
                f"no vectors stored for {configured} in '{self.corpus}' yet; run `layersearch embed`"
            )
        self._missing = (gen, error)
        return type(error)(error.message)

    # -- writing --------------------------------------------------------------------------------

    def embed(
        self,
        docs: Iterable[DenseDoc],
        *,
        batch_size: int = BATCH,
        progress: Progress | None = None,
        prune: bool = True,
        workers: int | None = None,
        again: bool = False,
    ) -> EmbedReport:
        """Embed the documents whose text has no vector from this model yet (or another
        text's), and store them; with ``again``, every document (the model's arithmetic
        moved: another ONNX Runtime, another kind of CPU). Batches run on ``workers``
        threads at once (default: the embedder's ``bulk_workers``, 1 without it: an
        in-process model's forward pass runs outside the GIL, so two threads use two
        cores); vectors are written in order, a transaction per :data:`FLUSH_ROWS` rows
        or :data:`FLUSH_SECONDS`."""
        docs = list(docs)
        key = self.fingerprint.key()
        stored = self.store.vector_hashes(self.corpus, key)
        todo = docs if again else [d for d in docs if stored.get(d.id) != content_hash(d.text)]
        # Texts of similar length share a batch: less padding through the model (the
        # Spider catalog: 16 s of CPU instead of 33 s); a text several documents hold is
        # embedded once. (An int8 model's vector of a text moves a little with its batch,
        # whose activations share one quantisation scale: docs/decisions.md.)
        todo.sort(key=lambda d: len(d.text))
        holders: dict[str, list[DenseDoc]] = {}
        for d in todo:
            holders.setdefault(d.text, []).append(d)
        texts = list(holders)
        batches = [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]
        if workers is None:
            workers = int(getattr(self.embedder, "bulk_workers", 1))
        done = 0
        failed: list[str] = []
        pending = _Pending()
        if progress:
            progress(0, len(todo))
        try:
            with contextlib.closing(self._embedded(batches, workers)) as embedded:
                for batch, result in embedded:
                    rows = [d for t in batch for d in holders[t]]
                    if isinstance(result, LayersearchError):
                        failed.extend(f"{d.id}: {result}" for d in rows)
                        continue
                    if len(rows) > len(batch):
                        result = result[[i for i, t in enumerate(batch) for _ in holders[t]]]
                    pending.add(rows, result)
                    if pending.due():
                        done += self._write(key, pending)
                    if progress:
                        progress(done + pending.rows, len(todo))
        finally:
            # An interruption (Ctrl-C, a provider that gives up) keeps what was embedded;
            # only a killed process loses the batches not yet written.
            if pending.rows:
                done += self._write(key, pending)
        pruned = self.store.prune_vectors(self.corpus, {d.id for d in docs}) if prune else 0
        with self._lock:
            self._index = None
        return EmbedReport(
            corpus=self.corpus,
            model=self.fingerprint.describe(),
            documents=len(docs),
            embedded=done,
            unchanged=len(docs) - len(todo),
            pruned=pruned,
            failed=failed,
        )

    def _embedded(
        self, batches: Sequence[list[str]], workers: int
    ) -> Generator[tuple[list[str], np.ndarray | LayersearchError], None, None]:
        """Each batch of texts with its vectors (or the error a provider gave for it), in
        order, embedded on ``workers`` threads with at most two batches each in flight.
        EmbeddingUnavailable (and an interruption) is raised, after the running batches
        finish."""

        def run(batch: list[str]) -> np.ndarray | LayersearchError:
            try:
                return self.embedder.embed_documents(batch)
            except EmbeddingUnavailable:
                raise
            except LayersearchError as exc:
                return exc

        if workers <= 1 or len(batches) <= 1:
            for batch in batches:
                yield batch, run(batch)
            return
        pool = ThreadPoolExecutor(workers, thread_name_prefix="layersearch-embed-bulk")
        try:
            ahead = iter(batches)
            flight = deque((b, pool.submit(run, b)) for b in islice(ahead, 2 * workers))
            while flight:
                batch, future = flight.popleft()
                result = future.result()
                following = next(ahead, None)
                if following is not None:
                    flight.append((following, pool.submit(run, following)))
                yield batch, result
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _write(self, key: str, pending: _Pending) -> int:
        ids, hashes, matrix = pending.take()
        self.store.upsert_vectors(self.corpus, key, ids, hashes, matrix)
        return len(ids)

    def add_many(self, docs: Sequence[DenseDoc]) -> None:
        """Embed new documents now (memories just saved), if this model has vectors."""
        key = self.fingerprint.key()
        if not docs or key not in self.store.vector_fingerprints(self.corpus):
            return
        for start in range(0, len(docs), BATCH):
            part = docs[start : start + BATCH]
            vec = self.embedder.embed_documents([d.text for d in part])
            self.store.upsert_vectors(
                self.corpus, key, [d.id for d in part], [content_hash(d.text) for d in part], vec
            )
        with self._lock:
            self._index = None

    # -- reading --------------------------------------------------------------------------------

    def index(self, gen: int | None = None) -> VectorIndex:
        """This model's vectors in the store at generation ``gen`` (read from the store
        when not given: a search passes the one its snapshot was taken at)."""
        gen = self.store.generation() if gen is None else gen
        with self._lock:
            if self._index is None or gen != self._index_gen:
                # None from this model: say why (another model's, or none yet), decided
                # once per generation, so a store without them costs a search nothing.
                # Vectors found need no check, and a new process's first search reads
                # the store once instead of twice (a DuckDB connection is ~15 ms).
                error = self._known_missing(gen)
                if error is None:
                    ids, matrix = self.store.load_vectors(self.corpus, self.fingerprint.key())
                    if not ids:
                        # a writer may have added them since this read (a vault or
                        # conversation index beside the search): none here, this time
                        error = self._verdict(gen) or EmbeddingUnavailable(
                            f"no vectors stored for {self.fingerprint.describe()} in "
                            f"'{self.corpus}' yet; run `layersearch embed`"
                        )
                if error is not None:
                    raise error
                # (an HNSW graph, where one is built, is kept beside the store's indexes)
                where = getattr(self.store, "index_dir", None)
                hnsw = None if where is None else Path(where) / "hnsw"
                self._index = VectorIndex(ids, matrix, ann_dir=hnsw)
                self._index_gen = gen
            return self._index

    def warm(self) -> None:
        """Do now what the first search would: read this model's vectors into the index
        and make the int8 copy its exact search scores first (or, for a store that ranks
        in the database, check they are there). An HNSW graph is ``keep_graphs``'."""
        if getattr(self.store, "search_vectors", None) is None:
            self.index()
            self._part(False).prepare_screen()
        else:
            self._check_current()

    def keep_graphs(self) -> None:
        """Build now, and keep beside the store, the HNSW graph a search of this corpus
        would build on its first use (an in-memory index large enough for approximate
        search, with the ``[ann]`` extra; ``ranking.vector``): what ``embed`` does last, so
        that no search waits for it. Nothing otherwise."""
        if getattr(self.store, "search_vectors", None) is not None:
            return  # ranked in the database
        try:
            parts = [self._part(False), self._part(True)]
        except EmbeddingUnavailable:
            return
        for part in parts:
            part.prepare()

    @property
    def confirmed(self) -> bool:
        """Whether this model's vectors were found in the store at least once: before that
        a query is not embedded ahead (a hosted embedder would be paid for nothing)."""
        return self._index_gen >= 0 or self._checked_gen >= 0

    def prefetch(self, text: str) -> None:
        """Start embedding the query ``text`` in a worker thread; ``query_vector`` joins it.

        The model's forward pass runs outside the GIL, so a search that starts it before
        its lexical channels pays for the longer of the two instead of their sum. A
        finished embedding goes to the query cache by itself, so one never asked for
        (a search that ended early) holds nothing.
        """
        with self._lock:
            if text in self._queries or text in self._pending:
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    PREFETCH_WORKERS, thread_name_prefix="layersearch-embed"
                )
            future = self._pool.submit(self.embedder.embed_query, text)
            self._pending[text] = future
        future.add_done_callback(lambda f: self._settle(text, f))

    def _settle(self, text: str, future: Future[np.ndarray]) -> None:
        # Cache and pending change under one lock, so a reader finds the text in one of them.
        with self._lock:
            if self._pending.get(text) is future:
                del self._pending[text]
            if not future.cancelled() and future.exception() is None:
                self._remember(text, future.result())

    def _remember(self, text: str, vec: np.ndarray) -> None:
        self._queries.put(text, vec)

    def query_vector(self, text: str) -> np.ndarray:
        with self._lock:
            vec = self._queries.get(text)
            if vec is not None:
                return vec
            future = self._pending.get(text)
        if future is not None:
            # A failed prefetch raises its error here, as embedding inline would.
            return future.result()
        vec = self.embedder.embed_query(text)
        with self._lock:
            self._remember(text, vec)
        return vec

    def document_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (rows), embedded as this corpus's documents are (a
        question's words, to compare with stored words), each text once: the last
        :data:`TEXT_CACHE` are kept."""
        with self._lock:
            known = {t: self._texts.get(t) for t in texts}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            fresh = self.embedder.embed_documents(missing)
            with self._lock:
                for t, v in zip(missing, fresh, strict=True):
                    known[t] = v
                    self._texts.put(t, v)
        return np.stack([v for t in texts if (v := known[t]) is not None])

    def close(self) -> None:
        """Stop the prefetch workers (a running embedding finishes first)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def search(
        self,
        text: str,
        k: int,
        allow: Collection[str] | None = None,
        *,
        memories: bool | None = None,
        gen: int | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``k`` ids by cosine to ``text``'s vector; ``memories``: True ranks the
        memories (``memory:<n>`` ids) alone, False everything else, None all of it;
        ``gen``: the store generation to rank at (see :meth:`index`)."""
        in_store = getattr(self.store, "search_vectors", None)
        if in_store is None:
            index = self.index(gen) if memories is None else self._part(memories, gen)
            return index.search(self.query_vector(text), k, allow)
        # The store ranks in the database (PostgreSQL's HNSW), so nothing is loaded here;
        # the model check runs once per store generation, as the in-memory index does.
        self._check_current()
        key = self.fingerprint.key()
        q = self.query_vector(text)
        if memories is False and allow is None:
            found: list[tuple[str, float]] = self.store.search_vectors_where(  # type: ignore[attr-defined]
                self.corpus, key, q, k, where=f"v.doc_id NOT LIKE '{MEMORY_PREFIX}%'"
            )
            return found
        found = in_store(self.corpus, key, q, k, allow)
        if memories is not None:
            found = [h for h in found if h[0].startswith(MEMORY_PREFIX) == memories]
        return found

    def search_vector(
        self, vector: np.ndarray, k: int, allow: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``k`` ids by cosine to a query ``vector`` already embedded (by this corpus's
        model: another corpus's ``query_vector``, so one query is embedded once)."""
        in_store = getattr(self.store, "search_vectors", None)
        if in_store is None:
            return self.index().search(vector, k, allow)
        self._check_current()
        found: list[tuple[str, float]] = in_store(
            self.corpus, self.fingerprint.key(), vector, k, allow
        )
        return found

    def _part(self, memories: bool, gen: int | None = None) -> VectorIndex:
        """The in-memory index of memories alone, or of everything else: one ranking per
        kind, so that many saved memories cannot crowd entities out of the top k."""
        index = self.index(gen)
        with self._lock:
            parts = self._parts
            if parts is None or parts[0] is not index:
                mine, others = index.split(lambda i: i.startswith(MEMORY_PREFIX))
                parts = self._parts = (index, {True: mine, False: others})
            return parts[1][memories]

    def _check_current(self) -> None:
        gen = self.store.generation()
        with self._lock:
            if gen == self._checked_gen:
                return
        self.check()
        with self._lock:
            self._checked_gen = gen


# -- the entity + memory corpus -----------------------------------------------------------------

ENTITY_CORPUS = "entities"


#: Leaf names listed in a table's text (the same cap as its values).
TABLE_LEAVES = 20
_LEAF_KINDS = frozenset({"column", "measure", "aggregation"})


def entity_text(e: Entity, leaves: Sequence[str] = ()) -> str:
    """What an entity means, in words: name, label, place, description, formula, values;
    for a table, the names of its first ``leaves`` too."""
    name = e.name.replace("_", " ")
    head = f"{e.label} ({name})" if e.label and e.label.lower() != name.lower() else name
    where = f" of {e.model.replace('_', ' ')}" if e.model and e.kind != "model" else ""
    parts = [f"{head}: {e.kind}{where} in {e.datasource}."]
    if e.description:
        parts.append(e.description)
    if e.formula:
        parts.append(f"Formula: {e.formula}.")
    if e.values:
        parts.append("Values: " + ", ".join(e.values[:20]) + ".")
    if leaves:
        names = (leaf.replace("_", " ") for leaf in leaves[:TABLE_LEAVES])
        parts.append("Columns: " + ", ".join(names) + ".")
    return " ".join(parts)


def entity_docs(entities: Iterable[Entity]) -> list[DenseDoc]:
    """The dense documents of the visible entities, in the order given.

    A table is described by its columns as well as its name: a question names a
    table's subject through what it holds ("students who have a cat" is
    ``Has_Pet``, whose name alone says little), as the schema channel scores a
    table by its columns' words. Hidden leaves are not listed.
    """
    visible = [e for e in entities if not e.hidden]
    leaves: dict[str, list[str]] = {}
    for e in visible:
        parent = e.parent
        if e.kind in _LEAF_KINDS and parent is not None:
            leaves.setdefault(parent, []).append(e.name)
    return [
        DenseDoc(e.id, entity_text(e, leaves.get(e.id, ()) if e.kind == "model" else ()))
        for e in visible
    ]


def memory_text(m: Memory) -> str:
    return " ".join(x for x in (m.learning, m.description) if x)
