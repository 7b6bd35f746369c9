"""Generation directories of a derived index (the full-text indexes, the entity snapshot):
reading the small files that name and describe them, and removing the ones nobody uses.

A folder ``base`` holds generation directories ``g<time>-<pid>/`` and a ``CURRENT`` file
naming the one in use. A process holds a shared lock on ``<generation>.lock`` (a file
beside the directory) from before it creates a generation, or from when it opens one,
for as long as it may read it (:func:`hold`). :func:`sweep` removes a generation only
when ``CURRENT`` does not name it and an exclusive lock on its lock file can be taken:
no live process uses it. A killed process's locks die with it, so what a killed run
left is removed by the next sweep, however recent; a live reader's generation never is.

Pointer and marker files are read with :func:`read_small`: a regular file of bounded
size, never a FIFO (which would block every reader) or a device (``/dev/zero`` would be
read until memory runs out).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import threading
import time
import weakref
from collections import Counter
from collections.abc import Collection
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, the grace period alone
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CURRENT",
    "MAX_SMALL_FILE",
    "Hold",
    "current_dir",
    "done_with",
    "held_current",
    "hold",
    "point_at",
    "read_small",
    "sweep",
    "using",
]

log = logging.getLogger("layersearch.ranking.generations")

CURRENT = "CURRENT"
LOCK_SUFFIX = ".lock"
#: the largest pointer or marker file read (they hold a name, or a few hundred bytes of JSON)
MAX_SMALL_FILE = 1 << 16
#: a generation without a lock file (written by a version before the locks) may still be
#: read by a process of that version: kept this long after its last change
LEGACY_GRACE_S = 600.0
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


def read_small(path: Path, limit: int = MAX_SMALL_FILE) -> str:
    """The UTF-8 text of ``path``, a regular file of at most ``limit`` bytes. Anything else
    (a FIFO, a device, a directory, a symbolic link, a larger file) is an OSError saying
    what it is, without reading it; bytes that are not UTF-8 are a ValueError."""
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path.name} is {info.st_size} bytes, over {limit}")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(f"{path.name} is over {limit} bytes")
    return data.decode("utf-8")


class Hold:
    """A shared lock on one generation, kept by the object that reads it (an index, a
    snapshot) and released by :meth:`release`, when it is collected with that object
    (``weakref.finalize``), or when the last user of its index folder in this process is
    done with it (:func:`done_with`)."""

    def __init__(self, fd: int, generation: Path) -> None:
        self._fd: int | None = fd
        self.generation = generation
        self._finalizer = weakref.finalize(self, os.close, fd)
        with _registry_lock:
            _live.add(self)

    def release(self) -> None:
        self._finalizer()
        self._fd = None


_registry_lock = threading.Lock()
#: every hold of this process that is not released yet
_live: weakref.WeakSet[Hold] = weakref.WeakSet()
#: index folders → how many users (open ``Layersearch`` objects) this process has on each
_users: Counter[Path] = Counter()


def using(root: Path) -> None:
    """One more user of the indexes under ``root`` in this process (a ``Layersearch``
    opened on its store)."""
    with _registry_lock:
        _users[root] += 1


def done_with(root: Path) -> None:
    """One user of ``root`` fewer; when it was the last, every hold on a generation under
    ``root`` is released at once: closed, this process reads none of them, and the next
    sweep may remove them (the objects holding them could live on until the garbage
    collector finds them)."""
    with _registry_lock:
        _users[root] -= 1
        if _users[root] > 0:
            return
        del _users[root]
        holds = [h for h in _live if h.generation.is_relative_to(root)]
    for h in holds:
        h.release()


def _open_lock(path: Path) -> int:
    """A read-only descriptor of the lock file (created when missing, where the folder
    may be written): flock needs no write access, and a file open for writing would keep
    its file system from being remounted read-only."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY)


def _lock_path(generation: Path) -> Path:
    return generation.with_name(generation.name + LOCK_SUFFIX)


def hold(generation: Path) -> Hold | None:
    """A shared lock on ``generation`` (its directory may not exist yet: take it before
    creating one), or None where locks cannot be taken (no ``fcntl``, a folder this
    process may not write and no lock file in it)."""
    if fcntl is None:
        return None
    path = _lock_path(generation)
    try:
        fd = _open_lock(path)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return Hold(fd, generation)


