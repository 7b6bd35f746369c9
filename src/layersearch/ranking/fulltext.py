"""Channel 2: tantivy full text with per-field boosts.

Documents and queries both go through :mod:`layersearch.ranking.analyzer`;
tantivy only ever sees pre-analysed tokens (whitespace tokenizer) and queries
built from term objects, so user text never reaches tantivy's query parser and
no character can cause a parse error.

The index is persistent in a directory and carries a marker file with the
``stamp`` of the content it reflects; :meth:`FullTextIndex.open` reports it as
stale when the stamp differs, so callers rebuild it. It is derived data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

import tantivy

from layersearch.errors import StoreError
from layersearch.ranking.analyzer import analyze, analyze_query
from layersearch.ranking.generations import (
    Hold,
    current_dir,
    held_current,
    hold,
    point_at,
    read_small,
    sweep,
)

__all__ = [
    "FTDoc",
    "FullTextIndex",
    "Opened",
    "build_index",
    "clear_stray_files",
    "is_io_failure",
    "key_hash",
    "open_or_rebuild",
]

log = logging.getLogger("layersearch.ranking.fulltext")

MARKER = "layersearch-index.json"
FORMAT = 3
#: tantivy's indexing budget (allocated as it fills): a million entities fit one segment,
#: and a search over one segment is ~20% faster than over the four a 64 MB budget leaves
_WRITER_HEAP = 400_000_000
#: analysed field texts remembered during one write (a few hundred bytes each)
_TEXT_CACHE = 1 << 17
#: ids remembered per searcher (about 100 bytes each)
_KEY_CACHE = 1 << 18
#: boosted term queries remembered (a few hundred bytes each)
_CLAUSE_CACHE = 1 << 14


def clear_stray_files(path: Path) -> list[Path]:
    """Remove regular files (or dangling links) that sit where the folder ``path`` or one of
    its parents should be, up to the first folder that exists: a derived index's place is
    taken back, with a warning. Only non-folders are removed; nothing above an existing
    folder is touched. Returns what was removed."""
    removed: list[Path] = []
    chain = [path, *path.parents]
    for p in chain:
        if p.is_dir():
            break
        if p.exists() or p.is_symlink():
            log.warning("removing %s: a file where a derived index folder belongs", p)
            p.unlink()
            removed.append(p)
    return removed


def is_io_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the file system refusing a write (tantivy reports its I/O errors
    as ValueError): a full disk, a read-only folder, a missing permission."""
    if isinstance(exc, OSError):
        return True
    text = str(exc).lower()
    return any(t in text for t in ("io error", "ioerror", "failed to open file", "os error"))


def build_index(
    boosts: Mapping[str, float],
    path: Path | None,
    stamp: str,
    docs: Callable[[], Iterable[FTDoc]],
) -> tuple[FullTextIndex, str | None]:
    """A new index of ``docs()`` under ``path``; when the folder cannot be written (a full
    disk, a read-only mount), the same index in memory and the reason, for the caller to
    report (searches keep working; the next process tries the disk again)."""
    if path is not None:
        ft: FullTextIndex | None = None
        try:
            ft = FullTextIndex.create(boosts, path)
            ft.write(add=docs(), stamp=stamp)
            return ft, None
        except (OSError, ValueError, StoreError) as exc:
            if not is_io_failure(exc) and not isinstance(exc, StoreError):
                raise
            reason = f"cannot write {path}: {str(exc).splitlines()[0] if str(exc) else exc}"
            if ft is not None and ft.path is not None:
                shutil.rmtree(ft.path, ignore_errors=True)  # never published
            log.warning("full-text index kept in memory (%s)", reason)
    else:
        reason = None
    ft = FullTextIndex.create(boosts, None)
    ft.write(add=docs(), stamp=stamp)
    return ft, reason


#: why an index could not be opened that needs no warning: a first use, or new content
EXPECTED_REASONS = ("missing", "stale")


