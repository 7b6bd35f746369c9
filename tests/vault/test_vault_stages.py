"""Vault search as a declared pipeline (``corpora.vault.ranking``): each channel can be
switched off by name, and ranks then as the other alone does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from layersearch.corpora.vault.ranking import VAULT_PIPELINE, VaultRankingConfig
from layersearch.corpora.vault.search import CHANNEL_DEPTH, VaultService
from layersearch.embed.fake import FakeEmbedder
from layersearch.errors import ConfigError
from layersearch.eval.vault import evaluate_vault
from layersearch.store.duckdb import DuckDBStore
from tests.support import VAULT

QUERIES = ("net revenue by month", "incident review", "churn definition", "weekly active users")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultService]:
    store = DuckDBStore(tmp_path_factory.mktemp("vault-stages") / "s.duckdb")
    emb = FakeEmbedder(128)
    svc = VaultService(store, embedder=lambda: emb)
    svc.index(VAULT)
    yield svc


def _slugs(svc: VaultService, query: str, **kw: object) -> list[str]:
    return [h.slug for h in svc.search(query, limit=10, warnings=[], **kw)]  # type: ignore[arg-type]


def test_the_config_names_the_pipelines_switchable_stages() -> None:
    assert VAULT_PIPELINE.switchable == VaultRankingConfig.PIPELINE_STAGES
    assert VaultRankingConfig().channel_depth == CHANNEL_DEPTH
    with pytest.raises(ConfigError, match="did you mean 'fulltext'"):
        VaultRankingConfig().without_stages(["fulltxt"])


def test_without_a_channel_ranks_by_the_other(indexed: VaultService) -> None:
    no_vector = VaultRankingConfig(without=frozenset({"vector"}))
    no_fulltext = VaultRankingConfig(without=frozenset({"fulltext"}))
    plain = VaultService(indexed.store)  # no embedder: full text alone
    for q in QUERIES:
        alone = _slugs(plain, q, mode="hybrid")
        assert _slugs(indexed, q, mode="hybrid", config=no_vector) == alone
        assert _slugs(indexed, q, mode="vector", config=no_vector) == alone
        assert _slugs(indexed, q, mode="hybrid", config=no_fulltext) == _slugs(
            indexed, q, mode="vector"
        )
    said: list[str] = []
    indexed.search(QUERIES[0], mode="hybrid", config=no_vector, warnings=said)
    assert said == ["vector stage switched off: ranked by full text alone"]
    with pytest.raises(ConfigError, match="both channels"):
        indexed.search(QUERIES[0], config=no_vector.without_stages(["fulltext"]), warnings=[])


def test_scores_never_increase(indexed: VaultService) -> None:
    for q in QUERIES:
        for mode in ("vector", "hybrid"):
            scores = [h.score for h in indexed.search(q, limit=20, mode=mode)]
            assert scores == sorted(scores, reverse=True)


def test_eval_vault_without_a_stage() -> None:
    full = evaluate_vault(mode="hybrid")
    out = evaluate_vault(mode="hybrid", without=["fulltext"])
    assert out["without"] == ["fulltext"] and full["without"] == []
    vector = evaluate_vault(mode="vector")
    assert (out["recall@5"], out["mrr"]) == (vector["recall@5"], vector["mrr"])


@pytest.mark.parametrize("stage", [None, "vector", "fulltext"])
def test_explain_names_the_channels_that_moved_each_note(
    indexed: VaultService, stage: str | None
) -> None:
    """With each stage switched off in turn: explaining changes neither the order nor the
    scores, the scores never increase, and a channel fused in says where it moved a note
    from (its place in the other channel's list)."""
    config = VaultRankingConfig(without=frozenset({stage} if stage else ()))
    seen: set[str] = set()
    for q in QUERIES:
        for mode in ("vector", "hybrid"):
            plain = indexed.search(q, limit=10, mode=mode, config=config, warnings=[])
            told = indexed.search(q, limit=10, mode=mode, config=config, explain=True, warnings=[])
            assert [(h.slug, h.score) for h in told] == [(h.slug, h.score) for h in plain]
            scores = [h.score for h in told]
            assert scores == sorted(scores, reverse=True)
            assert all("stages" not in h.model_dump() for h in plain)
            for h in told:
                for m in h.stages or []:
                    assert m.stage in VaultRankingConfig.PIPELINE_STAGES and m.stage != stage
                    assert m.before != m.after
                    ranked = {p.channel: p.rank for p in h.explanation or []}
                    if m.stage in ranked:
                        assert m.note == f"fused in at its #{ranked[m.stage]}"
                    seen.add(m.stage)
    # only a hybrid search with both channels fuses one into the other
    assert seen == ({"vector", "fulltext"} if stage is None else set())
