"""The split by database every trained piece uses (the schema encoder, the learned
column order, the weak-match sign): validation databases are never seen in training,
since rows of one database (Spider-Syn's rewrites of one question) would leak."""

from __future__ import annotations

import random
from collections.abc import Iterable

__all__ = ["split_databases"]


def split_databases(
    db_ids: Iterable[str], seed: int = 0, fraction: float = 0.2
) -> tuple[list[str], list[str]]:
    """Train and validation database ids: a seeded shuffle, the last ``fraction`` held out."""
    ordered = sorted(set(db_ids))
    random.Random(seed).shuffle(ordered)
    n_val = max(1, round(len(ordered) * fraction))
    return sorted(ordered[:-n_val]), sorted(ordered[-n_val:])
