"""The schema channel's index of a snapshot: saved beside its tables, loaded back, or
built in a forked process while a load writes the rest (:class:`CoverageBuild`)."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import (
    Callable,
)
from pathlib import Path
from typing import Any

from layersearch.corpora.snapshot.layout import _PENDING, COVERAGE, code_fingerprint
from layersearch.ranking.persist import (
    fsync_dir,
    load_object,
    save_object,
)

log = logging.getLogger("layersearch.corpora.snapshot")


def _load_coverage(path: Path, maps: list[Any] | None = None, settings: str = "") -> Any:
    from layersearch.ranking.coverage import CoverageIndex

    if not path.is_dir():
        return None
    try:
        meta = json.loads((path / "coverage.json").read_text())
        if not isinstance(meta, dict) or meta.get("code") != code_fingerprint():
            log.info("schema index on disk was built by another version; rebuilding it")
            return None
        if meta.get("settings", "") != settings:
            log.warning(
                "schema index on disk was built with other index settings "
                "([ranking.entities.index]); rebuilding it"
            )
            return None
        index = load_object(path, maps=maps)
    except (OSError, ValueError) as exc:
        log.info("schema index on disk is unreadable (%s); rebuilding it", exc)
        return None
    if not isinstance(index, CoverageIndex):
        return None
    return index


def _save_coverage(sub: Path, index: Any) -> None:
    tmp = sub / f"{COVERAGE}.{os.getpid()}.{time.time_ns():x}.tmp"
    try:
        _write_coverage(tmp, index)
        _place_coverage(tmp, sub)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_coverage(tmp: Path, index: Any) -> None:
    save_object(index, tmp)
    meta = {"code": code_fingerprint(), "settings": getattr(index, "settings", "")}
    (tmp / "coverage.json").write_text(json.dumps(meta))


def _place_coverage(tmp: Path, sub: Path) -> None:
    """Move a complete schema index directory ``tmp`` into snapshot directory ``sub``."""
    target = sub / COVERAGE
    if target.exists():
        # an unreadable one (else we would not be here): move it aside, then replace it
        aside = sub / f"{COVERAGE}.{os.getpid()}.{time.time_ns():x}.old"
        with contextlib.suppress(OSError):
            os.rename(target, aside)
        shutil.rmtree(aside, ignore_errors=True)
    try:
        os.rename(tmp, target)
    except OSError:
        # another process published one first: theirs is as good
        shutil.rmtree(tmp, ignore_errors=True)
    fsync_dir(sub)


def _fork_allowed() -> bool:
    """Whether a build may run part of itself in a forked process: on Linux (fork with
    threads is unsafe on macOS, absent on Windows), unless ``LAYERSEARCH_BUILD_FORK=0``."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and os.environ.get("LAYERSEARCH_BUILD_FORK", "1").strip() != "0"
    )


def _error_file(tmp: Path) -> Path:
    """Where a build process writing ``tmp`` reports why it failed."""
    return tmp.with_suffix(".err")


def _die_with(parent: int) -> None:
    """In a build process: be killed when ``parent`` dies (Linux's parent-death signal), so
    a killed load leaves no process computing an index nobody will take."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(1)


class CoverageBuild:
    """The schema index of rows about to become a snapshot, built in a forked process
    while this one writes the store, the snapshot tables and the full-text index.

    The two halves of a large load are each one core's worth of Python: the schema index
    (a third of a 1M-entity build) needs only the entities and their joins, which a load
    has before it writes anything, so it runs beside the rest instead of after it. The
    child builds from the same rows as the snapshot (so the same index, byte for byte,
    as building it here: the index sorts what it is given) into a directory under the
    snapshot base, then exits without running any of this process's exit handlers; the
    parent moves that directory into the snapshot it publishes (:meth:`take`), or kills
    the child and removes it (:meth:`cancel`). When anything fails the index is built
    in process, as without a child. The child touches nothing but its own directory:
    no store connection, no full-text writer, no logging (another thread may hold a
    lock that the child would inherit held)."""

    def __init__(self, pid: int, tmp: Path) -> None:
        self.pid = pid
        self.tmp = tmp

    @classmethod
    def start(cls, base: Path, build: Callable[[], Any]) -> CoverageBuild | None:
        """Fork a child that runs ``build`` and saves its index; None when this platform
        or the environment rules a child out, or the fork fails (build in process)."""
        if not _fork_allowed():
            return None
        try:
            if (base.exists() or base.is_symlink()) and not base.is_dir():
                return None  # publish_snapshot replaces the stray file; build in process
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        tmp = base / f"{COVERAGE}-{os.getpid()}-{time.time_ns():x}{_PENDING}"
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:
            log.info("schema index built in process (cannot fork: %s)", exc)
            return None
        if pid == 0:  # pragma: no cover - runs in the child, which never returns
            code = 1
            # (a CLI's start-up pause of the collector, layersearch.cli, ends with its
            # timer thread, which the child does not have)
            gc.enable()
            try:
                _die_with(parent)
                index = build()
                if os.getppid() == parent:  # nobody to take it otherwise
                    _write_coverage(tmp, index)
                    code = 0
            except BaseException as exc:  # noqa: BLE001 - reported through the exit status
                with contextlib.suppress(BaseException):
                    _error_file(tmp).write_text(f"{type(exc).__name__}: {exc}")
            finally:
                os._exit(code)
        return cls(pid, tmp)

    def _wait(self) -> str | None:
        """Reap the child; None when it succeeded, else why not."""
        pid = self.pid
        if pid <= 0:
            return "already taken"
        try:
            # (interrupted here, the pid stays set: cancel() then kills and reaps it)
            _, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            self.pid = 0
            return "its process was reaped by someone else"
        self.pid = 0
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and self.tmp.is_dir():
            # ru_maxrss is in KiB on Linux
            log.info(
                "schema index built by process %d: %.1f s of CPU, peak RSS %.0f MiB",
                pid,
                usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss / 1024,
            )
            return None
        err = _error_file(self.tmp)
        try:
            detail = err.read_text().strip()
        except OSError:
            detail = f"exit status {code}"
        with contextlib.suppress(OSError):
            err.unlink()
        return detail or f"exit status {code}"

    def take(self, sub: Path) -> bool:
        """Wait for the child and move its index into snapshot directory ``sub``; False
        (logged) when it failed, and then the caller builds the index itself."""
        why = self._wait()
        if why is None:
            try:
                _place_coverage(self.tmp, sub)
                return True
            except OSError as exc:
                why = str(exc)
        log.info("schema index built in process (its build process failed: %s)", why)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def cancel(self) -> None:
        """Stop the child if it still runs and remove what it wrote (no-op once taken)."""
        if self.pid > 0:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            _error_file(self.tmp).unlink()