@dataclass(frozen=True, slots=True)
class Opened:
    """What :func:`open_or_rebuild` did to give a current index."""

    index: FullTextIndex
    #: "opened" (the stamped index on disk), "updated" (``update`` brought the old one up to
    #: date) or "rebuilt" (from ``docs()``)
    how: Literal["opened", "updated", "rebuilt"]
    #: why the index on disk could not be opened as it is (None when opened): "missing",
    #: "stale", "built by another version" or "corrupt (…)"
    reason: str | None = None
    #: why a rebuilt index is held in memory only (None: it is on disk)
    kept: str | None = None

    @property
    def damaged(self) -> bool:
        """Whether the index on disk was unusable for a reason other than new content or a
        first use (corrupt, another version's): worth a warning."""
        return self.reason is not None and self.reason not in EXPECTED_REASONS


def open_or_rebuild(
    path: Path,
    boosts: Mapping[str, float],
    stamp: str,
    docs: Callable[[], Iterable[FTDoc]],
    *,
    update: Callable[[], FullTextIndex | None] | None = None,
    name: str = "full-text index",
    warn: bool = True,
) -> Opened:
    """The stamped full-text index under ``path``: opened when its stamp is ``stamp``;
    otherwise brought up to date by ``update()`` when given and it returns an index (an
    incremental write to the index the caller already holds); otherwise rebuilt from
    ``docs()`` (in memory when the folder cannot be written, see :func:`build_index`).

    With ``warn``, an index on disk that was unusable for a reason other than new content
    (:attr:`Opened.damaged`) is logged as a warning; callers that report it their own way
    pass ``warn=False`` and read :class:`Opened`. ``name`` names the index in the log."""
    ft, reason = FullTextIndex.open(path, boosts, stamp)
    if ft is not None:
        return Opened(ft, "opened")
    if update is not None:
        ft = update()
        if ft is not None:
            return Opened(ft, "updated", reason)
    if warn and reason not in EXPECTED_REASONS:
        log.warning("%s %s was %s; rebuilding it from the store", name, path, reason)
    log.info("building the %s (%s)", name, reason)
    ft, kept = build_index(boosts, path, stamp, docs)  # logged when kept in memory
    return Opened(ft, "rebuilt", reason, kept)


