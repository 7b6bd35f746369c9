"""``eval plans``: GROUP BY columns read from SQL text, the questions kept, the shares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from layersearch import Layersearch
from layersearch.errors import ConfigError
from layersearch.eval.plans import PlanItem, group_by_columns, plan_items, run_plans
from layersearch.types import PlanItem as PlanPart
from layersearch.types import QueryPlan, SearchResponse
from tests.eval.test_schema_linking import TABLES


def row(sql: str, **extra: Any) -> dict[str, Any]:
    base = {"question": "q", "db_id": "music", "gold_tables": [], "gold_columns": []}
    return {**base, "sql": sql, **extra}


def test_group_by_read_through_aliases_and_gold_columns() -> None:
    sql = (
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN singer AS T2 "
        "ON T1.singer_id = T2.singer_id GROUP BY T2.Singer_ID HAVING count(*) > 1"
    )
    assert group_by_columns(row(sql)) == ["music.singer.singer_id"]
    # a bare column: the gold column of that name, whatever its table
    bare = row(
        "SELECT country, count(*) FROM singer GROUP BY country ORDER BY count(*) DESC;",
        gold_columns=["music.singer.Country", "music.singer.Name"],
    )
    assert group_by_columns(bare) == ["music.singer.country"]
    # no gold column of that name: the SQL's one table, when it reads one
    alone = row("SELECT year FROM concert GROUP BY year;", gold_tables=["music.concert"])
    assert group_by_columns(alone) == ["music.concert.year"]
    # a table name used as its own qualifier, two columns, a nested query's grouping
    two = row(
        "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert "
        "GROUP BY singer_in_concert.singer_id) GROUP BY singer.name, singer.country"
    )
    assert group_by_columns(two) == [
        "music.singer.country",
        "music.singer.name",
        "music.singer_in_concert.singer_id",
    ]


def test_group_by_from_parsed_sql_or_nothing() -> None:
    assert group_by_columns(row("SELECT x FROM t", group_by=["m.T.X"])) == ["m.t.x"]
    assert group_by_columns(row("SELECT count(*) FROM singer")) == []
    assert group_by_columns({"question": "q", "db_id": "music"}) == []
    # an expression is not a column
    assert group_by_columns(row("SELECT 1 FROM t GROUP BY substr(name, 1)")) == []


def test_items_are_grouped_questions_in_the_wording_asked() -> None:
    grouped = row(
        "SELECT country, count(*) FROM singer GROUP BY country",
        question="How many vocalists are there for each nation?",
        original_question="How many singers are there for each country?",
        gold_tables=["music.singer"],
        gold_columns=["music.singer.country"],
    )
    # grouped SQL but no grouping word: the planner makes no plan, so it is not asked
    silent = row("SELECT country FROM singer GROUP BY country", question="Show every country.")
    ungrouped = row("SELECT name FROM singer", question="Names of singers by age")
    records = [grouped, silent, ungrouped]
    (one,) = plan_items(records)
    assert one.question.startswith("How many vocalists")
    assert one.gold == {"music.singer.country"} and one.tables == {"music.singer"}
    both = plan_items(records, "both")
    assert [i.question for i in both] == [grouped["question"], grouped["original_question"]]
    with pytest.raises(ConfigError, match="wording"):
        plan_items(records, "rewritten")
    rewritten_only = {k: v for k, v in grouped.items() if k != "original_question"}
    with pytest.raises(ConfigError, match="original_question"):
        plan_items([grouped, rewritten_only], "original_question")
    assert len(plan_items([grouped, rewritten_only], "both")) == 3


class _Layer:
    """A search whose plan groups by the columns given per question."""

    def __init__(self, plans: dict[str, list[str]]) -> None:
        self.plans = plans

    def search(self, question: str) -> SearchResponse:
        dims = self.plans.get(question)
        plan = None
        if dims is not None:
            parts = [PlanPart(id=d, words="w") for d in dims]
            plan = QueryPlan(measures=[PlanPart(id="m.t.x", words="w")], dimensions=parts)
        return SearchResponse(results=[], plan=plan)


def test_shares_count_every_question_and_a_missing_plan_as_missed() -> None:
    def item(q: str) -> PlanItem:
        return PlanItem(
            q, "music", frozenset({"music.singer.country"}), frozenset({"music.singer"})
        )

    items = [item("exact"), item("same table"), item("same db"), item("elsewhere"), item("none")]
    layer = _Layer(
        {
            "exact": ["music.singer.Country"],
            "same table": ["music.singer.name"],
            "same db": ["music.concert.year"],
            "elsewhere": ["pets.owner.name"],
        }
    )
    seen: list[int] = []
    summary = run_plans(layer, items, progress=seen.append)
    assert summary == {
        "questions": 5,
        "planned": 0.8,
        "by_column": 0.2,
        "by_table": 0.4,
        "by_database": 0.6,
    }
    assert seen == [1, 2, 3, 4, 5]
    assert items[0].planned == ["music.singer.country"] and items[4].planned == []
    assert run_plans(layer, [])["by_column"] is None


def test_real_plans_on_a_small_catalog_and_the_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from layersearch.cli import main

    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps(TABLES))
    question = row(
        "SELECT country, count(*) FROM singer GROUP BY country",
        question="number of singers by country",
        gold_tables=["music.singer"],
        gold_columns=["music.singer.country"],
    )
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(question) + "\n")
    with Layersearch(":memory:") as ls:
        ls.load(tables)
        summary = run_plans(ls, plan_items([question]))
    assert summary["by_column"] == 1.0
    details = tmp_path / "d.jsonl"
    args = ["eval", "plans", "--catalog", str(tables), "--questions", str(qfile)]
    res = CliRunner().invoke(main, [*args, "--json", "--details", str(details)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {**summary, "wording": "question", "without": []}
    (line,) = details.read_text().splitlines()
    assert json.loads(line)["planned"] == ["music.singer.country"]
    text = CliRunner().invoke(main, [*args, "--without", "learned-tables"])
    assert text.exit_code == 0 and "by_column" in text.stdout and "learned-tables" in text.stdout
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps(row("SELECT name FROM singer")) + "\n")
    bad = CliRunner().invoke(
        main, ["eval", "plans", "--catalog", str(tables), "--questions", str(empty)]
    )
    assert bad.exit_code == 2 and "nothing to plan" in bad.output
