"""The hostile input catalogue: one row per (input, entry point), with the outcome we promise.

A :class:`Case` says what to send and what must happen. Each entry point has its
own runner module that reads the field it understands:

- ``api``: a callable ``(Layersearch, files_dir) -> result`` (``test_api_catalogue.py``)
- ``cli``: argv after ``--store STORE`` (``test_cli_catalogue.py``); ``{dir}`` in an
  argument is replaced by the directory the case's ``files`` were written to.
- ``mcp``: a (tool, arguments) call through the SDK's in-memory client
  (``test_mcp_catalogue.py``).

``CASES`` run against a store holding ``fixtures/mini``; ``CORPUS_CASES`` and
``MCP_CASES`` against one that also holds conversations, summaries and the vault
(``build_corpus_store``, fake embedder). The outcome is either
:class:`Ok` (the correct result; a search response is never silently empty) or
:class:`Err` (one of our errors, of that class, whose message contains ``match``).
Every case must leave the store unchanged unless it says ``writes=True``.

Inputs that argv cannot carry (NUL bytes, strings over Linux's 128 KiB argument
limit) are exercised through the CLI's JSON options or at the API only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersearch import Layersearch
from layersearch.corpora.vault.notes import MAX_NOTE_BYTES
from layersearch.errors import (
    ConfigError,
    CypherLimitError,
    CypherReadOnlyError,
    CypherSyntaxError,
    CypherUnknownError,
    ImportFailed,
    LayersearchError,
    LimitExceeded,
    ModelLoadError,
    NotFound,
    StoreError,
)

MB = 1_000_000
#: what a terminal takes as a control rather than text (C0 but tab and newline, DEL, C1,
#: bidirectional overrides and isolates): never in any output (issue 42)
TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Longest single argv string Linux accepts is 128 KiB; this is over every text limit.
ARGV_BIG = 120_000
#: the reported terminal sequences (clear screen, a colour, the window title) and variants:
#: a one-character C1 CSI, a right-to-left override
CONTROL_TEXT = "\x1b[2J\x1b[31mred\x1b]0;owned\x07 \x9b2J \u202eevil"
#: the password of the malformed PostgreSQL addresses: never in any output (issue 42)
SECRET = "S3cretPW"
BAD_DSNS = {
    "ipv6-unclosed": f"postgresql://alice:{SECRET}@[::1:bad/db",
    "percent-zz": f"postgresql://alice:{SECRET}%zz@localhost/db",
    "port-not-a-number": f"postgres://alice:{SECRET}@db.example:port/db",
}
HIDDEN = "shop.orders.internal_score"
HIDDEN_MODEL = "shop.raw_events"

Api = Callable[[Layersearch, Path], Any]


@dataclass(frozen=True)
class Ok:
    """The call succeeds; ``check`` (if given) holds on the API result."""

    check: Callable[[Any], bool] | None = None
    #: a substring one of the response's warnings must contain
    warning: str | None = None


@dataclass(frozen=True)
class Err:
    error: type[LayersearchError]
    match: str


@dataclass(frozen=True)
class Invalid:
    """MCP only: the SDK rejects the arguments against the tool's input schema (a tool
    error naming the argument, before our code runs)."""

    argument: str


@dataclass(frozen=True)
class Case:
    id: str
    #: the catalogue row in docs/reliability.md this case belongs to
    category: str
    expect: Ok | Err | Invalid
    api: Api | None = None
    cli: tuple[str, ...] | None = None
    #: an MCP tool call (tool name, arguments) through the SDK's in-memory client
    mcp: tuple[str, dict[str, Any]] | None = None
    #: files written to a fresh directory before the call (name → text or bytes)
    files: dict[str, str | bytes] = field(default_factory=dict)
    #: an Ok case that is allowed to change the store
    writes: bool = False


def ids(resp: Any) -> list[str]:
    return [h.id for h in resp.results]


def no_hidden(resp: Any) -> bool:
    text = resp.model_dump_json()
    return HIDDEN not in text and HIDDEN_MODEL not in text


def no_hidden_beyond_echo(resp: Any) -> bool:
    """Hidden ids may be echoed back as the user typed them ("unknown entity '…'"), exactly as
    a name that does not exist would be; they must never be a hit or a suggestion."""
    if any(h.id in (HIDDEN, HIDDEN_MODEL) for h in resp.results):
        return False
    for w in resp.warnings:
        rest = re.sub(r"'[^']*'", "", w, count=1)
        if "internal_score" in rest or "raw_events" in rest:
            return False
    return True


def found(*wanted: str) -> Callable[[Any], bool]:
    return lambda resp: set(wanted) <= set(ids(resp)) and no_hidden(resp)


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(levels):
        cur["m"] = {}
        cur = cur["m"]
    return root


def _cyclic() -> dict[str, Any]:
    d: dict[str, Any] = {"measures": []}
    d["measures"].append(d)
    return d


DEEP_JSON = '{"m": ' * 40 + "1" + "}" * 40
NATIVE_DS = "datasource:\n  name: shop\n  models:\n    - model: a\n      columns: [{name: id}]\n"
SYNTAX = ['"', "'", ":", "(", "*", "~", "^", "AND", "-", 'name:"tax" AND (order* OR ~x^2) -y']
SQL = ["%", "_", "%_%", "' OR '1'='1", "x'; DROP TABLE memories; --", '"; DELETE FROM entities; --']
WRITES = [
    "CREATE (n:Model {id: 'x'}) RETURN n.id AS id",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) SET n.hidden = false RETURN n.id AS id",
    "MATCH (n) REMOVE n.hidden RETURN n.id AS id",
    "MERGE (n:Model {id: 'x'}) RETURN n.id AS id",
    "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r AS id",
    "CALL db.labels() YIELD label RETURN label AS id",
    "MATCH (n) RETURN n.id AS id; MATCH (m) DELETE m",
]


def _search_cases() -> list[Case]:
    c: list[Case] = [
        # empty and whitespace: no input → the newest memories, with a warning saying so
        Case(
            "search.question.empty",
            "empty",
            Ok(warning="no entities"),
            api=lambda ls, _: ls.search(question=""),
            cli=("search", ""),
        ),
        Case(
            "search.question.whitespace",
            "empty",
            Ok(warning="no entities"),
            api=lambda ls, _: ls.search(question=" \t\n "),
            cli=("search", " \t\n "),
        ),
        Case(
            "search.entity.empty",
            "empty",
            Ok(warning="empty entity reference"),
            api=lambda ls, _: ls.search(entities=["", "  "]),
            cli=("search", "-e", "", "-e", "  "),
        ),
        Case(
            "search.question.1mb",
            "huge",
            Err(LimitExceeded, "limit is 100000"),
            api=lambda ls, _: ls.search(question="x" * MB),
            cli=("search", "y" * ARGV_BIG),
        ),
        Case(
            "search.entity.1mb",
            "huge",
            Ok(warning="unknown entity"),
            api=lambda ls, _: ls.search(entities=["x" * MB]),
        ),
        Case(
            "search.entities.too-many",
            "huge",
            Err(LimitExceeded, "limit is 1000"),
            api=lambda ls, _: ls.search(entities=["orders"] * 1001),
        ),
        Case(
            "search.question.nul",
            "nul",
            Ok(found("shop.orders.tax_paid")),
            api=lambda ls, _: ls.search(question="tax\x00 paid\x01"),
        ),
        # ids holding a character nobody sees are refused (issue 42), the character named
        Case(
            "search.entity.nul",
            "invisible",
            Err(ConfigError, "invisible character, U+0000"),
            api=lambda ls, _: ls.search(entities=["orders\x00"]),
        ),
        Case(
            "search.entity.rlo",
            "invisible",
            Err(ConfigError, "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            api=lambda ls, _: ls.search(entities=["shop.orders\u202e"]),
            cli=("search", "-e", "shop.orders\u202e"),
        ),
        Case(
            "search.entity.zero-width",
            "invisible",
            Err(ConfigError, "U+200B (ZERO WIDTH SPACE)"),
            api=lambda ls, _: ls.search(entities=["shop.or\u200bders"]),
            cli=("search", "-e", "shop.or\u200bders"),
        ),
        Case(
            "search.entity.title-sequence",
            "invisible",
            Err(ConfigError, "'\\u001b]0;owned\\u0007'"),
            api=lambda ls, _: ls.search(entities=["\x1b]0;owned\x07"]),
            cli=("search", "-e", "\x1b]0;owned\x07"),
        ),
        Case(
            "search.datasource.rlo",
            "invisible",
            Err(ConfigError, "U+202E"),
            api=lambda ls, _: ls.search(question="tax", datasource="shop\u202e"),
            cli=("search", "tax", "-d", "shop\u202e"),
        ),
        Case(
            "search.query.nul",
            "invisible",
            Err(ConfigError, "query reference 'a\\u0000b' holds an invisible character"),
            api=lambda ls, _: ls.search(query={"measures": ["a\x00b"]}),
            cli=("search", "--query", '{"measures": ["a\\u0000b"]}'),
        ),
        Case(
            "search.query.rlo",
            "invisible",
            Err(ConfigError, "U+202E"),
            api=lambda ls, _: ls.search(query={"dimensions": [{"name": "shop.orders\u202e"}]}),
            cli=("search", "--query", '{"dimensions": [{"name": "shop.orders\\u202e"}]}'),
        ),
        Case(
            "search.query.deep",
            "nesting",
            Err(LimitExceeded, "nested deeper than 16"),
            api=lambda ls, _: ls.search(query=_deep(50)),
            cli=("search", "--query", DEEP_JSON),
        ),
        Case(
            "search.query.cyclic",
            "nesting",
            Err(LimitExceeded, "nested deeper than 16"),
            api=lambda ls, _: ls.search(query=_cyclic()),
        ),
        Case(
            "search.query.not-object",
            "malformed",
            Err(ConfigError, "query"),
            api=lambda ls, _: ls.search(query=[1, 2]),
            cli=("search", "--query", "[1, 2]"),
        ),
        Case(
            "search.query.bad-json",
            "malformed",
            Err(ConfigError, "not valid JSON"),
            cli=("search", "--query", '{"measures": ['),
        ),
        Case(
            "search.query.non-strings",
            "malformed",
            Ok(warning="no results"),
            api=lambda ls, _: ls.search(query={"measures": [1, None, 2.5, True, {}]}),
            cli=("search", "--query", '{"measures": [1, null, 2.5, true, {}]}'),
        ),
        Case(
            "search.max-results.negative",
            "limits",
            Err(ConfigError, "between 1 and 100"),
            api=lambda ls, _: ls.search(question="tax", max_results=-1),
            cli=("search", "tax", "-n", "-1"),
        ),
        Case(
            "search.max-results.zero",
            "limits",
            Err(ConfigError, "between 1 and 100"),
            api=lambda ls, _: ls.search(question="tax", max_results=0),
            cli=("search", "tax", "-n", "0"),
        ),
        Case(
            "search.max-results.huge",
            "limits",
            Err(ConfigError, "between 1 and 100"),
            api=lambda ls, _: ls.search(question="tax", max_results=10**30),
            cli=("search", "tax", "-n", str(10**30)),
        ),
        Case(
            "search.max-results.fraction",
            "limits",
            Err(ConfigError, "max_results"),
            api=lambda ls, _: ls.search(question="tax", max_results=2.5),
        ),
        Case(
            "search.max-results.not-a-number",
            "limits",
            Err(ConfigError, "not a valid integer"),
            cli=("search", "tax", "-n", "ten"),
        ),
        Case(
            "search.max-results.boundary",
            "limits",
            Ok(lambda r: len(r.results) <= 100),
            api=lambda ls, _: ls.search(question="order", max_results=100),
            cli=("search", "order", "-n", "100"),
        ),
        Case(
            "search.channel.unknown",
            "enum",
            Err(ConfigError, "valid channels"),
            api=lambda ls, _: ls.search(question="tax", channels=["BM25"]),
            cli=("search", "tax", "--channels", "bm25,nope"),
        ),
        Case(
            "search.channel.empty",
            "enum",
            Err(ConfigError, "channels is empty"),
            api=lambda ls, _: ls.search(question="tax", channels=[]),
        ),
        Case(
            "search.field.unknown",
            "enum",
            Err(ConfigError, "Extra inputs"),
            api=lambda ls, _: ls.search(question="tax", bogus=1),
        ),
        Case(
            "search.datasource.unknown",
            "enum",
            Err(ConfigError, "known datasources: crm, shop"),
            api=lambda ls, _: ls.search(question="tax", datasource="nope"),
            cli=("search", "tax", "-d", "nope"),
        ),
        Case(
            "search.datasource.empty",
            "empty",
            Err(ConfigError, "unknown datasource"),
            api=lambda ls, _: ls.search(question="tax", datasource=""),
        ),
        Case(
            "search.datasource.sql",
            "sql",
            Err(ConfigError, "unknown datasource"),
            api=lambda ls, _: ls.search(question="tax", datasource="shop' OR '1'='1"),
            cli=("search", "tax", "-d", "shop' OR '1'='1"),
        ),
        Case(
            "search.datasource.path",
            "path",
            Err(ConfigError, "unknown datasource"),
            api=lambda ls, _: ls.search(question="tax", datasource="../shop"),
            cli=("search", "tax", "-d", "../shop"),
        ),
        Case(
            "search.request.wrong-type",
            "malformed",
            Err(ConfigError, "SearchRequest"),
            api=lambda ls, _: ls.search("tax"),
        ),
        Case(
            "search.params.not-object",
            "malformed",
            Err(ConfigError, "params"),
            api=lambda ls, _: ls.search(question="x", params=[1]),
        ),
        Case(
            "search.param.no-equals",
            "malformed",
            Err(ConfigError, "name=value"),
            cli=("search", "tax", "--filter", "MATCH (n) RETURN n.id AS id", "--param", "x"),
        ),
        # hidden entities: never a hit, never in a filter result, never in a warning
        Case(
            "search.hidden.by-question",
            "hidden",
            Ok(no_hidden),
            api=lambda ls, _: ls.search(question="fraud model score internal raw clickstream"),
            cli=("search", "fraud model score internal raw clickstream"),
        ),
        Case(
            "search.hidden.by-entity",
            "hidden",
            Ok(no_hidden_beyond_echo),
            api=lambda ls, _: ls.search(entities=[HIDDEN, "internal_score", HIDDEN_MODEL]),
            cli=("search", "-e", HIDDEN, "-e", "internal_score"),
        ),
        Case(
            "search.hidden.by-filter",
            "hidden",
            Ok(no_hidden),
            api=lambda ls, _: ls.search(
                question="score", cypher_filter="MATCH (n) WHERE n.hidden RETURN n.id AS id"
            ),
        ),
        Case(
            "filter.hidden",
            "hidden",
            Ok(lambda r: HIDDEN not in r and HIDDEN_MODEL not in r),
            api=lambda ls, _: ls.filter_ids("MATCH (n) RETURN n.id AS id"),
        ),
        Case(
            "filter.hidden.did-you-mean",
            "hidden",
            Err(CypherUnknownError, "unknown"),
            api=lambda ls, _: ls.filter_ids("MATCH (n:Internal_score) RETURN n.id AS id"),
        ),
    ]
    for i, text in enumerate(SYNTAX):
        c.append(
            Case(
                f"search.question.syntax-{i}",
                "syntax",
                Ok(lambda r: r.results or r.warnings),
                api=lambda ls, _, t=text: ls.search(question=t),
                cli=("search", text),
            )
        )
        c.append(
            Case(
                f"search.entity.syntax-{i}",
                "syntax",
                Ok(lambda r: r.results or r.warnings),
                api=lambda ls, _, t=text: ls.search(entities=[t]),
            )
        )
    for i, text in enumerate(SQL):
        c.append(
            Case(
                f"search.question.sql-{i}",
                "sql",
                Ok(lambda r: r.results or r.warnings),
                api=lambda ls, _, t=text: ls.search(question=t),
                cli=("search", text),
            )
        )
        c.append(
            Case(
                f"search.entity.sql-{i}",
                "sql",
                Ok(warning="entity"),
                api=lambda ls, _, t=text: ls.search(entities=[t]),
                cli=("search", "-e", text),
            )
        )
    return c


def _cypher_cases() -> list[Case]:
    c: list[Case] = []
    for i, text in enumerate(WRITES):
        c.append(
            Case(
                f"cypher.write-{i}",
                "cypher-write",
                Err(CypherReadOnlyError, "read-only"),
                api=lambda ls, _, t=text: ls.search(question="tax", cypher_filter=t),
                cli=("search", "tax", "--filter", text),
            )
        )
    c += [
        Case(
            "cypher.param.missing",
            "param",
            Err(CypherUnknownError, "$x has no value"),
            api=lambda ls, _: ls.search(
                question="tax", cypher_filter="MATCH (n:Model) WHERE n.name = $x RETURN n.id AS id"
            ),
            cli=(
                "search",
                "tax",
                "--filter",
                "MATCH (n:Model) WHERE n.name = $x RETURN n.id AS id",
            ),
        ),
        Case(
            "cypher.param.injection",
            "cypher-injection",
            Ok(warning="matched no entities"),
            api=lambda ls, _: ls.search(
                question="tax",
                cypher_filter="MATCH (n) WHERE n.name = $x RETURN n.id AS id",
                params={"x": "' OR 1=1 //"},
            ),
            cli=(
                "search",
                "tax",
                "--filter",
                "MATCH (n) WHERE n.name = $x RETURN n.id AS id",
                "--param",
                "x=' OR 1=1 //",
            ),
        ),
        Case(
            "cypher.comment-injection",
            "cypher-injection",
            Ok(found("shop.orders.tax_paid")),
            api=lambda ls, _: ls.search(
                question="tax", cypher_filter="MATCH (n) RETURN n.id AS id // '; DETACH DELETE n"
            ),
        ),
        Case(
            "cypher.string-escape",
            "cypher-injection",
            Err(CypherSyntaxError, "line 1"),
            api=lambda ls, _: ls.filter_ids("MATCH (n) WHERE n.name = 'x\\' RETURN n.id AS id"),
        ),
        Case(
            "cypher.empty",
            "empty",
            Err(CypherSyntaxError, "unexpected end of input"),
            api=lambda ls, _: ls.filter_ids(""),
        ),
        Case(
            "cypher.whitespace-in-search",
            "empty",
            Ok(found("shop.orders.tax_paid")),
            api=lambda ls, _: ls.search(question="tax", cypher_filter="  \n "),
        ),
        Case(
            "cypher.nul",
            "nul",
            Err(CypherSyntaxError, "unexpected character"),
            api=lambda ls, _: ls.filter_ids("MATCH (n) RETURN n.id AS id\x00"),
        ),
        Case(
            "cypher.1mb",
            "huge",
            Err(CypherLimitError, "over the limit of 20000"),
            api=lambda ls, _: ls.filter_ids("x" * MB),
            cli=("search", "tax", "--filter", "x" * ARGV_BIG),
        ),
        Case(
            "cypher.hops",
            "limits",
            Err(CypherLimitError, "maximum of 6 hops"),
            api=lambda ls, _: ls.filter_ids("MATCH (a)-[*1..100]->(b) RETURN b.id AS id"),
        ),
        Case(
            "cypher.regex",
            "limits",
            Err(CypherLimitError, "nested quantifiers"),
            api=lambda ls, _: ls.filter_ids("MATCH (n) WHERE n.name =~ '(a+)+$' RETURN n.id AS id"),
        ),
        Case(
            "cypher.nesting",
            "nesting",
            Err(CypherLimitError, "nested"),
            api=lambda ls, _: ls.filter_ids(
                "MATCH (n) WHERE " + "(" * 200 + "true" + ")" * 200 + " RETURN n.id AS id"
            ),
        ),
        Case(
            "cypher.not-a-string",
            "malformed",
            Err(CypherSyntaxError, "must be a string"),
            api=lambda ls, _: ls.filter_ids(None),
        ),
        Case(
            "cypher.join-cycle",
            "join-cycle",
            Ok(lambda r: "shop.orders" in r),
            api=lambda ls, _: ls.filter_ids(
                "MATCH (a:Model)-[:JOINS*1..6]-(b:Model) RETURN b.id AS id"
            ),
        ),
    ]
    return c


def _inspect_cases() -> list[Case]:
    return [
        Case(
            "inspect.none",
            "empty",
            Err(ConfigError, "at least one id"),
            api=lambda ls, _: ls.inspect([]),
        ),
        Case(
            "inspect.empty",
            "empty",
            Err(NotFound, "empty entity reference"),
            api=lambda ls, _: ls.inspect([""]),
            cli=("inspect", ""),
        ),
        Case(
            "inspect.1mb",
            "huge",
            Err(NotFound, "unknown entity"),
            api=lambda ls, _: ls.inspect(["x" * MB]),
        ),
        Case(
            "inspect.too-many",
            "limits",
            Err(LimitExceeded, "at most 200"),
            api=lambda ls, _: ls.inspect(["shop"] * 201),
        ),
        Case(
            "inspect.syntax",
            "syntax",
            Err(NotFound, "unknown"),
            api=lambda ls, _: ls.inspect(SYNTAX),
            cli=("inspect", *SYNTAX),
        ),
        Case(
            "inspect.sql",
            "sql",
            Err(NotFound, "unknown"),
            api=lambda ls, _: ls.inspect(SQL),
            cli=("inspect", *SQL),
        ),
        Case(
            "inspect.rlo",
            "invisible",
            Err(ConfigError, "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            api=lambda ls, _: ls.inspect(["shop.orders\u202e"]),
            cli=("inspect", "shop.orders\u202e"),
        ),
        Case(
            "inspect.title-sequence",
            "invisible",
            Err(ConfigError, "U+001B"),
            api=lambda ls, _: ls.inspect(["memory:1", "\x1b]0;owned\x07"]),
            cli=("inspect", "memory:1", "\x1b]0;owned\x07"),
        ),
        Case(
            "inspect.path",
            "path",
            Err(NotFound, "unknown"),
            api=lambda ls, _: ls.inspect(["../../etc/passwd"]),
            cli=("inspect", "../../etc/passwd"),
        ),
        Case(
            "inspect.memory.huge-number",
            "limits",
            Err(NotFound, "not a memory id"),
            api=lambda ls, _: ls.inspect(["memory:" + "9" * 30]),
        ),
        Case(
            "inspect.hidden.by-name",
            "hidden",
            Err(NotFound, "unknown entity 'internal_score'"),
            api=lambda ls, _: ls.inspect(["internal_score"]),
            cli=("inspect", "internal_score"),
        ),
        # named exactly, a hidden entity may be shown (documented in DESIGN.md)
        Case(
            "inspect.hidden.by-id",
            "hidden",
            Ok(lambda r: r.entities[0].hidden),
            api=lambda ls, _: ls.inspect([HIDDEN]),
        ),
        Case(
            "inspect.model.hides-hidden-children",
            "hidden",
            Ok(lambda r: HIDDEN not in r.entities[0].children),
            api=lambda ls, _: ls.inspect(["shop.orders"]),
        ),
    ]


def _memory_cases() -> list[Case]:
    return [
        Case(
            "memory.save.empty",
            "empty",
            Err(ConfigError, "non-empty learning"),
            api=lambda ls, _: ls.save_memory(""),
            cli=("memory", "add", ""),
        ),
        Case(
            "memory.save.whitespace",
            "empty",
            Err(ConfigError, "non-empty learning"),
            api=lambda ls, _: ls.save_memory(" \n\t"),
            cli=("memory", "add", " \n\t"),
        ),
        Case(
            "memory.save.1mb",
            "huge",
            Err(LimitExceeded, "limit is 20000"),
            api=lambda ls, _: ls.save_memory("x" * MB),
            cli=("memory", "add", "x" * ARGV_BIG),
        ),
        Case(
            "memory.save.description-huge",
            "huge",
            Err(ConfigError, "at most 500"),
            api=lambda ls, _: ls.save_memory("note", description="d" * MB),
        ),
        Case(
            "memory.save.nul",
            "nul",
            Ok(lambda m: m.learning == "a\x00b"),
            writes=True,
            api=lambda ls, _: ls.save_memory("a\x00b", entities=["shop.orders"]),
        ),
        Case(
            "memory.save.zero-width-entity",
            "invisible",
            Err(ConfigError, "U+200B"),
            api=lambda ls, _: ls.save_memory("note", entities=["shop.orders\u200b"]),
            cli=("memory", "add", "note", "-e", "shop.orders\u200b"),
        ),
        Case(
            "memory.save.nul-entity",
            "invisible",
            Err(ConfigError, "U+0000"),
            api=lambda ls, _: ls.save_memory("note", entities=["shop.orders\x00"]),
        ),
        # stored as written; every output shows it escaped (issue 42)
        Case(
            "memory.save.control-text",
            "terminal",
            Ok(lambda m: m.learning == f"tax {CONTROL_TEXT}"),
            writes=True,
            api=lambda ls, _: ls.save_memory(f"tax {CONTROL_TEXT}", entities=["shop.orders"]),
            cli=("memory", "add", f"tax {CONTROL_TEXT}", "-e", "shop.orders"),
        ),
        Case(
            "memory.save.unknown-entity",
            "enum",
            Err(ConfigError, "unknown entity 'nope'"),
            api=lambda ls, _: ls.save_memory("note", entities=["nope"]),
            cli=("memory", "add", "note", "-e", "nope"),
        ),
        Case(
            "memory.save.hidden-entity",
            "hidden",
            Err(ConfigError, "unknown entity"),
            api=lambda ls, _: ls.save_memory("note", entities=[HIDDEN]),
            cli=("memory", "add", "note", "-e", HIDDEN),
        ),
        Case(
            "memory.save.sql-entity",
            "sql",
            Err(ConfigError, "unknown entity"),
            api=lambda ls, _: ls.save_memory("note", entities=[SQL[4]]),
            cli=("memory", "add", "note", "-e", SQL[4]),
        ),
        Case(
            "memory.save.sql-text",
            "sql",
            Ok(lambda m: m.learning == SQL[4]),
            writes=True,
            api=lambda ls, _: ls.save_memory(SQL[4], entities=["shop.orders"]),
            cli=("memory", "add", SQL[4], "-e", "shop.orders"),
        ),
        Case(
            "memory.save.query-deep",
            "nesting",
            Err(LimitExceeded, "nested deeper"),
            api=lambda ls, _: ls.save_memory("note", query=_deep(40)),
            cli=("memory", "add", "note", "--query", DEEP_JSON),
        ),
        Case(
            "memory.save.query-not-object",
            "malformed",
            Err(ConfigError, "JSON object"),
            api=lambda ls, _: ls.save_memory("note", query=[1]),
            cli=("memory", "add", "note", "--query", "[1]"),
        ),
        Case(
            "memory.save.query-non-json",
            "malformed",
            Err(ConfigError, "only JSON values"),
            api=lambda ls, _: ls.save_memory("note", query={"a": {1, 2}}),
        ),
        Case(
            "memory.save.query-nan",
            "malformed",
            Err(ConfigError, "only JSON values"),
            api=lambda ls, _: ls.save_memory("note", query={"a": float("nan")}),
            cli=("memory", "add", "note", "--query", '{"a": NaN}'),
        ),
        Case(
            "memory.save.query-bad-json",
            "malformed",
            Err(ConfigError, "not valid JSON"),
            cli=("memory", "add", "note", "--query", "{'single': 'quotes'}"),
        ),
        Case(
            "memory.save.query-unresolved",
            "enum",
            Err(ConfigError, "cannot save"),
            api=lambda ls, _: ls.save_memory("note", query={"measures": ["nope_measure"]}),
        ),
        Case(
            "memory.get.empty",
            "empty",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.get_memory(""),
            cli=("memory", "show", ""),
        ),
        Case(
            "memory.get.none",
            "malformed",
            Err(ConfigError, "not NoneType"),
            api=lambda ls, _: ls.get_memory(None),
        ),
        Case(
            "memory.get.missing",
            "enum",
            Err(NotFound, "no memory memory:999"),
            api=lambda ls, _: ls.get_memory("memory:999"),
            cli=("memory", "show", "memory:999"),
        ),
        Case(
            "memory.get.sql",
            "sql",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.get_memory("1 OR 1=1"),
            cli=("memory", "show", "1 OR 1=1"),
        ),
        Case(
            "memory.get.unicode-digits",
            "malformed",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.get_memory("memory:²"),
            cli=("memory", "show", "memory:²"),
        ),
        Case(
            "memory.get.huge-number",
            "limits",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.get_memory("memory:" + "9" * 30),
            cli=("memory", "show", "memory:" + "9" * 30),
        ),
        Case(
            "memory.get.rlo",
            "invisible",
            Err(ConfigError, "memory id 'memory:1\\u202e'"),
            api=lambda ls, _: ls.get_memory("memory:1\u202e"),
            cli=("memory", "show", "memory:1\u202e"),
        ),
        Case(
            "memory.forget.zero-width",
            "invisible",
            Err(ConfigError, "U+200D"),
            api=lambda ls, _: ls.forget_memory("memory:\u200d1"),
            cli=("memory", "forget", "memory:\u200d1"),
        ),
        Case(
            "memory.get.path",
            "path",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.get_memory("memory:../1"),
            cli=("memory", "show", "memory:../1"),
        ),
        Case(
            "memory.forget.missing",
            "enum",
            Err(NotFound, "no memory memory:999"),
            api=lambda ls, _: ls.forget_memory("memory:999"),
            cli=("memory", "forget", "memory:999"),
        ),
        Case(
            "memory.forget.negative",
            "limits",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.forget_memory("memory:-1"),
            cli=("memory", "forget", "memory:-1"),
        ),
        Case(
            "memory.forget.wildcard",
            "sql",
            Err(ConfigError, "not a memory id"),
            api=lambda ls, _: ls.forget_memory("%"),
            cli=("memory", "forget", "%"),
        ),
        Case(
            "memory.list.negative",
            "limits",
            Err(ConfigError, "limit ≥ 1"),
            api=lambda ls, _: ls.list_memories(limit=-1),
            cli=("memory", "list", "--limit", "-1"),
        ),
        Case(
            "memory.list.zero",
            "limits",
            Err(ConfigError, "limit ≥ 1"),
            api=lambda ls, _: ls.list_memories(limit=0),
            cli=("memory", "list", "--limit", "0"),
        ),
        Case(
            "memory.list.offset-negative",
            "limits",
            Err(ConfigError, "offset ≥ 0"),
            api=lambda ls, _: ls.list_memories(offset=-5),
            cli=("memory", "list", "--offset", "-5"),
        ),
        Case(
            "memory.list.huge",
            "limits",
            Ok(lambda r: len(r) >= 4),
            api=lambda ls, _: ls.list_memories(limit=10**30),
            cli=("memory", "list", "--limit", str(10**30)),
        ),
        Case(
            "memory.list.huge-offset",
            "limits",
            Ok(lambda r: r == []),
            api=lambda ls, _: ls.list_memories(offset=10**30),
        ),
        Case(
            "memory.list.not-int",
            "malformed",
            Err(ConfigError, "must be integers"),
            api=lambda ls, _: ls.list_memories(limit="5"),
        ),
    ]


def _load_cases() -> list[Case]:
    def load(sub: str = "", fmt: str = "auto") -> Api:
        return lambda ls, d: ls.load(d / sub if sub else d, fmt)

    return [
        Case(
            "load.path.empty",
            "empty",
            Err(ConfigError, "empty"),
            api=lambda ls, _: ls.load(""),
            cli=("load", ""),
        ),
        Case(
            "load.path.missing",
            "path",
            Err(ModelLoadError, "no such file"),
            api=lambda ls, d: ls.load(d / "nope"),
            cli=("load", "{dir}/nope"),
        ),
        Case(
            "load.path.dotdot",
            "path",
            Err(ModelLoadError, "no such file"),
            api=lambda ls, d: ls.load(d / ".." / ".." / "no-such-dir-anywhere"),
            cli=("load", "{dir}/../../no-such-dir-anywhere"),
        ),
        Case(
            "load.path.nul",
            "nul",
            Err(ModelLoadError, "no such file"),
            api=lambda ls, d: ls.load(f"{d}/a\x00b"),
        ),
        Case(
            "load.format.unknown",
            "enum",
            Err(ConfigError, "unknown format"),
            api=load(fmt="bogus"),
            files={"d.yaml": NATIVE_DS},
        ),
        Case(
            "load.format.unknown-cli",
            "enum",
            Err(ConfigError, "Invalid value"),
            cli=("load", "{dir}", "--format", "bogus"),
            files={"d.yaml": NATIVE_DS},
        ),
        Case(
            "load.empty-dir",
            "empty",
            Err(ModelLoadError, "no YAML, LookML or Cube files"),
            api=load("empty"),
            cli=("load", "{dir}/empty"),
            files={"empty/.keep": ""},
        ),
        Case(
            "load.utf8-invalid",
            "encoding",
            Err(ModelLoadError, "not valid UTF-8"),
            api=load(),
            cli=("load", "{dir}"),
            files={"d.yaml": NATIVE_DS.encode() + b"  description: \xff\xfe\n"},
        ),
        Case(
            "load.yaml-nul",
            "nul",
            Err(ModelLoadError, "invalid YAML"),
            api=load(),
            files={"d.yaml": NATIVE_DS + "  description: a\x00b\n"},
        ),
        Case(
            "load.yaml-malformed",
            "malformed",
            Err(ModelLoadError, "d.yaml:2:1: invalid YAML"),
            api=load(),
            cli=("load", "{dir}"),
            files={"d.yaml": "datasource: [\n"},
        ),
        Case(
            "load.yaml-python-tag",
            "malformed",
            Err(ModelLoadError, "invalid YAML"),
            api=load(),
            files={"d.yaml": "datasource: !!python/object/apply:os.system ['true']\n"},
        ),
        Case(
            "load.yaml-not-mapping",
            "malformed",
            Err(ModelLoadError, "no recognisable"),
            api=load(),
            files={"d.yaml": "- just\n- a list\n"},
        ),
        Case(
            "load.yaml-wrong-types",
            "malformed",
            Err(ModelLoadError, "'columns' must be a list"),
            api=load(),
            files={"d.yaml": NATIVE_DS.replace("[{name: id}]", "5")},
        ),
        *[
            Case(
                f"load.yaml-deep-{name}",
                "nesting",
                Err(ModelLoadError, "nested too deeply"),
                api=lambda ls, d: ls.load(d),
                cli=("load", "{dir}"),
                files={"d.yaml": text},
            )
            for name, text in [
                ("flow", "[" * 100_000 + "]" * 100_000),
                ("block", "- " * 30_000 + "x\n"),
                ("map", "datasource: " + "{a: " * 30_000 + "1" + "}" * 30_000 + "\n"),
            ]
        ],
        Case(
            "load.json-malformed",
            "malformed",
            Err(ModelLoadError, "invalid JSON"),
            api=load("tables.json", "spider"),
            cli=("load", "{dir}/tables.json", "--format", "spider"),
            files={"tables.json": "{not json"},
        ),
        Case(
            "load.json-utf8-invalid",
            "encoding",
            Err(ModelLoadError, "not valid UTF-8"),
            api=load("tables.json", "spider"),
            files={"tables.json": b'["\xff"]'},
        ),
        Case(
            "load.database-garbage",
            "malformed",
            Err(ModelLoadError, "cannot open"),
            api=load("x.duckdb", "database"),
            files={"x.duckdb": b"garbage" * 100},
        ),
        Case(
            "load.name-sql",
            "sql",
            Err(ModelLoadError, "may not contain"),
            api=load(),
            files={"d.yaml": 'datasource: {name: "x\'; DROP TABLE entities; --"}\n'},
        ),
        Case(
            "load.name-rlo",
            "invisible",
            Err(ModelLoadError, "column id 'shop.a.id\\u202e' holds an invisible character"),
            api=load(),
            cli=("load", "{dir}"),
            files={"d.yaml": NATIVE_DS.replace("{name: id}", '{name: "id\\u202e"}')},
        ),
        Case(
            "load.name-zero-width-joiner",
            "invisible",
            Err(ModelLoadError, "U+200D (ZERO WIDTH JOINER)"),
            api=load(),
            files={"d.yaml": NATIVE_DS.replace("model: a", 'model: "a\\u200d"')},
        ),
        *[
            Case(
                f"load.dsn-{name}",
                "secret",
                Err(ModelLoadError, "alice:***@"),
                api=lambda ls, _, d=dsn: ls.load(d),
                cli=("load", dsn),
            )
            for name, dsn in BAD_DSNS.items()
        ],
        Case(
            "store.dsn-malformed",
            "secret",
            Err(StoreError, "alice:***@[::1:bad/db"),
            api=lambda ls, _: Layersearch(BAD_DSNS["ipv6-unclosed"]),
        ),
        Case(
            "store.dsn-bad-escape",
            "secret",
            Err(StoreError, "invalid percent-encoded token"),
            api=lambda ls, _: Layersearch(BAD_DSNS["percent-zz"]),
        ),
        Case(
            "load.name-dotdot",
            "path",
            Err(ModelLoadError, "may not contain"),
            api=load(),
            files={"d.yaml": "datasource: {name: ../etc}\n"},
        ),
        Case(
            "load.duplicate-datasource",
            "duplicates",
            Err(ModelLoadError, "duplicate datasource"),
            api=load(),
            cli=("load", "{dir}"),
            files={"a.yaml": "datasource: {name: shop}\n", "b.yaml": "datasource: {name: shop}\n"},
        ),
        Case(
            "load.duplicate-model",
            "duplicates",
            Err(ModelLoadError, "duplicate model"),
            api=load(),
            files={
                "d.yaml": "datasource: {name: shop}\n",
                "a.yaml": "model: t\ndatasource: shop\ncolumns: [{name: a}]\n",
                "b.yaml": "model: t\ndatasource: shop\ncolumns: [{name: b}]\n",
            },
        ),
        Case(
            "load.duplicate-column",
            "duplicates",
            Err(ModelLoadError, "duplicate name 'id'"),
            api=load(),
            files={"d.yaml": NATIVE_DS.replace("[{name: id}]", "[{name: id}, {name: id}]")},
        ),
        Case(
            "load.join-unknown",
            "join-cycle",
            Err(ModelLoadError, "join to unknown model"),
            api=load(),
            files={"d.yaml": NATIVE_DS + "      joins: [{to: zzz, on: [[id, id]]}]\n"},
        ),
        Case(
            "load.memory-query-deep",
            "nesting",
            Err(LimitExceeded, "m.yaml memories[0]"),
            api=load(),
            files={
                "d.yaml": NATIVE_DS,
                "m.yaml": "memories: [{learning: hi, query: " + DEEP_JSON + "}]\n",
            },
        ),
        Case(
            "load.memory-query-date",
            "malformed",
            Err(ConfigError, "only JSON values"),
            api=load(),
            cli=("load", "{dir}"),
            files={
                "d.yaml": NATIVE_DS,
                "m.yaml": "memories: [{learning: hi, query: {since: 2024-01-01}}]\n",
            },
        ),
        Case(
            "load.dbt-manifest-malformed",
            "malformed",
            Err(ModelLoadError, "manifest.json:1:"),
            api=load("target/manifest.json", "dbt-manifest"),
            cli=("load", "{dir}/target/manifest.json", "--format", "dbt-manifest"),
            files={"target/manifest.json": '{"metadata": {"dbt_schema_version": '},
        ),
        Case(
            "load.dbt-manifest-not-manifest",
            "malformed",
            Err(ModelLoadError, "not a dbt manifest"),
            api=load("target", "dbt-manifest"),
            files={"target/manifest.json": '{"metadata": {}, "nodes": []}'},
        ),
        Case(
            "load.dbt-manifest-utf8-invalid",
            "encoding",
            Err(ModelLoadError, "not valid UTF-8"),
            api=load("manifest.json", "dbt-manifest"),
            files={"manifest.json": b'{"metadata": "\xff"}'},
        ),
        Case(
            "load.cube-js-malformed",
            "malformed",
            Err(ModelLoadError, "Orders.js:2:"),
            api=load(),
            cli=("load", "{dir}", "--format", "cube"),
            files={"Orders.js": "cube(`Orders`, {\n  title: 'unclosed\n});\n"},
        ),
        Case(
            "load.cube-js-unclosed-object",
            "malformed",
            Err(ModelLoadError, "unclosed '{'"),
            api=load("", "cube"),
            files={"Orders.js": "cube(`Orders`, { sql_table: `orders`,\n"},
        ),
        Case(
            "load.cube-js-stray-closer",
            "malformed",
            Err(ModelLoadError, "Orders.js:2:1: unexpected ')'"),
            api=load("", "cube"),
            files={"Orders.js": "cube(`Orders`, { sql_table: `orders` });\n)\n"},
        ),
        Case(
            "load.cube-js-deep",
            "nesting",
            Err(ModelLoadError, "nested over 100 deep"),
            api=load("", "cube"),
            files={"Deep.js": "cube(`D`, " + "{a: " * 150 + "1" + "}" * 150 + ");\n"},
        ),
        Case(
            "load.cube-yaml-wrong-types",
            "malformed",
            Err(ModelLoadError, "expected a mapping with a name"),
            api=load(),
            files={"c.yml": "cubes:\n  - just a string\n"},
        ),
        Case(
            "load.lookml-malformed",
            "malformed",
            Err(ModelLoadError, "a.model.lkml:2:"),
            api=load(),
            cli=("load", "{dir}"),
            files={"a.model.lkml": "view: a {\n  dimension: b {\n"},
        ),
        Case(
            "load.lookml-sql-unterminated",
            "malformed",
            Err(ModelLoadError, "is not closed by ';;'"),
            api=load(),
            files={"a.model.lkml": "view: a {\n  sql_table_name: t\n}\n"},
        ),
        Case(
            "load.lookml-deep",
            "nesting",
            Err(ModelLoadError, "nested over 50 deep"),
            api=load(),
            files={"a.model.lkml": "x: {\n" * 60 + "}\n" * 60},
        ),
        Case(
            "load.osi-wrong-types",
            "malformed",
            Err(ModelLoadError, "'datasets' must be a list"),
            api=load(),
            files={"m.yaml": "semantic_model:\n  - name: s\n    datasets: 5\n"},
        ),
        Case(
            "load.memory-missing-learning",
            "malformed",
            Err(ModelLoadError, "missing required key"),
            api=load(),
            files={"d.yaml": NATIVE_DS, "m.yaml": "memories: [{entities: [shop.a]}]\n"},
        ),
    ]


#: Loads that succeed change the store, so they run against a throwaway store of their own.
LOAD_OK: list[Case] = [
    Case(
        "load.join-cycle",
        "join-cycle",
        Ok(lambda r: r.models == 2),
        writes=True,
        api=lambda ls, d: ls.load(d),
        cli=("load", "{dir}"),
        files={
            "d.yaml": (
                "datasource:\n  name: cyc\n  models:\n"
                "    - model: a\n      columns: [{name: id}]\n      joins: [{to: b, on: [[id, id]]}]\n"
                "    - model: b\n      columns: [{name: id}]\n      joins: [{to: a, on: [[id, id]]}]\n"
            )
        },
    ),
    Case(
        "load.self-join",
        "join-cycle",
        Ok(lambda r: r.models == 1),
        writes=True,
        api=lambda ls, d: ls.load(d),
        files={
            "d.yaml": (
                "datasource:\n  name: cyc\n  models:\n    - model: a\n"
                "      columns: [{name: id}, {name: parent}]\n      joins: [{to: a, on: [[parent, id]]}]\n"
            )
        },
    ),
    Case(
        "load.bom",
        "encoding",
        Ok(lambda r: r.datasources == ["bom"]),
        writes=True,
        api=lambda ls, d: ls.load(d),
        files={"d.yaml": "\ufeffdatasource: {name: bom}\n".encode()},
    ),
]


def _skipped(*parts: str) -> Callable[[Any], bool]:
    """A load report whose skipped list names every one of ``parts``."""
    return lambda r: all(any(p in s for s in r.skipped) for p in parts)


#: JavaScript outside the subset the Cube reader takes as data: reported, never run
JS_CODE = (
    "const exec = require('child_process').exec;\n"
    "exec('touch pwned');\n"
    "eval(\"cube('Evil', {})\");\n"
    "const f = (x) => x * 2;\n"
    "(function () { require('fs').writeFileSync('pwned', 'x') })();\n"
    "cube(`A`, { sql_table: `a`, dimensions: { id: { sql: `id`, type: `number` },\n"
    "  b: f({ sql: `b` }) } });\n"
)

LOAD_OK += [
    Case(
        "load.cube-js-code",
        "code",
        Ok(
            lambda r: (
                r.models == 1
                and _skipped(
                    "A.js:1: require('child_process') is not a file of this model folder",
                    "A.js:2: a call to exec(): not read",
                    "A.js:3: a call to eval(): not read",
                    "A.js:4: const f = a parenthesised expression or arrow function",
                    "A.js:5: a parenthesised expression",
                    "A.js:7: dimension 'b' of cube A is a call to f()",
                )(r)
            )
        ),
        writes=True,
        api=lambda ls, d: ls.load(d),
        cli=("load", "{dir}"),
        files={"A.js": JS_CODE},
    ),
    Case(
        "load.cube-require-escape",
        "path",
        Ok(lambda r: r.models == 1 and _skipped("leaves the model folder")(r)),
        writes=True,
        api=lambda ls, d: ls.load(d / "proj", "cube"),
        files={
            "secret.js": "module.exports = { s: 'x' };\n",
            "proj/A.js": "const s = require('../secret').s;\ncube(`A`, { sql: s });\n",
        },
    ),
    Case(
        "load.cube-require-loop",
        "join-cycle",
        Ok(lambda r: r.models == 1 and _skipped("require loop")(r)),
        writes=True,
        api=lambda ls, d: ls.load(d, "cube"),
        files={
            "a.js": "const b = require('./b');\nmodule.exports = { a: 1 };\n",
            "b.js": "const a = require('./a');\nmodule.exports = { b: 2 };\n",
            "C.js": "const a = require('./a');\ncube(`C`, { sql_table: `c` });\n",
        },
    ),
    Case(
        "load.lookml-include-loop",
        "join-cycle",
        Ok(lambda r: r.models == 2 and _skipped("include loop")(r)),
        writes=True,
        api=lambda ls, d: ls.load(d),
        cli=("load", "{dir}"),
        files={
            "m.model.lkml": 'include: "/a.view.lkml"\n',
            "a.view.lkml": 'include: "b.view.lkml"\nview: a { dimension: id {} }\n',
            "b.view.lkml": 'include: "/a.view.lkml"\nview: b { dimension: id {} }\n',
        },
    ),
    Case(
        "load.lookml-include-escape",
        "path",
        Ok(lambda r: r.models == 1 and _skipped("leaves the project folder")(r)),
        writes=True,
        api=lambda ls, d: ls.load(d / "proj"),
        cli=("load", "{dir}/proj"),
        files={
            "outside.view.lkml": "view: outside { dimension: a {} }\n",
            "proj/m.model.lkml": (
                'include: "../outside.view.lkml"\ninclude: "/../../../../etc/*"\n'
                'include: "/v.view"\n'
            ),
            "proj/v.view.lkml": "view: v { dimension: id {} }\n",
        },
    ),
    Case(
        "load.lookml-include-missing",
        "path",
        Ok(lambda r: r.models == 1 and _skipped("/nope/*.view.lkml': no such file")(r)),
        writes=True,
        api=lambda ls, d: ls.load(d),
        files={
            "m.model.lkml": 'include: "/nope/*.view.lkml"\ninclude: "/v.view"\n',
            "v.view.lkml": "view: v { dimension: id {} }\n",
        },
    ),
]
# -- unbounded work from one request (issue 20, findings 1-4) ---------------------------------

#: catastrophic regular expressions the quantifier guard refuses: chained bounded
#: quantifiers, on characters, classes and groups, and three .* plus a bounded repeat
CHAINED_REGEXES = [
    "a{0,2000}a{0,2000}a{0,2000}a{0,2000}b",
    "[a-z]{0,500}[a-z]{0,500}[a-z]{0,500}[a-z]{0,500}[a-z]{0,500}!",
    "(?:ab){0,300}(?:ab){0,300}(?:ab){0,300}(?:ab){0,300}x",
    ".*.*.*a{0,9}b",
    "[0-9]{0,100}[0-9]{0,100}[0-9]{0,100}[0-9]{0,100}[0-9]{0,100}[0-9]{0,100}$",
]
#: expressions deeper than MAX_EXPRESSION_DEPTH: each operator chain the parser builds
#: with a loop rather than recursion
DEEP_EXPRESSIONS = {
    "or": "true OR " * 600 + "true",
    "xor": "true XOR " * 300 + "true",
    "and": "true AND " * 300 + "true",
    "plus": "1 + " * 500 + "1 > 0",
    "concat": "'a' + " * 300 + "'a' = 'a'",
    "power": "2 ^ " * 300 + "1 > 0",
    "in": "1 IN " * 300 + "[1]",
    "less": "1 < " * 300 + "2",
    "index": "[1]" + "[0]" * 300 + " = 1",
    "contains": "'a' CONTAINS " * 300 + "'a'",
    "is-null": "n.name" + " IS NULL" * 300,
}
#: WITH chains that grow a value past its bound: integer squaring, string and list doubling
GROWING = {
    "int-square": ("3 AS x", "x * x AS x", 30, "MAX_INT_BITS"),
    "int-add": ("9223372036854775807 AS x", "x + x AS x", 2, "MAX_INT_BITS"),
    "int-negate": ("-9223372036854775807 - 1 AS x", "-x AS x", 1, "MAX_INT_BITS"),
    "string-double": ("'ab' AS x", "x + x AS x", 28, "MAX_STRING_CHARS"),
    "list-double": ("[1, 2] AS x", "x + x AS x", 28, "MAX_LIST_ITEMS"),
    "list-of-strings": ("['ab'] AS x", "x + x + x AS x", 12, "MAX_LIST_ITEMS"),
}


def _nest(levels: int, leaf: Any = 1, kind: str = "list") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value] if kind == "list" else {"k": value}
    return value


def _filter(where: str) -> str:
    return f"MATCH (n) WHERE {where} RETURN n.id AS id"


def _compute_cases() -> list[Case]:
    c: list[Case] = []
    for i, pattern in enumerate(CHAINED_REGEXES):
        text = f"MATCH (n) WHERE n.name =~ '{pattern}' RETURN n.id AS id"
        c.append(
            Case(
                f"compute.regex-chain-{i}",
                "compute",
                Err(CypherLimitError, "MAX_REGEX_WORK"),
                api=lambda ls, _, t=text: ls.search(question="tax", cypher_filter=t),
                cli=("search", "tax", "--filter", text),
            )
        )
    # the same pattern as a parameter, over a long value
    c.append(
        Case(
            "compute.regex-chain-param",
            "compute",
            Err(CypherLimitError, "MAX_REGEX_WORK"),
            api=lambda ls, _: ls.filter_ids(
                "MATCH (n) WHERE $s =~ $re RETURN n.id AS id",
                {"s": "a" * 800, "re": CHAINED_REGEXES[0]},
            ),
        )
    )
    for name, where in DEEP_EXPRESSIONS.items():
        text = _filter(where)
        c.append(
            Case(
                f"compute.deep-{name}",
                "compute",
                Err(CypherLimitError, "MAX_EXPRESSION_DEPTH"),
                api=lambda ls, _, t=text: ls.filter_ids(t),
                cli=("search", "tax", "--filter", text),
            )
        )
    long_path = "MATCH (a)" + "-->()" * 1500 + " RETURN a.id AS id"
    many = "MATCH " + ", ".join(f"(n{i})" for i in range(40)) + " RETURN n0.id AS id"
    predicate = _filter("(n)" + "-->()" * 200)
    for name, text, limit in [
        ("path-1500", long_path, "MAX_PATTERN_LENGTH"),
        ("path-predicate", predicate, "MAX_PATTERN_LENGTH"),
        ("patterns-40", many, "MAX_PATTERNS"),
    ]:
        c.append(
            Case(
                f"compute.{name}",
                "compute",
                Err(CypherLimitError, limit),
                api=lambda ls, _, t=text: ls.filter_ids(t),
                cli=("search", "tax", "--filter", text),
            )
        )
    for name, (start, step, times, limit) in GROWING.items():
        text = f"MATCH (n:Datasource) WITH n, {start} " + f"WITH n, {step} " * times
        text += "RETURN n.id AS id"
        c.append(
            Case(
                f"compute.grow-{name}",
                "compute",
                Err(CypherLimitError, limit),
                api=lambda ls, _, t=text: ls.search(question="tax", cypher_filter=t),
                cli=("search", "tax", "--filter", text),
            )
        )
    # a bounded value is still a value: the largest integer, a string under the bound
    c.append(
        Case(
            "compute.grow-within-bounds",
            "compute",
            Ok(lambda r: "shop" in r),
            api=lambda ls, _: ls.filter_ids(
                "MATCH (n:Datasource) WITH n, 4611686018427387903 * 2 + 1 AS x, "
                "'ab' AS s WITH n, x, s + s + s AS s "
                "WHERE x = 9223372036854775807 AND size(s) = 6 RETURN n.id AS id"
            ),
        )
    )
    # params arrive parsed (Python API, MCP): nesting and integer bounds apply to them too
    for name, value, match in [
        ("params-deep-list", _nest(100_000), "MAX_JSON_DEPTH"),
        ("params-deep-map", _nest(100_000, kind="map"), "MAX_JSON_DEPTH"),
        ("params-65-deep", _nest(65), "MAX_JSON_DEPTH"),
        ("params-int-huge", 10**5000, "does not fit in 64 bits"),
        ("params-int-65-bits", [2**64], "does not fit in 64 bits"),
    ]:
        c.append(
            Case(
                f"compute.{name}",
                "nesting",
                Err(CypherLimitError, match),
                api=lambda ls, _, v=value: ls.search(
                    question="tax",
                    cypher_filter="MATCH (n) WHERE $p IS NOT NULL RETURN n.id AS id",
                    params={"p": v},
                ),
            )
        )
    c.append(
        Case(
            "compute.params-64-deep-ok",
            "nesting",
            Ok(lambda r: "shop" in r),
            api=lambda ls, _: ls.filter_ids(
                "MATCH (n:Datasource) WHERE $p IS NOT NULL RETURN n.id AS id", {"p": _nest(63)}
            ),
        )
    )
    return c


DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a": ' * 1000 + "1" + "}" * 1000
BIG_INT = "1" * 4301


def _json_cases() -> list[Case]:
    """JSON arguments and files: depth and integer bounds at every entry point."""
    c: list[Case] = []
    for name, text, match in [
        ("deep-array", DEEP_ARRAY, "MAX_JSON_DEPTH"),
        ("deep-object", DEEP_OBJECT, "MAX_JSON_DEPTH"),
        ("deep-50k", "[" * 50_000 + "]" * 50_000, "MAX_JSON_DEPTH"),
        ("int-4301", '{"measures": [' + BIG_INT + "]}", "MAX_JSON_INT_DIGITS"),
        ("int-101", '{"limit": -' + "9" * 101 + "}", "MAX_JSON_INT_DIGITS"),
    ]:
        c.append(
            Case(
                f"json.query-{name}",
                "json",
                Err(LimitExceeded, match),
                cli=("search", "--query", text),
            )
        )
        c.append(
            Case(
                f"json.memory-query-{name}",
                "json",
                Err(LimitExceeded, match),
                cli=("memory", "add", "note", "--query", text),
            )
        )
        c.append(
            Case(
                f"json.param-{name}",
                "json",
                Err(LimitExceeded, f"--param x: {'nested' if 'deep' in name else 'an integer'}"),
                cli=(
                    "search",
                    "tax",
                    "--filter",
                    "MATCH (n) WHERE $x IS NOT NULL RETURN n.id AS id",
                    "--param",
                    f"x={text}",
                ),
            )
        )
    for name, text, match in [
        ("deep", DEEP_ARRAY, "MAX_JSON_DEPTH"),
        ("int", '[{"db_id": ' + BIG_INT + "}]", "MAX_JSON_INT_DIGITS"),
    ]:
        c.append(
            Case(
                f"json.spider-{name}",
                "json",
                Err(ModelLoadError, match),
                api=lambda ls, d: ls.load(d / "tables.json", "spider"),
                cli=("load", "{dir}/tables.json", "--format", "spider"),
                files={"tables.json": text},
            )
        )
    return c


#: the reported inputs of one client slowing every other (issue 42): a regex over a
#: concatenation across a cartesian product, and a 99,990-character question
REPORTED_FILTER = "MATCH (m:Memory),(a) WHERE m.learning + a.name =~ '.*a.*a.*a!' RETURN a.id AS id"
PAIRS_FILTER = "MATCH (a),(b) WHERE a.name + b.name + a.id =~ '.*a.*a.*a!' RETURN a.id AS id"
LONG_QUESTION = " ".join(f"net revenue{i} by store" for i in range(5_000))[:99_990]
#: one word of 60,000 characters: the cut has no space to fall on
ONE_WORD = "orders" * 10_000


def _cost_cases() -> list[Case]:
    """Calls whose cost one client could make unbounded: each ends, bounded, with the
    bound said (the analysed length of a question) or a clean result."""
    analysed = Ok(warning="MAX_ANALYSED_CHARS")
    return [
        Case(
            "cost.question.99990",
            "cost",
            analysed,
            api=lambda ls, _: ls.search(question=LONG_QUESTION),
            cli=("search", LONG_QUESTION),
        ),
        Case(
            "cost.question.99990.scope-all",
            "cost",
            analysed,
            api=lambda ls, _: ls.search(question=LONG_QUESTION, scope="all"),
            cli=("search", LONG_QUESTION, "--scope", "all"),
        ),
        Case(
            "cost.question.one-60000-char-word",
            "cost",
            analysed,
            api=lambda ls, _: ls.search(question=ONE_WORD, scope="all"),
            cli=("search", ONE_WORD),
        ),
        Case(
            "cost.filter.regex-over-concat-cartesian",
            "cost",
            Ok(warning="matched no entities"),
            api=lambda ls, _: ls.search(question="tax", cypher_filter=REPORTED_FILTER),
            cli=("search", "tax", "--filter", REPORTED_FILTER),
        ),
        Case(
            "cost.filter.regex-over-concat-node-pairs",
            "cost",
            Ok(warning="matched no entities"),
            api=lambda ls, _: ls.search(question="tax", cypher_filter=PAIRS_FILTER),
            cli=("search", "tax", "--filter", PAIRS_FILTER),
        ),
    ]


CASES: list[Case] = (
    _search_cases()
    + _cypher_cases()
    + _inspect_cases()
    + _memory_cases()
    + _load_cases()
    + _compute_cases()
    + _json_cases()
    + _cost_cases()
)


def by_entry(entry: str, cases: list[Case] | None = None) -> list[Case]:
    return [c for c in (CASES if cases is None else cases) if getattr(c, entry) is not None]


def write_files(case: Case, root: Path) -> Path:
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


# -- conversations, summaries, vault ---------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONVERSATIONS = FIXTURES / "conversations"
#: ``--embedder fake`` goes before the subcommand of every corpus CLI row.
CORPUS_CLI_PREFIX = ("--embedder", "fake")


def build_corpus_store(path: Path) -> None:
    """``fixtures/mini`` + two conversation exports + summaries (with vectors) + the vault."""
    with Layersearch(path, embedder="fake") as ls:
        ls.load(FIXTURES / "mini")
        ls.conversations.import_path(CONVERSATIONS / "generic" / "messages.jsonl")
        ls.conversations.import_path(CONVERSATIONS / "claude" / "conversations.json")
        ls.conversations.import_summaries(CONVERSATIONS / "summaries.jsonl")
        ls.conversations.embed()
        ls.vault.index(FIXTURES / "vault")


def hits(n: int = 1) -> Callable[[Any], bool]:
    return lambda r: len(r.hits) >= n


def no_hits(r: Any) -> bool:
    return r.hits == [] and "No " in r.markdown


GOOD_JSONL = '{"conversation_id": "c1", "role": "user", "content": "hello there"}\n'
NOTE = "---\ntitle: A note\ntags: [x]\n---\n# A note\n\nSome words about revenue.\n"


def _conversation_cases() -> list[Case]:
    conv = lambda ls: ls.conversations  # noqa: E731
    c: list[Case] = [
        # % and _ are characters, not LIKE wildcards (issue 42): no message holds a %
        Case(
            "conv.search.percent",
            "sql",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations("%"),
            cli=("conversations", "search", "%"),
        ),
        Case(
            "conv.search.underscore",
            "sql",
            Ok(lambda r: bool(r.hits) and all("_" in h.preview for h in r.hits)),
            api=lambda ls, _: conv(ls).search_conversations("_"),
            cli=("conversations", "search", "_"),
        ),
        Case(
            "conv.search.percent-between-words",
            "sql",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations("gross%mrr"),
            cli=("conversations", "search", "gross%mrr"),
        ),
        Case(
            "conv.search.control-text",
            "terminal",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations(CONTROL_TEXT),
            cli=("conversations", "search", CONTROL_TEXT),
        ),
        Case(
            "conv.search.quote",
            "sql",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations("' OR '1'='1"),
            cli=("conversations", "search", "' OR '1'='1"),
        ),
        Case(
            "conv.search.drop",
            "sql",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations("x'; DROP TABLE messages; --"),
            cli=("conversations", "search", "x'; DROP TABLE messages; --"),
        ),
        Case(
            "conv.search.nul",
            "nul",
            Ok(no_hits),
            api=lambda ls, _: conv(ls).search_conversations("a\x00b"),
        ),
        Case(
            "conv.search.1mb",
            "huge",
            Err(LimitExceeded, "the limit is 100000"),
            api=lambda ls, _: conv(ls).search_conversations("x" * MB),
            cli=("conversations", "search", "y" * ARGV_BIG),
        ),
        Case(
            "conv.semantic.1mb",
            "huge",
            Err(LimitExceeded, "the limit is 100000"),
            api=lambda ls, _: conv(ls).semantic_search("x" * MB),
        ),
        Case(
            "conv.summaries.1mb",
            "huge",
            Err(LimitExceeded, "the limit is 100000"),
            api=lambda ls, _: conv(ls).search_summaries("x" * MB),
        ),
        Case(
            "conv.search.role",
            "enum",
            Err(ConfigError, "valid values are user, assistant"),
            api=lambda ls, _: conv(ls).search_conversations("x", role="system"),
            cli=("conversations", "search", "x", "--role", "system"),
        ),
        Case(
            "conv.search.term-none",
            "malformed",
            Err(ConfigError, "term must be a string"),
            api=lambda ls, _: conv(ls).search_conversations(None),
        ),
        Case(
            "conv.search.limit-text",
            "limits",
            Err(ConfigError, "not a valid integer"),
            cli=("conversations", "search", "x", "-n", "ten"),
        ),
        Case(
            "conv.semantic.empty",
            "empty",
            Err(ConfigError, "non-empty query"),
            api=lambda ls, _: conv(ls).semantic_search(" "),
            cli=("conversations", "semantic", ""),
        ),
        Case(
            "conv.semantic.nul",
            "nul",
            Ok(hits()),
            api=lambda ls, _: conv(ls).semantic_search("revenue\x00"),
        ),
        Case(
            "conv.semantic.sql",
            "sql",
            Ok(hits()),
            api=lambda ls, _: conv(ls).semantic_search("'; DROP TABLE messages; --"),
            cli=("conversations", "semantic", "'; DROP TABLE messages; --"),
        ),
        Case(
            "conv.import.missing",
            "path",
            Err(NotFound, "no such file"),
            api=lambda ls, d: conv(ls).import_path(d / "nope.jsonl"),
            cli=("conversations", "import", "{dir}/nope.jsonl"),
        ),
        Case(
            "conv.import.dotdot",
            "path",
            Err(NotFound, "no such file"),
            api=lambda ls, d: conv(ls).import_path(d / ".." / ".." / "no-such-export.json"),
            cli=("conversations", "import", "{dir}/../../no-such-export.json"),
        ),
        Case(
            "conv.import.format",
            "enum",
            Err(ImportFailed, "unknown conversation format"),
            api=lambda ls, d: conv(ls).import_path(d / "m.jsonl", "bogus"),
            files={"m.jsonl": GOOD_JSONL},
        ),
        Case(
            "conv.import.format-cli",
            "enum",
            Err(ConfigError, "unknown format 'bogus'"),
            cli=("conversations", "import", "{dir}/m.jsonl", "--format", "bogus"),
            files={"m.jsonl": GOOD_JSONL},
        ),
        Case(
            "conv.import.facts-llm-cli",
            "enum",
            Err(ConfigError, "is not a facts LLM spec"),
            cli=("conversations", "import", "{dir}/m.jsonl", "--facts-llm", "gpt-4o"),
            files={"m.jsonl": GOOD_JSONL},
        ),
        Case(
            "conv.import.truncated-json",
            "malformed",
            Err(ImportFailed, "invalid JSON"),
            api=lambda ls, d: conv(ls).import_path(d / "c.json"),
            cli=("conversations", "import", "{dir}/c.json"),
            files={"c.json": '[{"uuid": "a", "name": "t", "chat_messages": [{"sender": '},
        ),
        Case(
            "conv.import.json-not-export",
            "malformed",
            Err(ImportFailed, "not a known chat export format"),
            api=lambda ls, d: conv(ls).import_path(d / "c.json"),
            files={"c.json": '{"hello": "world"}'},
        ),
        Case(
            "conv.import.jsonl-garbage",
            "malformed",
            Ok(lambda r: r.messages == 0 and len(r.problems) == 2),
            api=lambda ls, d: conv(ls).import_path(d / "m.jsonl", "generic"),
            cli=("conversations", "import", "{dir}/m.jsonl", "--format", "generic"),
            files={"m.jsonl": '{"conversation_id": "x", "role": \nnot json at all\n'},
        ),
        Case(
            "conv.import.utf8-invalid",
            "encoding",
            Ok(lambda r: r.messages == 0 and "not UTF-8" in r.problems[0]),
            api=lambda ls, d: conv(ls).import_path(d / "m.jsonl", "generic"),
            cli=("conversations", "import", "{dir}/m.jsonl", "--format", "generic"),
            files={"m.jsonl": b'{"conversation_id": "x", "role": "user", "content": "\xff\xfe"}\n'},
        ),
        # JSON bounds (issue 20): nesting and integer size, file by file and line by line
        Case(
            "conv.import.json-deep",
            "json",
            Err(ImportFailed, "MAX_JSON_DEPTH"),
            api=lambda ls, d: conv(ls).import_path(d / "c.json"),
            cli=("conversations", "import", "{dir}/c.json"),
            files={"c.json": '[{"uuid": "a", "chat_messages": ' + DEEP_ARRAY + "}]"},
        ),
        Case(
            "conv.import.chatgpt-int-4301",
            "json",
            Err(ImportFailed, "MAX_JSON_INT_DIGITS"),
            api=lambda ls, d: conv(ls).import_path(d / "c.json"),
            cli=("conversations", "import", "{dir}/c.json"),
            files={"c.json": '[{"title": "t", "create_time": ' + BIG_INT + ', "mapping": {}}]'},
        ),
        Case(
            "conv.import.jsonl-int-401",
            "json",
            Ok(lambda r: r.messages == 0 and "MAX_JSON_INT_DIGITS" in r.problems[0]),
            api=lambda ls, d: conv(ls).import_path(d / "m.jsonl", "generic"),
            cli=("conversations", "import", "{dir}/m.jsonl", "--format", "generic"),
            files={"m.jsonl": GOOD_JSONL[:-2] + ', "timestamp": ' + "9" * 401 + "}\n"},
        ),
        Case(
            "conv.import.jsonl-deep",
            "json",
            Ok(lambda r: r.messages == 0 and "MAX_JSON_DEPTH" in r.problems[0]),
            api=lambda ls, d: conv(ls).import_path(d / "m.jsonl", "generic"),
            files={"m.jsonl": GOOD_JSONL[:-2] + ', "meta": ' + DEEP_OBJECT + "}\n"},
        ),
        Case(
            "sum.import.deep",
            "json",
            Ok(lambda r: "MAX_JSON_DEPTH" in str(r)),
            api=lambda ls, d: conv(ls).import_summaries(d / "s.jsonl"),
            files={"s.jsonl": DEEP_ARRAY + "\n"},
        ),
        # summaries
        Case(
            "sum.search.percent",
            "sql",
            Ok(),
            api=lambda ls, _: conv(ls).search_summaries("%"),
            cli=("summaries", "search", "%"),
        ),
        Case(
            "sum.search.drop",
            "sql",
            Ok(),
            api=lambda ls, _: conv(ls).search_summaries("x'; DROP TABLE summaries; --"),
            cli=("summaries", "search", "x'; DROP TABLE summaries; --"),
        ),
        Case(
            "sum.search.nul",
            "nul",
            Ok(),
            api=lambda ls, _: conv(ls).search_summaries("metric\x00 definition"),
        ),
        Case(
            "sum.search.domain-sql",
            "sql",
            Err(ConfigError, "invalid domain"),
            api=lambda ls, _: conv(ls).search_summaries("x", domain="'; DROP TABLE x; --"),
            cli=("summaries", "search", "x", "--domain", "'; DROP TABLE x; --"),
        ),
        Case(
            "sum.search.source-wildcard",
            "sql",
            Err(ConfigError, "invalid source"),
            api=lambda ls, _: conv(ls).search_summaries("x", source="%"),
            cli=("summaries", "search", "x", "--source", "%"),
        ),
        Case(
            "sum.import.missing",
            "path",
            Err(NotFound, "no such summaries file"),
            api=lambda ls, d: conv(ls).import_summaries(d / "nope.jsonl"),
            cli=("summaries", "import", "{dir}/nope.jsonl"),
        ),
        Case(
            "sum.import.garbage",
            "malformed",
            Ok(lambda r: r.summaries == 0 and len(r.problems) == 2),
            api=lambda ls, d: conv(ls).import_summaries(d / "s.jsonl"),
            cli=("summaries", "import", "{dir}/s.jsonl"),
            files={"s.jsonl": "{not json\n[1, 2]\n"},
        ),
        Case(
            "sum.import.utf8-invalid",
            "encoding",
            Ok(lambda r: r.summaries == 0 and "not UTF-8" in r.problems[0]),
            api=lambda ls, d: conv(ls).import_summaries(d / "s.jsonl"),
            files={"s.jsonl": b'{"conversation_id": "x", "summary": "\xff"}\n'},
        ),
    ]
    for name, value, hint in (
        ("extract", "bogus", "valid values are summary"),
        ("importance", "huge", "valid values are breakthrough"),
        ("thinking_stage", "x", "valid values are exploring"),
        ("mode", "x", "valid values are hybrid"),
    ):
        c.append(
            Case(
                f"sum.search.{name}",
                "enum",
                Err(ConfigError, hint),
                api=lambda ls, _, k=name, v=value: conv(ls).search_summaries("x", **{k: v}),
                cli=("summaries", "search", "x", "--" + name.replace("_", "-"), value),
            )
        )
    for value in (0, -1, 10**30):
        for cmd, api in (
            ("search", lambda ls, v: conv(ls).search_conversations("x", limit=v)),
            ("semantic", lambda ls, v: conv(ls).semantic_search("x", limit=v)),
            ("summaries", lambda ls, v: conv(ls).search_summaries("x", limit=v)),
        ):
            argv = ("summaries", "search") if cmd == "summaries" else ("conversations", cmd)
            c.append(
                Case(
                    f"conv.{cmd}.limit{value if value < 100 else '-huge'}",
                    "limits",
                    Err(ConfigError, "from 1 to 100"),
                    api=lambda ls, _, f=api, v=value: f(ls, v),
                    cli=(*argv, "x", "-n", str(value)),
                )
            )
    return c


def _vault_cases() -> list[Case]:
    v = lambda ls: ls.vault  # noqa: E731
    listed = lambda r: isinstance(r, list)  # noqa: E731
    c: list[Case] = [
        Case(
            "vault.search.percent",
            "sql",
            Ok(lambda r: len(r) > 0),
            api=lambda ls, _: v(ls).search("%"),
            cli=("vault", "search", "%"),
        ),
        Case(
            "vault.search.drop",
            "sql",
            Ok(listed),
            api=lambda ls, _: v(ls).search("x'; DROP TABLE vault_notes; --"),
            cli=("vault", "search", "x'; DROP TABLE vault_notes; --"),
        ),
        Case(
            "vault.search.nul",
            "nul",
            Ok(listed),
            api=lambda ls, _: v(ls).search("churn\x00 rate"),
        ),
        Case(
            "vault.search.1mb",
            "huge",
            Err(ConfigError, "the limit is 100000"),
            api=lambda ls, _: v(ls).search("x" * MB),
            cli=("vault", "search", "y" * ARGV_BIG),
        ),
        Case(
            "vault.search.empty",
            "empty",
            Err(ConfigError, "non-empty"),
            api=lambda ls, _: v(ls).search(""),
            cli=("vault", "search", " "),
        ),
        Case(
            "vault.search.tag-wildcard",
            "sql",
            Ok(lambda r: r == []),
            api=lambda ls, _: v(ls).search("x", tags=["%"]),
            cli=("vault", "search", "x", "--tag", "%"),
        ),
        Case(
            "vault.search.domain-sql",
            "enum",
            Err(ConfigError, "unknown domain"),
            api=lambda ls, _: v(ls).search("x", domain="' OR 1=1 --"),
            cli=("vault", "search", "x", "--domain", "' OR 1=1 --"),
        ),
        Case(
            "vault.search.status",
            "enum",
            Err(ConfigError, "unknown status"),
            api=lambda ls, _: v(ls).search("x", status=["_"]),
            cli=("vault", "search", "x", "--status", "_"),
        ),
        Case(
            "vault.search.type",
            "enum",
            Err(ConfigError, "unknown note_type"),
            api=lambda ls, _: v(ls).search("x", note_type="bogus"),
            cli=("vault", "search", "x", "--type", "bogus"),
        ),
        Case(
            "vault.search.date-words",
            "malformed",
            Err(ConfigError, "expected YYYY-MM-DD"),
            api=lambda ls, _: v(ls).search("x", date_range={"start": "last tuesday"}),
            cli=("vault", "search", "x", "--from", "last tuesday"),
        ),
        Case(
            "vault.search.date-impossible",
            "malformed",
            Err(ConfigError, "month must be in 1..12"),
            api=lambda ls, _: v(ls).search("x", date_range={"start": "2024-13-45"}),
            cli=("vault", "search", "x", "--to", "2024-13-45"),
        ),
        Case(
            "vault.search.date-reversed",
            "malformed",
            Err(ConfigError, "is after its end"),
            api=lambda ls, _: v(ls).search(
                "x", date_range={"start": "2025-01-01", "end": "2024-01-01"}
            ),
            cli=("vault", "search", "x", "--from", "2025-01-01", "--to", "2024-01-01"),
        ),
        Case(
            "vault.search.date-key",
            "malformed",
            Err(ConfigError, "not 'bogus'"),
            api=lambda ls, _: v(ls).search("x", date_range={"bogus": "2024-01-01"}),
        ),
        Case(
            "vault.search.limit-zero",
            "limits",
            Err(ConfigError, "at least 1"),
            api=lambda ls, _: v(ls).search("x", limit=0),
            cli=("vault", "search", "x", "-n", "0"),
        ),
        Case(
            "vault.search.limit-negative",
            "limits",
            Err(ConfigError, "at least 1"),
            api=lambda ls, _: v(ls).search("x", limit=-1),
            cli=("vault", "search", "x", "-n", "-1"),
        ),
        Case(
            "vault.search.limit-huge",
            "limits",
            Err(LimitExceeded, "at most 1000"),
            api=lambda ls, _: v(ls).search("x", limit=10**30),
            cli=("vault", "search", "x", "-n", str(10**30)),
        ),
        Case(
            "vault.get.ok",
            "path",
            Ok(lambda r: r.title == "Analytics team knowledge base"),
            api=lambda ls, _: v(ls).get_note("Home"),
            cli=("vault", "get", "Home"),
        ),
        Case(
            "vault.get.dotdot",
            "path",
            Err(ConfigError, "tries to leave the vault"),
            api=lambda ls, _: v(ls).get_note("../etc/passwd"),
            cli=("vault", "get", "../etc/passwd"),
        ),
        Case(
            "vault.get.dotdot-inner",
            "path",
            Err(ConfigError, "tries to leave the vault"),
            api=lambda ls, _: v(ls).get_note("Metrics/../../secrets"),
            cli=("vault", "get", "Metrics/../../secrets"),
        ),
        Case(
            "vault.get.absolute",
            "path",
            Err(ConfigError, "absolute path"),
            api=lambda ls, _: v(ls).get_note("/etc/passwd"),
            cli=("vault", "get", "/etc/passwd"),
        ),
        Case(
            "vault.get.empty",
            "empty",
            Err(ConfigError, "non-empty"),
            api=lambda ls, _: v(ls).get_note(""),
            cli=("vault", "get", ""),
        ),
        Case(
            "vault.get.nul",
            "nul",
            Err(ConfigError, "NUL"),
            api=lambda ls, _: v(ls).get_note("Home\x00"),
        ),
        Case(
            "vault.get.wildcard",
            "sql",
            Err(NotFound, "no note with slug '%'"),
            api=lambda ls, _: v(ls).get_note("%"),
            cli=("vault", "get", "%"),
        ),
        Case(
            "vault.get.1mb",
            "huge",
            Err(NotFound, "no note with slug"),
            api=lambda ls, _: v(ls).get_note("x" * MB),
        ),
        Case(
            "vault.index.missing",
            "path",
            Err(NotFound, "does not exist"),
            api=lambda ls, d: v(ls).index(d / "nope"),
            cli=("vault", "index", "{dir}/nope"),
        ),
        Case(
            "vault.index.dotdot",
            "path",
            Err(NotFound, "does not exist"),
            api=lambda ls, d: v(ls).index(d / ".." / ".." / "no-such-vault"),
            cli=("vault", "index", "{dir}/../../no-such-vault"),
        ),
    ]
    return c


CORPUS_CASES: list[Case] = _conversation_cases() + _vault_cases()

#: Imports and indexing that succeed (reporting the problems they skipped) change the
#: store, so each runs against a throwaway store of its own, with the fake embedder.
CORPUS_WRITES: list[Case] = [
    Case(
        "conv.import.partly-malformed",
        "malformed",
        Ok(lambda r: r.messages == 1 and len(r.problems) == 2),
        writes=True,
        api=lambda ls, d: ls.conversations.import_path(d / "m.jsonl", "generic"),
        cli=("conversations", "import", "{dir}/m.jsonl", "--format", "generic"),
        files={"m.jsonl": GOOD_JSONL + '{"conversation_id": \n' + '{"role": "narrator"}\n'},
    ),
    Case(
        "conv.import.jsonl-timestamp-90-digits",
        "json",
        Ok(lambda r: r.messages == 1 and "out of range" in r.problems[0]),
        writes=True,
        api=lambda ls, d: ls.conversations.import_path(d / "m.jsonl", "generic"),
        cli=("conversations", "import", "{dir}/m.jsonl", "--format", "generic"),
        files={"m.jsonl": GOOD_JSONL[:-2] + ', "timestamp": ' + "9" * 90 + "}\n"},
    ),
    Case(
        "conv.import.chatgpt-parent-not-text",
        "malformed",
        Ok(lambda r: r.messages == 1),
        writes=True,
        api=lambda ls, d: ls.conversations.import_path(d / "c.json", "chatgpt"),
        files={
            "c.json": (
                '[{"id": "c", "title": "t", "mapping": {"a": {"parent": ["x"], "children": [], '
                '"message": {"author": {"role": "user"}, "content": {"parts": ["hello there"]}}}}}]'
            )
        },
    ),
    Case(
        "vault.index.bad-frontmatter",
        "malformed",
        Ok(lambda r: r.notes == 3 and len(r.problems) >= 2),
        writes=True,
        api=lambda ls, d: ls.vault.index(d / "v"),
        cli=("vault", "index", "{dir}/v"),
        files={
            "v/good.md": NOTE,
            "v/yaml.md": "---\ntitle: [unclosed\ntags: x: y\n---\nbody\n",
            "v/dates.md": "---\ncreated: sometime in spring\n---\nbody words\n",
        },
    ),
    Case(
        "vault.index.utf8-invalid",
        "encoding",
        Ok(lambda r: r.notes >= 1 and any("UTF-8" in p for p in r.problems)),
        writes=True,
        api=lambda ls, d: ls.vault.index(d / "v"),
        files={"v/good.md": NOTE, "v/bad.md": b"---\ntitle: \xff\xfe\n---\nbody \xc3\x28\n"},
    ),
    # a note over the cap is skipped with a warning naming it, the others indexed (issue 42:
    # a 50 MB note took 155 s)
    Case(
        "vault.index.note-over-the-cap",
        "huge",
        Ok(lambda r: r.notes == 1 and any("skipped big.md: over the" in w for w in r.warnings)),
        writes=True,
        api=lambda ls, d: ls.vault.index(d / "v"),
        cli=("vault", "index", "{dir}/v"),
        files={"v/good.md": NOTE, "v/big.md": b"revenue " * (MAX_NOTE_BYTES // 8 + 1)},
    ),
    Case(
        "vault.index.note-one-byte-over",
        "huge",
        Ok(lambda r: r.notes == 1 and any("Logs/dump.md" in w for w in r.warnings)),
        writes=True,
        api=lambda ls, d: ls.vault.index(d / "v"),
        files={"v/good.md": NOTE, "v/Logs/dump.md": b"a" * (MAX_NOTE_BYTES + 1)},
    ),
    Case(
        "vault.index.dotdot-link",
        "path",
        Ok(lambda r: r.notes == 1),
        writes=True,
        api=lambda ls, d: ls.vault.index(d / "v" / ".." / "v"),
        files={"v/good.md": NOTE},
    ),
]


# -- MCP tools -------------------------------------------------------------------------------


def sc(check: Callable[[dict[str, Any]], bool]) -> Callable[[Any], bool]:
    """A check on an MCP result's structured content."""
    return lambda r: check(r.structured_content)


