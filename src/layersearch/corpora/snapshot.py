"""The semantic layer as compact, persisted tables: what a search needs, without loading it.

A search touches a few hundred entities (the hits it renders, the kinds of the
candidates it fuses, the references it resolves); loading a million
:class:`Entity` objects to serve it took seconds and gigabytes. Here entities,
their outgoing edges and the resolver's lookup tables are a handful of arrays
(:class:`EntityTables`), saved beside the full-text index and mapped back by
the next process; an entity is decoded from its row when asked for.

On disk, like the full-text index: ``<index_dir>/snapshot/CURRENT`` names a
generation directory holding ``tables/`` (the arrays), ``snapshot.json`` (the
store generation it reflects, a hash of its content and of the code that
wrote it) and, once a question has been asked, ``coverage/`` (the schema
channel's index). A directory is complete before ``CURRENT`` points at it, so
a crash leaves at worst an unused directory. A snapshot whose stamp, format or
code differs, or whose files are unreadable, is rebuilt from the store; when
the store's entities are unchanged (only memories or vectors moved the
generation) the existing directory is re-stamped and kept, coverage included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import time
from bisect import bisect_left
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from layersearch.ranking.fulltext import FullTextIndex, clear_stray_files, key_hash
from layersearch.ranking.persist import (
    HashIndex,
    PersistError,
    StringTable,
    StrIntMap,
    fsync_dir,
    load_object,
    release_pages,
    save_object,
)
from layersearch.semantic.canonical import Resolver
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.store.base import Store

V = TypeVar("V")

__all__ = [
    "EntityTables",
    "EntityMap",
    "EdgeMap",
    "CoverageBuild",
    "Snapshot",
    "changed_entities",
    "open_snapshot",
    "publish_snapshot",
    "release_freed_memory",
    "tables_from_objects",
    "tables_from_store",
]

log = logging.getLogger("layersearch.corpora.snapshot")

CURRENT = "CURRENT"
MARKER = "snapshot.json"
TABLES = "tables"
COVERAGE = "coverage"
FORMAT = 2
#: replaced generation directories are kept this long for processes that still map them
_GRACE_S = 600.0
#: suffix of a schema index a build process is still writing (see CoverageBuild)
_PENDING = ".pending"
#: decoded entities kept per snapshot (a bound, so a long-running server stays small)
_CACHE_MAX = 50_000


class EntityTables:
    """Entities sorted by id, their edges grouped by source, and the resolver's keys."""

    ids: StringTable
    id_index: HashIndex
    rows: StringTable
    hidden: np.ndarray
    kind_codes: np.ndarray
    kinds: list[str]
    #: every id's :func:`~layersearch.ranking.fulltext.key_hash`, sorted, and the position
    #: of the id each belongs to: full-text hits are read back by hash
    hash_sorted: np.ndarray
    hash_order: np.ndarray
    #: read into memory, not mapped: a search's binary searches through them would fault in
    #: a page per step, ~1 ms of a cold search at 1M ids (16 bytes an id)
    __eager__ = ("hash_sorted", "hash_order")
    edge_src: HashIndex
    edge_ptr: np.ndarray
    edge_rows: StringTable
    lower: StrIntMap
    suffix: HashIndex
    suffix_ptr: np.ndarray
    suffix_ids: np.ndarray
    datasources: list[str]
    content: str
    # only between content_of() and complete(); never saved
    _sources: StringTable
    _counts: np.ndarray

    @classmethod
    def build(cls, entities: Iterable[Entity], edges: Iterable[EdgeRecord]) -> EntityTables:
        return cls.content_of(entities, edges).complete()

    @classmethod
    def content_of(cls, entities: Iterable[Entity], edges: Iterable[EdgeRecord]) -> EntityTables:
        """The rows and their content hash only; :meth:`complete` adds the lookup indexes
        (skipped when the hash shows that the snapshot on disk already holds them)."""
        t = cls.from_batches([list(entities)], [list(edges)])
        assert t is not None  # one batch each is always in order
        return t

    @classmethod
    def from_batches(
        cls, entities: Iterable[list[Entity]], edges: Iterable[list[EdgeRecord]]
    ) -> EntityTables | None:
        """Like :meth:`content_of`, from batches of rows (entities by id, edges by source,
        as a store streams them), keeping only the encoded columns: a million entities
        never exist as objects at once. None when the batches are not in that order (the
        caller reads the rows whole instead)."""
        b = _Builder()
        for ents in entities:
            if not b.add_entities(ents):
                return None
        for links in edges:
            if not b.add_edges(links):
                return None
        return b.finish(cls())

    def complete(self) -> EntityTables:
        sources = self.__dict__.pop("_sources")
        counts = self.__dict__.pop("_counts")
        self.id_index = HashIndex.build(self.ids)
        hashes = np.fromiter((key_hash(i) for i in self.ids), np.int64, len(self.ids))
        self.hash_order = np.argsort(hashes, kind="stable")
        self.hash_sorted = hashes[self.hash_order]
        del hashes
        self.edge_src = HashIndex.build(sources)
        self.edge_ptr = np.zeros(len(sources) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.edge_ptr[1:])
        # Resolver keys over visible entities: lowercased ids, and every dotted suffix.
        lower: dict[str, int] = {}
        suffixes: dict[str, list[int]] = {}
        hidden = self.hidden.tolist()
        for i, eid in enumerate(self.ids):
            if hidden[i]:
                continue
            low = eid.lower()
            lower[low] = i
            parts = low.split(".")
            for j in range(1, len(parts)):
                suffixes.setdefault(".".join(parts[j:]), []).append(i)
        self.lower = StrIntMap.build(lower)
        del lower
        keys = sorted(suffixes)
        self.suffix = HashIndex.build(StringTable.build(keys))
        self.suffix_ptr = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(suffixes[k]) for k in keys], out=self.suffix_ptr[1:])
        self.suffix_ids = np.fromiter(
            (i for k in keys for i in suffixes[k]), np.int64, int(self.suffix_ptr[-1])
        )
        del suffixes, keys
        code = self.kinds.index("datasource") if "datasource" in self.kinds else -1
        self.datasources = [self.ids[int(i)] for i in np.flatnonzero(self.kind_codes == code)]
        return self

    def hashes_at(self, positions: np.ndarray) -> list[int]:
        """The key hashes of the ids at ``positions`` (computed once, in :meth:`complete`)."""
        rank = np.empty(len(self.hash_order), dtype=np.int64)
        rank[self.hash_order] = np.arange(len(self.hash_order))
        return self.hash_sorted[rank[positions]].tolist()  # type: ignore[no-any-return]

    def check(self) -> None:
        """Cheap consistency checks on mapped tables (a garbled file fails here, not mid-search)."""
        n = len(self.ids)
        sizes = {
            "rows": len(self.rows),
            "hidden": len(self.hidden),
            "kind_codes": len(self.kind_codes),
            "id_index": len(self.id_index.keys),
            "hash_sorted": len(self.hash_sorted),
            "hash_order": len(self.hash_order),
        }
        if any(v != n for v in sizes.values()):
            raise PersistError(f"entity tables disagree on their length: {n} ids, {sizes}")
        for table in (self.ids, self.rows, self.edge_rows, self.id_index.keys, self.suffix.keys):
            if len(table) and (
                int(table.offsets[0]) != 0 or int(table.offsets[-1]) != len(table.blob)
            ):
                raise PersistError("a string table's offsets do not match its data")
        if len(self.edge_ptr) != len(self.edge_src.keys) + 1 or int(self.edge_ptr[-1]) != len(
            self.edge_rows
        ):
            raise PersistError("edge offsets do not match the edges")
        if len(self.suffix_ptr) != len(self.suffix.keys) + 1:
            raise PersistError("suffix offsets do not match the keys")

    def entity(self, i: int) -> Entity:
        r = json.loads(self.rows[i])
        return Entity(
            id=self.ids[i],
            kind=r[0],
            name=r[1],
            datasource=r[2],
            model=r[3],
            label=r[4],
            description=r[5],
            data_type=r[6],
            formula=r[7],
            hidden=r[8],
            primary_key=r[9],
            values=tuple(r[10]),
        )

    def edges_at(self, k: int, edge_type: str | None = None) -> list[EdgeRecord]:
        """The outgoing edges of source number ``k``; only those of ``edge_type`` when given
        (the others are skipped without decoding: a table has a CONTAINS edge per column)."""
        src = self.edge_src.keys[k]
        # Rows are ``[dst,"TYPE",props]`` with compact separators: a row of the type holds
        # this byte string (a dst may too, so the decoded type is checked as well).
        marker = None if edge_type is None else b',"' + edge_type.encode() + b'",'
        out = []
        for j in range(int(self.edge_ptr[k]), int(self.edge_ptr[k + 1])):
            if marker is not None and marker not in self.edge_rows.raw(j).tobytes():
                continue
            dst, typ, props = json.loads(self.edge_rows[j])
            if edge_type is None or typ == edge_type:
                out.append(EdgeRecord(src, dst, typ, props))
        return out


