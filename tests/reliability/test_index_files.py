"""The files of a derived index that a process reads before it trusts anything (issue 42):
a ``CURRENT`` pointer or marker that is not a small regular file is damage, rebuilt with a
warning, never read (a FIFO hung every search; a link to /dev/zero ended in MemoryError);
generation folders no live process uses are removed, however recent (47 kills left 37),
and one a live reader holds never is."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.ranking.generations import (
    MAX_SMALL_FILE,
    current_dir,
    hold,
    read_small,
    sweep,
)
from tests.support import ROOT, loaded_store


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.unlink()
    p.symlink_to("/dev/zero")


def _huge(p: Path) -> None:
    p.write_bytes(b"g" * (MAX_SMALL_FILE + 1))


def _folder(p: Path) -> None:
    p.unlink()
    p.mkdir()
    (p / "x").write_text("x")


POINTER_DAMAGE: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo,
    "link-to-dev-zero": _dev_zero,
    "over-the-size-bound": _huge,
    "a-folder": _folder,
}


def _search_within(path: Path, seconds: float) -> list[str]:
    """The warnings of one search, run on a thread: a hang fails the test, not the suite."""
    out: list[list[str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with Layersearch(path) as ls:
                resp = ls.search(question="revenue refunds")
                assert resp.results
                out.append(resp.warnings)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the search hung reading the damaged pointer"
    if errors:
        raise errors[0]
    return out[0]


@pytest.mark.parametrize("damage", sorted(POINTER_DAMAGE))
@pytest.mark.parametrize("index", ["entities", "snapshot"])
def test_a_pointer_that_is_no_small_regular_file_is_rebuilt(
    tmp_path: Path, index: str, damage: str
) -> None:
    path = loaded_store(tmp_path)
    pointer = path.with_name(path.name + ".index") / index / "CURRENT"
    POINTER_DAMAGE[damage](pointer)
    warnings = _search_within(path, 60)
    assert any("rebuilt it from the store" in w for w in warnings), warnings
    assert pointer.is_file() and not pointer.is_symlink()
    assert read_small(pointer).startswith("g")
    assert not _search_within(path, 60)  # repaired on disk: the next open says nothing


def test_a_marker_that_is_a_fifo_is_rebuilt(tmp_path: Path) -> None:
    path = loaded_store(tmp_path)
    sub = current_dir(path.with_name(path.name + ".index") / "entities")
    assert sub is not None
    marker = sub / "layersearch-index.json"
    marker.unlink()
    os.mkfifo(marker)
    warnings = _search_within(path, 60)
    assert any("full-text index was corrupt" in w for w in warnings), warnings


def test_read_small_refuses_what_is_not_a_small_regular_file(tmp_path: Path) -> None:
    (tmp_path / "ok").write_text("g1-2\n")
    assert read_small(tmp_path / "ok") == "g1-2\n"
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "big").write_bytes(b"x" * 11)
    for name, why in [("fifo", "not a regular file"), ("big", "over 10")]:
        with pytest.raises(OSError, match=why):
            read_small(tmp_path / name, limit=10)
    with pytest.raises(OSError):  # a symbolic link is not followed
        read_small(tmp_path / "zero")


# -- generations ---------------------------------------------------------------------------------


def _generations(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.is_dir() and p.name.startswith("g"))


_HOLDER = """
import sys, time
from pathlib import Path
from layersearch.ranking.generations import hold
lock = hold(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def _dead_pid() -> int:
    """A process id no process has now."""
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except OSError:
            pass
        pid -= 1


def _generation_folder(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "index"
    base.mkdir()
    for name in ("g10-1", "g11-2", "g12-3", "g13-4"):
        (base / name).mkdir()
        (base / name / "data").write_text("x")
    (base / "CURRENT").write_text("g10-1")
    # written by this version (each has its lock file beside it); g11-2 by a process that
    # was killed (no process holds its lock)
    for name in ("g10-1", "g11-2", "g12-3", "g13-4"):
        (base / f"{name}.lock").touch()
    return base, base / "g10-1"


def test_generations_nobody_uses_are_removed_and_a_held_one_is_kept(tmp_path: Path) -> None:
    base, current = _generation_folder(tmp_path)
    mine = hold(base / "g13-4")  # read by this process
    assert mine is not None
    # leftovers of killed runs: a lock without its folder, a CURRENT temp of a dead pid
    (base / "g14-5.lock").touch()
    (base / f"CURRENT.{_dead_pid()}.tmp").write_text("g11-2")
    (base / f"CURRENT.{os.getpid()}.tmp").write_text("g11-2")  # a live writer's
    removed = sweep(base, current=current)
    assert _generations(base) == ["g10-1", "g13-4"], removed
    assert not (base / "g14-5.lock").exists()
    assert [p.name for p in base.glob("*.tmp")] == [f"CURRENT.{os.getpid()}.tmp"]
    mine.release()
    sweep(base, current=current)
    assert _generations(base) == ["g10-1"]


@pytest.mark.slow
def test_a_generation_another_process_reads_is_kept_until_it_dies(tmp_path: Path) -> None:
    base, current = _generation_folder(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(base / "g12-3")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        sweep(base, current=current)
        assert _generations(base) == ["g10-1", "g12-3"]
    finally:
        holder.kill()
        holder.wait()
    # the reader was killed: its generation goes at the next sweep, however recent
    sweep(base, current=current)
    assert _generations(base) == ["g10-1"]


def test_a_generation_of_an_older_version_waits_for_the_grace_period(tmp_path: Path) -> None:
    from layersearch.ranking import generations

    base = tmp_path / "index"
    (base / "g1-1").mkdir(parents=True)
    (base / "g2-2").mkdir()
    (base / "CURRENT").write_text("g2-2")
    # no lock file: written before the locks, maybe read by a process of that version
    sweep(base, current=base / "g2-2")
    assert (base / "g1-1").exists()
    long_ago = time.time() - 2 * generations.LEGACY_GRACE_S
    os.utime(base / "g1-1", (long_ago, long_ago))
    sweep(base, current=base / "g2-2")
    assert not (base / "g1-1").exists()


@pytest.mark.slow
def test_killed_writers_leave_no_generations_behind(tmp_path: Path) -> None:
    """Writers killed while they rebuild the index (the reported case: 47 kills left 37
    generation folders): the next process that publishes removes all they left."""
    path = loaded_store(tmp_path)
    index = path.with_name(path.name + ".index")
    writer = (
        "import sys\nfrom layersearch import Layersearch\n"
        "from layersearch.ranking import fulltext\n"
        "real = fulltext.FullTextIndex.write\n"
        "def slow(self, **kw):\n"
        "    print('writing', flush=True)\n"
        "    import time; time.sleep(60)\n"
        "fulltext.FullTextIndex.write = slow\n"
        "with Layersearch(sys.argv[1]) as ls:\n"
        "    ls.search(question='revenue')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for _ in range(6):
        # a stale stamp makes every process rebuild the entities index
        (current_dir(index / "entities") / "layersearch-index.json").write_text("{}")  # type: ignore[operator]
        proc = subprocess.Popen(
            [sys.executable, "-c", writer, str(path)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        proc.kill()
        proc.wait()
    assert len(_generations(index / "entities")) >= 6  # what the killed writers left
    with Layersearch(path) as ls:
        ls.save_memory("one more", entities=["shop.orders"])
        assert ls.search(question="one more").results
        kept = _generations(index / "entities")
    assert len(kept) <= 2, kept  # the current one (and the one this process replaced)
