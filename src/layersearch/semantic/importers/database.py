"""A live database's schema: DuckDB files, SQLite files and PostgreSQL DSNs.

DuckDB files are read with ``duckdb`` (read-only). DuckDB's ``sqlite`` and
``postgres`` extensions are downloaded on first use, which an offline machine
cannot do, so SQLite files are read with the standard library's ``sqlite3``
and PostgreSQL with ``psycopg``. Every table and view becomes a model (tables
outside the default schema are named ``<schema>_<table>``), every column a
column with its declared type, primary keys are flagged and foreign keys become
many_to_one joins. With ``sample_values=N`` each text column gets up to N
distinct non-null values (ordered, each cut to 100 characters).

Identifiers cannot be bound as SQL parameters, so they are double-quoted with
embedded quotes doubled (:func:`quote_ident`); values are always bound.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from layersearch.errors import ConfigError, ModelLoadError, mask_secrets, register_secrets
from layersearch.semantic.importers._common import safe_name, slug, unique_name
from layersearch.semantic.importers.native import check_catalog
from layersearch.semantic.model import Catalog, Column, Datasource, Join, Model

log = logging.getLogger("layersearch.semantic.importers.database")

DB_SUFFIXES = (".duckdb", ".db", ".sqlite", ".sqlite3")
DSN_PREFIXES = ("postgresql://", "postgres://")
DEFAULT_SCHEMAS = ("main", "public")
MAX_VALUE_CHARS = 100
MAX_SAMPLE_VALUES = 1000
TEXT_TYPES = ("CHAR", "TEXT", "STRING", "CLOB", "UUID", "ENUM")
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(slots=True)
class _Table:
    schema: str
    name: str
    comment: str | None = None
    #: (name, declared type, comment)
    columns: list[tuple[str, str, str | None]] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    #: (columns, referenced schema, referenced table, referenced columns)
    foreign_keys: list[tuple[list[str], str, str, list[str]]] = field(default_factory=list)


#: runs ``sql`` with one bound LIMIT parameter and returns the first column
Sampler = Callable[[str, int], list[Any]]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def is_dsn(path: str | Path) -> bool:
    return isinstance(path, str) and path.startswith(DSN_PREFIXES)


def is_database_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in DB_SUFFIXES


def check_sample_values(n: int) -> None:
    """``sample_values`` within 0 … :data:`MAX_SAMPLE_VALUES`, else a ConfigError."""
    if n < 0 or n > MAX_SAMPLE_VALUES:
        raise ConfigError(f"sample_values must be between 0 and {MAX_SAMPLE_VALUES}")


def load_database(
    path: str | Path, *, sample_values: int = 0, datasource: str | None = None
) -> Catalog:
    check_sample_values(sample_values)
    if is_dsn(path):
        dsn = str(path)
        try:
            database = urlsplit(dsn).path.lstrip("/")
        except ValueError as exc:  # a bracket never closed, a port that is no number
            raise ModelLoadError(f"{_redact(dsn)}: not a valid address: {exc}") from exc
        name = datasource or slug(database or "postgres")
        with _postgres(dsn) as (tables, sampler):
            return _build(tables, sampler, sample_values, name, "postgres", _redact(dsn))
    p = Path(path)
    if not p.is_file():
        raise ModelLoadError(f"{p}: no such database file")
    name = datasource or slug(p.stem)
    with p.open("rb") as fh:
        header = fh.read(16)
    if header == SQLITE_MAGIC:
        with _sqlite(p) as (tables, sampler):
            return _build(tables, sampler, sample_values, name, "sqlite", str(p))
    with _duckdb(p) as (tables, sampler):
        return _build(tables, sampler, sample_values, name, "duckdb", str(p))


def _build(
    tables: list[_Table],
    sampler: Sampler,
    sample_values: int,
    ds: str,
    dialect: str,
    source: str,
) -> Catalog:
    catalog = Catalog(datasources=[Datasource(name=ds, dialect=dialect, source=source)])
    taken: set[str] = set()
    names: dict[tuple[str, str], str] = {}
    #: (schema, table) → source column name → column name in the catalog
    columns: dict[tuple[str, str], dict[str, str]] = {}
    for t in tables:
        base = t.name if t.schema in DEFAULT_SCHEMAS else f"{t.schema}_{t.name}"
        names[(t.schema, t.name)] = unique_name(safe_name(base), taken)
        col_taken: set[str] = set()
        columns[(t.schema, t.name)] = {
            c: unique_name(safe_name(c), col_taken) for c, _, _ in t.columns
        }
    for t in tables:
        qualified = f"{quote_ident(t.schema)}.{quote_ident(t.name)}"
        model = Model(
            name=names[(t.schema, t.name)],
            datasource=ds,
            description=t.comment,
            sql_table=f"{t.schema}.{t.name}",
            source=f"{source} table {t.schema}.{t.name}",
        )
        col_names = columns[(t.schema, t.name)]
        pk = set(t.primary_key)
        for cname, ctype, comment in t.columns:
            col = Column(
                name=col_names[cname],
                data_type=ctype or None,
                description=comment,
                primary_key=cname in pk,
            )
            if sample_values and _is_text(ctype):
                col.values = _sample(sampler, qualified, cname, sample_values, catalog, model)
            model.columns.append(col)
        for cols, ref_schema, ref_table, ref_cols in t.foreign_keys:
            target = names.get((ref_schema, ref_table))
            ref_names = columns.get((ref_schema, ref_table), {})
            if (
                target is None
                or len(cols) != len(ref_cols)
                or not all(c in col_names for c in cols)
                or not all(c in ref_names for c in ref_cols)
            ):
                catalog.skipped.append(
                    f"{model.source}: foreign key to {ref_schema}.{ref_table} skipped "
                    "(referenced table not imported or columns unknown)"
                )
                continue
            pairs = [(col_names[a], ref_names[b]) for a, b in zip(cols, ref_cols, strict=True)]
            model.joins.append(Join(target=target, on=pairs, cardinality="many_to_one"))
        catalog.models.append(model)
    check_catalog(catalog)
    return catalog


def _is_text(declared: str) -> bool:
    upper = (declared or "").upper()
    return any(t in upper for t in TEXT_TYPES)


def _sample(
    sampler: Sampler, qualified: str, column: str, n: int, catalog: Catalog, model: Model
) -> list[str]:
    col = quote_ident(column)
    sql = f"SELECT DISTINCT {col} FROM {qualified} WHERE {col} IS NOT NULL ORDER BY 1 LIMIT ?"  # noqa: S608 identifiers quoted, LIMIT bound
    try:
        rows = sampler(sql, n)
    except Exception as exc:  # a broken view must not stop the import
        catalog.skipped.append(f"{model.source}: values of column '{column}' not sampled: {exc}")
        return []
    return [str(v)[:MAX_VALUE_CHARS] for v in rows]


def _redact(dsn: str) -> str:
    """The address with its password masked, well-formed or not; its passwords are
    registered, so a driver's message repeating one is masked too."""
    register_secrets(dsn)
    return mask_secrets(dsn)