def current_dir(base: Path) -> Path | None:
    """The generation directory ``base/CURRENT`` names, if it can be read (a small
    regular file, :func:`read_small`) and names one (no path, no NUL)."""
    try:
        name = read_small(base / CURRENT).strip()
    except (OSError, ValueError):  # ValueError: bytes that are not UTF-8
        return None
    if not name or "/" in name or name.startswith(".") or "\0" in name:
        return None
    return base / name


def point_at(base: Path, generation: Path) -> None:
    """Make ``CURRENT`` under ``base`` name ``generation`` (written aside, then renamed
    over: readers see the old name or the new one). Derived data: a folder where the
    ``CURRENT`` file belongs is removed first (a FIFO or a link is replaced by the rename)."""
    pointer = base / CURRENT
    if pointer.is_dir() and not pointer.is_symlink():
        log.warning("removing %s: a folder where the index's CURRENT file belongs", pointer)
        shutil.rmtree(pointer)
    tmp = base / f"{CURRENT}.{os.getpid()}.tmp"
    tmp.write_text(generation.name)
    os.replace(tmp, pointer)


def held_current(base: Path) -> tuple[Path | None, Hold | None]:
    """The current generation under ``base`` and a shared lock on it (None where locks
    cannot be taken). A sweep may remove the generation ``CURRENT`` named a moment ago
    (another process published a newer one; the lock file goes with it): then
    ``CURRENT`` is read again."""
    sub = None
    for _ in range(5):
        sub = current_dir(base)
        if sub is None:
            return None, None
        lock = hold(sub)
        if lock is None or (sub.is_dir() and _lock_path(sub).exists()):
            return sub, lock
        lock.release()
    return sub, None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _remove_if_unused(generation: Path, now: float) -> bool:
    """Remove ``generation`` (and its lock file) when no process holds its lock."""
    lock = _lock_path(generation)
    legacy = not lock.exists()
    if legacy:
        try:
            if generation.stat().st_mtime > now - LEGACY_GRACE_S:
                return False
        except OSError:
            return False
    if fcntl is None:
        if legacy:
            shutil.rmtree(generation, ignore_errors=True)
        return legacy
    try:
        fd = _open_lock(lock)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live process reads it, or is writing it
        shutil.rmtree(generation, ignore_errors=True)
        with contextlib.suppress(OSError):
            lock.unlink()
        return not generation.exists()
    finally:
        os.close(fd)


def sweep(base: Path, current: Path | None, keep: Collection[Path] = ()) -> list[str]:
    """Remove the generations under ``base`` that no live process uses (see the module
    docstring), the lock files left without their generation, and the ``CURRENT``
    temporary files of processes that died before renaming them. ``current`` (the
    generation ``CURRENT`` names) and ``keep`` are never removed. Returns the names
    removed; errors (a folder this process may not write) leave things as they are."""
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        try:
            if name.startswith("g") and entry.is_dir() and not entry.is_symlink():
                if entry == current or entry in keep:
                    continue
                if _remove_if_unused(entry, now):
                    removed.append(name)
            elif name.startswith("g") and name.endswith(LOCK_SUFFIX):
                generation = entry.with_name(name[: -len(LOCK_SUFFIX)])
                if not generation.exists() and generation not in keep and generation != current:
                    _remove_lock_alone(entry)
            elif name.startswith(f"{CURRENT}.") and name.endswith(".tmp"):
                pid = name[len(CURRENT) + 1 : -len(".tmp")]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    entry.unlink()
                    removed.append(name)
        except OSError as exc:
            log.debug("sweeping %s: %s", entry, exc)
    if removed:
        log.info("removed %d unused generation files under %s", len(removed), base)
    return removed


def _remove_lock_alone(lock: Path) -> None:
    """Remove a lock file whose generation is gone, unless a process holds it (one that
    is about to create the generation)."""
    if fcntl is None:
        return
    fd = os.open(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        if not lock.with_name(lock.name[: -len(LOCK_SUFFIX)]).exists():
            lock.unlink()
    finally:
        os.close(fd)
