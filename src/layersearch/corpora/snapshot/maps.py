"""Read-only mappings over :class:`EntityTables`: entities and edges decoded on access."""

from __future__ import annotations

from collections.abc import (
    ItemsView,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any, TypeVar

import numpy as np

from layersearch.corpora.snapshot.tables import EntityTables
from layersearch.ranking.persist import sorted_position
from layersearch.semantic.model import EdgeRecord, Entity

V = TypeVar("V")

#: decoded entities kept per snapshot (a bound, so a long-running server stays small)
_CACHE_MAX = 50_000


class _Values(ValuesView[Entity]):
    def __iter__(self) -> Iterator[Entity]:
        m: EntityMap = self._mapping  # type: ignore[attr-defined]
        t = m.tables
        for i in range(len(t.ids)):
            yield m._cached(i)


class _Items(ItemsView[str, Entity]):
    def __iter__(self) -> Iterator[tuple[str, Entity]]:
        for e in _Values(self._mapping):  # type: ignore[attr-defined]
            yield e.id, e


class _Decoded(Mapping[str, V]):
    """A read-only mapping whose values are decoded from the snapshot tables on access and
    kept (up to ``_CACHE_MAX``) for the next ask."""

    _cache: dict[str, V]

    def _find(self, key: str) -> int:
        raise NotImplementedError

    def _decode(self, i: int) -> V:
        raise NotImplementedError

    def __getitem__(self, key: str) -> V:
        try:
            return self._cache[key]
        except KeyError:
            pass
        i = self._find(key)
        if i < 0:
            raise KeyError(key)
        value = self._decode(i)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = value
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self._cache or self._find(key) >= 0)


#: Most ids whose kind an :class:`EntityMap` remembers (a few MiB).
KIND_CACHE = 65_536


class EntityMap(_Decoded[Entity]):
    """Entity id → :class:`Entity`, decoded on access from :class:`EntityTables`."""

    def __init__(self, tables: EntityTables) -> None:
        self.tables = tables
        self._cache: dict[str, Entity] = {}
        # id → kind (None: not an entity), for the ids searches keep ranking: a hash probe
        # in Python costs a few µs and a search asks for a few hundred ids.
        self._kinds: dict[str, str | None] = {}
        # id → visible (an entity that is not hidden), for the same reason
        self._visible: dict[str, bool] = {}

    def _cached(self, i: int) -> Entity:
        key = self.tables.ids[i]
        e = self._cache.get(key)
        if e is None:
            e = self.tables.entity(i)
        return e

    def clear_cache(self) -> None:
        self._cache.clear()
        self._kinds.clear()
        self._visible.clear()

    def _find(self, key: str) -> int:
        return self.tables.id_index.find(key)

    def _decode(self, i: int) -> Entity:
        return self.tables.entity(i)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables.ids)

    def __len__(self) -> int:
        return len(self.tables.ids)

    def values(self) -> ValuesView[Entity]:
        return _Values(self)

    def items(self) -> ItemsView[str, Entity]:
        return _Items(self)

    # -- without decoding -----------------------------------------------------------------------

    def kind_of(self, key: str) -> str | None:
        try:
            return self._kinds[key]
        except KeyError:
            pass
        i = self.tables.id_index.find(key)
        kind = None if i < 0 else self.tables.kinds[int(self.tables.kind_codes[i])]
        if len(self._kinds) >= KIND_CACHE:
            self._kinds.clear()
        self._kinds[key] = kind
        return kind

    def positions_by_hash(self, hashes: Sequence[int | None]) -> np.ndarray:
        """The position of the id with each :func:`key_hash` value, -1 where none has it."""
        t = self.tables
        h = np.fromiter((-1 if x is None else x for x in hashes), np.int64, len(hashes))
        if not len(t.hash_sorted):
            return np.full(len(h), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(t.hash_sorted, h), len(t.hash_sorted) - 1)
        return np.where(t.hash_sorted[at] == h, t.hash_order[at], -1)

    def is_visible(self, key: str) -> bool:
        try:
            return self._visible[key]
        except KeyError:
            pass
        i = self.tables.id_index.find(key)
        visible = i >= 0 and not bool(self.tables.hidden[i])
        if len(self._visible) >= KIND_CACHE:
            self._visible.clear()
        self._visible[key] = visible
        return visible

    def visible_in_scope(self, datasource: str) -> list[str]:
        """Visible ids equal to ``datasource`` or under ``datasource.`` (a range of the sorted ids)."""
        t = self.tables
        out = []
        i = t.id_index.find(datasource)
        if i >= 0 and not t.hidden[i]:
            out.append(datasource)
        # ids starting with "ds." sort between "ds." and "ds/" ("/" follows ".")
        lo = sorted_position(t.ids, datasource + ".")
        hi = sorted_position(t.ids, datasource + "/")
        hidden = t.hidden[lo:hi]
        out.extend(t.ids[j] for j in range(lo, hi) if not hidden[j - lo])
        return out


class EdgeMap(_Decoded[list[EdgeRecord]]):
    """Source id → its outgoing edges (ordered by type, then target), decoded on access."""

    def __init__(self, tables: EntityTables) -> None:
        self.tables = tables
        self._cache: dict[str, list[EdgeRecord]] = {}
        self._typed: dict[tuple[str, str], list[EdgeRecord]] = {}

    def clear_cache(self) -> None:
        self._cache.clear()
        self._typed.clear()

    def _find(self, key: str) -> int:
        return self.tables.edge_src.find(key)

    def _decode(self, i: int) -> list[EdgeRecord]:
        return self.tables.edges_at(i)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables.edge_src.keys)

    def __len__(self) -> int:
        return len(self.tables.edge_src.keys)

    def of_type(self, key: str, edge_type: str) -> list[EdgeRecord]:
        """``self.get(key, [])`` restricted to one edge type, decoding only those edges."""
        try:
            return [e for e in self._cache[key] if e.type == edge_type]
        except KeyError:
            pass
        typed = self._typed.get((key, edge_type))
        if typed is None:
            k = self._find(key)
            typed = [] if k < 0 else self.tables.edges_at(k, edge_type)
            if len(self._typed) >= _CACHE_MAX:
                self._typed.clear()
            self._typed[(key, edge_type)] = typed
        return typed

    def all_of_type(self, edge_type: str) -> list[EdgeRecord]:
        """Every edge of one type, by source, decoding only those (nothing is cached)."""
        t = self.tables
        return [e for k in range(len(t.edge_src.keys)) for e in t.edges_at(k, edge_type)]

    def all(self) -> list[EdgeRecord]:
        """Every edge, in the store's order (type, source, target)."""
        t = self.tables
        out = [e for k in range(len(t.edge_src.keys)) for e in t.edges_at(k)]
        out.sort(key=lambda e: (e.type, e.src, e.dst))
        return out