# --- DuckDB ---------------------------------------------------------------


@contextlib.contextmanager
def _reading(
    con: Any,
    name: str,
    error: type[Exception],
    tables_of: Callable[[Any], list[_Table]],
    bind: Callable[[str, int], tuple[str, Any]],
) -> Iterator[tuple[list[_Table], Sampler]]:
    """The tables of an open connection and a sampler over it (``bind``: the driver's
    statement and parameters for a sampling query with its limit); a driver ``error``
    while they are used is a load error naming ``name``; the connection is closed after."""
    try:
        tables = tables_of(con)

        def sampler(sql: str, n: int) -> list[Any]:
            return [r[0] for r in con.execute(*bind(sql, n)).fetchall()]

        yield tables, sampler
    except error as exc:
        raise ModelLoadError(f"{name}: cannot read the schema: {exc}") from exc
    finally:
        con.close()


def _duckdb(path: Path) -> contextlib.AbstractContextManager[tuple[list[_Table], Sampler]]:
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise ModelLoadError(f"{path}: cannot open as a DuckDB or SQLite database: {exc}") from exc
    return _reading(con, str(path), duckdb.Error, _duckdb_tables, lambda sql, n: (sql, [n]))


def _duckdb_tables(con: Any) -> list[_Table]:
    db = con.execute("SELECT current_database()").fetchone()[0]
    rel = con.execute(
        "SELECT schema_name, table_name, comment FROM duckdb_tables() "
        "WHERE database_name = ? AND NOT internal AND NOT temporary "
        "UNION ALL SELECT schema_name, view_name, comment FROM duckdb_views() "
        "WHERE database_name = ? AND NOT internal AND NOT temporary ORDER BY 1, 2",
        [db, db],
    ).fetchall()
    tables = {(s, t): _Table(s, t, c) for s, t, c in rel}
    for s, t, name, dtype, comment in con.execute(
        "SELECT schema_name, table_name, column_name, data_type, comment FROM duckdb_columns() "
        "WHERE database_name = ? AND NOT internal ORDER BY schema_name, table_name, column_index",
        [db],
    ).fetchall():
        if (s, t) in tables:
            tables[(s, t)].columns.append((name, dtype, comment))
    for s, t, ctype, cols, ref_table, ref_cols in con.execute(
        "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
        "referenced_table, referenced_column_names FROM duckdb_constraints() "
        "WHERE database_name = ? AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') "
        "ORDER BY schema_name, table_name, constraint_index",
        [db],
    ).fetchall():
        table = tables.get((s, t))
        if table is None:
            continue
        if ctype == "PRIMARY KEY":
            table.primary_key = list(cols)
        else:  # DuckDB foreign keys stay within one schema
            table.foreign_keys.append((list(cols), s, ref_table, list(ref_cols)))
    return list(tables.values())


