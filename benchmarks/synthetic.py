"""A synthetic semantic layer for benchmarks: realistic vocabulary, any size.

``generate_catalog(n_entities, n_memories, seed)`` builds datasources → models
→ columns and measures with business vocabulary (snake_case names with the
usual abbreviations: ``amt``, ``qty``, ``dt``, ``cnt``, ``pct``), labels,
descriptions, sample values, joins, and memories tagged with entities (some
with example queries). The output is deterministic for a seed.

``generate_queries(catalog, n, seed)`` draws questions and entity references
from the same vocabulary, so that searches hit realistic postings lengths.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from layersearch.semantic.model import Catalog, Column, Datasource, Join, Measure, MemorySpec, Model

__all__ = ["generate_catalog", "generate_queries", "QuerySet"]

DOMAINS = [
    "sales", "marketing", "finance", "billing", "support", "logistics", "inventory",
    "hr", "payroll", "procurement", "product", "growth", "risk", "crm", "ecommerce",
    "retail", "supply_chain", "fulfillment", "subscriptions", "ads",
]  # fmt: skip
REGIONS = ["us", "eu", "apac", "latam", "emea", "global", "uk", "de", "fr", "jp"]
PREFIXES = ["fct", "dim", "stg", "int", "agg", "raw", "rpt", "mart"]
SUFFIXES = ["", "", "", "daily", "weekly", "monthly", "hist", "snapshot", "v2", "current"]

# Business nouns for tables: (name, label, gloss)
ENTITIES = [
    ("orders", "Orders", "customer order"), ("order_items", "Order items", "order line"),
    ("customers", "Customers", "customer account"), ("products", "Products", "product in the catalog"),
    ("stores", "Stores", "physical or online store"), ("invoices", "Invoices", "invoice sent to a customer"),
    ("payments", "Payments", "payment attempt"), ("refunds", "Refunds", "refund issued"),
    ("shipments", "Shipments", "parcel shipped to a customer"), ("returns", "Returns", "returned item"),
    ("campaigns", "Campaigns", "marketing campaign"), ("ad_spend", "Ad spend", "day of paid media spend"),
    ("sessions", "Sessions", "website or app session"), ("signups", "Signups", "account signup"),
    ("subscriptions", "Subscriptions", "paid membership"), ("accounts", "Accounts", "ledger account"),
    ("ledger_entries", "Ledger entries", "journal line"), ("employees", "Employees", "employee"),
    ("suppliers", "Suppliers", "supplier"), ("purchase_orders", "Purchase orders", "purchase order to a supplier"),
    ("warehouses", "Warehouses", "warehouse"), ("stock_levels", "Stock levels", "stock count per SKU and site"),
    ("tickets", "Support tickets", "customer support ticket"), ("leads", "Leads", "sales lead"),
    ("opportunities", "Opportunities", "sales opportunity"), ("contracts", "Contracts", "signed contract"),
    ("email_events", "Email events", "email send, open or click"), ("exchange_rates", "Exchange rates", "daily FX rate"),
    ("promotions", "Promotions", "promotion or discount code"), ("carts", "Carts", "shopping cart"),
    ("reviews", "Reviews", "product review"), ("visits", "Store visits", "foot-traffic count"),
    ("timesheets", "Timesheets", "logged working hours"), ("budgets", "Budgets", "budget line"),
    ("forecasts", "Forecasts", "demand forecast"), ("claims", "Claims", "insurance or warranty claim"),
]  # fmt: skip

# Column concepts: (name stem, label, description, type, sample values or None)
AMOUNTS = [
    ("net_revenue", "Net revenue", "Revenue after discounts, refunds and tax, in the {noun}'s currency."),
    ("gross_amt", "Gross amount", "Gross amount before discounts and tax."),
    ("tax_amt", "Tax amount", "Sales tax or VAT charged on the {noun}."),
    ("discount_amt", "Discount amount", "Discount applied from promo codes and automatic promotions."),
    ("shipping_amt", "Shipping amount", "Shipping fee charged to the customer."),
    ("cost_amt", "Cost", "Landed cost of goods, including freight and duties."),
    ("unit_price", "Unit price", "List price per unit at the time of the {noun}."),
    ("total_amt", "Total amount", "What the customer paid for the {noun}, tax included."),
    ("balance_amt", "Balance", "Outstanding balance owed on the {noun}."),
    ("spend_amt", "Spend", "Media spend in USD, as billed by the ad network."),
    ("mrr_amt", "MRR", "Monthly recurring revenue attributed to the {noun}."),
    ("margin_pct", "Margin %", "Gross margin as a share of net revenue."),
    ("ctr_pct", "CTR", "Click-through rate: clicks divided by impressions."),
    ("conv_rate", "Conversion rate", "Share of sessions that ended in an order."),
    ("fx_rate", "FX rate", "Exchange rate to USD on the {noun} date."),
]  # fmt: skip
COUNTS = [
    ("qty", "Quantity", "Number of units on the {noun}."),
    ("item_cnt", "Item count", "Number of distinct line items on the {noun}."),
    ("click_cnt", "Clicks", "Clicks recorded by the ad platform."),
    ("impr_cnt", "Impressions", "Ad impressions served."),
    ("visit_cnt", "Visits", "Visits counted by the door sensors."),
    ("hrs_worked", "Hours worked", "Hours logged against the {noun}, overtime included."),
    ("days_to_ship", "Days to ship", "Business days between order and shipment."),
    ("sqft", "Square feet", "Selling floor area in square feet."),
]  # fmt: skip
DATES = [
    ("created_at", "Created at", "When the {noun} row was created, in UTC."),
    ("updated_at", "Updated at", "Last modification time, in UTC."),
    ("order_dt", "Order date", "Order date in the store's local time zone."),
    ("ship_dt", "Ship date", "Date the {noun} left the warehouse."),
    ("due_dt", "Due date", "Payment due date of the {noun}."),
    ("closed_ts", "Closed at", "When the {noun} was closed or resolved."),
    ("fiscal_qtr", "Fiscal quarter", "Fiscal quarter (FY starts in February), e.g. FY24-Q3."),
    ("signup_dt", "Signup date", "Date the customer created their account."),
]  # fmt: skip
CATEGORIES = [
    ("status", "Status", "Lifecycle state of the {noun}.", ["pending", "active", "completed", "cancelled", "refunded"]),
    ("channel", "Channel", "Where the {noun} originated.", ["web", "mobile_app", "in_store", "marketplace", "partner"]),
    ("country_cd", "Country", "ISO 3166 country code of the {noun}.", ["US", "DE", "FR", "GB", "JP", "BR"]),
    ("currency_cd", "Currency", "ISO 4217 currency code every amount is in.", ["USD", "EUR", "GBP", "JPY"]),
    ("region", "Region", "Sales region used in board reporting.", ["north_america", "europe", "apac", "latam"]),
    ("segment", "Customer segment", "Segment from the lifecycle model.", ["new", "returning", "vip", "churned", "dormant"]),
    ("payment_method", "Payment method", "How the {noun} was paid.", ["card", "paypal", "invoice", "gift_card", "bnpl"]),
    ("category_nm", "Category", "Merchandise category.", ["apparel", "footwear", "home", "beauty", "electronics"]),
    ("tier", "Plan tier", "Membership plan tier.", ["basic", "plus", "premium", "enterprise"]),
    ("utm_source", "UTM source", "Traffic source from the landing URL.", ["google", "meta", "tiktok", "newsletter", "affiliate"]),
    ("is_internal", "Internal flag", "True for QA and employee accounts; exclude from reporting.", None),
    ("is_deleted", "Deleted flag", "Soft-delete marker; deleted rows stay for audit.", None),
]  # fmt: skip
MEASURE_TEMPLATES = [
    ("total_{c}", "sum({c})", "Total {label}", "Sum of {label_l} over the selected {noun}s."),
    ("avg_{c}", "avg({c})", "Average {label}", "Mean {label_l} per {noun}."),
    ("max_{c}", "max({c})", "Max {label}", "Largest {label_l} seen on a single {noun}."),
    ("{c}_p90", "quantile({c}, 0.9)", "P90 {label}", "90th percentile of {label_l}; robust to outliers."),
]  # fmt: skip
COUNT_MEASURES = [
    ("{noun}_cnt", "count(*)", "{noun_l} count", "Number of {noun}s."),
    ("distinct_customers", "count(distinct customer_id)", "Distinct customers", "Customers with at least one {noun}."),
]  # fmt: skip

MEMORY_TEMPLATES = [
    "\"{label}\" in every dashboard means {col}, not {col2}; finance signed this off for {domain} reporting.",
    "Exclude rows where is_internal is true from {model}: QA places real {noun}s every hour.",
    "{col} is in local time; use {col2} for hour-of-day comparisons across {region} {domain} sites.",
    "For {domain} KPIs use {measure} rather than summing {col} by hand: it already drops cancelled {noun}s.",
    "{model} is refreshed nightly at 02:00 UTC; numbers for today are partial until then.",
    "Join {model} to {other} on {col}; the relationship is many-to-one and nulls mean guest checkouts.",
    "Amounts in {model} are in the {noun}'s own currency: convert with the daily FX rate before adding across {region}.",
    "{measure} double counts split shipments before 2021; filter {col2} >= '2021-01-01' for trend charts.",
]  # fmt: skip
QUESTION_TEMPLATES = [
    "monthly {label_l} by {dim_l}",
    "{label_l} last quarter for {region} {noun}s",
    "how many {noun}s per {dim_l}",
    "average {label_l} per {noun} in {domain}",
    "which {dim_l} has the highest {label_l}",
    "{domain} {label_l} trend by week",
    "top {noun}s by {label_l} excluding internal accounts",
    "{label_l} vs {label2_l} by {dim_l}",
    "churned customers with {label_l} over 1000",
    "{noun} {dim_l} breakdown",
]  # fmt: skip


def _word(rng: random.Random, items: list) -> object:
    return items[rng.randrange(len(items))]


@dataclass(slots=True)
class _ModelPlan:
    noun: str
    label: str
    gloss: str


def _model(
    rng: random.Random, ds: str, domain: str, region: str, name: str, plan: _ModelPlan
) -> Model:
    noun_single = plan.gloss
    cols: list[Column] = [
        Column(name="id", data_type="bigint", label=f"{plan.label} ID", primary_key=True,
               description=f"Surrogate key of the {noun_single}."),
    ]  # fmt: skip
    for fk in ("customer_id", "store_id", "product_id", "account_id", "campaign_id"):
        if rng.random() < 0.35:
            target = fk[:-3]
            cols.append(
                Column(name=fk, data_type="bigint", label=f"{target.title()} ID",
                       description=f"The {target} this {noun_single} belongs to.")
            )  # fmt: skip
    n_amt = rng.randint(3, 9)
    n_cnt = rng.randint(1, 4)
    n_dt = rng.randint(2, 4)
    n_cat = rng.randint(3, 7)
    numeric: list[tuple[str, str]] = []
    for group, n, typ in ((AMOUNTS, n_amt, "decimal(12,2)"), (COUNTS, n_cnt, "integer")):
        for stem, label, desc in rng.sample(group, min(n, len(group))):
            cols.append(Column(name=stem, data_type=typ, label=label,
                               description=desc.format(noun=noun_single)))  # fmt: skip
            numeric.append((stem, label))
    for stem, label, desc in rng.sample(DATES, n_dt):
        cols.append(Column(name=stem, data_type="timestamp" if stem.endswith(("_at", "_ts")) else "date",
                           label=label, description=desc.format(noun=noun_single)))  # fmt: skip
    for stem, label, desc, values in rng.sample(CATEGORIES, n_cat):
        cols.append(Column(name=stem, data_type="boolean" if values is None else "varchar",
                           label=label, description=desc.format(noun=noun_single),
                           values=list(values or [])))  # fmt: skip
    measures: list[Measure] = []
    taken = {c.name for c in cols}
    for tmpl, formula, label, desc in COUNT_MEASURES[: rng.randint(1, 2)]:
        mname = tmpl.format(noun=plan.noun.rstrip("s"))
        if mname in taken:
            mname = f"{plan.noun.rstrip('s')}_row_cnt"
        measures.append(Measure(name=mname, formula=formula,
                                label=label.format(noun_l=plan.label).capitalize(),
                                description=desc.format(noun=noun_single)))  # fmt: skip
    for stem, clabel in rng.sample(numeric, min(len(numeric), rng.randint(1, 4))):
        tmpl, formula, label, desc = _word(rng, MEASURE_TEMPLATES)  # type: ignore[misc]
        mname = tmpl.format(c=stem)
        if mname in taken or any(m.name == mname for m in measures):
            continue
        measures.append(Measure(name=mname, formula=formula.format(c=stem), data_type="double",
                                label=label.format(label=clabel),
                                description=desc.format(label_l=clabel.lower(), noun=noun_single)))  # fmt: skip
    return Model(
        name=name,
        datasource=ds,
        label=f"{plan.label} ({region.upper()} {domain.replace('_', ' ')})",
        description=(
            f"One row per {noun_single} in the {domain.replace('_', ' ')} domain, {region.upper()} "
            f"scope. Built from the {_word(rng, PREFIXES)} layer; amounts in local currency."
        ),
        sql_table=f"analytics.{name}",
        columns=cols,
        measures=measures,
    )


def generate_catalog(n_entities: int, n_memories: int = 0, seed: int = 0) -> Catalog:
    """A catalog with about ``n_entities`` entities (± one model) and ``n_memories`` memories."""
    rng = random.Random(seed)
    n_ds = max(1, n_entities // 25_000)
    ds_names = [f"{_word(rng, DOMAINS)}_{_word(rng, REGIONS)}_{i}" for i in range(n_ds)]
    datasources = [
        Datasource(name=d, label=d.replace("_", " ").title(), dialect=str(_word(rng, ["duckdb", "postgres", "bigquery", "snowflake"])),
                   description=f"Warehouse schema for {d.split('_')[0]} analytics.")
        for d in ds_names
    ]  # fmt: skip
    models: list[Model] = []
    count = n_ds
    used: set[str] = set()
    while count < n_entities:
        ds = ds_names[len(models) % n_ds]
        domain, region = str(_word(rng, DOMAINS)), str(_word(rng, REGIONS))
        noun, label, gloss = ENTITIES[rng.randrange(len(ENTITIES))]
        suffix = str(_word(rng, SUFFIXES))
        base = "_".join(p for p in (str(_word(rng, PREFIXES)), domain, noun, suffix) if p)
        name = base
        n = 2
        while f"{ds}.{name}" in used:
            name = f"{base}_{n}"
            n += 1
        used.add(f"{ds}.{name}")
        m = _model(rng, ds, domain, region, name, _ModelPlan(noun, label, gloss))
        count += 1 + len(m.columns) + len(m.measures)
        models.append(m)
    _add_joins(rng, models)
    memories = _memories(rng, models, n_memories)
    return Catalog(datasources=datasources, models=models, memories=memories)


def _add_joins(rng: random.Random, models: list[Model]) -> None:
    by_ds: dict[str, list[Model]] = {}
    for m in models:
        by_ds.setdefault(m.datasource, []).append(m)
    for group in by_ds.values():
        for m in group:
            fks = [c.name for c in m.columns if c.name.endswith("_id") and c.name != "id"]
            for fk in fks[:2]:
                target = group[rng.randrange(len(group))]
                if target is m:
                    continue
                m.joins.append(Join(target=target.name, on=[(fk, "id")], cardinality="many_to_one",
                                    join_type="left"))  # fmt: skip


def _memories(rng: random.Random, models: list[Model], n: int) -> list[MemorySpec]:
    out: list[MemorySpec] = []
    for i in range(n):
        m = models[rng.randrange(len(models))]
        other = models[rng.randrange(len(models))]
        c1, c2 = rng.sample(m.columns, 2)
        meas = m.measures[rng.randrange(len(m.measures))]
        parts = m.name.split("_")
        fields = {
            "label": c1.label or c1.name, "col": c1.name, "col2": c2.name, "model": m.name,
            "other": other.name, "measure": meas.name, "domain": parts[1] if len(parts) > 1 else parts[0],
            "noun": (m.label or m.name).split(" (")[0].lower().rstrip("s"), "region": str(_word(rng, REGIONS)).upper(),
        }  # fmt: skip
        learning = str(_word(rng, MEMORY_TEMPLATES)).format(**fields)
        tags = [f"{m.id}.{c1.name}", f"{m.id}.{c2.name}"]
        if rng.random() < 0.3:
            tags.append(m.id)
        query = None
        if rng.random() < 0.3:
            dim = next((c for c in m.columns if c.values), c2)
            query = {"measures": [f"{m.id}.{meas.name}"], "dimensions": [f"{m.id}.{dim.name}"]}
        out.append(MemorySpec(learning=learning, description=f"Note {i} on {m.name}",
                              entities=tags, query=query, source="synthetic"))  # fmt: skip
    return out


@dataclass(slots=True)
class QuerySet:
    questions: list[str]
    entities: list[list[str]]


def generate_queries(catalog: Catalog, n: int, seed: int = 1) -> QuerySet:
    """``n`` questions and ``n`` entity-reference lists drawn from the catalog's vocabulary."""
    rng = random.Random(seed)
    questions: list[str] = []
    refs: list[list[str]] = []
    for _ in range(n):
        m = catalog.models[rng.randrange(len(catalog.models))]
        c1, c2 = rng.sample(m.columns, 2)
        dim = next((c for c in rng.sample(m.columns, len(m.columns)) if c.values), c2)
        parts = m.name.split("_")
        q = str(_word(rng, QUESTION_TEMPLATES)).format(
            label_l=(c1.label or c1.name).lower(), label2_l=(c2.label or c2.name).lower(),
            dim_l=(dim.label or dim.name).lower(), noun=str(_word(rng, ENTITIES)[0]).rstrip("s"),  # type: ignore[index]
            region=str(_word(rng, REGIONS)).upper(), domain=parts[1] if len(parts) > 1 else parts[0],
        )  # fmt: skip
        questions.append(q)
        # Full ids and `model.leaf` suffixes, as agents pass them.
        k = rng.randint(1, 3)
        picked = [c1, c2, dim][:k]
        refs.append(
            [f"{m.id}.{c.name}" if rng.random() < 0.5 else f"{m.name}.{c.name}" for c in picked]
        )
    return QuerySet(questions=questions, entities=refs)
