"""Saving index objects as memory-mappable files, and compact read-only containers.

An index built in one process is reused by the next one without rebuilding:
:func:`save_object` walks an instance's attributes (numpy arrays, lists of
arrays or of tuples of arrays, lists of strings, ``str → int`` dicts, scalars
and nested objects of this package) into ``.npy`` files plus one manifest, and
:func:`load_object` maps them back (``mmap``, copy-on-write). Nothing is listed
by hand, so an attribute added to an index class is persisted without code
changes; a type the walker does not know raises :class:`PersistError` and the
caller simply keeps the object in memory.

Restored containers are read-only sequences and mappings over the mapped
arrays (:class:`StringTable`, :class:`RaggedList`, :class:`StrIntMap`): a
million strings cost a few arrays, not a million Python objects.

Files are derived data, written by one process into a fresh directory; the
caller publishes the directory atomically. ``np.load`` never unpickles.
"""

from __future__ import annotations

import bisect
import importlib
import json
import mmap as _mmap
import os
import zlib
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

__all__ = [
    "PersistError",
    "StringTable",
    "HashIndex",
    "StrIntMap",
    "sorted_position",
    "RaggedList",
    "save_object",
    "load_object",
    "fsync_dir",
    "release_pages",
]

MANIFEST = "manifest.json"
FORMAT = 2
#: arrays smaller than this are read into memory: mapping a page for a few bytes costs more
_MMAP_MIN_BYTES = 1 << 16
_PACKAGE = "layersearch."
_CRC_SPAN = 1 << 16
#: a list that is not one ragged column is saved item by item only when this short
_MAX_ITEMS = 256


class PersistError(ValueError):
    """An object holds something the walker cannot save (the caller keeps it in memory)."""


class _NotRagged(Exception):
    """Arrays that cannot share one concatenated column (mixed dtypes or lengths)."""


def _plain(a: np.ndarray) -> np.ndarray:
    # A memmap subclass makes every slice a memmap too (slower, and np.asarray is a view).
    return np.asarray(a)


