"""dbt artifacts, Cube, LookML and OSI: the real samples (counts against the source)
and small hand-written projects for what the samples do not have."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from layersearch.errors import ModelLoadError
from layersearch.semantic.importers import detect_format, load_catalog
from layersearch.semantic.importers.jsdata import parse_js
from layersearch.semantic.importers.lookml import parse_lookml
from layersearch.semantic.model import Catalog


def kinds(catalog: Catalog) -> Counter[str]:
    return Counter(e.kind for e in catalog.entities())


def model(catalog: Catalog, name: str):  # type: ignore[no-untyped-def]
    return next(m for m in catalog.models if m.name == name)


def leaf(catalog: Catalog, model_name: str, name: str):  # type: ignore[no-untyped-def]
    m = model(catalog, model_name)
    return next(x for x in [*m.columns, *m.measures] if x.name == name)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


# -- real samples -------------------------------------------------------------------------------


def test_dbt_manifest_sample(data_dir: Path) -> None:
    path = data_dir / "dbt-manifest" / "docs"
    assert detect_format(path) == "dbt-manifest"
    assert detect_format(path / "manifest.json") == "dbt-manifest"
    cat = load_catalog(path)
    # 43 models of which 9 ephemeral, plus 14 sources; models in one schema, sources in another
    assert cat.datasource_names() == ["postgres_public", "postgres_public_github_dev"]
    assert Counter(m.datasource for m in cat.models) == {
        "postgres_public_github_dev": 34,
        "postgres_public": 14,
    }
    assert kinds(cat) == {"datasource": 2, "model": 48, "column": 402}
    # every documented column (180 of models, 62 of sources) keeps its description
    assert sum(1 for m in cat.models for c in m.columns if c.description) == 180 + 62
    ephemeral = [s for s in cat.skipped if "ephemeral" in s]
    assert len(ephemeral) == 9
    assert any("14 seed node(s) not imported" in s for s in cat.skipped)
    issues = model(cat, "github__issues")
    assert issues.sql_table == "postgres.public_github_dev.github__issues"
    created = leaf(cat, "github__issues", "created_at")
    assert created.data_type == "timestamp without time zone"  # from catalog.json
    assert created.description == "The timestamp for when an issue was created."
    # the sample has not_null tests only: no column is both unique and not null
    assert not any(c.primary_key for m in cat.models for c in m.columns)


def test_cube_sample(data_dir: Path) -> None:
    path = data_dir / "cube"
    assert detect_format(path) == "cube"
    cat = load_catalog(path)
    # 24 dimensions and 25 measures are declared (the README's 26 counts the
    # commented-out cumulativeNetRevenue)
    assert kinds(cat) == {"datasource": 1, "model": 4, "column": 24, "measure": 25}
    assert cat.datasource_names() == ["cube"]
    mrr = leaf(cat, "StripeSaaSMetrics", "mrr")
    assert (mrr.label, mrr.formula, mrr.data_type) == ("MRR", "sum(mrr)", "sum")
    assert mrr.description and mrr.description.startswith("Monthly Recurring Revenue")
    churned = leaf(cat, "StripeSaaSMetrics", "churnedMrr")
    assert churned.formula == "sum(mrr) [filter: mrr_type = 'cancelled']"
    assert leaf(cat, "StripeCharges", "id").primary_key
    assert leaf(cat, "StripeSaaSMetrics", "newSubscriptions").hidden  # shown: false
    # the SQL the SaaS cube requires from SaaSMetricsSQL.js, its constants substituted
    saas = model(cat, "StripeSaaSMetrics")
    assert saas.sql_table and "mrr_movement" in saas.sql_table
    assert "INTERVAL '0 day'" in saas.sql_table
    joins = sorted((m.name, j.target, j.cardinality) for m in cat.models for j in m.joins)
    assert joins == [
        ("StripeCharges", "StripeCustomers", "many_to_one"),
        ("StripeInvoices", "StripeCustomers", "many_to_one"),
        ("StripeSaaSMetrics", "StripeCustomers", "many_to_one"),
    ]
    invoices = str(path / "StripeInvoices.js")
    # the arrow function and the call of it are reported with their lines, never run
    assert any(s.startswith(f"{invoices}:1: const yesNoCase") for s in cat.skipped)
    assert any(s.startswith(f"{invoices}:54: dimension 'paid'") for s in cat.skipped)
    assert leaf(cat, "StripeInvoices", "paid").data_type is None
    assert any("context 'Stripe'" in s for s in cat.skipped)


def test_lookml_sample(data_dir: Path) -> None:
    path = data_dir / "lookml"
    assert detect_format(path) == "lookml"
    cat = load_catalog(path)
    assert kinds(cat) == {"datasource": 1, "model": 22, "column": 324, "measure": 39}
    assert cat.datasource_names() == ["block_braintree"]  # manifest.lkml project_name
    assert cat.datasources[0].label == "Braintree Block"
    leaves = [x for m in cat.models for x in [*m.columns, *m.measures]]
    # 188 descriptions in the source; 59 `hidden: yes` (a 60th is commented out)
    notes = ("Group:", "Timeframes:")
    assert sum(1 for x in leaves if x.description and not x.description.startswith(notes)) == 188
    assert sum(x.hidden for x in leaves) == 59
    assert sum(c.primary_key for m in cat.models for c in m.columns) == 16
    end = leaf(cat, "subscription", "billing_period_end")
    assert end.data_type == "time"
    assert end.description and end.description.endswith("Timeframes: raw, date, month, year.")
    assert model(cat, "subscription").sql_table == "SUBSCRIPTION"
    # 25 joins in the two explores, 2 of them the same join in both
    joins = {(m.name, j.target): j for m in cat.models for j in m.joins}
    assert len(joins) == 23
    j = joins[("transaction", "credit_card")]
    assert (j.on, j.cardinality) == ([("id", "transaction_id")], "many_to_many")
    assert joins[("registered_customer", "customer_address")].on == [("id", "customer_id")]
    decline = leaf(cat, "transaction", "amount_of_decline")
    assert decline.formula == "sum(${amount}) [filter: denied = yes]"
    assert any("dashboard" in s and "not read" in s for s in cat.skipped)


def test_osi_sample(data_dir: Path) -> None:
    path = data_dir / "osi"
    assert detect_format(path) == "osi"
    cat = load_catalog(path)
    assert kinds(cat) == {"datasource": 1, "model": 5, "column": 31, "measure": 5}
    assert cat.datasource_names() == ["tpcds_retail_model"]
    qty = leaf(cat, "store_sales", "ss_quantity")
    assert qty.description == "Quantity of items sold. Synonyms: units sold, quantity."
    assert leaf(cat, "date_dim", "d_date").data_type == "time"
    sales = model(cat, "store_sales")
    assert sales.sql_table == "tpcds.public.store_sales"
    assert sorted(j.target for j in sales.joins) == ["customer", "date_dim", "item", "store"]
    assert [c.name for c in sales.columns if c.primary_key] == ["ss_item_sk"]
    assert any("ss_ticket_number" in s and "not a field" in s for s in cat.skipped)
    clv = leaf(cat, "store_sales", "customer_lifetime_value")
    assert clv.formula == (
        "SUM(store_sales.ss_ext_sales_price) / COUNT(DISTINCT customer.c_customer_sk)"
    )
    assert clv.description and "Synonyms: CLV, LTV" in clv.description


# -- dbt artifacts --------------------------------------------------------------------------------


def _node(uid: str, name: str, **extra: object) -> dict[str, object]:
    node: dict[str, object] = {
        "unique_id": uid,
        "name": name,
        "resource_type": uid.split(".", 1)[0],
        "database": "wh",
        "schema": "analytics",
        "config": {"enabled": True, "materialized": "table"},
        "columns": {},
        "relation_name": f'"wh"."analytics"."{name}"',
    }
    node.update(extra)
    return node


def _test(uid: str, kind: str, attached: str, column: str, **kwargs: object) -> dict[str, object]:
    deps = [attached, *([kwargs.pop("target")] if "target" in kwargs else [])]
    return {
        "unique_id": uid,
        "resource_type": "test",
        "config": {"enabled": True},
        "attached_node": attached,
        "column_name": column,
        "depends_on": {"nodes": deps},
        "test_metadata": {"name": kind, "kwargs": {"column_name": column, **kwargs}},
    }


def _manifest(tmp_path: Path, **sections: object) -> Path:
    doc = {
        "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
        "nodes": {},
        "sources": {},
        "exposures": {},
        "metrics": {},
        "semantic_models": {},
        "disabled": {},
    }
    doc.update(sections)
    target = tmp_path / "target"
    target.mkdir()
    (target / "manifest.json").write_text(json.dumps(doc))
    return target


def test_dbt_manifest_tests_become_keys_and_joins(tmp_path: Path) -> None:
    orders = _node(
        "model.shop.orders",
        "orders",
        description="One row per order.",
        tags=["finance"],
        meta={"owner": "sales team"},
        columns={
            "order_id": {"name": "order_id", "description": "The order."},
            "customer_id": {"name": "customer_id", "description": "Who ordered.", "tags": ["pii"]},
        },
    )
    customers = _node(
        "model.shop.customers",
        "customers",
        columns={"id": {"name": "id", "description": "The customer."}},
    )
    nodes = {
        "model.shop.orders": orders,
        "model.shop.customers": customers,
        "model.shop.tmp": _node(
            "model.shop.tmp", "tmp", config={"enabled": True, "materialized": "ephemeral"}
        ),
        "model.shop.off": _node("model.shop.off", "off", config={"enabled": False}),
        "test.shop.u": _test("test.shop.u", "unique", "model.shop.orders", "order_id"),
        "test.shop.n": _test("test.shop.n", "not_null", "model.shop.orders", "order_id"),
        "test.shop.n2": _test("test.shop.n2", "not_null", "model.shop.customers", "id"),
        "test.shop.r": _test(
            "test.shop.r",
            "relationships",
            "model.shop.orders",
            "customer_id",
            to="ref('customers')",
            field="id",
            target="model.shop.customers",
        ),
    }
    exposures = {
        "exposure.shop.kpis": {
            "name": "kpis",
            "label": "Weekly KPIs",
            "type": "dashboard",
            "description": "The board's numbers.",
            "depends_on": {"nodes": ["model.shop.orders"]},
        }
    }
    target = _manifest(tmp_path, nodes=nodes, exposures=exposures)
    assert detect_format(tmp_path) == "dbt-manifest"
    cat = load_catalog(tmp_path)
    assert cat.datasource_names() == ["wh_analytics"]
    assert sorted(m.name for m in cat.models) == ["customers", "orders"]
    o = model(cat, "orders")
    assert [c.name for c in o.columns if c.primary_key] == ["order_id"]  # unique + not_null
    assert not any(c.primary_key for c in model(cat, "customers").columns)  # not_null only
    assert [(j.target, j.on, j.cardinality) for j in o.joins] == [
        ("customers", [("customer_id", "id")], "many_to_one")
    ]
    assert o.description == (
        "One row per order. Meta: owner sales team. Tags: finance. "
        "Used by the dashboard 'Weekly KPIs': The board's numbers."
    )
    assert leaf(cat, "orders", "customer_id").description == "Who ordered. Tags: pii."
    assert any("model.shop.tmp: ephemeral" in s for s in cat.skipped)
    assert any("model.shop.off: disabled" in s for s in cat.skipped)
    assert any(str(target / "catalog.json") in s and "not found" in s for s in cat.skipped)


def test_dbt_manifest_semantic_manifest_beside_it(tmp_path: Path) -> None:
    nodes = {
        "model.shop.orders": _node(
            "model.shop.orders",
            "orders",
            columns={"order_id": {"name": "order_id", "description": "The order."}},
        )
    }
    target = _manifest(tmp_path, nodes=nodes)
    (target / "catalog.json").write_text(
        json.dumps(
            {
                "nodes": {
                    "model.shop.orders": {
                        "columns": {
                            "ORDER_ID": {"name": "ORDER_ID", "type": "NUMBER", "index": 1},
                            "AMOUNT": {"name": "AMOUNT", "type": "FLOAT", "index": 2},
                        }
                    }
                },
                "sources": {},
            }
        )
    )
    semantic = {
        "semantic_models": [
            {
                "name": "orders_sm",
                "model": "ref('orders')",
                "entities": [{"name": "order_id", "type": "primary"}],
                "dimensions": [{"name": "status", "type": "categorical", "label": "Status"}],
                "measures": [{"name": "revenue", "agg": "sum", "expr": "amount"}],
            }
        ],
        "metrics": [
            {
                "name": "total_revenue",
                "type": "simple",
                "description": "All revenue.",
                "type_params": {"measure": {"name": "revenue"}},
            }
        ],
    }
    (target / "semantic_manifest.json").write_text(json.dumps(semantic))
    cat = load_catalog(target / "manifest.json")
    [o] = cat.models
    # warehouse columns first in their order (case kept), the semantic model's added
    assert [(c.name, c.data_type) for c in o.columns] == [
        ("ORDER_ID", "NUMBER"),
        ("AMOUNT", "FLOAT"),
        ("status", None),
    ]
    assert o.columns[0].primary_key  # the primary entity
    assert o.columns[0].description == "The order."
    assert [(m.name, m.formula) for m in o.measures] == [
        ("revenue", "sum(amount)"),
        ("total_revenue", "revenue"),
    ]


def test_dbt_manifest_not_a_manifest(tmp_path: Path) -> None:
    p = tmp_path / "manifest.json"
    p.write_text('{"metadata": {}, "nodes": {}}')
    with pytest.raises(ModelLoadError, match="not a dbt manifest"):
        load_catalog(p, "dbt-manifest")
    p.write_text('{"metadata": ')
    with pytest.raises(ModelLoadError, match=r"manifest.json:1:\d+: invalid JSON"):
        load_catalog(p, "dbt-manifest")


# -- Cube -----------------------------------------------------------------------------------------


CUBE_YAML = """
cubes:
  - name: orders
    sql_table: public.orders
    description: Orders placed in the shop.
    joins:
      - name: users
        relationship: many_to_one
        sql: "{CUBE}.user_id = {users}.id"
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: user_id, sql: user_id, type: number, public: false}
      - {name: status, sql: status, type: string, title: Order status}
    measures:
      - {name: count, type: count}
      - {name: revenue, sql: amount, type: sum, description: Money taken.}
    segments:
      - {name: completed, sql: "{CUBE}.status = 'completed'", description: Finished orders}
  - name: users
    sql_table: public.users
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: city, sql: city, type: string}
views:
  - name: order_facts
    description: Orders with their customers.
    cubes:
      - join_path: orders
        includes: [status, revenue]
      - join_path: orders.users
        prefix: true
        includes: "*"
