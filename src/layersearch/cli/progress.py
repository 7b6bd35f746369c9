"""Progress on stderr for people: a spinner for work of unknown length, a bar for work
that counts. Silent with ``--json`` or when stderr is not a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from layersearch.cli.output import console


def _quiet(quiet: bool) -> bool:
    return quiet or not sys.stderr.isatty()


@contextlib.contextmanager
def status(text: str, quiet: bool) -> Iterator[None]:
    """A spinner labelled ``text`` while the block runs."""
    if _quiet(quiet):
        yield
        return
    with console(stderr=True).status(text):
        yield


class Progress:
    """A bar labelled ``label``; calling it with ``(done, total)`` moves it.

    With ``total`` known up front the bar shows the percentage done; without, the total
    arrives with the updates and the bar shows ``done/total``."""

    def __init__(self, label: str, quiet: bool, *, total: int | None = None) -> None:
        self.label = label
        self.total = total
        self.quiet = _quiet(quiet)
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if not self.quiet:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TaskProgressColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            done = MofNCompleteColumn() if self.total is None else TaskProgressColumn()
            self._bar = Bar(
                "[progress.description]{task.description}",
                BarColumn(),
                done,
                TimeRemainingColumn(),
                console=console(stderr=True),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def __call__(self, done: int, total: int | None = None) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task, completed=done, total=self.total if total is None else total
            )

    def relabel(self, label: str) -> None:
        """Start the bar again from nothing under a new label (the next stage of work)."""
        if self._bar is not None:
            self._bar.update(self._task, description=label, completed=0)

    def stages(self, first: str, label: str) -> Callable[[str, int, int], None]:
        """A callback ``(stage, done, total)`` for work done in stages, ``first`` first:
        at each new stage the bar is relabelled (``label`` with ``{stage}`` filled in)
        and starts again from nothing."""
        current = first

        def advance(stage: str, done: int, total: int) -> None:
            nonlocal current
            if stage != current:
                current = stage
                self.relabel(label.format(stage=stage))
            self(done, total)

        return advance

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
