"""`layersearch eval examples` end to end on a few real Spider-Syn pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch import ConfigError
from layersearch.cli import main
from layersearch.eval.examples import read_pairs


def test_eval_examples_reports_the_contract(data_dir: Path, tmp_path: Path) -> None:
    details = tmp_path / "d.jsonl"
    res = CliRunner().invoke(
        main,
        [
            "eval",
            "examples",
            "--catalog",
            str(data_dir / "spider" / "tables.json"),
            "--pairs",
            str(data_dir / "spider-syn" / "train.jsonl"),
            "--ask",
            "original_question",
            "--channels",
            "bm25,fulltext",
            "--limit",
            "12",
            "--details",
            str(details),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("example@1", "example@5", "example@10", "memory_mrr", "same_query@5"):
        assert 0.0 <= out[key] <= 1.0
    assert out["pairs"] == 12 and out["table_recall@5_delta"] == 0.0
    # asked in the very words they were saved with, the examples come back
    assert out["example@10"] >= 0.9
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(rows) == 12 and all(r["memory"].startswith("memory:") for r in rows)


def test_pairs_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"db_id": "x", "question": "q"}\n')
    with pytest.raises(ConfigError, match=r"p.jsonl:1: missing original_question"):
        read_pairs(bad)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(Exception, match="deep"):
        read_pairs(deep)
