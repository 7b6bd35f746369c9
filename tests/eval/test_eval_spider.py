"""Spider gold schema links: ids match the importer, nested SQL is walked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch.errors import ConfigError, ModelLoadError
from layersearch.eval.spider import read_questions_jsonl, spider_questions, write_questions_jsonl
from layersearch.semantic.importers import load_catalog

TABLES = [
    {
        "db_id": "shop",
        "table_names": ["orders", "customer list"],
        "table_names_original": ["Orders", "Customer List"],
        "column_names": [[-1, "*"], [0, "id"], [0, "customer id"], [1, "id"], [1, "home town"]],
        "column_names_original": [
            [-1, "*"],
            [0, "Id"],
            [0, "CustomerId"],
            [1, "Id"],
            [1, "Home Town"],
        ],
        "column_types": ["text", "number", "number", "number", "text"],
        "primary_keys": [1, 3],
        "foreign_keys": [[2, 3]],
    }
]


def col(cid: int, agg: int = 0) -> list:
    return [agg, cid, False]


def val(cid: int) -> list:
    return [0, col(cid), None]


def sql(tables: list, select: list, where: list | None = None, **extra: object) -> dict:
    base = {
        "select": [False, [[0, val(c)] for c in select]],
        "from": {"table_units": tables, "conds": []},
        "where": where or [],
        "groupBy": [],
        "having": [],
        "orderBy": [],
        "limit": None,
        "intersect": None,
        "union": None,
        "except": None,
    }
    base.update(extra)
    return base


def test_gold_from_nested_sql(tmp_path: Path) -> None:
    inner = sql(
        [["table_unit", 1]],
        [3],
        where=[[False, 2, val(4), '"Paris"', None]],
        groupBy=[col(4)],  # a nested query's grouping is read too
    )
    outer = sql(
        [["table_unit", 0]],
        [0],  # count(*) style: column 0 is '*', never gold
        where=[[False, 8, val(2), inner, None]],  # customer_id IN (subquery)
        orderBy=["desc", [val(1)]],
        union=sql([["sql", sql([["table_unit", 0]], [1])]], [1]),
    )
    dev = [{"db_id": "shop", "question": "Orders from Paris customers?", "sql": outer}]
    (tmp_path / "tables.json").write_text(json.dumps(TABLES))
    (tmp_path / "dev.json").write_text(json.dumps(dev))
    [record] = spider_questions(tmp_path / "dev.json", tmp_path / "tables.json")
    assert record == {
        "question": "Orders from Paris customers?",
        "db_id": "shop",
        "gold_tables": ["shop.Customer_List", "shop.Orders"],
        "gold_columns": [
            "shop.Customer_List.Home_Town",
            "shop.Customer_List.Id",
            "shop.Orders.CustomerId",
            "shop.Orders.Id",
        ],
        "group_by": ["shop.Customer_List.Home_Town"],
    }
    ids = {e.id for e in load_catalog(tmp_path / "tables.json").entities()}
    assert set(record["gold_tables"]) | set(record["gold_columns"]) <= ids


def test_real_dev_set_ids_exist(data_dir: Path) -> None:
    spider = data_dir / "spider"
    records = spider_questions(spider / "dev.json", spider / "tables.json")
    assert len(records) == 1034
    assert len({r["db_id"] for r in records}) == 20
    ids = {e.id for e in load_catalog(spider / "tables.json").entities()}
    missing = [g for r in records for g in r["gold_tables"] + r["gold_columns"] if g not in ids]
    assert missing == []
    assert all(r["gold_tables"] for r in records)
    # some questions are pure counts (SELECT count(*) FROM t): no gold column
    assert 0 < sum(not r["gold_columns"] for r in records) < 100
    first = records[0]
    assert first["question"] == "How many singers do we have?"
    assert first["gold_tables"] == ["concert_singer.singer"]


def test_jsonl_round_trip_and_errors(tmp_path: Path) -> None:
    records = [
        {"question": "q1", "db_id": "d", "gold_tables": ["d.t"], "gold_columns": []},
        {"question": "q2 ü", "db_id": "d", "gold_tables": ["d.t"], "gold_columns": ["d.t.c"]},
    ]
    path = tmp_path / "q.jsonl"
    write_questions_jsonl(records, path)
    assert read_questions_jsonl(path) == records
    path.write_text(path.read_text() + "\n{not json}\n")
    with pytest.raises(ConfigError, match=r"q\.jsonl:4: invalid JSON"):
        read_questions_jsonl(path)
    path.write_text('{"question": "q", "db_id": "d", "gold_tables": "d.t", "gold_columns": []}\n')
    with pytest.raises(ConfigError, match=r"q\.jsonl:1: 'gold_tables' must be a list"):
        read_questions_jsonl(path)
    path.write_text('{"question": "q"}\n')
    with pytest.raises(ConfigError, match=r"q\.jsonl:1: missing db_id, gold_tables, gold_columns"):
        read_questions_jsonl(path)
    with pytest.raises(ConfigError, match="record 0"):
        write_questions_jsonl([{"question": ""}], path)


def test_unknown_db(tmp_path: Path) -> None:
    (tmp_path / "tables.json").write_text(json.dumps(TABLES))
    (tmp_path / "dev.json").write_text(json.dumps([{"db_id": "nope", "question": "q", "sql": {}}]))
    with pytest.raises(ModelLoadError, match=r"dev\.json\[0\]: db_id 'nope'"):
        spider_questions(tmp_path / "dev.json", tmp_path / "tables.json")
