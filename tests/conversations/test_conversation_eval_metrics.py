"""`eval conversations` metrics on hand-made ranked lists, the conversation choice,
and the CLI's --conversations / --details."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch.cli import main
from layersearch.corpora.conversations.locomo import LocomoQuestion
from layersearch.errors import ConfigError
from layersearch.eval.conversations import (
    METRIC_KEYS,
    best_of_sets,
    channel_union,
    parse_conversations,
    score_question,
    summarise,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"

# 25 turns: evidence D1:3 at rank 3, D2:1 at rank 7, D3:9 at rank 15; D9:9 never
RANKED = [f"X{i}" for i in range(1, 26)]
RANKED[2], RANKED[6], RANKED[14] = "D1:3", "D2:1", "D3:9"


def test_score_question_counts_as_the_anchors_do() -> None:
    s = score_question(RANKED, ["D1:3", "D2:1", "D3:9"])
    assert set(s) == set(METRIC_KEYS)
    assert (s["recall_any@5"], s["recall_any@10"], s["recall_any@20"]) == (1.0, 1.0, 1.0)
    assert (s["recall_all@5"], s["recall_all@10"], s["recall_all@20"]) == (0.0, 0.0, 1.0)
    assert s["evidence_recall@5"] == pytest.approx(1 / 3)
    assert s["evidence_recall@10"] == pytest.approx(2 / 3)
    assert s["evidence_recall@20"] == 1.0
    assert s["mrr"] == pytest.approx(1 / 3)


def test_score_question_first_evidence_deep() -> None:
    s = score_question(RANKED, ["D3:9", "D9:9"])  # rank 15 and never
    assert (s["recall_any@5"], s["recall_any@10"], s["recall_any@20"]) == (0.0, 0.0, 1.0)
    assert s["recall_all@20"] == 0.0
    assert s["evidence_recall@20"] == 0.5
    assert s["mrr"] == 0.0  # MRR counts the top 10 only
    s = score_question(RANKED, ["D2:1"])
    assert s["recall_all@5"] == 0.0 and s["recall_all@10"] == 1.0
    assert s["mrr"] == pytest.approx(1 / 7)


def test_summarise_macro_averages() -> None:
    a = score_question(RANKED, ["D1:3"])  # rank 3
    b = score_question(RANKED, ["D9:9"])  # missed
    c = score_question(RANKED, ["D1:3", "D3:9"])  # ranks 3 and 15
    out = summarise([a, b, c])
    assert out["questions"] == 3
    assert out["recall_any@5"] == round(2 / 3, 4)
    assert out["recall_all@10"] == round(1 / 3, 4)
    assert out["recall_all@20"] == round(2 / 3, 4)
    assert out["evidence_recall@10"] == round((1 + 0 + 0.5) / 3, 4)
    assert out["mrr"] == round((1 / 3 + 0 + 1 / 3) / 3, 4)
    assert summarise([]) == {"questions": 0, **dict.fromkeys(METRIC_KEYS)}


def _q(evidence: tuple[str, ...], category: int = 1) -> LocomoQuestion:
    return LocomoQuestion("c", "q?", "a", evidence, category)


def test_channel_union_holds_what_either_channel_holds() -> None:
    questions = [_q(("D1:3", "D2:1")), _q(("D9:9",), 2)]
    full = [RANKED, RANKED]
    other = [["D2:1", *[f"Y{i}" for i in range(19)]], ["D9:9"]]
    union = channel_union(questions, {"fulltext": full, "vector": other})
    assert union is not None and union["channels"] == ["fulltext", "vector"]
    # q1: D1:3 (full text, 3rd) and D2:1 (vector, 1st) both in the top 5s; q2: vector 1st
    assert union["recall_all@5"] == 1.0 and union["recall_any@5"] == 1.0
    assert union["per_category"]["1"]["evidence_recall@5"] == 1.0
    # each channel alone holds less: full text finds neither of q2, vector only half of q1
    assert score_question(RANKED, ["D9:9"])["recall_any@20"] == 0.0
    assert channel_union(questions, {"fulltext": full}) is None
    assert channel_union(questions, {"fulltext": full, "fulltext+vector": full}) is None


def test_best_of_sets_takes_each_questions_best_set() -> None:
    questions = [_q(("D1:3",)), _q(("D9:9",))]
    one = [RANKED, RANKED]  # q1: rank 3 (MRR 1/3); q2: missed
    two = [["D1:3"], ["X1", "D9:9"]]  # q1: rank 1; q2: rank 2
    best = best_of_sets(questions, {"a": one, "b": two})
    assert best is not None and best["sets"] == ["a", "b"] and best["questions"] == 2
    assert best["mrr"] == round((1.0 + 0.5) / 2, 4)
    assert best["recall_any@5"] == 1.0
    assert best_of_sets(questions, {"a": one}) is None


def test_parse_conversations() -> None:
    ids = ["locomo:26", "locomo:30", "locomo:41"]
    assert parse_conversations(None, ids) == ids
    assert parse_conversations("30, locomo:26,30", ids) == ["locomo:30", "locomo:26"]
    assert parse_conversations("1,3", ids) == ["locomo:26", "locomo:41"]  # positions
    assert parse_conversations(["41"], ids) == ["locomo:41"]
    numbered = ["locomo:2", "locomo:1"]
    assert parse_conversations("1", numbered) == ["locomo:1"]  # a sample id wins
    with pytest.raises(ConfigError, match=r"unknown conversation\(s\) 99, x: .*26, 30, 41"):
        parse_conversations("26,99,x", ids)


def _two_samples(tmp_path: Path) -> Path:
    mini = json.loads((FIXTURES / "locomo" / "mini.json").read_text(encoding="utf-8"))
    other = json.loads(json.dumps(mini[0]))
    other["sample_id"] = "conv-other"
    other["qa"] = other["qa"][:1]
    path = tmp_path / "two.json"
    path.write_text(json.dumps([mini[0], other]), encoding="utf-8")
    return path


def test_cli_conversations_and_details(tmp_path: Path) -> None:
    path = str(_two_samples(tmp_path))
    details = tmp_path / "d.jsonl"
    args = ["eval", "conversations", "--locomo", path, "--channels", "fulltext"]
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["questions"] == 4
    res = CliRunner().invoke(
        main, [*args, "--conversations", "conv-other", "--details", str(details), "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["conversations"] == ["locomo:conv-other"] and data["questions"] == 1
    assert (
        data["recall_all@20"] is not None
        and "1" in data["channel_sets"]["fulltext"]["per_category"]
    )
    lines = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 1
    row = lines[0]
    assert row["conversation_id"] == "locomo:conv-other" and row["channel_set"] == "fulltext"
    assert row["evidence_ranks"] == {
        e: row["ranked"].index(e) + 1 if e in row["ranked"] else None for e in row["evidence"]
    }
    assert row == {**row, **score_question(row["ranked"], row["evidence"])}
    res = CliRunner().invoke(main, [*args, "--conversations", "7"])
    assert res.exit_code == 2 and "unknown conversation(s) 7" in res.output
    res = CliRunner().invoke(main, [*args])
    assert res.exit_code == 0 and "| recall_any@5 |" in res.output and "per category" in res.output


def test_cli_set_overrides_the_search_config(tmp_path: Path) -> None:
    from unittest import mock

    from layersearch.eval import conversations as ev

    path = str(_two_samples(tmp_path))
    args = ["eval", "conversations", "--locomo", path, "--channels", "fulltext", "--json"]
    seen = []
    real = ev.evaluate_locomo

    def spy(*a: object, **kw: object) -> dict[str, object]:
        seen.append(kw["config"])
        return real(*a, **kw)  # type: ignore[arg-type]

    with mock.patch.object(ev, "evaluate_locomo", spy):
        res = CliRunner().invoke(main, [*args, "--set", "resolve_dates=on"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0].resolve_dates is True
    res = CliRunner().invoke(main, [*args, "--set", "resolve_datez=on"])
    assert res.exit_code == 2 and "expected name=value" in res.output
    # a setting of a deleted stage is refused the same way
    res = CliRunner().invoke(main, [*args, "--set", "feedback_weight=0.1"])
    assert res.exit_code == 2 and "expected name=value" in res.output
