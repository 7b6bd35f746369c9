"""JavaScript model files read as data, never run.

Cube's JavaScript schema files are programs, but what they declare is data:
``cube(`name`, { ...object literal... })``. This module tokenizes a small subset
of JavaScript and builds plain values from it; nothing is evaluated. The subset:

- comments (``//``, ``/* */``), ``;`` and newlines between statements;
- statements: a call of a name with data arguments (``cube(…)``, ``view(…)``,
  ``context(…)``, ``addExport({…})``), ``const|let|var NAME = value``,
  ``module.exports = value`` and ``exports.NAME = value``;
- values: object literals (identifier, string or number keys; shorthand
  ``{ name }``), arrays, strings, template literals (their ``${…}`` parts kept
  as text, or replaced by a constant of the file when they name one), numbers,
  ``true``/``false``/``null``/``undefined``, identifiers and dotted paths (kept
  as :class:`Ref`), and ``require('./file')`` / ``require('./file').name`` of
  another file inside the model folder (read the same way).

Anything else — a call of any other function, an arrow function or
``function``, an operator expression, ``new``, ``eval``, ``import`` — becomes
:class:`Unsupported` (a value) or a problem (a statement), each with its line;
the reader skips it and goes on. A syntax error (an unclosed string, bracket or
template) is a :class:`ModelLoadError` with file, line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch.errors import ModelLoadError

_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)")
_OPS = "=<>!&|+-*/%?~^"
_PUNCT = "{}[](),:;."
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_CLOSERS = {"{": "}", "[": "]", "(": ")"}
#: names a statement of the subset may start with
_STATEMENT_KEYWORDS = ("const", "let", "var")
_MAX_DEPTH = 100


@dataclass(frozen=True, slots=True)
class Ref:
    """An identifier or dotted path used as a value (``StripeCustomers.email``)."""

    path: str
    line: int


@dataclass(frozen=True, slots=True)
class Template:
    """A template literal: text parts and ``${…}`` expression parts (as written)."""

    parts: tuple[tuple[bool, str], ...]  # (is_expression, text)
    line: int


@dataclass(frozen=True, slots=True)
class Require:
    """``require('./file')`` (``member``: the ``.name`` taken from its exports)."""

    spec: str
    member: str | None
    line: int


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A value outside the subset, not read (``what`` says what it was)."""

    what: str
    line: int


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # name | str | tmpl | num | punct | op
    value: Any
    line: int
    col: int


@dataclass(slots=True)
class Statement:
    kind: str  # call | const | export
    name: str  # the called function, the constant, or the export's name ("" for the whole)
    args: list[Any]
    line: int


@dataclass(slots=True)
class Program:
    path: Path
    statements: list[Statement] = field(default_factory=list)
    #: (line, message) for each statement outside the subset
    problems: list[tuple[int, str]] = field(default_factory=list)


def tokenize(text: str, path: Path) -> list[Token]:
    tokens: list[Token] = []
    i, line, line_start, n = 0, 1, 0, len(text)

    def fail(msg: str, at: int, at_line: int, at_start: int) -> ModelLoadError:
        return ModelLoadError(f"{path}:{at_line}:{at - at_start + 1}: {msg}")

    while i < n:
        ch = text[i]
        if ch == "\n":
            line, line_start, i = line + 1, i + 1, i + 1
            continue
        if ch in " \t\r\f\v\ufeff":
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise fail("unclosed /* comment", i, line, line_start)
            line += text.count("\n", i, end)
            if "\n" in text[i:end]:
                line_start = text.rfind("\n", i, end) + 1
            i = end + 2
            continue
        col = i - line_start + 1
        if ch in "'\"":
            value, i = _string(text, i, path, line, line_start)
            tokens.append(Token("str", value, line, col))
            continue
        if ch == "`":
            parts, j, start_line = _template(text, i, path, line, line_start)
            tokens.append(Token("tmpl", tuple(parts), start_line, col))
            line += text.count("\n", i, j)
            if "\n" in text[i:j]:
                line_start = text.rfind("\n", i, j) + 1
            i = j
            continue
        m = _NAME.match(text, i)
        if m:
            tokens.append(Token("name", m.group(), line, col))
            i = m.end()
            continue
        m = _NUMBER.match(text, i)
        if m and m.group():
            tokens.append(Token("num", m.group(), line, col))
            i = m.end()
            continue
        if text.startswith("...", i):
            tokens.append(Token("op", "...", line, col))
            i += 3
            continue
        if ch in _PUNCT and not (ch == "=" and i + 1 < n and text[i + 1] in "=>"):
            tokens.append(Token("punct", ch, line, col))
            i += 1
            continue
        j = i
        while j < n and text[j] in _OPS:
            j += 1
        if j == i:
            j = i + 1  # any other character is an operator we do not read
        op = text[i:j]
        tokens.append(Token("punct" if op == "=" else "op", op, line, col))
        i = j
    return tokens


