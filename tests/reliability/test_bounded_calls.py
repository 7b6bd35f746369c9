"""One client must not slow every other: the cost of one call is bounded.

- a search analyses at most MAX_ANALYSED_CHARS of its question, and says so;
- a call runs under a budget (LAYERSEARCH_CALL_SECONDS) that long work checks as it
  goes, the Cypher evaluator included, and stops when its caller has gone;
- a server runs few expensive calls at once; one that finds no slot within its budget
  is refused (server_busy) while plain calls are answered.

The server-wide view (a plain client's latency beside hostile ones) is
benchmarks/fairness.py; these tests check each mechanism, with generous bounds only.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from layersearch import Layersearch
from layersearch.calls import (
    MAX_ANALYSED_CHARS,
    CallBudget,
    CallLimiter,
    analysed_question,
    checkpoint,
    is_expensive,
    running,
)
from layersearch.errors import CallCancelled, LimitExceeded, ServerBusy
from tests.support import MINI, ROOT, cli_env, free_port, layersearch_cmd, wait_for_port

#: the reported filter: a regex over a concatenation across a cartesian product
REPORTED_FILTER = "MATCH (m:Memory),(a) WHERE m.learning + a.name =~ '.*a.*a.*a!' RETURN a.id AS id"
#: one that runs until a budget stops it: every pair of nodes against a 2,000-character
#: value and three [a-z]* in a row (tens of ms a match)
SLOW_FILTER = (
    "MATCH (a), (b) WHERE ($s + a.id + b.id) =~ '[a-z]*[a-z]*[a-z]*[0-9]' RETURN a.id AS id"
)
SLOW_PARAMS = {"s": "a" * 2000}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def long_question(chars: int = 99_990) -> str:
    words = ["net", "revenue", "by", "customer", "and", "store", "tax", "refunds", "orders"]
    out = " ".join(words[i % len(words)] + str(i) for i in range(chars // 4))
    return out[:chars]


# -- the analysed length of a question ----------------------------------------------------------


def test_a_long_question_is_analysed_up_to_the_bound_and_said(mini: Layersearch) -> None:
    question = long_question()
    resp = mini.search(question=question)
    warned = [w for w in resp.warnings if "MAX_ANALYSED_CHARS" in w]
    assert len(warned) == 1 and "99,990 characters" in warned[0], resp.warnings
    assert resp.results
    # the same search as its analysed part alone
    cut, _ = analysed_question(question)
    assert cut is not None and len(cut) <= MAX_ANALYSED_CHARS and question.startswith(cut)
    alone = mini.search(question=cut)
    assert [h.id for h in alone.results] == [h.id for h in resp.results]


def test_a_question_without_spaces_is_cut_at_the_bound(mini: Layersearch) -> None:
    resp = mini.search(question="orders" * 10_000, scope="all")
    assert sum("MAX_ANALYSED_CHARS" in w for w in resp.warnings) == 1, resp.warnings
    cut, warning = analysed_question("x" * 5000)
    assert cut == "x" * MAX_ANALYSED_CHARS and warning


def test_short_questions_are_untouched_and_the_hard_limit_stays(mini: Layersearch) -> None:
    question = "orders " * (MAX_ANALYSED_CHARS // 7)
    assert analysed_question(question) == (question, None)
    assert not any("MAX_ANALYSED_CHARS" in w for w in mini.search(question=question).warnings)
    with pytest.raises(LimitExceeded, match="limit is 100000"):
        mini.search(question="x " * 50_001)
    with pytest.raises(LimitExceeded, match="limit is 100000"):
        mini.search(question="x " * 50_001, scope="all")


# -- what counts as expensive -------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, arguments, expensive",
    [
        ("search", {"question": "net revenue"}, False),
        ("search", {"question": "net revenue", "scope": "semantic"}, False),
        ("search", {"question": "net revenue", "cypher_filter": REPORTED_FILTER}, True),
        ("search", {"question": "net revenue", "cypher_filter": "  "}, False),
        ("search", {"question": "net revenue", "scope": "all"}, True),
        ("search", {"question": "x", "scope": ["semantic", "vault"]}, True),
        ("search", {"question": "x" * (MAX_ANALYSED_CHARS + 1)}, True),
        ("vault_search", {"query": "x" * (MAX_ANALYSED_CHARS + 1)}, True),
        ("inspect", {"ids": ["shop.orders"]}, False),
    ],
)
def test_is_expensive(tool: str, arguments: dict[str, Any], expensive: bool) -> None:
    assert is_expensive(tool, arguments) is expensive


# -- budgets, slots and cancellation ------------------------------------------------------------


def _spin(seen: list[BaseException]) -> None:
    """Work that only a budget ends (checking it every 10 ms)."""
    try:
        while True:
            checkpoint()
            time.sleep(0.01)
    except BaseException as exc:
        seen.append(exc)
        raise


def test_the_budget_stops_work_at_its_checkpoints() -> None:
    seen: list[BaseException] = []
    started = time.monotonic()
    with running(CallBudget(0.3)), pytest.raises(LimitExceeded, match="LAYERSEARCH_CALL_SECONDS"):
        _spin(seen)
    assert 0.25 <= time.monotonic() - started < 5
    checkpoint()  # no budget outside a call: nothing to check


@pytest.mark.anyio
async def test_an_expensive_call_without_a_slot_is_refused_and_plain_ones_answered() -> None:
    limiter = CallLimiter(slots=1, seconds=0.6)
    outcomes: dict[str, Any] = {}

    async def call(name: str, fn: Any, expensive: bool) -> None:
        started = time.monotonic()
        try:
            outcomes[name] = await limiter.run(fn, expensive=expensive)
        except ServerBusy as exc:
            outcomes[name] = exc
        outcomes[name + " s"] = time.monotonic() - started

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            # holds the one slot for 1.5 s (it checks no budget: it only occupies the slot)
            tg.start_soon(call, "first", lambda: time.sleep(1.5) or "first done", True)
            await anyio.sleep(0.1)
            tg.start_soon(call, "second", lambda: "second done", True)
            await anyio.sleep(0.1)
            tg.start_soon(call, "plain", lambda: "answer", False)
    assert outcomes["first"] == "first done"
    assert isinstance(outcomes["second"], ServerBusy)  # no slot within its 0.6 s
    assert "1 at a time" in str(outcomes["second"]) and outcomes["second s"] < 1.4
    assert outcomes["plain"] == "answer" and outcomes["plain s"] < 1.0  # not queued


@pytest.mark.anyio
async def test_a_cancelled_call_stops_its_worker() -> None:
    limiter = CallLimiter(slots=1, seconds=60)
    seen: list[BaseException] = []
    started = time.monotonic()
    with anyio.move_on_after(0.3):
        await limiter.run(lambda: _spin(seen), expensive=True)
    # the awaiting task waited for the worker to stop: it is already done
    assert len(seen) == 1 and isinstance(seen[0], CallCancelled), seen
    assert "disconnected or cancelled" in str(seen[0])
    assert time.monotonic() - started < 10
    # and the slot is free again
    assert await limiter.run(lambda: "next", expensive=True) == "next"


def test_the_call_budget_stops_a_cypher_filter(mini: Layersearch) -> None:
    # the filter's own budget (10 s) is far off: the call's ends it
    started = time.monotonic()
    with running(CallBudget(0.5)), pytest.raises(LimitExceeded, match="LAYERSEARCH_CALL_SECONDS"):
        mini.search(question="tax", cypher_filter=SLOW_FILTER, params=SLOW_PARAMS)
    assert time.monotonic() - started < 5


def test_a_regex_timer_firing_early_still_names_the_call_budget(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine's timer may fire a hair before the call's deadline: the error is still
    # the call's (it bound the match), not the filter's 10 s that was far off.
    from layersearch.graph.cypher import evaluate

    class Early:
        def fullmatch(self, *args: Any, **kwargs: Any) -> None:
            raise TimeoutError  # at once, before the call's deadline

    monkeypatch.setattr(evaluate, "_compile_regex", lambda pattern: Early())
    with running(CallBudget(0.3)), pytest.raises(LimitExceeded, match="LAYERSEARCH_CALL_SECONDS"):
        mini.filter_ids(SLOW_FILTER, SLOW_PARAMS)


def test_a_cancelled_call_stops_a_cypher_filter(mini: Layersearch) -> None:
    budget = CallBudget(60)
    threading.Timer(0.5, budget.cancel, args=("its client disconnected",)).start()
    started = time.monotonic()
    with running(budget), pytest.raises(CallCancelled, match="client disconnected"):
        mini.filter_ids(SLOW_FILTER, SLOW_PARAMS)
    assert time.monotonic() - started < 5


def test_one_regex_match_is_bounded(mini: Layersearch, monkeypatch: pytest.MonkeyPatch) -> None:
    # A match cannot be interrupted: each one has a budget of its own, so a cancelled call
    # stops within it. (No pattern the filter accepts takes 1 s on 2,000 characters with
    # the regex engine: the bound is lowered to see it act.)
    from layersearch.errors import CypherLimitError
    from layersearch.graph.cypher import evaluate

    monkeypatch.setattr(evaluate, "MAX_REGEX_MATCH_SECONDS", 0.001)
    with pytest.raises(CypherLimitError, match="MAX_REGEX_MATCH_SECONDS"):
        mini.filter_ids(SLOW_FILTER, SLOW_PARAMS)


def test_the_reported_filter_ends_cleanly(mini: Layersearch) -> None:
    resp = mini.search(question="tax", cypher_filter=REPORTED_FILTER)
    assert not resp.results and "matched no entities" in resp.warnings[0]


# -- over HTTP -----------------------------------------------------------------------------------

CLIENT = """
import sys, anyio
sys.path.insert(0, sys.argv[2])
from load import client
async def main():
    async with client(sys.argv[1]) as session:
        print("calling", flush=True)
        await session.call_tool("search", {"question": "x", "cypher_filter": sys.argv[3],
                                           "params": {"s": "a" * 2000}})
