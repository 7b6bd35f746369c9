"""A snapshot (tables, their lazy maps, the schema index) and its generation directories:
open the current one, publish a new one, re-stamp one that still holds."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import (
    Callable,
)
from pathlib import Path
from typing import Any

from layersearch.corpora.snapshot.layout import (
    _GRACE_S,
    COVERAGE,
    CURRENT,
    FORMAT,
    TABLES,
    _current_dir,
    _read_marker,
    _write_marker,
    code_fingerprint,
)
from layersearch.corpora.snapshot.maps import EdgeMap, EntityMap
from layersearch.corpora.snapshot.schema_index import CoverageBuild, _load_coverage, _save_coverage
from layersearch.corpora.snapshot.tables import EntityTables
from layersearch.ranking.fulltext import clear_stray_files
from layersearch.ranking.generations import Hold, held_current, hold, point_at, sweep
from layersearch.ranking.persist import (
    PersistError,
    fsync_dir,
    load_object,
    release_pages,
    save_object,
)
from layersearch.semantic.canonical import Resolver

log = logging.getLogger("layersearch.corpora.snapshot")


def release_freed_memory() -> None:
    """Hand the heap freed by a snapshot rebuild back to the OS (glibc keeps it otherwise).

    Reading and indexing a large semantic layer frees hundreds of MiB in small blocks;
    glibc's malloc keeps them for reuse and the process would stay near its peak.
    ``malloc_trim`` returns whole free pages (milliseconds); elsewhere this does nothing."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL("libc.so.6")
                _TRIM = libc.malloc_trim
            except (OSError, AttributeError):
                log.debug("malloc_trim unavailable (not glibc)")
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


class Snapshot:
    """Tables plus where they live (None: in memory only), and the schema channel's index."""

    def __init__(
        self,
        tables: EntityTables,
        directory: Path | None,
        maps: list[Any] | None = None,
        lock: Hold | None = None,
    ) -> None:
        self.tables = tables
        self.dir = directory
        #: the shared lock on ``directory``: no sweep removes it while this snapshot lives
        self._lock = lock
        #: the files this snapshot maps (its tables, then its schema index)
        self.maps: list[Any] = maps or []
        self.entities = EntityMap(tables)
        self.edges_out = EdgeMap(tables)

    @property
    def content(self) -> str:
        return self.tables.content

    def release_pages(self) -> None:
        """After a pass over every row: pages stay in the page cache, not in this process."""
        release_pages(self.maps)

    @property
    def datasources(self) -> list[str]:
        return list(self.tables.datasources)

    def resolver(self, memory_exists: Callable[[str], bool]) -> Resolver:
        t = self.tables

        def by_id(key: str) -> str | None:
            i = t.lower.get(key)
            return None if i is None else t.ids[i]

        def by_suffix(key: str) -> list[str]:
            k = t.suffix.find(key)
            if k < 0:
                return []
            idx = t.suffix_ids[int(t.suffix_ptr[k]) : int(t.suffix_ptr[k + 1])]
            return [t.ids[int(i)] for i in idx]

        def names() -> list[str]:
            return sorted(set(t.suffix.keys) | set(t.lower))

        return Resolver.from_lookups(by_id, by_suffix, names, memory_exists)

    def coverage(
        self, build: Callable[[], Any], prebuilt: CoverageBuild | None = None, settings: str = ""
    ) -> Any:
        """The persisted schema-channel index of this snapshot; when absent, unreadable or
        built with other index-time ``settings`` (the index's own key of them), taken
        from ``prebuilt`` (a build process started on the same rows) or built with
        ``build``, and saved beside the tables."""
        if self.dir is not None:
            loaded = _load_coverage(self.dir / COVERAGE, self.maps, settings)
            if loaded is not None:
                return loaded
            if prebuilt is not None and prebuilt.take(self.dir):
                loaded = _load_coverage(self.dir / COVERAGE, self.maps, settings)
                if loaded is not None:
                    return loaded
        index = build()
        # The build decoded every entity and edge: the bounded caches are full of them.
        self.entities.clear_cache()
        self.edges_out.clear_cache()
        if self.dir is None:
            return index
        try:
            _save_coverage(self.dir, index)
        except (OSError, PersistError) as exc:
            log.info("schema index kept in memory only: %s", exc)
            return index
        # Serve from the mapped files: the built arrays are freed, the page cache shares them.
        mapped = _load_coverage(self.dir / COVERAGE, self.maps, settings)
        if mapped is None:
            return index
        del index
        release_freed_memory()
        self.release_pages()
        return mapped


