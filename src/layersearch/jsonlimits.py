"""JSON from users, parsed with bounds: one helper for every entry point.

``json.loads`` on input nobody checked has two failure modes that escape as
foreign exceptions: nesting deeper than Python's recursion limit
(``RecursionError``), and integers of more than 4,300 digits (``ValueError`` from
Python's int limit, after quadratic-time digit conversion below it). Every
place that parses user JSON (CLI ``--query`` / ``--param``, ``memory add
--query``, conversation exports, Spider ``tables.json``, summaries, evaluation
files) calls :func:`load_json`, which refuses both with an error naming the
input and the limit; :func:`check_value` applies the same bounds to values that
arrive already parsed (Python API ``params``).
"""

from __future__ import annotations

import json
from typing import Any

from layersearch.errors import LayersearchError, LimitExceeded

__all__ = ["MAX_JSON_DEPTH", "MAX_JSON_INT_DIGITS", "check_value", "load_json"]

#: deepest nesting of arrays and objects accepted in user JSON
MAX_JSON_DEPTH = 64
#: most digits an integer in user JSON may have (a 64-bit integer has 19)
MAX_JSON_INT_DIGITS = 100
_INT_BOUND = 10**MAX_JSON_INT_DIGITS


class _TooLong(ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _parse_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_JSON_INT_DIGITS:
        raise _TooLong(digits)
    return int(text)


def load_json(
    text: str | bytes,
    what: str,
    *,
    error: type[LayersearchError] = LimitExceeded,
) -> Any:
    """``json.loads(text)`` within :data:`MAX_JSON_DEPTH` and :data:`MAX_JSON_INT_DIGITS`.

    A bound exceeded raises ``error`` naming ``what`` (the file, line or argument) and
    the limit; malformed JSON still raises ``json.JSONDecodeError``, for the caller
    to report with its line and column as before.
    """
    try:
        value = json.loads(text, parse_int=_parse_int)
    except _TooLong as exc:
        raise error(
            f"{what}: an integer has {exc.digits:,} digits, over the limit of "
            f"{MAX_JSON_INT_DIGITS} (MAX_JSON_INT_DIGITS); write it as a string"
        ) from None
    except RecursionError:
        raise error(_too_deep(what)) from None
    check_value(value, what, error=error)
    return value


def _too_deep(what: str) -> str:
    return (
        f"{what}: nested more than {MAX_JSON_DEPTH} levels deep (limit MAX_JSON_DEPTH); flatten it"
    )


def check_value(
    value: Any,
    what: str,
    *,
    error: type[LayersearchError] = LimitExceeded,
    int_bits: int | None = None,
) -> None:
    """Refuse ``value`` (parsed JSON, or the same shapes built in Python) nested deeper
    than :data:`MAX_JSON_DEPTH`, or holding an integer of more than
    :data:`MAX_JSON_INT_DIGITS` digits (or, with ``int_bits``, outside that many signed
    bits). Iterative: a value nested 100,000 deep is refused, not a RecursionError."""
    _EXIT = object()
    stack: list[tuple[Any, int]] = [(value, 0)]
    path: set[int] = set()  # ids of the containers being walked (a cycle returns to one)
    limit = None if int_bits is None else 2 ** (int_bits - 1)
    while stack:
        item, depth = stack.pop()
        if item is _EXIT:
            path.discard(depth)  # depth holds the id of the container being left
            continue
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                raise error(_too_deep(what))
            if id(item) in path:
                raise error(f"{what}: a value contains itself (a cycle); JSON cannot")
            path.add(id(item))
            stack.append((_EXIT, id(item)))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif type(item) is int:
            if limit is not None and not -limit <= item < limit:
                raise error(
                    f"{what}: the integer {_short(item)} does not fit in {int_bits} bits; "
                    "pass a float or a string"
                )
            if abs(item) >= _INT_BOUND:
                raise error(
                    f"{what}: an integer has more than {MAX_JSON_INT_DIGITS} digits (limit "
                    "MAX_JSON_INT_DIGITS); write it as a string"
                )


def _short(value: int) -> str:
    if value.bit_length() > 200:
        return f"of {value.bit_length():,} bits"
    return f"{value:,}"