def _string(text: str, i: int, path: Path, line: int, line_start: int) -> tuple[str, int]:
    """The value of the quoted string starting at ``text[i]`` and the index after it."""
    ch, n = text[i], len(text)
    out: list[str] = []
    j = i + 1
    while True:
        if j >= n or text[j] == "\n":
            raise ModelLoadError(f"{path}:{line}:{i - line_start + 1}: unclosed string")
        c = text[j]
        if c == ch:
            break
        if c == "\\" and j + 1 < n:
            out.append(_ESCAPES.get(text[j + 1], text[j + 1]))
            j += 2
            continue
        out.append(c)
        j += 1
    return "".join(out), j + 1


def _template(
    text: str, i: int, path: Path, line: int, line_start: int
) -> tuple[list[tuple[bool, str]], int, int]:
    """The parts of the template literal starting at ``text[i]`` and the index after it."""
    parts: list[tuple[bool, str]] = []
    buf: list[str] = []
    j, n = i + 1, len(text)
    while True:
        if j >= n:
            raise ModelLoadError(
                f"{path}:{line}:{i - line_start + 1}: unclosed template literal (`)"
            )
        c = text[j]
        if c == "`":
            break
        if c == "\\" and j + 1 < n:
            nxt = text[j + 1]
            buf.append(_ESCAPES.get(nxt, nxt) if nxt != "\n" else "")
            j += 2
            continue
        if c == "$" and text.startswith("${", j):
            depth, k = 1, j + 2
            while k < n and depth:
                if text[k] == "{":
                    depth += 1
                elif text[k] == "}":
                    depth -= 1
                elif text[k] in "'\"`":
                    quote = text[k]
                    k += 1
                    while k < n and text[k] != quote:
                        k += 2 if text[k] == "\\" else 1
                k += 1
            if depth:
                raise ModelLoadError(
                    f"{path}:{line}:{i - line_start + 1}: unclosed ${{ in a template literal"
                )
            if buf:
                parts.append((False, "".join(buf)))
                buf = []
            parts.append((True, text[j + 2 : k - 1].strip()))
            j = k
            continue
        buf.append(c)
        j += 1
    if buf:
        parts.append((False, "".join(buf)))
    return parts, j + 1, line


