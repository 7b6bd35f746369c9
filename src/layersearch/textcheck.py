"""Text that is stored must be valid Unicode: a lone surrogate (``"\\ud800"``, which a JSON
``\\ud800`` escape without its pair, or a Python caller, can produce) is refused where it
enters, because once stored every JSON output that shows it fails to encode.

argv and MCP cannot carry one (both are UTF-8 on the wire); the Python API, the JSON and
YAML files importers read, and JSON options can, so the API checks its arguments and
the stored JSON columns are written through :func:`json_text`. A raw lone surrogate in
any other column is refused by DuckDB itself ("cannot encode str as UTF-8"), which the
store reports as the same ConfigError.

Ids (entity ids in model files and references, memory ids, the ids ``inspect`` takes)
must also be written with visible characters: :func:`check_id` refuses one holding a
character nobody sees (NUL and other controls, zero-width spaces and joiners,
bidirectional overrides), which would otherwise be stored, matched or printed as it is
and look like another id. Messages show such characters as ``\\uXXXX`` (:func:`shown`).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from typing import Any

from layersearch.errors import ConfigError, LayersearchError

__all__ = [
    "check_id",
    "check_ids",
    "check_text",
    "check_texts",
    "invisible_at",
    "json_text",
    "shown",
]

#: the Unicode categories of characters nobody sees: controls (C0, DEL, C1), format
#: characters (zero-width space and joiners, bidirectional marks and overrides, the
#: byte-order mark, the soft hyphen), line and paragraph separators, surrogates
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def invisible_at(text: str) -> int | None:
    """The index of the first invisible character of ``text`` (see
    :data:`INVISIBLE_CATEGORIES`), or None."""
    if text.isascii() and text.isprintable():
        return None
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in INVISIBLE_CATEGORIES:
            return i
    return None


def shown(text: str) -> str:
    """``text`` with each invisible character written ``\\uXXXX``, for a message."""
    if invisible_at(text) is None:
        return text
    return "".join(
        f"\\u{ord(ch):04x}" if unicodedata.category(ch) in INVISIBLE_CATEGORIES else ch
        for ch in text
    )


def check_id(value: Any, what: str, error: type[LayersearchError] = ConfigError) -> None:
    """Refuse an id (``what`` names it: "entity reference", "memory id", …) holding an
    invisible character, with ``error``; anything that is not a string passes (the
    caller checks types)."""
    if not isinstance(value, str):
        return
    i = invisible_at(value)
    if i is None:
        return
    ch = value[i]
    if unicodedata.category(ch) == "Cs":
        raise error(str(_refuse(value, what)))
    name = unicodedata.name(ch, "a control character")
    raise error(
        f"{what} '{shown(value)}' holds an invisible character, U+{ord(ch):04X} ({name}), at "
        f"character {i + 1}: ids are written with visible characters only"
    )


def check_ids(
    values: Iterable[Any], what: str, error: type[LayersearchError] = ConfigError
) -> None:
    for v in values:
        check_id(v, what, error)


def _position(text: str) -> int:
    return next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)


def _refuse(text: str, what: str) -> ConfigError:
    i = _position(text)
    start = max(0, i - 20)
    shown = text[start:i].encode("utf-8", "replace").decode() + "…"
    return ConfigError(
        f"{what} holds a lone surrogate (U+{ord(text[i]):04X}) at character {i + 1}, after "
        f"{shown!r}: text must be valid Unicode (a JSON \\u{ord(text[i]):04x} escape without "
        "its pair?)"
    )


def check_text(value: Any, what: str) -> None:
    """Refuse a string holding a lone surrogate; anything else passes."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _refuse(value, what) from None


def check_texts(values: Iterable[Any], what: str) -> None:
    for v in values:
        check_text(v, what)


def json_text(value: Any, what: str, *, sort_keys: bool = False) -> str:
    """``json.dumps(value)`` for a stored JSON column, refusing a lone surrogate: the ASCII
    form escapes it (``\\ud800``), so the database would take it and every JSON output
    of it would fail later. The check costs a substring test unless an escaped surrogate
    (a valid pair, or not) is in the text."""
    text = json.dumps(value, sort_keys=sort_keys)
    if "\\ud" in text:
        check_text(json.dumps(value, sort_keys=sort_keys, ensure_ascii=False), what)
    return text
