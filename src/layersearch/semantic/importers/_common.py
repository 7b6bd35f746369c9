"""Helpers shared by the foreign-format importers: name sanitising and a
per-model leaf namespace (columns, measures and aggregations share one)."""

from __future__ import annotations

import re

from layersearch.semantic.model import Model

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
