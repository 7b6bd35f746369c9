"""Commit subjects of at most 72 characters (issue #21), numbers and reasons in the body.

Checks the commits made after ``BASE`` (the last commit before the rule); skips outside
a git checkout or in a clone without that commit (a shallow one, an exported tarball).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT

BASE = "9730467"
MAX_SUBJECT = 72


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )


def long_subjects(repo: Path, base: str) -> list[str]:
    """``hash (length) subject`` of each commit after ``base`` whose subject is too long."""
    log = _git(repo, "log", "--format=%h%x09%s", f"{base}..HEAD")
    assert log.returncode == 0, log.stderr
    rows = [line.split("\t", 1) for line in log.stdout.splitlines() if line]
    return [f"{h} ({len(s)}) {s}" for h, s in rows if len(s) > MAX_SUBJECT]


def _base_in_history(repo: Path, base: str) -> bool:
    if shutil.which("git") is None or _git(repo, "rev-parse", "--git-dir").returncode != 0:
        return False
    return _git(repo, "merge-base", "--is-ancestor", base, "HEAD").returncode == 0


def test_commit_subjects_fit_in_72_characters() -> None:
    if not _base_in_history(ROOT, BASE):
        pytest.skip(f"not a git checkout holding {BASE}")
    long = long_subjects(ROOT, BASE)
    assert not long, f"subjects over {MAX_SUBJECT} characters:\n" + "\n".join(long)


def test_a_long_subject_is_caught(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]

    def commit(subject: str) -> None:
        done = _git(tmp_path, *ident, "commit", "-q", "--allow-empty", "-m", subject)
        assert done.returncode == 0, done.stderr

    assert _git(tmp_path, "init", "-q").returncode == 0
    commit("base")
    base = _git(tmp_path, "rev-parse", "HEAD").stdout.strip()
    commit("x" * MAX_SUBJECT)
    assert _base_in_history(tmp_path, base)
    assert long_subjects(tmp_path, base) == []
    commit("y" * (MAX_SUBJECT + 1))
    (found,) = long_subjects(tmp_path, base)
    assert f"({MAX_SUBJECT + 1}) " in found
