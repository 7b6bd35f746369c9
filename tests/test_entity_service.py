"""The entity service behind the facade: what Layersearch hands out and delegates to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.corpora.entities import EntityCorpus, EntityService
from layersearch.errors import ConfigError
from tests.support import MINI


@pytest.fixture
def ls(tmp_path: Path) -> Iterator[Layersearch]:
    with Layersearch(tmp_path / "s.duckdb") as api:
        api.load(MINI)
        yield api


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = EntityCorpus.check_request

    def counting(self: EntityCorpus, req):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(self, req)

    monkeypatch.setattr(EntityCorpus, "check_request", counting)
    return calls


@pytest.mark.parametrize("cypher", [None, "MATCH (n:Measure) RETURN n.id AS id"])
def test_a_search_checks_its_request_once(
    ls: Layersearch, monkeypatch: pytest.MonkeyPatch, cypher: str | None
) -> None:
    calls = _count_checks(monkeypatch)
    assert ls.search(question="order revenue", cypher_filter=cypher).results
    assert len(calls) == 1


def test_a_bad_request_is_refused_before_the_filter_runs(
    ls: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    monkeypatch.setattr(EntityService, "filter_ids", lambda self, c, p=None: ran.append(c))
    with pytest.raises(ConfigError, match="unknown channel"):
        ls.search(question="revenue", channels=["nope"], cypher_filter="MATCH (n) RETURN n.id")
    assert ran == []


def test_the_facade_hands_out_the_entity_service(ls: Layersearch) -> None:
    assert isinstance(ls.entities, EntityService)
    assert ls.entities.store is ls.store
    assert ls.corpus() is ls.entities.corpus()
    saved = ls.save_memory("Revenue excludes refunds", entities=["shop.orders"])
    assert ls.entities.get_memory(saved.id) == saved


def test_a_small_full_text_index_is_searched_on_the_calling_thread(
    ls: Layersearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below ``FULLTEXT_THREAD_MIN_DOCS`` documents full text ranks before the schema
    channel on the searching thread; from it, on a worker beside it: the same hits."""
    import threading

    from layersearch.corpora.entities import process
    from layersearch.ranking.fulltext import FullTextIndex

    ls.save_memory("Revenue excludes refunds", entities=["shop.orders"])
    threads: list[str] = []
    search = FullTextIndex.search

    def recorded(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(FullTextIndex, "search", recorded)
    here = ls.search(question="order revenue", explain=True)
    assert threads == [threading.current_thread().name] * 2  # entities, then memories
    threads.clear()
    monkeypatch.setattr(process, "FULLTEXT_THREAD_MIN_DOCS", 0)
    beside = ls.search(question="order revenue", explain=True)
    assert len(threads) == 2 and all(t.startswith("layersearch-fulltext") for t in threads)
    assert beside == here


def test_a_full_text_error_on_the_calling_thread_waits_for_its_result() -> None:
    from layersearch.corpora.entities.process import fulltext_future

    def fails() -> None:
        raise ValueError("index gone")

    pending = fulltext_future(1, fails)
    with pytest.raises(ValueError, match="index gone"):
        pending.result()
    assert fulltext_future(1, lambda x: x + 1, 41).result() == 42


def test_settle_heap_collects_only_while_the_collector_runs() -> None:
    """The snapshot's objects are frozen out of later collections; young garbage is
    collected first, unless the process paused the collector (a new CLI process's
    first seconds), whose one question ends before collecting would pay."""
    import gc
    import weakref

    from layersearch.corpora.entities import process

    class Node:
        pass

    def cycle() -> weakref.ref[Node]:
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        return weakref.ref(a)

    was = gc.isenabled()
    try:
        gc.enable()
        dead = cycle()
        process.settle_heap()
        assert dead() is None and gc.get_freeze_count() > 0
        gc.unfreeze()
        gc.disable()
        kept = cycle()
        process.settle_heap()
        assert kept() is not None and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
        else:
            gc.disable()
        gc.collect()
