"""The vault's tables: notes and their chunks, written incrementally, read as a snapshot.

Rows are keyed by slug. A sync deletes the rows of deleted and changed notes and
writes those of added and changed ones, all in one transaction that bumps the
store generation once. Vectors are not written here: they belong to the
``vault`` corpus of :class:`~layersearch.corpora.dense.DenseCorpus`, keyed by
chunk id (``<slug>#<n>``).

Every statement runs on both backends (values bound with ``?``, JSON kept as
text, ``ON CONFLICT … DO UPDATE SET … = excluded.…``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from layersearch.corpora.dense import content_hash
from layersearch.store.base import Store
from layersearch.textcheck import json_text

from .chunking import Chunk
from .config import VaultConfig, VaultFilters
from .notes import Note, SyncPlan

__all__ = [
    "CORPUS",
    "NOTE_COLUMNS",
    "NOTE_JOIN",
    "StoredChunk",
    "VaultMeta",
    "VaultSnapshot",
    "all_slugs",
    "apply_sync",
    "chunk_hashes",
    "chunk_id_slug",
    "filter_sql",
    "load_chunks",
    "load_meta",
    "load_note_rows",
    "load_snapshot",
    "stored_hashes",
]

#: the DenseCorpus name of vault chunk vectors
CORPUS = "vault"

NOTE_COLUMNS = (
    "slug",
    "path",
    "title",
    "tags",
    "domain",
    "status",
    "note_type",
    "created",
    "updated",
    "content_hash",
    "frontmatter",
    "problems",
    "body",
)

#: joins a chunk's vector (alias ``v``) to its note (``n``) on PostgreSQL, for :func:`filter_sql`:
#: the slug is the chunk id up to its last ``#`` (as :func:`chunk_id_slug`), so each row the
#: HNSW walk yields costs one primary-key lookup (the note slugs' collation is the default)
NOTE_JOIN = (
    "JOIN vault_notes n ON n.slug = "
    "(substr(v.doc_id, 1, length(v.doc_id) - strpos(reverse(v.doc_id), '#')) "
    'COLLATE "default")'
)

_META_ROOT = "vault_root"
_META_CONFIG = "vault_config"
_META_VERSION = "vault_version"


def chunk_id_slug(chunk_id: str) -> str:
    """``Folder/Note#3`` → ``Folder/Note`` (a slug may itself contain ``#``)."""
    return chunk_id.rsplit("#", 1)[0]


@dataclass(frozen=True)
class VaultMeta:
    """What the store remembers about the indexed vault."""

    root: str | None
    config: VaultConfig
    #: the store generation of the last write to the vault tables; stamps the full-text index
    version: str


@dataclass(frozen=True)
class StoredChunk:
    id: str
    slug: str
    position: int
    heading_path: str
    text: str


