"""The CLI as a user runs it: real subprocesses, exit codes, JSON, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import MINI, ROOT


def run(store: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("LAYERSEARCH_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = tmp_path / "s.duckdb"
    run(s, "load", str(MINI))
    return s


def test_search_json_contract(store: Path) -> None:
    out = json.loads(run(store, "search", "tax", "--json").stdout)
    assert set(out) == {"results", "warnings"}
    hit = out["results"][0]
    assert {"kind", "id", "score", "description"} <= set(hit)
    assert hit["id"] == "shop.orders.tax_paid"


def test_readme_commands(store: Path) -> None:
    assert "shop.stores" in run(store, "search", "monthly revenue by store").stdout
    out = run(
        store, "search", "--entity", "orders.order_total", "--question", "tax", "--explain"
    ).stdout
    assert "input #1" in out
    added = run(
        store,
        "memory",
        "add",
        "Revenue excludes refunds; use net_revenue",
        "--entity",
        "shop.orders.net_revenue",
    ).stdout
    assert added.strip() == "saved memory:5 on shop.orders.net_revenue"
    shown = run(store, "inspect", "shop.orders.net_revenue", "memory:5").stdout
    assert "Net Revenue" in shown and "Revenue excludes refunds" in shown


def test_full_and_filter_flags(store: Path) -> None:
    out = run(store, "search", "order total", "--full", "-n", "2").stdout
    assert "description:" in out
    j = json.loads(
        run(store, "search", "order", "--query", '{"measures": ["total_revenue"]}', "--json").stdout
    )
    assert "shop.orders.total_revenue" in [h["id"] for h in j["results"]]


@pytest.mark.parametrize(
    "args, message",
    [
        (("search", "x", "--max-results", "0"), "max_results must be between 1 and 100"),
        (("search", "x", "--datasource", "nope"), "unknown datasource 'nope'"),
        (("search", "--query", "{bad"), "--query is not valid JSON"),
        (("memory", "show", "memory:99"), "no memory memory:99"),
        (("memory", "forget", "banana"), "is not a memory id"),
        (("inspect", "nothing.at.all"), "unknown entity"),
        (("load", "/no/such/path"), "no such file or directory"),
        (("search", "x", "--channels", "nope"), "valid channels"),
    ],
)
def test_errors_are_one_line_and_nonzero(store: Path, args: tuple[str, ...], message: str) -> None:
    proc = run(store, *args, ok=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr
    j = run(store, *args, "--json", ok=False)
    assert json.loads(j.stdout)["error"]["message"]


def test_memory_list_and_forget_json(store: Path) -> None:
    items = json.loads(run(store, "memory", "list", "--json").stdout)
    assert [m["id"] for m in items] == ["memory:4", "memory:3", "memory:2", "memory:1"]
    assert json.loads(run(store, "memory", "forget", "memory:2", "--json").stdout) == {
        "forgotten": "memory:2"
    }
    assert len(json.loads(run(store, "memory", "list", "--json").stdout)) == 3


@pytest.mark.slow
def test_init_and_demo(tmp_path: Path) -> None:
    out = json.loads(run(tmp_path / "x.duckdb", "init", "--json").stdout)
    assert out["store"].endswith("x.duckdb")
    demo = json.loads(run(tmp_path / "y.duckdb", "demo", "--json").stdout)
    assert demo["loaded"]["entities"] >= 150
    assert all(s["response"]["results"] for s in demo["searches"])


@pytest.mark.slow
def test_settings_file_gives_store_and_embedder(tmp_path: Path) -> None:
    (tmp_path / "layersearch.toml").write_text(
        f'store = "{tmp_path / "from-toml.duckdb"}"\nembedder = "fake"\n'
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    for k in ("LAYERSEARCH_STORE", "LAYERSEARCH_EMBEDDER", "LAYERSEARCH_CONFIG"):
        env.pop(k, None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "layersearch", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    assert cli("load", str(MINI)).returncode == 0
    assert (tmp_path / "from-toml.duckdb").exists()
    out = json.loads(cli("embed", "--json").stdout)
    assert out[0]["model"] == "fake/hashing-v1 (256)"
    flagged = cli("--embedder", "fake:64", "search", "tax", "--json")
    assert any(
        "configured: fake/hashing-v1 (64)" in w for w in json.loads(flagged.stdout)["warnings"]
    )
    (tmp_path / "layersearch.toml").write_text("embedder = 3\n")
    bad = cli("search", "tax")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "embedder" in bad.stderr


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("3", "3")])
def test_cli_gives_numpy_one_blas_thread_unless_the_user_chose(
    preset: str | None, expected: str
) -> None:
    """Set before numpy loads, so numpy's OpenBLAS starts with it; a user's own value wins."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = (
        "import sys, os, layersearch\n"
        "assert 'numpy' not in sys.modules  # the package loads nothing before the CLI\n"
        "import layersearch.cli\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == expected


