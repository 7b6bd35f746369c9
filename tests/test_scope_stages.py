"""scope=all's places as declared stages (``corpora.scope_stages``): the declaration and
its config, each stage switched off, scores that follow the order, and the stages an
explanation shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.corpora.scope_places import DEFAULTS, ScopeRankingConfig
from layersearch.corpora.scope_stages import LIST_STAGES, SCOPE_PIPELINE
from layersearch.errors import ConfigError
from tests.support import MINI, ROOT, VAULT

CHATS = ROOT / "fixtures" / "conversations" / "generic" / "messages.jsonl"
QUESTIONS = ("customers revenue", "store opening date", "tax paid")


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    path: Path = tmp_path_factory.mktemp("stages") / "s.duckdb"
    with Layersearch(path) as ls:
        ls.load(MINI)
        ls.conversations.import_path(CHATS)
        ls.vault.index(VAULT)
        ls.save_memories(
            [{"learning": "Net revenue excludes tax and refunds", "entities": ["shop.orders"]}]
        )
        yield ls


def test_the_declared_stages_and_their_config() -> None:
    assert SCOPE_PIPELINE.names == (
        "tagged-first",
        "tagged-join",
        "shares",
        "waiting-unmatched",
        "waiting-weak",
        "leading",
        "share-ties",
        "fuse",
    )
    assert SCOPE_PIPELINE.switchable == ScopeRankingConfig.PIPELINE_STAGES
    assert SCOPE_PIPELINE.stages[: len(LIST_STAGES)] == LIST_STAGES
    assert (DEFAULTS.weak_share, DEFAULTS.unmatched_share) == (0.7, 0.5)
    cfg = ScopeRankingConfig.from_mapping({"weak_share": 0.6, "without": ["leading"]})
    assert cfg.weak_share == 0.6 and not cfg.on("leading") and cfg.on("share-ties")
    with pytest.raises(ConfigError, match="did you mean 'waiting-weak'"):
        DEFAULTS.without_stages(["waiting-weka"])
    with pytest.raises(ConfigError, match="unknown scope ranking stage 'fuse'"):
        DEFAULTS.without_stages(["fuse"])
    with pytest.raises(ConfigError, match="cannot be switched off"):
        SCOPE_PIPELINE.check(["shares"])


def _order(ls: Layersearch, question: str, **kw: object) -> list[str]:
    resp = ls.search(question=question, scope="all", **kw)
    scores = [h.score for h in resp.results]
    assert scores == sorted(scores, reverse=True), (question, scores)
    return [h.id for h in resp.results]


@pytest.mark.parametrize("stage", ScopeRankingConfig.PIPELINE_STAGES)
def test_each_stage_switches_off_and_scores_follow_the_order(full: Layersearch, stage: str) -> None:
    before = {q: _order(full, q) for q in QUESTIONS}
    full.scope.config = DEFAULTS.without_stages([stage])
    try:
        after = {q: _order(full, q) for q in QUESTIONS}
        explained = [
            m.stage
            for q in QUESTIONS
            for h in full.search(question=q, scope="all", explain=True).results
            for m in h.stages or []
        ]
    finally:
        full.scope.config = DEFAULTS
    assert stage not in explained
    # every stage moves a hit of one of these questions but tagged-join: here the entity
    # search returns the tagged entities itself (test_scope's hand-made lists join them)
    assert (after != before) is (stage != "tagged-join"), stage
    assert {q: _order(full, q) for q in QUESTIONS} == before


def test_explain_shows_the_stages_that_moved_a_hit(full: Layersearch) -> None:
    plain = full.search(question="tax paid", scope="all")
    resp = full.search(question="tax paid", scope="all", explain=True)
    assert [h.id for h in resp.results] == [h.id for h in plain.results]
    assert [h.score for h in resp.results] == [h.score for h in plain.results]
    assert all(h.stages is None for h in plain.results)
    moves = {h.id: [m.stage for m in h.stages or []] for h in resp.results}
    # the weak memory waits; the entity the best memory is tagged with comes into the list
    waiting = [h for h in resp.results if "waiting-weak" in moves[h.id]]
    assert any(m.after > m.before for h in waiting for m in h.stages or [])
    assert "tagged-first" in moves["shop.stores"]
    first = next(m for m in resp.results if m.id == "shop.stores").stages or []
    tagged = next(m for m in first if m.stage == "tagged-first")
    assert tagged.before == 0 and tagged.note.startswith("tagged by the best memory")


def test_the_settings_and_eval_reach_the_scope_config(tmp_path: Path) -> None:
    from layersearch.eval.scope import stage_switches

    ranking = {"scope": {"without": ["leading"], "weak_share": 0.6}}
    with Layersearch(tmp_path / "s.duckdb", ranking=ranking) as ls:
        assert ls.scope.config.without == {"leading"} and ls.scope.config.weak_share == 0.6
        ls.set_ranking({})
        assert ls.scope.config == DEFAULTS
    with pytest.raises(ConfigError, match=r"ranking.scope: unknown key 'weak'"):
        Layersearch(tmp_path / "t.duckdb", ranking={"scope": {"weak": 0.6}})
    assert stage_switches(["leading", "join-keys"]) == ({"join-keys"}, {"leading"})
    with pytest.raises(ConfigError, match="did you mean 'share-ties'"):
        stage_switches(["share-tie"])