@dataclass
class VaultSnapshot:
    """Note metadata in columns (for fast filtering) and chunk ids by note."""

    meta: VaultMeta
    slugs: list[str]
    titles: list[str]
    paths: list[str]
    tags: list[tuple[str, ...]]
    domain: np.ndarray
    status: np.ndarray
    note_type: np.ndarray
    #: days since the epoch; created is NaT-free: -1 days means "not declared"
    created: np.ndarray
    updated: np.ndarray
    chunk_ids: dict[str, list[str]]
    row: dict[str, int] = field(default_factory=dict)
    #: tag → rows of notes carrying it, or a tag nested under it (``project`` → ``project/alpha``)
    tag_rows: dict[str, np.ndarray] = field(default_factory=dict)

    #: every chunk id, grouped by note row, and where each note's group starts and ends
    flat_chunks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    chunk_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        self.row = {s: i for i, s in enumerate(self.slugs)}
        groups = [self.chunk_ids.get(s, []) for s in self.slugs]
        self.chunk_counts = np.array([len(g) for g in groups], dtype=np.int64)
        self.flat_chunks = np.array([c for g in groups for c in g], dtype=object)
        self._ends = np.cumsum(self.chunk_counts)
        index: dict[str, list[int]] = {}
        for i, tags in enumerate(self.tags):
            seen: set[str] = set()
            for tag in tags:
                parts = tag.split("/")
                for n in range(1, len(parts) + 1):
                    seen.add("/".join(parts[:n]))
            for t in seen:
                index.setdefault(t, []).append(i)
        self.tag_rows = {t: np.array(rows, dtype=np.int64) for t, rows in index.items()}

    def __len__(self) -> int:
        return len(self.slugs)

    def chunks_of(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of the notes at ``rows``."""
        if not len(rows):
            return []
        counts = self.chunk_counts[rows]
        starts = self._ends[rows] - counts
        # Index of every wanted chunk in flat_chunks, built without a Python loop over notes.
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return list(self.flat_chunks[np.repeat(starts, counts) + offsets])


def filter_sql(f: VaultFilters, statuses: Sequence[str]) -> tuple[str, list[Any]]:
    """The search filters as a PostgreSQL condition on the note ``n`` (``?`` placeholders).

    The same rules as the snapshot's filter in the search module: domain and note type
    equal, status any of ``statuses``, ``updated`` within the range, and any of the tags,
    a tag also matching the tags nested under it (``project`` finds ``project/alpha``).
    """
    parts: list[str] = []
    params: list[Any] = []
    if f.domain is not None:
        parts.append("n.domain = ?")
        params.append(f.domain)
    if f.note_type is not None:
        parts.append("n.note_type = ?")
        params.append(f.note_type)
    if statuses:
        parts.append("n.status = ANY(?)")
        params.append(list(statuses))
    if f.date_from is not None:
        parts.append("n.updated >= ?")
        params.append(f.date_from)
    if f.date_to is not None:
        parts.append("n.updated <= ?")
        params.append(f.date_to)
    if f.tags:
        # Tags are a JSON array in text. A wanted tag, escaped as json.dumps escapes it,
        # occurs in the text of every note carrying it or a tag nested under it: a cheap
        # test that spares parsing the JSON of most notes before the exact one.
        parts.append("(" + " OR ".join("strpos(n.tags, ?) > 0" for _ in f.tags) + ")")
        params.extend(json.dumps(t)[1:-1] for t in f.tags)
        parts.append(
            "EXISTS (SELECT 1 FROM json_array_elements_text(n.tags::json) AS x(tag) "
            "JOIN unnest(?::text[]) AS w(tag) "
            "ON x.tag = w.tag OR starts_with(x.tag, w.tag || '/'))"
        )
        params.append(list(f.tags))
    return " AND ".join(parts) or "TRUE", params


# -- writing ------------------------------------------------------------------------------------


def _set_meta(con: Any, key: str, value: str) -> None:
    con.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


def _config_json(config: VaultConfig) -> str:
    return json.dumps(
        {
            "domains": list(config.domains),
            "note_types": list(config.note_types),
            "statuses": list(config.statuses),
        }
    )


def _delete_slugs(store: Store, con: Any, slugs: Sequence[str]) -> None:
    if not slugs:
        return
    # Through a temporary table rather than IN (?, ?, …): thousands of placeholders are slow
    # to bind on DuckDB and hit parameter limits on PostgreSQL.
    con.execute("CREATE TEMPORARY TABLE vault_gone (slug VARCHAR PRIMARY KEY)")
    store.bulk_insert(con, "vault_gone", {"slug": list(slugs)})
    con.execute("DELETE FROM vault_chunks WHERE slug IN (SELECT slug FROM vault_gone)")
    con.execute("DELETE FROM vault_notes WHERE slug IN (SELECT slug FROM vault_gone)")
    con.execute("DROP TABLE vault_gone")


def _note_columns(notes: Sequence[Note]) -> dict[str, list[Any]]:
    return {
        "slug": [n.slug for n in notes],
        "path": [n.path for n in notes],
        "title": [n.title for n in notes],
        "tags": [json_text(list(n.tags), f"{n.slug} tags") for n in notes],
        "domain": [n.domain for n in notes],
        "status": [n.status for n in notes],
        "note_type": [n.note_type for n in notes],
        "created": [n.created for n in notes],
        "updated": [n.updated for n in notes],
        "content_hash": [n.content_hash for n in notes],
        "frontmatter": [
            json_text(n.frontmatter, f"{n.slug} frontmatter", sort_keys=True) for n in notes
        ],
        "problems": [json_text(list(n.problems), f"{n.slug} problems") for n in notes],
        "body": [n.body for n in notes],
    }


def _chunk_columns(chunks: Sequence[Chunk]) -> dict[str, list[Any]]:
    return {
        "id": [c.id for c in chunks],
        "slug": [c.slug for c in chunks],
        "position": [c.index for c in chunks],
        "heading_path": [c.heading_path for c in chunks],
        "text": [c.text for c in chunks],
        "content_hash": [content_hash(c.text) for c in chunks],
    }


def apply_sync(
    store: Store,
    plan: SyncPlan,
    notes: Sequence[Note],
    chunks: Sequence[Chunk],
    *,
    root: str,
    config: VaultConfig,
) -> int | None:
    """Write one sync in one transaction; the new generation, or None when nothing changed.

    ``notes`` and ``chunks`` are those of ``plan.added`` and ``plan.changed``.
    """
    meta = load_meta(store)
    config_text = _config_json(config)
    unchanged_meta = meta.root == root and _config_json(meta.config) == config_text
    if not (plan.added or plan.changed or plan.deleted) and unchanged_meta:
        return None
    with store.connect(write=True) as con:
        # The plan was made from a read before this write: another index (another thread
        # or process) may have stored an added note since. Writers take turns, so
        # replacing whatever is stored under each slug written makes the last one win
        # instead of failing on the note the other one stored.
        _delete_slugs(store, con, [*plan.deleted, *plan.changed, *plan.added])
        store.bulk_insert(con, "vault_notes", _note_columns(notes))
        store.bulk_insert(con, "vault_chunks", _chunk_columns(chunks))
        gen = store.bump_generation(con)
        _set_meta(con, _META_ROOT, root)
        _set_meta(con, _META_CONFIG, config_text)
        _set_meta(con, _META_VERSION, str(gen))
    store.publish_generation(gen)
    return gen


# -- reading ------------------------------------------------------------------------------------


def load_meta(store: Store) -> VaultMeta:
    with store.connect(write=False) as con:
        return _meta(con)


def _meta(con: Any) -> VaultMeta:
    rows = con.execute(
        "SELECT key, value FROM meta WHERE key IN (?, ?, ?)",
        [_META_ROOT, _META_CONFIG, _META_VERSION],
    ).fetchall()
    values = {r[0]: r[1] for r in rows}
    declared = json.loads(values.get(_META_CONFIG) or "{}")
    config = VaultConfig(
        domains=tuple(declared.get("domains", ())),
        note_types=tuple(declared.get("note_types", ())),
        statuses=tuple(declared.get("statuses", ())),
    )
    return VaultMeta(values.get(_META_ROOT), config, values.get(_META_VERSION) or "0")


def stored_hashes(store: Store) -> dict[str, str]:
    """slug → content hash of every stored note."""
    with store.connect(write=False) as con:
        rows = con.execute("SELECT slug, content_hash FROM vault_notes").fetchall()
    return {r[0]: r[1] for r in rows}


def _days(values: Iterable[date | None]) -> np.ndarray:
    # Whole days since the epoch; -10**9 stands for "no date" and never passes a range test.
    epoch = date(1970, 1, 1).toordinal()
    return np.array(
        [v.toordinal() - epoch if v is not None else -(10**9) for v in values], dtype=np.int64
    )


def load_snapshot(store: Store) -> VaultSnapshot:
    """Everything search needs that is not a vector, in one read."""
    with store.connect(write=False) as con:
        meta = _meta(con)
        notes = con.execute(
            "SELECT slug, title, path, tags, domain, status, note_type, created, updated "
            "FROM vault_notes ORDER BY slug"
        ).fetchall()
        chunk_rows = con.execute("SELECT id, slug FROM vault_chunks ORDER BY slug, id").fetchall()
    chunk_ids: dict[str, list[str]] = {}
    for cid, slug in chunk_rows:
        chunk_ids.setdefault(slug, []).append(cid)
    return VaultSnapshot(
        meta=meta,
        slugs=[r[0] for r in notes],
        titles=[r[1] for r in notes],
        paths=[r[2] for r in notes],
        tags=[tuple(json.loads(r[3])) for r in notes],
        domain=np.array([r[4] for r in notes], dtype=object),
        status=np.array([r[5] for r in notes], dtype=object),
        note_type=np.array([r[6] for r in notes], dtype=object),
        created=_days(r[7] for r in notes),
        updated=_days(r[8] for r in notes),
        chunk_ids=chunk_ids,
    )


def load_chunks(store: Store, ids: Sequence[str] | None = None) -> list[StoredChunk]:
    """Stored chunks (all, or those of ``ids``), by slug then position."""
    cols = "c.id, c.slug, c.position, c.heading_path, c.text"
    with store.connect(write=False) as con:
        if ids is None:
            rows = con.execute(
                f"SELECT {cols} FROM vault_chunks c ORDER BY c.slug, c.position"  # noqa: S608
            ).fetchall()
        elif not ids:
            rows = []
        else:
            con.execute("CREATE TEMPORARY TABLE vault_wanted (id VARCHAR PRIMARY KEY)")
            store.bulk_insert(con, "vault_wanted", {"id": list(ids)})
            rows = con.execute(
                f"SELECT {cols} FROM vault_chunks c JOIN vault_wanted w ON w.id = c.id "  # noqa: S608
                "ORDER BY c.slug, c.position"
            ).fetchall()
            con.execute("DROP TABLE vault_wanted")
    return [StoredChunk(r[0], r[1], int(r[2]), r[3], r[4]) for r in rows]


def chunk_hashes(store: Store) -> dict[str, str]:
    """chunk id → hash of its text (the hash its vector is stored with)."""
    with store.connect(write=False) as con:
        rows = con.execute("SELECT id, content_hash FROM vault_chunks").fetchall()
    return {r[0]: r[1] for r in rows}


def load_note_rows(store: Store, slug: str) -> list[dict[str, Any]]:
    """The stored note ``slug``, matched exactly, else case-insensitively (maybe several)."""
    cols = ", ".join(NOTE_COLUMNS)
    with store.connect(write=False) as con:
        # column names are constants of this module; the slug is bound
        rows = con.execute(f"SELECT {cols} FROM vault_notes WHERE slug = ?", [slug]).fetchall()  # noqa: S608
        if not rows:
            rows = con.execute(
                f"SELECT {cols} FROM vault_notes WHERE lower(slug) = lower(?) ORDER BY slug",  # noqa: S608
                [slug],
            ).fetchall()
    return [_note_row(r) for r in rows]


def _note_row(r: Sequence[Any]) -> dict[str, Any]:
    row = dict(zip(NOTE_COLUMNS, r, strict=True))
    row["tags"] = json.loads(row["tags"])
    row["frontmatter"] = json.loads(row["frontmatter"])
    row["problems"] = json.loads(row["problems"])
    return row


def all_slugs(store: Store) -> list[str]:
    with store.connect(write=False) as con:
        return [r[0] for r in con.execute("SELECT slug FROM vault_notes ORDER BY slug").fetchall()]