def _mcp(tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    return tool, args


def _mcp_cases() -> list[Case]:
    c: list[Case] = [
        # search
        Case(
            "mcp.search.1mb",
            "huge",
            Err(LimitExceeded, "limit is 100000"),
            mcp=_mcp("search", question="x" * MB),
        ),
        Case(
            "mcp.search.nul",
            "nul",
            Ok(sc(lambda d: "shop.orders.tax_paid" in [h["id"] for h in d["results"][:2]])),
            mcp=_mcp("search", question="tax\x00 paid"),
        ),
        Case(
            "mcp.search.max-results-zero",
            "limits",
            Invalid("max_results"),
            mcp=_mcp("search", question="tax", max_results=0),
        ),
        Case(
            "mcp.search.max-results-huge",
            "limits",
            Invalid("max_results"),
            mcp=_mcp("search", question="tax", max_results=10**30),
        ),
        Case(
            "mcp.search.question-not-text",
            "malformed",
            Invalid("question"),
            mcp=_mcp("search", question=5),
        ),
        Case(
            "mcp.search.channel",
            "enum",
            Invalid("channels"),
            mcp=_mcp("search", question="tax", channels=["nope"]),
        ),
        Case(
            "mcp.search.datasource",
            "enum",
            Err(ConfigError, "unknown datasource"),
            mcp=_mcp("search", question="tax", datasource="shop' OR '1'='1"),
        ),
        Case(
            "mcp.search.query-deep",
            "nesting",
            Err(LimitExceeded, "nested deeper than 16"),
            mcp=_mcp("search", query=_deep(50)),
        ),
        Case(
            "mcp.search.cypher-write",
            "cypher-write",
            Err(CypherReadOnlyError, "read-only"),
            mcp=_mcp("search", question="tax", cypher_filter=WRITES[1]),
        ),
        Case(
            "mcp.search.cypher-param",
            "param",
            Err(CypherUnknownError, "$x has no value"),
            mcp=_mcp(
                "search",
                question="tax",
                cypher_filter="MATCH (n:Model) WHERE n.name = $x RETURN n.id AS id",
            ),
        ),
        Case(
            "mcp.search.entity-rlo",
            "invisible",
            Err(ConfigError, "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
            mcp=_mcp("search", entities=["shop.orders\u202e"]),
        ),
        Case(
            "mcp.search.hidden",
            "hidden",
            Ok(sc(lambda d: HIDDEN not in str(d["results"]))),
            mcp=_mcp("search", question="fraud model score internal raw clickstream"),
        ),
        # inspect
        Case(
            "mcp.inspect.too-many",
            "huge",
            Invalid("ids"),
            mcp=_mcp("inspect", ids=[f"x{i}" for i in range(201)]),
        ),
        Case(
            "mcp.inspect.not-list",
            "malformed",
            Invalid("ids"),
            mcp=_mcp("inspect", ids="shop.orders"),
        ),
        Case(
            "mcp.inspect.path",
            "path",
            Err(NotFound, "is not a memory id"),
            mcp=_mcp("inspect", ids=["../shop.orders", "memory:../1"]),
        ),
        Case(
            "mcp.inspect.zero-width",
            "invisible",
            Err(ConfigError, "U+200B"),
            mcp=_mcp("inspect", ids=["shop.orders\u200b"]),
        ),
        Case(
            "mcp.inspect.hidden-child",
            "hidden",
            Ok(sc(lambda d: HIDDEN not in str(d["entities"]))),
            mcp=_mcp("inspect", ids=["shop.orders"]),
        ),
        # memories
        Case(
            "mcp.save.empty",
            "empty",
            Err(ConfigError, "empty"),
            mcp=_mcp("save_memory", learning="  "),
        ),
        Case(
            "mcp.save.huge",
            "huge",
            Err(LimitExceeded, "20000"),
            mcp=_mcp("save_memory", learning="x" * MB),
        ),
        Case(
            "mcp.save.unknown-entity",
            "enum",
            Err(ConfigError, "unknown entity"),
            mcp=_mcp("save_memory", learning="note", entities=["no.such.thing"]),
        ),
        Case(
            "mcp.save.hidden",
            "hidden",
            Err(ConfigError, "unknown entity"),
            mcp=_mcp("save_memory", learning="note", entities=[HIDDEN]),
        ),
        Case(
            "mcp.save.sql-text",
            "sql",
            Ok(sc(lambda d: d["learning"] == "x'; DROP TABLE memories; --\x00")),
            writes=True,
            mcp=_mcp("save_memory", learning="x'; DROP TABLE memories; --\x00"),
        ),
        Case(
            "mcp.save.entity-nul",
            "invisible",
            Err(ConfigError, "U+0000"),
            mcp=_mcp("save_memory", learning="note", entities=["shop.orders\x00"]),
        ),
        Case(
            "mcp.save.control-text",
            "terminal",
            Ok(sc(lambda d: d["learning"] == CONTROL_TEXT)),
            writes=True,
            mcp=_mcp("save_memory", learning=CONTROL_TEXT),
        ),
        Case(
            "mcp.forget.rlo",
            "invisible",
            Err(ConfigError, "U+202E"),
            mcp=_mcp("forget_memory", memory_id="memory:1\u202e"),
        ),
        Case(
            "mcp.forget.missing",
            "enum",
            Err(NotFound, "no memory memory:999"),
            mcp=_mcp("forget_memory", memory_id="memory:999"),
        ),
        Case(
            "mcp.forget.wildcard",
            "sql",
            Err(ConfigError, "not a memory id"),
            mcp=_mcp("forget_memory", memory_id="%"),
        ),
        Case(
            "mcp.forget.path",
            "path",
            Err(ConfigError, "not a memory id"),
            mcp=_mcp("forget_memory", memory_id="memory:../1"),
        ),
        # conversations and summaries
        Case(
            "mcp.conv.percent",
            "sql",
            Ok(sc(lambda d: d["hits"] == [])),
            mcp=_mcp("search_conversations", term="%"),
        ),
        Case(
            "mcp.conv.underscore",
            "sql",
            Ok(sc(lambda d: bool(d["hits"]) and all("_" in h["preview"] for h in d["hits"]))),
            mcp=_mcp("search_conversations", term="_"),
        ),
        Case(
            "mcp.conv.drop",
            "sql",
            Ok(sc(lambda d: d["hits"] == [])),
            mcp=_mcp("search_conversations", term="x'; DROP TABLE messages; --"),
        ),
        Case(
            "mcp.conv.nul",
            "nul",
            Ok(sc(lambda d: d["hits"] == [])),
            mcp=_mcp("search_conversations", term="a\x00b"),
        ),
        Case(
            "mcp.conv.role",
            "enum",
            Invalid("role"),
            mcp=_mcp("search_conversations", term="x", role="system"),
        ),
        Case(
            "mcp.conv.limit-zero",
            "limits",
            Invalid("limit"),
            mcp=_mcp("search_conversations", term="x", limit=0),
        ),
        Case(
            "mcp.semantic.empty",
            "empty",
            Invalid("query"),
            mcp=_mcp("semantic_search", query=""),
        ),
        Case(
            "mcp.semantic.blank",
            "empty",
            Err(ConfigError, "non-empty query"),
            mcp=_mcp("semantic_search", query="   "),
        ),
        Case(
            "mcp.semantic.sql",
            "sql",
            Ok(sc(lambda d: len(d["hits"]) > 0)),
            mcp=_mcp("semantic_search", query="%' OR 1=1 --"),
        ),
        Case(
            "mcp.semantic.limit-huge",
            "limits",
            Invalid("limit"),
            mcp=_mcp("semantic_search", query="x", limit=10**30),
        ),
        Case(
            "mcp.summaries.extract",
            "enum",
            Invalid("extract"),
            mcp=_mcp("search_summaries", query="x", extract="bogus"),
        ),
        Case(
            "mcp.summaries.domain-sql",
            "sql",
            Err(ConfigError, "invalid domain"),
            mcp=_mcp("search_summaries", query="x", domain="'; DROP TABLE summaries; --"),
        ),
        Case(
            "mcp.summaries.source-wildcard",
            "sql",
            Err(ConfigError, "invalid source"),
            mcp=_mcp("search_summaries", query="x", source="%"),
        ),
        Case(
            "mcp.summaries.nul",
            "nul",
            Ok(),
            mcp=_mcp("search_summaries", query="metric\x00"),
        ),
        # vault
        Case(
            "mcp.vault.search-1mb",
            "huge",
            Err(ConfigError, "the limit is 100000"),
            mcp=_mcp("vault_search", query="x" * MB),
        ),
        Case(
            "mcp.vault.search-empty",
            "empty",
            Invalid("query"),
            mcp=_mcp("vault_search", query=""),
        ),
        Case(
            "mcp.vault.search-date",
            "malformed",
            Err(ConfigError, "expected YYYY-MM-DD"),
            mcp=_mcp("vault_search", query="x", date_range={"start": "last tuesday"}),
        ),
        Case(
            "mcp.vault.search-date-key",
            "malformed",
            Err(ConfigError, "not 'bogus'"),
            mcp=_mcp("vault_search", query="x", date_range={"bogus": "2024-01-01"}),
        ),
        Case(
            "mcp.vault.search-limit",
            "limits",
            Invalid("limit"),
            mcp=_mcp("vault_search", query="x", limit=0),
        ),
        Case(
            "mcp.vault.search-domain",
            "enum",
            Err(ConfigError, "unknown domain"),
            mcp=_mcp("vault_search", query="x", domain="' OR 1=1 --"),
        ),
        Case(
            "mcp.vault.search-tag",
            "sql",
            Ok(sc(lambda d: d["result"] == [])),
            mcp=_mcp("vault_search", query="x", tags=["%"]),
        ),
        Case(
            "mcp.vault.get-dotdot",
            "path",
            Err(ConfigError, "tries to leave the vault"),
            mcp=_mcp("vault_get_note", slug="../etc/passwd"),
        ),
        Case(
            "mcp.vault.get-absolute",
            "path",
            Err(ConfigError, "absolute path"),
            mcp=_mcp("vault_get_note", slug="/etc/passwd"),
        ),
        Case(
            "mcp.vault.get-nul",
            "nul",
            Err(ConfigError, "NUL"),
            mcp=_mcp("vault_get_note", slug="Home\x00"),
        ),
        Case(
            "mcp.vault.get-empty",
            "empty",
            Err(ConfigError, "non-empty"),
            mcp=_mcp("vault_get_note", slug=""),
        ),
        Case(
            "mcp.vault.get-wildcard",
            "sql",
            Err(NotFound, "no note with slug '%'"),
            mcp=_mcp("vault_get_note", slug="%"),
        ),
        Case(
            "mcp.vault.get-ok",
            "path",
            Ok(sc(lambda d: d["title"] == "Analytics team knowledge base")),
            mcp=_mcp("vault_get_note", slug="Home"),
        ),
    ]
    # browsing: names that do not exist, SQL in a filter, hidden entities, page bounds
    c += [
        Case(
            "mcp.browse.datasource-sql",
            "sql",
            Err(NotFound, "no datasource shop' OR '1'='1"),
            mcp=_mcp("list_models", datasource="shop' OR '1'='1"),
        ),
        Case(
            "mcp.browse.model-wildcard",
            "sql",
            Err(NotFound, "no model shop.%"),
            mcp=_mcp("list_measures", model="shop.%"),
        ),
        Case(
            "mcp.browse.hidden-model",
            "hidden",
            Err(NotFound, "no model"),
            mcp=_mcp("describe_model", model=HIDDEN_MODEL),
        ),
        Case(
            "mcp.browse.hidden-column",
            "hidden",
            Ok(sc(lambda d: HIDDEN not in str(d))),
            mcp=_mcp("describe_model", model="shop.orders"),
        ),
        Case(
            "mcp.browse.limit-huge",
            "limits",
            Invalid("limit"),
            mcp=_mcp("list_datasources", limit=10**30),
        ),
        Case(
            "mcp.browse.offset-negative",
            "limits",
            Invalid("offset"),
            mcp=_mcp("list_memories", offset=-1),
        ),
        Case(
            "mcp.browse.offset-past-end",
            "limits",
            Ok(sc(lambda d: d["items"] == [] and d["next_offset"] is None)),
            mcp=_mcp("list_models", offset=10**6),
        ),
    ]
    # unbounded work from one request (issue 20): refused with the bound named
    square = "MATCH (n:Datasource) WITH n, 3 AS x " + "WITH n, x * x AS x " * 30
    for name, args, match in [
        (
            "regex-chain",
            {
                "cypher_filter": f"MATCH (n) WHERE n.name =~ '{CHAINED_REGEXES[0]}' RETURN n.id AS id"
            },
            "MAX_REGEX_WORK",
        ),
        ("deep-or", {"cypher_filter": _filter(DEEP_EXPRESSIONS["or"])}, "MAX_EXPRESSION_DEPTH"),
        ("int-square", {"cypher_filter": square + "RETURN n.id AS id"}, "MAX_INT_BITS"),
        (
            "params-deep",
            {
                "cypher_filter": "MATCH (n) WHERE $p IS NOT NULL RETURN n.id AS id",
                "params": {"p": _nest(70)},
            },
            "MAX_JSON_DEPTH",
        ),
    ]:
        c.append(
            Case(
                f"mcp.search.compute-{name}",
                "compute",
                Err(CypherLimitError, match),
                mcp=_mcp("search", question="tax", **args),
            )
        )
    for i, text in enumerate(SQL):
        c.append(
            Case(
                f"mcp.search.sql-{i}",
                "sql",
                Ok(sc(lambda d: bool(d["results"] or d["warnings"]))),
                mcp=_mcp("search", question=text),
            )
        )
    return c


def _mcp_cost_cases() -> list[Case]:
    def warned(d: dict[str, Any]) -> bool:
        return any("MAX_ANALYSED_CHARS" in w for w in d["warnings"])

    def no_match(d: dict[str, Any]) -> bool:
        return not d["results"] and "matched no entities" in d["warnings"][0]

    return [
        Case(
            "mcp.cost.question.99990.scope-all",
            "cost",
            Ok(sc(warned)),
            mcp=_mcp("search", question=LONG_QUESTION, scope="all"),
        ),
        Case(
            "mcp.cost.question.one-60000-char-word",
            "cost",
            Ok(sc(warned)),
            mcp=_mcp("search", question=ONE_WORD),
        ),
        Case(
            "mcp.cost.filter.regex-over-concat-cartesian",
            "cost",
            Ok(sc(no_match)),
            mcp=_mcp("search", question="tax", cypher_filter=REPORTED_FILTER),
        ),
        Case(
            "mcp.cost.filter.regex-over-concat-node-pairs.scope-all",
            "cost",
            Ok(sc(lambda d: any("excluded every semantic hit" in w for w in d["warnings"]))),
            mcp=_mcp("search", question="tax", cypher_filter=PAIRS_FILTER, scope="all"),
        ),
    ]


MCP_CASES: list[Case] = _mcp_cases() + _mcp_cost_cases()