class _Parser:
    def __init__(self, tokens: list[Token], path: Path) -> None:
        self.t = tokens
        self.i = 0
        self.path = path
        self.depth = 0

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def at(self, kind: str, value: Any = None, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.kind == kind and (value is None or tok.value == value)

    def take(self) -> Token:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def expect(self, value: str) -> Token:
        tok = self.peek()
        if tok is None or tok.kind != "punct" or tok.value != value:
            where = f"{tok.line}:{tok.col}" if tok else f"{self.t[-1].line if self.t else 1}"
            got = f"'{tok.value}'" if tok else "the end of the file"
            raise ModelLoadError(f"{self.path}:{where}: expected '{value}', got {got}")
        return self.take()

    def skip_value(self) -> None:
        """Skip tokens up to the end of the value or statement at this level: a ``,``
        ``;`` or closing bracket at depth 0, or a new line starting a new statement."""
        stack: list[str] = []
        prev: Token | None = None
        while (tok := self.peek()) is not None:
            if tok.kind == "punct":
                if tok.value in _CLOSERS:
                    stack.append(_CLOSERS[tok.value])
                elif tok.value in ")]}":
                    if not stack:
                        return
                    if tok.value != stack[-1]:
                        raise ModelLoadError(
                            f"{self.path}:{tok.line}:{tok.col}: unexpected '{tok.value}'"
                        )
                    stack.pop()
                elif tok.value in ",;" and not stack:
                    return
            elif (
                not stack
                and prev is not None
                and tok.line > prev.line
                and tok.kind == "name"
                and (prev.kind != "op" and not (prev.kind == "punct" and prev.value in "=(,:"))
            ):
                return  # a newline after a complete expression starts the next statement
            prev = self.take()
        if stack:
            last = self.t[-1]
            raise ModelLoadError(
                f"{self.path}:{last.line}: unclosed bracket: '{stack[-1]}' expected before the end"
            )

    def unsupported(self, what: str, line: int) -> Unsupported:
        self.skip_value()
        return Unsupported(what, line)

    def value(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise ModelLoadError(f"{self.path}: unexpected end of file (a value was expected)")
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ModelLoadError(f"{self.path}:{tok.line}: values nested over {_MAX_DEPTH} deep")
        try:
            v = self._primary(tok)
            nxt = self.peek()
            if not isinstance(v, Unsupported) and nxt is not None and nxt.kind == "op":
                return self.unsupported(f"an expression with '{nxt.value}'", nxt.line)
            return v
        finally:
            self.depth -= 1

    def _primary(self, tok: Token) -> Any:
        if tok.kind == "punct" and tok.value == "{":
            return self._object()
        if tok.kind == "punct" and tok.value == "[":
            return self._array()
        if tok.kind == "str":
            self.take()
            return tok.value
        if tok.kind == "tmpl":
            self.take()
            return Template(tok.value, tok.line)
        if tok.kind == "num":
            self.take()
            text = tok.value.replace("_", "")
            try:
                return int(text, 0) if text.isdigit() or text[:2] in ("0x", "0X") else float(text)
            except ValueError:
                return self.unsupported(f"the number {tok.value}", tok.line)
        if tok.kind == "name":
            if tok.value in ("true", "false"):
                self.take()
                return tok.value == "true"
            if tok.value in ("null", "undefined"):
                self.take()
                return None
            if tok.value in ("function", "async"):
                return self.unsupported("a function", tok.line)
            if tok.value in ("new", "class", "await", "yield", "typeof", "void", "delete"):
                return self.unsupported(f"'{tok.value}'", tok.line)
            return self._reference()
        if tok.kind == "punct" and tok.value == "(":
            return self.unsupported("a parenthesised expression or arrow function", tok.line)
        return self.unsupported(f"'{tok.value}'", tok.line)

    def _reference(self) -> Any:
        first = self.take()
        path = [first.value]
        while self.at("punct", ".") and self.at("name", k=1):
            self.take()
            path.append(self.take().value)
        if self.at("op", "=>"):
            return self.unsupported("an arrow function", first.line)
        if not self.at("punct", "("):
            return Ref(".".join(path), first.line)
        name = ".".join(path)
        if name == "require":
            self.take()
            spec = self.peek()
            if spec is not None and spec.kind == "str" and self.at("punct", ")", k=1):
                self.take()
                self.take()
                member = None
                if self.at("punct", ".") and self.at("name", k=1):
                    self.take()
                    member = self.take().value
                if not self.at("punct", ".") and not self.at("punct", "("):
                    return Require(spec.value, member, first.line)
            return self.unsupported("require() of something other than a file name", first.line)
        return self.unsupported(f"a call to {name}()", first.line)

    def _object(self) -> Any:
        start = self.expect("{")
        out: dict[str, Any] = {}
        while not self.at("punct", "}"):
            tok = self.peek()
            if tok is None:
                raise ModelLoadError(f"{self.path}:{start.line}:{start.col}: unclosed '{{'")
            if tok.kind in ("name", "str", "num"):
                self.take()
                key = str(tok.value)
                if self.at("punct", ":"):
                    self.take()
                    out[key] = self.value()
                elif self.at("punct", ",") or self.at("punct", "}"):
                    out[key] = Ref(key, tok.line)  # shorthand { name }
                else:
                    out[key] = self.unsupported(
                        f"the member '{key}' (a method or getter)", tok.line
                    )
            elif tok.kind == "punct" and tok.value == "[":
                self.unsupported("a computed key", tok.line)
            else:
                self.unsupported(f"'{tok.value}' in an object", tok.line)
            if self.at("punct", ","):
                self.take()
            elif not self.at("punct", "}"):
                nxt = self.peek()
                if nxt is None:
                    raise ModelLoadError(f"{self.path}:{start.line}:{start.col}: unclosed '{{'")
                raise ModelLoadError(
                    f"{self.path}:{nxt.line}:{nxt.col}: expected ',' or '}}' in an object, "
                    f"got '{nxt.value}'"
                )
        self.take()
        return out

    def _array(self) -> list[Any]:
        start = self.expect("[")
        out: list[Any] = []
        while not self.at("punct", "]"):
            if self.peek() is None:
                raise ModelLoadError(f"{self.path}:{start.line}:{start.col}: unclosed '['")
            out.append(self.value())
            if self.at("punct", ","):
                self.take()
            elif not self.at("punct", "]"):
                nxt = self.peek()
                if nxt is None:
                    raise ModelLoadError(f"{self.path}:{start.line}:{start.col}: unclosed '['")
                raise ModelLoadError(
                    f"{self.path}:{nxt.line}:{nxt.col}: expected ',' or ']' in an array, "
                    f"got '{nxt.value}'"
                )
        self.take()
        return out

    def program(self) -> Program:
        prog = Program(self.path)
        while (tok := self.peek()) is not None:
            if tok.kind == "punct" and tok.value == ";":
                self.take()
                continue
            stmt = self._statement(tok, prog)
            if stmt is not None:
                prog.statements.append(stmt)
            if self.at("punct", ";"):
                self.take()
        return prog

    def _statement(self, tok: Token, prog: Program) -> Statement | None:
        if tok.kind == "name" and tok.value in _STATEMENT_KEYWORDS:
            if self.at("name", k=1) and self.at("punct", "=", k=2):
                self.take()
                name = self.take().value
                self.take()
                value = self.value()
                if isinstance(value, Unsupported):
                    prog.problems.append(
                        (value.line, f"{tok.value} {name} = {value.what}: not read")
                    )
                    return None
                return Statement("const", name, [value], tok.line)
        elif tok.kind == "name" and tok.value in ("module", "exports"):
            whole = tok.value == "module" and self.at("name", "exports", k=2)
            if self.at("punct", ".", k=1) and self.at("name", k=2) and self.at("punct", "=", k=3):
                target = "module.exports" if whole else f"exports.{self.peek(2).value}"  # type: ignore[union-attr]
                if whole or tok.value == "exports":
                    self.i += 4
                    value = self.value()
                    if isinstance(value, Unsupported):
                        prog.problems.append((value.line, f"{target} = {value.what}: not read"))
                        return None
                    return Statement("export", "" if whole else target[8:], [value], tok.line)
        elif (
            tok.kind == "name"
            and self.at("punct", "(", k=1)
            and tok.value
            not in (
                "require",
                "eval",
                "function",
            )
        ):
            self.take()
            self.take()
            args: list[Any] = []
            while not self.at("punct", ")"):
                if self.peek() is None:
                    raise ModelLoadError(
                        f"{self.path}:{tok.line}:{tok.col}: unclosed '(' of {tok.value}("
                    )
                args.append(self.value())
                if self.at("punct", ","):
                    self.take()
                elif not self.at("punct", ")"):
                    nxt = self.peek()
                    assert nxt is not None
                    raise ModelLoadError(
                        f"{self.path}:{nxt.line}:{nxt.col}: expected ',' or ')' in the "
                        f"arguments of {tok.value}(), got '{nxt.value}'"
                    )
            self.take()
            if (
                self.peek() is not None
                and not self.at("punct", ";")
                and (
                    self.peek().line == tok.line or not self.at("name")  # type: ignore[union-attr]
                )
            ):
                # ``f(x).then(...)``, ``f(x) + 1``: more than a call statement
                what = self.peek().value  # type: ignore[union-attr]
                self.skip_value()
                prog.problems.append((tok.line, f"{tok.value}(…) followed by '{what}': not read"))
                return None
            return Statement("call", tok.value, args, tok.line)
        if tok.kind == "punct" and tok.value in ")]}":
            raise ModelLoadError(f"{self.path}:{tok.line}:{tok.col}: unexpected '{tok.value}'")
        what = _describe_statement(self, tok)
        start = self.i
        self.skip_value()
        if self.i == start:  # a lone ',': nothing else can stop the skip without consuming
            self.take()
        prog.problems.append((tok.line, f"{what}: not read"))
        return None


def _describe_statement(p: _Parser, tok: Token) -> str:
    if tok.kind == "name" and tok.value in ("require", "eval") and p.at("punct", "(", k=1):
        return f"a call to {tok.value}()"
    if tok.kind == "name" and tok.value in ("function", "class", "import", "export", "if", "for"):
        return f"a '{tok.value}' statement"
    if tok.kind == "punct" and tok.value == "(":
        return "a parenthesised expression (e.g. a function run in place)"
    return f"a statement starting with '{tok.value}'"


def parse_js(path: Path, text: str) -> Program:
    """The statements of ``text`` as data; statements outside the subset are listed in
    ``problems`` with their line."""
    return _Parser(tokenize(text, path), path).program()


def render(value: Any, scope: dict[str, Any]) -> Any:
    """``value`` with templates joined into strings and references to constants in
    ``scope`` replaced by their values. ``${CUBE}``, ``${member}`` and other names the
    scope does not hold stay as written, which is how Cube SQL reads."""
    if isinstance(value, Template):
        out: list[str] = []
        for is_expr, text in value.parts:
            if not is_expr:
                out.append(text)
                continue
            known = scope.get(text)
            out.append(known if isinstance(known, str) else f"${{{text}}}")
        return "".join(out)
    if isinstance(value, Ref) and value.path in scope:
        return scope[value.path]
    if isinstance(value, dict):
        return {k: render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value