class StringTable(Sequence[str]):
    """Strings as one UTF-8 blob and offsets; ``table[i]`` decodes one string."""

    __slots__ = ("blob", "offsets", "_mv", "_off", "_offv")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self.blob = _plain(blob)
        self.offsets = _plain(offsets)
        self._mv = memoryview(self.blob.data) if len(self.blob) else memoryview(b"")
        self._off = self.offsets
        # (the offsets as int64 items that read as Python ints, for bisect_left)
        offv = np.ascontiguousarray(self.offsets, dtype=np.int64)
        self._offv = offv.data.cast("B").cast("q")

    @classmethod
    def build(cls, strings: Iterable[str]) -> StringTable:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        if encoded:
            np.cumsum([len(b) for b in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
        return cls(blob, offsets)

    def __len__(self) -> int:
        return len(self._off) - 1

    def raw(self, i: int) -> memoryview:
        return self._mv[int(self._off[i]) : int(self._off[i + 1])]

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("string table index out of range")
        return str(self._mv[int(self._off[i]) : int(self._off[i + 1])], "utf-8", "surrogatepass")

    def bisect_left(self, key: str) -> int:
        """Where ``key`` goes in this table, sorted (``bisect.bisect_left``), comparing
        the encoded bytes: UTF-8 keeps the strings' order, and no string is decoded."""
        kb = key.encode("utf-8", "surrogatepass")
        mv, off = self._mv, self._offv
        lo, hi = 0, len(off) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if mv[off[mid] : off[mid + 1]].tobytes() < kb:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def take(self, positions: Sequence[int] | np.ndarray) -> list[str]:
        """``[self[i] for i in positions]`` (non-negative positions), in one pass."""
        off, mv = self._off, self._mv
        idx = np.asarray(positions, dtype=np.int64)
        starts, ends = off[idx].tolist(), off[idx + 1].tolist()
        return [str(mv[a:b], "utf-8", "surrogatepass") for a, b in zip(starts, ends, strict=True)]

    def __iter__(self) -> Iterator[str]:
        data = self._mv.tobytes()
        offs = self._off.tolist()
        for a, b in zip(offs, offs[1:], strict=False):
            yield data[a:b].decode("utf-8", "surrogatepass")

    def __persist__(self) -> dict[str, np.ndarray]:
        return {"blob": self.blob, "offsets": self.offsets}

    @classmethod
    def __restore__(cls, arrays: Mapping[str, np.ndarray]) -> StringTable:
        return cls(arrays["blob"], arrays["offsets"])


def sorted_position(ids: Sequence[str], key: str) -> int:
    """``bisect.bisect_left(ids, key)`` for sorted ``ids``, a list or a
    :class:`StringTable` (searched over its bytes, ~3× faster than through ``[]``)."""
    if isinstance(ids, StringTable):
        return ids.bisect_left(key)
    return bisect.bisect_left(ids, key)


def _hash(key: bytes) -> int:
    # crc32 is stable across processes (str.__hash__ is salted per process)
    return zlib.crc32(key)


class HashIndex:
    """The position of a string in a :class:`StringTable` of distinct strings, in ~1 µs:
    open addressing with linear probing over a power-of-two slot array."""

    __slots__ = ("keys", "slots", "_mask")

    def __init__(self, keys: StringTable, slots: np.ndarray) -> None:
        self.keys = keys
        self.slots = _plain(slots)
        self._mask = len(self.slots) - 1

    @classmethod
    def build(cls, keys: StringTable) -> HashIndex:
        n = len(keys)
        size = 1 << max(3, (2 * n).bit_length())
        mask = size - 1
        data = keys.blob.tobytes()
        offs = keys.offsets.tolist()
        home = np.fromiter(
            (_hash(data[a:b]) for a, b in zip(offs, offs[1:], strict=False)), np.int64, n
        )
        home &= mask
        slots = np.full(size, -1, dtype=np.int64)
        pending = np.arange(n, dtype=np.int64)
        pos = home
        # Rounds of vectorised placement: each entry tries its next slot until it lands.
        # An entry only moves on past a slot that is taken, so a lookup probing from its
        # home slot to the first empty one always passes it.
        while len(pending):
            free = slots[pos] == -1
            cand, cpos = pending[free], pos[free]
            _, first = np.unique(cpos, return_index=True)
            slots[cpos[first]] = cand[first]
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(free)[first]] = True
            pending = pending[~placed]
            pos = (pos[~placed] + 1) & mask
        return cls(keys, slots)

    def find(self, key: str) -> int:
        """The key's position, or -1."""
        try:
            kb = key.encode("utf-8", "surrogatepass")
        except AttributeError:
            return -1
        slots, mask, keys = self.slots, self._mask, self.keys
        i = _hash(kb) & mask
        while True:
            s = int(slots[i])
            if s < 0:
                return -1
            if keys.raw(s) == kb:
                return s
            i = (i + 1) & mask

    def __persist__(self) -> dict[str, Any]:
        return {"keys": self.keys, "slots": self.slots}

    @classmethod
    def __restore__(cls, arrays: Mapping[str, Any]) -> HashIndex:
        return cls(arrays["keys"], arrays["slots"])


class _Items(ItemsView[str, int]):
    """A :class:`StrIntMap`'s items, iterated as its keys beside its values (not a hash
    lookup per key, as ``Mapping.items`` would)."""

    _mapping: StrIntMap

    def __iter__(self) -> Iterator[tuple[str, int]]:
        m = self._mapping
        return zip(m.index.keys, m.values_.tolist(), strict=True)


class StrIntMap(Mapping[str, int]):
    """A read-only ``str → int`` mapping over a :class:`HashIndex` and a value array."""

    __slots__ = ("index", "values_")

    def __init__(self, index: HashIndex, values: np.ndarray) -> None:
        self.index = index
        self.values_ = _plain(values)

    @classmethod
    def build(cls, data: Mapping[str, int]) -> StrIntMap:
        keys = StringTable.build(data.keys())
        return cls(HashIndex.build(keys), np.fromiter(data.values(), np.int64, len(data)))

    def __getitem__(self, key: str) -> int:
        i = self.index.find(key)
        if i < 0:
            raise KeyError(key)
        return int(self.values_[i])

    def get(self, key: str, default: Any = None) -> Any:
        i = self.index.find(key)
        return default if i < 0 else int(self.values_[i])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.index.find(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.keys)

    def items(self) -> ItemsView[str, int]:
        return _Items(self)

    def __len__(self) -> int:
        return len(self.index.keys)

    def __persist__(self) -> dict[str, Any]:
        return {"index": self.index, "values": self.values_}

    @classmethod
    def __restore__(cls, arrays: Mapping[str, Any]) -> StrIntMap:
        return cls(arrays["index"], arrays["values"])


class RaggedList(Sequence[Any]):
    """A list of 1-d arrays (or of equal-width tuples of them) stored as concatenated
    columns and offsets; ``items[j]`` is a view (or a tuple of views)."""

    __slots__ = ("columns", "offsets", "tuples")

    def __init__(self, columns: list[np.ndarray], offsets: np.ndarray, tuples: bool) -> None:
        self.columns = [_plain(c) for c in columns]
        self.offsets = _plain(offsets)
        self.tuples = tuples

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _at(self, j: int) -> Any:
        a, b = int(self.offsets[j]), int(self.offsets[j + 1])
        if self.tuples:
            return tuple(c[a:b] for c in self.columns)
        return self.columns[0][a:b]

    def __getitem__(self, j: Any) -> Any:
        if isinstance(j, slice):
            return [self._at(k) for k in range(*j.indices(len(self)))]
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("ragged list index out of range")
        return self._at(j)

    def __iter__(self) -> Iterator[Any]:
        for j in range(len(self)):
            yield self._at(j)


# -- the walker -------------------------------------------------------------------------------


class _Writer:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.n = 0
        #: file name → [size, crc32]
        self.files: dict[str, list[int]] = {}
        # id → (path, object): holding the object keeps its id from being reused
        self.seen: dict[int, tuple[str, Any]] = {}

    def array(self, a: np.ndarray) -> dict[str, Any]:
        if a.dtype.hasobject:
            raise PersistError(f"cannot save an object array ({a.dtype})")
        name = f"a{self.n}.npy"
        self.n += 1
        np.save(self.dir / name, np.ascontiguousarray(a), allow_pickle=False)
        self.files[name] = [(self.dir / name).stat().st_size, _crc(self.dir / name)]
        return {"t": "nd", "f": name}

    def node(self, value: Any, path: str) -> dict[str, Any]:
        key = id(value)
        # Shared sub-objects (one list held under two names) are saved once.
        if key in self.seen and not _is_scalar(value):
            return {"t": "alias", "of": self.seen[key][0]}
        out = self._node(value, path)
        if not _is_scalar(value):
            self.seen[key] = (path, value)
        return out

    def _node(self, value: Any, path: str) -> dict[str, Any]:
        if _is_scalar(value):
            return {"t": "json", "v": value.item() if isinstance(value, np.generic) else value}
        if isinstance(value, np.ndarray):
            return self.array(value)
        persist = getattr(value, "__persist__", None)
        if callable(persist) and type(value).__module__.startswith(_PACKAGE):
            parts = {k: self.node(v, f"{path}.{k}") for k, v in persist().items()}
            return {"t": "custom", "cls": _class_name(type(value)), "parts": parts}
        if isinstance(value, RaggedList):
            raise PersistError("a RaggedList is saved through the list it came from")
        if isinstance(value, list | tuple):
            return self._sequence(value, path)
        if isinstance(value, dict):
            return self._dict(value, path)
        cls = type(value)
        attributes = _attributes(value)
        if cls.__module__.startswith(_PACKAGE) and attributes is not None:
            attrs = {k: self.node(v, f"{path}.{k}") for k, v in attributes.items()}
            return {"t": "obj", "cls": _class_name(cls), "attrs": attrs}
        raise PersistError(f"cannot save {path} of type {cls.__name__}")

    def _sequence(self, value: list[Any] | tuple[Any, ...], path: str) -> dict[str, Any]:
        kind = "tuple" if isinstance(value, tuple) else "list"
        if not value or all(_is_scalar(v) for v in value):
            if all(isinstance(v, str) for v in value) and len(value) > 8:
                return {
                    "t": "strs",
                    "kind": kind,
                    "table": self.node(StringTable.build(value), path),
                }
            plain = [v.item() if isinstance(v, np.generic) else v for v in value]
            return {"t": "json", "v": plain, "kind": kind}
        try:
            if all(isinstance(v, np.ndarray) and v.ndim == 1 for v in value):
                return self._ragged([[v] for v in value], tuples=False, kind=kind)
            width = len(value[0]) if isinstance(value[0], tuple) else -1
            if width > 0 and all(
                isinstance(v, tuple)
                and len(v) == width
                and all(isinstance(x, np.ndarray) and x.ndim == 1 for x in v)
                for v in value
            ):
                return self._ragged([list(v) for v in value], tuples=True, kind=kind)
        except _NotRagged:
            pass
        # A short list of anything else the walker knows: one node per item.
        if len(value) <= _MAX_ITEMS:
            items = [self.node(v, f"{path}[{i}]") for i, v in enumerate(value)]
            return {"t": "seq", "kind": kind, "items": items}
        raise PersistError(f"cannot save {path}: a long {kind} of mixed or unsupported items")

    def _ragged(self, rows: list[list[np.ndarray]], *, tuples: bool, kind: str) -> dict[str, Any]:
        width = len(rows[0])
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r[0]) for r in rows], out=offsets[1:])
        joined = []
        for c in range(width):
            parts = [r[c] for r in rows]
            if any(len(p) != len(r[0]) for p, r in zip(parts, rows, strict=True)):
                raise _NotRagged
            dtypes = {p.dtype for p in parts if len(p)} or {parts[0].dtype}
            if len(dtypes) > 1 or dtypes & {np.dtype(object)}:
                raise _NotRagged
            joined.append(np.concatenate(parts).astype(dtypes.pop(), copy=False))
        columns = [self.array(c) for c in joined]
        return {
            "t": "ragged",
            "kind": kind,
            "tuples": tuples,
            "offsets": self.array(offsets),
            "columns": columns,
        }

    def _dict(self, value: dict[Any, Any], path: str) -> dict[str, Any]:
        if (
            all(isinstance(k, str) for k in value)
            and all(
                isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value.values()
            )
            and len(value) > 64
        ):
            return {"t": "map", "map": self.node(StrIntMap.build(value), path)}
        try:
            text = json.dumps(value, allow_nan=True)
        except (TypeError, ValueError) as exc:
            raise PersistError(f"cannot save {path}: {exc}") from exc
        if json.loads(text) != value:
            raise PersistError(f"cannot save {path}: its keys or values do not survive JSON")
        return {"t": "json", "v": value}


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str | np.generic)


