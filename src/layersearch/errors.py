"""One error tree for everything layersearch raises on purpose.

    LayersearchError
    ├── ConfigError                 bad configuration or arguments (unknown datasource, bad limit, …)
    │   └── LimitExceeded           a documented resource bound was exceeded
    ├── NotFound                    an id, slug or path that does not exist
    ├── ModelLoadError              a semantic-layer file could not be loaded (names file and line)
    ├── ImportFailed                a conversation / summary / vault import could not proceed
    ├── CypherError                 a graph filter was rejected
    │   ├── CypherSyntaxError       line, column, caret snippet, what was expected
    │   ├── CypherReadOnlyError     a write or procedure clause
    │   ├── CypherUnknownError      unknown label, relationship type or property ("did you mean")
    │   ├── CypherReturnError       the query does not return a single `id` column
    │   └── CypherLimitError        bindings / hops / regex bound reached
    ├── EmbeddingUnavailable        no embedder, missing extra or key, provider failure
    ├── ModelMismatch               stored vectors were made by another embedding model
    ├── CallCancelled               the caller of a server call went away; its work was stopped
    ├── ServerBusy                  an expensive server call found no slot within its budget
    └── StoreError                  the store cannot be opened, is locked, or is corrupt
        ├── StoreBusy               other readers or writers held it past the lock timeout
        ├── StoreMissing            a read on a store that does not exist (nothing is created)
        ├── StoreEmpty              a read on a store with no semantic layer and no memories
        ├── StoreCorrupt            the database file is damaged
        ├── StoreReadOnly           a write on a store opened read-only
        └── DiskFull                a write ran out of space (the last complete state is kept)

Foreign exceptions are wrapped where they enter (``raise … from exc``) so that
callers only ever need to catch ``LayersearchError``.
"""

from __future__ import annotations

import errno
import re
import threading
from urllib.parse import unquote

__all__ = [
    "LayersearchError",
    "ConfigError",
    "LimitExceeded",
    "NotFound",
    "ModelLoadError",
    "ImportFailed",
    "CypherError",
    "CypherSyntaxError",
    "CypherReadOnlyError",
    "CypherUnknownError",
    "CypherReturnError",
    "CypherLimitError",
    "EmbeddingUnavailable",
    "ModelMismatch",
    "CallCancelled",
    "ServerBusy",
    "LLMUnavailable",
    "StoreError",
    "StoreBusy",
    "StoreMissing",
    "StoreEmpty",
    "StoreCorrupt",
    "StoreReadOnly",
    "DiskFull",
    "mask_address",
    "mask_secrets",
    "register_secrets",
]


class LayersearchError(Exception):
    """Base of every error layersearch raises on purpose."""

    #: Short machine-readable category, used in JSON error output.
    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(LayersearchError):
    code = "invalid_argument"


class LimitExceeded(ConfigError):
    code = "limit_exceeded"


class NotFound(LayersearchError):
    code = "not_found"


class ModelLoadError(LayersearchError):
    code = "model_load_error"


class ImportFailed(LayersearchError):
    code = "import_failed"


class CypherError(LayersearchError):
    code = "cypher_error"


class CypherSyntaxError(CypherError):
    code = "cypher_syntax_error"

    def __init__(
        self,
        message: str,
        *,
        query: str = "",
        line: int = 1,
        column: int = 1,
        expected: str | None = None,
    ) -> None:
        self.line = line
        self.column = column
        self.expected = expected
        self.query = query
        text = f"{message} at line {line}, column {column}"
        if expected:
            text += f" (expected {expected})"
        snippet = caret_snippet(query, line, column)
        if snippet:
            text += "\n" + snippet
        super().__init__(text)


class CypherReadOnlyError(CypherError):
    code = "cypher_read_only"


class CypherUnknownError(CypherError):
    code = "cypher_unknown_name"


class CypherReturnError(CypherError):
    code = "cypher_bad_return"


class CypherLimitError(CypherError):
    code = "cypher_limit"


class EmbeddingUnavailable(LayersearchError):
    code = "embedding_unavailable"


class ModelMismatch(LayersearchError):
    code = "model_mismatch"


class LLMUnavailable(LayersearchError):
    """A chat model (fact extraction) could not answer: unreachable, refused, rate limited."""

    code = "llm_unavailable"


class CallCancelled(LayersearchError):
    """A server call whose client disconnected or cancelled it: its work was stopped."""

    code = "cancelled"


class ServerBusy(LayersearchError):
    """An expensive server call found no free slot within its time budget."""

    code = "server_busy"


class StoreError(LayersearchError):
    code = "store_error"


