"""Format detection, the small fixtures, and malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch.errors import ConfigError, ModelLoadError
from layersearch.semantic.importers import FORMATS, detect_format, load_catalog
from layersearch.semantic.importers._common import safe_name, slug, unique_name


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_safe_name_rules() -> None:
    assert safe_name("Home Town") == "Home_Town"
    assert safe_name("eg Agree Objectives") == "eg_Agree_Objectives"
    assert safe_name("a.b:c") == "a_b_c"
    assert safe_name(" x  y ") == "x_y"
    assert safe_name("%_Change_2007") == "%_Change_2007"
    assert slug("dbt-omg") == "dbt_omg"
    taken: set[str] = set()
    assert [unique_name(n, taken) for n in ("Id", "id", "ID", "id_2")] == [
        "Id",
        "id_2",
        "ID_3",
        "id_2_2",
    ]


def test_dbt_metrics_fixture(fixtures: Path) -> None:
    path = fixtures / "dbt_metrics"
    assert detect_format(path) == "dbt"
    cat = load_catalog(path)
    assert cat.datasource_names() == ["dbt_metrics"]
    models = {m.name: m for m in cat.models}
    orders = {me.name: me for me in models["orders"].measures}
    # the explicit metric and the create_metric measure are one measure
    assert list(orders).count("order_total") == 1
    assert orders["order_total"].formula == "sum(order_total)"
    assert orders["order_total"].label == "Order Total"
    assert orders["order_total"].description == "Sum of order totals."
    assert orders["avg_total"].formula == "avg(order_total)"
    assert orders["buyers"].formula == "count_distinct(customer_id)"
    assert orders["p90_total"].formula == "percentile(order_total, 0.9)"
    assert orders["revenue_per_order"].formula == "order_total / order_count_metric"
    assert orders["order_count_metric"].formula == "order_count"
    assert orders["cumulative_revenue"].formula == (
        "cumulative(order_total, 7 days) [filter: {{ Dimension('order__status') }} = 'paid' "
        "and {{ Dimension('customer__region') }} = 'north']"
    )
    # derived: first input is a metric whose measure lives on orders
    assert orders["orders_per_customer"].formula == "order_count_metric / customer_count"
    customers = {me.name: me for me in models["customers"].measures}
    assert customers["buyer_conversion"].formula == "conversion(customer_count, buyers)"
    cols = {c.name: c for c in models["orders"].columns}
    assert cols["order"].primary_key and not cols["customer"].primary_key
    assert cols["placed_at"].data_type == "timestamp"
    assert cols["status"].description == "Order status."
    assert models["orders"].sql_table == "fct_orders"
    [join] = models["orders"].joins
    assert (join.target, join.on, join.cardinality) == (
        "customers",
        [("customer", "customer")],
        "many_to_one",
    )
    skipped = "\n".join(cat.skipped)
    assert "metric 'ghost' skipped" in skipped
    assert "schema.yml: no semantic_models or metrics" in skipped
    assert "metricflow_time_spine.sql" in skipped


def test_slayer_datasource_file_hidden_and_collisions(fixtures: Path) -> None:
    cat = load_catalog(fixtures / "slayer_mixed")
    [ds] = cat.datasources
    assert (ds.name, ds.dialect, ds.description) == ("warehouse", "duckdb", "The demo warehouse.")
    models = {m.name: m for m in cat.models}
    assert models["users"].hidden
    assert next(c for c in models["events"].columns if c.name == "secret").hidden
    assert models["events"].sql_table == "raw.events"
    # measure 'ID' clashes with column 'id' once ids are case-insensitive
    assert [me.name for me in models["events"].measures] == ["event_count"]
    assert any("measure 'ID' skipped" in s for s in cat.skipped)
    assert any("1 model filter(s) not imported" in s for s in cat.skipped)
    cards = [j.cardinality for j in models["events"].joins]
    assert cards == ["many_to_one", None]  # user_id→name is not the target's key


def test_bad_yaml_names_file_and_line(fixtures: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"bad\.yaml:3:\d+: invalid YAML: mapping values"):
        load_catalog(fixtures / "broken", fmt="dbt")
    with pytest.raises(ModelLoadError, match=r"bad\.yaml:3:"):
        detect_format(fixtures / "broken")


def test_wrong_shapes(tmp_path: Path) -> None:
    bad_model = write(tmp_path / "a" / "m.yaml", "version: 7\nname: m\ncolumns: {id: 1}\n")
    with pytest.raises(ModelLoadError, match=r"m\.yaml \(model m\): 'columns' must be a list"):
        load_catalog(bad_model.parent)
    bad_entity = write(
        tmp_path / "b" / "s.yaml",
        "semantic_models:\n  - name: s\n    entities:\n      - name: e\n        type: sideways\n",
    )
    with pytest.raises(
        ModelLoadError, match=r"s\.yaml semantic_models\[0\].*entity type 'sideways'"
    ):
        load_catalog(bad_entity.parent)
    bad_json = write(tmp_path / "t.json", '[{"db_id": "x", "table_names": []\n')
    with pytest.raises(ModelLoadError, match=r"t\.json:\d+:\d+: invalid JSON"):
        load_catalog(bad_json)
    not_spider = write(tmp_path / "u.json", "[1, 2]")
    with pytest.raises(ModelLoadError, match="not a Spider tables.json"):
        load_catalog(not_spider)
    short = write(tmp_path / "v.json", json.dumps([{"db_id": "x", "table_names": []}]))
    with pytest.raises(ModelLoadError, match=r"v\.json\[0\]: missing .*column_names"):
        load_catalog(short)


def test_unknown_and_mixed_folders(tmp_path: Path) -> None:
    write(tmp_path / "x" / "a.yaml", "hello: world\n")
    with pytest.raises(ModelLoadError) as err:
        detect_format(tmp_path / "x")
    assert "--format" in str(err.value)
    assert all(f in str(err.value) for f in FORMATS)
    write(tmp_path / "y" / "a.yaml", "semantic_models: []\n")
    write(tmp_path / "y" / "b.yaml", "model: m\ndatasource: d\n")
    with pytest.raises(ModelLoadError, match="several formats: dbt .* native"):
        detect_format(tmp_path / "y")
    with pytest.raises(ModelLoadError, match="no such file"):
        detect_format(tmp_path / "missing")


def test_detect_native_and_bad_arguments(tmp_path: Path) -> None:
    write(tmp_path / "n" / "ds.yaml", "datasource:\n  name: shop\n")
    write(tmp_path / "n" / "orders.yaml", "model: orders\ncolumns: [{name: id}]\n")
    assert detect_format(tmp_path / "n") == "native"
    assert [m.id for m in load_catalog(tmp_path / "n").models] == ["shop.orders"]
    with pytest.raises(ConfigError, match="unknown format 'csv'"):
        load_catalog(tmp_path / "n", fmt="csv")
    with pytest.raises(ConfigError, match="does not apply to the native format"):
        load_catalog(tmp_path / "n", datasource="x")
    cat = load_catalog(tmp_path / "n", sample_values=3)
    assert any("sampling 3 values per column (--sample-values)" in s for s in cat.skipped)


def test_detect_database_paths(tmp_path: Path) -> None:
    assert detect_format("postgresql://u@localhost/db") == "database"
    assert detect_format("postgres://localhost/db") == "database"
    f = write(tmp_path / "x.sqlite3", "")
    assert detect_format(f) == "database"
