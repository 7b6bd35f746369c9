"""A read-only openCypher subset for filtering entities (see docs/cypher.md).

``run_filter(graph, text, params)`` parses (cached), evaluates and returns the
ids the filter selects; every failure is a :class:`~layersearch.errors.CypherError`
(or what the caller's own ``stop`` check raises).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from layersearch.errors import CypherLimitError
from layersearch.graph.cypher import ast
from layersearch.graph.cypher.evaluate import (
    MAX_BINDINGS,
    MAX_CONCAT_TOTAL,
    MAX_FILTER_SECONDS,
    MAX_HOPS,
    MAX_INT_BITS,
    MAX_LIST_ITEMS,
    MAX_REGEX_CHARS,
    MAX_REGEX_INPUT,
    MAX_REGEX_MATCH_SECONDS,
    MAX_REGEX_REPEATS,
    MAX_REGEX_WORK,
    MAX_STRING_CHARS,
)
from layersearch.graph.cypher.evaluate import evaluate as _evaluate
from layersearch.graph.cypher.parser import (
    MAX_EXPRESSION_DEPTH,
    MAX_NESTING,
    MAX_PATTERN_LENGTH,
    MAX_PATTERNS,
    parse_query,
)
from layersearch.graph.cypher.tokens import MAX_QUERY_CHARS
from layersearch.graph.graph import EntityGraph

__all__ = [
    "parse",
    "run_filter",
    "MAX_BINDINGS",
    "MAX_HOPS",
    "MAX_QUERY_CHARS",
    "MAX_REGEX_CHARS",
    "MAX_REGEX_INPUT",
    "MAX_REGEX_MATCH_SECONDS",
    "MAX_REGEX_REPEATS",
    "MAX_REGEX_WORK",
    "MAX_FILTER_SECONDS",
    "MAX_INT_BITS",
    "MAX_STRING_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_CONCAT_TOTAL",
    "MAX_NESTING",
    "MAX_EXPRESSION_DEPTH",
    "MAX_PATTERN_LENGTH",
    "MAX_PATTERNS",
]


@lru_cache(maxsize=512)
def parse(text: str) -> ast.Query:
    """Parse and check a filter (cached by text); raises only CypherError subclasses."""
    return parse_query(text)


def run_filter(
    graph: EntityGraph,
    text: str,
    params: dict[str, Any] | None = None,
    *,
    stop: Callable[[], None] | None = None,
    stop_at: float = math.inf,
) -> list[str]:
    """The entity ids ``text`` selects in ``graph``, each once: in ORDER BY order when the
    filter has one, otherwise sorted. Raises only CypherError subclasses, and what
    ``stop`` raises: the caller's check of its own budget, called as the evaluation goes
    (``stop_at``: the time.monotonic() of the caller's deadline)."""
    query = parse(text)
    try:
        return _evaluate(graph, query, params, stop=stop, stop_at=stop_at)
    except RecursionError as exc:  # the bounds above are meant to make this unreachable
        raise CypherLimitError(
            f"the filter is nested too deeply to evaluate (limits MAX_EXPRESSION_DEPTH "
            f"{MAX_EXPRESSION_DEPTH}, MAX_PATTERN_LENGTH {MAX_PATTERN_LENGTH}); flatten it"
        ) from exc
