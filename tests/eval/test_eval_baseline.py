"""The plain tantivy baseline of ``eval schema-linking --baseline``: its texts, its order
on a hand-made catalog, its filter, its safety with any question, and its CLI row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.cli.options import BASELINE_NAMES
from layersearch.errors import ConfigError
from layersearch.eval.baseline import (
    BASELINES,
    TantivyBaseline,
    entity_text,
    parse_baselines,
    run_baselines,
)
from layersearch.eval.metrics import METRIC_KEYS
from layersearch.semantic.model import Entity

ENTITIES = [
    Entity("shop", "datasource", "shop", "shop"),
    Entity("shop.orders", "model", "orders", "shop", model="orders"),
    Entity(
        "shop.customers",
        "model",
        "customers",
        "shop",
        model="customers",
        description="who places each order",
    ),
    Entity("shop.orders.amount", "column", "amount", "shop", model="orders"),
    Entity("shop.orders.order_date", "column", "order_date", "shop", model="orders"),
    Entity("shop.customers.name", "column", "name", "shop", model="customers", label="Name"),
    Entity("crm", "datasource", "crm", "crm"),
    Entity("crm.order", "model", "order", "crm", model="order"),
]
QUESTION = "What is the amount of each order?"


def test_texts_are_the_entity_documents_or_names_only() -> None:
    by_id = {e.id: e for e in ENTITIES}
    # the label equal to the name is said once
    assert entity_text(by_id["shop.customers.name"]) == "name customers"
    assert entity_text(by_id["shop.customers"]) == "customers shop who places each order"
    assert entity_text(by_id["shop.customers"], names_only=True) == "customers shop"


def test_known_order_on_a_hand_made_catalog() -> None:
    index = TantivyBaseline(ENTITIES)
    assert index.documents == 6  # tables and columns; datasources are not schema links
    tables, columns = index.rank(QUESTION)
    # shop.customers' description holds two of the question's words (each, order),
    # crm.order's name one; "orders" is another word unstemmed
    assert tables == ["shop.customers", "crm.order"]
    # both columns hold one question word once: the shorter document first
    assert columns == ["shop.orders.amount", "shop.orders.order_date"]
    # tables at the best of their own document and their columns': shop.orders comes in
    # through its columns
    tables, _ = index.rank(QUESTION, tables_by_max=True)
    assert tables[0] == "shop.orders" and set(tables) == {
        "shop.orders",
        "crm.order",
        "shop.customers",
    }
    # names only: the description no longer speaks for shop.customers
    assert TantivyBaseline(ENTITIES, names_only=True).rank(QUESTION)[0] == ["crm.order"]
    # stemmed, "order" finds "orders" too
    stemmed, _ = TantivyBaseline(ENTITIES, stem=True).rank(QUESTION)
    assert set(stemmed) == {"crm.order", "shop.orders", "shop.customers"}


def test_datasource_filter_adds_nothing_to_the_score() -> None:
    index = TantivyBaseline(ENTITIES)
    assert index.rank(QUESTION, datasource="shop") == (
        ["shop.customers"],
        ["shop.orders.amount", "shop.orders.order_date"],
    )
    assert index.rank(QUESTION, datasource="crm") == (["crm.order"], [])


@pytest.mark.parametrize(
    "question",
    [
        'What\'s "the" amount (in $) -- of order: AND OR NOT * ~ ^ [x TO y] {z}?',
        'amount:"unclosed',
        "order\\",
    ],
)
def test_any_punctuation_is_asked_without_a_parser(question: str) -> None:
    tables, columns = TantivyBaseline(ENTITIES).rank(question)
    assert "shop.orders.amount" in columns or "crm.order" in tables


def test_a_question_without_words_finds_nothing() -> None:
    assert TantivyBaseline(ENTITIES).rank("?! -- ...") == ([], [])


def test_names_are_checked_and_the_cli_offers_every_one() -> None:
    assert tuple(BASELINES) == BASELINE_NAMES
    assert [b.name for b in parse_baselines(["tantivy-stem", "tantivy", "tantivy-stem"])] == [
        "tantivy-stem",
        "tantivy",
    ]
    with pytest.raises(ConfigError, match="unknown baseline"):
        parse_baselines(["lucene"])


TABLES = [
    {
        "db_id": "music",
        "table_names": ["singer", "concert"],
        "table_names_original": ["singer", "concert"],
        "column_names": [[-1, "*"], [0, "singer id"], [0, "country"], [1, "year"]],
        "column_names_original": [[-1, "*"], [0, "Singer_ID"], [0, "Country"], [1, "Year"]],
        "column_types": ["text", "number", "text", "text"],
        "primary_keys": [1],
        "foreign_keys": [],
    }
]
QUESTIONS = [
    {
        "question": "What is the country of each singer?",
        "db_id": "music",
        "gold_tables": ["music.singer"],
        "gold_columns": ["music.singer.Country"],
    },
    {
        "question": "Which concerts were held in which year?",
        "db_id": "music",
        "gold_tables": ["music.concert"],
        "gold_columns": ["music.concert.Year"],
    },
]


@pytest.fixture
def spider_files(tmp_path: Path) -> tuple[Path, Path]:
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps(TABLES))
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return tables, qfile


def test_baselines_on_a_loaded_catalog(spider_files: tuple[Path, Path]) -> None:
    tables, _ = spider_files
    with Layersearch(":memory:") as ls:
        ls.load(tables)
        plain, stem = run_baselines(ls, QUESTIONS, parse_baselines(["tantivy", "tantivy-stem"]))
    assert plain.label == "tantivy" and plain.summary()["baseline"] == "tantivy"
    assert plain.details[0]["ranked_tables"][0] == "music.singer"
    assert plain.details[0]["ranked_columns"][0] == "music.singer.Country"
    # "concerts" is not "concert" without a stemmer
    assert "music.concert" not in plain.details[1]["ranked_tables"]
    assert stem.details[1]["ranked_tables"][0] == "music.concert"
    assert plain.metrics["table_recall@5"] == 0.5 and stem.metrics["table_recall@5"] == 1.0


def test_cli_reports_each_baseline_as_its_own_row(
    spider_files: tuple[Path, Path], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from layersearch.cli import main

    tables, qfile = spider_files
    details = tmp_path / "d.jsonl"
    args = ["eval", "schema-linking", "--catalog", str(tables), "--questions", str(qfile)]
    args += ["--channels", "fulltext", "--baseline", "tantivy", "--baseline", "tantivy-names"]
    res = CliRunner().invoke(main, [*args, "--json", "--details", str(details)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(METRIC_KEYS) <= set(out) and out["channels"] == "fulltext"
    assert [b["baseline"] for b in out["baselines"]] == ["tantivy", "tantivy-names"]
    assert all(set(METRIC_KEYS) <= set(b) for b in out["baselines"])
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert [r["channels"] for r in rows] == ["fulltext"] * 2 + ["tantivy"] * 2 + [
        "tantivy-names"
    ] * 2
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "search against baselines" in text.stdout
    assert "baseline tantivy-names" in text.stdout
    bad = CliRunner().invoke(main, [*args, "--baseline", "lucene"])
    assert bad.exit_code == 2 and "lucene" in bad.output


@pytest.mark.slow
def test_lexical_search_ranks_above_every_baseline_on_spider_dev(data_dir: Path) -> None:
    from layersearch.eval.schema_linking import read_questions, run_schema_linking

    tables = data_dir / "spider" / "tables.json"
    questions = read_questions(data_dir / "spider" / "dev.json", tables)[:200]
    with Layersearch(":memory:") as ls:
        ls.load(tables)
        (search,) = run_schema_linking(ls, questions, channel_sets=[["fulltext"]])
        floors = run_baselines(ls, questions, parse_baselines(list(BASELINES)))
    for floor in floors:
        for key in ("table_recall@5", "table_recall@10", "column_recall@10"):
            assert search.metrics[key] >= floor.metrics[key], (floor.label, key)
