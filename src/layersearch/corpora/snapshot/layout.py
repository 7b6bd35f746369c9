"""The snapshot's files: their names, the code fingerprint that stamps them, the marker.

See :mod:`layersearch.corpora.snapshot` for the layout on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from layersearch.ranking.generations import CURRENT, current_dir, read_small
from layersearch.ranking.lexicon import identity as lexicon_identity

__all__ = ["CURRENT", "COVERAGE", "FORMAT", "MARKER", "TABLES", "code_fingerprint"]
MARKER = "snapshot.json"
TABLES = "tables"
COVERAGE = "coverage"
FORMAT = 2
#: what a dead load's build process left (``coverage-*.pending``, ``.err``) is kept this
#: long: a load still running may be about to take it
_GRACE_S = 600.0
#: suffix of a schema index a build process is still writing (see CoverageBuild)
_PENDING = ".pending"


#: the modules whose code decides what is persisted (relative to the package, without
#: ``.py``): a module's file, or every module of a package of that name
_CODE = (
    "corpora/snapshot",
    "corpora/entities",
    "ranking/analyzer",
    "ranking/bm25",
    "ranking/bridges",
    "ranking/coverage",
    "ranking/coverage_arrays",
    "ranking/coverage_cut",  # the bridges of an index cut from the wide one
    "ranking/coverage_terms",
    "ranking/fulltext",  # key_hash
    "ranking/lexicon",
    "ranking/params",  # the index-time defaults (synonym weights)
    "ranking/persist",
    "semantic/canonical",
    "semantic/model",
)


def _code_files(package: Path, rel: str) -> list[Path]:
    """The source files of module or package ``rel`` (none when it is missing)."""
    module = package / f"{rel}.py"
    if module.is_file():
        return [module]
    return sorted((package / rel).rglob("*.py"))


def _fingerprint() -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(str(FORMAT).encode())
    package = Path(__file__).resolve().parents[2]
    for rel in _CODE:
        files = _code_files(package, rel)
        if not files:
            h.update(rel.encode())
        for path in files:
            try:
                h.update(path.relative_to(package).as_posix().encode())
                h.update(path.read_bytes())
            except OSError:
                h.update(rel.encode())
    h.update(lexicon_identity().encode())  # the bridges' lexicon is persisted data too
    return h.hexdigest()


# Read once, at import: it describes the code this process runs, even if the files
# change on disk while it does (an upgrade under a running server).
_FINGERPRINT = _fingerprint()


def code_fingerprint() -> str:
    """A hash of the code whose output is persisted: another version rebuilds, never misreads."""
    return _FINGERPRINT


def _current_dir(base: Path) -> Path | None:
    """The generation directory ``base/CURRENT`` points at: the same layout (and reader)
    as the full-text index's."""
    return current_dir(base)


def _read_marker(sub: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(read_small(sub / MARKER))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _write_marker(sub: Path, stamp: str, content: str) -> None:
    tmp = sub / f"{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(
        json.dumps(
            {"format": FORMAT, "code": code_fingerprint(), "stamp": stamp, "content": content}
        )
    )
    os.replace(tmp, sub / MARKER)
