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

__all__ = ["Resolver", "Resolution", "in_scope", "query_strings", "MAX_QUERY_DEPTH"]

MAX_QUERY_DEPTH = 16
MAX_REFERENCES = 1000
MAX_CANDIDATES_SHOWN = 6

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(\s*(?:distinct\s+)?([^()\s]+)\s*\)\s*$", re.I)
_SUFFIX_AGG = re.compile(r"^\s*([^:\s]+)\s*:\s*([A-Za-z_]\w*)\s*$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MEMORY = re.compile(r"^\s*memory\s*:\s*(\d{1,18})\s*$", re.I)
# Keys of a query dict whose strings are free text (SQL, prose), not references.
_FREE_TEXT_KEYS = frozenset({"sql", "description", "comment", "note", "learning", "title"})


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
        """``([id], None)`` when resolved; ``([], warning)`` otherwise (or candidates on ambiguity)."""
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
                    for m in _IDENT.finditer(text):
                        ids, _ = self.resolve_one(m.group(0), datasource)
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
    """The strings of an example query, ``(text, is_expression)``, after the checks every
    query gets before anything is resolved: a JSON object, nested at most
    ``MAX_QUERY_DEPTH`` deep, holding at most ``MAX_REFERENCES`` strings."""
    if not isinstance(query, Mapping):
        raise ConfigError("query must be a JSON object (measures, dimensions, filters…)")
    return _query_strings(query)


def _query_strings(query: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """Strings in an example-query dict: (text, is_expression). References are single tokens;
    expressions (filters like ``status = 'paid'``) are scanned for identifiers."""
    out: list[tuple[str, bool]] = []

    def walk(value: Any, key: str, depth: int) -> None:
        if depth > MAX_QUERY_DEPTH:
            raise LimitExceeded(
                f"query is nested deeper than {MAX_QUERY_DEPTH} levels; flatten it "
                "(measures, dimensions, filters are lists of strings or {name: …} objects)"
            )
        if len(out) > MAX_REFERENCES:
            raise LimitExceeded(
                f"query holds more than {MAX_REFERENCES} strings; pass only the measures, "
                "dimensions and filters that matter for the search"
            )
        if isinstance(value, str):
            if key in _FREE_TEXT_KEYS:
                return
            text = value.strip()
            is_expr = not _is_reference(text)
            out.append((text, is_expr))
        elif isinstance(value, Mapping):
            for k in sorted(value, key=str):
                walk(value[k], str(k).lower(), depth + 1)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, key, depth + 1)

    walk(query, "", 0)
    return out


def _is_reference(text: str) -> bool:
    if not text or any(ch.isspace() for ch in text.strip()):
        return bool(_CALL.match(text))
    return bool(
        _IDENT.fullmatch(text)
        or _SUFFIX_AGG.match(text)
        or _CALL.match(text)
        or _MEMORY.match(text)
    )
