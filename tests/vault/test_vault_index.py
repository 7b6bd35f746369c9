"""Incremental vault indexing: unchanged notes cost nothing, deleted and renamed ones leave no rows."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from layersearch.corpora.vault.search import VaultService
from layersearch.embed.base import Fingerprint
from layersearch.embed.fake import FakeEmbedder
from layersearch.store.duckdb import DuckDBStore
from tests.support import VAULT


class CountingEmbedder:
    """The fake embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(64)
        self.documents: list[str] = []

    @property
    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture()
def vault_copy(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(VAULT, root)
    return root


def rows(store: DuckDBStore, sql: str, params: list[object] | None = None) -> list[tuple]:
    with store.connect(write=False) as con:
        return con.execute(sql, params or []).fetchall()


def ids_of(store: DuckDBStore, slug: str) -> dict[str, list]:
    return {
        "notes": rows(store, "SELECT slug FROM vault_notes WHERE slug = ?", [slug]),
        "chunks": rows(store, "SELECT id FROM vault_chunks WHERE slug = ?", [slug]),
        "vectors": rows(
            store,
            "SELECT doc_id FROM vectors WHERE corpus = 'vault' AND doc_id LIKE ?",
            [slug + "#%"],
        ),
    }


def test_reindex_skips_unchanged_prunes_deleted_and_renamed(tmp_path: Path, vault_copy: Path):
    store = DuckDBStore(tmp_path / "s.duckdb")
    emb = CountingEmbedder()
    svc = VaultService(store, embedder=lambda: emb)
    first = svc.index(vault_copy)
    assert (first.notes, first.added, first.unchanged) == (69, 69, 0)
    assert first.vectors is not None and first.vectors.embedded == first.chunks_written > 69
    n_chunks = rows(store, "SELECT count(*) FROM vault_chunks")[0][0]
    assert rows(store, "SELECT count(*) FROM vectors WHERE corpus = 'vault'")[0][0] == n_chunks

    # Nothing changed: no embedder call, no write at all (the generation stays).
    emb.documents.clear()
    gen = store.generation()
    again = svc.index(vault_copy)
    assert (again.added, again.changed, again.unchanged, again.deleted) == (0, 0, 69, 0)
    assert emb.documents == [] and again.chunks_written == 0
    assert again.vectors is not None and again.vectors.embedded == 0
    assert store.generation() == gen

    # One note edited: only its chunks are embedded again.
    note = vault_copy / "Metrics" / "Net revenue.md"
    note.write_text(note.read_text() + "\n## Zanzibar\n\nA brand new section about zanzibarite.\n")
    changed = svc.index(vault_copy)
    assert (changed.changed, changed.unchanged) == (1, 68)
    assert emb.documents and all(t.startswith("Net revenue") for t in emb.documents)

    # One note deleted, one renamed (moved): nothing of the old slugs remains.
    (vault_copy / "Metrics" / "Churn rate.md").unlink()
    target = vault_copy / "Archive2"
    target.mkdir()
    (vault_copy / "Metrics" / "Refund rate.md").rename(target / "Refund rate.md")
    emb.documents.clear()
    report = svc.index(vault_copy)
    assert (report.added, report.deleted, report.changed) == (1, 2, 0)
    assert report.vectors is not None and report.vectors.pruned > 0
    for gone in ("Metrics/Churn rate", "Metrics/Refund rate"):
        assert ids_of(store, gone) == {"notes": [], "chunks": [], "vectors": []}
    moved = ids_of(store, "Archive2/Refund rate")
    assert moved["notes"] and moved["chunks"] and len(moved["vectors"]) == len(moved["chunks"])
    # Every chunk has exactly one vector and no vector is left without its chunk.
    orphans = rows(
        store,
        "SELECT count(*) FROM vectors v WHERE v.corpus = 'vault' AND v.doc_id NOT IN "
        "(SELECT id FROM vault_chunks)",
    )[0][0]
    assert orphans == 0
    assert rows(store, "SELECT count(*) FROM vault_notes")[0][0] == 68


def test_index_without_embedder_stores_notes_and_warns(tmp_path: Path, vault_copy: Path):
    store = DuckDBStore(tmp_path / "s.duckdb")
    report = VaultService(store).index(vault_copy)
    assert report.vectors is None and report.added == 69
    assert any("no embedder" in w for w in report.warnings)
    # A later run with an embedder computes the vectors although no note changed.
    emb = CountingEmbedder()
    later = VaultService(store, embedder=lambda: emb).index(vault_copy)
    assert later.unchanged == 69 and later.vectors is not None
    assert later.vectors.embedded == later.vectors.documents > 0


def test_vault_root_is_remembered(tmp_path: Path, vault_copy: Path):
    store = DuckDBStore(tmp_path / "s.duckdb")
    emb = FakeEmbedder(64)
    VaultService(store, embedder=lambda: emb).index(vault_copy)
    (vault_copy / "Metrics" / "Churn rate.md").unlink()
    # A new service (a new process) re-indexes the same folder without being told the path.
    report = VaultService(store, embedder=lambda: emb).index()
    assert report.root == str(vault_copy.absolute()) and report.deleted == 1


def test_index_progress_reports_reading_and_embedding(tmp_path: Path, vault_copy: Path):
    store = DuckDBStore(tmp_path / "s.duckdb")
    emb = FakeEmbedder(64)
    seen: list[tuple[str, int, int]] = []
    VaultService(store, embedder=lambda: emb).index(vault_copy, progress=lambda *a: seen.append(a))
    stages = {s for s, _, _ in seen}
    assert stages == {"reading", "embedding"}
    assert ("reading", 69, 69) in seen
    last = [x for x in seen if x[0] == "embedding"][-1]
    assert last[1] == last[2] > 0


def test_index_errors(tmp_path: Path):
    from layersearch.errors import ConfigError, NotFound

    store = DuckDBStore(tmp_path / "s.duckdb")
    svc = VaultService(store)
    with pytest.raises(NotFound):
        svc.index(tmp_path / "nope")
    with pytest.raises(ConfigError, match="no vault path"):
        svc.index()
