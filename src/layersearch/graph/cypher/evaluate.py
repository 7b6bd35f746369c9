"""Evaluate a parsed filter over an :class:`EntityGraph`.

Rows are dicts from variable to value. Nodes and relationships are
:class:`Node` / :class:`Rel` handles; lists are tuples. Each MATCH pattern is
expanded from its most selective node — one already bound, an ``id``/``name``
equality (inline or in WHERE), a label index — and WHERE conjuncts that
mention a single new variable are checked as soon as it is bound.

Semantics worth knowing (also in docs/cypher.md): walk semantics like Kùzu (a
relationship may be traversed more than once in a pattern); a variable-length
relationship yields each reachable end node once per start binding; null
logic is Cypher's three-valued logic; operators on mismatched types give null.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from layersearch.errors import (
    CypherLimitError,
    CypherReturnError,
    CypherSyntaxError,
    CypherUnknownError,
)
from layersearch.graph.cypher import ast
from layersearch.graph.cypher.parser import MAX_HOPS
from layersearch.graph.graph import REL_TYPES, EntityGraph

__all__ = [
    "Node",
    "Rel",
    "evaluate",
    "MAX_HOPS",
    "MAX_BINDINGS",
    "MAX_REGEX_CHARS",
    "MAX_REGEX_INPUT",
    "MAX_REGEX_REPEATS",
    "MAX_REGEX_WORK",
    "MAX_FILTER_SECONDS",
    "MAX_REGEX_MATCH_SECONDS",
    "MAX_INT_BITS",
    "MAX_STRING_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_CONCAT_TOTAL",
    "filter_seconds",
]

#: partial and complete pattern bindings one filter may produce, over all clauses
MAX_BINDINGS = 200_000
#: longest regular expression accepted by =~
MAX_REGEX_CHARS = 256
#: =~ looks at no more than this many leading characters of a value
MAX_REGEX_INPUT = 2_000
#: unbounded quantifiers (*, +, {n,}) allowed in one regular expression
MAX_REGEX_REPEATS = 3
#: product of (upper bound + 1) over a regex's quantifiers, an upper bound above
#: MAX_REGEX_INPUT counting as MAX_REGEX_INPUT: three .* are the most allowed
MAX_REGEX_WORK = (MAX_REGEX_INPUT + 1) ** MAX_REGEX_REPEATS
#: wall-clock seconds one filter evaluation may take (LAYERSEARCH_FILTER_SECONDS overrides)
MAX_FILTER_SECONDS = 10.0
#: wall-clock seconds one =~ match of one value may take: a match cannot be interrupted
#: otherwise, and a cancelled call stops at the end of the match in progress
MAX_REGEX_MATCH_SECONDS = 1.0
#: integers an expression produces must fit in a signed 64-bit integer, as in Cypher
MAX_INT_BITS = 64
#: longest string an expression may produce (``+`` concatenation)
MAX_STRING_CHARS = 100_000
#: longest list an expression may produce (``+`` concatenation)
MAX_LIST_ITEMS = 10_000
#: characters and list items ``+`` may produce over one whole evaluation
MAX_CONCAT_TOTAL = 20_000_000

_INT_MAX = 2 ** (MAX_INT_BITS - 1) - 1
_INT_MIN = -(2 ** (MAX_INT_BITS - 1))


def filter_seconds() -> float:
    """The time budget of one filter evaluation: ``LAYERSEARCH_FILTER_SECONDS`` when set
    (a number of seconds above 0), else :data:`MAX_FILTER_SECONDS`."""
    raw = os.environ.get("LAYERSEARCH_FILTER_SECONDS", "").strip()
    if not raw:
        return MAX_FILTER_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= 3600:
        from layersearch.errors import ConfigError

        raise ConfigError(
            f"LAYERSEARCH_FILTER_SECONDS={raw!r} must be a number of seconds above 0 and at "
            "most 3600"
        )
    return value


@dataclass(frozen=True, slots=True)
class Node:
    id: str


@dataclass(frozen=True, slots=True)
class Rel:
    src: str
    dst: str
    type: str


Row = dict[str, Any]


@dataclass
class _Context:
    graph: EntityGraph
    params: dict[str, Any]
    query: ast.Query
    bindings: int = 0
    #: time.monotonic() past which the evaluation is cancelled
    deadline: float = math.inf
    budget: float = MAX_FILTER_SECONDS
    ticks: int = 0
    #: characters and list items produced by ``+`` so far
    concatenated: int = 0
    #: the caller's own check (its call cancelled or past its budget: it raises), and the
    #: time.monotonic() of the caller's deadline
    stop: Callable[[], None] | None = None
    stop_at: float = math.inf

    def tick(self) -> None:
        """Cancel the evaluation once it has run past its time budget, or the caller's
        check says stop (checked every 256 steps: a step is one operator or one binding)."""
        self.ticks += 1
        if not self.ticks & 255:
            self.timed_out_unless_ok()

    def timed_out_unless_ok(self) -> None:
        if self.stop is not None:
            self.stop()
        if time.monotonic() > self.deadline:
            raise self.out_of_time()

    def out_of_time(self) -> CypherLimitError:
        return CypherLimitError(
            f"the filter ran for more than {self.budget:g} s and was cancelled (limit "
            "MAX_FILTER_SECONDS, set by LAYERSEARCH_FILTER_SECONDS). Anchor the pattern more "
            "tightly or simplify the expressions (a regular expression, string building)"
        )

    def count(self, n: int = 1) -> None:
        self.tick()
        self.bindings += n
        if self.bindings > MAX_BINDINGS:
            raise CypherLimitError(
                f"the filter produced more than {MAX_BINDINGS:,} intermediate bindings and was "
                "stopped (limit MAX_BINDINGS). Anchor the pattern more tightly: give nodes labels, "
                "an equality on id or name (e.g. (t:Model {name: 'orders'})), avoid disconnected "
                "patterns (a cartesian product), or lower variable-length upper bounds"
            )


# -- values -------------------------------------------------------------------


def _is_num(v: Any) -> bool:
    return type(v) in (int, float)


def _normalise(value: Any) -> Any:
    """Parameter and property values in the evaluator's own shapes (lists → tuples)."""
    if isinstance(value, list | tuple):
        return tuple(_normalise(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    return value


def _equals(a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    if _is_num(a) and _is_num(b):
        return a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return False
        unknown = False
        for x, y in zip(a, b, strict=True):
            eq = _equals(x, y)
            if eq is False:
                return False
            if eq is None:
                unknown = True
        return None if unknown else True
    if type(a) is not type(b):
        return False
    return bool(a == b)


def _compare(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    if op == "=":
        return _equals(a, b)
    if op == "<>":
        eq = _equals(a, b)
        return None if eq is None else not eq
    comparable = (_is_num(a) and _is_num(b)) or (type(a) is type(b) and isinstance(a, str | bool))
    if not comparable:
        return None
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _in(item: Any, items: Any) -> bool | None:
    if items is None or not isinstance(items, tuple):
        return None
    unknown = False
    for candidate in items:
        eq = _equals(item, candidate)
        if eq is True:
            return True
        if eq is None:
            unknown = True
    return None if unknown or (item is None and items) else False


def _truth(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _concat(ctx: _Context, a: str | tuple[Any, ...], b: str | tuple[Any, ...]) -> Any:
    size = len(a) + len(b)
    if isinstance(a, str):
        if size > MAX_STRING_CHARS:
            raise CypherLimitError(
                f"`+` would make a string of {size:,} characters, over the limit of "
                f"{MAX_STRING_CHARS:,} (MAX_STRING_CHARS); build shorter strings"
            )
    elif size > MAX_LIST_ITEMS:
        raise CypherLimitError(
            f"`+` would make a list of {size:,} items, over the limit of {MAX_LIST_ITEMS:,} "
            "(MAX_LIST_ITEMS); build shorter lists"
        )
    ctx.concatenated += size
    if ctx.concatenated > MAX_CONCAT_TOTAL:
        raise CypherLimitError(
            f"the filter built more than {MAX_CONCAT_TOTAL:,} characters and list items with "
            "`+` and was stopped (limit MAX_CONCAT_TOTAL); concatenate less, or over fewer rows"
        )
    return a + b  # type: ignore[operator]


def _int_result(op: str, value: Any) -> Any:
    if type(value) is int and not _INT_MIN <= value <= _INT_MAX:
        raise CypherLimitError(
            f"integer overflow: the result of `{op}` does not fit in {MAX_INT_BITS} bits "
            f"(limit MAX_INT_BITS: integers lie in {_INT_MIN:,}..{_INT_MAX:,}); use floats "
            "(e.g. 1.0 * x) for larger numbers"
        )
    return value


def _arith(ctx: _Context, op: str, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if op == "+":
        if isinstance(a, str) and isinstance(b, str):
            return _concat(ctx, a, b)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return _concat(ctx, a, b)
    if not (_is_num(a) and _is_num(b)):
        return None
    if op == "+":
        return _int_result(op, a + b)
    if op == "-":
        return _int_result(op, a - b)
    if op == "*":
        if type(a) is int and type(b) is int and a.bit_length() + b.bit_length() > 2 * MAX_INT_BITS:
            return _int_result(op, _INT_MAX + 1)  # refused without computing the product
        return _int_result(op, a * b)
    if op == "^":
        try:
            return float(a) ** float(b)
        except (OverflowError, ZeroDivisionError):
            return None
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _int_result(op, quotient) if op == "/" else a - b * quotient
    if b == 0:
        return None
    return a / b if op == "/" else math.fmod(a, b)


# -- regular expressions -------------------------------------------------------


def _regex_error(ctx: _Context, pos: ast.Pos | None, message: str, limit: bool) -> Exception:
    if limit:
        return CypherLimitError(message)
    line, column = (pos.line, pos.column) if pos else (1, 1)
    return CypherSyntaxError(message, query=ctx.query.text, line=line, column=column)


def _check_regex_tree(tree: Any, inside_repeat: bool, counts: list[int]) -> str | None:
    """Why the parsed pattern ``tree`` is refused, or None. ``counts`` accumulates
    [unbounded quantifiers, product of (bound + 1) over all quantifiers]."""
    from re import _constants as c  # type: ignore[attr-defined]

    for op, arg in tree:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = arg
            repeats = hi is c.MAXREPEAT or hi > 1
            if hi is c.MAXREPEAT:
                counts[0] += 1
            if repeats:
                bound = MAX_REGEX_INPUT if hi is c.MAXREPEAT else min(hi, MAX_REGEX_INPUT)
                counts[1] *= bound + 1
            if repeats and inside_repeat:
                return "nested quantifiers such as (a+)+"
            found = _check_regex_tree(sub, inside_repeat or repeats, counts)
            if found:
                return found
        elif op in (c.GROUPREF, c.GROUPREF_EXISTS):
            return "back-references such as \\1"
        elif op is c.BRANCH:
            if inside_repeat:
                return "alternation inside a repeated group such as (a|b)*"
            for branch in arg[1]:
                found = _check_regex_tree(branch, inside_repeat, counts)
                if found:
                    return found
        elif op is c.SUBPATTERN:
            found = _check_regex_tree(arg[-1], inside_repeat, counts)
            if found:
                return found
        elif op in (c.ASSERT, c.ASSERT_NOT):
            found = _check_regex_tree(arg[1], inside_repeat, counts)
            if found:
                return found
    return None


@lru_cache(maxsize=256)
def _compile_regex(pattern: str) -> Any:
    """The compiled pattern (the ``regex`` engine, which can release the GIL and be
    cancelled), or a message saying why it is refused."""
    if len(pattern) > MAX_REGEX_CHARS:
        return f"limit:regular expression is {len(pattern)} characters, over the limit of {MAX_REGEX_CHARS}"
    import regex

    try:
        from re import _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern)
        compiled = regex.compile(pattern)
    except (re.error, regex.error, RecursionError, OverflowError, ValueError) as exc:
        return f"syntax:invalid regular expression {pattern!r}: {exc}"
    counts = [0, 1]
    problem = _check_regex_tree(tree, False, counts)
    if problem:
        return (
            f"limit:regular expression {pattern!r} refused: {problem} can take exponential time. "
            "Simplify it (e.g. use CONTAINS, STARTS WITH, or a single .* between literals)"
        )
    if counts[0] > MAX_REGEX_REPEATS:
        return (
            f"limit:regular expression {pattern!r} has {counts[0]} unbounded quantifiers, over the "
            f"limit of {MAX_REGEX_REPEATS}; use fewer .* (or CONTAINS for substrings)"
        )
    if counts[1] > MAX_REGEX_WORK:
        return (
            f"limit:regular expression {pattern!r} refused: its quantifiers in sequence allow "
            f"{float(counts[1]):.2g} ways to split a value (the product of their upper bounds "
            f"+ 1, a bound counting as at most {MAX_REGEX_INPUT:,}), over the limit of "
            f"{float(MAX_REGEX_WORK):.2g} (MAX_REGEX_WORK, three .*); use fewer or smaller "
            "quantifiers"
        )
    return compiled


def _regex_match(ctx: _Context, pos: ast.Pos | None, value: Any, pattern: Any) -> bool | None:
    if not isinstance(value, str) or not isinstance(pattern, str):
        return None
    compiled = _compile_regex(pattern)
    if isinstance(compiled, str):
        kind, _, message = compiled.partition(":")
        raise _regex_error(ctx, pos, message, kind == "limit")
    remaining = min(ctx.deadline, ctx.stop_at) - time.monotonic()
    if remaining <= 0:
        raise _ran_out(ctx)
    try:
        # concurrent: the engine releases the GIL, so other threads (the HTTP server's
        # event loop, other requests) run while a long match is in progress.
        found = compiled.fullmatch(
            value[:MAX_REGEX_INPUT],
            concurrent=True,
            timeout=min(remaining, MAX_REGEX_MATCH_SECONDS),
        )
    except TimeoutError:
        if ctx.stop is not None:
            ctx.stop()  # a cancelled call says so, whichever bound fired
        if remaining > MAX_REGEX_MATCH_SECONDS:
            raise CypherLimitError(
                f"the regular expression {pattern!r} took more than {MAX_REGEX_MATCH_SECONDS:g} s "
                f"on one value of {min(len(value), MAX_REGEX_INPUT):,} characters and the filter "
                "was cancelled (limit MAX_REGEX_MATCH_SECONDS). Make it fail fast: anchor it, "
                "use fewer .*, or test CONTAINS / STARTS WITH first"
            ) from None
        raise _ran_out(ctx) from None
    return found is not None


def _ran_out(ctx: _Context) -> Exception:
    """The error of the deadline that ended a regular expression's time: the caller's
    (its call cancelled or past its budget) when that came first, else the filter's.
    The engine's timer may fire a hair before the caller's deadline, so the caller's
    check runs once that deadline has passed."""
    if ctx.stop is not None:
        if ctx.stop_at <= ctx.deadline:
            time.sleep(max(0.0, ctx.stop_at - time.monotonic()) + 0.001)
        ctx.stop()
    return ctx.out_of_time()


# -- expressions ----------------------------------------------------------------


def _prop(ctx: _Context, subject: Any, key: str) -> Any:
    if isinstance(subject, Node):
        props = ctx.graph.props(subject.id) if ctx.graph.has_node(subject.id) else {}
        return _normalise(props.get(key))
    if isinstance(subject, Rel):
        props = ctx.graph.edge_props(subject.src, subject.dst, subject.type) or {}
        return _normalise(props.get(key))
    if isinstance(subject, dict):
        return subject.get(key)
    return None


def _call(ctx: _Context, name: str, args: list[Any]) -> Any:
    if name == "coalesce":
        return next((a for a in args if a is not None), None)
    (value,) = args
    if value is None:
        return None
    if name in ("tolower", "lower"):
        return value.lower() if isinstance(value, str) else None
    if name in ("toupper", "upper"):
        return value.upper() if isinstance(value, str) else None
    if name == "size":
        return len(value) if isinstance(value, str | tuple) else None
    if name == "labels":
        return (ctx.graph.label(value.id),) if isinstance(value, Node) else None
    if name == "label":
        if isinstance(value, Node):
            return ctx.graph.label(value.id)
        return value.type if isinstance(value, Rel) else None
    if name == "type":
        return value.type if isinstance(value, Rel) else None
    if name == "startnode":
        return Node(value.src) if isinstance(value, Rel) else None
    if name == "endnode":
        return Node(value.dst) if isinstance(value, Rel) else None
    raise CypherUnknownError(f"unknown function {name}()")


def ev(ctx: _Context, expr: ast.Expr, row: Row) -> Any:
    """The value of ``expr`` in ``row``."""
    t = type(expr)
    if t is ast.Literal:
        return expr.value  # type: ignore[attr-defined]
    if t is ast.Prop:
        return _prop(ctx, ev(ctx, expr.subject, row), expr.key)  # type: ignore[attr-defined]
    if t is ast.Var:
        return row.get(expr.name)  # type: ignore[attr-defined]
    if t is ast.Param:
        return ctx.params[expr.name]  # type: ignore[attr-defined]
    if t is ast.Binary:
        return _binary(ctx, expr, row)  # type: ignore[arg-type]
    if t is ast.Not:
        v = _truth(ev(ctx, expr.operand, row))  # type: ignore[attr-defined]
        return None if v is None else not v
    if t is ast.IsNull:
        is_null = ev(ctx, expr.operand, row) is None  # type: ignore[attr-defined]
        return not is_null if expr.negated else is_null  # type: ignore[attr-defined]
    if t is ast.Call:
        return _call(ctx, expr.name, [ev(ctx, a, row) for a in expr.args])  # type: ignore[attr-defined]
    if t is ast.HasLabels:
        subject = ev(ctx, expr.subject, row)  # type: ignore[attr-defined]
        if subject is None:
            return None
        if not isinstance(subject, Node):
            return False
        return ctx.graph.label(subject.id) in expr.labels  # type: ignore[attr-defined]
    if t is ast.PatternPredicate:
        return _pattern_exists(ctx, expr.pattern, row)  # type: ignore[attr-defined]
    if t is ast.ListExpr:
        return tuple(ev(ctx, item, row) for item in expr.items)  # type: ignore[attr-defined]
    if t is ast.MapExpr:
        return {k: ev(ctx, v, row) for k, v in expr.items}  # type: ignore[attr-defined]
    if t is ast.Unary:
        v = ev(ctx, expr.operand, row)  # type: ignore[attr-defined]
        if not _is_num(v):
            return None
        return _int_result("-", -v) if expr.op == "-" else v  # type: ignore[attr-defined]
    if t is ast.Index:
        return _index(ev(ctx, expr.subject, row), ev(ctx, expr.index, row))  # type: ignore[attr-defined]
    raise TypeError(f"cannot evaluate {expr!r}")


def _index(subject: Any, index: Any) -> Any:
    if isinstance(subject, tuple | str) and type(index) is int:
        if -len(subject) <= index < len(subject):
            return subject[index]
        return None
    if isinstance(subject, dict) and isinstance(index, str):
        return subject.get(index)
    return None


def _binary(ctx: _Context, expr: ast.Binary, row: Row) -> Any:
    ctx.tick()
    op = expr.op
    if op in ("AND", "OR", "XOR"):
        a = _truth(ev(ctx, expr.left, row))
        if op == "AND" and a is False:
            return False
        if op == "OR" and a is True:
            return True
        b = _truth(ev(ctx, expr.right, row))
        if op == "AND":
            return False if b is False else (None if a is None or b is None else True)
        if op == "OR":
            return True if b is True else (None if a is None or b is None else False)
        return None if a is None or b is None else a != b
    left = ev(ctx, expr.left, row)
    right = ev(ctx, expr.right, row)
    if op in ("=", "<>", "<", "<=", ">", ">="):
        return _compare(op, left, right)
    if op == "IN":
        return _in(left, right)
    if op in ("STARTS", "ENDS", "CONTAINS"):
        if not isinstance(left, str) or not isinstance(right, str):
            return None
        if op == "STARTS":
            return left.startswith(right)
        if op == "ENDS":
            return left.endswith(right)
        return right in left
    if op == "=~":
        return _regex_match(ctx, expr.pos, left, right)
    return _arith(ctx, op, left, right)


# -- pattern matching -------------------------------------------------------------


def _conjuncts(expr: ast.Expr | None) -> list[ast.Expr]:
    if expr is None:
        return []
    if isinstance(expr, ast.Binary) and expr.op == "AND":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


def _free_vars(expr: Any, out: set[str]) -> set[str]:
    """Every variable name mentioned in an expression (including inside patterns)."""
    if isinstance(expr, ast.Var):
        out.add(expr.name)
    elif isinstance(expr, ast.PatternPredicate):
        for node in expr.pattern.nodes:
            if node.var:
                out.add(node.var)
            for _, value in node.props:
                _free_vars(value, out)
        for rel in expr.pattern.rels:
            if rel.var:
                out.add(rel.var)
            for _, value in rel.props:
                _free_vars(value, out)
    elif isinstance(expr, ast.Expr):
        slots: tuple[str, ...] = expr.__slots__  # type: ignore[attr-defined]
        for name in slots:
            _free_vars(getattr(expr, name), out)
    elif isinstance(expr, tuple):
        for item in expr:
            _free_vars(item, out)
    return out


@dataclass
class _Plan:
    """How one MATCH clause is checked: WHERE split by the variables it needs."""

    #: variable → conjuncts that mention only it (and earlier variables)
    node_filters: dict[str, list[ast.Expr]]
    #: variable → ('id' | 'name', is_in, expr) look-ups usable as an anchor
    anchors: dict[str, list[tuple[str, bool, ast.Expr]]]
    rest: list[ast.Expr]


def _plan(clause: ast.Match, bound: set[str]) -> _Plan:
    new_vars: set[str] = set()
    for pattern in clause.patterns:
        new_vars.update(n.var for n in pattern.nodes if n.var and n.var not in bound)
        new_vars.update(r.var for r in pattern.rels if r.var and r.var not in bound)
    plan = _Plan({}, {}, [])
    for conjunct in _conjuncts(clause.where):
        mentioned = _free_vars(conjunct, set()) & new_vars
        if len(mentioned) == 1:
            var = next(iter(mentioned))
            plan.node_filters.setdefault(var, []).append(conjunct)
            anchor = _anchor_of(conjunct, var, new_vars)
            if anchor:
                plan.anchors.setdefault(var, []).append(anchor)
        elif not mentioned:
            plan.node_filters.setdefault("", []).append(conjunct)
        else:
            plan.rest.append(conjunct)
    return plan


def _anchor_of(
    conjunct: ast.Expr, var: str, new_vars: set[str]
) -> tuple[str, bool, ast.Expr] | None:
    if not isinstance(conjunct, ast.Binary) or conjunct.op not in ("=", "IN"):
        return None
    sides = [(conjunct.left, conjunct.right)]
    if conjunct.op == "=":
        sides.append((conjunct.right, conjunct.left))
    for prop, other in sides:
        if (
            isinstance(prop, ast.Prop)
            and isinstance(prop.subject, ast.Var)
            and prop.subject.name == var
            and prop.key in ("id", "name")
            and not (_free_vars(other, set()) & new_vars)
        ):
            return prop.key, conjunct.op == "IN", other
    return None


class _Matcher:
    """Matches the patterns of one MATCH clause (or one pattern predicate)."""

    def __init__(self, ctx: _Context, plan: _Plan) -> None:
        self.ctx = ctx
        self.graph = ctx.graph
        self.plan = plan

    # candidates ---------------------------------------------------------------

    def candidates(self, node: ast.NodePattern, row: Row) -> tuple[float, Any]:
        """(estimated count, iterable of ids) for binding ``node`` first."""
        graph = self.graph
        if node.var and node.var in row:
            value = row[node.var]
            return 0, ([value.id] if isinstance(value, Node) else [])
        best: tuple[float, Any] | None = None
        lookups: list[tuple[str, bool, Any]] = []
        for key, expr in node.props:
            if key in ("id", "name"):
                lookups.append((key, False, ev(self.ctx, expr, row)))
        for key, is_in, expr in self.plan.anchors.get(node.var or "\0", []):
            lookups.append((key, is_in, ev(self.ctx, expr, row)))
        for key, is_in, value in lookups:
            values = value if is_in else (value,)
            if not isinstance(values, tuple):
                return 0, []
            ids: list[str] = []
            for v in values:
                if not isinstance(v, str):
                    continue
                if key == "id":
                    if graph.has_node(v):
                        ids.append(v)
                else:
                    ids.extend(graph.ids_with_name(v))
            ids = list(dict.fromkeys(ids))
            if best is None or len(ids) < best[0]:
                best = (len(ids), ids)
        if best is not None:
            return best
        if node.labels:
            total = sum(graph.label_count(label) for label in node.labels)
            return total, _chain_labels(graph, node.labels)
        return len(graph) + 1, graph.node_ids()

    def node_ok(self, node: ast.NodePattern, node_id: str, row: Row) -> Row | None:
        """``row`` extended with the node, or None when it does not fit the pattern."""
        graph = self.graph
        if node.labels and graph.label(node_id) not in node.labels:
            return None
        if node.var:
            bound = row.get(node.var, _MISSING)
            if bound is not _MISSING:
                return row if isinstance(bound, Node) and bound.id == node_id else None
            row = {**row, node.var: Node(node_id)}
        if node.props:
            props = graph.props(node_id)
            for key, expr in node.props:
                if _equals(_normalise(props.get(key)), ev(self.ctx, expr, row)) is not True:
                    return None
        if node.var:
            for conjunct in self.plan.node_filters.get(node.var, ()):
                if ev(self.ctx, conjunct, row) is not True:
                    return None
        self.ctx.count()
        return row

    # relationships --------------------------------------------------------------

    def steps(self, rel: ast.RelPattern, node_id: str, forward: bool) -> Iterator[tuple[str, Rel]]:
        """(neighbour, relationship) pairs one hop from ``node_id``."""
        direction = rel.direction
        if not forward and direction != "both":
            direction = "in" if direction == "out" else "out"
        graph = self.graph
        for rel_type in rel.types or REL_TYPES:
            if direction in ("out", "both"):
                for dst in graph.out_neighbours(node_id, rel_type):
                    yield dst, Rel(node_id, dst, rel_type)
            if direction in ("in", "both"):
                for src in graph.in_neighbours(node_id, rel_type):
                    if direction == "both" and src == node_id:
                        continue  # a self-loop is one relationship, already yielded
                    yield src, Rel(src, node_id, rel_type)

    def rel_ok(self, rel: ast.RelPattern, r: Rel, row: Row) -> bool:
        if not rel.props:
            return True
        props = self.graph.edge_props(r.src, r.dst, r.type) or {}
        return all(
            _equals(_normalise(props.get(k)), ev(self.ctx, e, row)) is True for k, e in rel.props
        )

    def reachable(self, rel: ast.RelPattern, start: str, forward: bool, row: Row) -> list[str]:
        """End nodes of walks of rel.min_hops..rel.max_hops hops, each once."""
        found: dict[str, None] = {start: None} if rel.min_hops == 0 else {}
        frontier = {start: None}
        for hop in range(1, rel.max_hops + 1):
            nxt: dict[str, None] = {}
            for node_id in frontier:
                for other, r in self.steps(rel, node_id, forward):
                    if other not in nxt and self.rel_ok(rel, r, row):
                        nxt[other] = None
            self.ctx.count(len(nxt))
            if hop >= rel.min_hops:
                found.update(nxt)
            if not nxt:
                break
            frontier = nxt
        return list(found)

    def extend(
        self,
        pattern: ast.PathPattern,
        order: list[tuple[int, int, bool]],
        i: int,
        row: Row,
        at: dict[int, str],
    ) -> Iterator[Row]:
        if i == len(order):
            yield row
            return
        rel_index, to_index, forward = order[i]
        rel = pattern.rels[rel_index]
        from_index = to_index - 1 if forward else to_index + 1
        source = at[from_index]
        target = pattern.nodes[to_index]
        if rel.var_length:
            for other in self.reachable(rel, source, forward, row):
                new_row = self.node_ok(target, other, row)
                if new_row is not None:
                    yield from self.extend(pattern, order, i + 1, new_row, {**at, to_index: other})
            return
        for other, r in self.steps(rel, source, forward):
            rel_row = row
            if rel.var:
                bound = row.get(rel.var, _MISSING)
                if bound is not _MISSING and bound != r:
                    continue
                rel_row = {**row, rel.var: r}
            if not self.rel_ok(rel, r, rel_row):
                continue
            new_row = self.node_ok(target, other, rel_row)
            if new_row is None:
                continue
            if rel.var:
                for conjunct in self.plan.node_filters.get(rel.var, ()):
                    if ev(self.ctx, conjunct, new_row) is not True:
                        break
                else:
                    yield from self.extend(pattern, order, i + 1, new_row, {**at, to_index: other})
                continue
            yield from self.extend(pattern, order, i + 1, new_row, {**at, to_index: other})

    def match_pattern(self, pattern: ast.PathPattern, row: Row) -> Iterator[Row]:
        estimates = [self.candidates(node, row) for node in pattern.nodes]
        anchor = min(range(len(pattern.nodes)), key=lambda k: estimates[k][0])
        n = len(pattern.nodes)
        # walk right from the anchor, then left
        order = [(k, k + 1, True) for k in range(anchor, n - 1)]
        order += [(k - 1, k - 1, False) for k in range(anchor, 0, -1)]
        anchor_node = pattern.nodes[anchor]
        for node_id in estimates[anchor][1]:
            new_row = self.node_ok(anchor_node, node_id, row)
            if new_row is not None:
                yield from self.extend(pattern, order, 0, new_row, {anchor: node_id})

    def match_all(self, patterns: tuple[ast.PathPattern, ...], row: Row) -> Iterator[Row]:
        for conjunct in self.plan.node_filters.get("", ()):
            if ev(self.ctx, conjunct, row) is not True:
                return
        yield from self._match_from(patterns, 0, row)

    def _match_from(self, patterns: tuple[ast.PathPattern, ...], i: int, row: Row) -> Iterator[Row]:
        if i == len(patterns):
            for conjunct in self.plan.rest:
                if ev(self.ctx, conjunct, row) is not True:
                    return
            yield row
            return
        for new_row in self.match_pattern(patterns[i], row):
            yield from self._match_from(patterns, i + 1, new_row)


_MISSING = object()


def _chain_labels(graph: EntityGraph, labels: tuple[str, ...]) -> Iterator[str]:
    for label in labels:
        yield from graph.ids_with_label(label)


def _pattern_exists(ctx: _Context, pattern: ast.PathPattern, row: Row) -> bool:
    matcher = _Matcher(ctx, _Plan({}, {}, []))
    for _ in matcher.match_pattern(pattern, row):
        return True
    return False


# -- clauses ------------------------------------------------------------------------


def _match(ctx: _Context, clause: ast.Match, rows: list[Row]) -> list[Row]:
    if not rows:
        return []
    bound = set(rows[0])
    matcher = _Matcher(ctx, _plan(clause, bound))
    new_vars = [
        v
        for pattern in clause.patterns
        for v in [*(n.var for n in pattern.nodes), *(r.var for r in pattern.rels)]
        if v and v not in bound
    ]
    out: list[Row] = []
    for row in rows:
        before = len(out)
        out.extend(matcher.match_all(clause.patterns, row))
        if clause.optional and len(out) == before:
            out.append({**row, **dict.fromkeys(new_vars)})
    return out


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 1 and 1.0 are equal, so DISTINCT keeps one
    return value


_TYPE_RANK: dict[type, int] = {
    dict: 0,
    Node: 1,
    Rel: 2,
    tuple: 3,
    str: 4,
    bool: 5,
    int: 6,
    float: 6,
}


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (9, 0)
    rank = _TYPE_RANK.get(type(value), 8)
    if rank in (0, 1, 2, 3):
        return (rank, repr(value))
    if isinstance(value, float) and math.isnan(value):
        return (7, 0)
    return (rank, value)


def _count_arg(ctx: _Context, expr: ast.Expr | None, pos: ast.Pos | None, what: str) -> int | None:
    if expr is None:
        return None
    value = ev(ctx, expr, {})
    if type(value) is not int or value < 0:
        line, column = (pos.line, pos.column) if pos else (1, 1)
        raise CypherSyntaxError(
            f"{what} needs a non-negative integer, got {value!r}",
            query=ctx.query.text,
            line=line,
            column=column,
            expected="an integer literal or $parameter >= 0",
        )
    return value


def _project(ctx: _Context, projection: ast.Projection, rows: list[Row]) -> list[Row]:
    pairs = []
    for row in rows:
        ctx.tick()
        pairs.append(({item.alias: ev(ctx, item.expr, row) for item in projection.items}, row))
    if projection.distinct:
        seen: set[Any] = set()
        unique = []
        for projected, row in pairs:
            key = tuple(_hashable(v) for v in projected.values())
            if key not in seen:
                seen.add(key)
                unique.append((projected, row))
        pairs = unique
    if projection.order:
        envs = [({**row, **projected}, projected) for projected, row in pairs]
        for item in reversed(projection.order):
            keys = [_sort_key(ev(ctx, item.expr, env)) for env, _ in envs]
            positions = sorted(range(len(envs)), key=keys.__getitem__, reverse=item.descending)
            envs = [envs[p] for p in positions]
        result = [projected for _, projected in envs]
    else:
        result = [projected for projected, _ in pairs]
    skip = _count_arg(ctx, projection.skip, projection.skip_pos, "SKIP")
    limit = _count_arg(ctx, projection.limit, projection.limit_pos, "LIMIT")
    start = skip or 0
    return result[start : None if limit is None else start + limit]


def _single(ctx: _Context, query: ast.SingleQuery) -> list[Any]:
    rows: list[Row] = [{}]
    for clause in query.clauses:
        if isinstance(clause, ast.Match):
            rows = _match(ctx, clause, rows)
        else:
            rows = _project(ctx, clause.projection, rows)
            if clause.where is not None:
                kept = []
                for row in rows:
                    ctx.tick()
                    if ev(ctx, clause.where, row) is True:
                        kept.append(row)
                rows = kept
        ctx.count(len(rows))
    return [row["id"] for row in _project(ctx, query.ret.projection, rows)]


def _as_id(graph: EntityGraph, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Node):
        return value.id
    if isinstance(value, str) and graph.has_node(value):
        return value
    shown = f"{value!r}" if not isinstance(value, Rel) else f"a {value.type} relationship"
    hint = (
        " (a name or label is not an id: ids look like 'shop', 'shop.orders', "
        "'shop.orders.total', 'memory:3')"
        if isinstance(value, str)
        else ""
    )
    raise CypherReturnError(
        f"the `id` column must hold entity ids; the filter returned {shown}{hint}. "
        "Return the node's id: `RETURN n.id AS id`"
    )


def evaluate(
    graph: EntityGraph,
    query: ast.Query,
    params: dict[str, Any] | None = None,
    *,
    stop: Callable[[], None] | None = None,
    stop_at: float = math.inf,
) -> list[str]:
    """Ids the query returns, in order, each once (ORDER BY order when given, else sorted).
    ``stop``, called every 256 steps and when a regular expression times out, ends the
    evaluation by raising (the caller's call cancelled or past its budget); ``stop_at`` is
    the time.monotonic() of the caller's deadline, which no regular expression outlives."""
    supplied = params or {}
    if not isinstance(supplied, dict):
        raise CypherUnknownError(
            f"params must be a mapping of name to value, not {type(supplied).__name__}"
        )
    missing = [name for name in query.params if name not in supplied]
    if missing:
        name = missing[0]
        raise CypherUnknownError(
            f"parameter ${name} has no value; supply it (Python: params={{'{name}': ...}}, "
            f'CLI: --param {name}=VALUE, MCP: "params": {{"{name}": ...}})'
        )
    from layersearch.jsonlimits import check_value

    for name, value in supplied.items():
        check_value(value, f"parameter ${name}", error=CypherLimitError, int_bits=MAX_INT_BITS)
    budget = filter_seconds()
    ctx = _Context(
        graph,
        {k: _normalise(v) for k, v in supplied.items()},
        query,
        deadline=time.monotonic() + budget,
        budget=budget,
        stop=stop,
        stop_at=stop_at,
    )
    values: list[Any] = []
    for part in query.parts:
        values.extend(_single(ctx, part))
    ids = [i for i in (_as_id(graph, v) for v in values) if i is not None]
    ordered = len(query.parts) == 1 and bool(query.parts[0].ret.projection.order)
    unique = list(dict.fromkeys(ids))
    return unique if ordered else sorted(unique)