def _attributes(value: Any) -> dict[str, Any] | None:
    out: dict[str, Any] = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                out[name] = getattr(value, name)
    return out


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class(name: str) -> type:
    module, _, qual = name.partition(":")
    if not module.startswith(_PACKAGE):
        raise PersistError(f"refusing to restore a class outside layersearch: {name}")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise PersistError(f"{name} is not a class")
    return obj


def save_object(obj: Any, directory: Path) -> dict[str, list[int]]:
    """Write ``obj`` into the empty directory ``directory``; returns file name → [size, crc32].

    Raises :class:`PersistError` for an attribute of a type it cannot save."""
    directory.mkdir(parents=True, exist_ok=True)
    writer = _Writer(directory)
    root = writer.node(obj, "root")
    manifest = {"format": FORMAT, "root": root, "files": writer.files}
    for name in writer.files:
        _fsync(directory / name)
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest))
    _fsync(tmp)
    os.replace(tmp, directory / MANIFEST)
    fsync_dir(directory)
    return dict(writer.files)


class _Reader:
    def __init__(
        self,
        directory: Path,
        files: Mapping[str, list[int]],
        mmap: bool,
        maps: list[Any] | None = None,
    ) -> None:
        self.dir = directory
        self.files = files
        self.mmap = mmap
        self.maps = maps
        self.done: dict[str, Any] = {}

    def array(self, name: str, *, eager: bool = False) -> np.ndarray:
        if name not in self.files or "/" in name or name.startswith("."):
            raise PersistError(f"manifest names an unknown file {name!r}")
        path = self.dir / name
        size = path.stat().st_size
        want_size, want_crc = self.files[name]
        if size != want_size:
            raise PersistError(f"{name} is {size} bytes, expected {want_size}")
        if _crc(path) != want_crc:
            raise PersistError(f"{name} does not match its checksum")
        big = self.mmap and not eager and size >= _MMAP_MIN_BYTES
        a = np.load(path, mmap_mode="c" if big else None, allow_pickle=False)
        mapped = getattr(a, "_mmap", None)
        if mapped is not None and self.maps is not None:
            self.maps.append(mapped)
        return np.asarray(a)

    def node(self, spec: Mapping[str, Any], path: str) -> Any:
        t = spec["t"]
        if t == "alias":
            return self.done[spec["of"]]
        value = self._node(spec, path)
        self.done[path] = value
        return value

    def _node(self, spec: Mapping[str, Any], path: str) -> Any:
        t = spec["t"]
        if t == "json":
            v = spec["v"]
            return tuple(v) if spec.get("kind") == "tuple" else v
        if t == "nd":
            return self.array(spec["f"])
        if t == "strs":
            table = self.node(spec["table"], path)
            return tuple(table) if spec["kind"] == "tuple" else table
        if t == "ragged":
            columns = [self.array(c["f"]) for c in spec["columns"]]
            rl = RaggedList(columns, self.array(spec["offsets"]["f"]), bool(spec["tuples"]))
            return tuple(rl) if spec["kind"] == "tuple" else rl
        if t == "seq":
            items = [self.node(s, f"{path}[{i}]") for i, s in enumerate(spec["items"])]
            return tuple(items) if spec["kind"] == "tuple" else items
        if t == "map":
            return self.node(spec["map"], path)
        if t == "custom":
            cls = _class(spec["cls"])
            parts = {k: self.node(s, f"{path}.{k}") for k, s in spec["parts"].items()}
            return cls.__restore__(parts)  # type: ignore[attr-defined]
        if t == "obj":
            cls = _class(spec["cls"])
            obj: Any = object.__new__(cls)
            eager = getattr(cls, "__eager__", ())
            for k, s in spec["attrs"].items():
                value: Any
                if k in eager and s.get("t") == "nd":
                    value = self.array(s["f"], eager=True)
                    self.done[f"{path}.{k}"] = value
                else:
                    value = self.node(s, f"{path}.{k}")
                object.__setattr__(obj, k, value)
            return obj
        raise PersistError(f"unknown node type {t!r}")


