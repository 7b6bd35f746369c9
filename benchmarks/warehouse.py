"""A synthetic enterprise warehouse catalog: names and types only, abbreviated as real
warehouses name things.

``generate_warehouse(scale=1.0, seed=0) -> Catalog``: 162 databases, 8,255 tables and
532,000 columns at scale 1 (each count times ``scale``, rounded; at least one of
each), no labels, descriptions or sample values, as an ``information_schema`` dump
gives them. Database names combine a layer and a subject area (``edw_fin``,
``ods_crm_prd``); table names a layer prefix, a subject, an entity and sometimes a
grain (``f_sls_ord_ln``, ``d_cust_acct_hist``); column names the abbreviations of a
warehouse (``cust_acct_nbr``, ``ord_dt``, ``txn_amt_usd``, ``src_sys_cd``,
``etl_btch_id``, ``udf_07``), with SQL types. Table sizes are skewed (a few hundred
columns in some, a handful in many), as in a real set. Deterministic for a seed.

    PYTHONPATH=src python benchmarks/warehouse.py [--scale 1.0] --out catalog.json

writes the catalog as a Spider-format ``tables.json`` (one database per datasource),
which ``layersearch load`` reads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from layersearch.semantic.model import Catalog, Column, Datasource, Model

__all__ = ["DATABASES", "TABLES", "COLUMNS", "generate_warehouse", "warehouse_questions"]

DATABASES, TABLES, COLUMNS = 162, 8_255, 532_000

LAYERS = ["edw", "dw", "ods", "stg", "mart", "rpt", "lnd", "raw", "dm", "arch"]
AREAS = [
    "fin", "acct", "gl", "ap", "ar", "sls", "mktg", "crm", "cust", "hr", "pyrl", "inv",
    "sup", "scm", "ops", "prd", "clm", "pol", "uw", "pmt", "trsy", "risk", "cmpl", "erp",
    "wms", "pos", "ecom", "svc", "fac", "it", "lgl", "tax", "bud", "fcst", "ret", "whsl",
]  # fmt: skip
ENVS = ["", "", "", "prd", "hist", "v2", "arch", "rpl"]
TABLE_PREFIXES = ["f", "d", "fct", "dim", "stg", "t", "tbl", "agg", "xref", "brdg", "snap", "h"]
ENTITIES = [
    "cust", "cust_acct", "acct", "ord", "ord_ln", "ord_hdr", "invc", "invc_ln", "pmt",
    "txn", "gl_jrnl", "jrnl_ln", "gl_acct", "emp", "emp_asgn", "dept", "org", "cost_ctr",
    "prd", "sku", "prd_cat", "sup", "vndr", "po", "po_ln", "rcpt", "shpmt", "shpmt_ln",
    "whse", "loc", "rgn", "terr", "cal", "fx_rt", "clm", "clm_ln", "pol", "pol_cvg",
    "prem", "agt", "bnft", "ctrct", "ctrct_ln", "case", "tkt", "lead", "oppty", "cmpgn",
    "promo", "prc_lst", "bud_ln", "fcst", "asset", "lease", "bank_acct", "pyrl_run",
    "tmsht", "stk_lvl", "rtn", "adj", "chrg", "rfnd", "disc", "tax_jur", "addr", "cntct",
]  # fmt: skip
GRAINS = ["", "", "", "", "dtl", "hdr", "hist", "snap", "mth", "day", "wk", "curr", "v2", "qtr"]
# column vocabulary: (name parts, SQL types to pick from)
ATTRS: list[tuple[str, list[str]]] = [
    ("id", ["NUMBER(38,0)", "BIGINT", "INTEGER"]), ("key", ["NUMBER(38,0)", "BIGINT"]),
    ("nbr", ["VARCHAR(20)", "VARCHAR(32)"]), ("cd", ["VARCHAR(10)", "CHAR(3)", "VARCHAR(4)"]),
    ("nm", ["VARCHAR(100)", "VARCHAR(255)"]), ("desc", ["VARCHAR(500)", "VARCHAR(2000)"]),
    ("dt", ["DATE"]), ("ts", ["TIMESTAMP_NTZ", "TIMESTAMP"]), ("amt", ["NUMBER(18,2)", "DECIMAL(18,4)"]),
    ("amt_usd", ["NUMBER(18,2)"]), ("amt_lcl", ["NUMBER(18,2)"]), ("qty", ["NUMBER(18,4)", "INTEGER"]),
    ("cnt", ["INTEGER", "BIGINT"]), ("pct", ["NUMBER(9,4)", "FLOAT"]), ("rt", ["NUMBER(18,8)", "FLOAT"]),
    ("flg", ["CHAR(1)", "BOOLEAN"]), ("ind", ["CHAR(1)", "VARCHAR(1)"]), ("typ", ["VARCHAR(30)"]),
    ("sts", ["VARCHAR(20)", "VARCHAR(15)"]), ("stat_cd", ["VARCHAR(10)"]), ("txt", ["VARCHAR(4000)"]),
    ("yr", ["SMALLINT", "INTEGER"]), ("mth", ["SMALLINT"]), ("seq", ["INTEGER"]), ("ver", ["INTEGER"]),
]  # fmt: skip
SUBJECTS = [
    "cust", "acct", "ord", "invc", "pmt", "txn", "gl", "emp", "dept", "prd", "sku", "sup",
    "vndr", "po", "shp", "whse", "loc", "rgn", "crncy", "fx", "clm", "pol", "prem", "agt",
    "bill", "ship", "tax", "disc", "net", "grs", "unt", "lst", "prc", "cost", "mrgn", "bal",
    "cr", "dr", "due", "pd", "opn", "cls", "eff", "exp", "strt", "end", "crt", "upd", "dlvr",
    "rcv", "rqst", "aprv", "rjct", "canc", "ret", "adj", "wrt_off", "lmt", "scr", "rnk",
]  # fmt: skip
# columns nearly every warehouse table carries (audit and history)
HOUSEKEEPING = [
    ("src_sys_cd", "VARCHAR(10)"), ("load_dt", "DATE"), ("load_ts", "TIMESTAMP_NTZ"),
    ("upd_ts", "TIMESTAMP_NTZ"), ("etl_btch_id", "NUMBER(38,0)"), ("rec_hash", "VARCHAR(64)"),
    ("eff_strt_dt", "DATE"), ("eff_end_dt", "DATE"), ("curr_flg", "CHAR(1)"),
    ("del_flg", "CHAR(1)"), ("rec_src", "VARCHAR(50)"), ("crt_usr_id", "VARCHAR(30)"),
]  # fmt: skip


def _count(n: int, scale: float) -> int:
    return max(1, round(n * scale))


def _sizes(rng: random.Random, total: int, parts: int, skew: float) -> list[int]:
    """``total`` split into ``parts`` positive sizes with a long tail (a lognormal draw)."""
    weights = [rng.lognormvariate(0.0, skew) for _ in range(parts)]
    scale = (total - parts) / sum(weights)
    sizes = [1 + int(w * scale) for w in weights]
    for i in range(total - sum(sizes)):  # the rounding's remainder, one each
        sizes[i % parts] += 1
    return sizes


def _database_names(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        parts = [rng.choice(LAYERS), rng.choice(AREAS), rng.choice(ENVS)]
        name = "_".join(p for p in parts if p)
        if name in seen:
            name = f"{name}_{len(names)}"
        seen.add(name)
        names.append(name)
    return names


def _table_name(rng: random.Random, area: str, seen: set[str]) -> str:
    parts = [rng.choice(TABLE_PREFIXES), area if rng.random() < 0.5 else "", rng.choice(ENTITIES)]
    parts.append(rng.choice(GRAINS))
    name = "_".join(p for p in parts if p)
    n = 2
    base = name
    while name in seen:
        name = f"{base}_{n}"
        n += 1
    seen.add(name)
    return name


def _columns(rng: random.Random, table: str, n: int) -> list[Column]:
    entity = table.split("_", 1)[-1]
    cols = [Column(name=f"{entity}_id", data_type="NUMBER(38,0)", primary_key=True)]
    seen = {cols[0].name}
    # audit columns first in a share of tables, then the table's own attributes
    if n > 8 and rng.random() < 0.7:
        for name, typ in HOUSEKEEPING[: min(len(HOUSEKEEPING), max(2, n // 10))]:
            cols.append(Column(name=name, data_type=typ))
            seen.add(name)
    udf = 1
    while len(cols) < n:
        r = rng.random()
        if r < 0.06:
            name, typ = f"udf_{udf:02d}", "VARCHAR(255)"
            udf += 1
        else:
            attr, types = ATTRS[rng.randrange(len(ATTRS))]
            subject = rng.choice(SUBJECTS)
            second = rng.choice(SUBJECTS) if r > 0.7 else ""
            name = "_".join(p for p in (subject, second, attr) if p)
            typ = rng.choice(types)
        if name in seen:
            name = f"{name}_{len(cols)}"
        seen.add(name)
        cols.append(Column(name=name, data_type=typ))
    return cols


def generate_warehouse(scale: float = 1.0, seed: int = 0) -> Catalog:
    """The catalog (see the module docstring); ``scale`` multiplies every count."""
    rng = random.Random(seed)
    n_db, n_tables, n_columns = (_count(x, scale) for x in (DATABASES, TABLES, COLUMNS))
    n_tables = max(n_tables, n_db)
    n_columns = max(n_columns, n_tables)
    databases = _database_names(rng, n_db)
    per_db = _sizes(rng, n_tables, n_db, 1.0)
    per_table = _sizes(rng, n_columns, n_tables, 0.9)
    models: list[Model] = []
    for db, tables in zip(databases, per_db, strict=True):
        area = next((p for p in db.split("_") if p in AREAS), rng.choice(AREAS))
        seen: set[str] = set()
        for _ in range(tables):
            name = _table_name(rng, area, seen)
            columns = _columns(rng, name, per_table[len(models)])
            models.append(Model(name=name, datasource=db, columns=columns))
    return Catalog(datasources=[Datasource(name=d) for d in databases], models=models)


def warehouse_questions(n: int, seed: int = 1) -> list[str]:
    """Questions an analyst asks of such a warehouse, in words (not its abbreviations),
    drawn deterministically: "total net amount by customer account last month"."""
    rng = random.Random(seed)
    words = {
        "cust": "customer", "acct": "account", "ord": "order", "invc": "invoice",
        "pmt": "payment", "txn": "transaction", "emp": "employee", "dept": "department",
        "prd": "product", "sup": "supplier", "vndr": "vendor", "whse": "warehouse",
        "clm": "claim", "pol": "policy", "prem": "premium", "agt": "agent", "shpmt": "shipment",
        "rgn": "region", "loc": "location", "ctrct": "contract", "oppty": "opportunity",
        "cmpgn": "campaign", "bud": "budget", "fcst": "forecast", "gl": "general ledger",
    }  # fmt: skip
    measures = ["total amount", "count", "average price", "net amount", "quantity", "balance"]
    grains = ["by month", "by region", "per customer", "last quarter", "by status", "this year"]
    subjects = sorted(words)
    out = []
    for _ in range(n):
        a, b = rng.sample(subjects, 2)
        out.append(f"{rng.choice(measures)} of {words[a]} {rng.choice(grains)} for each {words[b]}")
    return out


def to_spider(catalog: Catalog) -> list[dict[str, object]]:
    """The catalog as Spider ``tables.json`` databases (names and types; no keys)."""
    out = []
    by_db: dict[str, list[Model]] = {}
    for m in catalog.models:
        by_db.setdefault(m.datasource, []).append(m)
    for db in catalog.datasource_names():
        models = by_db.get(db, [])
        columns: list[list[object]] = [[-1, "*"]]
        types = ["text"]
        for t, m in enumerate(models):
            for c in m.columns:
                columns.append([t, c.name])
                types.append(c.data_type or "text")
        out.append(
            {
                "db_id": db,
                "table_names_original": [m.name for m in models],
                "table_names": [m.name for m in models],
                "column_names_original": columns,
                "column_names": columns,
                "column_types": types,
                "primary_keys": [],
                "foreign_keys": [],
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cat = generate_warehouse(args.scale, args.seed)
    args.out.write_text(json.dumps(to_spider(cat)))
    cols = sum(len(m.columns) for m in cat.models)
    print(
        f"{len(cat.datasources)} databases, {len(cat.models)} tables, {cols} columns",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
