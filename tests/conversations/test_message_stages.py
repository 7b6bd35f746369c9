"""Message search as a declared pipeline: each stage switched off by name ranks as its
setting at zero does, scores never increase down a list, and the trace says which
stage moved which turn."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from layersearch.cli import main
from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.conversations.stages import MESSAGE_PIPELINE
from layersearch.errors import ConfigError
from layersearch.ranking.pipeline import Trace
from layersearch.types import stages_text
from tests.conversations.test_message_ranking import FIXTURES, loaded_service

QUERIES = (
    "orders by week",
    "When did we talk about churn?",
    "How many customers churned?",
    "What did we decide about the revenue dashboard?",
    "Which metric should I use for retention",
)
#: each switchable stage and the settings that turn it off another way
OFF = {
    "channel-tops": {"channel_top_turns": 0},
    "session-text": {"session_weight": 0.0},
    "answers-follow-questions": {"answers_follow_questions": False},
    "date-match": {"date_match_bonus": 0.0},
    "answer-types": {"time_answer_bonus": 0.0, "answer_type_bonus": 0.0},
    "word-neighbours": {"word_neighbours": 0},
}


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> ConversationService:
    return loaded_service(tmp_path_factory.mktemp("stages") / "s.duckdb")


def _ranked(svc: ConversationService, config: MessageSearchConfig) -> list[list[str]]:
    svc.config = config
    try:
        return [[h.message_id for h in svc.search_messages(q, 30).hits] for q in QUERIES]
    finally:
        svc.config = MessageSearchConfig()


def test_the_config_names_the_pipelines_switchable_stages() -> None:
    assert MESSAGE_PIPELINE.switchable == MessageSearchConfig.PIPELINE_STAGES
    assert set(OFF) == set(MESSAGE_PIPELINE.switchable)
    assert {"fulltext", "vector", "fuse"} <= set(MESSAGE_PIPELINE.names)
    with pytest.raises(ConfigError, match="did you mean 'date-match'"):
        MessageSearchConfig().without_stages(["date-mtch"])
    with pytest.raises(ConfigError, match="stage .fuse.; stages that can be switched off"):
        MessageSearchConfig(without=frozenset({"fuse"}))


@pytest.mark.parametrize("stage", sorted(OFF))
def test_without_a_stage_ranks_as_its_setting_off(svc: ConversationService, stage: str) -> None:
    without = _ranked(svc, MessageSearchConfig().without_stages([stage]))
    zeroed = _ranked(svc, dataclasses.replace(MessageSearchConfig(), **OFF[stage]))
    assert without == zeroed


def test_scores_never_increase_and_the_trace_names_each_move(svc: ConversationService) -> None:
    labels = {
        "top": "channel-tops",
        "session_text": "session-text",
        "answers": "answers-follow-questions",
        "when": "answer-types",
        "amount": "answer-types",
        "name": "answer-types",
    }
    seen: set[str] = set()
    for q in QUERIES:
        trace = Trace()
        hits = svc.search_messages(q, 50, trace=trace).hits
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), q
        for rank, h in enumerate(hits, start=1):
            stages = {m.stage for m in trace.moves(h.message_id)}
            for label, stage in labels.items():
                moved = [m for m in trace.moves(h.message_id) if m.stage == stage]
                if label in h.channels and any(m.after == rank for m in moved):
                    seen.add(stage)
            assert stages <= set(MESSAGE_PIPELINE.names)
    assert {"session-text", "answers-follow-questions"} <= seen


def test_eval_conversations_without_a_stage() -> None:
    locomo = str(FIXTURES / "locomo" / "mini.json")
    base = ["--embedder", "fake", "eval", "conversations", "--locomo", locomo]
    result = CliRunner().invoke(main, [*base, "--without", "session-text", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["without"] == ["session-text"]
    result = CliRunner().invoke(main, [*base, "--without", "sesion-text"])
    assert result.exit_code == 2
    assert "unknown conversations ranking stage 'sesion-text'" in result.output
    assert "did you mean 'session-text'" in result.output


def test_summary_search_runs_its_declared_stages(svc: ConversationService) -> None:
    from layersearch.corpora.conversations.stages import SUMMARY_PIPELINE

    assert SUMMARY_PIPELINE.names == ("fulltext", "vector", "fuse")
    assert SUMMARY_PIPELINE.switchable == ()
    svc.import_summaries(FIXTURES / "summaries.jsonl")
    svc.embed()
    for mode in ("fts", "vector", "hybrid"):
        hits = svc.search_summaries("churn", mode=mode).hits
        assert hits, mode
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), mode
        wanted = {"fts": {"fulltext"}, "vector": {"vector"}, "hybrid": {"fulltext", "vector"}}
        assert set().union(*(h.channels for h in hits)) <= wanted[mode]


@pytest.mark.parametrize("stage", [None, *sorted(OFF)])
def test_explain_names_the_stages_that_moved_each_turn(
    svc: ConversationService, stage: str | None
) -> None:
    """With each stage switched off in turn: explaining changes neither the order nor the
    scores, the scores never increase, and each hit's ``stages`` names only stages that
    ran, a lifted turn with the score its stage added (its ``channels`` entry)."""
    svc.config = MessageSearchConfig(without=frozenset({stage} if stage else ()))
    labels = {"channel-tops": "top", "session-text": "session_text", "date-match": "date"}
    seen: set[str] = set()
    try:
        for q in QUERIES:
            plain = svc.search_messages(q, 30)
            told = svc.search_messages(q, 30, explain=True)
            assert [(h.message_id, h.score) for h in told.hits] == [
                (h.message_id, h.score) for h in plain.hits
            ]
            scores = [h.score for h in told.hits]
            assert scores == sorted(scores, reverse=True), q
            # without explain, no stage is reported (the JSON contract is unchanged)
            assert "stages" not in plain.model_dump_json()
            for h in told.hits:
                for m in h.stages or []:
                    assert m.stage in MESSAGE_PIPELINE.names and m.stage != stage
                    assert m.before != m.after and m.note
                    seen.add(m.stage)
                    if m.stage in labels and m.adjustment:
                        assert labels[m.stage] in h.channels
    finally:
        svc.config = MessageSearchConfig()
    expected = {"channel-tops", "session-text", "answers-follow-questions", "word-neighbours"}
    assert expected - {stage} <= seen


def test_a_lifted_turn_shows_its_stage_and_score(svc: ConversationService) -> None:
    hits = svc.search_messages(QUERIES[2], 10, explain=True).hits
    lifted = [m for h in hits for m in h.stages or [] if m.adjustment > 0 and m.after < m.before]
    assert lifted
    line = stages_text(lifted[:1])
    assert line.startswith(f"{lifted[0].stage} #") and f"{lifted[0].adjustment:+.4f}" in line


def test_summary_search_explains_the_channels_that_moved_each_summary(
    svc: ConversationService,
) -> None:
    """Explaining changes neither the order nor the scores; a hybrid search names each
    channel fused in that moved a summary, a search of one channel none."""
    svc.import_summaries(FIXTURES / "summaries.jsonl")
    svc.embed()
    seen: set[str] = set()
    for q in ("churn", "monthly recurring revenue", "dashboard decisions"):
        for mode in ("fts", "vector", "hybrid"):
            plain = svc.search_summaries(q, mode=mode)
            told = svc.search_summaries(q, mode=mode, explain=True)
            assert [(h.summary_id, h.score) for h in told.hits] == [
                (h.summary_id, h.score) for h in plain.hits
            ]
            assert told.markdown == plain.markdown
            assert "stages" not in plain.model_dump_json()
            for h in told.hits:
                for m in h.stages or []:
                    assert mode == "hybrid" and m.stage in ("fulltext", "vector")
                    if m.stage in h.channels:
                        assert m.note == f"fused in at its #{h.channels[m.stage]}"
                    else:
                        assert m.note == f"passed by the hits {m.stage} ranked"
                    seen.add(m.stage)
    assert seen == {"fulltext", "vector"}
