"""A search over a partial vector set says so (issue #20, point 13).

Embedding commits batch by batch, so an embedding run that dies part way (killed,
a provider that fails mid-run) leaves some documents without vectors; the dense
channel then ranks only the others. Each search reports it in ``warnings`` (N of M
have vectors; how to finish) until the run is completed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.vault import search as vault_search
from layersearch.embed.fake import FakeEmbedder
from tests.support import MINI, ROOT

VAULT = ROOT / "fixtures" / "vault"


class Killed(BaseException):
    """Stands for the process dying: not an error any layer handles."""


class DiesAfter(FakeEmbedder):
    """The fake embedder (same fingerprint, same vectors) that dies after ``batches``."""

    def __init__(self, batches: int) -> None:
        super().__init__(16)
        self.left = batches

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.left <= 0:
            raise Killed
        self.left -= 1
        return super().embed_documents(texts)


def test_vault_search_over_a_partial_vector_set_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vault_search, "EMBED_BATCH", 16)
    path = tmp_path / "s.duckdb"
    with Layersearch(path, embedder=DiesAfter(3)) as ls, pytest.raises(Killed):
        ls.vault.index(VAULT)
    with Layersearch(path, embedder=FakeEmbedder(16)) as ls:
        warnings: list[str] = []
        hits = ls.vault.search("incident runbook", warnings=warnings, mode="hybrid")
        assert hits
        assert len(warnings) == 1, warnings
        assert "ranked 48 of " in warnings[0] and "run `layersearch vault index" in warnings[0]
        total = int(warnings[0].split(" of ", 1)[1].split(" ", 1)[0].replace(",", ""))
        assert total > 48
        ls.vault.index(VAULT)  # finishes the run
        again: list[str] = []
        assert ls.vault.search("incident runbook", warnings=again)
        assert again == []


def test_vault_search_cli_prints_the_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vault_search, "EMBED_BATCH", 16)
    path = tmp_path / "s.duckdb"
    with Layersearch(path, embedder=DiesAfter(1)) as ls, pytest.raises(Killed):
        ls.vault.index(VAULT)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(path), "--embedder", "fake:16"]
        + ["vault", "search", "incident runbook", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), list)  # the JSON list contract is unchanged
    assert "warning: vault search ranked 16 of " in done.stderr


def test_entity_search_over_partial_vectors_warns(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Layersearch(path) as ls:
        ls.load(MINI)
    with Layersearch(path, embedder=DiesAfter(2)) as ls:
        from layersearch.corpora.dense import ENTITY_CORPUS, DenseDoc, entity_docs, memory_text

        corpus = ls.corpus()
        docs = entity_docs(corpus.entities.values())
        docs += [DenseDoc(m.id, memory_text(m)) for m in corpus.memories.values()]
        assert len(docs) > 16
        with pytest.raises(Killed):  # what `layersearch embed` runs, in batches of 8
            ls.dense(ENTITY_CORPUS).embed(docs, batch_size=8)
    with Layersearch(path, embedder=FakeEmbedder(16)) as ls:
        resp = ls.search(question="monthly revenue by store")
        partial = [w for w in resp.warnings if w.startswith("vector channel ranked 16 of ")]
        assert partial and "run `layersearch embed` to finish" in partial[0], resp.warnings
        ls.embed()
        assert not ls.search(question="monthly revenue by store").warnings