# One encoder each: json.dumps with options builds a new encoder per call (most of the cost).
_ROW_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_EDGE_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _entity_row(e: Entity) -> str:
    return _ROW_JSON.encode(
        [
            e.kind,
            e.name,
            e.datasource,
            e.model,
            e.label,
            e.description,
            e.data_type,
            e.formula,
            bool(e.hidden),
            bool(e.primary_key),
            list(e.values),
        ]
    )


def tables_from_store(store: Store) -> EntityTables:
    """The entity tables of what ``store`` holds, read in batches (or whole, when the
    backend does not return them in code point order)."""
    tables = EntityTables.from_batches(store.iter_entities(), store.iter_edges())
    if tables is None:
        log.info("the store's rows are not in code point order; reading them whole")
        tables = EntityTables.content_of(store.load_entities(), store.load_edges())
    return tables


def tables_from_objects(
    entities: Iterable[Entity], edges: Iterable[EdgeRecord], batch: int = 20_000
) -> tuple[EntityTables, list[Entity]]:
    """The entity tables of rows just written to a store (ids unique, as its key makes
    them), the same bytes :func:`tables_from_store` would read back, without reading
    them back; and the entities in table order (id), for indexing without decoding."""
    ents = sorted(entities, key=_entity_id)
    links = sorted(edges, key=_edge_src)
    tables = EntityTables.from_batches(
        (ents[i : i + batch] for i in range(0, len(ents), batch)),
        (links[i : i + batch] for i in range(0, len(links), batch)),
    )
    if tables is None:  # a repeated id across batches, or too many kinds for batches
        tables = EntityTables.content_of(ents, links)
    del links
    return tables, ents


