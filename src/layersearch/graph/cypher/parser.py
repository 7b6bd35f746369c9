"""Recursive-descent parser: tokens → :mod:`ast`, with one small method per
precedence level, plus the checks that need no graph: labels, relationship
types, property names, functions, variable scope, hop bounds and the shape of
RETURN (a single ``id`` column)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import NoReturn

from layersearch.errors import (
    CypherLimitError,
    CypherReturnError,
    CypherSyntaxError,
    CypherUnknownError,
)
from layersearch.graph.cypher import ast
from layersearch.graph.cypher.tokens import Kind, Token, tokenize
from layersearch.graph.graph import (
    LABEL_ALIASES,
    LABELS,
    NODE_PROPERTIES,
    REL_PROPERTIES,
    REL_TYPES,
    canonical_label,
)

__all__ = [
    "parse_query",
    "FUNCTIONS",
    "MAX_HOPS",
    "MAX_NESTING",
    "MAX_EXPRESSION_DEPTH",
    "MAX_PATTERN_LENGTH",
    "MAX_PATTERNS",
    "did_you_mean",
]

#: the longest variable-length relationship; `*` alone means 1..MAX_HOPS
MAX_HOPS = 6
#: deepest nesting of parentheses / lists / NOT chains in one expression
MAX_NESTING = 48
#: deepest expression tree: operator chains (a OR b OR …, 1 + 1 + …, a < b < …,
#: x[0][0]…) count one level per operator
MAX_EXPRESSION_DEPTH = 100
#: relationships in one path pattern, (a)-->(b)-->… (pattern predicates included)
MAX_PATTERN_LENGTH = 32
#: comma-separated patterns in one MATCH
MAX_PATTERNS = 32

#: function name (lower case) → (min args, max args or None for any)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "tolower": (1, 1),
    "lower": (1, 1),
    "toupper": (1, 1),
    "upper": (1, 1),
    "size": (1, 1),
    "coalesce": (1, None),
    "labels": (1, 1),
    "label": (1, 1),
    "type": (1, 1),
    "startnode": (1, 1),
    "endnode": (1, 1),
}
_FUNCTION_NAMES: tuple[str, ...] = (
    "toLower",
    "toUpper",
    "lower",
    "upper",
    "size",
    "coalesce",
    "labels",
)
_FUNCTION_NAMES += ("label", "type", "startNode", "endNode")

_RESERVED = frozenset(
    [
        "MATCH",
        "OPTIONAL",
        "WHERE",
        "WITH",
        "RETURN",
        "UNION",
        "ALL",
        "ORDER",
        "BY",
        "SKIP",
        "LIMIT",
        "AS",
        "DISTINCT",
        "AND",
        "OR",
        "XOR",
        "NOT",
        "IN",
        "STARTS",
        "ENDS",
        "CONTAINS",
        "IS",
        "NULL",
        "TRUE",
        "FALSE",
        "ASC",
        "DESC",
        "ASCENDING",
        "DESCENDING",
    ]
)
_COMPARISONS = ("=", "<>", "!=", "<", "<=", ">", ">=", "=~")


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """' Did you mean X?' for the closest valid name, or ''."""
    options = list(valid)
    for option in options:
        if option.lower() == name.lower():
            return f" Did you mean {option}?"
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.5)
    return f" Did you mean {close[0]}?" if close else ""


def _unknown(what: str, name: str, valid: Iterable[str]) -> NoReturn:
    options = list(valid)
    plural = what[:-1] + "ies" if what.endswith("y") else what + "s"
    raise CypherUnknownError(
        f"unknown {what} {name!r}. Valid {plural}: {', '.join(options)}.{did_you_mean(name, options)}"
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks: list[Token] = tokenize(text)
        self.i = 0
        self.depth = 0
        self.params: list[str] = []
        # variable → 'node' | 'rel' | 'value'
        self.scope: dict[str, str] = {}

    # -- token helpers -----------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, n: int = 1) -> Token:
        return self.toks[min(self.i + n, len(self.toks) - 1)]

    def advance(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind is not Kind.EOF:
            self.i += 1
        return tok

    def at_symbol(self, *symbols: str) -> bool:
        return self.tok.kind is Kind.SYMBOL and self.tok.text in symbols

    def at_keyword(self, *words: str) -> bool:
        return self.tok.is_keyword(*words)

    def accept_symbol(self, symbol: str) -> bool:
        if self.at_symbol(symbol):
            self.i += 1
            return True
        return False

    def accept_keyword(self, word: str) -> bool:
        if self.at_keyword(word):
            self.i += 1
            return True
        return False

    def fail(self, message: str, expected: str | None = None, tok: Token | None = None) -> NoReturn:
        tok = tok or self.tok
        raise CypherSyntaxError(
            message, query=self.text, line=tok.line, column=tok.column, expected=expected
        )

    def unexpected(self, expected: str) -> NoReturn:
        self.fail(f"unexpected {self.tok.describe()}", expected)

    def expect_symbol(self, symbol: str) -> Token:
        if not self.at_symbol(symbol):
            self.unexpected(f"'{symbol}'")
        return self.advance()

    def expect_keyword(self, word: str) -> Token:
        if not self.at_keyword(word):
            self.unexpected(word)
        return self.advance()

    def name(self, what: str) -> Token:
        """An identifier (plain or `quoted`) that is not a reserved word."""
        tok = self.tok
        if tok.kind is Kind.QUOTED or (
            tok.kind is Kind.IDENT and tok.text.upper() not in _RESERVED
        ):
            return self.advance()
        self.unexpected(what)

    def symbolic_name(self, what: str) -> Token:
        """A label, type, property or function name: reserved words allowed."""
        if self.tok.kind in (Kind.IDENT, Kind.QUOTED):
            return self.advance()
        self.unexpected(what)

    def pos(self, tok: Token | None = None) -> ast.Pos:
        tok = tok or self.tok
        return ast.Pos(tok.line, tok.column)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CypherLimitError(
                f"expression nested more than {MAX_NESTING} levels deep (line {self.tok.line}, "
                f"column {self.tok.column}); flatten it"
            )

    # -- query structure ---------------------------------------------------------

    def query(self) -> ast.Query:
        parts = [self.single_query()]
        union_all: bool | None = None
        while self.at_keyword("UNION"):
            union_tok = self.advance()
            is_all = self.accept_keyword("ALL")
            if union_all is not None and union_all != is_all:
                self.fail("cannot mix UNION and UNION ALL in one query", tok=union_tok)
            union_all = is_all
            self.scope = {}
            parts.append(self.single_query())
        self.accept_symbol(";")
        if self.tok.kind is not Kind.EOF:
            self.unexpected("UNION, ORDER BY, SKIP, LIMIT or end of input")
        return ast.Query(
            tuple(parts), bool(union_all), tuple(dict.fromkeys(self.params)), self.text
        )

    def single_query(self) -> ast.SingleQuery:
        clauses: list[ast.Clause] = []
        while True:
            if self.at_keyword("MATCH", "OPTIONAL"):
                clauses.append(self.match())
            elif self.at_keyword("WITH"):
                clauses.append(self.with_clause())
            elif self.at_keyword("RETURN"):
                ret = self.return_clause()
                return ast.SingleQuery(tuple(clauses), ret)
            elif self.tok.kind is Kind.EOF and clauses:
                self.fail("the query has no RETURN", "RETURN <var>.id AS id")
            elif clauses:
                self.unexpected("MATCH, OPTIONAL MATCH, WHERE, WITH or RETURN")
            else:
                self.unexpected("MATCH, OPTIONAL MATCH, WITH or RETURN")

    def match(self) -> ast.Match:
        optional = self.accept_keyword("OPTIONAL")
        self.expect_keyword("MATCH")
        patterns = [self.path_pattern(binding=True)]
        while self.accept_symbol(","):
            if len(patterns) == MAX_PATTERNS:
                raise CypherLimitError(
                    f"a MATCH at line {self.tok.line} has more than {MAX_PATTERNS} "
                    f"comma-separated patterns (limit MAX_PATTERNS); split the filter"
                )
            patterns.append(self.path_pattern(binding=True))
        where = self.expression() if self.accept_keyword("WHERE") else None
        return ast.Match(tuple(patterns), where, optional)

    def with_clause(self) -> ast.With:
        self.expect_keyword("WITH")
        projection = self.projection(is_return=False)
        where = self.expression() if self.accept_keyword("WHERE") else None
        return ast.With(projection, where)

    def return_clause(self) -> ast.Return:
        start = self.expect_keyword("RETURN")
        projection = self.projection(is_return=True)
        names = [item.alias for item in projection.items]
        if names != ["id"]:
            shown = ", ".join(names) if names else "nothing"
            raise CypherReturnError(
                f"a filter must return exactly one column named `id` holding entity ids, "
                f"e.g. `RETURN n.id AS id` (or `RETURN DISTINCT n.id AS id`); the RETURN at "
                f"line {start.line}, column {start.column} returns: {shown}"
            )
        return ast.Return(projection)

    def projection(self, *, is_return: bool) -> ast.Projection:
        distinct = self.accept_keyword("DISTINCT")
        items: list[ast.ProjectionItem] = []
        star = False
        if self.accept_symbol("*"):
            star = True
            items = [ast.ProjectionItem(ast.Var(v, self.pos()), v) for v in self.scope]
            if not items and not is_return:
                self.fail("WITH * with no variables in scope", "a MATCH before it")
            if self.accept_symbol(","):
                items.extend(self.projection_items(is_return))
        else:
            items = self.projection_items(is_return)
        aliases = [item.alias for item in items]
        dupes = sorted({a for a in aliases if aliases.count(a) > 1})
        if dupes:
            self.fail(f"column name {dupes[0]!r} used twice in one projection", "distinct names")
        previous = self.scope
        projected = {item.alias: self.kind_of(item.expr) for item in items}
        # ORDER BY sees the projected names, and (without DISTINCT) the names before them
        self.scope = projected if distinct else {**previous, **projected}
        order: list[ast.SortItem] = []
        if self.accept_keyword("ORDER"):
            self.expect_keyword("BY")
            while True:
                expr = self.expression()
                desc = False
                if self.at_keyword("DESC", "DESCENDING"):
                    self.advance()
                    desc = True
                elif self.at_keyword("ASC", "ASCENDING"):
                    self.advance()
                if expr is not None:
                    order.append(ast.SortItem(expr, desc))
                if not self.accept_symbol(","):
                    break
        skip = limit = None
        skip_pos = limit_pos = None
        if self.at_keyword("SKIP"):
            self.advance()
            skip_pos = self.pos()
            skip = self.expression()
        if self.at_keyword("LIMIT"):
            self.advance()
            limit_pos = self.pos()
            limit = self.expression()
        self.scope = projected
        return ast.Projection(
            tuple(items), star, distinct, tuple(order), skip, limit, skip_pos, limit_pos
        )

    def projection_items(self, is_return: bool) -> list[ast.ProjectionItem]:
        items = []
        while True:
            start = self.tok
            start_index = self.i
            expr = self.expression()
            if self.accept_keyword("AS"):
                alias = self.name("a column name after AS").text
            elif isinstance(expr, ast.Var):
                alias = expr.name
            elif is_return:
                end = self.toks[self.i - 1]
                alias = self.source_between(self.toks[start_index], end)
            else:
                self.fail("WITH needs an alias for an expression", "AS <name>", tok=start)
            items.append(ast.ProjectionItem(expr, alias))
            if not self.accept_symbol(","):
                return items

    def source_between(self, first: Token, last: Token) -> str:
        lines = self.text.splitlines()
        if first.line == last.line and first.line <= len(lines):
            src = lines[first.line - 1]
            return src[first.column - 1 : last.column - 1 + len(last.raw or last.text)]
        return (first.raw or first.text) + " …"

    def kind_of(self, expr: ast.Expr) -> str:
        if isinstance(expr, ast.Var):
            return self.scope.get(expr.name, "value")
        if isinstance(expr, ast.Call) and expr.name in ("startnode", "endnode"):
            return "node"
        return "value"

    # -- patterns ----------------------------------------------------------------

    def path_pattern(self, *, binding: bool) -> ast.PathPattern:
        nxt = self.peek()
        if (
            self.tok.kind in (Kind.IDENT, Kind.QUOTED)
            and nxt.kind is Kind.SYMBOL
            and nxt.text == "="
        ):
            self.fail("named paths (p = …) are not supported", "a node pattern '('")
        nodes = [self.node_pattern(binding)]
        rels: list[ast.RelPattern] = []
        while self.at_rel_start():
            if len(rels) == MAX_PATTERN_LENGTH:
                raise CypherLimitError(
                    f"a pattern at line {self.tok.line}, column {self.tok.column} has more than "
                    f"{MAX_PATTERN_LENGTH} relationships (limit MAX_PATTERN_LENGTH); use a "
                    f"variable-length relationship such as -[*1..{MAX_HOPS}]-> or split it"
                )
            rels.append(self.rel_pattern(binding))
            nodes.append(self.node_pattern(binding))
        return ast.PathPattern(tuple(nodes), tuple(rels))

    def bind(self, var: Token, kind: str, binding: bool) -> None:
        existing = self.scope.get(var.text)
        if existing is not None and existing != kind:
            if existing == "value":
                return  # a WITH-projected value used as a node: checked at run time
            self.fail(f"variable `{var.text}` is already a {existing}, not a {kind}", tok=var)
        if existing is None:
            self.scope[var.text] = kind

    def node_pattern(self, binding: bool) -> ast.NodePattern:
        self.expect_symbol("(")
        var = None
        if self.tok.kind in (Kind.IDENT, Kind.QUOTED) and not self.at_symbol(":"):
            var_tok = self.name("a variable, ':' label or ')'")
            var = var_tok.text
            self.bind(var_tok, "node", binding)
        labels = self.labels() if self.at_symbol(":") else ()
        props = self.prop_map(NODE_PROPERTIES, "node property") if self.at_symbol("{") else ()
        if not self.at_symbol(")"):
            self.unexpected("')'" if labels or props or var else "a variable, ':' label or ')'")
        self.advance()
        return ast.NodePattern(var, labels, props)

    def labels(self) -> tuple[str, ...]:
        """`:A:B`, `:A|B` and `:A|:B` all mean A or B (a node has exactly one label)."""
        self.expect_symbol(":")
        found = [self.label_name()]
        while self.at_symbol(":", "|"):
            sep = self.advance().text
            if sep == "|":
                self.accept_symbol(":")
            found.append(self.label_name())
        return tuple(dict.fromkeys(found))

    def label_name(self) -> str:
        tok = self.symbolic_name("a label")
        canon = canonical_label(tok.text)
        if canon is None:
            _unknown("label", tok.text, [*LABELS, *LABEL_ALIASES])
        return canon

    def rel_types(self) -> tuple[str, ...]:
        self.expect_symbol(":")
        found = [self.rel_type_name()]
        while self.accept_symbol("|"):
            self.accept_symbol(":")
            found.append(self.rel_type_name())
        return tuple(dict.fromkeys(found))

    def rel_type_name(self) -> str:
        tok = self.symbolic_name("a relationship type")
        if tok.text not in REL_TYPES:
            _unknown("relationship type", tok.text, REL_TYPES)
        return tok.text

    def prop_map(self, valid: tuple[str, ...], what: str) -> tuple[tuple[str, ast.Expr], ...]:
        self.expect_symbol("{")
        items: list[tuple[str, ast.Expr]] = []
        if not self.at_symbol("}"):
            while True:
                key = self.symbolic_name(f"a {what} name").text
                if key not in valid:
                    _unknown(what, key, valid)
                self.expect_symbol(":")
                items.append((key, self.expression()))
                if not self.accept_symbol(","):
                    break
        self.expect_symbol("}")
        return tuple(items)

    def rel_pattern(self, binding: bool) -> ast.RelPattern:
        left_arrow = self.accept_symbol("<")
        self.expect_symbol("-")
        var = None
        types: tuple[str, ...] = ()
        props: tuple[tuple[str, ast.Expr], ...] = ()
        lo, hi, var_length = 1, 1, False
        if self.accept_symbol("["):
            if self.tok.kind in (Kind.IDENT, Kind.QUOTED):
                var_tok = self.name("a variable, ':' type or ']'")
                var = var_tok.text
                self.bind(var_tok, "rel", binding)
            if self.at_symbol(":"):
                types = self.rel_types()
            if self.at_symbol("*"):
                star = self.tok
                lo, hi = self.hops()
                var_length = True
                if var is not None:
                    self.fail(
                        f"a variable-length relationship cannot be bound to a variable (`{var}`)",
                        f"-[:TYPE*{lo}..{hi}]- without a variable",
                        star,
                    )
            if self.at_symbol("{"):
                props = self.prop_map(REL_PROPERTIES, "relationship property")
            if not self.at_symbol("]"):
                self.unexpected("']'")
            self.advance()
        self.expect_symbol("-")
        right_arrow = self.accept_symbol(">")
        if left_arrow and right_arrow:
            self.fail("a relationship cannot point both ways", "'-' instead of '->'")
        direction = "in" if left_arrow else "out" if right_arrow else "both"
        return ast.RelPattern(var, types, direction, lo, hi, var_length, props)

    def hops(self) -> tuple[int, int]:
        star = self.expect_symbol("*")
        lo: int | None = None
        hi: int | None = None
        if self.tok.kind is Kind.INTEGER:
            lo = int(self.advance().text)
        if self.accept_symbol(".."):
            hi = int(self.advance().text) if self.tok.kind is Kind.INTEGER else MAX_HOPS
            lo = 1 if lo is None else lo
        elif lo is None:
            lo, hi = 1, MAX_HOPS
        else:
            hi = lo  # *2 means exactly two hops
        if hi > MAX_HOPS:
            raise CypherLimitError(
                f"variable-length relationship *{lo}..{hi} at line {star.line}, column "
                f"{star.column} exceeds the maximum of {MAX_HOPS} hops; use an upper bound of at "
                f"most {MAX_HOPS} (e.g. *1..{MAX_HOPS})"
            )
        if lo > hi:
            self.fail(f"empty hop range *{lo}..{hi}", "a lower bound not above the upper", star)
        return lo, hi

    # -- expressions, lowest precedence first -------------------------------------

    def expression(self) -> ast.Expr:
        self.enter()
        try:
            return self.or_expr()
        finally:
            self.depth -= 1

    def or_expr(self) -> ast.Expr:
        left = self.xor_expr()
        while self.accept_keyword("OR"):
            left = ast.Binary("OR", left, self.xor_expr())
        return left

    def xor_expr(self) -> ast.Expr:
        left = self.and_expr()
        while self.accept_keyword("XOR"):
            left = ast.Binary("XOR", left, self.and_expr())
        return left

    def and_expr(self) -> ast.Expr:
        left = self.not_expr()
        while self.accept_keyword("AND"):
            left = ast.Binary("AND", left, self.not_expr())
        return left

    def not_expr(self) -> ast.Expr:
        if self.accept_keyword("NOT"):
            self.enter()
            try:
                return ast.Not(self.not_expr())
            finally:
                self.depth -= 1
        return self.comparison()

    def comparison(self) -> ast.Expr:
        left = self.predicate()
        parts: list[ast.Expr] = []
        while self.tok.kind is Kind.SYMBOL and self.tok.text in _COMPARISONS:
            op_tok = self.advance()
            op = "<>" if op_tok.text == "!=" else op_tok.text
            right = self.predicate()
            parts.append(ast.Binary(op, left, right, self.pos(op_tok)))
            left = right
        if not parts:
            return left
        # a < b < c means a < b AND b < c
        out = parts[0]
        for part in parts[1:]:
            out = ast.Binary("AND", out, part)
        return out

    def predicate(self) -> ast.Expr:
        left = self.additive()
        while True:
            if self.at_keyword("IS"):
                self.advance()
                negated = self.accept_keyword("NOT")
                self.expect_keyword("NULL")
                left = ast.IsNull(left, negated)
            elif self.at_keyword("IN"):
                self.advance()
                left = ast.Binary("IN", left, self.additive())
            elif self.at_keyword("STARTS", "ENDS"):
                op = self.advance().text.upper()
                self.expect_keyword("WITH")
                left = ast.Binary(op, left, self.additive())
            elif self.at_keyword("CONTAINS"):
                self.advance()
                left = ast.Binary("CONTAINS", left, self.additive())
            else:
                return left

    def additive(self) -> ast.Expr:
        left = self.multiplicative()
        while self.at_symbol("+", "-"):
            op = self.advance().text
            left = ast.Binary(op, left, self.multiplicative())
        return left

    def multiplicative(self) -> ast.Expr:
        left = self.power()
        while self.at_symbol("*", "/", "%"):
            op = self.advance().text
            left = ast.Binary(op, left, self.power())
        return left

    def power(self) -> ast.Expr:
        left = self.unary()
        while self.accept_symbol("^"):
            left = ast.Binary("^", left, self.unary())
        return left

    def unary(self) -> ast.Expr:
        if self.at_symbol("-", "+"):
            op = self.advance().text
            self.enter()
            try:
                operand = self.unary()
            finally:
                self.depth -= 1
            if (
                op == "-"
                and isinstance(operand, ast.Literal)
                and type(operand.value) in (int, float)
            ):
                return ast.Literal(-operand.value)
            return ast.Unary(op, operand)
        return self.postfix()

    def postfix(self) -> ast.Expr:
        expr = self.atom()
        while True:
            if self.at_symbol("."):
                self.advance()
                key = self.symbolic_name("a property name")
                self.check_property(expr, key)
                expr = ast.Prop(expr, key.text)
            elif self.at_symbol("["):
                self.advance()
                index = self.expression()
                self.expect_symbol("]")
                expr = ast.Index(expr, index)
            elif self.at_symbol(":") and isinstance(expr, ast.Var):
                expr = ast.HasLabels(expr, self.labels())
            else:
                return expr

    def check_property(self, subject: ast.Expr, key: Token) -> None:
        kind = self.kind_of(subject)
        if kind == "node":
            valid: tuple[str, ...] = NODE_PROPERTIES
            what = "node property"
        elif kind == "rel":
            valid, what = REL_PROPERTIES, "relationship property"
        else:
            valid, what = NODE_PROPERTIES + REL_PROPERTIES, "property"
        if key.text not in valid:
            _unknown(what, key.text, valid)

    def atom(self) -> ast.Expr:
        tok = self.tok
        if tok.kind is Kind.STRING:
            self.advance()
            return ast.Literal(tok.text)
        if tok.kind is Kind.INTEGER:
            self.advance()
            value = int(tok.text)
            if value > 2**63 - 1:
                self.fail("integer literal too large", "a 64-bit integer", tok)
            return ast.Literal(value)
        if tok.kind is Kind.FLOAT:
            self.advance()
            return ast.Literal(float(tok.text))
        if tok.kind is Kind.PARAM:
            self.advance()
            self.params.append(tok.text)
            return ast.Param(tok.text, self.pos(tok))
        if tok.is_keyword("TRUE", "FALSE"):
            self.advance()
            return ast.Literal(tok.text.upper() == "TRUE")
        if tok.is_keyword("NULL"):
            self.advance()
            return ast.Literal(None)
        if self.at_symbol("["):
            return self.list_literal()
        if self.at_symbol("{"):
            return self.map_literal()
        if self.at_symbol("("):
            return self.paren_or_pattern()
        if tok.kind in (Kind.IDENT, Kind.QUOTED):
            if (
                tok.kind is Kind.IDENT
                and self.peek().kind is Kind.SYMBOL
                and self.peek().text == "("
            ):
                return self.call()
            name = self.name("an expression")
            if name.text not in self.scope:
                in_scope = ", ".join(self.scope) or "none"
                self.fail(
                    f"variable `{name.text}` is not defined (in scope: {in_scope})",
                    "a variable bound by MATCH or WITH",
                    name,
                )
            return ast.Var(name.text, self.pos(name))
        self.unexpected("an expression")

    def list_literal(self) -> ast.Expr:
        self.expect_symbol("[")
        items: list[ast.Expr] = []
        if not self.at_symbol("]"):
            items.append(self.expression())
            while self.accept_symbol(","):
                items.append(self.expression())
        self.expect_symbol("]")
        if all(isinstance(item, ast.Literal) for item in items):
            return ast.Literal(tuple(item.value for item in items))  # type: ignore[attr-defined]
        return ast.ListExpr(tuple(items))

    def map_literal(self) -> ast.Expr:
        self.expect_symbol("{")
        items: list[tuple[str, ast.Expr]] = []
        if not self.at_symbol("}"):
            while True:
                key = self.symbolic_name("a key").text
                self.expect_symbol(":")
                items.append((key, self.expression()))
                if not self.accept_symbol(","):
                    break
        self.expect_symbol("}")
        return ast.MapExpr(tuple(items))

    def paren_or_pattern(self) -> ast.Expr:
        """`(expr)`, or a pattern predicate like `(m)-[:MENTIONS]->(:Measure)`."""
        start, saved_scope = self.i, dict(self.scope)
        try:
            self.node_pattern(binding=False)
            is_pattern = self.at_rel_start()
        except CypherSyntaxError:
            is_pattern = False
        self.i, self.scope = start, saved_scope
        if is_pattern:
            pattern = self.path_pattern(binding=False)
            self.scope = saved_scope  # names introduced inside a pattern predicate stay local
            return ast.PatternPredicate(pattern)
        self.expect_symbol("(")
        self.enter()
        try:
            expr = self.expression()
        finally:
            self.depth -= 1
        self.expect_symbol(")")
        return expr

    def at_rel_start(self) -> bool:
        """`-[`, `--`, `->`, `<-[` or `<--` after a node pattern."""
        nxt = self.peek()
        if self.at_symbol("-"):
            return nxt.kind is Kind.SYMBOL and nxt.text in ("[", "-", ">")
        if self.at_symbol("<") and nxt.kind is Kind.SYMBOL and nxt.text == "-":
            after = self.peek(2)
            return after.kind is Kind.SYMBOL and after.text in ("[", "-")
        return False

    def call(self) -> ast.Expr:
        name_tok = self.advance()
        lname = name_tok.text.lower()
        if lname not in FUNCTIONS:
            if lname in ("count", "collect", "sum", "avg", "min", "max", "exists"):
                self.fail(
                    f"{name_tok.text}() is not supported in filters",
                    "a pattern predicate, or toLower/toUpper/size/coalesce/labels/type",
                    name_tok,
                )
            _unknown("function", name_tok.text, _FUNCTION_NAMES)
        self.expect_symbol("(")
        args: list[ast.Expr] = []
        if not self.at_symbol(")"):
            args.append(self.expression())
            while self.accept_symbol(","):
                args.append(self.expression())
        self.expect_symbol(")")
        lo, hi = FUNCTIONS[lname]
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = f"{lo}" if lo == hi else f"at least {lo}"
            self.fail(
                f"{name_tok.text}() takes {want} argument(s), got {len(args)}",
                f"{want} argument(s)",
                name_tok,
            )
        return ast.Call(lname, tuple(args))


def parse_query(text: str) -> ast.Query:
    """Parse and check a filter; raises only the CypherError family."""
    if not isinstance(text, str):
        raise CypherSyntaxError(f"a filter must be a string, not {type(text).__name__}")
    try:
        query = _Parser(text).query()
    except RecursionError as exc:
        raise CypherLimitError(
            f"filter nested too deeply to parse (limit {MAX_NESTING} levels); flatten it"
        ) from exc
    _check_depth(query)
    return query


def _check_depth(query: ast.Query) -> None:
    """Refuse expression trees deeper than MAX_EXPRESSION_DEPTH (operator chains are
    built by loops, not recursion, so the parser alone does not bound them). Iterative,
    so that the check itself cannot overflow the stack."""
    stack: list[tuple[object, int]] = [(query, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.Expr):
            depth += 1
            if depth > MAX_EXPRESSION_DEPTH:
                raise CypherLimitError(
                    f"an expression is nested more than {MAX_EXPRESSION_DEPTH} operators deep "
                    "(limit MAX_EXPRESSION_DEPTH; a chain such as a OR b OR … counts one level "
                    "per operator); use IN [...] for many alternatives, or split it"
                )
            if isinstance(node, ast.Literal):
                continue
        if isinstance(node, tuple):
            stack.extend((item, depth) for item in node)
        elif hasattr(node, "__dataclass_fields__"):
            for name in node.__dataclass_fields__:
                child = getattr(node, name)
                if isinstance(child, ast.Expr | tuple) or hasattr(child, "__dataclass_fields__"):
                    stack.append((child, depth))
