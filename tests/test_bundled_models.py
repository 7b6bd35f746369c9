"""The bundled sample semantic layer in ``models/`` loads and is internally consistent.

It is what the README, the docs and the demos search over, so every memory tag,
every example-query reference and every join must name something that exists.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from layersearch.semantic.edges import catalog_edges, formula_references
from layersearch.semantic.importers.native import CARDINALITIES, load_native
from layersearch.semantic.model import Aggregation, Catalog, Entity, Measure

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"

# Dotted identifiers in a filter string, after quoted literals are removed.
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_TIME_TYPES = ("date", "timestamp", "timestamptz", "datetime")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_native(MODELS_DIR)


@pytest.fixture(scope="module")
def entities(catalog: Catalog) -> dict[str, Entity]:
    return {e.id: e for e in catalog.entities()}


def query_references(query: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, id) for every entity an example query names."""
    refs: list[tuple[str, str]] = []
    refs += [("measure", m) for m in query.get("measures") or []]
    refs += [("dimension", d) for d in query.get("dimensions") or []]
    for td in query.get("time_dimensions") or []:
        refs.append(("time_dimension", td["dimension"]))
    for o in query.get("order") or []:
        refs.append(("order", o["by"]))
    for f in query.get("filters") or []:
        refs += [("filter", ident) for ident in _DOTTED.findall(_QUOTED.sub("''", f))]
    return refs


def test_query_references_reads_filters_without_literals() -> None:
    refs = query_references(
        {"filters": ["shop.orders.status = 'a.b.c'", "x.y >= 1 and shop.orders.id < 5"]}
    )
    assert refs == [
        ("filter", "shop.orders.status"),
        ("filter", "x.y"),
        ("filter", "shop.orders.id"),
    ]


def test_counts(catalog: Catalog) -> None:
    columns = [c for m in catalog.models for c in m.columns]
    measures = [me for m in catalog.models for me in m.measures]
    aggregations = [a for m in catalog.models for a in m.aggregations]
    examples = [mem for mem in catalog.memories if mem.query]
    assert len(catalog.datasources) >= 3
    assert len(catalog.models) >= 15
    assert len(columns) >= 150
    assert len(measures) >= 30
    assert len(aggregations) >= 3
    assert len(catalog.memories) >= 25
    assert len(examples) >= 8
    assert catalog.skipped == []


def test_layout_one_file_per_model(catalog: Catalog) -> None:
    for m in catalog.models:
        assert m.source is not None
        assert Path(m.source.split(" ")[0]) == MODELS_DIR / m.datasource / f"{m.name}.yaml"
    for d in catalog.datasources:
        assert d.source == str(MODELS_DIR / d.name / "datasource.yaml")


def test_every_leaf_is_documented(catalog: Catalog) -> None:
    for m in catalog.models:
        assert m.description, m.id
        assert m.sql_table, m.id
        assert any(c.primary_key for c in m.columns), f"{m.id} has no primary key"
        for c in m.columns:
            assert c.description and c.data_type, f"{m.id}.{c.name}"
            # YAML 1.1 reads bare yes/no/on/off as booleans: values must stay strings.
            assert not {"True", "False"} & set(c.values), f"{m.id}.{c.name}"
        cols = {c.name for c in m.columns}
        leaves: list[Measure | Aggregation] = [*m.measures, *m.aggregations]
        for leaf in leaves:
            assert leaf.formula and leaf.description, f"{m.id}.{leaf.name}"
        for me in m.measures:
            assert me.formula is not None
            assert formula_references(me.formula, cols), f"{m.id}.{me.name} uses no column"
        for a in m.aggregations:
            assert a.params and all("name" in p for p in a.params), f"{m.id}.{a.name}"
    assert sum(1 for m in catalog.models for c in m.columns if c.values) >= 20


