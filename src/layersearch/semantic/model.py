"""The semantic layer as plain data: datasources, models, columns, measures,
aggregations, joins, and the memories saved against them.

Importers (``semantic/importers``) produce a :class:`Catalog`; the store
persists it; :func:`Catalog.entities` flattens it into :class:`Entity` records,
which are what search, the graph and ``inspect`` work on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: entity kind → graph label
KIND_LABELS: dict[str, str] = {
    "datasource": "Datasource",
    "model": "Model",
    "column": "ModelColumn",
    "measure": "Measure",
    "aggregation": "Aggregation",
    "memory": "Memory",
}
LABEL_KINDS: dict[str, str] = {v: k for k, v in KIND_LABELS.items()}
LEAF_KINDS = ("column", "measure", "aggregation")


@dataclass(slots=True)
class Column:
    name: str
    data_type: str | None = None
    label: str | None = None
    description: str | None = None
    hidden: bool = False
    primary_key: bool = False
    #: a bounded sample of distinct values (text columns), for value matching
    values: list[str] = field(default_factory=list)
    #: the physical column or SQL expression, where the layer states one (``${TABLE}.amt``)
    sql: str | None = None


@dataclass(slots=True)
class Measure:
    name: str
    formula: str | None = None
    label: str | None = None
    description: str | None = None
    data_type: str | None = None
    hidden: bool = False


@dataclass(slots=True)
class Aggregation:
    name: str
    formula: str | None = None
    label: str | None = None
    description: str | None = None
    params: list[dict[str, Any]] = field(default_factory=list)
    hidden: bool = False


@dataclass(slots=True)
class Join:
    #: target model: its name in the same datasource, or a full ``ds.model`` id
    target: str
    #: pairs of (column in this model, column in the target model)
    on: list[tuple[str, str]] = field(default_factory=list)
    #: one_to_one | one_to_many | many_to_one | many_to_many (or None when unknown)
    cardinality: str | None = None
    join_type: str | None = None


@dataclass(slots=True)
class Model:
    name: str
    datasource: str
    label: str | None = None
    description: str | None = None
    hidden: bool = False
    sql_table: str | None = None
    columns: list[Column] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)
    aggregations: list[Aggregation] = field(default_factory=list)
    joins: list[Join] = field(default_factory=list)
    #: where it came from (file path), for error messages and reports
    source: str | None = None

    @property
    def id(self) -> str:
        return f"{self.datasource}.{self.name}"


@dataclass(slots=True)
class Datasource:
    name: str
    description: str | None = None
    label: str | None = None
    dialect: str | None = None
    source: str | None = None

    @property
    def id(self) -> str:
        return self.name


@dataclass(slots=True)
class MemorySpec:
    """A memory as written in a file, before it has a stored id."""

    learning: str
    description: str | None = None
    entities: list[str] = field(default_factory=list)
    query: dict[str, Any] | None = None
    source: str | None = None


@dataclass(slots=True)
class Entity:
    """One searchable node of the semantic layer, flattened."""

    id: str
    kind: str
    name: str
    datasource: str
    model: str | None = None
    label: str | None = None
    description: str | None = None
    data_type: str | None = None
    formula: str | None = None
    hidden: bool = False
    primary_key: bool = False
    values: tuple[str, ...] = ()
    #: the physical name: a model's table, view or relation; a column's SQL expression
    physical: str | None = None

    @property
    def graph_label(self) -> str:
        return KIND_LABELS[self.kind]

    @property
    def parent(self) -> str | None:
        if self.kind == "datasource":
            return None
        return self.id.rsplit(".", 1)[0]


@dataclass(slots=True)
class EdgeRecord:
    src: str
    dst: str
    type: str  # CONTAINS | JOINS | REFERENCES
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Catalog:
    datasources: list[Datasource] = field(default_factory=list)
    models: list[Model] = field(default_factory=list)
    memories: list[MemorySpec] = field(default_factory=list)
    #: human-readable notes on what an importer skipped and why
    skipped: list[str] = field(default_factory=list)

    def datasource_names(self) -> list[str]:
        names = {d.name for d in self.datasources} | {m.datasource for m in self.models}
        return sorted(names)

    def entities(self) -> Iterator[Entity]:
        """Every entity; hidden ones included (flagged), a hidden model hides its leaves."""
        known = {d.name: d for d in self.datasources}
        for name in self.datasource_names():
            ds = known.get(name)
            yield Entity(
                id=name,
                kind="datasource",
                name=name,
                datasource=name,
                label=ds.label if ds else None,
                description=ds.description if ds else None,
            )
        for m in self.models:
            yield Entity(
                id=m.id,
                kind="model",
                name=m.name,
                datasource=m.datasource,
                model=m.name,
                label=m.label,
                description=m.description,
                hidden=m.hidden,
                physical=m.sql_table,
            )
            for c in m.columns:
                yield Entity(
                    id=f"{m.id}.{c.name}",
                    kind="column",
                    name=c.name,
                    datasource=m.datasource,
                    model=m.name,
                    label=c.label,
                    description=c.description,
                    data_type=c.data_type,
                    hidden=m.hidden or c.hidden,
                    primary_key=c.primary_key,
                    values=tuple(c.values),
                    physical=c.sql,
                )
            for me in m.measures:
                yield Entity(
                    id=f"{m.id}.{me.name}",
                    kind="measure",
                    name=me.name,
                    datasource=m.datasource,
                    model=m.name,
                    label=me.label,
                    description=me.description,
                    data_type=me.data_type,
                    formula=me.formula,
                    hidden=m.hidden or me.hidden,
                )
            for a in m.aggregations:
                yield Entity(
                    id=f"{m.id}.{a.name}",
                    kind="aggregation",
                    name=a.name,
                    datasource=m.datasource,
                    model=m.name,
                    label=a.label,
                    description=a.description,
                    formula=a.formula,
                    hidden=m.hidden or a.hidden,
                )
