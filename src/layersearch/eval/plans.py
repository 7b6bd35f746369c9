"""Whether a query plan groups by the column the gold SQL groups by, on Spider questions.

A Spider question whose SQL has a ``GROUP BY`` and whose words name a grouping ("the
number of students for each country", "revenue by store") is asked in catalog mode;
its plan's grouping columns (``plan.dimensions``) are compared with the SQL's
``GROUP BY`` columns:

- ``by_column``: a grouping column of the plan is a ``GROUP BY`` column;
- ``by_table``: one is a column of a table the SQL reads;
- ``by_database``: one is in the question's database;
- ``planned``: the response has a plan with a grouping column at all.

Each share is over every such question (a question without a plan counts as missed).
The gold is approximate: the SQL often groups by a key (``T1.id``) where the words
name what it identifies ("for each department"), which a plan reads as the name; the
measure compares ways of searching a plan's parts with each other, not with a
perfect score.

The ``GROUP BY`` columns come from Spider's parsed SQL (``dev.json``) or, in JSONL
(Spider-Syn rows), from the ``sql`` text: ``alias.column`` through the ``FROM``/
``JOIN`` aliases, a bare column through the record's gold columns of that name.

    layersearch eval plans --catalog tables.json --questions val.jsonl [--wording both]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from layersearch.errors import ConfigError
from layersearch.plan.planner import split_question

__all__ = ["WORDINGS", "PlanItem", "group_by_columns", "plan_items", "run_plans"]

#: which question of a record is asked: Spider-Syn rows hold both
WORDINGS = ("question", "original_question", "both")
_GROUP_BY = re.compile(r"\bGROUP\s+BY\s+(.+?)(?:\bHAVING\b|\bORDER\s+BY\b|\bLIMIT\b|\)|$)", re.I)
_ALIAS = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)(?:\s+AS)?\s+(\w+)", re.I)
_NOT_ALIAS = {"join", "where", "group", "order", "on", "limit", "having", "inner", "left"}


@dataclass
class PlanItem:
    """One question asked for its plan."""

    question: str
    db_id: str
    #: the ``GROUP BY`` columns, lower-cased ids (``db.table.column``)
    gold: frozenset[str]
    #: the tables the SQL reads, lower-cased ids (``db.table``)
    tables: frozenset[str]
    #: the plan's grouping columns (after :func:`run_plans`)
    planned: list[str] = field(default_factory=list)


def group_by_columns(record: dict[str, Any]) -> list[str]:
    """The ``GROUP BY`` column ids of a record: its ``group_by`` list (Spider's parsed
    SQL), else read from its ``sql`` text; empty when it has neither or no grouping."""
    given = record.get("group_by")
    if given is not None:
        return sorted({str(c).lower() for c in given})
    sql = record.get("sql")
    if not isinstance(sql, str):
        return []
    db = str(record["db_id"]).lower()
    aliases = {a.lower(): t.lower() for t, a in _ALIAS.findall(sql) if a.lower() not in _NOT_ALIAS}
    gold = [str(c).lower() for c in record.get("gold_columns") or ()]
    tables = [str(t).lower() for t in record.get("gold_tables") or ()]
    out: set[str] = set()
    for match in _GROUP_BY.finditer(sql):
        for part in match.group(1).split(","):
            name = part.strip().rstrip(";").strip().lower()
            if not re.fullmatch(r"\w+(\.\w+)?", name):
                continue
            if "." in name:
                alias, column = name.split(".", 1)
                out.add(f"{db}.{aliases.get(alias, alias)}.{column}")
            else:
                named = [g for g in gold if g.rsplit(".", 1)[-1] == name]
                if named:
                    out.update(named)
                elif len(tables) == 1:
                    out.add(f"{tables[0]}.{name}")
    return sorted(out)


def plan_items(records: Sequence[dict[str, Any]], wording: str = "question") -> list[PlanItem]:
    """The records that group (a ``GROUP BY`` column) and whose asked words name a
    grouping (the planner cuts a grouping part out of them), in ``wording``."""
    if wording not in WORDINGS:
        raise ConfigError(f"unknown wording '{wording}'; use one of {', '.join(WORDINGS)}")
    keys = ("question", "original_question") if wording == "both" else (wording,)
    items = []
    for r in records:
        gold = group_by_columns(r)
        if not gold:
            continue
        tables = frozenset(str(t).lower() for t in r.get("gold_tables") or ())
        for key in keys:
            text = r.get(key)
            if not isinstance(text, str):
                if wording != "both":
                    raise ConfigError(f"a question record has no '{key}' (--wording)")
                continue
            parts = split_question(text)
            if parts is not None and parts.groups:
                items.append(PlanItem(text, str(r["db_id"]), frozenset(gold), tables))
    return items


def run_plans(
    ls: Any, items: Sequence[PlanItem], progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Each item's question searched in catalog mode; the shares of the module
    docstring, and each item's planned grouping columns (``items[i].planned``)."""
    counts = {"planned": 0, "by_column": 0, "by_table": 0, "by_database": 0}
    for n, item in enumerate(items, 1):
        plan = ls.search(question=item.question).plan
        item.planned = [d.id.lower() for d in plan.dimensions] if plan is not None else []
        if item.planned:
            counts["planned"] += 1
            counts["by_column"] += any(c in item.gold for c in item.planned)
            counts["by_table"] += any(c.rsplit(".", 1)[0] in item.tables for c in item.planned)
            counts["by_database"] += any(
                c.split(".", 1)[0] == item.db_id.lower() for c in item.planned
            )
        if progress is not None:
            progress(n)
    total = len(items)
    shares = {k: round(v / total, 4) if total else None for k, v in counts.items()}
    return {"questions": total, **shares}
