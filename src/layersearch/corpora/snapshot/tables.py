"""Entities, their edges and the resolver's keys as arrays (:class:`EntityTables`), built
batch by batch from a store's rows, and the difference of two of them."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import (
    Iterable,
)

import numpy as np

from layersearch.ranking.fulltext import key_hash
from layersearch.ranking.persist import (
    HashIndex,
    PersistError,
    StringTable,
    StrIntMap,
)
from layersearch.semantic.model import EdgeRecord, Entity
from layersearch.store.base import Store

log = logging.getLogger("layersearch.corpora.snapshot")


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
