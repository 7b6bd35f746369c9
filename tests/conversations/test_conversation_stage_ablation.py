"""scripts/conversation_stage_ablation.py: the channel features, the logistic fit, what
pays on both halves, and one run over a two-conversation LoCoMo file."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from layersearch.corpora.conversations import stages
from layersearch.corpora.conversations.ranking import MessageSearchConfig
from tests.support import ROOT, script

FIXTURES = ROOT / "fixtures" / "conversations"


def _script() -> ModuleType:
    return script("conversation_stage_ablation")


def test_features_standardise_each_channel_and_floor_the_absent() -> None:
    m = _script()
    ids, x = m.features({"fulltext": [("a", 3.0), ("b", 1.0)], "vector": [("b", 0.9)]})
    assert ids == ["a", "b"]
    # full text: z of 3 and 1 over their list is +1 / -1; ranks 1 and 2; both present
    assert x[0, :3].tolist() == [1.0, 1.0, 1.0] and x[1, :3].tolist() == [-1.0, 0.5, 1.0]
    # the vector channel ranked b only: a gets its lowest z, no rank, absent
    assert x[1, 3:].tolist() == [0.0, 1.0, 1.0] and x[0, 3:].tolist() == [0.0, 0.0, 0.0]


def test_the_logistic_fit_learns_which_feature_marks_the_positives() -> None:
    m = _script()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(float)
    coef = m.fit_logistic(x, y)
    assert coef[1] > 2.0 and abs(coef[2]) < 0.5 * coef[1]


def _row(any_: float, all_: float, mrr: float) -> dict[str, float]:
    return {"recall_any@10": any_, "recall_all@10": all_, "mrr": mrr}


def test_choose_keeps_only_what_pays_on_both_halves() -> None:
    m = _script()
    base = [_row(0.9, 0.8, 0.6), _row(0.8, 0.7, 0.5)]
    rows = {"default": base}
    for stage in MessageSearchConfig.PIPELINE_STAGES:
        rows[f"without {stage}"] = [_row(0.8, 0.7, 0.5), _row(0.7, 0.6, 0.4)]  # pays
    # off costs 0.003 on one half and gains on the other: it goes
    rows["without channel-tops"] = [_row(0.891, 0.8, 0.6), _row(0.81, 0.7, 0.5)]
    # off costs 0.02 on one half only: it stays
    rows["without date-match"] = [_row(0.84, 0.8, 0.6), _row(0.8, 0.7, 0.5)]
    rows["weight_vector=0.25"] = [_row(0.95, 0.8, 0.6), _row(0.7, 0.7, 0.5)]  # one half
    rows["weight_vector=1"] = [_row(0.91, 0.8, 0.6), _row(0.81, 0.7, 0.5)]  # both
    assert m.choose(rows, "0.25,1") == {"weight_vector": 1.0, "without": ["channel-tops"]}
    rows["weight_vector=1"] = [_row(0.91, 0.8, 0.6), _row(0.8, 0.7, 0.5)]  # ties one half
    assert m.choose(rows, "0.25,1")["weight_vector"] == MessageSearchConfig().weight_vector


def test_a_run_reports_every_configuration_per_half(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m = _script()
    mini = json.loads((FIXTURES / "locomo" / "mini.json").read_text(encoding="utf-8"))
    other = json.loads(json.dumps(mini[0]))
    other["sample_id"] = "conv-other"
    path = tmp_path / "two.json"
    path.write_text(json.dumps([mini[0], other]), encoding="utf-8")
    out = tmp_path / "out.json"
    args = ["--locomo", str(path), "--embedder", "fake", "--cache", str(tmp_path)]
    assert m.main([*args, "--halves", "1:2", "--weights", "1", "--json", str(out)]) == 0
    assert stages.zscore_fusion is not None and not isinstance(stages.zscore_fusion, m.FusionHook)
    result = json.loads(out.read_text(encoding="utf-8"))
    rows = result["rows"]
    expected = {"default", "weight_vector=1", "fusion=rrf", "learned (other half)", "chosen"}
    expected |= {f"without {s}" for s in MessageSearchConfig.PIPELINE_STAGES}
    assert set(rows) == expected
    assert [h["questions"] for h in result["halves"]] == [r["questions"] for r in rows["default"]]
    assert set(result["learned_coefficients"]) == {"trained on half 1", "trained on half 2"}
    assert "| default |" in capsys.readouterr().out
    # a second run reads the same store and compares with the first as its reference
    ref = ["--reference", str(out), "--only-default"]
    assert m.main([*args, "--halves", "1:2", *ref, "--json", str(tmp_path / "b.json")]) == 0
    again = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert again["rows"]["default"] == rows["default"]
    assert again["beats_reference"] == {"default": [False, False]}