def test_hidden_entities(catalog: Catalog, entities: dict[str, Entity]) -> None:
    assert entities["shop.raw_events_staging"].hidden
    # A hidden model hides its leaves even when they are not marked themselves.
    assert entities["shop.raw_events_staging.event_id"].hidden
    assert entities["shop.customers.password_hash"].hidden
    assert entities["shop.customers.ssn_last4"].hidden
    assert not entities["shop.customers.email"].hidden
    hidden_columns = [e for e in entities.values() if e.kind == "column" and e.hidden]
    assert len(hidden_columns) >= 4


def test_readme_examples_resolve(entities: dict[str, Entity]) -> None:
    for ident in ("shop.orders.order_total", "shop.orders.net_revenue", "shop.stores"):
        assert ident in entities
    # `orders.order_total` (model.leaf) and `order_total` (bare) each name one entity.
    assert [i for i in entities if i.endswith(".orders.order_total")] == ["shop.orders.order_total"]
    assert [e.id for e in entities.values() if e.name == "order_total"] == [
        "shop.orders.order_total"
    ]
    tax = [e.id for e in entities.values() if "tax" in e.name and e.id.startswith("shop.orders.")]
    assert "shop.orders.tax_amt" in tax


def test_some_bare_names_are_ambiguous(entities: dict[str, Entity]) -> None:
    spread: dict[str, set[str]] = {}
    for e in entities.values():
        if e.kind == "column":
            spread.setdefault(e.name, set()).add(e.datasource)
    for name in ("id", "created_at", "status", "country", "currency"):
        assert len(spread[name]) >= 2, name


def test_memory_tags_resolve(catalog: Catalog, entities: dict[str, Entity]) -> None:
    kinds: Counter[str] = Counter()
    for mem in catalog.memories:
        assert mem.learning.strip()
        assert mem.entities, mem.learning
        assert mem.description is None or len(mem.description) <= 500
        for ident in mem.entities:
            assert ident in entities, f"{mem.source}: unknown entity {ident}"
            assert not entities[ident].hidden, f"{mem.source}: tags hidden {ident}"
            kinds[entities[ident].kind] += 1
    # Tags cover every level: datasource, model, column and measure.
    assert {"datasource", "model", "column", "measure"} <= set(kinds)
    assert sum(1 for mem in catalog.memories if len(mem.entities) >= 3) >= 5
    # Some notes are about a whole model, some about a single measure.
    for kind in ("model", "measure"):
        assert any(
            all(entities[i].kind == kind for i in mem.entities) for mem in catalog.memories
        ), f"no memory tagged only with {kind}s"


def test_example_queries_resolve(catalog: Catalog, entities: dict[str, Entity]) -> None:
    examples = [mem for mem in catalog.memories if mem.query]
    for mem in examples:
        assert mem.query is not None
        refs = query_references(mem.query)
        assert any(role == "measure" for role, _ in refs), mem.source
        for role, ident in refs:
            assert ident in entities, f"{mem.source}: {role} {ident} does not exist"
            e = entities[ident]
            assert not e.hidden, f"{mem.source}: {role} {ident} is hidden"
            if role == "measure":
                assert e.kind in ("measure", "aggregation"), f"{ident} is a {e.kind}"
            elif role in ("dimension", "filter"):
                assert e.kind == "column", f"{ident} is a {e.kind}"
            elif role == "time_dimension":
                assert e.kind == "column" and e.data_type is not None
                assert e.data_type.startswith(_TIME_TYPES), f"{ident} is {e.data_type}"
        limit = mem.query.get("limit")
        assert limit is None or (isinstance(limit, int) and limit > 0)
        sql = mem.query.get("sql")
        assert sql is None or isinstance(sql, str)
    assert sum(1 for mem in examples if mem.query and mem.query.get("sql")) >= 1