def open_snapshot(base: Path, stamp: str) -> tuple[Snapshot | None, str | None]:
    """The current snapshot under ``base`` when it reflects ``stamp``; else ``(None, reason)``."""
    if not base.is_dir():
        return None, "missing"
    sub, lock = held_current(base)
    snap, reason = _open_generation(base, sub, stamp, lock)
    if snap is None:
        if lock is not None:
            lock.release()
    else:
        sweep(base, current=sub)  # what killed runs left, whoever opens next
    return snap, reason


def _open_generation(
    base: Path, sub: Path | None, stamp: str, lock: Hold | None
) -> tuple[Snapshot | None, str | None]:
    if sub is None and ((base / CURRENT).exists() or (base / CURRENT).is_symlink()):
        return None, "corrupt (no readable CURRENT pointer)"
    if sub is None or not sub.is_dir():
        return None, "missing"
    meta = _read_marker(sub)
    if meta is None:
        return None, "corrupt (no readable marker)"
    if meta.get("format") != FORMAT or meta.get("code") != code_fingerprint():
        return None, "built by another version"
    if meta.get("stamp") != stamp:
        return None, "stale"
    maps: list[Any] = []
    try:
        tables = load_object(sub / TABLES, maps=maps)
        if not isinstance(tables, EntityTables) or tables.content != meta.get("content"):
            return None, "corrupt (tables do not match the marker)"
        tables.check()
    except (OSError, ValueError) as exc:
        return None, f"corrupt ({exc})"
    return Snapshot(tables, sub, maps, lock), None


def publish_snapshot(base: Path, tables: EntityTables, stamp: str) -> Snapshot:
    """Make ``tables`` (from :meth:`EntityTables.content_of`, or complete) the snapshot for
    ``stamp`` and return it mapped from disk.

    When the current directory already holds the same content (only memories or
    vectors changed in the store), it is re-stamped and kept with its schema index.
    If nothing can be written, the snapshot stays in memory (logged)."""
    sub = _current_dir(base) if base.is_dir() else None
    meta = _read_marker(sub) if sub is not None and sub.is_dir() else None
    if (
        sub is not None
        and meta is not None
        and meta.get("format") == FORMAT
        and meta.get("code") == code_fingerprint()
        and meta.get("content") == tables.content
    ):
        try:
            _write_marker(sub, stamp, tables.content)
            snap, reason = open_snapshot(base, stamp)
            if snap is not None:
                return snap
            log.info("could not reuse the entity snapshot (%s); writing a new one", reason)
        except OSError as exc:
            log.info("could not re-stamp the entity snapshot: %s", exc)
    if "_sources" in tables.__dict__:
        tables.complete()
    try:
        # Derived data: a stray file where the directory (or a folder above it) belongs
        # is replaced.
        clear_stray_files(base)
        base.mkdir(parents=True, exist_ok=True)
        sub = base / f"g{time.time_ns():x}-{os.getpid()}"
        # before the directory exists, so no sweep takes it half-written; the snapshot
        # opened below holds its own
        creating = hold(sub)
        sub.mkdir()
        save_object(tables, sub / TABLES)
        _write_marker(sub, stamp, tables.content)
        fsync_dir(sub)
        point_at(base, sub)
        fsync_dir(base)
    except (OSError, PersistError) as exc:
        log.warning("entity snapshot kept in memory only (cannot write %s): %s", base, exc)
        return Snapshot(tables, None)
    snap, reason = open_snapshot(base, stamp)
    if creating is not None:
        creating.release()
    _remove_old(base, keep=sub)
    if snap is None:
        log.warning("entity snapshot just written is unreadable (%s); kept in memory", reason)
        return Snapshot(tables, None)
    return snap


def restamp(snapshot: Snapshot, old: str, new: str) -> bool:
    """After a write that left entities and edges alone (a memory saved or forgotten): mark
    the snapshot current for ``new`` if it is still the current one and stamped ``old``."""
    sub = snapshot.dir
    if sub is None or _current_dir(sub.parent) != sub:
        return False
    meta = _read_marker(sub)
    if meta is None or meta.get("stamp") != old or meta.get("content") != snapshot.content:
        return False
    try:
        _write_marker(sub, new, snapshot.content)
    except OSError as exc:
        log.info("could not re-stamp the entity snapshot: %s", exc)
        return False
    return True


def _remove_old(base: Path, keep: Path) -> None:
    """Drop the generation directories no live process uses (``keep`` is the new current
    one; see :mod:`layersearch.ranking.generations`), and what build processes of dead
    loads left (see :class:`CoverageBuild`) once older than the grace period."""
    sweep(base, current=keep)
    cutoff = time.time() - _GRACE_S
    for other in base.iterdir():
        if other == keep or not other.name.startswith(f"{COVERAGE}-"):
            continue
        try:
            if other.stat().st_mtime >= cutoff:
                continue
            if other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
            else:
                other.unlink()
        except OSError:
            continue