class StoreBusy(StoreError):
    """Other readers or writers held the store past the lock timeout; nothing was changed."""

    code = "store_busy"


class StoreMissing(StoreError):
    """A read on a store that does not exist (nothing was created)."""

    code = "no_store"


class StoreEmpty(StoreError):
    """A read on a store that holds nothing to read."""

    code = "empty_store"


class StoreCorrupt(StoreError):
    """The store's database file is damaged (a checksum or header DuckDB cannot read)."""

    code = "store_corrupt"


class StoreReadOnly(StoreError):
    """A write on a store this process can only read."""

    code = "store_read_only"


class DiskFull(StoreError):
    """A write ran out of space; the store keeps its last complete state."""

    code = "disk_full"


def caret_snippet(text: str, line: int, column: int) -> str:
    """The offending line of ``text`` with a caret under ``column`` (both 1-based)."""
    lines = text.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1]
    if len(src) > 200:
        start = max(0, column - 100)
        src = src[start : start + 200]
        column -= start
    return f"  {src}\n  {' ' * max(0, column - 1)}^"


_DISK_FULL_RE = re.compile(r"no space left on device|disk is full|\(os error 28\)", re.IGNORECASE)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a full disk, whoever raised
    it: an OSError with ENOSPC, or DuckDB's or tantivy's text for it."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno == errno.ENOSPC:
            return True
        if isinstance(cur, DiskFull) or _DISK_FULL_RE.search(str(cur)):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def disk_full_error(where: object, exc: BaseException) -> DiskFull:
    """Our error for a write that ran out of space under ``where``."""
    if isinstance(exc, DiskFull):
        return exc
    return DiskFull(
        f"no space left on the device holding {where}: free some space and run the command "
        f"again; the store keeps its last complete state ({first_line(exc)})"
    )


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- credentials in messages -------------------------------------------------------------------

#: an address with a scheme (``postgresql://…``), up to a blank or a quote: the part of a
#: message a driver echoes an address in, well-formed or not
_ADDRESS = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>`]*""")
#: a password given as a keyword: libpq's ``password=…`` (quoted or not), a URL's
#: ``?password=…``
_KEYWORD = re.compile(
    r"""\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|"[^"]*"?|[^\s&'"]+)""", re.IGNORECASE
)
#: passwords shorter than this are not looked for in free text (every "a" would go)
_MIN_SECRET = 4
_secrets: set[str] = set()
_secrets_re: re.Pattern[str] | None = None
_secrets_lock = threading.Lock()


def mask_address(address: str) -> str:
    """``address`` with the password of its user part written ``***``, however malformed
    the rest (a bracket never closed, a bad ``%`` escape, a port that is not a number):
    everything between the first ``:`` after ``//`` and the last ``@`` is the password."""
    head, sep, rest = address.partition("://")
    if not sep:
        return address
    at = rest.rfind("@")
    if at < 0:
        return address
    user, colon, _ = rest[:at].partition(":")
    if not colon:
        return address
    return f"{head}://{user}:***{rest[at:]}"


def register_secrets(address: str) -> None:
    """Remember the passwords ``address`` carries (as written and %-decoded, in its user
    part or as ``password=…``), so :func:`mask_secrets` masks them wherever a message
    repeats them alone (libpq quotes the bad token of a malformed address)."""
    found: list[str] = []
    for m in _ADDRESS.finditer(address):
        rest = m.group().partition("://")[2]
        at = rest.rfind("@")
        if at >= 0 and ":" in rest[:at]:
            found.append(rest[:at].partition(":")[2])
    for m in _KEYWORD.finditer(address):
        found.append(m.group(2).strip("'\""))
    new = {v for f in found for v in (f, unquote(f)) if len(v) >= _MIN_SECRET}
    global _secrets_re
    with _secrets_lock:
        if new <= _secrets:
            return
        _secrets.update(new)
        alternatives = "|".join(re.escape(v) for v in sorted(_secrets, key=len, reverse=True))
        _secrets_re = re.compile(f"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


def mask_secrets(text: str) -> str:
    """``text`` (an error message, a log line) with the credentials of every address in it
    masked (:func:`mask_address`), ``password=…`` values masked, and every password
    :func:`register_secrets` has seen masked where it stands alone."""
    if "://" in text:
        text = _ADDRESS.sub(lambda m: mask_address(m.group()), text)
    if "password" in text.lower():
        text = _KEYWORD.sub(lambda m: m.group(1) + "***", text)
    pattern = _secrets_re
    if pattern is not None:
        text = pattern.sub("***", text)
    return text
