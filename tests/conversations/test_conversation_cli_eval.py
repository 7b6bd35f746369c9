"""The conversations/summaries CLI and `eval conversations` on a small LoCoMo file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from layersearch.cli import main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "conversations"
GOLDEN = Path(__file__).parent / "golden"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_import_then_search_prints_the_contract(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    code, out = run("--store", store, "conversations", "import", str(FIXTURES), "--json")
    assert code == 0 and json.loads(out)["import"]["messages_added"] > 0
    code, out = run("--store", store, "conversations", "search", "mrr")
    assert code == 0
    assert out == (GOLDEN / "search_conversations_mrr.md").read_text(encoding="utf-8")
    code, out = run("--store", store, "conversations", "search", "zzz", "--json")
    assert json.loads(out)["markdown"] == "No conversations found containing 'zzz'"


def test_errors_are_one_line(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    code, out = run("--store", store, "conversations", "semantic", "revenue")
    assert code == 2 and out.startswith("error: no store at "), out  # reads create nothing
    assert run("--store", store, "init")[0] == 0
    code, out = run("--store", store, "conversations", "semantic", "revenue")
    assert code == 2 and out.startswith("error: embedding unavailable:")
    code, out = run("--store", store, "summaries", "search", "x", "--importance", "huge")
    assert code == 2 and "breakthrough, significant, routine" in out


def test_semantic_and_summaries_with_the_fake_embedder(tmp_path: Path) -> None:
    base = ["--store", str(tmp_path / "s.duckdb"), "--embedder", "fake"]
    assert run(*base, "conversations", "import", str(FIXTURES / "claude"))[0] == 0
    assert run(*base, "summaries", "import", str(FIXTURES / "summaries.jsonl"))[0] == 0
    code, out = run(*base, "conversations", "semantic", "monthly recurring revenue", "-n", "2")
    assert code == 0 and out.startswith("### [1] ") and "**Similarity**: 0." in out
    code, out = run(*base, "summaries", "search", "churn", "--extract", "decisions", "--json")
    hits = json.loads(out)["hits"]
    assert hits and all(h["extract"] == "decisions" for h in hits)
    # --explain: the markdown contract unchanged, then each summary's channels and moves
    assert run(*base, "embed")[0] == 0
    plain = run(*base, "summaries", "search", "churn", "-n", "3")[1]
    code, out = run(*base, "summaries", "search", "churn", "-n", "3", "--explain")
    assert code == 0 and out.startswith(plain)
    told = out[len(plain) :].splitlines()
    assert told[0] == "" and told[1].startswith("1. summary:") and "why: " in told[1]
    assert "moved: " in out and max(len(line) for line in told) <= 80


def test_eval_json_keys_on_a_small_locomo_file() -> None:
    locomo = str(FIXTURES / "locomo" / "mini.json")
    code, out = run("--embedder", "fake", "eval", "conversations", "--locomo", locomo, "--json")
    assert code == 0, out
    data = json.loads(out)
    for key in ("questions", "evidence_recall@5", "evidence_recall@10", "mrr"):
        assert key in data
    assert data["questions"] == 3
    assert set(data["channel_sets"]) == {"fulltext", "vector", "fulltext+vector"}
    assert 0.0 <= data["evidence_recall@10"] <= 1.0
    # the bounds: the oracle choice of a set per question is at least every set; the
    # union of the single channels' top ks holds at least what each of them holds
    best, union = data["best_of_sets"], data["channel_union"]
    assert best["sets"] == ["fulltext", "vector", "fulltext+vector"]
    assert union["channels"] == ["fulltext", "vector"] and "mrr" not in union
    for key in ("recall_any@5", "recall_all@10", "evidence_recall@20"):
        assert best[key] >= max(r[key] for r in data["channel_sets"].values())
        assert union[key] >= max(data["channel_sets"][s][key] for s in ("fulltext", "vector"))
    assert sum(c["questions"] for c in union["per_category"].values()) == 3
    code, out = run("eval", "conversations", "--locomo", locomo, "--channels", "fulltext", "--json")
    assert code == 0 and set(json.loads(out)["channel_sets"]) == {"fulltext"}
    assert json.loads(out)["best_of_sets"] is None and json.loads(out)["channel_union"] is None
    code, out = run("--embedder", "fake", "eval", "conversations", "--locomo", locomo)
    assert code == 0 and "| best of the sets (oracle) |" in out
    assert "| fulltext ∪ vector, top k each |" in out
    code, out = run("eval", "conversations", "--locomo", locomo, "--channels", "bm25")
    assert code == 2 and "unknown channel set" in out