anyio.run(main)
"""


@pytest.mark.slow
def test_the_server_stops_the_work_of_a_client_that_has_gone(tmp_path: Path) -> None:
    # Before: the filter ran on to its budget after its client had gone.
    port = free_port()
    errlog = tmp_path / "server.log"
    env = cli_env() | {"LAYERSEARCH_FILTER_SECONDS": "60", "LAYERSEARCH_CALL_SECONDS": "120"}
    args = ("-v", "--store", str(tmp_path / "s.duckdb"), "serve", "--http", "--port", str(port))
    with errlog.open("w") as err:
        server = subprocess.Popen(
            layersearch_cmd(*args, "--models", str(MINI)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            wait_for_port(port, server)
            url = f"http://127.0.0.1:{port}/mcp"
            bench = str(ROOT / "benchmarks")
            client = subprocess.Popen(
                [sys.executable, "-c", CLIENT, url, bench, SLOW_FILTER],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert client.stdout is not None and client.stdout.readline().strip() == "calling"
            time.sleep(2.0)  # the filter is running by now
            client.send_signal(signal.SIGKILL)
            client.wait(10)
            killed = time.monotonic()
            stopped = ""
            while time.monotonic() - killed < 30 and not stopped:
                time.sleep(0.2)
                stopped = next(
                    (line for line in errlog.read_text().splitlines() if "search stopped" in line),
                    "",
                )
            assert "client disconnected" in stopped, errlog.read_text()[-3000:]
            # far sooner than the filter's own budget of 60 s would have ended it
            assert time.monotonic() - killed < 30
        finally:
            server.terminate()
            server.wait(30)
