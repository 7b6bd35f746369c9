"""The CLI package's shared pieces: the progress helper, lazy option choices, the
bundled models' location."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch.cli import bundled_models, main
from layersearch.cli.progress import Progress, status
from tests.support import ROOT


def test_bundled_models_fall_back_to_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./models here
    assert bundled_models() == ROOT / "models"
    (tmp_path / "models").mkdir()
    assert bundled_models() == Path("models")


def test_starting_the_cli_imports_no_importer() -> None:
    """load's --format choices come from the importers, read only when `load` needs them."""
    code = (
        "import sys, json, layersearch.cli\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'importers' in m)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(out.stdout) == []


def test_an_unknown_load_format_lists_the_importers_formats() -> None:
    from layersearch.semantic.importers import FORMATS

    res = CliRunner().invoke(main, ["load", "x", "--format", "nope"])
    assert res.exit_code == 2
    assert "'nope' is not one of 'auto', " + ", ".join(f"'{f}'" for f in FORMATS) in res.stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with Progress("embedding", quiet=False) as bar, status("loading", quiet=False):
        bar(1, 2)
        bar.relabel("next")
    assert bar._bar is None and sys.stderr.getvalue() == ""


def test_progress_counts_or_shows_a_percentage(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.progress import MofNCompleteColumn, TaskProgressColumn

    monkeypatch.setattr(sys, "stderr", _Tty())
    with Progress("embedding", quiet=False) as counted:
        counted(3, 10)
        (task,) = counted._bar.tasks
        assert (task.completed, task.total, task.description) == (3, 10, "embedding")
        assert any(isinstance(c, MofNCompleteColumn) for c in counted._bar.columns)
        counted.relabel("embedding chunks")
        assert (task.completed, task.description) == (0, "embedding chunks")
    with Progress("reading notes", quiet=False) as staged:
        advance = staged.stages("reading", "{stage} chunks")
        advance("reading", 4, 5)
        (task,) = staged._bar.tasks
        assert (task.completed, task.total, task.description) == (4, 5, "reading notes")
        advance("embedding", 2, 9)
        assert (task.completed, task.total, task.description) == (2, 9, "embedding chunks")
    with Progress("asking questions", quiet=False, total=40) as known:
        known(10)
        (task,) = known._bar.tasks
        assert (task.completed, task.total) == (10, 40)
        assert any(isinstance(c, TaskProgressColumn) for c in known._bar.columns)
    with Progress("embedding", quiet=True) as quiet:
        quiet(1, 2)
    assert quiet._bar is None
