"""Helpers shared by the foreign-format importers: name sanitising, a per-model
leaf namespace (columns, measures and aggregations share one), descriptions that
carry synonyms and tags, and measure formulas."""

from __future__ import annotations

import re
from collections.abc import Iterable

from layersearch.semantic.model import Column, Measure, Model

# Ids are dotted paths and memories use ``memory:``; these characters (and
# whitespace) would break them, everything else is kept as the source wrote it.
_UNSAFE = re.compile(r"[\s.:]+")
_NON_WORD = re.compile(r"[^A-Za-z0-9_]+")


def safe_name(name: str) -> str:
    """A source name made usable inside an id: each run of whitespace, ``.`` or
    ``:`` becomes one ``_``; leading/trailing ones are dropped. Case is kept."""
    cleaned = _UNSAFE.sub("_", name.strip()).strip("_")
    return cleaned or "_"


def slug(text: str) -> str:
    """A datasource name derived from a file or folder name (``dbt-omg`` → ``dbt_omg``)."""
    cleaned = _NON_WORD.sub("_", text.strip()).strip("_")
    return cleaned or "default"


def unique_name(name: str, taken: set[str]) -> str:
    """``name`` or ``name_2``, ``name_3``… — the first not in ``taken`` (case-insensitive)."""
    candidate, n = name, 2
    while candidate.lower() in taken:
        candidate = f"{name}_{n}"
        n += 1
    taken.add(candidate.lower())
    return candidate


class LeafNames:
    """Tracks one model's leaf names case-insensitively, because ids resolve
    case-insensitively: ``Name`` and ``name`` would be the same entity."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.kinds: dict[str, str] = {}
        for c in model.columns:
            self.kinds[c.name.lower()] = "column"
        for me in model.measures:
            self.kinds[me.name.lower()] = "measure"
        for a in model.aggregations:
            self.kinds[a.name.lower()] = "aggregation"

    def owner(self, name: str) -> str | None:
        """The kind already using ``name``, or None when it is free."""
        return self.kinds.get(name.lower())

    def claim(self, name: str, kind: str, skipped: list[str], where: str) -> bool:
        """Reserve ``name``; when taken, record why in ``skipped`` and return False."""
        taken = self.kinds.get(name.lower())
        if taken is not None:
            skipped.append(
                f"{where}: {kind} '{name}' skipped: model '{self.model.name}' already has a "
                f"{taken} of that name (names are case-insensitive)"
            )
            return False
        self.kinds[name.lower()] = kind
        return True

    def add(self, leaf: Column | Measure, skipped: list[str], where: str) -> bool:
        """Claim ``leaf``'s name and append it to the model's columns or measures;
        a taken name is noted in ``skipped`` and the leaf dropped (returns False)."""
        kind = "column" if isinstance(leaf, Column) else "measure"
        if not self.claim(leaf.name, kind, skipped, where):
            return False
        if isinstance(leaf, Column):
            self.model.columns.append(leaf)
        else:
            self.model.measures.append(leaf)
        return True


def describe(
    description: str | None,
    *,
    synonyms: Iterable[str] = (),
    tags: Iterable[str] = (),
    notes: Iterable[str] = (),
) -> str | None:
    """One description carrying what a format says about an entity beyond its own
    description: ``notes`` (sentences), ``Tags: …`` and ``Synonyms: …``. The catalog
    has no synonym field; the description is indexed by full text and dense search
    and shown by ``inspect``, so this is where synonyms get searched."""
    parts = [" ".join(description.split())] if description and description.strip() else []
    parts.extend(" ".join(n.split()) for n in notes if n and n.strip())
    # each part a sentence, so the appended ones do not run into the description
    parts = [p if p[-1] in ".!?:;" else f"{p}." for p in parts]
    tag_list = _distinct(tags)
    if tag_list:
        parts.append(f"Tags: {', '.join(tag_list)}.")
    syn_list = _distinct(synonyms)
    if syn_list:
        parts.append(f"Synonyms: {', '.join(syn_list)}.")
    return " ".join(parts) or None


def _distinct(values: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for v in values:
        text = " ".join(str(v).split())
        if text and text.lower() not in seen:
            seen[text.lower()] = text
    return list(seen.values())


def with_filters(formula: str | None, filters: Iterable[str]) -> str | None:
    """``formula [filter: a and b]``: the filters a measure applies, as dbt metrics show them."""
    text = " and ".join(" ".join(f.split()) for f in filters if f and f.strip())
    if formula and text:
        return f"{formula} [filter: {text}]"
    return formula


#: aggregation names of Cube and LookML measure types → the function in a formula
AGG_FUNCTIONS = {
    "count": "count",
    "count_distinct": "count_distinct",
    "countdistinct": "count_distinct",
    "countdistinctapprox": "count_distinct_approx",
    "count_distinct_approx": "count_distinct_approx",
    "sum": "sum",
    "sum_distinct": "sum_distinct",
    "avg": "avg",
    "average": "avg",
    "average_distinct": "avg_distinct",
    "min": "min",
    "max": "max",
    "median": "median",
    "median_distinct": "median",
    "percentile": "percentile",
    "running_total": "running_total",
    "runningtotal": "running_total",
    "list": "list",
}
#: measure types whose SQL is the whole formula
PLAIN_TYPES = ("number", "string", "time", "boolean", "date", "yesno")


def measure_formula(mtype: str | None, sql: str | None) -> str | None:
    """A measure's formula from its type and SQL: ``sum(amount)``, ``count(*)``, or the
    SQL itself for computed (``number``) measures."""
    t = (mtype or "").lower()
    expr = " ".join(sql.split()) if sql and sql.strip() else None
    if t in AGG_FUNCTIONS:
        return f"{AGG_FUNCTIONS[t]}({expr or '*'})"
    return expr


def sql_table(sql: str | None) -> str | None:
    """A model's source: a table name as is, a query in parentheses."""
    if not sql or not sql.strip():
        return None
    text = sql.strip()
    return f"({text})" if any(ch.isspace() for ch in text) else text
