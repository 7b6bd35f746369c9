"""What "the store did not change" means: a digest of everything a store holds.

Later corpora (conversations, vault) add their tables to ``TABLES``: any table
that exists is counted and hashed, a missing one is skipped.
"""

from __future__ import annotations

import hashlib
from typing import Any

from layersearch import Layersearch

#: Tables whose content an erroring call must leave alone. Add a corpus's tables here.
TABLES = (
    "datasources",
    "entities",
    "edges",
    "memories",
    "vectors",
    "meta",
    # conversations / vault tables go here when those corpora land
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


def snapshot(ls: Layersearch) -> dict[str, Any]:
    """Row counts and content hashes of every table, the generation, and the memory ids."""
    store: Any = ls.store
    with store.connect(write=False) as con:
        tables = {t: _table_digest(con, t) for t in TABLES}
    return {
        "generation": store.stored_generation(),
        "tables": tables,
        "memories": [m.id for m in ls.list_memories(limit=10_000)],
    }
