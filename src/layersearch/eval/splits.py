"""The split by database every trained piece uses (the schema encoder, the learned
column order, the weak-match sign): validation databases are never seen in training,
since rows of one database (Spider-Syn's rewrites of one question) would leak.

The pieces are stacked: the learned column order and the weak-match sign read the
schema encoder's scores. Trained on the encoder's own training questions they would
learn how well it scores what it was taught, not what it has never seen, so the
training databases are split again (:func:`stacked_split`): the encoder's, and the
stacked pieces' (``stack``), which the encoder never reads."""

from __future__ import annotations

import random
from collections.abc import Iterable

__all__ = ["STACK_FRACTION", "split_databases", "stacked_split"]

#: the share of the training databases kept from the encoder for the stacked pieces
STACK_FRACTION = 0.25


def split_databases(
    db_ids: Iterable[str], seed: int = 0, fraction: float = 0.2
) -> tuple[list[str], list[str]]:
    """Train and validation database ids: a seeded shuffle, the last ``fraction`` held out."""
    ordered = sorted(set(db_ids))
    random.Random(seed).shuffle(ordered)
    n_val = max(1, round(len(ordered) * fraction))
    return sorted(ordered[:-n_val]), sorted(ordered[-n_val:])


def stacked_split(
    db_ids: Iterable[str], seed: int = 0, fraction: float = 0.2, stack: float = STACK_FRACTION
) -> tuple[list[str], list[str], list[str]]:
    """The encoder's, the stacked pieces' and the validation database ids: validation as
    :func:`split_databases` gives it, the training databases split again the same way,
    the last ``stack`` of them for the pieces trained on the encoder's scores."""
    train, validation = split_databases(db_ids, seed, fraction)
    encoder, stacked = split_databases(train, seed + 1, stack)
    return encoder, stacked, validation
