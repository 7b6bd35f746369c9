"""The vector ranking scored in table context (no model needed: cosines are given)."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch.corpora.entities import dense_in_context, join_keys_in_context
from layersearch.ranking.fusion import Fused
from layersearch.semantic.model import EdgeRecord, Entity


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


# -- join keys between the best-ranked tables --------------------------------------------------


def _join_catalog() -> tuple[dict[str, Entity], dict[str, list[EdgeRecord]]]:
    ids = [
        ("db", "datasource"),
        ("db.student", "model"),
        ("db.student.name", "column"),
        ("db.student.age", "column"),
        ("db.student.stu_id", "column"),
        ("db.has_pet", "model"),
        ("db.has_pet.stu_id", "column"),
        ("db.has_pet.pet_id", "column"),
        ("db.pets", "model"),
        ("db.pets.pet_id", "column"),
        ("db.pets.pet_type", "column"),
        ("db.far", "model"),
        ("db.far.pet_id", "column"),
    ]
    entities = {i: _e(i, k) for i, k in ids}

    def join(src: str, dst: str, col: str) -> EdgeRecord:
        props = {"source_columns": [col], "target_columns": [col]}
        return EdgeRecord(src, dst, "JOINS", props)

    edges = {
        "db.has_pet": [
            join("db.has_pet", "db.student", "stu_id"),
            join("db.has_pet", "db.pets", "pet_id"),
        ],
        "db.far": [join("db.far", "db.pets", "pet_id")],
    }
    return entities, edges


def _fused(ids: list[str]) -> list[Fused]:
    return [
        Fused(i, 1.0 / (60 + r), r, {"schema": (r, 1.0, 1.0 / (60 + r))})
        for r, i in enumerate(ids, 1)
    ]


FUSED_ORDER = [
    "db.student.name",
    "db.student",
    "db.pets.pet_type",
    "db.student.age",
    "db.has_pet",
    "db.pets",
    "db.student.stu_id",
    "db.has_pet.pet_id",
    "db.far.pet_id",
    "db.pets.pet_id",
]


def test_join_keys_follow_the_later_of_the_two_tables() -> None:
    entities, edges = _join_catalog()
    fused = _fused(FUSED_ORDER)
    contributions = {f.id: sum(c[2] for c in f.channels.values()) for f in fused}
    got = join_keys_in_context(fused, entities, edges, top=3)
    assert [f.id for f in got] == [
        "db.student.name",
        "db.student",
        "db.pets.pet_type",
        "db.student.age",
        "db.has_pet",  # the last of the three tables to appear: the keys follow it
        "db.student.stu_id",
        "db.has_pet.pet_id",
        "db.pets.pet_id",
        "db.pets",
        "db.far.pet_id",  # far joins pets too, but is not among the question's tables
    ]
    scores = [f.score for f in got]
    assert scores == sorted(scores, reverse=True)
    moved = {f.id: f for f in got}["db.pets.pet_id"]
    # lifted to its place with a score of its own, between has_pet's keys and pets
    # (it does not take has_pet's score, 1/65, as it did before scores followed the order)
    at = [f.id for f in got].index("db.pets.pet_id")
    assert got[at - 1].score > moved.score > got[at + 1].score
    assert moved.score != pytest.approx(1.0 / 65) and moved.score > 1.0 / 70
    # the explanation is untouched: what ranked it, where, and its own contribution
    assert moved.channels == {"schema": (10, 1.0, 1.0 / 70)}
    assert contributions["db.pets.pet_id"] == pytest.approx(1.0 / 70)
    # has_pet.stu_id was ranked by no channel: it is not added
    assert "db.has_pet.stu_id" not in {f.id for f in got}


def test_join_keys_need_two_joined_tables_among_the_best() -> None:
    entities, edges = _join_catalog()
    # student and pets are not joined directly: nothing moves
    only_two = join_keys_in_context(_fused(FUSED_ORDER), entities, edges, top=2)
    assert [f.id for f in only_two] == FUSED_ORDER


def test_keys_already_ranked_high_stay_where_they_are() -> None:
    entities, edges = _join_catalog()
    order = ["db.has_pet.pet_id", "db.has_pet", "db.pets.pet_id", "db.pets"]
    got = join_keys_in_context(_fused(order), entities, edges, top=3)
    assert [f.id for f in got] == ["db.has_pet.pet_id", "db.has_pet", "db.pets.pet_id", "db.pets"]


def test_a_snapshot_is_read_by_id_as_its_entities_are(tmp_path: Path) -> None:
    """On a snapshot's entity map the kinds and visibility are read without decoding an
    entity: the ranking is the one the decoded entities give (hidden ones included)."""
    import random

    from layersearch.api import Layersearch
    from tests.support import MINI

    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        snapshot = ls.entities.corpus().entities
        decoded = dict(snapshot.items())
        assert any(e.hidden for e in decoded.values())
        rng = random.Random(0)
        ids = [*decoded, "shop.no_such_model.col"]
        for _ in range(20):
            hits = [(i, round(rng.random(), 3)) for i in rng.sample(ids, 12)]
            assert dense_in_context(hits, snapshot) == dense_in_context(hits, decoded)