def key_hash(key: str) -> int:
    """A document id's 63-bit hash (non-negative, fits tantivy's i64 fast field). Each
    document carries it, so a search can look its hits' ids up in a table the caller
    already holds instead of decoding stored documents (the costly part of a search)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


#: resolves hit hashes (None: the document has none) to ids; None where it does not know one
Resolve = Callable[[Sequence[int | None]], Sequence[str | None]]


@dataclass(slots=True)
class FTDoc:
    id: str
    kind: str
    #: values a search may be restricted to (e.g. datasources); exact match
    scopes: Collection[str] = ()
    #: field name → raw text (analysed here)
    fields: Mapping[str, str | None] = field(default_factory=dict)
    #: :func:`key_hash` of ``id`` when the caller already has it (computed otherwise)
    id_hash: int | None = None


class FullTextIndex:
    """A tantivy index over :class:`FTDoc` with the given field boosts."""

    def __init__(self, index: tantivy.Index, boosts: Mapping[str, float], path: Path | None):
        self._index = index
        self.boosts = dict(boosts)
        self.path = path
        self._schema = index.schema
        self._searcher = index.searcher()
        self._keys: dict[tuple[int, int], str] = {}
        self._clauses: dict[tuple[str, str, float], tantivy.Query] = {}
        self._filters: dict[tuple[str, str], tantivy.Query] = {}
        self._unpublished = False
        #: the shared lock on this generation, so no sweep removes it while it is read
        self._hold: Hold | None = None

    def _keep(self, lock: Hold | None) -> None:
        """Hold ``lock`` (the generation's) for as long as this index lives."""
        self._hold = lock

    # -- construction -------------------------------------------------------------------------

    @staticmethod
    def _schema_for(boosts: Mapping[str, float]) -> tantivy.Schema:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("key", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("kind", stored=False, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("scope", stored=False, tokenizer_name="raw", index_option="basic")
        sb.add_integer_field("h", stored=False, indexed=False, fast=True)
        for name in sorted(boosts):
            sb.add_text_field(name, stored=False, tokenizer_name="whitespace", index_option="freq")
        return sb.build()

    @classmethod
    def create(cls, boosts: Mapping[str, float], path: Path | None = None) -> FullTextIndex:
        """A new, empty index: in memory when ``path`` is None; otherwise in a fresh
        generation directory under ``path`` that becomes current on its first write.

        An index in use is never rebuilt in place: another process may have it open
        (a server beside the CLI), so a rebuild goes to a new directory and the
        ``CURRENT`` pointer moves atomically once the new one is complete.
        """
        schema = cls._schema_for(boosts)
        if path is None:
            return cls(tantivy.Index(schema), boosts, None)
        # Derived data: a stray file where the index directory (or a folder above it)
        # belongs is replaced.
        clear_stray_files(path)
        path.mkdir(parents=True, exist_ok=True)
        sub = path / f"g{time.time_ns():x}-{os.getpid()}"
        lock = hold(sub)  # before the directory exists: no sweep takes it half-made
        try:
            sub.mkdir()
            idx = tantivy.Index(schema, path=str(sub))
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        obj = cls(idx, boosts, sub)
        obj._keep(lock)
        obj._unpublished = True
        return obj

    @staticmethod
    def current_dir(path: Path) -> Path | None:
        """The generation directory ``path/CURRENT`` points at, if any
        (:func:`layersearch.ranking.generations.current_dir`)."""
        return current_dir(path)

    @classmethod
    def open(
        cls, path: Path, boosts: Mapping[str, float], stamp: str
    ) -> tuple[FullTextIndex | None, str | None]:
        """Open the current index under ``path``; ``(None, reason)`` when missing, stale or
        unreadable."""
        if not path.exists():
            return None, "missing"
        sub, lock = held_current(path)
        if sub is None:
            return None, "corrupt (no readable CURRENT pointer)"
        obj, reason = cls._open_generation(sub, boosts, stamp)
        if obj is None:
            if lock is not None:
                lock.release()
            return None, reason
        obj._keep(lock)
        sweep(path, current=sub)
        return obj, None

    @classmethod
    def _open_generation(
        cls, sub: Path, boosts: Mapping[str, float], stamp: str
    ) -> tuple[FullTextIndex | None, str | None]:
        if not sub.is_dir():
            return None, "corrupt (CURRENT points at a missing directory)"
        try:
            meta = json.loads(read_small(sub / MARKER))
        except (OSError, ValueError):
            return None, "corrupt (no readable marker)"
        if not isinstance(meta, dict):
            return None, "corrupt (unreadable marker)"
        if meta.get("format") != FORMAT or meta.get("fields") != sorted(boosts):
            return None, "built by another version"
        if meta.get("stamp") != stamp:
            return None, "stale"
        try:
            idx = tantivy.Index.open(str(sub))
            obj = cls(idx, boosts, sub)
            obj._searcher.num_docs  # noqa: B018 - touch the segments so corruption shows now
        except (ValueError, OSError) as exc:
            return None, f"corrupt ({exc})"
        return obj, None

    @classmethod
    def read_stamp(cls, path: Path) -> str | None:
        """The stamp recorded by the current index under ``path``, if readable."""
        sub = cls.current_dir(path)
        if sub is None:
            return None
        try:
            value = json.loads(read_small(sub / MARKER)).get("stamp")
        except (OSError, ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None

    def is_current(self) -> bool:
        """Whether this index is the one ``CURRENT`` points at (always true in memory)."""
        if self.path is None:
            return True
        return self.current_dir(self.path.parent) == self.path

    def _publish(self) -> None:
        """Point ``CURRENT`` here, then drop the generation directories no live process
        uses (a process that has an old one open keeps it until it lets it go, see
        :mod:`layersearch.ranking.generations`)."""
        assert self.path is not None
        base = self.path.parent
        point_at(base, self.path)
        self._unpublished = False
        sweep(base, current=self.path)

    def _writer(self) -> tantivy.IndexWriter:
        # Another process may hold tantivy's writer lock for a moment: retry, then fail clearly.
        delay = 0.01
        deadline = time.monotonic() + 15
        while True:
            try:
                return self._index.writer(heap_size=_WRITER_HEAP, num_threads=1)
            except ValueError as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise StoreError(f"full-text index is busy or unwritable: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _document(self, doc: FTDoc, cache: dict[str, str] | None = None) -> tantivy.Document:
        """The tantivy document of ``doc``; ``cache`` maps field texts to their analysed
        form for the length of one write (a catalog repeats its names, labels, templated
        descriptions and sample values across thousands of entities)."""
        h = key_hash(doc.id) if doc.id_hash is None else doc.id_hash
        values: dict[str, object] = {"key": doc.id, "kind": doc.kind, "h": h}
        if doc.scopes:
            values["scope"] = list(doc.scopes)
        for name, text in doc.fields.items():
            if name in self.boosts and text:
                joined = None if cache is None else cache.get(text)
                if joined is None:
                    joined = " ".join(analyze(text))
                    if cache is not None:
                        if len(cache) >= _TEXT_CACHE:
                            cache.clear()
                        cache[text] = joined
                if joined:
                    values[name] = joined
        # One constructor call instead of one add_text per field: fewer crossings into Rust.
        return tantivy.Document(**values)

    def write(
        self,
        *,
        add: Iterable[FTDoc] = (),
        delete: Iterable[str] = (),
        delete_all: bool = False,
        stamp: str,
    ) -> int:
        """Apply deletions then additions in one commit, and record ``stamp``."""
        w = self._writer()
        n = 0
        try:
            if delete_all:
                w.delete_all_documents()
            for doc_id in delete:
                w.delete_documents_by_term("key", doc_id)
            cache: dict[str, str] = {}
            for doc in add:
                w.add_document(self._document(doc, cache))
                n += 1
            w.commit()
            w.wait_merging_threads()
        except BaseException:
            with contextlib.suppress(Exception):  # the original error matters more
                w.rollback()
            raise
        self._write_marker(stamp)
        if self._unpublished:
            self._publish()
        self.reload()
        return n

    def _write_marker(self, stamp: str) -> None:
        if self.path is None:
            return
        tmp = self.path / (MARKER + ".tmp")
        tmp.write_text(
            json.dumps({"format": FORMAT, "fields": sorted(self.boosts), "stamp": stamp})
        )
        os.replace(tmp, self.path / MARKER)

    def reload(self) -> None:
        self._index.reload()
        self._searcher = self._index.searcher()
        self._keys = {}

    # -- search -------------------------------------------------------------------------------

    @property
    def num_docs(self) -> int:
        return int(self._searcher.num_docs)

    def search(
        self,
        text: str,
        k: int,
        *,
        scopes: Collection[str] | None = None,
        ids: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        boosts: Mapping[str, float] | None = None,
        resolve: Resolve | None = None,
        analysed: bool = False,
        exclude_kinds: Collection[str] = (),
    ) -> list[tuple[str, float]]:
        """Top ``k`` ids for ``text`` (any characters), restricted by scope / id / kind sets.

        ``resolve`` maps the hits' :func:`key_hash` values to ids where the caller knows
        them; the others are read from the stored documents. With ``analysed`` the text
        is already index tokens, separated by spaces (not analysed again).
        ``exclude_kinds``: kinds left out (the same hits as ``kinds`` holding every other
        kind, without a filter over the matching documents' kinds)."""
        tokens = text.split() if analysed else analyze_query(text)
        if not tokens or k < 1:
            return []
        weights = boosts or self.boosts
        should = []
        for name, boost in sorted(weights.items()):
            if name not in self.boosts or boost <= 0:
                continue
            for tok in tokens:
                should.append((tantivy.Occur.Should, self._clause(name, tok, boost)))
        if not should:
            return []
        query = tantivy.Query.boolean_query(should)
        filters = []
        for fname, values in (("scope", scopes), ("key", ids), ("kind", kinds)):
            if values is not None:
                if not values:
                    return []
                filters.append((tantivy.Occur.Must, self._filter(fname, values)))
        for kind in sorted(set(exclude_kinds)):
            filters.append((tantivy.Occur.MustNot, self._filter("kind", (kind,))))
        if filters:
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *filters])
        searcher = self._searcher
        # tantivy orders equal scores by doc address, which depends on segment layout: over-fetch
        # a little and re-sort by (score, id) so ties at the cut are decided by id, not layout.
        # Hits scoring below the k-th can never make the cut, so only the others are decoded.
        hits = searcher.search(query, k + max(10, k // 2), count=False).hits
        if len(hits) > k:
            cut = hits[k - 1][0]
            hits = [h for h in hits if h[0] >= cut]
        if resolve is not None and hits:
            hashes = searcher.fast_field_values("h", [addr for _, addr in hits])
            known = resolve(cast("list[int | None]", hashes))
            out = [
                (self._key(addr) if key is None else key, float(score))
                for (score, addr), key in zip(hits, known, strict=True)
            ]
        else:
            out = [(self._key(addr), float(score)) for score, addr in hits]
        out.sort(key=lambda h: (-h[1], h[0]))
        return out[:k]

    def holding(self, tokens: Collection[str], ids: Collection[str]) -> dict[str, set[str]]:
        """Which of the index tokens ``tokens`` each document of ``ids`` holds, in any
        field: id → its tokens (ids holding none are left out). One search per token,
        restricted to ``ids``, so the cost follows the question, not the documents."""
        wanted = sorted(set(ids))
        out: dict[str, set[str]] = {}
        if not wanted:
            return out
        only = tantivy.Query.term_set_query(self._schema, "key", wanted)
        for tok in dict.fromkeys(tokens):
            any_field = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, self._clause(name, tok, 1.0))
                    for name in sorted(self.boosts)
                ]
            )
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, any_field), (tantivy.Occur.Must, only)]
            )
            for _score, addr in self._searcher.search(query, len(wanted), count=False).hits:
                out.setdefault(self._key(addr), set()).add(tok)
        return out

    def doc_freq(self, name: str, token: str) -> int:
        """How many documents hold the index token ``token`` in field ``name``."""
        return int(self._searcher.doc_freq(name, token))

    def _filter(self, name: str, values: Collection[str]) -> tantivy.Query:
        """A filter on a raw field that adds nothing to the score. One value is a term
        query (its postings); a term set is matched through an automaton over the
        field's terms and a bitset of every document it matches, rebuilt each search."""
        wanted = sorted(set(values))
        if len(wanted) == 1:
            key = (name, wanted[0])
            q = self._filters.get(key)
            if q is None:
                if len(self._filters) >= _CLAUSE_CACHE:
                    self._filters.clear()
                term = tantivy.Query.term_query(self._schema, name, wanted[0])
                q = self._filters[key] = tantivy.Query.const_score_query(term, 0.0)
            return q
        term_set = tantivy.Query.term_set_query(self._schema, name, wanted)
        return tantivy.Query.const_score_query(term_set, 0.0)

    def _clause(self, name: str, token: str, boost: float) -> tantivy.Query:
        """The boosted term query of one field and token: queries are immutable, and the
        words of questions repeat, so each is built once (the schema never changes)."""
        at = (name, token, boost)
        q = self._clauses.get(at)
        if q is None:
            if len(self._clauses) >= _CLAUSE_CACHE:
                self._clauses.clear()
            term = tantivy.Query.term_query(self._schema, name, token)
            q = self._clauses[at] = tantivy.Query.boost_query(term, boost)
        return q

    def _key(self, addr: tantivy.DocAddress) -> str:
        """The id of a hit: decoding a stored document is the costly part of a search, and a
        searcher's segments never change, so ids are remembered per (segment, doc)."""
        at = (addr.segment_ord, addr.doc)
        key = self._keys.get(at)
        if key is None:
            if len(self._keys) >= _KEY_CACHE:
                self._keys.clear()
            key = self._keys[at] = str(self._searcher.doc(addr)["key"][0])
        return key
