"""Physical names: each importer that has them fills them; the store keeps them (an old
store opens and gains the column); ``inspect`` and full search hits carry them."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from layersearch.api import Layersearch
from layersearch.cli import main
from layersearch.semantic.importers import load_catalog
from layersearch.semantic.model import Catalog
from layersearch.store import migrations
from layersearch.store.duckdb import DuckDBStore
from tests.support import MODELS


def physical(catalog: Catalog) -> dict[str, str | None]:
    return {e.id: e.physical for e in catalog.entities()}


@pytest.mark.parametrize(
    ("sample", "model", "table", "column", "expression"),
    [
        (
            "slayer-jaffle",
            "jaffle_shop.orders",
            "orders",
            "jaffle_shop.orders.store_id",
            "store_id",
        ),
        (
            "dbt-omg",
            "dbt_omg.agreement_party_role",
            "agreement_party_role",
            "dbt_omg.agreement_party_role.policy",
            "agreement_identifier",
        ),
        (
            "lookml",
            "block_braintree.dispute",
            "DISPUTE",
            "block_braintree.dispute.amount",
            "${TABLE}.amount",
        ),
        (
            "osi",
            "tpcds_retail_model.store",
            "tpcds.public.store",
            "tpcds_retail_model.store.s_state",
            "s_state",
        ),
        (
            "cube",
            "cube.StripeCharges",
            "(select * from ${SCHEMA}.charges)",
            "cube.StripeCharges.amount",
            "1.0 * COALESCE(${CUBE}.amount, 0) / 100",
        ),
    ],
)
def test_importers_fill_physical_names(
    data_dir: Path, sample: str, model: str, table: str, column: str, expression: str
) -> None:
    names = physical(load_catalog(data_dir / sample))
    assert names[model] == table
    assert names[column] == expression


def test_dbt_manifest_models_carry_their_relation(data_dir: Path) -> None:
    names = physical(load_catalog(data_dir / "dbt-manifest" / "docs"))
    models = {k: v for k, v in names.items() if k.count(".") == 1}
    assert models and all(v and v.count(".") == 2 for v in models.values())


def test_native_yaml_sql_table_and_column_sql(tmp_path: Path) -> None:
    (tmp_path / "datasource.yaml").write_text("datasource:\n  name: shop\n")
    (tmp_path / "orders.yaml").write_text(
        "model: orders\ndatasource: shop\nsql_table: analytics.fct_orders\n"
        "columns:\n  - name: amount\n    sql: amount_cents / 100\n  - name: id\n"
    )
    names = physical(load_catalog(tmp_path))
    assert names["shop.orders"] == "analytics.fct_orders"
    assert names["shop.orders.amount"] == "amount_cents / 100"
    assert names["shop.orders.id"] is None


def test_inspect_and_full_search_show_physical_names() -> None:
    with Layersearch(":memory:") as ls:
        ls.load(MODELS)
        info = ls.inspect(["shop.orders"]).entities[0]
        assert info.physical == "analytics.fct_orders"
        full = ls.search(entities=["shop.orders"], compact=False)
        assert full.results[0].physical == "analytics.fct_orders"
        compact = ls.search(entities=["shop.orders"])
        assert "physical" not in compact.results[0].model_dump(mode="json")


def test_an_old_store_opens_and_gains_physical_names(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Layersearch(str(path)) as ls:
        ls.load(MODELS)
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE entities DROP COLUMN physical")
    con.execute("DELETE FROM schema_version WHERE version = ?", [migrations.LATEST])
    con.close()
    store = DuckDBStore(path)
    try:
        assert {e.physical for e in store.load_entities()} == {None}  # opens: nothing lost
    finally:
        store.close()
    with Layersearch(str(path)) as ls:
        ls.load(MODELS)
        assert ls.inspect(["shop.orders"]).entities[0].physical == "analytics.fct_orders"


def test_cli_inspect_prints_the_table(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["--store", store, "load", str(MODELS)]).exit_code == 0
    res = runner.invoke(main, ["--store", store, "inspect", "shop.orders"])
    assert res.exit_code == 0, res.output
    assert "physical: analytics.fct_orders" in res.stdout
    res = runner.invoke(main, ["--store", store, "inspect", "shop.orders", "--json"])
    assert json.loads(res.stdout)["entities"][0]["physical"] == "analytics.fct_orders"


def test_dbt_manifest_without_relation_name_uses_database_schema_alias(tmp_path: Path) -> None:
    node = {
        "unique_id": "model.shop.orders",
        "resource_type": "model",
        "name": "orders",
        "alias": "fct_orders",
        "database": "warehouse",
        "schema": "analytics",
        "package_name": "shop",
        "config": {"enabled": True},
        "columns": {"id": {"name": "id", "description": "The order."}},
    }
    doc = {
        "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
        "nodes": {"model.shop.orders": node},
        "sources": {},
        "exposures": {},
        "metrics": {},
        "semantic_models": {},
        "disabled": {},
    }
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "manifest.json").write_text(json.dumps(doc))
    names = physical(load_catalog(tmp_path / "target"))
    assert [v for k, v in names.items() if k.endswith(".orders")] == [
        "warehouse.analytics.fct_orders"
    ]