def test_joins_resolve(catalog: Catalog, entities: dict[str, Entity]) -> None:
    models = {m.id: m for m in catalog.models}
    joins = [e for e in catalog_edges(catalog) if e.type == "JOINS"]
    assert len(joins) >= 20
    seen: dict[tuple[str, str], str] = {}
    for e in joins:
        assert e.dst in models, f"{e.src} joins unknown {e.dst}"
        assert e.props["cardinality"] in CARDINALITIES, f"{e.src} -> {e.dst}"
        assert e.props["source_columns"], f"{e.src} -> {e.dst} has no join columns"
        for a, b in zip(e.props["source_columns"], e.props["target_columns"], strict=True):
            assert f"{e.src}.{a}" in entities, f"{e.src} -> {e.dst}: no column {a}"
            assert f"{e.dst}.{b}" in entities, f"{e.src} -> {e.dst}: no column {b}"
        seen[(e.src, e.dst)] = e.props["cardinality"]
    # A join declared from both ends must agree on its cardinality.
    mirror = {"many_to_one": "one_to_many", "one_to_many": "many_to_one"}
    for (src, dst), card in seen.items():
        back = seen.get((dst, src))
        if back is not None:
            assert back == mirror.get(card, card), f"{src} <-> {dst}: {card} vs {back}"
    cards = Counter(seen.values())
    assert cards["many_to_one"] > cards["one_to_many"] > 0
    cross = [(s, d) for s, d in seen if s.split(".")[0] != d.split(".")[0]]
    assert ("shop.customers", "finance.accounts") in cross
    # Hidden models stay out of the join graph: nothing should route through staging.
    assert all("raw_events_staging" not in s + d for s, d in seen)


def doc_files(markdown: str) -> dict[str, str]:
    """YAML blocks of a doc whose first line is ``# file: <path>``, by path."""
    files: dict[str, str] = {}
    for block in re.findall(r"```yaml\n(.*?)```", markdown, flags=re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# file: "):
            files[first.removeprefix("# file: ").strip()] = rest
    return files


def test_yaml_format_doc_example_loads(tmp_path: Path) -> None:
    doc = (MODELS_DIR.parent / "docs" / "yaml-format.md").read_text(encoding="utf-8")
    files = doc_files(doc)
    assert set(files) == {
        "demo/datasource.yaml",
        "demo/orders.yaml",
        "demo/customers.yaml",
        "memories.yaml",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    catalog = load_native(tmp_path)
    ents = {e.id: e for e in catalog.entities()}
    leaves = [e for e in ents.values() if e.kind in ("column", "measure", "aggregation")]
    # The numbers the doc states under the example.
    assert [m.id for m in catalog.models] == ["demo.customers", "demo.orders"]
    assert len(leaves) == 12
    assert [e.id for e in leaves if e.hidden] == ["demo.orders._loaded_at"]
    assert ents["demo.customers.country"].values == ("US", "DE", "NO")
    joins = [e for e in catalog_edges(catalog) if e.type == "JOINS"]
    assert {(e.src, e.dst, tuple(e.props["source_columns"])) for e in joins} == {
        ("demo.orders", "demo.customers", ("customer_id",)),
        ("demo.customers", "demo.orders", ("id",)),
    }
    assert len(catalog.memories) == 2
    example = [m for m in catalog.memories if m.query]
    assert len(example) == 1 and example[0].query is not None
    for _, ident in query_references(example[0].query):
        assert ident in ents


def test_readme_counts_are_current(catalog: Catalog) -> None:
    text = " ".join((MODELS_DIR / "README.md").read_text(encoding="utf-8").split())
    m = re.search(
        r"In all: (\d+) datasources, (\d+) models, (\d+) columns, (\d+) measures, "
        r"(\d+) aggregations .*?, (\d+) joins and (\d+) memories, (\d+) of them example queries",
        text,
    )
    assert m, "models/README.md lost its 'In all: …' summary line"
    actual = (
        len(catalog.datasources),
        len(catalog.models),
        sum(len(x.columns) for x in catalog.models),
        sum(len(x.measures) for x in catalog.models),
        sum(len(x.aggregations) for x in catalog.models),
        sum(len(x.joins) for x in catalog.models),
        len(catalog.memories),
        sum(1 for x in catalog.memories if x.query),
    )
    assert tuple(int(g) for g in m.groups()) == actual
