"""PostgreSQL's side of the wire: placeholders, DSNs, pgvector's binary form, and the
statements of vector search that :class:`~layersearch.store.postgres.PostgresStore` runs.

:func:`translate` lets SQL written for DuckDB (``?`` placeholders) run unchanged on
psycopg; :class:`Connection` is what ``PostgresStore.connect`` yields.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from layersearch.errors import StoreError, mask_secrets, register_secrets

__all__ = ["Connection", "translate", "redact"]


# -- SQL translation ------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """``?`` placeholders → ``%s``, and every literal ``%`` doubled, for psycopg.

    ``?`` inside string literals, quoted identifiers, comments and dollar-quoted
    bodies is left alone (psycopg scans the whole text for ``%``, so those are
    doubled everywhere). PostgreSQL's jsonb ``?`` operators are therefore not
    expressible through this interface; nothing in layersearch uses them.
    """
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "?":
            out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        elif ch in "'\"":
            end = _quoted_end(sql, i, ch, escapes=ch == "'" and _is_escape_string(sql, i))
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "$" and (tag := _dollar_tag(sql, i)) is not None:
            end = sql.find(tag, i + len(tag))
            end = n if end < 0 else end + len(tag)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_escape_string(sql: str, quote: int) -> bool:
    """E'...' strings take backslash escapes (E not part of a longer word)."""
    if quote == 0 or sql[quote - 1] not in "eE":
        return False
    return quote == 1 or not (sql[quote - 2].isalnum() or sql[quote - 2] == "_")


def _quoted_end(sql: str, start: int, quote: str, *, escapes: bool) -> int:
    i = start + 1
    while i < len(sql):
        c = sql[i]
        if escapes and c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < len(sql) and sql[i + 1] == quote:  # doubled quote inside
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def _dollar_tag(sql: str, i: int) -> str | None:
    """``$tag$`` or ``$$`` at ``i`` (not a ``$1`` parameter, not part of an identifier)."""
    if i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_"):
        return None
    j = i + 1
    while j < len(sql) and (sql[j].isalnum() or sql[j] == "_"):
        j += 1
    if j < len(sql) and sql[j] == "$" and not sql[i + 1 : j][:1].isdigit():
        return sql[i : j + 1]
    return None


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and logs; a malformed one (libpq cannot
    parse it) with its password masked as written. Its passwords are registered, so every
    message that repeats one masks it (:func:`layersearch.errors.mask_secrets`)."""
    register_secrets(dsn)
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return mask_secrets(dsn)
    if "password" in params:
        params["password"] = "***"
    return make_conninfo("", **params)


# -- connections ----------------------------------------------------------------------------------


class Connection:
    """What :meth:`PostgresStore.connect` yields: ``execute(sql, params)`` with ``?``
    placeholders, returning a cursor (``fetchone``/``fetchall``), like DuckDB's."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        return self.raw.execute(translate(sql), list(params or ()))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(translate(sql), [list(r) for r in rows])


# -- helpers --------------------------------------------------------------------------------------


def _cache_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg else Path.home() / ".cache"


def _extension_hint(location: str, exc: Exception) -> str:
    return (
        f"store {location}: the pgvector extension is not available ({exc}); install pgvector "
        "on the server (https://github.com/pgvector/pgvector) or run `CREATE EXTENSION vector` "
        "as a superuser"
    )


def _index_name(corpus: str, fingerprint: str, dims: int) -> str:
    """The HNSW index of one (corpus, fingerprint); ``vectors_hnsw_`` named the older
    ``vector`` indexes, which the halfvec migration drops."""
    key = f"{corpus}\0{fingerprint}\0{dims}"
    return "vectors_hnswh_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _where_statement(
    corpus: str, fingerprint: str, dims: int, join: str, where: str, *, hnsw: bool
) -> str:
    """The ranking statement of :meth:`PostgresStore.search_vectors_where` (``?`` placeholders:
    the condition's, then the query vector and the row limit)."""
    # Literal corpus and fingerprint so the planner can match the partial index; the cast
    # column is the index's expression, the bare column matches none (an exact scan in
    # float32).
    scope = f"v.corpus = {_literal(corpus)} AND v.fingerprint = {_literal(fingerprint)}"
    if hnsw:
        order = f"v.embedding::halfvec({dims}) <=> ?::halfvec({dims})"
    else:
        order = 'v.embedding <=> ?::vector, v.doc_id COLLATE "C"'
    # join and where are the calling corpus's own SQL; every value is bound
    return (
        f"SELECT v.doc_id, v.embedding FROM vectors v {join} "  # noqa: S608
        f"WHERE {scope} AND ({where}) ORDER BY {order} LIMIT ?"
    )


#: exact ranking of the rows with the given doc ids (psycopg placeholders: corpus,
#: fingerprint, the ids, the query vector, the row limit). The ids travel as one binary
#: text[] (``%b``): psycopg's text form quotes every element with a regular expression,
#: which cost more than the ranking itself (5,000 ids: 17 ms a search as text, 8 ms
#: binary, 5 ms of it on the server). They reach the index through a sub-select, so the
#: planner does not estimate the selectivity of each of them (2-7 ms of planning for
#: 8,000-10,000 ids; the plan is the same primary-key scan).
_BY_IDS = (
    "SELECT v.doc_id, v.embedding FROM vectors v WHERE v.corpus = %s AND v.fingerprint = %s "
    "AND v.doc_id = ANY(ARRAY(SELECT unnest(%b::text[]))) "
    'ORDER BY v.embedding <=> %s::vector, v.doc_id COLLATE "C" LIMIT %s'
)


def _index_node(node: dict[str, Any]) -> dict[str, Any] | None:
    """The scan of one of our HNSW indexes (``vectors_hnsw…``) in a JSON plan, if any."""
    if str(node.get("Index Name", "")).startswith("vectors_hnsw"):
        return node
    for child in node.get("Plans", []):
        found = _index_node(child)
        if found is not None:
            return found
    return None


def _literal(text: str) -> str:
    """A standard-conforming SQL string literal (NUL cannot occur in PostgreSQL text)."""
    return "'" + text.replace("'", "''") + "'"


def _vector_text(v: np.ndarray) -> str:
    # repr of a float32 widened to float64 is exact, so the server sees the same number.
    return "[" + ",".join(repr(float(x)) for x in v.tolist()) + "]"


def _encode_vectors(m: np.ndarray) -> list[bytes]:
    """pgvector's binary wire form: int16 dims, int16 unused, big-endian float32s."""
    header = np.array([m.shape[1], 0], dtype=">i2").tobytes()
    body = m.astype(">f4")
    return [header + row.tobytes() for row in body]


def _decode_vectors(blobs: Sequence[bytes]) -> np.ndarray:
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    dims = int.from_bytes(blobs[0][:2], "big")
    width = 4 + 4 * dims
    joined = b"".join(blobs)
    if len(joined) != width * len(blobs):
        raise StoreError("stored vectors of different dimensions under one model fingerprint")
    raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(blobs), width)[:, 4:]
    return np.ascontiguousarray(raw).view(">f4").astype(np.float32)
