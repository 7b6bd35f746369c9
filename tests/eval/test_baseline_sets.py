"""scripts/baseline_sets.py: the validation databases' questions and the
warehouse-named catalog with its questions mapped, gold ids intact."""

from __future__ import annotations

import json
from pathlib import Path

from layersearch.semantic.importers.spider import load_spider
from tests.support import ROOT, script

SPIDER = ROOT / "examples" / "spider"


def test_sets_hold_the_held_out_databases_and_renamed_gold(tmp_path: Path) -> None:
    baseline_sets = script("baseline_sets")
    questions = SPIDER / "questions.jsonl"
    counts = baseline_sets.write_sets(SPIDER / "tables.json", questions, questions, tmp_path)
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    val = [json.loads(line) for line in (tmp_path / "val.jsonl").read_text().splitlines()]
    # three databases, a fifth held out: one database, all its questions
    assert len({q["db_id"] for q in val}) == 1
    assert len(val) == sum(r["db_id"] == val[0]["db_id"] for r in rows) == counts["val"]
    ids = {e.id.lower() for e in load_spider(tmp_path / "wh.tables.json").entities()}
    for name in ("wh.dev.jsonl", "wh.val.jsonl"):
        mapped = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert len(mapped) == (len(rows) if name == "wh.dev.jsonl" else len(val))
        for q in mapped:
            assert all(g.lower() in ids for g in q["gold_tables"] + q["gold_columns"])
    tables = json.loads((tmp_path / "wh.tables.json").read_text())
    assert all(t["table_names"] == t["table_names_original"] for t in tables)