@pytest.mark.slow
def test_load_with_an_embedder_computes_the_vectors(tmp_path: Path) -> None:
    s = tmp_path / "s.duckdb"
    first = json.loads(run(s, "--embedder", "fake", "load", str(MINI), "--json").stdout)
    assert first["entities"] > 0
    report, words = first["embedded"]
    assert words["corpus"] == "words" and words["embedded"] == words["documents"] > 0
    assert (
        report["embedded"] == report["documents"] == 32
        and report["model"] == "fake/hashing-v1 (256)"
    )
    again = run(s, "--embedder", "fake", "load", str(MINI))
    assert (
        "entities: 0 embedded, 32 unchanged, 0 pruned, 0 failed — fake/hashing-v1 (256)"
        in again.stdout
    )
    every = json.loads(run(s, "--embedder", "fake", "embed", "--all", "--json").stdout)
    assert [(r["embedded"], r["unchanged"]) for r in every] == [
        (32, 0),
        (words["documents"], 0),
    ]
    hits = json.loads(
        run(s, "--embedder", "fake", "search", "tax", "--channels", "vector", "--json").stdout
    )
    assert hits["results"] and hits["warnings"] == []


@pytest.mark.slow
def test_load_no_embed_and_no_embedder_leave_the_vectors(tmp_path: Path) -> None:
    s = tmp_path / "s.duckdb"
    skipped = json.loads(
        run(s, "--embedder", "fake", "load", str(MINI), "--no-embed", "--json").stdout
    )
    assert "embedded" not in skipped
    plain = json.loads(run(tmp_path / "t.duckdb", "load", str(MINI), "--json").stdout)
    assert set(plain) == set(skipped)
    hits = json.loads(
        run(s, "--embedder", "fake", "search", "tax", "--channels", "vector", "--json").stdout
    )
    assert hits["results"] == []
    assert any("no vectors stored" in w for w in hits["warnings"]), hits["warnings"]


def test_ids_too_long_for_the_line_are_shortened_in_the_middle() -> None:
    """At 80 columns a conversation message's id (~60 characters) would leave its
    description a few cells: the id is shortened in the middle (its start and its end
    kept) so that the description keeps its width on the same line."""
    import io

    from rich.console import Console

    from layersearch.cli.output import _print_narrow_hits, description_min
    from layersearch.types import Hit

    long_id = "conversation:slack:slack-T01-C42-1718000000#0-2528970ee0ee"
    hits = [
        Hit(kind="conversation", id=long_id, score=0.1, description="core.customers " * 10),
        Hit(kind="conversation", id=long_id + "x", score=0.05, description="is_active"),
    ]
    out = io.StringIO()
    _print_narrow_hits(Console(file=out, width=80), hits, explain=False)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["#", "kind", "id", "description"]
    start = lines[0].index("description")
    assert 80 - start >= description_min(80) == 32
    num, kind, shown, *_ = lines[1].split()
    assert (num, kind) == ("1", "conversation") and "…" in shown
    assert shown.startswith("conversation:") and long_id.endswith(shown.split("…")[1])
    assert lines[1][start:].startswith("core.customers") and lines[1].endswith("…")
    assert lines[2][start:] == "is_active" and len(lines) == 3
    assert max(len(line) for line in lines) <= 80
    # an id that leaves room is shown whole
    short = [Hit(kind="column", id="shop.orders.amount", score=0.1, description="Amount paid")]
    out = io.StringIO()
    _print_narrow_hits(Console(file=out, width=80), short, explain=False)
    shown_line = out.getvalue().splitlines()[1]
    assert shown_line.split() == ["1", "column", "shop.orders.amount", "Amount", "paid"]
