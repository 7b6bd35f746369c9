"""Spider questions with gold schema links, in the spider importer's ids.

A question's gold tables are the tables of every ``from`` clause in its parsed
SQL (nested queries in conditions and ``from``, and ``intersect``/``union``/
``except`` included); its gold columns are every column id referenced anywhere
except 0 (``*``). Ids come from :func:`spider_ids`, the same mapping the
importer uses, so they match the catalog exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError, ModelLoadError
from layersearch.jsonlimits import load_json
from layersearch.semantic.importers.spider import read_json, read_spider_tables, spider_ids

__all__ = ["spider_questions", "write_questions_jsonl", "read_questions_jsonl", "FIELDS"]

FIELDS = ("question", "db_id", "gold_tables", "gold_columns")
_IUE = ("intersect", "union", "except")


def spider_questions(dev_json: Path, tables_json: Path) -> list[dict[str, Any]]:
    """One record per question: ``{question, db_id, gold_tables, gold_columns,
    group_by}`` with gold lists sorted and free of duplicates (``group_by``: the
    columns of every ``GROUP BY``, for ``eval plans``)."""
    ids = {db["db_id"]: spider_ids(db) for db in read_spider_tables(tables_json)}
    doc = read_json(Path(dev_json))
    if not isinstance(doc, list):
        raise ModelLoadError(f"{dev_json}: a Spider question file is a list of objects")
    records = []
    for i, q in enumerate(doc):
        where = f"{dev_json}[{i}]"
        if not isinstance(q, dict) or not all(k in q for k in ("question", "db_id", "sql")):
            raise ModelLoadError(f"{where}: each question needs question, db_id and sql")
        db = ids.get(q["db_id"])
        if db is None:
            raise ModelLoadError(f"{where}: db_id '{q['db_id']}' is not in {tables_json}")
        tables: set[int] = set()
        columns: set[int] = set()
        try:
            _walk_sql(q["sql"], tables, columns)
            gold_tables = sorted({db.table_id(t) for t in tables})
            gold_columns = sorted({c for c in (db.column_id(k) for k in columns) if c})
            grouped: set[int] = set()
            _group_by(q["sql"], grouped)
            group_by = sorted({c for c in (db.column_id(k) for k in grouped) if c})
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            raise ModelLoadError(f"{where}: unexpected parsed-sql shape: {exc!r}") from exc
        records.append(
            {
                "question": q["question"],
                "db_id": db.datasource,
                "gold_tables": gold_tables,
                "gold_columns": gold_columns,
                "group_by": group_by,
            }
        )
    return records


def _group_by(node: Any, out: set[int]) -> None:
    """The column ids of every ``groupBy`` in a parsed query, nested ones included."""
    if isinstance(node, dict):
        for col_unit in node.get("groupBy") or ():
            out.add(int(col_unit[1]))
        for value in node.values():
            _group_by(value, out)
    elif isinstance(node, list):
        for value in node:
            _group_by(value, out)


# Spider's parsed SQL (see its process_sql.py):
#   sql       {select: [distinct, [(agg, val_unit)]], from: {table_units, conds},
#              where, groupBy: [col_unit], having, orderBy: [dir, [val_unit]],
#              limit, intersect|union|except: sql | None}
#   condition [cond_unit, 'and'|'or', cond_unit, ...]
#   cond_unit (not, op, val_unit, val1, val2)   val: number | str | sql | col_unit
#   val_unit  (unit_op, col_unit, col_unit | None)
#   col_unit  (agg, column_id, distinct)


def _walk_sql(sql: dict[str, Any], tables: set[int], columns: set[int]) -> None:
    for kind, unit in sql["from"]["table_units"]:
        if kind == "table_unit":
            tables.add(int(unit))
        else:
            _walk_sql(unit, tables, columns)
    _walk_condition(sql["from"]["conds"], tables, columns)
    for _agg, val_unit in sql["select"][1]:
        _walk_val_unit(val_unit, columns)
    _walk_condition(sql["where"], tables, columns)
    for col_unit in sql["groupBy"]:
        _walk_col_unit(col_unit, columns)
    _walk_condition(sql["having"], tables, columns)
    if sql["orderBy"]:
        for val_unit in sql["orderBy"][1]:
            _walk_val_unit(val_unit, columns)
    for key in _IUE:
        if sql.get(key):
            _walk_sql(sql[key], tables, columns)


def _walk_condition(cond: Iterable[Any], tables: set[int], columns: set[int]) -> None:
    for item in cond:
        if isinstance(item, str):  # 'and' / 'or'
            continue
        _not, _op, val_unit, val1, val2 = item
        _walk_val_unit(val_unit, columns)
        for val in (val1, val2):
            if isinstance(val, dict):
                _walk_sql(val, tables, columns)
            elif isinstance(val, list):
                _walk_col_unit(val, columns)


def _walk_val_unit(val_unit: list[Any], columns: set[int]) -> None:
    _op, left, right = val_unit
    _walk_col_unit(left, columns)
    if right is not None:
        _walk_col_unit(right, columns)


def _walk_col_unit(col_unit: list[Any], columns: set[int]) -> None:
    _agg, column_id, _distinct = col_unit
    if int(column_id) != 0:
        columns.add(int(column_id))


def write_questions_jsonl(records: Iterable[dict[str, Any]], path: Path) -> None:
    with Path(path).open("w", encoding="utf-8") as fh:
        for i, record in enumerate(records):
            _check_record(record, f"record {i}")
            fh.write(json.dumps({k: record[k] for k in FIELDS}, ensure_ascii=False) + "\n")


def read_questions_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records written by :func:`write_questions_jsonl` (or by hand); blank
    lines are ignored, anything malformed names ``file:line``."""
    records = []
    for where, record in read_jsonl(path, "questions"):
        _check_record(record, where)
        records.append(record)
    return records


def read_jsonl(path: str | Path, what: str) -> list[tuple[str, Any]]:
    """``(file:line, value)`` of each non-blank line of a JSONL file of ``what``, each
    parsed with the JSON bounds (depth, integer size); anything malformed names
    ``file:line``."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read {what}: {exc}") from exc
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{p}:{n}", load_json(line, f"{p}:{n}")))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{n}: invalid JSON: {exc.msg}") from exc
    return out


def _check_record(record: Any, where: str) -> None:
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: expected an object with {', '.join(FIELDS)}")
    missing = [k for k in FIELDS if k not in record]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    for key in ("question", "db_id"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    for key in ("gold_tables", "gold_columns"):
        value = record[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{where}: '{key}' must be a list of id strings")
