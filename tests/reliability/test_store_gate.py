"""The DuckDB store's gate: a write waits for the reads in flight and is never refused
for them; reads and writes take turns in arrival order; every wait is bounded and ends in
StoreBusy; a thread never waits for itself."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from layersearch.errors import StoreBusy, StoreError
from layersearch.store.access import gate_for, lock_path
from layersearch.store.duckdb import DuckDBStore
from tests.support import cli_env


def count_memories(store: DuckDBStore) -> int:
    with store.connect(write=False) as con:
        row = con.execute("SELECT count(*) FROM memories").fetchone()
    assert row is not None
    return int(row[0])


def test_write_waits_for_a_read_in_flight_then_succeeds(tmp_path: Path) -> None:
    # The reported defect: a read-only connection open in one thread made a write in
    # another fail at once ("different configuration").
    store = DuckDBStore(tmp_path / "s.duckdb")
    reading, release = threading.Event(), threading.Event()

    def reader() -> None:
        with store.connect(write=False) as con:
            con.execute("SELECT 1").fetchall()
            reading.set()
            release.wait(10)

    t = threading.Thread(target=reader)
    t.start()
    assert reading.wait(10)
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    store.add_memory("written while a search read", None, [], None)
    waited = time.monotonic() - started
    t.join()
    assert waited >= 0.25, "the write did not wait for the read"
    assert count_memories(store) == 1


def test_reads_and_writes_take_turns_in_arrival_order(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def first_reader() -> None:
        with store.connect(write=False):
            first_in.set()
            release.wait(10)
            order.append("read 1")

    def writer() -> None:
        store.add_memory("queued write", None, [], None)
        order.append("write")

    def late_reader() -> None:
        with store.connect(write=False) as con:
            n = con.execute("SELECT count(*) FROM memories").fetchone()
        order.append(f"read 2 saw {n[0] if n else None}")

    threads = [threading.Thread(target=first_reader)]
    threads[0].start()
    assert first_in.wait(10)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    time.sleep(0.2)  # the writer is queued behind the first read
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    time.sleep(0.2)  # the late read is queued behind the writer, not let in beside read 1
    assert order == []
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["read 1", "write", "read 2 saw 1"]


def test_a_read_held_past_the_timeout_makes_the_write_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    monkeypatch.setenv("LAYERSEARCH_LOCK_TIMEOUT", "0.3")
    with store.connect(write=False):
        done: list[BaseException] = []
        t = threading.Thread(target=lambda: _catch(done, store))
        t.start()
        t.join(10)
    assert len(done) == 1 and isinstance(done[0], StoreBusy)
    assert "LAYERSEARCH_LOCK_TIMEOUT" in str(done[0]) and "nothing was changed" in str(done[0])
    assert count_memories(store) == 0
    store.add_memory("once the read ended", None, [], None)  # and the store is usable again
    assert count_memories(store) == 1


def _catch(out: list[BaseException], store: DuckDBStore) -> None:
    try:
        store.add_memory("too late", None, [], None)
    except BaseException as exc:  # noqa: BLE001 - the test looks at it
        out.append(exc)


def test_a_thread_never_waits_for_itself(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    # a read inside a write joins the write's database and sees its transaction's start
    with store.connect(write=True) as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'x')")
        with store.connect(write=False) as inner:
            assert inner.execute("SELECT 1").fetchone() == (1,)
    # a read inside a read shares the connection's database
    with store.connect(write=False), store.connect(write=False) as inner:
        assert inner.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    # a write inside a read would wait for itself: refused at once, named
    with (
        store.connect(write=False),
        pytest.raises(StoreError, match="still reads the store"),
        store.connect(write=True),
    ):
        pass


def test_lock_timeout_setting_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from layersearch.errors import ConfigError

    store = DuckDBStore(tmp_path / "s.duckdb")
    monkeypatch.setenv("LAYERSEARCH_LOCK_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="LAYERSEARCH_LOCK_TIMEOUT"):
        count_memories(store)


def test_one_gate_per_file_however_spelled(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    a = gate_for(tmp_path / "s.duckdb")
    assert gate_for(tmp_path / "sub" / ".." / "s.duckdb") is a
    assert a.lock_file == lock_path(a.path)


HOLD = """
import sys, time
from pathlib import Path
from layersearch.store.duckdb import DuckDBStore
store = DuckDBStore(sys.argv[1])
with store.connect(write=sys.argv[2] == "write") as con:
    con.execute("SELECT 1").fetchall()
    print("holding", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def _hold(store: Path, mode: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store), mode, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


@pytest.mark.slow
def test_a_write_waits_for_another_process_reading(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    proc = _hold(store.path, "read", 1.0)
    started = time.monotonic()
    store.add_memory("after the other process read", None, [], None)
    assert time.monotonic() - started >= 0.3  # it waited for the other reader to close
    proc.wait(10)
    assert count_memories(store) == 1


@pytest.mark.slow
def test_a_read_waits_for_another_process_writing(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    proc = _hold(store.path, "write", 1.0)
    started = time.monotonic()
    assert count_memories(store) == 0
    assert time.monotonic() - started >= 0.3
    proc.wait(10)


@pytest.mark.slow
def test_another_process_writing_past_the_timeout_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    proc = _hold(store.path, "write", 5.0)
    monkeypatch.setenv("LAYERSEARCH_LOCK_TIMEOUT", "0.5")
    try:
        with pytest.raises(StoreBusy, match="another process"):
            store.add_memory("refused", None, [], None)
    finally:
        proc.kill()
        proc.wait(10)
    store.add_memory("the kill released the lock", None, [], None)
    assert count_memories(store) == 1


def test_a_pin_keeps_one_connection_for_its_reads_and_lets_writes_through(
    tmp_path: Path,
) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    gate = gate_for(store.path)
    count_memories(store)
    assert gate._base is None  # unpinned: the file is closed when its last read ends
    with store.pinned():
        count_memories(store)
        base = gate._base
        assert base is not None  # kept open between the pin's reads ...
        count_memories(store)
        assert gate._base is base  # ... and the next read takes a cursor from it
        # a write in this process closes the idle connection first (no "different
        # configuration"), and the reads after it open the file again
        store.add_memory("written while pinned", None, [], None)
        assert count_memories(store) == 1
    assert gate._base is None  # closed when the pin ends: another process may write
