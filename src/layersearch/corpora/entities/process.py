"""Process-wide settings of the entity corpus: garbage collection around loads and
installed snapshots, the fork threshold of a load's schema-index build, the pool
full-text searches run on, and numpy's BLAS threads."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_FULLTEXT_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
#: Variables by which a user chooses BLAS's thread count (then left as chosen).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_BLAS_DONE = False


def one_blas_thread() -> None:
    """numpy's BLAS on one thread in this process, unless the user chose a count (one of
    :data:`BLAS_THREAD_VARIABLES` set; the CLI sets ``OPENBLAS_NUM_THREADS`` before numpy
    loads). Done once, when a store is opened in process.

    A search's matrix products are small (a question's words against a catalog's, a
    query against stored vectors); with BLAS's default of a thread per core their
    workers spin on the core the search's next step needs: the lexical Spider search
    took 5.50 ms p50 with them and 2.37 ms with one thread (``benchmarks/stages.py``,
    one run each, a shared 2-core host). Without threadpoolctl nothing changes."""
    global _BLAS_DONE
    if _BLAS_DONE or any(os.environ.get(v) for v in BLAS_THREAD_VARIABLES):
        return
    _BLAS_DONE = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")


def fulltext_pool() -> ThreadPoolExecutor:
    """The workers full-text searches run on (one per core, at most four: concurrent
    searches of a server each get one), started on first use."""
    global _FULLTEXT_POOL
    with _POOL_LOCK:
        if _FULLTEXT_POOL is None:
            _FULLTEXT_POOL = ThreadPoolExecutor(
                min(4, os.cpu_count() or 1), thread_name_prefix="layersearch-fulltext"
            )
        return _FULLTEXT_POOL


#: A full-text index of fewer documents is searched on the calling thread, not beside
#: the schema channel on a worker. tantivy's part of such a search is short, and handing
#: it to a worker costs more than it hides: a thread woken, and the worker's Python (the
#: query built, the hits resolved) contending for the GIL with the schema channel, whose
#: numpy passes release it. On a shared 2-core host, 600 searches alternating the two in
#: one process: 100k entities + 10k memories 5.02 ms p50 on workers, 4.35 on the calling
#: thread; Spider 2.20 and 2.01; at 1M entities the workers win (15.48 against 16.59).
FULLTEXT_THREAD_MIN_DOCS = 250_000


def fulltext_future(docs: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
    """``fn(*args, **kwargs)`` for a full-text index of ``docs`` documents: on a worker
    of :func:`fulltext_pool` from :data:`FULLTEXT_THREAD_MIN_DOCS` documents, else run
    now (its result, or its error, waits in the future as a worker's would)."""
    if docs >= FULLTEXT_THREAD_MIN_DOCS:
        return fulltext_pool().submit(fn, *args, **kwargs)
    done: Future[T] = Future()
    try:
        done.set_result(fn(*args, **kwargs))
    except BaseException as exc:  # noqa: BLE001 - raised again by result(), as a worker's is
        done.set_exception(exc)
    return done


def _forget_pool_in_child() -> None:
    # A forked child has none of the parent's worker threads: a pool inherited from it
    # would queue work that no thread ever runs. The child starts its own on first use.
    global _FULLTEXT_POOL, _POOL_LOCK
    _FULLTEXT_POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


#: A load of at least this many entities builds its schema index in a forked process beside
#: the rest (see CoverageBuild): below it, the fork and the wait cost more than they save.
FORK_MIN_ENTITIES = 50_000


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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


def settle_heap() -> None:
    """Keep a newly installed snapshot out of later full garbage collections.

    A process serving searches holds long-lived objects (memories, caches, the objects
    its build left behind); every full collection walks all of them, and one of 224 ms
    landed in the middle of a run of 1M searches. Collect the young generations, then
    freeze what survives: later collections walk only what was allocated since. Frozen
    objects are still freed by reference counting (a replaced snapshot is: it holds no
    cycles); only cyclic garbage among them is never reclaimed. Not a full collection:
    it walks every object, 120 ms of a reopened 100k store's first search. While the
    collector is paused (a new CLI process's first seconds: ``cli.GC_PAUSE_S``) nothing
    is collected first: every object the imports made is still young, and walking them
    took ~15 ms of a one-question command, for garbage the pause kept anyway."""
    if gc.isenabled():
        gc.collect(1)
    gc.freeze()
