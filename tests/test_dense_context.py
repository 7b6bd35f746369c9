"""The vector ranking scored in table context (no model needed: cosines are given)."""

from __future__ import annotations

import pytest

from layersearch.corpora.entities import dense_in_context
from layersearch.semantic.model import Entity


def _e(entity_id: str, kind: str, hidden: bool = False) -> Entity:
    return Entity(
        id=entity_id, kind=kind, name=entity_id.rsplit(".", 1)[-1], datasource="db", hidden=hidden
    )


ENTITIES = {
    e.id: e
    for e in [
        _e("db", "datasource"),
        _e("db.pets", "model"),
        _e("db.pets.weight", "column"),
        _e("db.pets.pet_age", "column"),
        _e("db.owners", "model"),
        _e("db.owners.name", "column"),
        _e("db.secret", "model", hidden=True),
        _e("db.secret.weight", "column"),
    ]
}


def test_tables_take_their_best_leaf_and_leaves_their_table_context() -> None:
    hits = [
        ("db.pets.weight", 0.8),
        ("db.owners.name", 0.7),
        ("db", 0.65),
        ("db.pets.pet_age", 0.4),
        ("db.owners", 0.3),
    ]
    want = [
        ("db.pets.weight", 0.8),
        ("db.pets", 0.8),  # lifted to its best column, placed just below it
        ("db.owners.name", 0.7),
        ("db.owners", 0.7),
        ("db", 0.65),  # datasources keep their cosine
        ("db.pets.pet_age", 0.6),  # (0.4 + 0.8) / 2: its table matched as a whole
    ]
    got = dense_in_context(hits, ENTITIES)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])


def test_hidden_tables_are_never_added() -> None:
    got = dense_in_context([("db.secret.weight", 0.9)], ENTITIES)
    assert got == [("db.secret.weight", 0.9)]


def test_order_is_deterministic_on_ties() -> None:
    hits = [("db.pets.weight", 0.5), ("db.owners.name", 0.5)]
    assert dense_in_context(hits, ENTITIES) == dense_in_context(list(reversed(hits)), ENTITIES)
