"""The bundled schema encoder: which corpus reads which model under ``local``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.entities.vector import corpus_model
from layersearch.embed import (
    DEFAULT_LOCAL_MODEL,
    FakeEmbedder,
    LocalEmbedder,
    conversation_embedder,
    prose_embedder,
)
from layersearch.embed.local import SCHEMA_MODEL
from tests.support import MINI
from tests.support import bundled_embedder as bundled

pytestmark = pytest.mark.local_model

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "layersearch" / "embed" / "schema"


@pytest.fixture(scope="module")
def schema() -> LocalEmbedder:
    return bundled("local")


def test_the_model_ships_inside_the_package_with_its_card() -> None:
    model = PACKAGE / "model.onnx"
    assert model.is_file() and model.stat().st_size <= 30_000_000
    card = (PACKAGE / "README.md").read_text()
    for needed in ("Apache-2.0", "spider-syn", "train_schema_encoder.py", "validation"):
        assert needed in card, needed


def test_a_new_model_file_comes_with_a_new_fingerprint() -> None:
    # vectors are kept by fingerprint: a retrained file under the old name would be
    # read against the old file's vectors
    import hashlib

    from layersearch.embed.local import SCHEMA_SHA256

    digest = hashlib.sha256((PACKAGE / "model.onnx").read_bytes()).hexdigest()
    assert digest == SCHEMA_SHA256, "bump SCHEMA_MODEL's number and SCHEMA_SHA256"


def test_the_model_is_package_data() -> None:
    import fnmatch
    import tomllib

    config = tomllib.loads((PACKAGE.parents[3] / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["layersearch"]
    for name in ("model.onnx", "README.md"):
        assert any(fnmatch.fnmatch(f"embed/schema/{name}", p) for p in patterns), name


def test_local_is_the_schema_encoder_beside_minilm_for_prose(schema) -> None:
    assert schema.model_name == SCHEMA_MODEL
    prose = schema.prose
    assert isinstance(prose, LocalEmbedder) and prose.model_name == DEFAULT_LOCAL_MODEL
    assert schema.prose is prose  # one MiniLM, loaded once
    assert prose.prose is prose
    assert prose_embedder(schema) is prose
    assert conversation_embedder(schema) is prose
    fake = FakeEmbedder(8)
    assert prose_embedder(fake) is fake and prose_embedder(None) is None


def test_each_corpus_reads_its_model(schema) -> None:
    assert corpus_model(schema, "entities") is schema
    assert corpus_model(schema, "words") is schema
    for corpus in ("vault", "messages", "message-turns", "summaries"):
        assert corpus_model(schema, corpus) is schema.prose
    assert corpus_model(None, "entities") is None


def test_the_two_models_give_other_vectors(schema) -> None:
    texts = ["total sales by store", "table singer: name, country, age"]
    ours = schema.embed_documents(texts)
    general = schema.prose.embed_documents(texts)
    assert ours.shape == general.shape == (2, 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float((ours * general).sum(axis=1).min()) < 0.99


def test_a_store_keeps_layer_vectors_of_one_model_and_notes_of_the_other(schema, tmp_path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "churn.md").write_text("---\ntitle: Churn\n---\nA customer who left.\n")
    with Layersearch(tmp_path / "store.duckdb", embedder=schema) as ls:
        ls.load(MINI)
        ls.embed()
        ls.vault.index(vault)
        hits = ls.search(question="monthly revenue by store", max_results=3)
        models = {c: ls.store.vector_fingerprints(c) for c in ("entities", "vault")}
    assert hits.results and not [w for w in hits.warnings if "embed" in w]
    assert [SCHEMA_MODEL in f for f in models["entities"]] == [True]
    assert [DEFAULT_LOCAL_MODEL in f for f in models["vault"]] == [True]
