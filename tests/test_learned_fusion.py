"""scripts/learned_fusion.py: the features read off explanations, the split, the orders."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from layersearch.semantic.importers.spider import spider_ids
from layersearch.types import ChannelScore, Hit, StageMove
from tests.support import script


def _script() -> ModuleType:
    return script("learned_fusion")


def _hits() -> list[Hit]:
    return [
        Hit(
            kind="column",
            id="shop.head.age",
            score=0.04,
            explanation=[
                ChannelScore(
                    channel="schema", rank=2, score=1.36, contribution=0.019, matched=["age"]
                ),
                ChannelScore(
                    channel="fulltext", rank=1, score=0.03, contribution=0.008, weight=0.5
                ),
            ],
        ),
        Hit(
            kind="model",
            id="shop.department",
            score=0.03,
            explanation=[
                ChannelScore(channel="vector", rank=2, score=0.56, contribution=0.013, weight=0.83),
                ChannelScore(
                    channel="schema",
                    rank=10,
                    score=0.89,
                    contribution=0.01,
                    matched=["divisions→department 0.31"],
                ),
            ],
            stages=[StageMove(stage="join-keys", before=9, after=4, note="")],
        ),
        Hit(kind="memory", id="memory:1", score=0.02),
        Hit(kind="model", id="shop.head", score=0.01),
    ]


def test_hit_features_read_every_channel_and_stage() -> None:
    m = _script()
    f = m.hit_features(_hits()[1], 2, 0.04, 4)
    assert f["pos"] == 2.0 and f["gap"] == pytest.approx(0.01)
    assert f["vector_rank"] == 2.0 and f["vector_weight"] == pytest.approx(0.83)
    assert f["schema_rank"] == 10.0 and f["schema_score"] == pytest.approx(0.89)
    # a channel that did not list the hit: far rank, no score
    assert f["fulltext_rank"] == float(m.MISSING_RANK) and f["fulltext_score"] == 0.0
    # the bridged word counts as the question's word it came from
    assert f["matched_share"] == pytest.approx(1 / 4)
    assert f["moved_join-keys"] == 1.0 and f["up_join-keys"] == 5.0
    assert f["moved_schema-over-fulltext"] == 0.0 and f["n_channels"] == 2.0


def test_table_candidates_keep_todays_order_and_describe_each_table() -> None:
    m = _script()
    cands = m.table_candidates(_hits(), "age of the divisions")
    assert [t for t, _ in cands] == ["shop.head", "shop.department"]
    head, dept = (f for _, f in cands)
    assert head["today_pos"] == 1.0 and dept["today_pos"] == 2.0
    # shop.head: one column hit first, its own model hit last
    assert head["n_column_hits"] == 1.0 and head["c_pos"] == 1.0 and head["t_pos"] == 4.0
    assert head["has_table_hit"] == 1.0 and head["table_matched_share"] == pytest.approx(1 / 4)
    # shop.department: no column hit, so its column features are missing ones
    assert dept["n_column_hits"] == 0.0 and dept["c_pos"] == float(m.MISSING_RANK)
    assert dept["t_schema_rank"] == 10.0 and dept["db_pos"] == 1.0
    assert dept["db_top10"] == 3.0  # the memory is no table
    assert set(head) == set(dept)


def test_a_database_gathers_the_evidence_of_all_its_tables() -> None:
    m = _script()
    hits = [*_hits(), Hit(kind="column", id="zoo.keeper.age", score=0.005)]
    cands = m.table_candidates(hits, "age of the divisions")
    row = {
        "tables": [t for t, _ in cands],
        "features": [f for _, f in cands],
        "db_matched_share": {"shop": 0.5, "zoo": 0.25},
    }
    (shop, f), (zoo, g) = m.datasource_candidates(row)
    assert (shop, zoo) == ("shop", "zoo")
    assert f["n_tables"] == 2.0 and f["n_table_hits"] == 2.0 and f["n_column_hits"] == 1.0
    assert f["best_table_pos"] == 1.0 and f["min_c_pos"] == 1.0 and f["min_t_pos"] == 2.0
    assert f["max_table_share"] == pytest.approx(1 / 4) and f["db_matched_share"] == 0.5
    assert g["db_pos"] == 2.0 and g["n_tables"] == 1.0 and g["db_matched_share"] == 0.25
    level = m.level_rows(
        [{**row, "split": "validation", "db_id": "zoo", "gold_tables": []}], "datasources"
    )
    assert level[0]["tables"] == ["shop", "zoo"] and level[0]["gold_tables"] == ["zoo"]


def test_the_models_train_on_the_stack_databases_only(data_dir: Path) -> None:
    from layersearch.eval.splits import stacked_split

    data = data_dir
    m = _script()
    rows = [json.loads(line) for line in (data / "spider-syn" / "train.jsonl").open()]
    dev = {q["db_id"] for q in json.loads((data / "spider" / "dev.json").read_text())}
    encoder, stack, validation = stacked_split([r["db_id"] for r in rows if r["db_id"] not in dev])
    splits = m.load_questions(data, 4000, 0)
    assert {q["db_id"] for q in splits["train"]} == set(stack)
    assert {q["db_id"] for q in splits["validation"]} == set(validation)
    assert not set(encoder) & {q["db_id"] for q in splits["train_original"]}


def test_learned_order_follows_what_the_model_learned() -> None:
    pytest.importorskip("lightgbm")
    m = _script()
    rows = []
    for i in range(300):
        # the gold table is never first today; feature "good" marks it
        tables = [f"d.t{k}" for k in range(6)]
        gold = 1 + i % 5
        feats = [{"good": float(k == gold), "noise": float((i * 7 + k) % 3)} for k in range(6)]
        rows.append({"tables": tables, "gold_tables": [tables[gold]], "features": feats})
    names = ["good", "noise"]
    model = m.train_model(rows, names, 0)
    orders = m.learned_orders(model, rows, names)
    assert m.recall_at(rows, [r["tables"] for r in rows], 5) < 0.85
    assert m.recall_at(rows, orders, 5) == 1.0
    assert all(o[0] == r["gold_tables"][0] for r, o in zip(rows, orders, strict=True))


def test_column_candidates_carry_their_tables_features() -> None:
    m = _script()
    hits = _hits()
    tables = m.table_candidates(hits, "age of the divisions")
    cols = m.column_candidates(hits, "age of the divisions", tables)
    assert [c for c, _ in cols] == ["shop.head.age"]
    f = cols[0][1]
    assert f["today_pos"] == 1.0 and f["schema_rank"] == 2.0 and f["fulltext_weight"] == 0.5
    assert f["tbl_today_pos"] == 1.0 and f["tbl_t_pos"] == 4.0


def test_labels_compare_ids_as_the_metrics_do() -> None:
    m = _script()
    row = {
        "tables": ["db.Staff", "db.car", "db.Lessons"],
        "gold_tables": ["db.staff", "db.lessons"],
    }
    assert m.labels_of(row) == [1.0, 0.0, 1.0]
    assert m.recall_at([row], [row["tables"]], 1) == 0.5


def test_a_renamed_catalog_maps_its_questions(tmp_path: Path) -> None:
    m = _script()
    db = {
        "db_id": "concert_singer",
        "table_names": ["singer", "concert"],
        "table_names_original": ["singer", "concert"],
        "column_names": [[-1, "*"], [0, "singer id"], [0, "name"], [1, "concert name"]],
        "column_names_original": [[-1, "*"], [0, "Singer_ID"], [0, "Name"], [1, "concert_Name"]],
        "column_types": ["text", "number", "text", "text"],
        "primary_keys": [1],
        "foreign_keys": [],
    }
    (tmp_path / "spider").mkdir()
    (tmp_path / "spider" / "tables.json").write_text(json.dumps([db]))
    q = {
        "question": "names of the singers",
        "db_id": "concert_singer",
        "gold_tables": ["concert_singer.singer"],
        "gold_columns": ["concert_singer.singer.Name"],
    }
    for naming in ("warehouse", "mixed"):
        path, todo = m.renamed(tmp_path, naming, {"validation": [q]}, tmp_path / "c.jsonl")
        (mapped,) = todo["validation"]
        assert mapped["question"] == q["question"]
        # the gold ids are the renamed catalog's own
        catalog = json.loads(path.read_text())
        sid = spider_ids(catalog[0])
        ids = {sid.table_id(i) for i in range(len(sid.tables))}
        ids |= {sid.column_id(k) for k in range(len(sid.columns))} - {None}
        assert set(mapped["gold_tables"]) <= ids and set(mapped["gold_columns"]) <= ids
        assert mapped["gold_columns"] != q["gold_columns"]
