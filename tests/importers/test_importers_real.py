"""The importers on real, externally authored semantic layers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from layersearch.semantic.edges import catalog_edges
from layersearch.semantic.importers import detect_format, load_catalog
from layersearch.semantic.model import Catalog


def kinds(catalog: Catalog) -> Counter[str]:
    return Counter(e.kind for e in catalog.entities())


def assert_unique_ids(catalog: Catalog) -> None:
    ids = [e.id.lower() for e in catalog.entities()]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes


def test_slayer_jaffle(data_dir: Path) -> None:
    path = data_dir / "slayer-jaffle"
    assert detect_format(path) == "slayer"
    cat = load_catalog(path)
    assert sorted(m.name for m in cat.models) == [
        "customers",
        "items",
        "orders",
        "products",
        "stores",
        "supplies",
        "tweets",
    ]
    assert cat.datasource_names() == ["jaffle_shop"]
    assert kinds(cat) == {
        "datasource": 1,
        "model": 7,
        "column": 30,
        "measure": 16,
        "aggregation": 1,
    }
    assert_unique_ids(cat)
    orders = next(m for m in cat.models if m.name == "orders")
    assert orders.sql_table == "orders"
    assert orders.description and orders.description.startswith("Customer orders")
    total = next(c for c in orders.columns if c.name == "order_total")
    assert (total.data_type, total.label) == ("DOUBLE", "Order Total")
    assert [c.name for c in orders.columns if c.primary_key] == ["id"]
    aov = next(me for me in orders.measures if me.name == "avg_order_value")
    assert aov.formula == "order_total:sum / nullif(id:count, 0)"
    assert aov.label == "Average Order Value"
    agg = orders.aggregations[0]
    assert agg.name == "weighted_avg"
    assert agg.params == [{"name": "weight", "sql": "subtotal"}]
    joins = {(m.name, j.target): j for m in cat.models for j in m.joins}
    assert sorted(joins) == [
        ("items", "orders"),
        ("items", "products"),
        ("orders", "customers"),
        ("orders", "stores"),
        ("supplies", "products"),
        ("tweets", "customers"),
    ]
    assert joins[("items", "orders")].on == [("order_id", "id")]
    assert joins[("items", "orders")].join_type == "left"
    # every target column is the target's primary key, so each is many_to_one
    assert {j.cardinality for j in joins.values()} == {"many_to_one"}
    refs = {(e.src, e.dst) for e in catalog_edges(cat) if e.type == "REFERENCES"}
    assert ("jaffle_shop.orders.avg_order_value", "jaffle_shop.orders.id") in refs


def test_dbt_omg(data_dir: Path) -> None:
    path = data_dir / "dbt-omg"
    assert detect_format(path) == "dbt"
    cat = load_catalog(path)
    assert len(cat.models) == 25
    assert cat.datasource_names() == ["dbt_omg"]
    assert_unique_ids(cat)
    by_name = {m.name: m for m in cat.models}
    claim = by_name["claim"]
    assert claim.sql_table == "claim"
    pk = [c for c in claim.columns if c.primary_key]
    assert [c.name for c in pk] == ["claim_identifier"]
    opened = next(c for c in claim.columns if c.name == "claim_open_date")
    assert opened.data_type == "date"
    assert opened.description == "Time dimension, day granularity."
    assert {me.name: me.formula for me in claim.measures} == {
        "claims": "count(company_claim_number)",
        "avg_time_to_settle_claim": "avg(DATEDIFF('day', claim_open_date, claim_close_date))",
    }
    # metrics defined in claim_amount.yaml land on claim_amount, by their input measure
    amount = by_name["claim_amount"]
    measures = {me.name: me for me in amount.measures}
    assert sorted(measures) == [
        "loss_payment_amount",
        "loss_reserve_amount",
        "total_claim_amount",
        "total_loss_amount",
    ]
    assert measures["total_loss_amount"].formula == "loss_payment_amount + loss_reserve_amount"
    assert measures["total_loss_amount"].label == "Loss Amount"
    assert measures["loss_payment_amount"].formula is not None
    assert measures["loss_payment_amount"].formula.startswith("total_claim_amount [filter:")
    # entity joins: foreign → primary is many_to_one, shared primaries are one_to_one
    joins = {(m.name, j.target): j for m in cat.models for j in m.joins}
    assert joins[("claim", "catastrophe")].cardinality == "many_to_one"
    assert joins[("claim", "catastrophe")].on == [
        ("catastrophe_identifier", "catastrophe_identifier")
    ]
    assert joins[("policy_amount", "policy")].cardinality == "many_to_one"
    assert joins[("claim_amount", "loss_payment")].cardinality == "one_to_one"
    assert joins[("loss_payment", "claim_amount")].cardinality == "one_to_one"
    assert (
        "claim",
        "occurrence_events",
    ) not in joins  # 'occurrence_identifier' ≠ entity 'occurrence'
    assert len(joins) == 47
    assert any("metricflow_time_spine.sql" in s for s in cat.skipped)


def test_dbt_datasource_override(data_dir: Path) -> None:
    cat = load_catalog(data_dir / "dbt-omg", datasource="insurance")
    assert cat.datasource_names() == ["insurance"]
    assert all(m.id.startswith("insurance.") for m in cat.models)


def test_spider_tables(data_dir: Path) -> None:
    path = data_dir / "spider" / "tables.json"
    assert detect_format(path) == "spider"
    cat = load_catalog(path)
    assert len(cat.datasources) == 166
    assert kinds(cat) == {"datasource": 166, "model": 876, "column": 4503}
    assert_unique_ids(cat)
    models = {m.id: m for m in cat.models}
    perp = models["perpetrator.perpetrator"]
    assert perp.label == "perpetrator"
    col = next(c for c in perp.columns if c.name == "People_ID")
    assert (col.label, col.data_type, col.primary_key) == ("people id", "number", False)
    # SQLite's own bookkeeping tables are listed by Spider but never searched
    internal = sorted(i for i, m in models.items() if m.hidden)
    assert internal == [
        "soccer_1.sqlite_sequence",
        "store_1.sqlite_sequence",
        "world_1.sqlite_sequence",
    ]
    assert [j.target for j in perp.joins] == ["people"]
    assert perp.joins[0].on == [("People_ID", "People_ID")]
    assert perp.joins[0].cardinality == "many_to_one"
    # names with spaces are sanitised, the natural form stays the label
    people = models["perpetrator.people"]
    home = next(c for c in people.columns if c.label == "home town")
    assert home.name == "Home_Town"
    # 795 foreign keys in the file, two listed twice
    assert sum(len(m.joins) for m in cat.models) == 793
    assert sum("the second listing of foreign key" in s for s in cat.skipped) == 2
    edges = [e for e in catalog_edges(cat) if e.type == "JOINS"]
    assert len(edges) == 793
