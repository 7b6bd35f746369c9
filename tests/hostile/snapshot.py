"""What "the store did not change" means: a digest of everything a store holds.

A new corpus adds its tables to ``TABLES``: any table that exists is counted and
hashed, a missing one is skipped.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import duckdb

from layersearch import Layersearch

#: Tables whose content an erroring call must leave alone. Add a corpus's tables here.
TABLES = (
    "datasources",
    "entities",
    "edges",
    "memories",
    "vectors",
    "meta",
    "conversations",
    "messages",
    "summaries",
    "conversation_facts",
    "vault_notes",
    "vault_chunks",
)


def _table_digest(con: Any, table: str) -> tuple[int, str] | None:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
    ).fetchone()
    if not exists or not exists[0]:
        return None
    # Table names come from the constant above, never from input.
    rows = con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()  # noqa: S608
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


_DIGESTS: dict[tuple[Any, ...], dict[str, Any]] = {}


def _file_state(path: str) -> tuple[Any, ...]:
    """Everything a committed write changes on disk: the file, its WAL, the generation mirror."""
    out: list[Any] = []
    for suffix in ("", ".wal", ".gen"):
        try:
            st = os.stat(path + suffix)
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except FileNotFoundError:
            out.append(None)
    gen = Path(path + ".gen")
    out.append(gen.read_text() if gen.exists() else None)
    return (path, *out)


def snapshot(ls: Layersearch | Path) -> dict[str, Any]:
    """Row counts and content hashes of every table (memories and the generation included).

    Hashing every table is slow next to a search, so the digest is cached by the files'
    state: a call that leaves the files alone cannot have changed the content.
    """
    path = ls.store.location if isinstance(ls, Layersearch) else str(ls)
    state = _file_state(path)
    cached = _DIGESTS.get(state)
    if cached is not None:
        return cached
    # A plain read-only connection: opening a Layersearch would itself write (migrations).
    con = duckdb.connect(path, read_only=True)
    try:
        digest = {t: _table_digest(con, t) for t in TABLES}
    finally:
        con.close()
    _DIGESTS[state] = digest
    return digest
