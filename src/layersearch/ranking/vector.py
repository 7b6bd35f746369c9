"""Nearest-neighbour search over unit vectors, exact or approximate.

Below ``exact_threshold`` live vectors (default 200,000) search is exact: one
float32 matrix-vector product and an ``argpartition``, which at 100k x 384 takes
a few milliseconds and is always right. From :data:`SCREEN_MIN_ROWS` rows, with
onnxruntime, an int8 copy of the rows is scored first and only the rows whose int8
score can reach the top are scored in float32 (``ranking/int8_screen.py``): the same
results, a quarter of the bytes read. From ``exact_threshold``, an HNSW graph from
``usearch`` (the ``[ann]`` extra) answers in well under a millisecond; its candidates
are re-scored exactly, so reported scores are true cosines either way. Without usearch
the index stays exact and says so once in the log.

The graph takes a while to build (540k vectors: about a minute on two cores). Given
``ann_dir``, it is kept there once built, named by a digest of what it was built
from (the live rows, their ids and vectors, the graph's parameters), and the next
index of the same vectors, in this process or another, maps that file instead of
building (a read-only view; a change to the index drops the view, and the graph is
built again, or read, for the new vectors). The :data:`GRAPHS_KEPT` graphs used last
are kept.

Vectors must be L2-normalised (every normalised embedder guarantees it), so the
dot product is the cosine. Results are ordered by score descending, then id, so
equal scores never come back in an arbitrary order.

An allow-list restricts results to given ids. The exact path scores only the
allowed rows. The ANN path over-fetches in proportion to how selective the
list is and falls back to exact search over the allowed rows when too few
candidates survive, so a filter never silently shortens the result.

Not thread-safe for concurrent mutation; concurrent searches are fine.
Pure: numpy, and usearch imported lazily. Knows nothing about stores.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np

from layersearch.errors import ConfigError
from layersearch.ranking.diskcache import prune, touch
from layersearch.ranking.int8_screen import Int8Screen, screen_available

__all__ = ["VectorIndex", "EXACT_THRESHOLD", "ann_available"]

log = logging.getLogger("layersearch.ranking.vector")

#: Live vectors at which ``mode="auto"`` switches from exact to HNSW search.
EXACT_THRESHOLD = 200_000
# ANN fetches at most this many candidates before giving up on over-fetching
# and scoring the allowed rows exactly instead.
_MAX_FETCH = 4096
_OVERSAMPLE = 2.0
# Compact once dead rows outnumber live ones (and there are enough to matter).
_COMPACT_MIN_DEAD = 1024
#: Rows from which the exact product is split across the cores: a product over the
#: whole matrix streams it from memory, which one core does at half the speed of two
#: (540k x 384: 64 -> 33 ms); below this the hand-off costs more than it saves.
SPLIT_MIN_ROWS = 100_000
#: Rows from which an exact search scores an int8 copy first and only the rows that
#: can reach the top again in float32 (``ranking/int8_screen.py``; with onnxruntime).
#: Random unit vectors x 384, a search: 5k 0.24 -> 0.42 ms, 10k 0.65 -> 0.39, 25k 2.8 ->
#: 0.9, 200k 26-36 -> 7.
SCREEN_MIN_ROWS = 10_000
#: Searches over every row after which an index makes its int8 copy unasked.
SCREEN_AFTER_SCANS = 8
#: the size of the sample whose order picks an int8 search's first candidates
_SAMPLE = 4096
#: allow-lists whose rows are kept (a frozenset each, asked again: a datasource's ids)
_ALLOWED_KEPT = 64
#: HNSW graphs kept in an ``ann_dir``, the ones used last
GRAPHS_KEPT = 4

Mode = Literal["auto", "exact", "ann"]
_warned_no_usearch = False


@functools.cache
def ann_available() -> bool:
    """Whether usearch (the ``[ann]`` extra) can be imported."""
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


class VectorIndex:
    """Ids and their unit vectors; ``search`` returns ``[(id, cosine), …]``.

    ``mode`` is ``"auto"`` (exact below ``exact_threshold``, HNSW above),
    ``"exact"`` or ``"ann"``. ``connectivity``, ``expansion_add`` and
    ``expansion_search`` are the HNSW parameters (M, efConstruction, efSearch);
    ``ann_dtype`` is the precision the graph stores (``"i8"`` by default:
    4x less memory and several times faster to build than ``"f32"``, with no
    loss in reported scores since candidates are re-scored in float32).
    ``ann_dir`` is where graphs are kept between processes (the module doc).
    """

    def __init__(
        self,
        ids: Sequence[str],
        matrix: np.ndarray,
        *,
        mode: Mode = "auto",
        exact_threshold: int = EXACT_THRESHOLD,
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = 256,
        ann_dtype: Literal["i8", "f16", "f32"] = "i8",
        ann_dir: str | PathLike[str] | None = None,
    ) -> None:
        if mode not in ("auto", "exact", "ann"):
            raise ConfigError(f"vector index mode must be auto, exact or ann, not {mode!r}")
        ids = list(ids)
        matrix = _as_matrix(matrix)
        if matrix.shape[0] != len(ids):
            raise ConfigError(f"{len(ids)} ids for {matrix.shape[0]} vectors")
        _check_ids(ids)
        self.mode: Mode = mode
        self.exact_threshold = exact_threshold
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.ann_dtype = ann_dtype
        self.ann_dir = None if ann_dir is None else Path(ann_dir)
        self._dims = int(matrix.shape[1])
        self._buf = matrix  # rows [0, _n) are in use; may be a read-only memmap
        self._n = len(ids)
        self._ids: list[str] = ids
        self._rows: dict[str, int] = {id_: row for row, id_ in enumerate(ids)}
        self._alive: np.ndarray | None = None  # None while no row is dead
        self._ann: Any = None
        self._ann_view = False  # the graph is a read-only map of a kept file
        self._screen: Int8Screen | None = None  # the int8 copy of rows [0, _n)
        self._scans = 0  # exact searches that scored every row
        self._screen_failed = False
        # the rows of an allow-list asked again (a datasource's ids, one frozenset each)
        self._allowed: dict[frozenset[str], np.ndarray] = {}
        self._lock = threading.Lock()

    # -- construction ------------------------------------------------------

    @classmethod
    def from_npy(cls, path: str | PathLike[str], ids: Sequence[str], **options: Any) -> VectorIndex:
        """Memory-map a ``.npy`` float32 matrix (row i belongs to ``ids[i]``).

        The file is only read as pages are touched; ``add`` copies it into
        memory the first time it needs to grow.
        """
        try:
            matrix = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot memory-map vectors from {path}: {exc}") from exc
        if matrix.dtype != np.float32:
            log.warning(
                "%s holds %s vectors; loading a float32 copy into memory", path, matrix.dtype
            )
            matrix = np.asarray(matrix, dtype=np.float32)
        return cls(ids, matrix, **options)

    def split(self, keep: Callable[[str], bool]) -> tuple[VectorIndex, VectorIndex]:
        """Two exact-or-auto indexes of the live vectors: those whose id ``keep`` accepts,
        and the others (copies; this index is unchanged). A side that holds every live
        vector is this index itself, not a copy (a catalog without memories: 830 MB and
        2.6 s at 540k vectors, and one HNSW graph instead of two); change neither then."""
        rows = self._live_rows()
        flags = np.fromiter(
            (keep(self._ids[r]) for r in rows.tolist()), dtype=bool, count=len(rows)
        )
        if flags.all() or not flags.any():
            empty = self._like([], np.zeros((0, self._dims), dtype=np.float32))
            return (self, empty) if flags.all() else (empty, self)
        out = []
        for picked in (rows[flags], rows[~flags]):
            out.append(
                self._like(
                    [self._ids[r] for r in picked.tolist()],
                    np.ascontiguousarray(self._buf[picked], dtype=np.float32).reshape(
                        len(picked), self._dims
                    ),
                )
            )
        return out[0], out[1]

    def _like(self, ids: list[str], matrix: np.ndarray) -> VectorIndex:
        """An index of ``ids`` and ``matrix`` with this one's settings."""
        return VectorIndex(
            ids,
            matrix,
            mode=self.mode,
            exact_threshold=self.exact_threshold,
            connectivity=self.connectivity,
            expansion_add=self.expansion_add,
            expansion_search=self.expansion_search,
            ann_dtype=self.ann_dtype,
            ann_dir=self.ann_dir,
        )

    def save_npy(self, path: str | PathLike[str]) -> list[str]:
        """Write the live vectors to ``path``; returns their ids in row order."""
        rows = self._live_rows()
        np.save(path, np.ascontiguousarray(self._buf[rows]))
        return [self._ids[r] for r in rows]

    # -- inspection --------------------------------------------------------

    @property
    def dimensions(self) -> int:
        return self._dims

    @property
    def ids(self) -> list[str]:
        """Live ids in row order."""
        return [self._ids[r] for r in self._live_rows()]

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, id_: object) -> bool:
        return id_ in self._rows

    def vector(self, id_: str) -> np.ndarray:
        row = self._rows.get(id_)
        if row is None:
            raise KeyError(id_)
        return np.array(self._buf[row])

    @property
    def uses_ann(self) -> bool:
        """Whether the next unfiltered search goes through HNSW."""
        wanted = self.mode == "ann" or (self.mode == "auto" and len(self) >= self.exact_threshold)
        return wanted and _usearch_or_warn()

    def prepare(self) -> None:
        """Build (or read, from ``ann_dir``) the HNSW graph the next search would, when it
        goes through HNSW; nothing for an exact index."""
        if self._rows and self.uses_ann:
            self._ann_index()

    def prepare_screen(self) -> None:
        """Make now the int8 copy an exact search of :data:`SCREEN_MIN_ROWS` rows or more
        scores first (a server's warm-up); nothing for an index searched through HNSW."""
        if self._rows and not self.uses_ann:
            self._int8_screen()

    # -- search ------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, allow: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``k`` ids by cosine similarity to ``query``, descending, ties by id."""
        q = np.asarray(query, dtype=np.float32)
        if q.ndim != 1 or q.shape[0] != self._dims:
            raise ConfigError(f"query vector has shape {q.shape}, expected ({self._dims},)")
        if not np.all(np.isfinite(q)):
            raise ConfigError("query vector contains NaN or infinity")
        if k <= 0 or not self._rows:
            return []
        rows = None if allow is None else self._allowed_rows(allow)
        if rows is not None and len(rows) == 0:
            return []
        if self.uses_ann:
            return self._search_ann(q, k, rows)
        return self._search_exact(q, k, rows)

    def _allowed_rows(self, allow: Collection[str]) -> np.ndarray:
        """The rows of the ids of ``allow`` that are here, sorted; a frozenset's rows are
        kept until the next change (a scope searched again maps no id twice)."""
        if isinstance(allow, frozenset):
            rows = self._allowed.get(allow)
            if rows is None:
                if len(self._allowed) >= _ALLOWED_KEPT:
                    self._allowed.clear()
                rows = self._allowed[allow] = self._rows_of(allow)
            return rows
        return self._rows_of(allow)

    def _rows_of(self, allow: Collection[str]) -> np.ndarray:
        get = self._rows.get
        found = [row for row in (get(id_) for id_ in allow) if row is not None]
        return np.unique(np.asarray(found, dtype=np.int64))

    def _search_exact(
        self, q: np.ndarray, k: int, rows: np.ndarray | None
    ) -> list[tuple[str, float]]:
        live = self._buf[: self._n]
        if rows is not None and len(rows) * 4 < self._n:
            # Selective filter: scoring the allowed rows alone beats scoring all; a run
            # of rows (a datasource's, loaded together) is a view, not a copy.
            lo, hi = int(rows[0]), int(rows[-1]) + 1
            allowed = live[lo:hi] if hi - lo == len(rows) else live[rows]
            return self._top(rows, allowed @ q, k)
        # The copy is made by prepare_screen() (a server's warm-up) or once this index has
        # scored every row a few times: a process that asks one question (the CLI, a
        # search and its plan's) does not pay for it (540k rows: 1-4 s to save ~40 ms).
        screen = self._int8_screen(build=self._scans >= SCREEN_AFTER_SCANS)
        self._scans += 1
        if screen is not None:
            return self._search_screened(screen, q, k, rows)
        scores = _product(live, q)
        excluded = self._excluded(rows)
        if excluded is not None:
            scores[excluded] = -np.inf
        return self._top(None, scores, k)

    def _excluded(self, rows: np.ndarray | None) -> np.ndarray | None:
        """A mask of the rows a search must not return (outside ``rows`` when given, else
        dead), or None when it may return every row."""
        if rows is not None:
            mask = np.ones(self._n, dtype=bool)
            mask[rows] = False
            return mask
        return None if self._alive is None else ~self._alive[: self._n]

    def _search_screened(
        self, screen: Int8Screen, q: np.ndarray, k: int, rows: np.ndarray | None
    ) -> list[tuple[str, float]]:
        """The exact search's result, from the int8 scores: the first candidates by int8
        score are scored in float32, then every row whose int8 score comes within the
        error bound of the k-th best of those (the only rows that can beat it)."""
        approx, bound = screen.scores(q)
        excluded = self._excluded(rows)
        if excluded is not None:
            approx[excluded] = -np.inf
        finite = int(np.count_nonzero(approx > -np.inf))
        k = min(k, finite)
        if k == 0:
            return []
        cand = _leading(approx, min(finite, max(2 * k, k + 32)), k)
        exact = self._buf[cand] @ q
        kth = float(np.partition(exact, len(exact) - k)[len(exact) - k])
        reach = np.nonzero(approx >= kth - bound)[0]
        if len(reach) * 4 >= self._n:  # a bound too loose to save anything
            scores = _product(self._buf[: self._n], q)
            if excluded is not None:
                scores[excluded] = -np.inf
            return self._top(None, scores, k)
        return self._top(reach, self._buf[reach] @ q, k)

    def _int8_screen(self, build: bool = True) -> Int8Screen | None:
        """The int8 copy of the rows, made (when ``build``) on first use after a change;
        None below :data:`SCREEN_MIN_ROWS`, without onnxruntime, or not made yet."""
        if self._n < SCREEN_MIN_ROWS or self._screen_failed or not screen_available():
            return None
        with self._lock:
            screen = self._screen
            if screen is None or screen.rows != self._n or screen.pid != os.getpid():
                if not build:
                    return None
                try:
                    self._screen = Int8Screen(self._buf[: self._n])
                except (MemoryError, RuntimeError, OSError, ValueError) as exc:
                    # ONNX Runtime refused the graph or memory ran short: this index
                    # searches with the float32 product, as without onnxruntime.
                    log.warning("int8 copy of %d vectors not made (%s)", self._n, exc)
                    self._screen_failed = True
                    return None
            return self._screen

    def _top(self, rows: np.ndarray | None, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Best ``k`` of ``scores`` (row ``rows[i]``, or ``i`` when rows is None)."""
        finite = int(np.count_nonzero(scores > -np.inf))
        k = min(k, finite)
        if k == 0:
            return []
        if k < len(scores):
            part = np.argpartition(-scores, k - 1)[:k]
            # Everything tied with the k-th score competes on id.
            picked = np.nonzero(scores >= scores[part].min())[0]
        else:
            picked = np.nonzero(scores > -np.inf)[0]
        row_of = picked if rows is None else rows[picked]
        ranked = sorted(
            zip(row_of.tolist(), scores[picked].tolist(), strict=True),
            key=lambda rs: (-rs[1], self._ids[rs[0]]),
        )
        return [(self._ids[row], float(score)) for row, score in ranked[:k]]

    def _search_ann(
        self, q: np.ndarray, k: int, rows: np.ndarray | None
    ) -> list[tuple[str, float]]:
        index = self._ann_index()
        # expansion_search may be tuned on a live index (recall vs latency).
        if index.expansion_search != self.expansion_search:
            index.expansion_search = self.expansion_search
        live = len(self)
        fetch = k if rows is None else math.ceil(k * _OVERSAMPLE * live / len(rows))
        if rows is not None and fetch > _MAX_FETCH:
            return self._search_exact(q, k, rows)
        # Over-fetch so the float32 re-scoring can repair the order the
        # quantised graph got slightly wrong, and ties at the boundary compete.
        fetch = min(live, max(fetch, 2 * k, k + 32))
        keys = np.asarray(index.search(q, fetch).keys, dtype=np.int64)
        if rows is not None:
            keys = keys[np.isin(keys, rows)]
            if len(keys) < k:
                return self._search_exact(q, k, rows)
        scores = self._buf[keys] @ q
        return self._top(keys, scores, k)

    def _ann_index(self) -> Any:
        with self._lock:
            if self._ann is None:
                rows = self._live_rows()
                kept = None if self.ann_dir is None else self._graph_path(rows)
                self._ann = _restore(kept, len(rows)) if kept is not None else None
                self._ann_view = self._ann is not None
                if self._ann is None:
                    self._ann = self._build_ann(rows)
                    if kept is not None:
                        _keep(self._ann, kept)
            return self._ann

    def _build_ann(self, rows: np.ndarray) -> Any:
        from usearch.index import Index

        started = time.perf_counter()
        index = Index(
            ndim=self._dims,
            metric="ip",
            dtype=self.ann_dtype,
            connectivity=self.connectivity,
            expansion_add=self.expansion_add,
            expansion_search=self.expansion_search,
        )
        # Chunks bound the temporary copy when the matrix is memory-mapped.
        for start in range(0, len(rows), 100_000):
            chunk = rows[start : start + 100_000]
            index.add(chunk.astype(np.uint64), np.ascontiguousarray(self._buf[chunk]))
        log.info(
            "built HNSW index over %d vectors in %.1fs", len(rows), time.perf_counter() - started
        )
        return index

    def _graph_path(self, rows: np.ndarray) -> Path:
        """Where the graph of ``rows`` is kept: named by a digest of the rows, their ids
        and vectors, and the graph's parameters (its keys are the row numbers)."""
        assert self.ann_dir is not None
        digest = hashlib.sha1(
            f"{self._dims}|{self.ann_dtype}|{self.connectivity}|{self.expansion_add}|".encode()
        )
        digest.update(rows.astype(np.int64).tobytes())
        digest.update("\0".join(self._ids[r] for r in rows.tolist()).encode())
        whole = len(rows) == self._n  # no dead row: the leading rows as they are
        digest.update(np.ascontiguousarray(self._buf[: self._n] if whole else self._buf[rows]).data)
        return self.ann_dir / f"hnsw-{digest.hexdigest()[:20]}.usearch"

    def _drop_view(self) -> None:
        """Before a change: a graph mapped from a kept file cannot change, so it goes (the
        next search builds the new vectors' graph, or reads it)."""
        if self._ann_view:
            self._ann = None
            self._ann_view = False

    # -- updates -----------------------------------------------------------

    def add(self, ids: Sequence[str], matrix: np.ndarray) -> None:
        """Add vectors; an id already present gets its vector replaced."""
        ids = list(ids)
        matrix = _as_matrix(matrix)
        if matrix.shape[0] != len(ids):
            raise ConfigError(f"{len(ids)} ids for {matrix.shape[0]} vectors")
        if matrix.shape[1] != self._dims:
            raise ConfigError(f"vectors have {matrix.shape[1]} dimensions, the index {self._dims}")
        _check_ids(ids)
        if not ids:
            return
        self._allowed.clear()
        self._drop_view()
        self._screen = None
        self.remove(id_ for id_ in ids if id_ in self._rows)
        self._reserve(len(ids))
        start = self._n
        self._buf[start : start + len(ids)] = matrix
        self._n += len(ids)
        self._ids.extend(ids)
        for offset, id_ in enumerate(ids):
            self._rows[id_] = start + offset
        if self._alive is not None:
            self._alive[start : self._n] = True
        if self._ann is not None:
            new_rows = np.arange(start, self._n, dtype=np.uint64)
            self._ann.add(new_rows, np.ascontiguousarray(self._buf[start : self._n]))

    def remove(self, ids: Iterable[str]) -> int:
        """Remove ids (unknown ones are ignored); returns how many were removed."""
        rows = [row for row in (self._rows.pop(id_, None) for id_ in ids) if row is not None]
        if not rows:
            return 0
        self._allowed.clear()
        self._drop_view()
        if self._alive is None:
            self._alive = np.ones(len(self._buf), dtype=bool)
        self._alive[rows] = False
        if self._ann is not None:
            self._ann.remove(np.asarray(rows, dtype=np.uint64))
        dead = self._n - len(self._rows)
        if dead >= _COMPACT_MIN_DEAD and dead > len(self._rows):
            self._compact()
        return len(rows)

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        writable = isinstance(self._buf, np.ndarray) and self._buf.flags.writeable
        if writable and not isinstance(self._buf, np.memmap) and need <= len(self._buf):
            return
        capacity = max(need, int(self._n * 1.5), 64)
        buf = np.empty((capacity, self._dims), dtype=np.float32)
        buf[: self._n] = self._buf[: self._n]
        self._buf = buf
        if self._alive is not None:
            alive = np.ones(capacity, dtype=bool)
            alive[: self._n] = self._alive[: self._n]
            self._alive = alive

    def _compact(self) -> None:
        rows = self._live_rows()
        self._buf = np.ascontiguousarray(self._buf[rows])
        self._ids = [self._ids[r] for r in rows]
        self._rows = {id_: row for row, id_ in enumerate(self._ids)}
        self._n = len(self._ids)
        self._alive = None
        # HNSW keys are row numbers, which just changed; rebuild on next use.
        self._ann = None
        self._screen = None
        self._ann_view = False

    def _live_rows(self) -> np.ndarray:
        if self._alive is None:
            return np.arange(self._n, dtype=np.int64)
        return np.nonzero(self._alive[: self._n])[0].astype(np.int64)


@functools.cache
def _pool(pid: int) -> tuple[ThreadPoolExecutor, int]:
    """The product's threads, one pool per process (a forked child has none of its
    parent's threads, so it makes its own)."""
    workers = max(1, min(os.cpu_count() or 1, 8))
    return ThreadPoolExecutor(workers, thread_name_prefix="layersearch-vectors"), workers


def _product(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix @ q``, in row blocks on a thread per core when the matrix is large (numpy
    leaves the GIL in the product; each row's dot product is the one a single product
    computes, so the scores are the same to the bit)."""
    n = len(matrix)
    if n < SPLIT_MIN_ROWS:
        return np.asarray(matrix @ q)
    pool, workers = _pool(os.getpid())
    if workers < 2:
        return np.asarray(matrix @ q)
    out = np.empty(n, dtype=np.result_type(matrix.dtype, q.dtype))
    bounds = np.linspace(0, n, workers + 1).astype(int).tolist()

    def block(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        np.matmul(matrix[lo:hi], q, out=out[lo:hi])

    for done in [pool.submit(block, i) for i in range(workers)]:
        done.result()
    return out


def _leading(scores: np.ndarray, first: int, k: int) -> np.ndarray:
    """Rows of about the ``first`` best ``scores`` (at least ``k`` of them, all finite):
    those at or above the score a strided sample puts at that rank, which costs a
    partition of the sample instead of the whole (540k: 0.5 against 7.5 ms)."""
    n = len(scores)
    step = n // _SAMPLE
    if step > 1:
        sample = scores[::step]
        place = len(sample) - 1 - min(len(sample) - 1, first // step + 2)
        floor = np.partition(sample, place)[place]
        if floor > -np.inf:
            rows = np.nonzero(scores >= floor)[0]
            if k <= len(rows) <= 64 * first:
                return rows
    return np.argpartition(scores, n - first)[n - first :]


def _restore(path: Path, rows: int) -> Any:
    """The graph kept at ``path`` as a read-only map, or None when there is none, or it
    cannot be read, or it holds another number of vectors."""
    from usearch.index import Index

    started = time.perf_counter()
    try:
        index = Index.restore(str(path), view=True)
    except (OSError, RuntimeError, ValueError) as exc:
        log.warning("kept HNSW graph %s not read (%s); building it again", path, exc)
        return None
    if index is None:
        return None
    if len(index) != rows:
        log.warning("kept HNSW graph %s holds %d vectors, not %d", path, len(index), rows)
        return None
    touch(path)  # used now: pruned last
    log.info("read HNSW graph of %d vectors in %.2fs", rows, time.perf_counter() - started)
    return index


def _keep(index: Any, path: Path) -> None:
    """Write ``index`` to ``path`` (a temporary file, then renamed: a reader never maps a
    half-written graph) and prune the folder to the :data:`GRAPHS_KEPT` used last. A
    folder that cannot be written costs only the next process's build."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        index.save(str(tmp))
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        log.warning("HNSW graph not kept at %s: %s", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
        return
    prune(path.parent, "hnsw-*.usearch", GRAPHS_KEPT)


def _as_matrix(matrix: np.ndarray) -> np.ndarray:
    if not isinstance(matrix, np.ndarray):
        matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ConfigError(
            f"vectors must be a 2-D (n, d) array with d > 0, got shape {matrix.shape}"
        )
    if matrix.dtype != np.float32:
        matrix = matrix.astype(np.float32)
    return matrix


def _check_ids(ids: list[str]) -> None:
    seen: set[str] = set()
    for id_ in ids:
        if not isinstance(id_, str):
            raise ConfigError(f"vector ids must be strings, got {type(id_).__name__}")
        if id_ in seen:
            raise ConfigError(f"duplicate id {id_!r} in vector index input")
        seen.add(id_)


def _usearch_or_warn() -> bool:
    global _warned_no_usearch
    if ann_available():
        return True
    if not _warned_no_usearch:
        log.warning(
            "usearch is not installed, so vector search stays exact: pip install 'layersearch[ann]'"
        )
        _warned_no_usearch = True
    return False