def load_object(directory: Path, *, mmap: bool = True, maps: list[Any] | None = None) -> Any:
    """Read back what :func:`save_object` wrote. Large arrays are mapped copy-on-write
    (their ``mmap`` objects appended to ``maps`` when given, for :func:`release_pages`).

    Raises :class:`PersistError`, ``OSError`` or ``ValueError`` when the files are
    missing, truncated or garbled: the caller rebuilds."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except ValueError as exc:
        raise PersistError(f"unreadable manifest: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PersistError("manifest of another format")
    reader = _Reader(directory, manifest["files"], mmap, maps)
    try:
        return reader.node(manifest["root"], "root")
    except (KeyError, TypeError, AttributeError, ImportError) as exc:
        raise PersistError(f"garbled manifest: {exc!r}") from exc


def release_pages(maps: Iterable[Any]) -> None:
    """Drop this process's resident pages of mapped files that were only read: they
    come back from the page cache on the next access (a minor fault). After a pass
    over every row (building the full-text or the schema index), the process would
    otherwise count whole files as its own. Never use on arrays written in place."""
    advice = getattr(_mmap, "MADV_DONTNEED", None)
    if advice is None:
        return
    for m in maps:
        try:
            m.madvise(advice)
        except (OSError, ValueError):  # closed, or the platform refuses: harmless
            continue


def _crc(path: Path) -> int:
    """crc32 of a file's first and last ``_CRC_SPAN`` bytes (all of a small file).

    Checking every byte of a large index on every open would cost more than the
    rest of a reopen; the ends catch truncation, a partial copy, a foreign or
    garbled file. A flipped bit in the middle of a large array is left to the
    filesystem, as for the full-text index's segments."""
    with open(path, "rb") as f:
        head = f.read(_CRC_SPAN)
        if len(head) < _CRC_SPAN:
            return zlib.crc32(head)
        f.seek(max(_CRC_SPAN, os.fstat(f.fileno()).st_size - _CRC_SPAN))
        return zlib.crc32(f.read(_CRC_SPAN), zlib.crc32(head))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