def _entity_id(e: Entity) -> str:
    return e.id


def _edge_src(e: EdgeRecord) -> str:
    return e.src


def release_freed_memory() -> None:
    """Hand the heap freed by a snapshot rebuild back to the OS (glibc keeps it otherwise).

    Reading and indexing a large semantic layer frees hundreds of MiB in small blocks;
    glibc's malloc keeps them for reuse and the process would stay near its peak.
    ``malloc_trim`` returns whole free pages (milliseconds); elsewhere this does nothing."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL("libc.so.6")
                _TRIM = libc.malloc_trim
            except (OSError, AttributeError):
                log.debug("malloc_trim unavailable (not glibc)")
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


def changed_entities(old: EntityTables, new: EntityTables) -> tuple[list[str], np.ndarray]:
    """What the full-text index must drop and add to go from ``old`` to ``new``: ids whose
    document goes (removed, hidden or changed) and positions in ``new`` whose document
    comes (added, shown or changed). A document is a function of the entity's row, so a
    merge of the two sorted id tables comparing raw rows decides it, decoding nothing."""
    if len(old.ids) == 0:
        return [], np.flatnonzero(~new.hidden)
    stale: list[str] = []
    fresh: list[int] = []
    old_hidden, new_hidden = old.hidden.tolist(), new.hidden.tolist()
    old_ids, new_ids = iter(old.ids), iter(new.ids)
    i = j = 0
    a, b = next(old_ids, None), next(new_ids, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a < b):
            if not old_hidden[i]:
                stale.append(a)  # type: ignore[arg-type]
            a, i = next(old_ids, None), i + 1
        elif a is None or b < a:
            if not new_hidden[j]:
                fresh.append(j)
            b, j = next(new_ids, None), j + 1
        else:
            if old.rows.raw(i) != new.rows.raw(j) or old_hidden[i] != new_hidden[j]:
                if not old_hidden[i]:
                    stale.append(a)
                if not new_hidden[j]:
                    fresh.append(j)
            a, i = next(old_ids, None), i + 1
            b, j = next(new_ids, None), j + 1
    return stale, np.array(fresh, dtype=np.int64)


class _Column:
    """Strings appended in batches, joined per batch: no object per string is kept."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._lengths: list[np.ndarray] = []

    def extend(self, strings: Iterable[str]) -> None:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        self._lengths.append(np.fromiter(map(len, encoded), np.int64, len(encoded)))
        self._chunks.append(b"".join(encoded))

    def table(self) -> StringTable:
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        blob = np.empty(int(offsets[-1]), dtype=np.uint8)
        pos = 0
        self._chunks.reverse()
        while self._chunks:  # each chunk is freed once copied: the peak is one blob, not two
            chunk = self._chunks.pop()
            blob[pos : pos + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            pos += len(chunk)
        self._lengths = []
        return StringTable(blob, offsets)


class _Builder:
    """Encoded columns of :class:`EntityTables`, filled batch by batch in id / source order."""

    def __init__(self) -> None:
        self.ids = _Column()
        self.rows = _Column()
        self.hidden = bytearray()
        self.kind_of: dict[str, int] = {}
        self.kinds = bytearray()  # codes in order of first appearance; <256 kinds
        self.last_id: str | None = None
        self.edge_rows = _Column()
        self.sources = _Column()
        self.counts: list[int] = []
        self.last_src: str | None = None
        #: the edges of the last source seen: its group may go on in the next batch
        self.open: list[tuple[tuple[str, str, str], str]] = []

    def add_entities(self, batch: list[Entity]) -> bool:
        by_id = {e.id: e for e in batch}  # a repeated id: the last one wins, as in a dict
        order = sorted(by_id)
        if order and self.last_id is not None and order[0] <= self.last_id:
            return False
        ents = [by_id[i] for i in order]
        del by_id
        self.ids.extend(order)
        self.rows.extend(_entity_row(e) for e in ents)
        self.hidden.extend(bool(e.hidden) for e in ents)
        for e in ents:
            code = self.kind_of.get(e.kind)
            if code is None:
                code = self.kind_of[e.kind] = len(self.kind_of)
            self.kinds.append(code)
        if order:
            self.last_id = order[-1]
        return len(self.kind_of) < 256

    def add_edges(self, batch: list[EdgeRecord]) -> bool:
        # Edges with the same ends and type (two joins on different columns) come back from
        # the store in any order: their rows break the tie, so equal content hashes equal.
        keyed = sorted(
            ((r.src, r.type, r.dst), _EDGE_JSON.encode([r.dst, r.type, r.props])) for r in batch
        )
        if not keyed:
            return True
        if self.last_src is not None and keyed[0][0][0] < self.last_src:
            return False
        if self.open and keyed[0][0][0] == self.last_src:
            keyed = sorted([*self.open, *keyed])
        elif self.open:
            self._close(self.open)
        # The last source's group stays open; every other one is complete.
        last = keyed[-1][0][0]
        cut = len(keyed)
        while cut and keyed[cut - 1][0][0] == last:
            cut -= 1
        if cut:
            self._close(keyed[:cut])
        self.open = keyed[cut:]
        self.last_src = last
        return True

    def _close(self, keyed: list[tuple[tuple[str, str, str], str]]) -> None:
        self.edge_rows.extend(row for _, row in keyed)
        srcs: list[str] = []
        for (src, _, _), _row in keyed:
            if srcs and srcs[-1] == src:
                self.counts[-1] += 1
            else:
                srcs.append(src)
                self.counts.append(1)
        self.sources.extend(srcs)

    def finish(self, t: EntityTables) -> EntityTables:
        if self.open:
            self._close(self.open)
            self.open = []
        t.ids = self.ids.table()
        t.rows = self.rows.table()
        t.hidden = np.frombuffer(bytes(self.hidden), dtype=bool).copy()
        t.kinds = sorted(self.kind_of)
        remap = np.zeros(max(len(self.kind_of), 1), dtype=np.int16)
        for k, c in self.kind_of.items():
            remap[c] = t.kinds.index(k)
        t.kind_codes = remap[np.frombuffer(bytes(self.kinds), dtype=np.uint8)]
        t.edge_rows = self.edge_rows.table()
        t._sources = self.sources.table()
        t._counts = np.array(self.counts, dtype=np.int64)
        h = hashlib.blake2b(digest_size=16)
        for table in (t.ids, t.rows, t.edge_rows, t._sources):
            h.update(table.offsets.tobytes())
            h.update(table.blob.tobytes())
        h.update(t._counts.tobytes())
        t.content = h.hexdigest()
        return t


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

    def _cached(self, i: int) -> Entity:
        key = self.tables.ids[i]
        e = self._cache.get(key)
        if e is None:
            e = self.tables.entity(i)
        return e

    def clear_cache(self) -> None:
        self._cache.clear()
        self._kinds.clear()

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
        i = self.tables.id_index.find(key)
        return i >= 0 and not bool(self.tables.hidden[i])

    def visible_in_scope(self, datasource: str) -> list[str]:
        """Visible ids equal to ``datasource`` or under ``datasource.`` (a range of the sorted ids)."""
        t = self.tables
        out = []
        i = t.id_index.find(datasource)
        if i >= 0 and not t.hidden[i]:
            out.append(datasource)
        # ids starting with "ds." sort between "ds." and "ds/" ("/" follows ".")
        lo = bisect_left(t.ids, datasource + ".")
        hi = bisect_left(t.ids, datasource + "/")
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


class Snapshot:
    """Tables plus where they live (None: in memory only), and the schema channel's index."""

    def __init__(
        self, tables: EntityTables, directory: Path | None, maps: list[Any] | None = None
    ) -> None:
        self.tables = tables
        self.dir = directory
        #: the files this snapshot maps (its tables, then its schema index)
        self.maps: list[Any] = maps or []
        self.entities = EntityMap(tables)
        self.edges_out = EdgeMap(tables)

    @property
    def content(self) -> str:
        return self.tables.content

    def release_pages(self) -> None:
        """After a pass over every row: pages stay in the page cache, not in this process."""
        release_pages(self.maps)

    @property
    def datasources(self) -> list[str]:
        return list(self.tables.datasources)

    def resolver(self, memory_exists: Callable[[str], bool]) -> Resolver:
        t = self.tables

        def by_id(key: str) -> str | None:
            i = t.lower.get(key)
            return None if i is None else t.ids[i]

        def by_suffix(key: str) -> list[str]:
            k = t.suffix.find(key)
            if k < 0:
                return []
            idx = t.suffix_ids[int(t.suffix_ptr[k]) : int(t.suffix_ptr[k + 1])]
            return [t.ids[int(i)] for i in idx]

        def names() -> list[str]:
            return sorted(set(t.suffix.keys) | set(t.lower))

        return Resolver.from_lookups(by_id, by_suffix, names, memory_exists)

    def coverage(self, build: Callable[[], Any], prebuilt: CoverageBuild | None = None) -> Any:
        """The persisted schema-channel index of this snapshot; when absent or unreadable,
        taken from ``prebuilt`` (a build process started on the same rows) or built with
        ``build``, and saved beside the tables."""
        if self.dir is not None:
            loaded = _load_coverage(self.dir / COVERAGE, self.maps)
            if loaded is not None:
                return loaded
            if prebuilt is not None and prebuilt.take(self.dir):
                loaded = _load_coverage(self.dir / COVERAGE, self.maps)
                if loaded is not None:
                    return loaded
        index = build()
        # The build decoded every entity and edge: the bounded caches are full of them.
        self.entities.clear_cache()
        self.edges_out.clear_cache()
        if self.dir is None:
            return index
        try:
            _save_coverage(self.dir, index)
        except (OSError, PersistError) as exc:
            log.info("schema index kept in memory only: %s", exc)
            return index
        # Serve from the mapped files: the built arrays are freed, the page cache shares them.
        mapped = _load_coverage(self.dir / COVERAGE, self.maps)
        if mapped is None:
            return index
        del index
        release_freed_memory()
        self.release_pages()
        return mapped


# -- on disk ------------------------------------------------------------------------------------


#: the modules whose code decides what is persisted (relative to the package)
_CODE = (
    "corpora/snapshot.py",
    "corpora/entities.py",
    "ranking/analyzer.py",
    "ranking/coverage.py",
    "ranking/fulltext.py",  # key_hash
    "ranking/persist.py",
    "semantic/canonical.py",
    "semantic/model.py",
)


def _fingerprint() -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(str(FORMAT).encode())
    package = Path(__file__).resolve().parents[1]
    for rel in _CODE:
        try:
            h.update((package / rel).read_bytes())
        except OSError:
            h.update(rel.encode())
    return h.hexdigest()


# Read once, at import: it describes the code this process runs, even if the files
# change on disk while it does (an upgrade under a running server).
_FINGERPRINT = _fingerprint()


def code_fingerprint() -> str:
    """A hash of the code whose output is persisted: another version rebuilds, never misreads."""
    return _FINGERPRINT


def _current_dir(base: Path) -> Path | None:
    """The generation directory ``base/CURRENT`` points at: the same layout (and reader)
    as the full-text index's."""
    return FullTextIndex.current_dir(base)


def _read_marker(sub: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((sub / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _write_marker(sub: Path, stamp: str, content: str) -> None:
    tmp = sub / f"{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(
        json.dumps(
            {"format": FORMAT, "code": code_fingerprint(), "stamp": stamp, "content": content}
        )
    )
    os.replace(tmp, sub / MARKER)


def open_snapshot(base: Path, stamp: str) -> tuple[Snapshot | None, str | None]:
    """The current snapshot under ``base`` when it reflects ``stamp``; else ``(None, reason)``."""
    if not base.is_dir():
        return None, "missing"
    sub = _current_dir(base)
    if sub is None and (base / CURRENT).exists():
        return None, "corrupt (no readable CURRENT pointer)"
    if sub is None or not sub.is_dir():
        return None, "missing"
    meta = _read_marker(sub)
    if meta is None:
        return None, "corrupt (no readable marker)"
    if meta.get("format") != FORMAT or meta.get("code") != code_fingerprint():
        return None, "built by another version"
    if meta.get("stamp") != stamp:
        return None, "stale"
    maps: list[Any] = []
    try:
        tables = load_object(sub / TABLES, maps=maps)
        if not isinstance(tables, EntityTables) or tables.content != meta.get("content"):
            return None, "corrupt (tables do not match the marker)"
        tables.check()
    except (OSError, ValueError) as exc:
        return None, f"corrupt ({exc})"
    return Snapshot(tables, sub, maps), None


def publish_snapshot(base: Path, tables: EntityTables, stamp: str) -> Snapshot:
    """Make ``tables`` (from :meth:`EntityTables.content_of`, or complete) the snapshot for
    ``stamp`` and return it mapped from disk.

    When the current directory already holds the same content (only memories or
    vectors changed in the store), it is re-stamped and kept with its schema index.
    If nothing can be written, the snapshot stays in memory (logged)."""
    sub = _current_dir(base) if base.is_dir() else None
    meta = _read_marker(sub) if sub is not None and sub.is_dir() else None
    if (
        sub is not None
        and meta is not None
        and meta.get("format") == FORMAT
        and meta.get("code") == code_fingerprint()
        and meta.get("content") == tables.content
    ):
        try:
            _write_marker(sub, stamp, tables.content)
            snap, reason = open_snapshot(base, stamp)
            if snap is not None:
                return snap
            log.info("could not reuse the entity snapshot (%s); writing a new one", reason)
        except OSError as exc:
            log.info("could not re-stamp the entity snapshot: %s", exc)
    if "_sources" in tables.__dict__:
        tables.complete()
    try:
        # Derived data: a stray file where the directory (or a folder above it) belongs
        # is replaced.
        clear_stray_files(base)
        sub = base / f"g{time.time_ns():x}-{os.getpid()}"
        sub.mkdir(parents=True)
        save_object(tables, sub / TABLES)
        _write_marker(sub, stamp, tables.content)
        fsync_dir(sub)
        tmp = base / f"{CURRENT}.{os.getpid()}.tmp"
        tmp.write_text(sub.name)
        os.replace(tmp, base / CURRENT)
        fsync_dir(base)
    except (OSError, PersistError) as exc:
        log.warning("entity snapshot kept in memory only (cannot write %s): %s", base, exc)
        return Snapshot(tables, None)
    _remove_old(base, keep=sub)
    snap, reason = open_snapshot(base, stamp)
    if snap is None:
        log.warning("entity snapshot just written is unreadable (%s); kept in memory", reason)
        return Snapshot(tables, None)
    return snap


def restamp(snapshot: Snapshot, old: str, new: str) -> bool:
    """After a write that left entities and edges alone (a memory saved or forgotten): mark
    the snapshot current for ``new`` if it is still the current one and stamped ``old``."""
    sub = snapshot.dir
    if sub is None or _current_dir(sub.parent) != sub:
        return False
    meta = _read_marker(sub)
    if meta is None or meta.get("stamp") != old or meta.get("content") != snapshot.content:
        return False
    try:
        _write_marker(sub, new, snapshot.content)
    except OSError as exc:
        log.info("could not re-stamp the entity snapshot: %s", exc)
        return False
    return True


def _remove_old(base: Path, keep: Path) -> None:
    """Drop generation directories nobody should use any more, and what build processes of
    dead loads left (see :class:`CoverageBuild`), once older than the grace period."""
    cutoff = time.time() - _GRACE_S
    for other in base.iterdir():
        generation = other.is_dir() and other.name.startswith("g")
        if other == keep or not (generation or other.name.startswith(f"{COVERAGE}-")):
            continue
        try:
            if other.stat().st_mtime >= cutoff:
                continue
            if other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
            else:
                other.unlink()
        except OSError:
            continue


def _load_coverage(path: Path, maps: list[Any] | None = None) -> Any:
    from layersearch.ranking.coverage import CoverageIndex

    if not path.is_dir():
        return None
    try:
        meta = json.loads((path / "coverage.json").read_text())
        if not isinstance(meta, dict) or meta.get("code") != code_fingerprint():
            log.info("schema index on disk was built by another version; rebuilding it")
            return None
        index = load_object(path, maps=maps)
    except (OSError, ValueError) as exc:
        log.info("schema index on disk is unreadable (%s); rebuilding it", exc)
        return None
    if not isinstance(index, CoverageIndex):
        return None
    return index


def _save_coverage(sub: Path, index: Any) -> None:
    tmp = sub / f"{COVERAGE}.{os.getpid()}.{time.time_ns():x}.tmp"
    try:
        _write_coverage(tmp, index)
        _place_coverage(tmp, sub)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_coverage(tmp: Path, index: Any) -> None:
    save_object(index, tmp)
    (tmp / "coverage.json").write_text(json.dumps({"code": code_fingerprint()}))


def _place_coverage(tmp: Path, sub: Path) -> None:
    """Move a complete schema index directory ``tmp`` into snapshot directory ``sub``."""
    target = sub / COVERAGE
    if target.exists():
        # an unreadable one (else we would not be here): move it aside, then replace it
        aside = sub / f"{COVERAGE}.{os.getpid()}.{time.time_ns():x}.old"
        with contextlib.suppress(OSError):
            os.rename(target, aside)
        shutil.rmtree(aside, ignore_errors=True)
    try:
        os.rename(tmp, target)
    except OSError:
        # another process published one first: theirs is as good
        shutil.rmtree(tmp, ignore_errors=True)
    fsync_dir(sub)


def _fork_allowed() -> bool:
    """Whether a build may run part of itself in a forked process: on Linux (fork with
    threads is unsafe on macOS, absent on Windows), unless ``LAYERSEARCH_BUILD_FORK=0``."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and os.environ.get("LAYERSEARCH_BUILD_FORK", "1").strip() != "0"
    )


def _error_file(tmp: Path) -> Path:
    """Where a build process writing ``tmp`` reports why it failed."""
    return tmp.with_suffix(".err")


def _die_with(parent: int) -> None:
    """In a build process: be killed when ``parent`` dies (Linux's parent-death signal), so
    a killed load leaves no process computing an index nobody will take."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(1)


class CoverageBuild:
    """The schema index of rows about to become a snapshot, built in a forked process
    while this one writes the store, the snapshot tables and the full-text index.

    The two halves of a large load are each one core's worth of Python: the schema index
    (a third of a 1M-entity build) needs only the entities and their joins, which a load
    has before it writes anything, so it runs beside the rest instead of after it. The
    child builds from the same rows as the snapshot (so the same index, byte for byte,
    as building it here: the index sorts what it is given) into a directory under the
    snapshot base, then exits without running any of this process's exit handlers; the
    parent moves that directory into the snapshot it publishes (:meth:`take`), or kills
    the child and removes it (:meth:`cancel`). When anything fails the index is built
    in process, as without a child. The child touches nothing but its own directory:
    no store connection, no full-text writer, no logging (another thread may hold a
    lock that the child would inherit held)."""

    def __init__(self, pid: int, tmp: Path) -> None:
        self.pid = pid
        self.tmp = tmp

    @classmethod
    def start(cls, base: Path, build: Callable[[], Any]) -> CoverageBuild | None:
        """Fork a child that runs ``build`` and saves its index; None when this platform
        or the environment rules a child out, or the fork fails (build in process)."""
        if not _fork_allowed():
            return None
        try:
            if (base.exists() or base.is_symlink()) and not base.is_dir():
                return None  # publish_snapshot replaces the stray file; build in process
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        tmp = base / f"{COVERAGE}-{os.getpid()}-{time.time_ns():x}{_PENDING}"
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:
            log.info("schema index built in process (cannot fork: %s)", exc)
            return None
        if pid == 0:  # pragma: no cover - runs in the child, which never returns
            code = 1
            try:
                _die_with(parent)
                index = build()
                if os.getppid() == parent:  # nobody to take it otherwise
                    _write_coverage(tmp, index)
                    code = 0
            except BaseException as exc:  # noqa: BLE001 - reported through the exit status
                with contextlib.suppress(BaseException):
                    _error_file(tmp).write_text(f"{type(exc).__name__}: {exc}")
            finally:
                os._exit(code)
        return cls(pid, tmp)

    def _wait(self) -> str | None:
        """Reap the child; None when it succeeded, else why not."""
        pid = self.pid
        if pid <= 0:
            return "already taken"
        try:
            # (interrupted here, the pid stays set: cancel() then kills and reaps it)
            _, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            self.pid = 0
            return "its process was reaped by someone else"
        self.pid = 0
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and self.tmp.is_dir():
            # ru_maxrss is in KiB on Linux
            log.info(
                "schema index built by process %d: %.1f s of CPU, peak RSS %.0f MiB",
                pid,
                usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss / 1024,
            )
            return None
        err = _error_file(self.tmp)
        try:
            detail = err.read_text().strip()
        except OSError:
            detail = f"exit status {code}"
        with contextlib.suppress(OSError):
            err.unlink()
        return detail or f"exit status {code}"

    def take(self, sub: Path) -> bool:
        """Wait for the child and move its index into snapshot directory ``sub``; False
        (logged) when it failed, and then the caller builds the index itself."""
        why = self._wait()
        if why is None:
            try:
                _place_coverage(self.tmp, sub)
                return True
            except OSError as exc:
                why = str(exc)
        log.info("schema index built in process (its build process failed: %s)", why)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def cancel(self) -> None:
        """Stop the child if it still runs and remove what it wrote (no-op once taken)."""
        if self.pid > 0:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            _error_file(self.tmp).unlink()
