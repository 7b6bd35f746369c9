"""No SQL built by string formatting: every value is a bound parameter.

Scans src/ with ``ast`` for ``.execute(...)``/``.sql(...)``-style calls whose SQL
argument is an f-string, ``%``/``+`` expression or ``.format`` call with non-literal
parts. Identifier-only formatting (table and column names that are code, checked by
``_identifier``) is allowed by an explicit list below, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

SRC = ROOT / "src" / "layersearch"
SQL_METHODS = {"execute", "executemany", "sql", "query", "fetchall", "fetch", "execute_many"}

#: (file relative to src/layersearch, function) → why formatting is safe there.
ALLOWED = {
    ("store/duckdb.py", "bulk_insert"): "table and column names pass _identifier(); values are "
    "in a registered array",
    ("store/postgres.py", "_set_local"): "formats only one set_config(%s, %s, true) per setting: "
    "names and values are bound",
    ("store/postgres.py", "walk_pages_per_row"): "prefixes EXPLAIN to the walk statement "
    "_where_statement builds from code (corpus and fingerprint quoted by _literal, as in the "
    "walks it measures); the vector and the limit are bound",
}
#: Functions that turn a name into a safe SQL identifier, or return only "?, ?, …"
#: placeholders; formatting only their output is fine.
IDENTIFIER_QUOTERS = {"quote_ident", "_identifier", "_placeholders"}

#: Module-level constants (ALL_CAPS names bound to string literals, tuples of them, or
#: joins of those) per file being scanned; formatting them in is formatting code, not data.
_CONSTANTS: dict[str, ast.expr] = {}


def _constant_text(node: ast.expr) -> bool:
    """A literal string, a tuple/list of literals, a join of such, or an ALL_CAPS constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.Tuple | ast.List):
        return all(_constant_text(e) for e in node.elts)
    if isinstance(node, ast.Name):
        bound = _CONSTANTS.get(node.id)
        return bound is not None and _constant_text(bound)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
    ):
        return len(node.args) == 1 and _constant_text(node.args[0])
    return isinstance(node, ast.BinOp) and _literal(node)


def _is_identifier(node: ast.expr, assigned: dict[str, ast.expr]) -> bool:
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if _constant_text(node):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in IDENTIFIER_QUOTERS
    )


def _dynamic(node: ast.expr, assigned: dict[str, ast.expr] | None = None) -> bool:
    """True when the expression builds a string from something other than literals."""
    if isinstance(node, ast.JoinedStr):
        return any(
            isinstance(v, ast.FormattedValue) and not _is_identifier(v.value, assigned or {})
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return not (_literal(node.left) and _literal(node.right))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Attribute)
        and node.func.value.func.attr == "SQL"
    ):
        # psycopg's sql.SQL(...).format(...) composes Identifier/Literal objects safely
        return False
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("format", "join", "replace")
    )


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) and _literal(node.right)
    return False


def find_formatted_sql(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    _CONSTANTS.clear()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id.lstrip("_").isupper():
                    _CONSTANTS[t.id] = stmt.value
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        # SQL assembled into a local first, then executed, counts too.
        assigned: dict[str, ast.expr] = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    assigned[target.id] = node.value
        for node in ast.walk(func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in SQL_METHODS or not node.args:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in assigned:
                arg = assigned[arg.id]
            if _dynamic(arg, assigned):
                out.append((func.name, node.lineno))
    return out


def test_no_sql_is_built_by_string_formatting() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for func, line in find_formatted_sql(path):
            if (rel, func) not in ALLOWED:
                found.append(f"{rel}:{line} in {func}()")
    assert not found, "SQL built by string formatting (bind the values instead):\n" + "\n".join(
        found
    )


def test_the_scan_catches_formatting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def a(con, x):\n    con.execute(f'SELECT * FROM t WHERE id = {x}')\n"
        "def b(con, x):\n    con.execute('SELECT * FROM t WHERE id = %s' % x)\n"
        "def c(con, x):\n    sql = 'SELECT ' + x\n    con.execute(sql)\n"
        "def d(con, x):\n    con.execute('SELECT {}'.format(x))\n"
        "def ok(con, x):\n    con.execute('SELECT * FROM t WHERE id = ?', [x])\n"
        "def ok2(con):\n    con.execute('SELECT 1 ' + 'FROM t')\n"
        "def ok3(con, x):\n    q = quote_ident(x)\n    con.execute(f'PRAGMA table_info({q})')\n"
    )
    assert [f for f, _ in find_formatted_sql(bad)] == ["a", "b", "c", "d"]


def test_allowlist_entries_still_exist() -> None:
    # A stale allowance would silently permit formatting in a new function of the same name.
    for rel, func in ALLOWED:
        names = {f for f, _ in find_formatted_sql(SRC / rel)}
        assert func in names, f"{rel}:{func} no longer formats SQL; drop it from ALLOWED"


def test_the_scanner_catches_values(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "COLS = 'a, b'\n"
        "def f(con, name):\n"
        "    con.execute(f'SELECT {COLS} FROM t WHERE n = {name}')\n"
        "def g(con, name):\n"
        "    sql = 'SELECT * FROM t WHERE n = ' + name\n"
        "    con.execute(sql)\n"
        "def ok(con, name):\n"
        "    con.execute(f'SELECT {COLS} FROM t WHERE n IN ({_placeholders(3)})', [name])\n"
    )
    assert [f for f, _ in find_formatted_sql(bad)] == ["f", "g"]
