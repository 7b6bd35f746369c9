"""The filters of the golden file, with how each expected answer is computed independently
of our engine: by Kùzu (the same query, or a translation where the syntax differs) or by a
small Python oracle over the graph's plain data. `make_golden.py` writes the YAML; the
YAML is what the test reads and what a reviewer reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from layersearch.graph.graph import EntityGraph


@dataclass
class Case:
    query: str
    params: dict[str, Any] = field(default_factory=dict)
    #: Kùzu checks it: True = the same text, str = a translation
    kuzu: bool | str = False
    oracle: Callable[[EntityGraph], list[str]] | None = None
    ordered: bool = False
    note: str = ""


@dataclass
class ErrorCase:
    query: str
    error: str  # class name
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def _ids(g: EntityGraph, label: str | None = None) -> list[str]:
    return [n for n in g.node_ids() if label is None or g.label(n) == label]


def _p(g: EntityGraph, n: str, key: str) -> Any:
    return g.props(n).get(key)


def _out(g: EntityGraph, n: str, t: str) -> list[str]:
    return list(g.out_neighbours(n, t))


def _in(g: EntityGraph, n: str, t: str) -> list[str]:
    return list(g.in_neighbours(n, t))


def _reach(g: EntityGraph, start: str, t: str, lo: int, hi: int, direction: str) -> set[str]:
    found: set[str] = {start} if lo == 0 else set()
    frontier = {start}
    for hop in range(1, hi + 1):
        nxt: set[str] = set()
        for n in frontier:
            if direction in ("out", "both"):
                nxt.update(_out(g, n, t))
            if direction in ("in", "both"):
                nxt.update(_in(g, n, t))
        if hop >= lo:
            found |= nxt
        frontier = nxt
    return found


K = True
CASES: list[Case] = [
    # -- node patterns, labels, inline maps
    Case("MATCH (d:Datasource) RETURN d.id AS id", kuzu=K),
    Case("MATCH (m:Model) RETURN m.id AS id", kuzu=K, note="the hidden staging model is absent"),
    Case("MATCH (a:Aggregation) RETURN a.id AS id", kuzu=K),
    Case(
        "MATCH (c:Column {model: 'stores'}) RETURN c.id AS id",
        kuzu="MATCH (c:ModelColumn {model: 'stores'}) RETURN c.id AS id",
        note="Column is an alias of ModelColumn",
    ),
    Case("MATCH (n:Aggregation:Datasource) RETURN n.id AS id", kuzu=K, note=":A:B means A or B"),
    Case(
        "MATCH (n:Aggregation|Datasource) RETURN n.id AS id",
        kuzu="MATCH (n:Aggregation:Datasource) RETURN n.id AS id",
    ),
    Case(
        "MATCH (n:Aggregation|:Datasource) RETURN n.id AS id",
        kuzu="MATCH (n:Aggregation:Datasource) RETURN n.id AS id",
    ),
    Case("MATCH (n {name: 'order_total'}) RETURN n.id AS id", kuzu=K),
    Case("MATCH (n {name: 'status'}) RETURN n.id AS id", kuzu=K, note="a shared bare name"),
    Case("MATCH (n:ModelColumn {name: 'country', datasource: 'shop'}) RETURN n.id AS id", kuzu=K),
    Case("MATCH (n {id: 'shop.orders'}) RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n {id: 'shop.raw_events_staging'}) RETURN n.id AS id",
        kuzu=K,
        note="hidden model: invisible",
    ),
    Case(
        "MATCH (n {name: 'password_hash'}) RETURN n.id AS id",
        kuzu=K,
        note="hidden column: invisible",
    ),
    Case("MATCH (n:Measure {model: 'orders', datasource: 'shop'}) RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:ModelColumn {primary_key: true, datasource: 'finance'}) RETURN n.id AS id", kuzu=K
    ),
    Case("MATCH (n:Memory {description: 'Example query'}) RETURN n.id AS id", kuzu=K),
    Case(
        "match (N:Model) where N.name = 'orders' return N.id as id",
        kuzu="MATCH (N:Model) WHERE N.name = 'orders' RETURN N.id AS id",
        note="keywords are case-insensitive (labels are not: see the errors)",
    ),
    # -- relationships: types, directions
    Case("MATCH (d:Datasource {name: 'finance'})-[:CONTAINS]->(m:Model) RETURN m.id AS id", kuzu=K),
    Case(
        "MATCH (m:Model)<-[:CONTAINS]-(d:Datasource {name: 'marketing'}) RETURN m.id AS id", kuzu=K
    ),
    Case(
        "MATCH (m:Model)-[:CONTAINS]-(d:Datasource {name: 'marketing'}) RETURN m.id AS id",
        kuzu=K,
        note="undirected",
    ),
    Case("MATCH (m:Model {id: 'shop.orders'})-[:JOINS]->(t) RETURN t.id AS id", kuzu=K),
    Case("MATCH (m:Model {id: 'shop.customers'})<-[:JOINS]-(s) RETURN s.id AS id", kuzu=K),
    Case("MATCH (m:Model {id: 'shop.customers'})-[:JOINS]-(s) RETURN s.id AS id", kuzu=K),
    Case(
        "MATCH (a)-[:JOINS]->(b) WHERE a.datasource <> b.datasource RETURN a.id AS id",
        kuzu=K,
        note="cross-datasource joins",
    ),
    Case(
        "MATCH (me:Measure {id: 'shop.orders.net_revenue_total'})-[:REFERENCES]->(c) RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (c:ModelColumn {id: 'shop.orders.order_total'})<-[:REFERENCES]-(x) RETURN x.id AS id",
        kuzu=K,
    ),
    Case("MATCH (m:Memory)-[:MENTIONS]->(x:Datasource) RETURN m.id AS id", kuzu=K),
    Case("MATCH (m:Memory)-[:MENTIONS|REFERENCES]->(x:Model) RETURN x.id AS id", kuzu=K),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(c:ModelColumn)<-[:CONTAINS]-(t:Model) WHERE t.name = 'orders' RETURN m.id AS id",
        kuzu=K,
        note="the benchmark filter",
    ),
    Case("MATCH (m:Memory)-->(x:Aggregation) RETURN m.id AS id", kuzu=K, note="any type"),
    Case("MATCH (x:Aggregation)<--(m) RETURN m.id AS id", kuzu=K),
    Case("MATCH (x:Aggregation)--(m) RETURN m.id AS id", kuzu=K),
    Case(
        "MATCH (a:Model)-[r:JOINS]->(b:Model) WHERE r.cardinality = 'one_to_one' RETURN a.id AS id",
        kuzu=K,
    ),
    Case("MATCH (a:Model)-[r:JOINS {cardinality: 'one_to_many'}]->(b) RETURN b.id AS id", kuzu=K),
    Case(
        "MATCH (a:Model)-[r:JOINS]->(b:Model) WHERE size(r.source_columns) > 1 RETURN a.id AS id",
        kuzu=K,
        note="the composite-key join",
    ),
    Case(
        "MATCH (a:Model)-[r:JOINS]->(b:Model) WHERE 'from_currency' IN r.target_columns RETURN b.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (a:Model)-[r:JOINS]->(b:Model) WHERE r.join_type IS NOT NULL RETURN a.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (a:Model)-[r:JOINS]->(b:Model) WHERE type(r) = 'JOINS' AND startNode(r).name = 'orders' RETURN endNode(r).id AS id",
        oracle=lambda g: [
            b for a in _ids(g, "Model") if _p(g, a, "name") == "orders" for b in _out(g, a, "JOINS")
        ],
    ),
    Case(
        "MATCH (d:Datasource)-[:CONTAINS]->(m:Model)-[:CONTAINS]->(x:Aggregation) RETURN d.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (s:Model {id: 'marketing.sessions'})-[:JOINS]->(c:Model)<-[:JOINS]-(o:Model) RETURN o.id AS id",
        kuzu=K,
        note="walk semantics: sessions itself comes back",
    ),
    # -- variable length
    Case("MATCH (d:Datasource {name: 'shop'})-[:CONTAINS*2]->(x) RETURN x.id AS id", kuzu=K),
    Case(
        "MATCH (d:Datasource {name: 'marketing'})-[:CONTAINS*1..2]->(x:Measure) RETURN x.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Model {id: 'marketing.email_events'})-[:JOINS*1..3]->(x) RETURN x.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Model {id: 'finance.exchange_rates'})<-[:JOINS*1..2]-(x) RETURN x.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Model {id: 'shop.stores'})-[:JOINS*0..1]-(x) RETURN x.id AS id",
        kuzu=K,
        note="*0.. includes the start",
    ),
    Case("MATCH (m:Model {id: 'shop.refunds'})-[:JOINS*2..2]->(x) RETURN x.id AS id", kuzu=K),
    Case(
        "MATCH (m:Model {id: 'shop.refunds'})-[:JOINS*]->(x) RETURN x.id AS id",
        oracle=lambda g: sorted(_reach(g, "shop.refunds", "JOINS", 1, 6, "out")),
        note="* means 1..6 here (Kùzu: 1..30)",
    ),
    Case("MATCH (m:Model {id: 'shop.refunds'})-[:JOINS*..2]->(x) RETURN x.id AS id", kuzu=K),
    Case(
        "MATCH (mem:Memory)-[:MENTIONS]->()<-[:CONTAINS*1..2]-(d:Datasource {name: 'finance'}) RETURN mem.id AS id",
        kuzu=K,
    ),
    Case("MATCH (x:Measure)-[:REFERENCES|CONTAINS*1..2]-(y:Datasource) RETURN x.id AS id", kuzu=K),
    # -- several patterns, several MATCH, OPTIONAL MATCH
    Case("MATCH (a:Model {name: 'orders'}), (b:Model {name: 'stores'}) RETURN b.id AS id", kuzu=K),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x), (x)<-[:CONTAINS]-(t:Model {name: 'stores'}) RETURN m.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (t:Model {name: 'refunds'}) MATCH (t)-[:CONTAINS]->(c:ModelColumn) RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (t:Model {datasource: 'finance'}) OPTIONAL MATCH (t)<-[:MENTIONS]-(m:Memory) WITH t, m WHERE m IS NULL RETURN t.id AS id",
        kuzu=K,
        note="models no memory mentions",
    ),
    Case(
        "MATCH (t:Model {datasource: 'finance'}) OPTIONAL MATCH (t)<-[:MENTIONS]-(m:Memory) RETURN m.id AS id",
        kuzu=K,
        note="nulls are dropped from the id column",
    ),
    Case(
        "MATCH (a:Aggregation) OPTIONAL MATCH (a)-[:REFERENCES]->(c) RETURN coalesce(c.id, a.id) AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (t:Model {name: 'orders'}) OPTIONAL MATCH (t)-[:JOINS]->(u:Model) WHERE u.datasource = 'finance' RETURN coalesce(u.id, t.id) AS id",
        kuzu=K,
    ),
    # -- WHERE: comparisons, boolean logic
    Case(
        "MATCH (c:ModelColumn) WHERE c.data_type IN ['boolean', 'bool'] AND c.datasource = 'marketing' RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (c:ModelColumn) WHERE c.model = 'stores' AND c.data_type <> 'text' RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (c:ModelColumn) WHERE c.model = 'stores' AND NOT c.data_type = 'text' RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Model) WHERE m.name = 'orders' OR m.name = 'invoices' RETURN m.id AS id", kuzu=K
    ),
    Case(
        "MATCH (m:Model) WHERE m.datasource = 'shop' XOR m.name STARTS WITH 's' RETURN m.id AS id",
        kuzu=K,
    ),
    Case("MATCH (m:Model) WHERE m.name < 'c' RETURN m.id AS id", kuzu=K),
    Case(
        "MATCH (m:Model) WHERE m.name >= 'sessions' AND m.name <= 'stores' RETURN m.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Model) WHERE 'a' < m.name < 'c' RETURN m.id AS id",
        kuzu="MATCH (m:Model) WHERE 'a' < m.name AND m.name < 'c' RETURN m.id AS id",
        note="chained comparison",
    ),
    Case(
        "MATCH (m:Model) WHERE m.name != 'orders' AND m.datasource = 'shop' RETURN m.id AS id",
        kuzu="MATCH (m:Model) WHERE m.name <> 'orders' AND m.datasource = 'shop' RETURN m.id AS id",
    ),
    Case(
        "MATCH (c:ModelColumn) WHERE c.primary_key AND c.datasource = 'marketing' RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (c:ModelColumn {model: 'stores'}) WHERE NOT (c.primary_key OR c.data_type = 'text') RETURN c.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Model) WHERE n.name IN ['orders', 'stores', 'nope'] RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n) WHERE n.id IN ['shop.orders', 'memory:3', 'shop.raw_events_staging'] RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (n:Model) WHERE NOT n.name IN ['orders', 'stores'] AND n.datasource = 'shop' RETURN n.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Model) WHERE n.name IN [] RETURN n.id AS id", kuzu=K),
    # -- strings
    Case("MATCH (n:Measure) WHERE n.name STARTS WITH 'net_' RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:ModelColumn) WHERE n.name ENDS WITH '_amt' AND n.datasource = 'shop' RETURN n.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Memory) WHERE n.learning CONTAINS 'VAT' RETURN n.id AS id", kuzu=K),
    Case("MATCH (n:Memory) WHERE toLower(n.learning) CONTAINS 'refund' RETURN n.id AS id", kuzu=K),
    Case("MATCH (n:Model) WHERE toUpper(n.name) = 'ORDERS' RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:Measure) WHERE n.formula CONTAINS 'count' AND n.datasource = 'marketing' RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        'MATCH (n:Model) WHERE n.description CONTAINS "payment attempt" OR n.description CONTAINS "it\'s" RETURN n.id AS id',
        kuzu=K,
        note="double-quoted string",
    ),
    Case(
        "MATCH (n:Model) WHERE n.label = 'Order items' RETURN n.id AS id",
        kuzu=K,
        note="the human label property",
    ),
    Case(
        "MATCH (n:Memory) WHERE n.learning CONTAINS '\"Revenue\"' RETURN n.id AS id",
        kuzu=K,
        note="escaped quotes",
    ),
    Case(
        "MATCH (n:Memory) WHERE n.learning CONTAINS 'store\\'s' RETURN n.id AS id",
        kuzu=K,
        note="backslash escape",
    ),
    # -- regex
    Case("MATCH (n:Measure) WHERE n.name =~ '.*_rate' RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:ModelColumn) WHERE n.name =~ '(?i)IS_.*' AND n.datasource = 'shop' RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (n:Model) WHERE n.name =~ 'order' RETURN n.id AS id",
        kuzu=K,
        note="=~ matches the whole string",
    ),
    Case("MATCH (n:ModelColumn) WHERE n.name =~ '[a-z]+_(amt|qty)' RETURN n.id AS id", kuzu=K),
    # -- null logic
    Case(
        "MATCH (n:ModelColumn {model: 'stores'}) WHERE n.description IS NULL RETURN n.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Memory) WHERE n.description IS NULL RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:Memory) WHERE n.description <> 'Example query' RETURN n.id AS id",
        kuzu=K,
        note="null <> x is null: memories without a description drop out",
    ),
    Case("MATCH (n:Memory) WHERE NOT n.description = 'Example query' RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:Memory) WHERE n.description IS NULL OR n.description = 'Example query' RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (n:Model) WHERE n.label = null RETURN n.id AS id",
        kuzu=K,
        note="= null is never true",
    ),
    Case(
        "MATCH (n:Datasource) WHERE n.formula IS NULL AND n.name IN ['shop', null] RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (n:Datasource) WHERE NOT n.name IN ['shop', null] RETURN n.id AS id",
        oracle=lambda g: [],
        note="x IN [.., null] without a match is null, so NOT keeps nothing (Kùzu says false: a difference)",
    ),
    Case(
        "MATCH (n:Datasource) WHERE (n.name = 'shop') XOR (n.label = 'x') RETURN n.id AS id", kuzu=K
    ),
    Case(
        "MATCH (n:Model) WHERE n.name = 'orders' OR n.label = null RETURN n.id AS id",
        kuzu=K,
        note="true OR null is true",
    ),
    Case(
        "MATCH (n:ModelColumn {model: 'stores'}) WHERE coalesce(n.label, 'none') = 'none' RETURN n.id AS id",
        kuzu=K,
    ),
    # -- label predicates, pattern predicates, functions
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x) WHERE x:Aggregation RETURN m.id AS id",
        oracle=lambda g: [
            m
            for m in _ids(g, "Memory")
            if any(g.label(x) == "Aggregation" for x in _out(g, m, "MENTIONS"))
        ],
    ),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x) WHERE x:Datasource|Aggregation RETURN x.id AS id",
        oracle=lambda g: [
            x
            for m in _ids(g, "Memory")
            for x in _out(g, m, "MENTIONS")
            if g.label(x) in ("Datasource", "Aggregation")
        ],
    ),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x) WHERE NOT x:ModelColumn AND NOT x:Measure RETURN x.id AS id",
        oracle=lambda g: [
            x
            for m in _ids(g, "Memory")
            for x in _out(g, m, "MENTIONS")
            if g.label(x) not in ("ModelColumn", "Measure")
        ],
    ),
    Case("MATCH (m:Memory) WHERE (m)-[:MENTIONS]->(:Measure) RETURN m.id AS id", kuzu=K),
    Case("MATCH (m:Memory) WHERE NOT (m)-[:MENTIONS]->(:ModelColumn) RETURN m.id AS id", kuzu=K),
    Case(
        "MATCH (t:Model) WHERE (t)<-[:MENTIONS]-(:Memory) AND t.datasource = 'shop' RETURN t.id AS id",
        kuzu=K,
    ),
    Case("MATCH (t:Model) WHERE NOT (t)-[:JOINS]-() RETURN t.id AS id", kuzu=K),
    Case(
        "MATCH (c:ModelColumn) WHERE (c)<-[:REFERENCES]-(:Aggregation) RETURN c.id AS id",
        oracle=lambda g: [
            c
            for c in _ids(g, "ModelColumn")
            if any(g.label(x) == "Aggregation" for x in _in(g, c, "REFERENCES"))
        ],
        note="no aggregation formula names a column; Kùzu ignores the unconnectable label here (a difference)",
    ),
    Case(
        "MATCH (c:ModelColumn {model: 'orders'}) WHERE (c)<-[:MENTIONS]-() AND NOT (c)<-[:REFERENCES]-() RETURN c.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (n) WHERE 'Aggregation' IN labels(n) RETURN n.id AS id",
        oracle=lambda g: _ids(g, "Aggregation"),
    ),
    Case("MATCH (n) WHERE label(n) = 'Datasource' RETURN n.id AS id", kuzu=K),
    Case("MATCH (n:Model) WHERE size(n.name) <= 6 RETURN n.id AS id", kuzu=K),
    Case("MATCH (n:Model) WHERE size(n.name) + 1 = 7 RETURN n.id AS id", kuzu=K, note="arithmetic"),
    Case(
        "MATCH (n:Model) WHERE size(n.name) % 2 = 0 AND size(n.name) * 2 > 14 RETURN n.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Model) WHERE lower(n.label) = 'order items' RETURN n.id AS id", kuzu=K),
    # -- WITH, DISTINCT, ORDER BY, SKIP, LIMIT, UNION
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x) WITH x WHERE x.datasource = 'finance' RETURN DISTINCT x.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x:ModelColumn) WITH x.model AS model, x WHERE model = 'stores' RETURN x.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (t:Model {name: 'stores'}) WITH t MATCH (t)-[:CONTAINS]->(c) RETURN c.id AS id",
        kuzu=K,
    ),
    Case("MATCH (t:Model) WITH t.id AS id WHERE id STARTS WITH 'finance' RETURN id", kuzu=K),
    Case("MATCH (t:Model) WITH * WHERE t.datasource = 'marketing' RETURN t.id AS id", kuzu=K),
    Case(
        "MATCH (t:Model {datasource: 'marketing'}) RETURN t.id AS id ORDER BY id DESC",
        kuzu=K,
        ordered=True,
    ),
    Case(
        "MATCH (t:Model) RETURN t.id AS id ORDER BY t.name, id LIMIT 4",
        kuzu=K,
        ordered=True,
        note="ties on name broken by id",
    ),
    Case("MATCH (t:Model) RETURN DISTINCT t.id AS id ORDER BY id SKIP 15", kuzu=K, ordered=True),
    Case(
        "MATCH (t:Model) RETURN t.id AS id ORDER BY size(t.name) DESC, id LIMIT 3",
        kuzu=K,
        ordered=True,
    ),
    Case(
        "MATCH (t:Model) RETURN t.id AS id ORDER BY id LIMIT $n",
        params={"n": 2},
        kuzu=K,
        ordered=True,
    ),
    Case(
        "MATCH (t:Model) RETURN t.id AS id ORDER BY id SKIP $s LIMIT 0",
        params={"s": 1},
        kuzu=K,
        ordered=True,
    ),
    Case(
        "MATCH (m:Memory)-[:MENTIONS]->(x) RETURN DISTINCT x.id AS id ORDER BY id LIMIT 5",
        kuzu=K,
        ordered=True,
    ),
    Case(
        "MATCH (d:Datasource) RETURN d.id AS id UNION MATCH (a:Aggregation) RETURN a.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (d:Datasource) RETURN d.id AS id UNION ALL MATCH (d:Datasource {name: 'shop'}) RETURN d.id AS id",
        kuzu=K,
    ),
    Case(
        "MATCH (a:Aggregation) RETURN a.id AS id UNION MATCH (a:Aggregation)-[:REFERENCES]->(c) RETURN c.id AS id UNION MATCH (m:Memory)-[:MENTIONS]->(:Aggregation) RETURN m.id AS id",
        kuzu=K,
    ),
    # -- literals, parameters, comments
    Case(
        "MATCH (n:Model) WHERE n.name = $name RETURN n.id AS id", params={"name": "orders"}, kuzu=K
    ),
    Case(
        "MATCH (n:Model) WHERE n.name IN $names RETURN n.id AS id",
        params={"names": ["orders", "campaigns"]},
        kuzu=K,
    ),
    Case(
        "MATCH (n {id: $id})-[:CONTAINS]->(c) RETURN c.id AS id",
        params={"id": "finance.accounts"},
        kuzu=K,
    ),
    Case(
        "MATCH (n:Model {datasource: $ds}) WHERE n.name STARTS WITH $p RETURN n.id AS id",
        params={"ds": "shop", "p": "or"},
        kuzu=K,
    ),
    Case(
        "MATCH (n:Model) WHERE n.name = $missing_ok OR n.name = 'stores' RETURN n.id AS id",
        params={"missing_ok": None},
        kuzu=K,
        note="a parameter may be null",
    ),
    Case(
        "MATCH (n:Model) // models only\nWHERE n.name = 'orders' /* the shop's */ RETURN n.id AS id",
        kuzu=K,
    ),
    Case(
        "/* leading */ MATCH (n:Model)\n  WHERE n.name\n    = 'stores'\nRETURN n.id AS id;",
        kuzu="MATCH (n:Model) WHERE n.name = 'stores' RETURN n.id AS id",
    ),
    Case(
        "MATCH (n:Model) WHERE n.name = 'orders' AND 1.5 > 1 AND -2 < 0 AND true AND NOT false RETURN n.id AS id",
        kuzu=K,
    ),
    Case("MATCH (n:Model) WHERE [1, 2] = [1, 2] AND n.name = 'stores' RETURN n.id AS id", kuzu=K),
    Case(
        "MATCH (n:Model) WHERE n.description CONTAINS 'CREATE' OR n.name = 'orders' RETURN n.id AS id",
        kuzu=K,
        note="a write keyword inside a string is fine",
    ),
    Case(
        "MATCH (`n`:Model {name: 'stores'}) RETURN `n`.id AS `id`",
        kuzu=K,
        note="backtick-quoted names",
    ),
    Case(
        "MATCH (n:Memory) WHERE n.created_at STARTS WITH '2024-01-0' RETURN n.id AS id",
        oracle=lambda g: [
            m for m in _ids(g, "Memory") if str(_p(g, m, "created_at")).startswith("2024-01-0")
        ],
        note="created_at is an ISO string",
    ),
    Case(
        "MATCH (n:Memory) WHERE n.created_at > '2024-02-05' RETURN n.id AS id",
        oracle=lambda g: [
            m for m in _ids(g, "Memory") if str(_p(g, m, "created_at")) > "2024-02-05"
        ],
    ),
    Case("RETURN 'shop.orders' AS id", oracle=lambda g: ["shop.orders"], note="a literal id"),
    Case(
        "MATCH (n:Model {name: 'orders'}) RETURN n AS id",
        oracle=lambda g: [n for n in _ids(g, "Model") if _p(g, n, "name") == "orders"],
        note="a node stands for its id",
    ),
]

ERRORS: list[ErrorCase] = [
    ErrorCase("MATCH (n:Model) RETURN n.id AS id LIMIT", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model)\nWHERE n.name = 'orders\nRETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model) WHERE n.name == 'x' RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model) RETURN m.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model)-[:JOINS*1..9]->(x) RETURN x.id AS id", "CypherLimitError"),
    ErrorCase("MATCH (n:Model)-[r:JOINS*1..2]->(x) RETURN x.id AS id", "CypherSyntaxError"),
    ErrorCase(
        "MATCH (n:Model) WHERE n.name = 'a' RETURN n.id AS id UNION ALL MATCH (n:Model) RETURN n.id AS id UNION MATCH (n) RETURN n.id AS id",
        "CypherSyntaxError",
    ),
    ErrorCase("MATCH (n:Model) WHERE count(n) > 1 RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH p = (n:Model)-->() RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n) WHERE n.name = 'x\\q' RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model) RETURN n.id AS id LIMIT -1", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model) WHERE n.name =~ '([a-z' RETURN n.id AS id", "CypherSyntaxError"),
    ErrorCase("MATCH (n:Model) SET n.name = 'x' RETURN n.id AS id", "CypherReadOnlyError"),
    ErrorCase("create (n:Model {name: 'x'})", "CypherReadOnlyError"),
    ErrorCase("MATCH (n:Model) /* harmless */ DeTaCh DELETE n", "CypherReadOnlyError"),
    ErrorCase(
        "MATCH (n) // comment\nMERGE (m:Model {name: 'x'}) RETURN m.id AS id", "CypherReadOnlyError"
    ),
    ErrorCase("MATCH (n) REMOVE n.label RETURN n.id AS id", "CypherReadOnlyError"),
    ErrorCase("DROP TABLE Model", "CypherReadOnlyError"),
    ErrorCase("CALL db.labels()", "CypherReadOnlyError"),
    ErrorCase("LOAD CSV FROM 'file:///x.csv' AS row RETURN row AS id", "CypherReadOnlyError"),
    ErrorCase(
        "MATCH (n) FOREACH (x IN [1] | SET n.name = 'y') RETURN n.id AS id", "CypherReadOnlyError"
    ),
    ErrorCase("MATCH (n:Modle) RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n:model) RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n)-[:MENTION]->(x) RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n) WHERE n.nmae = 'orders' RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n {title: 'x'}) RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase(
        "MATCH (a)-[r:JOINS]->(b) WHERE r.name = 'x' RETURN a.id AS id", "CypherUnknownError"
    ),
    ErrorCase("MATCH (n) WHERE toLowr(n.name) = 'x' RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n:Model) WHERE n.name = $name RETURN n.id AS id", "CypherUnknownError"),
    ErrorCase("MATCH (n:Model) RETURN n.id", "CypherReturnError"),
    ErrorCase("MATCH (n:Model) RETURN n.id AS id, n.name AS name", "CypherReturnError"),
    ErrorCase("MATCH (n:Model) RETURN n.name AS id", "CypherReturnError"),
    ErrorCase("MATCH (n:Model) RETURN size(n.name) AS id", "CypherReturnError"),
    ErrorCase("MATCH (a:Model)-[r:JOINS]->(b) RETURN r AS id", "CypherReturnError"),
    ErrorCase("MATCH (a), (b), (c) RETURN a.id AS id", "CypherLimitError"),
    ErrorCase("MATCH (n:Model) WHERE n.name =~ '(a+)+b' RETURN n.id AS id", "CypherLimitError"),
    ErrorCase("MATCH (n:Model) WHERE n.name =~ '(a|aa)*b' RETURN n.id AS id", "CypherLimitError"),
    ErrorCase(
        "MATCH (n:Model) WHERE n.name =~ $re RETURN n.id AS id",
        "CypherLimitError",
        params={"re": "(x*)*y"},
    ),
    ErrorCase(
        "MATCH (n:Model) WHERE n.name =~ '.*a.*b.*c.*d' RETURN n.id AS id", "CypherLimitError"
    ),
    ErrorCase(
        "MATCH (n) WHERE " + "(" * 60 + "true" + ")" * 60 + " RETURN n.id AS id", "CypherLimitError"
    ),
]
