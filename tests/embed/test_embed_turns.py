"""Which embedder the conversation corpora use (``conversation_embedder``)."""

from __future__ import annotations

from layersearch.embed import FakeEmbedder, LocalEmbedder, conversation_embedder


def test_conversations_use_the_configured_embedder_by_default(monkeypatch) -> None:
    monkeypatch.delenv("LAYERSEARCH_TURN_EMBEDDER", raising=False)
    for embedder in (LocalEmbedder(), FakeEmbedder(16)):
        assert conversation_embedder(embedder) is embedder
    assert conversation_embedder(None) is None


def test_the_environment_names_the_conversations_own(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", f"local:{tmp_path}")
    chosen = conversation_embedder(LocalEmbedder())
    assert isinstance(chosen, LocalEmbedder) and chosen.model_name == tmp_path.name
    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", "fake:8")
    chosen = conversation_embedder(FakeEmbedder(16))
    assert isinstance(chosen, FakeEmbedder) and chosen.fingerprint.dimensions == 8


def test_no_embedder_stays_none_whatever_the_environment(monkeypatch) -> None:
    # the lexical channels only (--embedder none): conversations get no model of their own
    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", "fake:8")
    assert conversation_embedder(None) is None


def test_a_bad_spec_in_the_environment_is_an_error(monkeypatch) -> None:
    import pytest

    from layersearch.errors import ConfigError

    monkeypatch.setenv("LAYERSEARCH_TURN_EMBEDDER", "nonsense")
    with pytest.raises(ConfigError, match="LAYERSEARCH_TURN_EMBEDDER: 'nonsense' is not"):
        conversation_embedder(FakeEmbedder(16))
