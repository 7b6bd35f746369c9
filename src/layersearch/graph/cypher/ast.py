"""The parsed form of a filter: immutable dataclasses, safe to cache and share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Expr",
    "Literal",
    "Param",
    "Var",
    "Prop",
    "ListExpr",
    "MapExpr",
    "Index",
    "Call",
    "Unary",
    "Binary",
    "Not",
    "IsNull",
    "HasLabels",
    "PatternPredicate",
    "NodePattern",
    "RelPattern",
    "PathPattern",
    "Match",
    "ProjectionItem",
    "SortItem",
    "Projection",
    "With",
    "Return",
    "SingleQuery",
    "Query",
]


@dataclass(frozen=True, slots=True)
class Pos:
    line: int
    column: int


class Expr:
    """Base of every expression node."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    value: Any


@dataclass(frozen=True, slots=True)
class Param(Expr):
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Var(Expr):
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Prop(Expr):
    subject: Expr
    key: str


@dataclass(frozen=True, slots=True)
class ListExpr(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class MapExpr(Expr):
    items: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class Index(Expr):
    subject: Expr
    index: Expr


@dataclass(frozen=True, slots=True)
class Call(Expr):
    name: str  # lower-cased
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str  # '-' | '+'
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    #: AND OR XOR = <> < <= > >= + - * / % ^ IN STARTS ENDS CONTAINS =~
    op: str
    left: Expr
    right: Expr
    pos: Pos | None = None  # of the operator, for run-time errors (=~)


@dataclass(frozen=True, slots=True)
class Not(Expr):
    operand: Expr


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    operand: Expr
    negated: bool  # IS NOT NULL


@dataclass(frozen=True, slots=True)
class HasLabels(Expr):
    """``n:A:B`` / ``n:A|B`` in an expression: true when n has any of the labels."""

    subject: Expr
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodePattern:
    var: str | None
    labels: tuple[str, ...]  # canonical labels; empty means any
    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class RelPattern:
    var: str | None
    types: tuple[str, ...]  # empty means any
    direction: str  # 'out' (-[]->), 'in' (<-[]-), 'both' (-[]-)
    min_hops: int
    max_hops: int
    var_length: bool
    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class PathPattern:
    nodes: tuple[NodePattern, ...]
    rels: tuple[RelPattern, ...]  # len(rels) == len(nodes) - 1


@dataclass(frozen=True, slots=True)
class PatternPredicate(Expr):
    """A pattern used as a boolean in WHERE: true when it matches at least once."""

    pattern: PathPattern


@dataclass(frozen=True, slots=True)
class Match:
    patterns: tuple[PathPattern, ...]
    where: Expr | None
    optional: bool


@dataclass(frozen=True, slots=True)
class ProjectionItem:
    expr: Expr
    alias: str


@dataclass(frozen=True, slots=True)
class SortItem:
    expr: Expr
    descending: bool


@dataclass(frozen=True, slots=True)
class Projection:
    items: tuple[ProjectionItem, ...]
    star: bool  # WITH * / RETURN * (items then holds the variables in scope)
    distinct: bool
    order: tuple[SortItem, ...]
    skip: Expr | None
    limit: Expr | None
    skip_pos: Pos | None = None
    limit_pos: Pos | None = None


@dataclass(frozen=True, slots=True)
class With:
    projection: Projection
    where: Expr | None


@dataclass(frozen=True, slots=True)
class Return:
    projection: Projection


Clause = Match | With


@dataclass(frozen=True, slots=True)
class SingleQuery:
    clauses: tuple[Clause, ...]
    ret: Return


@dataclass(frozen=True, slots=True)
class Query:
    parts: tuple[SingleQuery, ...]
    union_all: bool
    params: tuple[str, ...]  # every $name used, in order of first use
    text: str = ""
