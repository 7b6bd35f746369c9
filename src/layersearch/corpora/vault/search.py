"""Vault indexing and retrieval: ``VaultService.index``, ``.search`` and ``.get_note``.

Indexing is incremental by content hash: a re-run reads and hashes every file
but parses, chunks and embeds only added and changed notes; deleted and renamed
notes leave no rows (notes, chunks, vectors) behind.

Search ranks notes by their best chunk's cosine similarity to the query, within
the notes that pass the filters (applied before ranking, never after). Filters
run on an in-memory snapshot of the note metadata, refreshed when the store
generation changes: opening a DuckDB connection alone costs ~25 ms, more than
the whole search budget. ``mode="hybrid"`` fuses the vector ranking with a
tantivy full-text ranking (title, tags, headings, body) by Reciprocal Rank
Fusion; the score is then the fused score.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import math
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Literal

import numpy as np

from layersearch.corpora.dense import DenseCorpus, DenseDoc, describe_key
from layersearch.embed.base import Embedder
from layersearch.errors import ConfigError, EmbeddingUnavailable, ModelMismatch, NotFound
from layersearch.ranking.explain import explain, explain_stages
from layersearch.ranking.fulltext import FTDoc, FullTextIndex, open_or_rebuild
from layersearch.ranking.fusion import Fused
from layersearch.ranking.pipeline import Trace, settle
from layersearch.store.base import Store
from layersearch.types import EmbedReport, NoteDetail, VaultHit, VaultIndexReport

from . import store as tables
from .chunking import Chunk, chunk_note
from .config import VaultConfig, VaultFilters, load_config, validate_filters
from .notes import Note, NoteTooLarge, parse_note, plan_sync, read_note_bytes, scan_vault, slug_for
from .ranking import VAULT_PIPELINE, VaultRanking, VaultRankingConfig

__all__ = [
    "CHANNEL_DEPTH",
    "FT_BOOSTS",
    "NoteDetail",
    "VaultHit",
    "VaultIndexReport",
    "VaultService",
]

log = logging.getLogger("layersearch.corpora.vault")

Mode = Literal["vector", "hybrid"]
MODES = ("vector", "hybrid")
#: each channel of a hybrid search ranks this many notes (or ``limit``, if more): a fixed
#: depth, so the results for ``limit=n`` are a prefix of those for ``n + k`` while
#: ``n + k <= CHANNEL_DEPTH``. Ten, not 100: on PostgreSQL, walking the HNSW index until 101
#: notes of a broad filter have appeared reads ~800 passing rows (90-110 ms quiet); ten take
#: what a vector search does. Recall@5 of the labelled vault queries is unchanged (hashing
#: embedder 0.967, MiniLM 0.978; docs/decisions.md). The default of
#: ``VaultRankingConfig.channel_depth``.
CHANNEL_DEPTH = VaultRankingConfig().channel_depth
FT_BOOSTS = {"title": 3.0, "tags": 2.0, "heading": 1.5, "body": 1.0}
MAX_QUERY_CHARS = 100_000
# Each batch is one embedder call and one committed write: big enough that the write
# (a DuckDB connection costs ~25 ms) is not the bottleneck, small enough to resume cheaply.
EMBED_BATCH = 256
# On PostgreSQL the snapshot says exactly how many chunks pass the filters: few are ranked
# exactly by id, many are found by walking the HNSW index with the filters in SQL. Exact
# costs each passing chunk once (a primary-key lookup and a distance, 1.3-4 µs); the walk
# reads about WALK_ROWS chunks per wanted note and passes over total/passing rejected ones
# for each, every one costing as many exact rankings as the walk touches index pages per
# row (the store measures it: ~33 on uniform random vectors, ~7.5 on clustered ones) times
# WALK_PAGE_COST; WALK_COST when the store cannot say. Exact then wins while passing <=
# sqrt(rows read * total * cost), and always up to EXACT_CHUNKS: for 10 notes of 50,000
# chunks, ~13,300 on uniform vectors and ~6,300 on clustered ones
# (benchmarks/vault_search.py --postgres; docs/decisions.md).
EXACT_CHUNKS = 2000
WALK_COST = 32.0
WALK_PAGE_COST = 1.2
#: stored vectors walked from to measure the index (walk_pages_per_row), spread over the vault
WALK_PROBES = 4
WALK_ROWS = 8
_FT_KIND = "note"
#: why a search without an embedder ranks by full text alone (the warning says so)
_NO_EMBEDDER = "no embedder configured"


def _hits(
    snap: tables.VaultSnapshot, fused: Sequence[Fused], mode: str, trace: Trace | None
) -> list[VaultHit]:
    """The fused notes as hits: the fused score in hybrid mode, the cosine otherwise
    (non-increasing, :func:`settle`); with a ``trace`` (explain), the channels that
    ranked each note and the stages that moved it."""
    fused = [f for f in fused if f.id in snap.row]  # (else in a newer full-text index)
    own = [f.score if mode == "hybrid" else f.channels["vector"][1] for f in fused]
    shown = settle([f.id for f in fused], own, trace, "fuse")
    hits = []
    for f, score in zip(fused, shown, strict=True):
        i = snap.row[f.id]
        moves = explain_stages(trace.moves(f.id)) if trace is not None else None
        hits.append(
            VaultHit(
                slug=f.id,
                title=snap.titles[i],
                path=snap.paths[i],
                score=round(score, 6),
                explanation=explain(f) if trace is not None else None,
                stages=moves or None,
            )
        )
    return hits


def _fulltext_alone(exc: Exception, min_score: float | None) -> str:
    text = str(exc)
    if not text.startswith("embedding unavailable"):
        text = f"embedding unavailable: {text}"
    text += "; ranked by full text alone (score is the RRF score)"
    if min_score is not None:
        text += " (--min-score, a cosine bound, was not applied)"
    return text


def _warn(warnings: list[str] | None, text: str) -> None:
    if warnings is None:
        log.warning("%s", text)
    else:
        warnings.append(text)


#: ``progress(stage, done, total)``; stages are "reading" and "embedding"
IndexProgress = Callable[[str, int, int], None]


class VaultService:
    """Index, search and read one vault kept in ``store``.

    ``root`` overrides the vault folder; otherwise the one recorded by the last
    ``index`` is used. ``embedder`` is called whenever vectors are needed, so
    the service follows the embedder its owner has configured.
    """

    def __init__(
        self,
        store: Store,
        root: str | Path | None = None,
        embedder: Callable[[], Embedder | None] = lambda: None,
    ) -> None:
        self.store = store
        self.root = Path(root) if root is not None else None
        self._embedder = embedder
        self._lock = threading.RLock()
        self._dense: DenseCorpus | None = None
        #: ((store generation, model key), chunks with a current vector, chunks)
        self._coverage: tuple[tuple[int, str], int, int] | None = None
        self._snap: tables.VaultSnapshot | None = None
        self._snap_gen = -1
        #: the DenseCorpus and store generation whose vectors' model was last checked
        self._checked: tuple[DenseCorpus, int] | None = None
        #: ((generation, model key), cost of a walked row in exact rankings)
        self._walk_measured: tuple[tuple[int, str], float] | None = None
        self._ft: FullTextIndex | None = None
        self._ft_stamp: str | None = None
        #: how search ranks (its stages and numbers, :mod:`.ranking`)
        self.ranking = VaultRankingConfig()

    @property
    def _ft_dir(self) -> Path:
        return Path(self.store.index_dir) / "vault"

    # -- indexing -----------------------------------------------------------------------------

    def index(
        self,
        path: str | Path | None = None,
        progress: IndexProgress | None = None,
        *,
        embed: bool = True,
    ) -> VaultIndexReport:
        """Bring the store up to date with the vault at ``path`` (or the remembered one);
        with ``embed=False`` the vectors are left for a later ``index`` or search."""
        started = time.perf_counter()
        root = self._index_root(path)
        config = load_config(root)
        warnings: list[str] = []
        files = _hash_files(root, config, progress, warnings)
        plan = plan_sync(tables.stored_hashes(self.store), {s: h for s, (_, h) in files.items()})
        notes: list[Note] = []
        problems: list[str] = []
        for slug in (*plan.added, *plan.changed):
            note = parse_note(root, files[slug][0], config=config)
            problems.extend(f"{note.path}: {p}" for p in note.problems)
            notes.append(note)
        chunks: list[Chunk] = [c for n in notes for c in chunk_note(n)]
        with self._lock:
            old_version = tables.load_meta(self.store).version
            gen = tables.apply_sync(self.store, plan, notes, chunks, root=str(root), config=config)
            if gen is not None:
                self._update_fulltext(old_version, str(gen), plan, notes, chunks)
        vectors = None
        embedder = self._embedder() if embed else None
        if not embed:
            warnings.append("vectors not computed (--no-embed); the next index computes them")
        elif embedder is None:
            warnings.append(
                "no embedder configured: notes stored without vectors (full text only); "
                "index with --embedder local|fake|litellm:<model> for vector search"
            )
        else:
            vectors = self._embed(
                embedder, prune=bool(plan.deleted or plan.changed), progress=progress
            )
        return VaultIndexReport(
            root=str(root),
            notes=len(files),
            added=len(plan.added),
            changed=len(plan.changed),
            unchanged=len(plan.unchanged),
            deleted=len(plan.deleted),
            chunks_written=len(chunks),
            vectors=vectors,
            problems=problems,
            warnings=warnings,
            seconds=round(time.perf_counter() - started, 3),
        )

    def _index_root(self, path: str | Path | None) -> Path:
        if path is not None:
            return Path(path).absolute()
        if self.root is not None:
            return self.root.absolute()
        remembered = tables.load_meta(self.store).root
        if remembered is None:
            raise ConfigError("no vault path given and none indexed yet: pass the vault folder")
        return Path(remembered)

    def _embed(
        self, embedder: Embedder, *, prune: bool, progress: IndexProgress | None
    ) -> EmbedReport:
        """Embed the chunks whose text has no vector from this model yet; drop dead vectors."""
        dense = self._dense_for(embedder)
        key = dense.fingerprint.key()
        stored = self.store.vector_hashes(tables.CORPUS, key)
        # The chunk rows carry the hash of their text, so only texts to embed are read.
        live = tables.chunk_hashes(self.store)
        todo_ids = [cid for cid, h in live.items() if stored.get(cid) != h]
        todo = [DenseDoc(c.id, c.text) for c in tables.load_chunks(self.store, todo_ids)]

        def step(done: int, total: int) -> None:
            if progress is not None:
                progress("embedding", done, total)

        report = dense.embed(todo, batch_size=EMBED_BATCH, progress=step, prune=False)
        pruned = 0
        if prune or not live.keys() >= stored.keys():
            pruned = self.store.prune_vectors(tables.CORPUS, set(live))
        return report.model_copy(
            update={
                "documents": len(live),
                "unchanged": len(live) - len(todo) + report.unchanged,
                "pruned": pruned,
            }
        )

    # -- full text ------------------------------------------------------------------------------

    def _update_fulltext(
        self,
        old_version: str,
        version: str,
        plan: Any,
        notes: Sequence[Note],
        chunks: Sequence[Chunk],
    ) -> None:
        """Apply a sync to the full-text index when it reflects the state before it; otherwise
        leave it stale, and the next hybrid search rebuilds it from the store."""
        ft, _reason = FullTextIndex.open(self._ft_dir, FT_BOOSTS, old_version)
        if ft is None:
            return
        by_slug: dict[str, list[tuple[str, str]]] = {}
        for c in chunks:
            by_slug.setdefault(c.slug, []).append((c.heading_path, c.text))
        docs = [_ft_doc(n.slug, n.title, n.tags, by_slug.get(n.slug, [])) for n in notes]
        ft.write(add=docs, delete=[*plan.deleted, *plan.changed], stamp=version)
        self._ft, self._ft_stamp = ft, version

    def _fulltext(self, snap: tables.VaultSnapshot) -> FullTextIndex:
        stamp = snap.meta.version
        if self._ft is not None and self._ft_stamp == stamp:
            return self._ft

        def docs() -> list[FTDoc]:
            by_slug: dict[str, list[tuple[str, str]]] = {}
            for c in tables.load_chunks(self.store):
                by_slug.setdefault(c.slug, []).append((c.heading_path, c.text))
            return [
                _ft_doc(slug, snap.titles[i], snap.tags[i], by_slug.get(slug, []))
                for i, slug in enumerate(snap.slugs)
            ]

        ft = open_or_rebuild(
            self._ft_dir, FT_BOOSTS, stamp, docs, name="vault full-text index", warn=False
        ).index
        self._ft, self._ft_stamp = ft, stamp
        return ft

    def note_words(self, slugs: Sequence[str], words: Sequence[str]) -> dict[str, frozenset[str]]:
        """Which of the analysed ``words`` each note's full-text document (title, tags,
        headings, body) holds, read from the full-text index; a note holding none of them,
        or not in the vault, is left out."""
        snap = self._snapshot()
        found = self._fulltext(snap).holding(words, [s for s in slugs if s in snap.row])
        return {slug: frozenset(held) for slug, held in found.items()}

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        tags: Sequence[str] | str | None = None,
        domain: str | None = None,
        status: Sequence[str] | str | None = None,
        note_type: str | None = None,
        date_range: Mapping[str, str | None] | Sequence[str | None] | str | None = None,
        limit: int = 10,
        mode: str = "vector",
        min_score: float | None = None,
        explain: bool = False,
        warnings: list[str] | None = None,
        config: VaultRankingConfig | None = None,
    ) -> list[VaultHit]:
        """Notes most similar to ``query`` among those passing every filter (AND).

        ``tags``: any of them (a tag also finds its nested tags); ``status``: any of the
        list; ``date_range``: ``{"start", "end"}`` on ``updated``, inclusive, either
        optional; ``min_score`` drops notes whose cosine is below it.

        Without an embedder, either mode ranks by full text alone and says so once,
        ``embedding unavailable: no embedder configured; …``, in ``warnings`` when a list
        is given (logged otherwise), as entity search does. ``mode="hybrid"`` does the
        same when the configured embedder cannot rank (no vectors stored, another
        model's); ``mode="vector"`` then raises, saying what to run. Chunks without a
        vector (an interrupted ``vault index``) are reported in ``warnings`` too.
        ``config``: the ranking settings (default :attr:`ranking`; see :mod:`.ranking`).
        """
        _check_query(query)
        if mode not in MODES:
            raise ConfigError(f"mode must be 'vector' or 'hybrid', got {mode!r}")
        min_score = _check_min_score(min_score)
        with self._lock:
            snap = self._snapshot()
            filters, statuses = _validate(
                snap.meta.config, tags, domain, status, note_type, date_range, limit
            )
            embedder = self._embedder()
            if not len(snap):
                if snap.meta.root is None:
                    raise NotFound(
                        "no vault indexed in this store: run `layersearch vault index PATH`"
                    )
                return []
            rows = _allowed_rows(snap, filters, statuses)
            if rows is not None and not len(rows):
                return []
            cfg = config if config is not None else self.ranking
            depth = limit if mode == "vector" else max(limit, cfg.channel_depth)
            if not cfg.on("vector"):
                _warn(warnings, "vector stage switched off: ranked by full text alone")
            state = VaultRanking(
                mode,
                depth,
                lambda n: self._vector_channel(
                    embedder, snap, query, n, rows, filters, statuses, min_score, warnings
                ),
                lambda n: self._fulltext(snap).search(
                    query, n, ids=None if rows is None else {snap.slugs[r] for r in rows}
                ),
                mode == "vector" and embedder is not None,
                lambda exc: _warn(warnings, _fulltext_alone(exc, min_score)),
                cfg,
                trace=Trace() if explain else None,
            )
            channels = VAULT_PIPELINE.run(state, cfg.without).channels
            fused = state.fused[:limit]
        # ranked by full text alone, the score is the fused (RRF) one, as in hybrid mode
        return _hits(snap, fused, mode if "vector" in channels else "hybrid", state.trace)

    def _vector_channel(
        self,
        embedder: Embedder | None,
        snap: tables.VaultSnapshot,
        query: str,
        depth: int,
        rows: np.ndarray | None,
        filters: VaultFilters,
        statuses: tuple[str, ...],
        min_score: float | None,
        warnings: list[str] | None,
    ) -> list[tuple[str, float]]:
        """The ``depth`` notes nearest ``query`` by their best chunk (cosine, at least
        ``min_score``); EmbeddingUnavailable or ModelMismatch when vectors cannot rank."""
        if embedder is None:
            raise EmbeddingUnavailable(_NO_EMBEDDER)
        dense = self._dense_for(embedder)
        self._check_vectors(dense)
        partial = self._partial_vectors(dense, snap)
        if partial is not None:
            _warn(warnings, partial)
        found = self._rank_chunks(dense, snap, query, depth, rows, filters, statuses)
        ranked = _best_per_note(found, depth)
        if min_score is not None:
            ranked = [(s, x) for s, x in ranked if x >= min_score]
        return ranked

    def _snapshot(self) -> tables.VaultSnapshot:
        gen = self.store.generation()
        if self._snap is None or gen != self._snap_gen:
            self._snap = tables.load_snapshot(self.store)
            self._snap_gen = gen
        return self._snap

    def _dense_for(self, embedder: Embedder) -> DenseCorpus:
        if self._dense is None or self._dense.embedder is not embedder:
            self._dense = DenseCorpus(self.store, tables.CORPUS, embedder)
        return self._dense

    def _rank_chunks(
        self,
        dense: DenseCorpus,
        snap: tables.VaultSnapshot,
        query: str,
        depth: int,
        rows: np.ndarray | None,
        filters: VaultFilters,
        statuses: tuple[str, ...],
    ) -> list[tuple[str, float]]:
        """Enough of the best chunks of the notes at ``rows`` (all: None) to rank ``depth`` notes.

        With ``widest`` the most chunks any candidate note has, the best ``(depth + 1) *
        widest`` chunks hold at least ``depth + 1`` notes, so one vector search suffices, and
        the extra note settles a tie at the cut by slug rather than by chunk id. PostgreSQL
        stores stop reading earlier once ``depth + 1`` notes are in (``search_vectors_where``).
        """
        counts = snap.chunk_counts if rows is None else snap.chunk_counts[rows]
        total = int(counts.sum())
        if total == 0:
            return []
        k = min(total, (depth + 1) * max(int(counts.max()), 1))
        where = getattr(self.store, "search_vectors_where", None)
        if where is None:
            # In memory (DuckDB stores): the snapshot's chunk ids are the allow-list.
            return dense.search(query, k, None if rows is None else snap.chunks_of(rows))
        q = dense.query_vector(query)
        key = dense.fingerprint.key()
        common: dict[str, Any] = {"group": tables.chunk_id_slug, "groups": depth + 1}
        if rows is None:
            found: list[tuple[str, float]] = where(tables.CORPUS, key, q, k, **common)
        elif total <= _exact_up_to(len(snap.flat_chunks), depth, self._walk_cost(snap, key)):
            # Few chunks pass: rank them exactly, looked up by id. Walking the index would
            # pass over many rejected rows for each one kept.
            found = where(tables.CORPUS, key, q, k, ids=snap.chunks_of(rows))
        else:
            # Many pass: walk the HNSW index, the filters joined to each chunk's note in the
            # statement itself, so no list of ids travels.
            sql, params = tables.filter_sql(filters, statuses)
            found = where(
                tables.CORPUS, key, q, k, join=tables.NOTE_JOIN, where=sql, params=params, **common
            )
        return found

    def _walk_cost(self, snap: tables.VaultSnapshot, key: str) -> float:
        """What walking the index costs per row, in exact rankings of one row: measured by
        the store once per generation (the graph changes only with a write), so the choice
        between the walk and the exact ranking is the same for every search in between."""
        cached = self._walk_measured
        if cached is not None and cached[0] == (self._snap_gen, key):
            return cached[1]
        measure = getattr(self.store, "walk_pages_per_row", None)
        pages = None
        if measure is not None and len(snap.flat_chunks):
            n = len(snap.flat_chunks)
            probes = [
                str(snap.flat_chunks[(2 * i + 1) * n // (2 * WALK_PROBES)])
                for i in range(WALK_PROBES)
            ]
            pages = measure(tables.CORPUS, key, probes)
        cost = WALK_COST if pages is None else WALK_PAGE_COST * pages
        log.debug("vault walk cost: %s index pages per row, %.1f exact rankings", pages, cost)
        self._walk_measured = ((self._snap_gen, key), cost)
        return cost

    def _partial_vectors(self, dense: DenseCorpus, snap: tables.VaultSnapshot) -> str | None:
        """A warning when some chunks have no current vector from this model (counted once
        per store generation): the search ranks only the others."""
        gen, key = self._snap_gen, dense.fingerprint.key()
        if self._coverage is None or self._coverage[0] != (gen, key):
            live = tables.chunk_hashes(self.store)
            stored = self.store.vector_hashes(tables.CORPUS, key)
            have = sum(1 for cid, h in live.items() if stored.get(cid) == h)
            self._coverage = ((gen, key), have, len(live))
        _, have, total = self._coverage
        if have >= total:
            return None
        root = snap.meta.root or "PATH"
        return (
            f"vault search ranked {have:,} of {total:,} chunks: {total - have:,} have no "
            f"vector from {dense.fingerprint.describe()} yet (an interrupted or failed "
            f"`vault index`?); run `layersearch vault index {root}` to finish"
        )

    def _check_vectors(self, dense: DenseCorpus) -> None:
        """Check the stored vectors' model (once per generation); say how to fix a missing or
        foreign one. Stores that rank in the database never load the vectors here."""
        gen = self._snap_gen
        if self._checked is not None and self._checked[0] is dense and self._checked[1] == gen:
            return
        try:
            if hasattr(self.store, "search_vectors_where"):
                dense.check()
            else:
                dense.index()
        except (ModelMismatch, EmbeddingUnavailable) as exc:
            configured = dense.fingerprint.describe()
            stored = self.store.vector_fingerprints(tables.CORPUS)
            if not stored:
                raise EmbeddingUnavailable(
                    f"the vault has no vectors from {configured} yet: run "
                    "`layersearch vault index` with this embedder"
                ) from exc
            if isinstance(exc, ModelMismatch):
                names = ", ".join(describe_key(k) for k in stored)
                raise ModelMismatch(
                    f"the vault's vectors were made by {names}, but the configured embedder is "
                    f"{configured}; configure the stored model, or re-run `layersearch vault "
                    "index` with the configured one"
                ) from exc
            raise
        self._checked = (dense, gen)

    # -- reading one note -----------------------------------------------------------------------

    def get_note(self, slug: str) -> NoteDetail:
        """The whole note ``slug`` (exact, else a unique case-insensitive match)."""
        wanted = _check_slug(slug)
        rows = tables.load_note_rows(self.store, wanted)
        if len(rows) == 1:
            return NoteDetail(**rows[0])
        if len(rows) > 1:
            names = ", ".join(repr(r["slug"]) for r in rows[:5])
            raise ConfigError(f"slug {slug!r} matches several notes ignoring case: {names}")
        slugs = tables.all_slugs(self.store)
        if not slugs and tables.load_meta(self.store).root is None:
            raise NotFound("no vault indexed in this store: run `layersearch vault index PATH`")
        close = difflib.get_close_matches(wanted, slugs, n=3, cutoff=0.6)
        hint = f"; did you mean: {', '.join(repr(c) for c in close)}" if close else ""
        raise NotFound(f"no note with slug {slug!r} in the indexed vault{hint}")


# -- helpers ------------------------------------------------------------------------------------


def _hash_files(
    root: Path, config: VaultConfig, progress: IndexProgress | None, warnings: list[str]
) -> dict[str, tuple[Path, str]]:
    """slug → (file, sha256 of its bytes) for every note of the vault; a note over
    ``MAX_NOTE_BYTES`` is left out with a warning naming it (added to ``warnings``)."""
    paths = list(scan_vault(root, config=config))
    out: dict[str, tuple[Path, str]] = {}
    absolute = root.absolute()
    for done, path in enumerate(paths, start=1):
        try:
            raw = read_note_bytes(path)
        except NoteTooLarge as exc:
            rel = path.relative_to(absolute).as_posix()
            warnings.append(f"skipped {rel}: {exc}")
            log.warning("skipping %s: %s", path, exc)
            continue
        except OSError as exc:
            log.warning("skipping %s: cannot read it: %s", path, exc.strerror or exc)
            continue
        slug = slug_for(path.relative_to(absolute).as_posix())
        out[slug] = (path, hashlib.sha256(raw).hexdigest())
        if progress is not None and (done % 200 == 0 or done == len(paths)):
            progress("reading", done, len(paths))
    return out


def _ft_doc(slug: str, title: str, tags: Sequence[str], chunks: Sequence[tuple[str, str]]) -> FTDoc:
    headings = dict.fromkeys(h for h, _ in chunks)
    return FTDoc(
        id=slug,
        kind=_FT_KIND,
        fields={
            "title": title,
            "tags": " ".join(tags),
            "heading": "\n".join(headings),
            "body": "\n\n".join(t for _, t in chunks),
        },
    )


def _check_query(query: Any) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ConfigError("query must be non-empty text")
    if len(query) > MAX_QUERY_CHARS:
        raise ConfigError(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")


def _check_min_score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ConfigError(f"min_score must be a number from -1 to 1, got {value!r}")
    if not -1.0 <= float(value) <= 1.0:
        raise ConfigError(f"min_score must be from -1 to 1 (a cosine), got {value}")
    return float(value)


def _validate(
    config: VaultConfig,
    tags: Sequence[str] | str | None,
    domain: str | None,
    status: Sequence[str] | str | None,
    note_type: str | None,
    date_range: Mapping[str, str | None] | Sequence[str | None] | str | None,
    limit: int,
) -> tuple[VaultFilters, tuple[str, ...]]:
    if isinstance(date_range, Mapping):
        unknown = sorted(set(date_range) - {"start", "end"})
        if unknown:
            raise ConfigError(
                f"date_range takes 'start' and 'end' (YYYY-MM-DD, either optional), "
                f"not {', '.join(map(repr, unknown))}"
            )
        date_range = (date_range.get("start"), date_range.get("end"))
    filters = validate_filters(
        config, domain=domain, note_type=note_type, tags=tags, date_range=date_range, limit=limit
    )
    if status is None:
        return filters, ()
    wanted = [status] if isinstance(status, str) else list(status)
    statuses = {validate_filters(config, status=s).status for s in wanted}
    return filters, tuple(sorted(s for s in statuses if s is not None))


def _allowed_rows(
    snap: tables.VaultSnapshot, f: VaultFilters, statuses: tuple[str, ...]
) -> np.ndarray | None:
    """Rows of the notes passing every filter; None when there is no filter at all."""
    masks: list[np.ndarray] = []
    if f.domain is not None:
        masks.append(snap.domain == f.domain)
    if f.note_type is not None:
        masks.append(snap.note_type == f.note_type)
    if statuses:
        masks.append(np.isin(snap.status, list(statuses)))
    if f.tags:
        any_tag = np.zeros(len(snap), dtype=bool)
        for tag in f.tags:
            rows = snap.tag_rows.get(tag)
            if rows is not None:
                any_tag[rows] = True
        masks.append(any_tag)
    epoch = date(1970, 1, 1).toordinal()
    if f.date_from is not None:
        masks.append(snap.updated >= f.date_from.toordinal() - epoch)
    if f.date_to is not None:
        masks.append(snap.updated <= f.date_to.toordinal() - epoch)
    if not masks:
        return None
    mask = np.logical_and.reduce(masks)
    return np.flatnonzero(mask)


def _exact_up_to(chunks: int, depth: int, walk_cost: float) -> float:
    """How many passing chunks are still cheaper to rank exactly than to find by walking,
    a walked row costing ``walk_cost`` exact rankings of one."""
    return max(EXACT_CHUNKS, math.sqrt(WALK_ROWS * (depth + 1) * chunks * walk_cost))


def _best_per_note(found: Sequence[tuple[str, float]], depth: int) -> list[tuple[str, float]]:
    """The ``depth`` best notes by their best chunk's cosine (ties by slug)."""
    best: dict[str, float] = {}
    for cid, score in found:
        slug = tables.chunk_id_slug(cid)
        if slug not in best or score > best[slug]:
            best[slug] = score
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(s, float(x)) for s, x in ranked[:depth]]


_ABSOLUTE = re.compile(r"^[A-Za-z]:")


def _check_slug(slug: Any) -> str:
    """The normalised slug; paths leaving the vault, absolute paths and NUL are errors."""
    if not isinstance(slug, str) or not slug.strip():
        raise ConfigError("slug must be a non-empty string, e.g. 'Metrics/Net revenue'")
    text = slug.strip().replace("\\", "/")
    if "\x00" in text:
        raise ConfigError(f"slug {slug!r} contains a NUL character")
    if text.startswith("/") or _ABSOLUTE.match(text):
        raise ConfigError(
            f"slug {slug!r} is an absolute path; slugs are relative to the vault, "
            "e.g. 'Metrics/Net revenue'"
        )
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ConfigError(f"slug {slug!r} tries to leave the vault ('.' and '..' are not allowed)")
    return unicodedata.normalize("NFC", slug_for("/".join(parts)))
