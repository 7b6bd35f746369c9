"""The imported-layer evaluation: question file checks and recall over one tiny sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch.errors import ConfigError
from layersearch.eval.layers import read_layer_questions, run_layers

OSI = """
semantic_model:
  - name: shop
    datasets:
      - name: orders
        source: db.orders
        fields:
          - name: amt
            description: Money paid for the order
            ai_context: {synonyms: [revenue]}
          - name: placed
            description: When the order was placed
"""


def test_recall_counts_any_gold_id(tmp_path: Path) -> None:
    (tmp_path / "data" / "shop").mkdir(parents=True)
    (tmp_path / "data" / "shop" / "m.yaml").write_text(OSI)
    questions = [
        {"sample": "shop", "question": "revenue", "gold": ["shop.orders.amt", "shop.x.y"]},
        {"sample": "shop", "question": "placed", "gold": ["shop.orders.nothing"]},
    ]
    out = run_layers(tmp_path / "data", questions)
    assert out["summary"]["shop"]["recall@1"] == 0.5
    assert [r["rank"] for r in out["questions"]] == [1, None]


def test_question_file_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({"sample": "s", "question": "q", "gold": ["a"]}) + "\n{oops\n")
    with pytest.raises(ConfigError, match=r"q.jsonl:2: not JSON"):
        read_layer_questions(p)
    p.write_text(json.dumps({"sample": "s", "question": "q", "gold": []}) + "\n")
    with pytest.raises(ConfigError, match=r"q.jsonl:1: needs sample, question and a non-empty"):
        read_layer_questions(p)
    with pytest.raises(ConfigError, match="no such questions file"):
        read_layer_questions(tmp_path / "missing.jsonl")


def test_eval_layers_command(data_dir: Path) -> None:
    from click.testing import CliRunner

    from layersearch.cli import main

    questions = Path(__file__).resolve().parents[1] / "eval_data" / "semantic_layers.jsonl"
    res = CliRunner().invoke(
        main,
        ["eval", "layers", "--data", str(data_dir), "--questions", str(questions), "--json"],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["all"]["questions"] == 30
    assert summary["all"]["recall@5"] >= 0.9
