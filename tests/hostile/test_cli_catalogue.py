"""Every catalogue case through the CLI: exit 2 and one ``error: …`` line (or a JSON error
object with ``--json``), or exit 0 and a correct result; never a traceback.

All cases run in-process through click's runner, in both output modes; a sample of one
case per (category, outcome) also runs as a real ``python -m layersearch`` subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch import Layersearch
from layersearch.cli import main
from tests.support import MINI, ROOT

from .catalogue import (
    CORPUS_CASES,
    CORPUS_CLI_PREFIX,
    CORPUS_WRITES,
    HIDDEN,
    HIDDEN_MODEL,
    LOAD_OK,
    SECRET,
    TERMINAL_CONTROLS,
    Case,
    Err,
    build_corpus_store,
    by_entry,
    write_files,
)
from .snapshot import snapshot

pytestmark = pytest.mark.slow

#: Rejected by click's own argument parsing, before our code runs: the root group turns
#: click's usage error into the same contract, with the error code "usage".
CLICK_USAGE = {
    "search.max-results.not-a-number",
    "load.format.unknown-cli",
    "conv.search.limit-text",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cli") / "store.duckdb"
    with Layersearch(path) as ls:
        ls.load(MINI)
    yield path


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-corpus") / "store.duckdb"
    build_corpus_store(path)
    return path


def argv(case: Case, files: Path) -> list[str]:
    assert case.cli is not None
    return [a.replace("{dir}", str(files)) for a in case.cli]


def check(case: Case, code: int, out: str, err: str, *, as_json: bool) -> None:
    assert "Traceback" not in err and "Traceback" not in out, (case.id, err[-2000:])
    # issue 42: no control character reaches the terminal, no password any output
    assert not TERMINAL_CONTROLS.search(out + err), (case.id, (out + err)[-1000:])
    assert SECRET not in out + err, (case.id, (out + err)[-1000:])
    if isinstance(case.expect, Err):
        assert code == 2, (case.id, code, out[-500:], err[-500:])
        if as_json:
            error = json.loads(out)["error"]
            want = "usage" if case.id in CLICK_USAGE else case.expect.error.code
            assert error["code"] == want, (case.id, error)
            assert case.expect.match in error["message"], (case.id, error)
        else:
            assert out == "", (case.id, out[:500])
            assert err.startswith("error: "), (case.id, err[:500])
            assert case.expect.match in err, (case.id, err[:500])
        return
    assert code == 0, (case.id, code, err[-1000:])
    if as_json:
        data = json.loads(out)
        if isinstance(data, dict) and "results" in data:
            assert data["results"] or data["warnings"], f"{case.id}: silently empty"
            assert not {h["id"] for h in data["results"]} & {HIDDEN, HIDDEN_MODEL}


def run_inprocess(
    store: Path, case: Case, files: Path, *, as_json: bool, prefix: tuple[str, ...] = ()
) -> None:
    args = [*prefix, "--store", str(store), *argv(case, files), *(["--json"] if as_json else [])]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{case.id}: uncaught {result.exception!r}") from result.exception
    check(case, result.exit_code, result.stdout, result.stderr, as_json=as_json)


def _modes(case: Case) -> tuple[bool, ...]:
    both = isinstance(case.expect, Err) or case.category == "terminal"
    return (False, True) if both else (True,)


@pytest.mark.parametrize("case", by_entry("cli"), ids=lambda c: c.id)
def test_cli(store: Path, case: Case, tmp_path: Path) -> None:
    files = write_files(case, tmp_path)
    before = snapshot(store)
    # A successful run is checked on its JSON (results, hidden ids); an error, and what
    # prints stored text (category terminal), in both modes.
    for as_json in _modes(case):
        run_inprocess(store, case, files, as_json=as_json)
    if not case.writes:
        assert snapshot(store) == before, f"{case.id} changed the store"


@pytest.mark.parametrize("case", by_entry("cli", CORPUS_CASES), ids=lambda c: c.id)
def test_cli_corpora(corpus_store: Path, case: Case, tmp_path: Path) -> None:
    files = write_files(case, tmp_path)
    before = snapshot(corpus_store)
    for as_json in _modes(case):
        run_inprocess(corpus_store, case, files, as_json=as_json, prefix=CORPUS_CLI_PREFIX)
    assert snapshot(corpus_store) == before, f"{case.id} changed the store"


@pytest.mark.parametrize("case", by_entry("cli", CORPUS_WRITES), ids=lambda c: c.id)
def test_cli_corpus_writes(case: Case, tmp_path: Path) -> None:
    files = write_files(case, tmp_path / "files")
    run_inprocess(tmp_path / "s.duckdb", case, files, as_json=True, prefix=CORPUS_CLI_PREFIX)


@pytest.mark.parametrize("case", by_entry("cli", LOAD_OK), ids=lambda c: c.id)
def test_cli_successful_loads(case: Case, tmp_path: Path) -> None:
    files = write_files(case, tmp_path / "files")
    run_inprocess(tmp_path / "s.duckdb", case, files, as_json=True)


def _sample() -> list[Case]:
    seen: set[tuple[str, str]] = set()
    out = []
    for case in by_entry("cli"):
        key = (case.category, "")
        if key not in seen and not case.writes:
            seen.add(key)
            out.append(case)
    return out


def run_subprocess(store: Path, case: Case, files: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("LAYERSEARCH_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "layersearch", "--store", str(store), *argv(case, files)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_cli_subprocess_sample(store: Path, tmp_path: Path) -> None:
    sample = _sample()
    assert len(sample) >= 15
    dirs = [write_files(c, tmp_path / str(i)) for i, c in enumerate(sample)]
    before = snapshot(store)
    # Two at a time: concurrent CLI processes on one store is part of what is tested.
    with ThreadPoolExecutor(2) as pool:
        procs = list(
            pool.map(lambda cd: run_subprocess(store, *cd), zip(sample, dirs, strict=True))
        )
    for case, proc in zip(sample, procs, strict=True):
        check(case, proc.returncode, proc.stdout, proc.stderr, as_json=False)
    assert snapshot(store) == before
