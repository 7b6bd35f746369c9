"""A parsed data file kept as a pickle in the user's cache directory, so that a new
process reads it back instead of parsing it again (WordNet's lexicon: about a second;
the shipped word vectors: 0.2 s of a 0.6 s CLI search).

A copy is found by a tag of what it was parsed from: a version the caller bumps when
what it keeps changes, and each source file's resolved path, size and modification
time. It lives under ``$XDG_CACHE_HOME/layersearch`` (else ``~/.cache/layersearch``)
and is written atomically (a temporary file, then a rename); a cache directory that
cannot be written, or a copy that cannot be read back, only costs the parse. Of each
name the :data:`KEPT` copies used last are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

__all__ = ["KEPT", "cache_dir", "cached", "prune", "read_once", "touch"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Copies kept of each name, the most recently used: a copy is tagged by its sources'
#: paths, so every checkout or virtual environment adds one and the oldest go.
KEPT = 4


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/layersearch``, else ``~/.cache/layersearch``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "layersearch"


def cached(
    name: str, version: int, sources: Sequence[Path], kind: type[T], parse: Callable[[], T | None]
) -> T | None:
    """What ``parse`` returns for ``sources``, read from the cached copy when one matches
    them (``name``: the copy's file name prefix; ``kind``: the type a copy must have).

    Raises ``OSError`` when a source cannot be read (the caller says what is missing).
    A ``None`` from ``parse`` is returned and not cached. A new parse returns the copy read
    back from its pickle: its objects are allocated after the parse's scratch is freed,
    packed together, so the process's memory falls with it."""
    stamps = []
    for path in sources:
        st = path.stat()
        stamps.append(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}")
    tag = hashlib.sha1("|".join([str(version), *stamps]).encode()).hexdigest()[:16]
    copy = cache_dir() / f"{name}-{tag}.pickle"
    try:
        with copy.open("rb") as fh:
            found = pickle.load(fh)
        if isinstance(found, kind):
            touch(copy)
            return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError):
        pass
    parsed = parse()
    if parsed is None:
        return None
    blob = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        tmp = copy.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, copy)
        prune(copy.parent, f"{name}-*.pickle", KEPT)
    except OSError as exc:
        log.debug("%s not cached at %s: %s", name, copy, exc)
    del parsed
    again: T = pickle.loads(blob)
    return again


def read_once(name: str, version: int, source: Path, kind: type[T], parse: Callable[[], T]) -> T:
    """:func:`cached` for a file shipped in the package whose ``parse`` never returns None
    and raises an error of its own naming a file it cannot read: a source that cannot be
    stat'ed is parsed (that error is the one raised), not cached."""
    try:
        found = cached(name, version, [source], kind, parse)
    except OSError:
        found = None
    return found if found is not None else parse()


def touch(path: Path) -> None:
    """Mark ``path`` used now (its modification time), so that :func:`prune` keeps it."""
    with contextlib.suppress(OSError):
        os.utime(path)


def prune(folder: Path, pattern: str, kept: int) -> None:
    """Delete all but the ``kept`` files of ``folder`` matching ``pattern`` used last (by
    modification time: :func:`touch`). A file that goes while another process reads it
    stays readable to that process (POSIX), which then finds it gone next time."""
    found = []
    for path in folder.glob(pattern):
        with contextlib.suppress(OSError):
            found.append((path.stat().st_mtime_ns, path))
    for _, path in sorted(found, reverse=True)[kept:]:
        with contextlib.suppress(OSError):
            path.unlink()
