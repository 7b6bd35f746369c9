"""The cost of one call, bounded: how much of a question is analysed, how long a call
may run, whether its caller is still there, and how many expensive calls a server runs
at once.

- :data:`MAX_ANALYSED_CHARS`: a search analyses at most this many characters of its
  question (cut at a word boundary, said in the response's warnings).
- :class:`CallBudget`: a deadline and a cancel flag for one call, made current for the
  thread that runs it (:func:`running`). Long work checks it at its checkpoints
  (:func:`checkpoint`: a search between its stages and its sources; the Cypher
  evaluator every 256 steps, through the deadline and check it is handed) and stops
  with :class:`~layersearch.errors.LimitExceeded` past the deadline, or
  :class:`~layersearch.errors.CallCancelled` once its caller has gone. Without a
  current budget (a library call) a checkpoint does nothing.
- :class:`CallLimiter`: how a server runs its read calls. Each runs in a worker thread
  under its budget. An expensive one (:func:`is_expensive`: a Cypher filter, a scope
  beyond the semantic layer, a long question) first waits for one of a few slots, within
  its budget (:class:`~layersearch.errors.ServerBusy` when the budget passes first), so
  that plain searches keep their latency. When the task awaiting a call is cancelled (its
  client disconnected, or sent a cancellation), the call's budget is cancelled and its
  worker stops at its next checkpoint.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from layersearch.errors import CallCancelled, ConfigError, LimitExceeded, ServerBusy

__all__ = [
    "CALL_SECONDS",
    "MAX_ANALYSED_CHARS",
    "CallBudget",
    "CallLimiter",
    "analysed_question",
    "call_seconds",
    "checkpoint",
    "current",
    "expensive_slots",
    "is_expensive",
    "running",
]

T = TypeVar("T")

log = logging.getLogger("layersearch.calls")

#: characters of a question a search analyses (the rest is not read): the analysis, every
#: channel and every corpus of scope=all cost time in proportion to the question's terms
MAX_ANALYSED_CHARS = 1_000
#: seconds one read call of the MCP server may take, waiting for a slot included
#: (LAYERSEARCH_CALL_SECONDS overrides)
CALL_SECONDS = 30.0


def seconds_env(name: str, default: float, top: float) -> float:
    """Seconds from the environment variable ``name`` (above 0, at most ``top``), else
    ``default``; read on each call, a bad value a ConfigError naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= top:
        raise ConfigError(f"{name}={raw!r} must be a number of seconds above 0 and at most {top:g}")
    return value


def call_seconds() -> float:
    """``LAYERSEARCH_CALL_SECONDS`` when set (above 0, at most 3600), else
    :data:`CALL_SECONDS`."""
    return seconds_env("LAYERSEARCH_CALL_SECONDS", CALL_SECONDS, 3600)