"""


def test_cube_yaml_segments_and_views(tmp_path: Path) -> None:
    write(tmp_path, {"model/cubes.yml": CUBE_YAML})
    assert detect_format(tmp_path) == "cube"
    cat = load_catalog(tmp_path, datasource="shop")
    assert [m.name for m in cat.models] == ["orders", "users", "order_facts"]
    o = model(cat, "orders")
    assert [(j.target, j.on, j.cardinality) for j in o.joins] == [
        ("users", [("user_id", "id")], "many_to_one")
    ]
    assert leaf(cat, "orders", "user_id").hidden
    seg = leaf(cat, "orders", "completed")
    assert (seg.data_type, seg.formula) == ("segment", "{CUBE}.status = 'completed'")
    assert seg.description == "Finished orders. Segment: a named filter."
    view = model(cat, "order_facts")
    assert [x.name for x in [*view.columns, *view.measures]] == [
        "status",
        "users_id",
        "users_city",
        "revenue",
    ]
    assert view.description == "Orders with their customers. A Cube view."


def test_cube_js_require_and_constants(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "sql/base.js": "const schema = 'shop';\nmodule.exports = { ordersSql: `select * from ${schema}.orders` };\n",
            "Orders.js": (
                "const { x } = 1;\n"
                "const base = require('./sql/base').ordersSql;\n"
                "cube(`Orders`, {\n"
                "  sql: base,\n"
                "  measures: { total: { sql: `${CUBE}.amount`, type: `sum` } },\n"
                "  dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },\n"
                "});\n"
            ),
        },
    )
    cat = load_catalog(tmp_path)
    [o] = cat.models
    assert o.sql_table == "(select * from shop.orders)"
    assert o.measures[0].formula == "sum(${CUBE}.amount)"
    assert o.columns[0].primary_key


@pytest.mark.parametrize(
    ("js", "reported"),
    [
        ("eval('cube(`X`, {})');", ":1: a call to eval(): not read"),
        ("const fs = require('fs');", "require('fs') is not a file of this model folder"),
        ("const s = require('../outside').x;", "leaves the model folder"),
        ("const f = (a) => a;", ":1: const f = a parenthesised expression or arrow function"),
        ("const f = function () { return 1 };", ":1: const f = a function: not read"),
        ("(function () { cube('Y', {}) })();", ":1: a parenthesised expression"),
        ("fetch('http://x');", ":1: a call to fetch(): not read"),
        ("const n = 1 + 2;", ":1: const n = an expression with '+': not read"),
    ],
)
def test_cube_js_outside_the_subset_is_reported_not_run(
    tmp_path: Path, js: str, reported: str
) -> None:
    (tmp_path / "outside.js").write_text("module.exports = { x: 1 };\n")
    proj = tmp_path / "proj"
    write(
        proj,
        {
            "Other.js": js + "\n",
            "A.js": "cube(`A`, { sql_table: `a`, dimensions: { id: { sql: `id`, type: `number` } } });\n",
        },
    )
    cat = load_catalog(proj, "cube")
    assert [m.name for m in cat.models] == ["A"]  # the other statement defined nothing
    assert any(reported in s for s in cat.skipped), cat.skipped


def test_cube_require_loop_is_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.js": "const b = require('./b');\nmodule.exports = { a: 1 };\n",
            "b.js": "const a = require('./a');\nmodule.exports = { b: 2 };\n",
            "C.js": "const a = require('./a');\ncube(`C`, { sql_table: `c` });\n",
        },
    )
    cat = load_catalog(tmp_path, "cube")
    assert [m.name for m in cat.models] == ["C"]
    assert any("require loop" in s for s in cat.skipped)


def test_js_syntax_errors_name_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "x.js"
    with pytest.raises(ModelLoadError, match=r"x.js:2:\d+: unclosed string"):
        parse_js(p, "cube(`A`, {\n  title: 'oops\n})")
    with pytest.raises(ModelLoadError, match=r"x.js:1:\d+: unclosed template literal"):
        parse_js(p, "cube(`A, {})")
    with pytest.raises(ModelLoadError, match=r"x.js:1:\d+: unclosed '\{'"):
        parse_js(p, "cube(`A`, { a: 1")
    # a closer no statement opened (this once looped forever, growing the skip report)
    with pytest.raises(ModelLoadError, match=r"x.js:2:1: unexpected '\}'"):
        parse_js(p, "cube(`A`, {});\n}")
    assert parse_js(p, ", ,").problems == [(1, "a statement starting with ',': not read")] * 2


# -- LookML ---------------------------------------------------------------------------------------


VIEW = """
view: orders {
  sql_table_name: shop.orders ;;
  dimension: id { primary_key: yes type: number sql: ${TABLE}.id ;; }
  dimension: user_id { type: number hidden: yes sql: ${TABLE}.user_id ;; }
  dimension_group: created {
    type: time
    timeframes: [date, month]
    sql: ${TABLE}.created_at ;;
    description: "When the order was placed"
  }
  measure: total { type: sum sql: ${TABLE}.amount ;; filters: [status: "paid"] label: "Total paid" }
}
view: users {
  sql_table_name: shop.users ;;
  dimension: id { primary_key: yes }
}
"""


def test_lookml_includes_loops_and_joins(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "shop.model.lkml": (
                'include: "/views/*.view"\ninclude: "/missing/*.view.lkml"\n'
                'include: "/explores/orders.explore.lkml"\n'
            ),
            "views/orders.view.lkml": VIEW,
            "explores/orders.explore.lkml": (
                'include: "/shop.model.lkml"\n'  # a loop back to the model
                "explore: orders {\n  join: buyer {\n    from: users\n"
                "    sql_on: ${orders.user_id} = ${buyer.id} ;;\n    relationship: many_to_one\n  }\n}\n"
            ),
            "unused.view.lkml": "view: unused { dimension: a {} }\n",
        },
    )
    assert detect_format(tmp_path) == "lookml"
    cat = load_catalog(tmp_path)
    assert cat.datasource_names() == [tmp_path.name.replace("-", "_")]
    assert [m.name for m in cat.models] == ["orders", "users"]
    o = model(cat, "orders")
    assert [(j.target, j.on, j.cardinality) for j in o.joins] == [
        ("users", [("user_id", "id")], "many_to_one")
    ]
    created = leaf(cat, "orders", "created")
    assert (created.data_type, created.description) == (
        "time",
        "When the order was placed. Timeframes: date, month.",
    )
    assert leaf(cat, "orders", "user_id").hidden
    total = leaf(cat, "orders", "total")
    assert (total.formula, total.label) == (
        "sum(${TABLE}.amount) [filter: status = paid]",
        "Total paid",
    )
    assert any("/missing/*.view.lkml" in s and "no such file" in s for s in cat.skipped)
    assert any("include loop" in s for s in cat.skipped)
    assert any("unused.view.lkml: not included" in s for s in cat.skipped)


def test_lookml_include_outside_the_project_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.view.lkml").write_text("view: secret { dimension: a {} }\n")
    proj = write(
        tmp_path / "proj",
        {
            "p.model.lkml": 'include: "../secret.view.lkml"\ninclude: "/../*.view"\ninclude: "/views/*.view"\n',
            "views/a.view.lkml": "view: a { dimension: id {} }\n",
        },
    )
    cat = load_catalog(proj)
    assert [m.name for m in cat.models] == ["a"]
    escapes = [s for s in cat.skipped if "leaves the project folder" in s]
    assert len(escapes) == 2


def test_lookml_syntax_errors_name_file_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "v.view.lkml"
    with pytest.raises(ModelLoadError, match=r"v.view.lkml:2:\d+: unclosed '\{'"):
        parse_lookml("view: a {\n  dimension: b {\n", p)
    with pytest.raises(
        ModelLoadError, match=r"v.view.lkml:2:\d+: .sql_table_name. is not closed by ';;'"
    ):
        parse_lookml("view: a {\n  sql_table_name: x\n}", p)
    with pytest.raises(ModelLoadError, match=r"v.view.lkml:1:1: '\}' without a matching"):
        parse_lookml("}", p)


# -- OSI ------------------------------------------------------------------------------------------


def test_osi_metric_without_dataset_is_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "m.yaml": (
                "semantic_model:\n  - name: shop\n    datasets:\n"
                "      - name: orders\n        source: db.orders\n        primary_key: [id]\n"
                "        fields:\n          - name: id\n            description: Order id\n"
                "            ai_context: {synonyms: [order number]}\n"
                "    metrics:\n      - name: n\n        expression: COUNT(*)\n"
            )
        },
    )
    cat = load_catalog(tmp_path)
    assert leaf(cat, "orders", "id").description == "Order id. Synonyms: order number."
    assert any("metric 'n' names no dataset" in s for s in cat.skipped)


# -- through the store: reloads, inspect, search ----------------------------------------------------


def test_reload_keeps_memories_and_search_finds_synonyms(data_dir: Path, tmp_path: Path) -> None:
    from layersearch import Layersearch

    with Layersearch(tmp_path / "store") as ls:
        first = ls.load(data_dir / "osi")
        ls.save_memory(
            "Store sales are in cents before 2020.", entities=["tpcds_retail_model.store_sales"]
        )
        second = ls.load(data_dir / "osi")
        assert (first.models, first.entities) == (second.models, second.entities) == (5, 42)
        assert second.memories_added == 0
        assert len(ls.list_memories()) == 1
        [card] = ls.inspect(["tpcds_retail_model.store_sales.ss_quantity"]).entities
        assert "units sold" in (card.description or "")
        [day] = ls.inspect(["tpcds_retail_model.date_dim.d_date"]).entities
        assert (day.data_type, day.description) == (
            "time",
            "Actual date value. Synonyms: date, calendar date.",
        )
        # "POS data" is only an ai_context synonym of store_sales
        hits = ls.search(question="POS data", channels=["fulltext"]).results
        assert hits and hits[0].id == "tpcds_retail_model.store_sales"


def test_cli_format_choices_are_the_importers_formats() -> None:
    from layersearch.cli import load as load_command
    from layersearch.semantic.importers import FORMATS

    [option] = [p for p in load_command.params if p.name == "fmt"]
    assert list(option.type.choices) == ["auto", *FORMATS]  # type: ignore[attr-defined]