# --- SQLite ---------------------------------------------------------------


def _sqlite(path: Path) -> contextlib.AbstractContextManager[tuple[list[_Table], Sampler]]:
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ModelLoadError(f"{path}: cannot open as SQLite: {exc}") from exc
    return _reading(con, str(path), sqlite3.Error, _sqlite_tables, lambda sql, n: (sql, (n,)))


def _sqlite_tables(con: sqlite3.Connection) -> list[_Table]:
    rows = con.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    tables: list[_Table] = []
    for (name,) in rows:
        table = _Table("main", name)
        q = quote_ident(name)
        pk: list[tuple[int, str]] = []
        for _cid, cname, ctype, _notnull, _default, pk_pos in con.execute(
            f"PRAGMA table_info({q})"
        ):
            table.columns.append((cname, ctype or "", None))
            if pk_pos:
                pk.append((pk_pos, cname))
        table.primary_key = [c for _, c in sorted(pk)]
        fks: dict[int, tuple[str, list[str], list[str | None]]] = {}
        for fk_id, _seq, ref, src, dst, *_ in con.execute(f"PRAGMA foreign_key_list({q})"):
            entry = fks.setdefault(fk_id, (ref, [], []))
            entry[1].append(src)
            entry[2].append(dst)
        for ref, srcs, dsts in fks.values():
            table.foreign_keys.append((srcs, "main", ref, _sqlite_ref_cols(con, ref, dsts)))
        tables.append(table)
    return tables


def _sqlite_ref_cols(con: sqlite3.Connection, ref: str, dsts: Sequence[str | None]) -> list[str]:
    """``REFERENCES t`` without columns means t's primary key."""
    if all(d is not None for d in dsts):
        return [d for d in dsts if d is not None]
    info = con.execute(f"PRAGMA table_info({quote_ident(ref)})").fetchall()
    return [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]


# --- PostgreSQL -----------------------------------------------------------

_PG_TABLES = """
SELECT c.oid, n.nspname, c.relname, obj_description(c.oid, 'pg_class')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%%' AND NOT c.relispartition
ORDER BY 2, 3
"""
_PG_COLUMNS = """
SELECT a.attrelid, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
       col_description(a.attrelid, a.attnum)
FROM pg_attribute a
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""
_PG_CONSTRAINTS = """
SELECT conrelid, contype, conkey, confrelid, confkey
FROM pg_constraint WHERE contype IN ('p', 'f') AND conrelid = ANY(%s)
ORDER BY conrelid, conname
"""


def _postgres(dsn: str) -> contextlib.AbstractContextManager[tuple[list[_Table], Sampler]]:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigError(
            "reading PostgreSQL needs psycopg: pip install 'layersearch[postgres]'"
        ) from exc
    try:
        con = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        shown = _redact(dsn)
        raise ModelLoadError(f"{shown}: cannot connect: {mask_secrets(str(exc))}") from exc
    return _reading(con, _redact(dsn), psycopg.Error, _postgres_tables, _pg_bind)


def _pg_bind(sql: str, n: int) -> tuple[str, Any]:
    # psycopg binds %s; the quoted identifiers never contain a bare %.
    return sql.replace("%", "%%").replace("LIMIT ?", "LIMIT %s"), (n,)


def _postgres_tables(con: Any) -> list[_Table]:
    rel = con.execute(_PG_TABLES).fetchall()
    by_oid = {oid: _Table(schema, name, comment) for oid, schema, name, comment in rel}
    oids = list(by_oid)
    attnames: dict[tuple[int, int], str] = {}
    for relid, num, name, dtype, comment in con.execute(_PG_COLUMNS, (oids,)).fetchall():
        by_oid[relid].columns.append((name, dtype, comment))
        attnames[(relid, num)] = name
    for relid, ctype, conkey, confrelid, confkey in con.execute(
        _PG_CONSTRAINTS, (oids,)
    ).fetchall():
        table = by_oid[relid]
        cols = [attnames[(relid, k)] for k in conkey]
        if ctype == "p":
            table.primary_key = cols
        elif confrelid in by_oid:
            ref = by_oid[confrelid]
            ref_cols = [attnames[(confrelid, k)] for k in confkey]
            table.foreign_keys.append((cols, ref.schema, ref.name, ref_cols))
    return list(by_oid.values())
