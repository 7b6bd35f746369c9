"""Spider ``tables.json``: every database a datasource, every table a model.

Names: the model is the table's ``table_names_original`` and the column its
``column_names_original``, each passed through :func:`safe_name` (whitespace,
``.`` and ``:`` runs become ``_``; case is kept); a name that then collides
case-insensitively with an earlier one in the same scope gets ``_2``, ``_3``….
The natural-language forms (``table_names``, ``column_names``) become labels.
:func:`spider_ids` is the single place this mapping is made, so gold ids from
``dev.json`` (``layersearch.eval.spider``) are the importer's ids exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers._common import safe_name, unique_name
from layersearch.semantic.importers.database import check_sample_values
from layersearch.semantic.importers.native import check_catalog, read_text
from layersearch.semantic.importers.spider_files import Table, read_beside
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Model

REQUIRED = (
    "db_id",
    "table_names",
    "table_names_original",
    "column_names",
    "column_names_original",
    "column_types",
    "primary_keys",
    "foreign_keys",
)
MAX_JSON_BYTES = 200 * 1024 * 1024


def is_spider(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(d, dict) and "db_id" in d and "table_names" in d for d in doc[:5])
    )


@dataclass(frozen=True, slots=True)
class SpiderIds:
    """One database's ids: ``datasource``, model name per table index, and
    (model name, column name) per column index (None for index 0, ``*``)."""

    datasource: str
    tables: list[str]
    columns: list[tuple[str, str] | None]

    def table_id(self, table_index: int) -> str:
        return f"{self.datasource}.{self.tables[table_index]}"

    def column_id(self, column_index: int) -> str | None:
        col = self.columns[column_index]
        return None if col is None else f"{self.datasource}.{col[0]}.{col[1]}"


def read_json(path: Path) -> Any:
    """Parse a JSON file (depth and integer size bounded); errors name the file, line
    and column. The one place the importers parse JSON (Spider tables.json, dbt
    manifest and catalog)."""
    from layersearch.jsonlimits import load_json

    text = read_text(path, MAX_JSON_BYTES)
    try:
        return load_json(text, str(path), error=ModelLoadError)
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc


def read_spider_tables(path: str | Path) -> list[dict[str, Any]]:
    """The databases of a Spider ``tables.json``, shape-checked."""
    p = Path(path)
    doc = read_json(p)
    if not isinstance(doc, list):
        raise ModelLoadError(
            f"{p}: a Spider tables.json is a list of databases, got {type(doc).__name__}"
        )
    for i, db in enumerate(doc):
        where = f"{p}[{i}]"
        if not isinstance(db, dict):
            raise ModelLoadError(f"{where}: each database must be an object")
        missing = [k for k in REQUIRED if k not in db]
        if missing:
            raise ModelLoadError(f"{where}: missing {', '.join(missing)}")
        _check_db(db, f"{where} (db_id {db['db_id']})")
    return doc


def _check_db(db: dict[str, Any], where: str) -> None:
    if not isinstance(db["db_id"], str) or not db["db_id"].strip():
        raise ModelLoadError(f"{where}: db_id must be a non-empty string")
    n_tables = len(db["table_names_original"])
    if not isinstance(db["table_names_original"], list) or len(db["table_names"]) != n_tables:
        raise ModelLoadError(f"{where}: table_names and table_names_original differ in length")
    cols, natural = db["column_names_original"], db["column_names"]
    if not (isinstance(cols, list) and len(natural) == len(cols) == len(db["column_types"])):
        raise ModelLoadError(
            f"{where}: column_names, column_names_original and column_types differ in length"
        )
    for k, entry in enumerate(cols):
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], int)
            and isinstance(entry[1], str)
            and -1 <= entry[0] < n_tables
        ):
            raise ModelLoadError(f"{where}: column_names_original[{k}] must be [table_index, name]")
    for key in ("primary_keys", "foreign_keys"):
        for ref in _flat_ints(db[key], f"{where} {key}"):
            if not 0 < ref < len(cols):
                raise ModelLoadError(f"{where}: {key} refers to column {ref}, which does not exist")


def _flat_ints(value: Any, where: str) -> list[int]:
    if isinstance(value, bool):
        raise ModelLoadError(f"{where}: expected column indexes")
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [i for v in value for i in _flat_ints(v, where)]
    raise ModelLoadError(f"{where}: expected column indexes")


def spider_ids(db: dict[str, Any]) -> SpiderIds:
    ds = safe_name(db["db_id"])
    taken: set[str] = set()
    tables = [unique_name(safe_name(t), taken) for t in db["table_names_original"]]
    per_table: dict[int, set[str]] = {}
    columns: list[tuple[str, str] | None] = []
    for table_index, name in db["column_names_original"]:
        if table_index < 0:
            columns.append(None)
            continue
        col = unique_name(safe_name(name), per_table.setdefault(table_index, set()))
        columns.append((tables[table_index], col))
    return SpiderIds(ds, tables, columns)


def _sqlite_internal(table: str) -> bool:
    """SQLite's own bookkeeping tables (``sqlite_sequence``, ``sqlite_stat1``): Spider's
    schemas are read from SQLite files and list them; the database importer skips them,
    here they stay as hidden models so every Spider id still exists."""
    return table.lower().startswith("sqlite_")


def load_spider(path: str | Path, *, sample_values: int = 0) -> Catalog:
    """A Spider (or BIRD) ``tables.json``, with what each database's folder beside it
    holds (:mod:`.spider_files`): BIRD's column descriptions, and with
    ``sample_values`` the values of text columns from the SQLite files."""
    check_sample_values(sample_values)
    p = Path(path)
    if not p.is_file():
        raise ModelLoadError(f"{p}: no such file (expected a Spider tables.json)")
    catalog = Catalog()
    for db in read_spider_tables(p):
        tables = _add_database(db, str(p), catalog)
        read_beside(p, db["db_id"], tables, catalog, sample_values=sample_values)
    check_catalog(catalog)
    return catalog


def _add_database(db: dict[str, Any], source: str, catalog: Catalog) -> list[Table]:
    ids = spider_ids(db)
    where = f"{source} (db_id {db['db_id']})"
    catalog.datasources.append(Datasource(name=ids.datasource, dialect="sqlite", source=where))
    models = [
        Model(
            name=name,
            datasource=ids.datasource,
            label=db["table_names"][i],
            sql_table=db["table_names_original"][i],
            source=where,
            hidden=_sqlite_internal(db["table_names_original"][i]),
        )
        for i, name in enumerate(ids.tables)
    ]
    pks = set(_flat_ints(db["primary_keys"], where))
    tables: list[Table] = [(m, []) for m in models]
    for k, ref in enumerate(ids.columns):
        if ref is None:
            continue
        table_index, original = db["column_names_original"][k]
        col = Column(
            name=ref[1],
            label=db["column_names"][k][1],
            data_type=db["column_types"][k],
            primary_key=k in pks,
        )
        models[table_index].columns.append(col)
        tables[table_index][1].append((original, col))
    seen: set[tuple[int, int]] = set()
    for pair in db["foreign_keys"]:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ModelLoadError(
                f"{where}: each foreign_keys entry must be [column, referenced_column]"
            )
        if (pair[0], pair[1]) in seen:
            catalog.skipped.append(
                f"{where}: the second listing of foreign key {pair}; its join is imported once"
            )
            continue
        seen.add((pair[0], pair[1]))
        src, dst = ids.columns[pair[0]], ids.columns[pair[1]]
        assert src is not None and dst is not None  # indexes checked > 0 in _check_db
        table_index = db["column_names_original"][pair[0]][0]
        # One join per key pair: Spider lists composite keys and separate keys to
        # the same table alike, so pairs cannot be grouped faithfully.
        models[table_index].joins.append(
            Join(target=dst[0], on=[(src[1], dst[1])], cardinality="many_to_one")
        )
    catalog.models.extend(models)
    return tables