def expensive_slots() -> int:
    """How many expensive calls a server runs at once: ``LAYERSEARCH_EXPENSIVE_CALLS``
    when set (1 to 64), else half the CPUs (at least 1): each keeps a core busy."""
    raw = os.environ.get("LAYERSEARCH_EXPENSIVE_CALLS", "").strip()
    if not raw:
        return max(1, (os.cpu_count() or 2) // 2)
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise ConfigError(f"LAYERSEARCH_EXPENSIVE_CALLS={raw!r} must be a whole number, 1 to 64")
    return int(raw)


def analysed_question(question: str | None) -> tuple[str | None, str | None]:
    """The part of ``question`` a search analyses, and the warning saying so when that is
    not all of it: the first :data:`MAX_ANALYSED_CHARS` characters, cut before a word the
    limit would split (when a space is near)."""
    if question is None or len(question) <= MAX_ANALYSED_CHARS:
        return question, None
    cut = question[:MAX_ANALYSED_CHARS]
    if not question[MAX_ANALYSED_CHARS].isspace():
        space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
        if space >= MAX_ANALYSED_CHARS - 100:
            cut = cut[:space]
    return cut, (
        f"question is {len(question):,} characters: only its first {len(cut):,} were "
        f"analysed (MAX_ANALYSED_CHARS {MAX_ANALYSED_CHARS:,}); put the gist first"
    )


class CallBudget:
    """One call's deadline and cancel flag (see the module)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self._cancelled = threading.Event()
        self.reason = ""

    def cancel(self, reason: str) -> None:
        if not self._cancelled.is_set():
            self.reason = reason
            self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise when the call was cancelled or ran past its deadline."""
        if self._cancelled.is_set():
            raise CallCancelled(f"the call was stopped: {self.reason}")
        if time.monotonic() > self.deadline:
            raise self.over()

    def over(self) -> LimitExceeded:
        return LimitExceeded(
            f"the call ran past its budget of {self.seconds:g} s and was stopped "
            "(LAYERSEARCH_CALL_SECONDS); narrow it: a shorter question, a tighter filter, "
            "a smaller scope"
        )


_CURRENT: contextvars.ContextVar[CallBudget | None] = contextvars.ContextVar(
    "layersearch_call_budget", default=None
)


def current() -> CallBudget | None:
    """The budget of the call this thread runs, if any."""
    return _CURRENT.get()


def checkpoint() -> None:
    """Stop here if the current call was cancelled or is past its budget."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()


@contextmanager
def running(budget: CallBudget) -> Iterator[CallBudget]:
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


#: tool arguments whose text the tool analyses
_TEXT_ARGUMENTS = ("question", "query")


def is_expensive(tool: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a read call can cost far more than a plain search: a Cypher filter, a
    scope that reaches conversations or the vault, or a question (query) longer than
    :data:`MAX_ANALYSED_CHARS`."""
    if tool == "search":
        if str(arguments.get("cypher_filter") or "").strip():
            return True
        scope = arguments.get("scope")
        if scope is not None:
            named = str(scope).lower()
            if any(s in named for s in ("all", "conversation", "vault")):
                return True
    return any(
        isinstance(arguments.get(name), str) and len(arguments[name]) > MAX_ANALYSED_CHARS
        for name in _TEXT_ARGUMENTS
    )


class CallLimiter:
    """A server's gate for its read calls (see the module). Made in the server's event
    loop (its semaphore belongs to that loop)."""

    def __init__(self, slots: int | None = None, seconds: float | None = None) -> None:
        import anyio

        self.slots = slots if slots is not None else expensive_slots()
        self.seconds = seconds if seconds is not None else call_seconds()
        self._slots = anyio.Semaphore(self.slots)
        #: expensive calls running or waiting for a slot (for the busy message)
        self.waiting = 0

    async def run(self, fn: Callable[[], T], *, expensive: bool, name: str = "call") -> T:
        """``fn()`` in a worker thread under a new budget; an expensive call first waits
        for a slot (at most until its budget passes: ServerBusy). ``name``: for the log."""
        import anyio

        budget = CallBudget(self.seconds)
        if not expensive:
            return await _in_thread(fn, budget, name)
        self.waiting += 1
        try:
            with anyio.move_on_after(max(0.0, budget.remaining())) as waited:
                await self._slots.acquire()
            if waited.cancelled_caught:
                raise ServerBusy(
                    f"the server is busy: {self.waiting} expensive calls (Cypher filters, "
                    f"scope=all, long questions) were running or waiting, {self.slots} at a "
                    f"time, and this one found no slot within its budget of {self.seconds:g} s "
                    "(LAYERSEARCH_CALL_SECONDS); plain searches are still answered. Retry later"
                )
            try:
                return await _in_thread(fn, budget, name)
            finally:
                self._slots.release()
        finally:
            self.waiting -= 1


async def _in_thread(fn: Callable[[], T], budget: CallBudget, name: str) -> T:
    """``fn()`` in a worker thread with ``budget`` current there. When the awaiting task is
    cancelled, the budget is cancelled and the task waits for the worker to stop (at its
    next checkpoint) rather than leaving it running for nobody."""
    import anyio
    import anyio.lowlevel

    def work() -> T:
        with running(budget):
            return fn()

    finished = False

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished:
                budget.cancel("its client disconnected or cancelled it")

    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            result = await anyio.to_thread.run_sync(work)
        except Exception as exc:  # raised below, outside the task group (not in a group)
            failed = exc
        finally:
            finished = True
            tg.cancel_scope.cancel()
            if budget.cancelled:  # the worker has ended: say when, and why
                log.info(
                    "%s stopped %.1f s into its budget of %g s: %s",
                    name,
                    budget.seconds - budget.remaining(),
                    budget.seconds,
                    budget.reason,
                )
    if failed is not None:
        if budget.cancelled:
            # the cancellation that stopped the worker is delivered here, not its error
            await anyio.lowlevel.checkpoint()
        raise failed
    return result
