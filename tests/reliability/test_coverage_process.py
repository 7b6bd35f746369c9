"""A large load builds its schema index in a forked process beside the rest of the load
(``CoverageBuild``). The index it publishes is the one an in-process build makes, byte for
byte; a build process that fails, or a load that fails while it runs, leaves no process,
no stray directory and no different answer behind."""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.corpora.entities import indexes as entities_module
from layersearch.corpora.entities import process as process_module
from layersearch.corpora.entities import service as service_module
from layersearch.corpora.snapshot import generations as snapshot_module
from layersearch.errors import StoreError
from tests.support import MODELS

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="build processes are forked on Linux only"
)

QUESTIONS = ["monthly revenue by store", "customer email", "tax charged on the order"]


def _current(store: Path) -> Path:
    base = Path(f"{store}.index") / "snapshot"
    return base / (base / "CURRENT").read_text().strip()


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(f.relative_to(directory)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(directory.rglob("*"))
        if f.is_file()
    }


def _answers(ls: Layersearch) -> list[list[str]]:
    return [[h.id for h in ls.search(question=q, max_results=30).results] for q in QUESTIONS]


def _leftovers(store: Path) -> list[str]:
    base = Path(f"{store}.index") / "snapshot"
    return sorted(p.name for p in base.iterdir() if p.name.startswith("coverage-"))


def _no_children() -> bool:
    try:
        return os.waitpid(-1, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


@pytest.fixture
def fork_every_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_module, "FORK_MIN_ENTITIES", 1)
    monkeypatch.delenv("LAYERSEARCH_BUILD_FORK", raising=False)


def test_the_forked_index_is_the_in_process_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_every_load: None
) -> None:
    taken: list[bool] = []
    real_take = snapshot_module.CoverageBuild.take

    def spy(self: snapshot_module.CoverageBuild, sub: Path) -> bool:
        taken.append(real_take(self, sub))
        return taken[-1]

    monkeypatch.setattr(snapshot_module.CoverageBuild, "take", spy)
    with Layersearch(tmp_path / "fork.duckdb") as ls:
        ls.load(MODELS)
        forked = _answers(ls)
    assert taken == [True]
    assert _no_children() and not _leftovers(tmp_path / "fork.duckdb")

    monkeypatch.setenv("LAYERSEARCH_BUILD_FORK", "0")
    with Layersearch(tmp_path / "here.duckdb") as ls:
        ls.load(MODELS)
        here = _answers(ls)
    assert taken == [True]  # no process the second time: nothing to take
    assert forked == here and all(forked)
    a = _digest(_current(tmp_path / "fork.duckdb") / "coverage")
    b = _digest(_current(tmp_path / "here.duckdb") / "coverage")
    assert a and a == b


def test_the_parent_builds_nothing_when_the_process_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_every_load: None
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the schema index was built in the loading process")

    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.corpus()  # the empty store's snapshot, with its (empty) index
        # The child builds through coverage_of; the parent would go through build_coverage.
        monkeypatch.setattr(entities_module, "build_coverage", refuse)
        ls.load(MODELS)
        assert (_current(tmp_path / "s.duckdb") / "coverage").is_dir()
        assert ls.search(question="revenue by store").results


