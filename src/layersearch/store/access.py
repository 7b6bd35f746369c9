"""Who may open one DuckDB file, and when: readers share it, a writer has it alone.

DuckDB refuses, in one process, a read-write connection to a file while a read-only one
is open ("different configuration"), and lets a process write only while no other
process has the file open. Every connection :class:`~layersearch.store.duckdb.DuckDBStore`
opens passes a :class:`Gate`, one per file and process:

- in this process, a read waits while a write runs or waits (writers first: a stream of
  searches never starves a save), and a write waits for the reads in flight to close;
- across processes, a writer holds an exclusive ``flock`` on ``<store>.lock`` while it
  writes, and a reader passes through that lock (shared, released at once) before it
  opens the file: the readers of other processes stop arriving while a writer waits for
  theirs to finish, so a busy server cannot starve a CLI that writes, nor the reverse.

A thread that already holds the file (a read inside a write, a read inside a read) passes
at once. Every wait is bounded by the caller's deadline; past it :class:`StoreBusy` says
what was waited for and how to wait longer. The lock file is released by the kernel when
its holder dies, so a killed writer never leaves a store locked.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from layersearch.calls import seconds_env
from layersearch.errors import StoreBusy, StoreError

try:
    import fcntl
except ImportError:  # Windows: DuckDB's own lock, retried, is all there is
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_TIMEOUT_S", "Gate", "gate_for", "lock_path", "lock_timeout"]

#: seconds a read or write waits for the store before StoreBusy (LAYERSEARCH_LOCK_TIMEOUT)
LOCK_TIMEOUT_S = 30.0


def lock_timeout() -> float:
    """``LAYERSEARCH_LOCK_TIMEOUT`` when set (seconds above 0, at most a day), else
    :data:`LOCK_TIMEOUT_S`; read on each call. The PostgreSQL store bounds its wait
    for another writer by the same number."""
    return seconds_env("LAYERSEARCH_LOCK_TIMEOUT", LOCK_TIMEOUT_S, 86_400)


#: opens a DuckDB connection to the file: (read-write, deadline) -> connection
Connect = Callable[[bool, float], Any]

#: what a reader or writer waiting on the lock file sleeps between tries, at most
_POLL_MAX_S = 0.02


def lock_path(store: Path) -> Path:
    """The file whose lock a writer of ``store`` holds (created beside it, never removed)."""
    return store.with_name(store.name + ".lock")


class Gate:
    """Readers and writers of one store file in this process (see the module).

    Turns are taken in arrival order: a read waits for the writes that asked before it,
    a write for the reads and writes that asked before it, so neither a stream of
    searches nor a stream of writes starves the other. The reads in flight share one
    read-only DuckDB connection (a cursor each): the database is opened once for all of
    them, and closed when the last one ends, so that a write can open it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_file = lock_path(path)
        self._cond = threading.Condition(threading.Lock())
        #: requests waiting their turn, in arrival order: (request, is a write)
        self._queue: deque[tuple[object, bool]] = deque()
        self._readers = 0
        self._writer: int | None = None  # the thread that writes
        self._fd: int | None = None  # the lock file, held by the writer
        #: the read-only connection the reads in flight take their cursors from
        self._base: Any = None
        self._cursors = 0
        #: pins in force (:meth:`pinned`): the connection stays open between their reads
        self._pins = 0
        self._base_lock = threading.Lock()
        #: per thread: [reads held, writes held]
        self._mine = threading.local()

    def _held(self) -> list[int]:
        held: list[int] | None = getattr(self._mine, "held", None)
        if held is None:
            held = self._mine.held = [0, 0]
        return held

    # -- turns --------------------------------------------------------------------------------

    def _enter(self, write: bool, deadline: float) -> None:
        request = object()
        with self._cond:
            self._queue.append((request, write))
            try:
                while not self._may_enter(request, write):
                    if not self._cond.wait(_remaining(deadline)):
                        raise self._busy(self._blocking())
            finally:
                self._queue.remove((request, write))
                self._cond.notify_all()
            if write:
                self._writer = threading.get_ident()
            else:
                self._readers += 1

    def _may_enter(self, request: object, write: bool) -> bool:
        if self._writer is not None:
            return False
        if write:
            return not self._readers and self._queue[0][0] is request
        for waiting, is_write in self._queue:
            if waiting is request:
                return True
            if is_write:
                return False
        return False

    def _blocking(self) -> str:
        if self._writer is not None:
            return "a write in this process"
        if self._readers:
            return "the reads in flight in this process"
        return "the writes queued before it in this process"

    def _leave(self, write: bool) -> None:
        with self._cond:
            if write:
                self._writer = None
            else:
                self._readers -= 1
            self._cond.notify_all()

    # -- reads --------------------------------------------------------------------------------

    @contextmanager
    def read(self, deadline: float, connect: Connect) -> Iterator[Any]:
        """A connection for reading, once no write of this file runs or was asked for
        earlier. ``connect(write, deadline)`` opens one (retrying DuckDB's lock)."""
        held = self._held()
        if held[1]:
            # This thread writes: a second connection joins its read-write database.
            held[0] += 1
            try:
                con = connect(True, deadline)
                try:
                    yield con
                finally:
                    con.close()
            finally:
                held[0] -= 1
            return
        if not held[0]:
            self.pass_writers(deadline)
            self._enter(False, deadline)
        held[0] += 1
        try:
            con = self._cursor(connect, deadline)
            try:
                yield con
            finally:
                self._close_cursor(con)
        finally:
            held[0] -= 1
            if not held[0]:
                self._leave(False)

    def _cursor(self, connect: Connect, deadline: float) -> Any:
        # Another read may be opening the shared connection (waiting for a writer of
        # another process): wait for it no longer than this read may wait.
        if not self._base_lock.acquire(timeout=_remaining(deadline)):
            raise self._busy("a write by another process")
        try:
            if self._base is None:
                self._base = connect(False, deadline)
            con = self._base.cursor()
            self._cursors += 1
            return con
        finally:
            self._base_lock.release()

    def _close_cursor(self, con: Any) -> None:
        with self._base_lock:
            try:
                con.close()
            finally:
                self._cursors -= 1
                if not self._pins:
                    self._close_idle_base()

    def _close_idle_base(self) -> None:
        """Close the shared read connection when no read uses it; under the base lock."""
        if not self._cursors and self._base is not None:
            base, self._base = self._base, None
            base.close()

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Keep the shared read connection open between the reads made meanwhile (by any
        thread), instead of opening the file again for each (a DuckDB open is ~15 ms: a
        new process's first dense search reads the store five times). Not a read: it holds
        no turn, a write in this process closes the idle connection first, and a reader
        joins the open connection without waiting for another process's writer (which
        cannot open the file before it closes); it closes when the last pin ends. For one
        bounded piece of work (a CLI command's search), never around a server's searches:
        overlapping pins would keep the file open and another process's writer waiting."""
        with self._base_lock:
            self._pins += 1
        try:
            yield
        finally:
            with self._base_lock:
                self._pins -= 1
                if not self._pins:
                    self._close_idle_base()

    def pass_writers(self, deadline: float) -> None:
        """Wait until no writer of another process holds the lock file (a reader calls
        this before it joins the reads in flight, and before each attempt to open the
        file). A thread that holds the file already does not wait for it."""
        held = self._held()
        if fcntl is None or held[1] or (held[0] and self._base is not None):
            return
        if self._pins and self._base is not None:
            return  # a writer elsewhere waits for this connection to close: not the reverse
        fd = self._open_lock(create=False)
        if fd is None:
            return
        try:
            self._flock(fd, fcntl.LOCK_SH, deadline, "a write by another process")
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- writes -------------------------------------------------------------------------------

    @contextmanager
    def write(self, deadline: float) -> Iterator[None]:
        """Hold the file alone for writing, in this process and across processes."""
        held = self._held()
        if held[1]:
            held[1] += 1
            try:
                yield
            finally:
                held[1] -= 1
            return
        if held[0]:
            # Waiting would wait for ourselves: a bug in the caller, said plainly.
            raise StoreError(
                f"store {self.path}: a write was started while this thread still reads the "
                "store (an open iteration?); finish the read first"
            )
        self._enter(True, deadline)
        held[1] += 1
        try:
            with self._base_lock:  # a pinned connection no read uses (see ``pinned``)
                self._close_idle_base()
            self._lock_out_others(deadline)
            yield
        finally:
            held[1] -= 1
            self._release_lock_file()
            self._leave(True)

    def _lock_out_others(self, deadline: float) -> None:
        if fcntl is None:
            return
        fd = self._open_lock(create=True)
        if fd is None:
            return
        try:
            self._flock(fd, fcntl.LOCK_EX, deadline, "a write by another process")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _release_lock_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- the lock file ------------------------------------------------------------------------

    def _open_lock(self, *, create: bool) -> int | None:
        """The lock file, opened; None where it cannot be (a folder this process may not
        write: then no writer can be here either, and DuckDB's own lock is retried)."""
        try:
            return os.open(self.lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            pass
        try:
            return os.open(self.lock_file, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            if create and self.path.parent.exists():
                raise StoreError(
                    f"cannot open the store's lock file {self.lock_file}: {exc.strerror or exc}"
                ) from exc
            return None

    def _flock(self, fd: int, mode: int, deadline: float, what: str) -> None:
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            if time.monotonic() >= deadline:
                raise self._busy(what)
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, _POLL_MAX_S)

    def _busy(self, what: str) -> StoreBusy:
        return StoreBusy(
            f"store {self.path} is busy: waited for {what} until the lock timeout "
            "(LAYERSEARCH_LOCK_TIMEOUT seconds, 30 by default) passed; nothing was changed. "
            "Run the command again, or raise LAYERSEARCH_LOCK_TIMEOUT"
        )

    def _after_fork(self) -> None:
        """In a forked child: no thread of the child holds anything; the lock file a
        writing parent thread holds is closed here (the parent's own descriptor keeps
        it), and the parent's read connection is left alone (kept from being closed)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        if self._base is not None:
            _INHERITED.append(self._base)
        self.__init__(self.path)  # type: ignore[misc]


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


_GATES: dict[str, Gate] = {}
#: connections a forked child inherited: never closed there (DuckDB is not fork-safe)
_INHERITED: list[Any] = []
_GATES_LOCK = threading.Lock()


def gate_for(path: Path) -> Gate:
    """The one gate of the file ``path`` in this process (however it is spelled)."""
    key = os.path.realpath(path)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = Gate(Path(key))
        return gate


def _after_fork_in_child() -> None:
    global _GATES_LOCK
    _GATES_LOCK = threading.Lock()
    for gate in _GATES.values():
        gate._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
