"""Tokenizer for the Cypher filter language.

Comments (``//`` to end of line, ``/* … */``) and whitespace are dropped here,
so later stages never see them — which is also what makes the read-only check
robust: a write clause is a keyword token, whatever case or comments surround it,
while the same word inside a string literal is just a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from layersearch.errors import CypherLimitError, CypherReadOnlyError, CypherSyntaxError

__all__ = ["Kind", "Token", "tokenize", "MAX_QUERY_CHARS", "WRITE_CLAUSES"]

#: a filter longer than this is rejected before tokenizing
MAX_QUERY_CHARS = 20_000

#: keywords that start a write or procedure clause (filters are read-only)
WRITE_CLAUSES: tuple[str, ...] = (
    "CREATE",
    "MERGE",
    "DELETE",
    "DETACH",
    "SET",
    "REMOVE",
    "DROP",
    "CALL",
    "LOAD",
    "FOREACH",
    "COPY",
    "ALTER",
    "INSTALL",
    "ATTACH",
)


class Kind(Enum):
    IDENT = "identifier"
    QUOTED = "quoted identifier"  # `backticked`: never a keyword
    STRING = "string"
    INTEGER = "integer"
    FLOAT = "float"
    PARAM = "parameter"
    SYMBOL = "symbol"
    EOF = "end of input"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # identifier / symbol text, or the decoded value of a string
    line: int
    column: int
    raw: str = ""

    def is_keyword(self, *words: str) -> bool:
        return self.kind is Kind.IDENT and self.text.upper() in words

    def describe(self) -> str:
        if self.kind is Kind.EOF:
            return "end of input"
        if self.kind is Kind.STRING:
            return f"string {self.raw}"
        return f"'{self.raw or self.text}'"


# longest first: the scanner takes the first that matches
_SYMBOLS: tuple[str, ...] = (
    "..",
    "<>",
    "!=",
    "<=",
    ">=",
    "=~",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    ":",
)
_SYMBOLS += ("|", "-", "+", "*", "/", "%", "^", "<", ">", "=", ";", "$")
_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "0": "\0",
}


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0

    def error(self, message: str, pos: int, expected: str | None = None) -> CypherSyntaxError:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return CypherSyntaxError(message, query=self.text, line=line, column=col, expected=expected)

    def where(self, pos: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def skip_space_and_comments(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            ch = text[self.pos]
            if ch.isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment", self.pos, expected="'*/'")
                self.pos = end + 2
            else:
                return

    def string(self, start: int) -> Token:
        text, quote = self.text, self.text[start]
        out: list[str] = []
        i = start + 1
        while i < len(text):
            ch = text[i]
            if ch == quote:
                line, col = self.where(start)
                self.pos = i + 1
                return Token(Kind.STRING, "".join(out), line, col, text[start : i + 1])
            if ch == "\\":
                nxt = text[i + 1 : i + 2]
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                    i += 2
                    continue
                if nxt in ("u", "U"):
                    width = 4 if nxt == "u" else 8
                    digits = text[i + 2 : i + 2 + width]
                    if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                        code = int(digits, 16)
                        if code <= 0x10FFFF:
                            out.append(chr(code))
                            i += 2 + width
                            continue
                    raise self.error(
                        "bad unicode escape in string",
                        i,
                        expected=f"\\{nxt} and {width} hex digits",
                    )
                raise self.error(
                    f"unknown escape \\{nxt or ''} in string",
                    i,
                    expected="one of \\\\ \\' \\\" \\n \\t \\r \\b \\f \\0 \\uXXXX",
                )
            out.append(ch)
            i += 1
        raise self.error("unterminated string", start, expected=f"closing {quote}")

    def number(self, start: int) -> Token:
        text, i, n = self.text, start, len(self.text)
        while i < n and _is_digit(text[i]):
            i += 1
        kind = Kind.INTEGER
        # "1..3" is a range, not the float "1." followed by ".3"
        if (
            i < n
            and text[i] == "."
            and not text.startswith("..", i)
            and i + 1 < n
            and _is_digit(text[i + 1])
        ):
            kind = Kind.FLOAT
            i += 1
            while i < n and _is_digit(text[i]):
                i += 1
        if i < n and text[i] in "eE":
            j = i + 1
            if j < n and text[j] in "+-":
                j += 1
            if j < n and _is_digit(text[j]):
                kind = Kind.FLOAT
                i = j
                while i < n and _is_digit(text[i]):
                    i += 1
        if i < n and (text[i].isalpha() or text[i] == "_"):
            raise self.error("malformed number", start, expected="digits")
        line, col = self.where(start)
        self.pos = i
        raw = text[start:i]
        return Token(kind, raw, line, col, raw)

    def ident(self, start: int) -> Token:
        text, i, n = self.text, start, len(self.text)
        while i < n and (text[i].isalnum() or text[i] == "_"):
            i += 1
        line, col = self.where(start)
        self.pos = i
        return Token(Kind.IDENT, text[start:i], line, col, text[start:i])

    def quoted(self, start: int) -> Token:
        end = self.text.find("`", start + 1)
        if end < 0:
            raise self.error("unterminated `quoted identifier`", start, expected="closing `")
        line, col = self.where(start)
        self.pos = end + 1
        return Token(Kind.QUOTED, self.text[start + 1 : end], line, col, self.text[start : end + 1])

    def param(self, start: int) -> Token:
        i = start + 1
        text, n = self.text, len(self.text)
        while i < n and (text[i].isalnum() or text[i] == "_"):
            i += 1
        if i == start + 1:
            raise self.error(
                "'$' must be followed by a parameter name", start, expected="a name like $ds"
            )
        line, col = self.where(start)
        self.pos = i
        return Token(Kind.PARAM, text[start + 1 : i], line, col, text[start:i])

    def next(self) -> Token:
        self.skip_space_and_comments()
        text, start = self.text, self.pos
        if start >= len(text):
            line, col = self.where(start)
            return Token(Kind.EOF, "", line, col)
        ch = text[start]
        if ch in "'\"":
            return self.string(start)
        if _is_digit(ch):
            return self.number(start)
        if ch.isalpha() or ch == "_":
            return self.ident(start)
        if ch == "`":
            return self.quoted(start)
        if ch == "$":
            return self.param(start)
        for sym in _SYMBOLS:
            if text.startswith(sym, start):
                line, col = self.where(start)
                self.pos = start + len(sym)
                return Token(Kind.SYMBOL, sym, line, col, sym)
        raise self.error(f"unexpected character {ch!r}", start)


def _is_digit(ch: str) -> bool:
    """An ASCII digit: ``str.isdigit`` also takes superscripts and other scripts' digits,
    which ``int`` refuses (``'¹2'``)."""
    return "0" <= ch <= "9"


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` ending with an EOF token; raises CypherSyntaxError,
    CypherReadOnlyError (a write or procedure clause) or CypherLimitError (too long)."""
    if len(text) > MAX_QUERY_CHARS:
        raise CypherLimitError(
            f"filter is {len(text)} characters, over the limit of {MAX_QUERY_CHARS}; "
            "shorten it (e.g. pass long lists as a $parameter)"
        )
    scanner = _Scanner(text)
    tokens: list[Token] = []
    while True:
        tok = scanner.next()
        tokens.append(tok)
        if tok.kind is Kind.EOF:
            break
    _check_read_only(tokens)
    return tokens


def _check_read_only(tokens: list[Token]) -> None:
    for i, tok in enumerate(tokens):
        if tok.kind is not Kind.IDENT or tok.text.upper() not in WRITE_CLAUSES:
            continue
        # `n.set` is a property name, not a clause
        if i > 0 and tokens[i - 1].kind is Kind.SYMBOL and tokens[i - 1].text in (".", ":"):
            continue
        word = tok.text.upper()
        if word == "LOAD":
            nxt = tokens[i + 1]
            word = "LOAD CSV" if nxt.is_keyword("CSV") else "LOAD"
        elif word == "DETACH" and tokens[i + 1].is_keyword("DELETE"):
            word = "DETACH DELETE"
        raise CypherReadOnlyError(
            f"filters are read-only: {word} (line {tok.line}, column {tok.column}) is not allowed. "
            "Use only MATCH, OPTIONAL MATCH, WHERE, WITH, UNION and RETURN <var>.id AS id"
        )