def test_a_failing_build_process_falls_back_to_building_here(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fork_every_load: None,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no index today")

    # Only the child calls api.coverage_of: the fallback in the parent is unaffected.
    monkeypatch.setattr(service_module, "coverage_of", broken)
    caplog.set_level("INFO", logger="layersearch.corpora.snapshot")
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
        got = _answers(ls)
    assert "its build process failed: RuntimeError: no index today" in caplog.text
    assert _no_children() and not _leftovers(tmp_path / "s.duckdb")
    monkeypatch.setenv("LAYERSEARCH_BUILD_FORK", "0")
    with Layersearch(tmp_path / "here.duckdb") as ls:
        ls.load(MODELS)
        assert _answers(ls) == got
    a = _digest(_current(tmp_path / "s.duckdb") / "coverage")
    assert a == _digest(_current(tmp_path / "here.duckdb") / "coverage")


def test_a_load_that_fails_stops_its_build_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_every_load: None
) -> None:
    started: list[int] = []
    real_start = snapshot_module.CoverageBuild.start.__func__  # type: ignore[attr-defined]

    def slow_start(cls: type, base: Path, build: object) -> object:
        def slow() -> object:
            time.sleep(30)  # still running when the load fails: it must be killed
            return build()  # type: ignore[operator]

        job = real_start(cls, base, slow)
        started.append(job.pid)
        return job

    def fail(*args: object, **kwargs: object) -> None:
        raise StoreError("disk full (simulated)")

    monkeypatch.setattr(snapshot_module.CoverageBuild, "start", classmethod(slow_start))
    with Layersearch(tmp_path / "s.duckdb") as ls:
        monkeypatch.setattr(ls.store, "replace_rows", fail)
        t = time.monotonic()
        with pytest.raises(StoreError, match="disk full"):
            ls.load(MODELS)
        assert time.monotonic() - t < 20  # it did not wait for the sleeping child
        assert started and started[0] > 0
        with pytest.raises(ProcessLookupError):
            os.kill(started[0], 0)  # killed and reaped
        assert _no_children() and not _leftovers(tmp_path / "s.duckdb")
        monkeypatch.undo()
        monkeypatch.setattr(process_module, "FORK_MIN_ENTITIES", 1)
        ls.load(MODELS)  # the store took nothing of the failed load
        assert ls.search(question="revenue by store").results


def test_leftovers_of_dead_loads_are_removed_after_the_grace_period(
    tmp_path: Path, fork_every_load: None
) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
    base = Path(f"{tmp_path / 's.duckdb'}.index") / "snapshot"
    old_dir = base / "coverage-1-abc.pending"
    old_err = base / "coverage-1-abd.err"
    fresh = base / "coverage-2-abe.pending"
    old_dir.mkdir()
    (old_dir / "a.npy").write_bytes(b"x")
    old_err.write_text("RuntimeError: gone")
    fresh.mkdir()
    long_ago = time.time() - 2 * snapshot_module._GRACE_S
    for p in (old_dir, old_err):
        os.utime(p, (long_ago, long_ago))
    snapshot_module._remove_old(base, keep=_current(tmp_path / "s.duckdb"))
    assert not old_dir.exists() and not old_err.exists()
    assert fresh.exists()  # may belong to a load still running


def test_a_load_pauses_garbage_collection_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = service_module.EntityService._load_rows

    def spy(self: service_module.EntityService, *args: object) -> object:
        seen.append(gc.isenabled())
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(service_module.EntityService, "_load_rows", spy)
    assert gc.isenabled()
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
        assert seen == [False] and gc.isenabled()
        monkeypatch.setattr(ls.store, "replace_rows", lambda *a, **k: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            ls.load(MODELS)
        assert gc.isenabled()
        gc.disable()
        try:
            monkeypatch.undo()
            ls.load(MODELS)
            assert not gc.isenabled()  # a caller's choice is kept
        finally:
            gc.enable()


def test_an_interrupted_wait_still_lets_cancel_kill_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAYERSEARCH_BUILD_FORK", raising=False)

    def slow() -> object:
        time.sleep(60)
        raise AssertionError("never finishes")

    job = snapshot_module.CoverageBuild.start(tmp_path / "snapshot", slow)
    assert job is not None and job.pid > 0
    pid = job.pid
    real_wait4 = os.wait4
    calls: list[int] = []

    def interrupted(p: int, options: int) -> object:
        calls.append(p)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the load waits for the index
        return real_wait4(p, options)

    monkeypatch.setattr(snapshot_module.os, "wait4", interrupted)
    (tmp_path / "sub").mkdir()
    with pytest.raises(KeyboardInterrupt):
        job.take(tmp_path / "sub")
    t = time.monotonic()
    job.cancel()  # what load_catalog's finally does
    assert time.monotonic() - t < 10  # killed, not waited for
    assert calls == [pid, pid]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _no_children()
