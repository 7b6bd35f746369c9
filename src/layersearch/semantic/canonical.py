"""Canonical ids and the resolution of user strings to them.

Accepted forms, case-insensitive: a full id (``shop.orders.order_total``), a
dotted suffix (``orders.order_total``), a bare name unique in scope
(``order_total``), aggregation forms (``sum(order_total)``,
``order_total:sum``, ``count(distinct customer_id)``) which resolve to the
column, and ``memory:<n>``. Ambiguous or unknown strings are dropped with a
warning that names the candidates.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from layersearch.errors import ConfigError, LimitExceeded
from layersearch.semantic.model import Entity
from layersearch.textcheck import check_id

__all__ = [
    "MAX_QUERY_DEPTH",
    "QUERY_REFERENCE_KEYS",
    "Resolution",
    "Resolver",
    "expression_identifiers",
    "in_scope",
    "query_strings",
]

MAX_QUERY_DEPTH = 16
MAX_REFERENCES = 1000
MAX_CANDIDATES_SHOWN = 6

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(\s*(?:distinct\s+)?([^()\s]+)\s*\)\s*$", re.I)
_SUFFIX_AGG = re.compile(r"^\s*([^:\s]+)\s*:\s*([A-Za-z_]\w*)\s*$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MEMORY = re.compile(r"^\s*memory\s*:\s*(\d{1,18})\s*$", re.I)


def in_scope(entity_id: str, datasource: str | None) -> bool:
    """``prod.x`` is in ``prod``; ``prod_v2.x`` is not."""
    if datasource is None:
        return True
    return entity_id == datasource or entity_id.startswith(datasource + ".")


@dataclass
class Resolution:
    ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, entity_id: str) -> None:
        if entity_id not in self.ids:
            self.ids.append(entity_id)


class Resolver:
    """Resolves strings against the visible (non-hidden) entities."""

    def __init__(self, entities: Iterable[Entity], memory_exists: Callable[[str], bool]) -> None:
        by_id: dict[str, str] = {}
        # every dotted suffix (1..n segments, lowercased) → ids ending with it
        by_suffix: dict[str, list[str]] = {}
        for e in entities:
            if e.hidden:
                continue
            low = e.id.lower()
            by_id[low] = e.id
            parts = low.split(".")
            for i in range(1, len(parts)):
                by_suffix.setdefault(".".join(parts[i:]), []).append(e.id)
        self._exact: Callable[[str], str | None] = by_id.get
        self._suffix: Callable[[str], Sequence[str]] = lambda key: by_suffix.get(key, ())
        self._all_names: Callable[[], Iterable[str]] = lambda: set(by_suffix) | set(by_id)
        self._memory_exists = memory_exists
        self._names: list[str] | None = None

    @classmethod
    def from_lookups(
        cls,
        exact: Callable[[str], str | None],
        suffix: Callable[[str], Sequence[str]],
        names: Callable[[], Iterable[str]],
        memory_exists: Callable[[str], bool],
    ) -> Resolver:
        """A resolver over prebuilt tables (e.g. persisted ones), without scanning entities:
        ``exact`` maps a lowercased id to the id, ``suffix`` a lowercased dotted suffix to
        the ids ending with it, ``names`` gives every key (for "did you mean")."""
        self = cls([], memory_exists)
        self._exact, self._suffix, self._all_names = exact, suffix, names
        return self

    def _candidates(self, key: str, datasource: str | None) -> list[str]:
        exact = self._exact(key)
        if exact is not None and in_scope(exact, datasource):
            return [exact]
        found = [i for i in self._suffix(key) if in_scope(i, datasource)]
        return sorted(set(found))

    def _did_you_mean(self, key: str) -> list[str]:
        if self._names is None:
            self._names = sorted(set(self._all_names()))
        return difflib.get_close_matches(key, self._names, n=3, cutoff=0.75)

    def resolve_one(self, text: str, datasource: str | None = None) -> tuple[list[str], str | None]:
        """``([id], None)`` when resolved; ``([], warning)`` otherwise (or candidates on
        ambiguity); a reference holding an invisible character is refused (ConfigError)."""
        check_id(text, "entity reference")
        raw = text.strip()
        if not raw:
            return [], "ignored an empty entity reference"
        shown = raw if len(raw) <= 80 else raw[:77] + "..."
        m = _MEMORY.match(raw)
        if m:
            mid = f"memory:{int(m.group(1))}"
            if self._memory_exists(mid):
                return [mid], None
            return [], f"unknown memory '{shown}': `layersearch memory list` shows the ids"
        forms = [raw.lower()]
        call = _CALL.match(raw)
        if call:
            forms.append(call.group(2).lower())
        suffix = _SUFFIX_AGG.match(raw)
        if suffix:
            forms.append(suffix.group(1).lower())
        for key in forms:
            cands = self._candidates(key, datasource)
            if len(cands) == 1:
                return cands, None
            if len(cands) > 1:
                listed = ", ".join(cands[:MAX_CANDIDATES_SHOWN])
                more = (
                    f" and {len(cands) - MAX_CANDIDATES_SHOWN} more"
                    if len(cands) > MAX_CANDIDATES_SHOWN
                    else ""
                )
                return [], (
                    f"ambiguous entity '{shown}' dropped: it matches {listed}{more}; "
                    "pass a longer id (model.column or datasource.model.column) or a datasource"
                )
        scope = f" in datasource '{datasource}'" if datasource else ""
        hint = self._did_you_mean(forms[-1])
        tail = f"; did you mean {', '.join(hint)}?" if hint else ""
        return [], f"unknown entity '{shown}'{scope} dropped{tail}"

    def resolve(
        self,
        entities: Iterable[str] | None,
        query: Mapping[str, Any] | None,
        datasource: str | None = None,
    ) -> Resolution:
        res = Resolution()
        refs = list(entities or [])
        if len(refs) > MAX_REFERENCES:
            raise LimitExceeded(
                f"{len(refs)} entities given; the limit is {MAX_REFERENCES} per request "
                "(split them over several searches, or name their model instead)"
            )
        for text in refs:
            if not isinstance(text, str):
                raise ConfigError(f"entities must be strings, got {type(text).__name__}")
            ids, warning = self.resolve_one(text, datasource)
            for i in ids:
                res.add(i)
            if warning:
                res.warnings.append(warning)
        if query is not None:
            for text, is_expression in query_strings(query):
                if is_expression:
                    for ident in expression_identifiers(text):
                        ids, _ = self.resolve_one(ident, datasource)
                        for i in ids:
                            res.add(i)
                else:
                    ids, warning = self.resolve_one(text, datasource)
                    for i in ids:
                        res.add(i)
                    if warning:
                        res.warnings.append(f"query: {warning}")
        return res


def query_strings(query: Any) -> list[tuple[str, bool]]:
    """The entity references of an example query, ``(text, is_expression)``, after the
    checks every query gets before anything is resolved: a JSON object, nested at most
    ``MAX_QUERY_DEPTH`` deep, holding at most ``MAX_REFERENCES`` references.

    Only the keys that name entities are read (:data:`QUERY_REFERENCE_KEYS` and the
    keys of their objects); values (granularities, date ranges, literals, limits) and
    unknown keys never are. A reference is a single id-like token; an expression (a
    filter such as ``status = 'paid'``, an order such as ``total desc``) contributes
    the identifiers outside its quoted literals."""
    if not isinstance(query, Mapping):
        raise ConfigError("query must be a JSON object (measures, dimensions, filters…)")
    _check_bounds(query)
    out: list[tuple[str, bool]] = []
    for key in sorted(query, key=str):
        role = _ROLE_OF_KEY.get(str(key).lower())
        if role is not None:
            _references(query[key], role, out)
    return out


#: The keys of an example query that name entities, by what their values hold. The
#: native shape (docs/yaml-format.md) and SLayer's query shape both fit: ``measures``,
#: ``dimensions`` … hold ids or objects naming one (``{"name": …}``, ``{"formula": …}``);
#: ``time_dimensions`` objects name theirs in ``dimension``; ``filters`` hold SQL-like
#: conditions (or objects naming a ``member`` / ``field``); ``order`` holds ``{"by": …}``
#: objects or ``"id desc"`` strings.
QUERY_REFERENCE_KEYS: dict[str, frozenset[str]] = {
    "reference": frozenset(
        {
            "measures",
            "measure",
            "dimensions",
            "dimension",
            "metrics",
            "metric",
            "columns",
            "fields",
            "group_by",
            "groupby",
            "entities",
            "source_model",
            "model",
            "models",
            "segments",
        }
    ),
    "time": frozenset({"time_dimensions", "time_dimension"}),
    "filter": frozenset({"filters", "filter", "where", "having"}),
    "order": frozenset({"order", "order_by", "orderby", "sort"}),
}
_ROLE_OF_KEY = {k: role for role, keys in QUERY_REFERENCE_KEYS.items() for k in keys}
#: Keys of an object (in a measures / dimensions / filters / order list) naming its entity.
_OBJECT_REFERENCE_KEYS = frozenset(
    {"name", "id", "formula", "dimension", "column", "measure", "member", "field", "by", "model"}
)
#: Keys of a filter object that hold nested conditions.
_FILTER_NESTING_KEYS = frozenset({"and", "or", "not", "filters", "conditions"})
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_EXPR_IDENT = re.compile(r"(?<![\w.'\"])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SQL_WORDS = frozenset(
    [
        "and",
        "or",
        "not",
        "in",
        "is",
        "null",
        "like",
        "ilike",
        "between",
        "true",
        "false",
        "asc",
        "desc",
        "nulls",
        "first",
        "last",
        "case",
        "when",
        "then",
        "else",
        "end",
        "as",
        "distinct",
        "exists",
        "any",
        "all",
    ]
)


def _check_bounds(query: Mapping[str, Any]) -> None:
    """Depth and size bounds over the whole query (iterative: no recursion on input)."""
    seen = 0
    stack: list[tuple[Any, int]] = [(query, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_QUERY_DEPTH:
            raise LimitExceeded(
                f"query is nested deeper than {MAX_QUERY_DEPTH} levels; flatten it "
                "(measures, dimensions, filters are lists of strings or {name: …} objects)"
            )
        if isinstance(value, str):
            seen += 1
            if seen > MAX_REFERENCES:
                raise LimitExceeded(
                    f"query holds more than {MAX_REFERENCES} strings; pass only the measures, "
                    "dimensions and filters that matter for the search"
                )
        elif isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)


def _references(value: Any, role: str, out: list[tuple[str, bool]]) -> None:
    """The references ``value`` holds under a key of ``role`` (depth already bounded)."""
    if isinstance(value, list | tuple):
        for v in value:
            _references(v, role, out)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            return
        if role not in ("filter", "order"):
            check_id(text, "query reference")  # an id, not an expression
        if role in ("filter", "order") or not _is_reference(text):
            out.append((text, True))
        else:
            out.append((text, False))
    elif isinstance(value, Mapping):
        for k in sorted(value, key=str):
            low = str(k).lower()
            if low in _OBJECT_REFERENCE_KEYS:
                # an object's own name is a reference even under filters ({member, values})
                _references(value[k], "reference", out)
            elif role == "filter" and low in _FILTER_NESTING_KEYS:
                _references(value[k], "filter", out)


def expression_identifiers(text: str) -> list[str]:
    """The identifiers of a SQL-like expression outside its quoted literals and keywords."""
    bare = _QUOTED.sub(" ", text)
    return [m.group(0) for m in _EXPR_IDENT.finditer(bare) if m.group(0).lower() not in _SQL_WORDS]


def _is_reference(text: str) -> bool:
    if not text or any(ch.isspace() for ch in text.strip()):
        return bool(_CALL.match(text))
    return bool(
        _IDENT.fullmatch(text)
        or _SUFFIX_AGG.match(text)
        or _CALL.match(text)
        or _MEMORY.match(text)
    )
