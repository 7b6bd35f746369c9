"""The benchmark and its generator run end to end at a tiny size (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

pytestmark = pytest.mark.slow


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A benchmark script run on this checkout's code; it must succeed."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def synthetic():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        import synthetic as mod

        yield mod
    finally:
        sys.path.remove(str(BENCH))


def test_generator_is_deterministic_and_sized(synthetic) -> None:  # type: ignore[no-untyped-def]
    a = synthetic.generate_catalog(2000, 50, seed=3)
    b = synthetic.generate_catalog(2000, 50, seed=3)
    c = synthetic.generate_catalog(2000, 50, seed=4)
    ids_a = [e.id for e in a.entities()]
    assert ids_a == [e.id for e in b.entities()]
    assert ids_a != [e.id for e in c.entities()]
    assert 2000 <= len(ids_a) < 2100
    assert len(set(ids_a)) == len(ids_a), "entity ids must be unique"
    assert len(a.memories) == 50
    known = set(ids_a)
    assert all(t in known for m in a.memories for t in m.entities)
    assert any(m.query for m in a.memories)
    assert any(m.joins for m in a.models)
    q = synthetic.generate_queries(a, 10, seed=1)
    assert len(q.questions) == len(q.entities) == 10


def test_generated_catalog_loads_and_searches(synthetic, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from layersearch import Layersearch

    cat = synthetic.generate_catalog(500, 5, seed=0)
    with Layersearch(tmp_path / "s.duckdb") as ls:
        report = ls.load_catalog(cat)
        assert report.memories_added == 5
        assert not report.unresolved_tags
        q = synthetic.generate_queries(cat, 3, seed=1)
        resp = ls.search(question=q.questions[0], entities=q.entities[0])
        assert resp.results


# ~20 s: it spawns a worker, a reopen process, and the import / CLI timing subprocesses.
@pytest.mark.slow
def test_benchmark_quick_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "search_latency.py"),
            "--sizes",
            "2000",
            "--memories",
            "200",
            "--quick",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert {"machine", "targets", "sizes", "package", "command"} <= data.keys()
    (size,) = data["sizes"]
    assert "error" not in size, size.get("error")
    assert size["memories_total"] == 200
    assert size["entities"] >= 2000
    for key in ("index_build_s", "load_catalog_s", "per_memory_ms", "phases"):
        assert key in size["build"]
    for kind in ("question", "entities", "both"):
        assert {"p50_ms", "p99_ms", "n"} <= size["search"][kind].keys()
        assert "ratio_baseline_over_ours_p50" in size["baseline"][kind]
    assert {"peak_rss_mib", "rss_after_build_mib", "tantivy_dir_mib"} <= size["memory"].keys()
    assert size["reopen"]["hits"] > 0
    assert {"import_layersearch_ms", "cli_search_s"} <= data["package"].keys()
    assert data["package"]["top_hit"]
    assert "| entities |" in proc.stdout


def test_import_scaling_quick_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "scaling.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "import_scaling.py"), "--quick", "--repeat", "1"]
        + ["--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert {r["step"] for r in rows} >= {"chatgpt-branch", "model-yaml", "vault-tags-token"}
    assert all(r["size_10x"] == 10 * r["size_1x"] for r in rows)


def test_scope_benchmark_tiny_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "scope.json"
    proc = _bench("scope.py", "--scale", "0.005", "--runs", "3", "--out", str(out))
    data = json.loads(out.read_text())
    assert data["store"]["entities"] >= 500 and data["store"]["chunks"] > 0
    assert data["latency"]["all"]["sources"] == ["conversation", "memory", "semantic", "vault"]
    assert {"p50_ms", "p95_ms", "n"} <= data["latency"]["all"].keys()
    assert set(data["scope=all evidence"]) == {"with shares", "without shares"}
    assert "| all |" in proc.stdout


def test_fairness_benchmark_tiny_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "fairness.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "fairness.py"), "--plain-calls", "5"]
        + ["--cypher-clients", "2", "--long-clients", "1", "--memories", "50"]
        + ["--embedder", "none", "--budget", "5", "--head-start", "0.5", "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    # exit 1 is a check that did not hold (timing, on a shared machine): not asserted here
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert set(data["plain"]) == {"alone", "hostile", "alone_after"}
    assert all(p["calls"] == 5 and p["outcomes"] == {"ok": 5} for p in data["plain"].values())
    assert set(data["hostile"]) == {"cypher", "long"}
    assert not data["unexpected_errors"]
    assert {"ratio_within", "every_call_within_budget"} <= data["checks"].keys()
    assert "plain p50 beside hostile / alone" in proc.stdout


def _spider_env(tmp_path: Path) -> dict[str, str]:
    from tests.support import shared_data

    spider = shared_data() / "spider"
    if not (spider / "tables.json").exists():
        pytest.skip(f"no Spider data at {spider}")
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SPIDER_DIR": str(spider)}


def test_speed_guard_records_then_compares(tmp_path: Path) -> None:
    env = _spider_env(tmp_path)
    recorded = tmp_path / "guard.json"
    guard = [sys.executable, str(BENCH / "guard.py"), "--quick", "--questions", "5"]
    guard += ["--workdir", str(tmp_path / "work"), "--against", str(recorded)]
    first = subprocess.run(
        [*guard, "--record"], env=env, capture_output=True, text=True, timeout=600
    )
    assert first.returncode == 0, first.stderr[-2000:]
    data = json.loads(recorded.read_text())["workloads"]["spider_lexical"]
    assert {"search_p50_ms", "reference_p50_ms", "figure", "cpu_figure"} <= data.keys()
    # a run slower than the record by more than 20% is flagged (here: a record 10x faster)
    fast = json.loads(recorded.read_text())
    for key in ("figure", "cpu_figure"):
        fast["workloads"]["spider_lexical"][key] /= 10
    recorded.write_text(json.dumps(fast))
    second = subprocess.run(guard, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 1 and "SLOWER (wall, cpu)" in second.stdout, second.stdout


def test_ab_compares_two_trees_and_their_rankings(tmp_path: Path) -> None:
    env = _spider_env(tmp_path)
    out = tmp_path / "ab.json"
    ab = [sys.executable, str(BENCH / "ab.py"), "--old", str(ROOT / "src"), "--questions", "4"]
    ab += ["--rounds", "1", "--warmup", "2", "--workdir", str(tmp_path / "work"), "--out", str(out)]
    ab += ["--also", f"third={ROOT / 'src'}"]
    proc = subprocess.run(ab, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["rankings_differ"] == 0 and data["searches_per_tree"] == 4
    assert data["rankings_differ_from_old"] == {"new": 0, "third": 0}
    assert data["old_ms"]["p50"] > 0 and data["new_ms"]["p50"] > 0 and data["third_ms"]["p50"] > 0
    assert "third" in proc.stdout


def test_cli_phases_benchmark_writes_every_phase(tmp_path: Path) -> None:
    out = tmp_path / "cli_phases.json"
    proc = _bench("cli_phases.py", "--runs", "1", "--out", str(out))
    data = json.loads(out.read_text())
    phases = data["phases_s"]
    assert list(phases)[0] == "import numpy" and list(phases)[-1] == "output and exit"
    assert {"open the store", "search and plan"} <= phases.keys()
    assert all(v > 0 for v in phases.values())
    assert data["total_after_start_s"] >= sum(phases.values()) * 0.99
    assert "search and plan" in proc.stdout
