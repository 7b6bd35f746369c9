"""A load builds its snapshot from the rows it wrote, not by reading them back: the tables
must be the ones the store would give, and another writer coming between must send the
reload back to the store."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tantivy

from layersearch import Layersearch
from layersearch.corpora.snapshot import tables_from_store
from layersearch.ranking.fulltext import FullTextIndex, key_hash
from tests.support import MINI, ROOT

pytestmark = pytest.mark.slow

BENCH = ROOT / "benchmarks"
FROM_ROWS = "taking the rows just written"
FROM_STORE = "reading the semantic layer from the store"


@pytest.fixture(scope="module")
def synthetic() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import synthetic as mod

        yield mod
    finally:
        sys.path.remove(str(BENCH))


def _last_snapshot_source(text: str) -> str:
    """How the snapshot after the load's writes was taken (the first one, on an empty
    store, is read from it)."""
    return [line for line in text.splitlines() if "entity snapshot" in line][-1]


def _same_as_store(ls: Layersearch) -> None:
    corpus = ls.corpus()
    assert corpus.snapshot is not None
    assert corpus.snapshot.content == tables_from_store(ls.store).content
    visible = sum(not e.hidden for e in corpus.entities.values())
    assert corpus.fulltext.num_docs == visible + len(corpus.memories)
    _hashes_are_their_keys(corpus.fulltext)


def _hashes_are_their_keys(ft: FullTextIndex) -> None:
    """Every document's hash field is its key's hash (a load hands the hashes its tables
    computed to the full-text writer: one off by a position would resolve hits to the
    wrong ids)."""
    searcher = ft._searcher
    hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
    addrs = [addr for _, addr in hits]
    assert len(addrs) == searcher.num_docs
    hashes = searcher.fast_field_values("h", addrs)
    keys = [searcher.doc(addr)["key"][0] for addr in addrs]
    assert hashes == [key_hash(k) for k in keys]


def test_loads_take_the_rows_they_wrote(
    tmp_path: Path, synthetic: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    one = synthetic.generate_catalog(1500, 0, seed=5)
    rest = synthetic.generate_catalog(1500, 40, seed=7)
    assert set(one.datasource_names()).isdisjoint(rest.datasource_names())
    caplog.set_level(logging.INFO, logger="layersearch.api")
    with Layersearch(tmp_path / "s.duckdb") as ls:
        for catalog in (one, rest, one, MINI):  # other datasources kept, one replaced, a file
            caplog.clear()
            if isinstance(catalog, Path):
                ls.load(catalog)
            else:
                ls.load_catalog(catalog)
            assert FROM_ROWS in _last_snapshot_source(caplog.text)
            _same_as_store(ls)
        found = ls.search(question="net revenue", entities=["orders"]).results
    with Layersearch(tmp_path / "s.duckdb") as reopened:
        again = reopened.search(question="net revenue", entities=["orders"]).results
    assert [(h.id, h.score) for h in again] == [(h.id, h.score) for h in found]


@pytest.mark.parametrize("before", ["replace_rows", "add_memories_at"])
def test_another_write_in_between_reads_the_store(
    before: str, tmp_path: Path, synthetic: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = synthetic.generate_catalog(2000, 20, seed=6)
    between = synthetic.generate_catalog(300, 0, seed=8)
    assert set(between.datasource_names()).isdisjoint(catalog.datasource_names())
    store = tmp_path / "s.duckdb"
    caplog.set_level(logging.INFO, logger="layersearch.api")
    with Layersearch(store) as ls, Layersearch(store) as other:
        other.load(MINI)
        real = getattr(ls.store, before)

        def interleaved(*args: Any) -> Any:
            # Another process adds a datasource after the snapshot this load started from,
            # or between its two commits.
            other.load_catalog(between)
            return real(*args)

        setattr(ls.store, before, interleaved)
        ls.load_catalog(catalog)
        assert FROM_STORE in _last_snapshot_source(caplog.text)
        _same_as_store(ls)
        assert set(ls.corpus().datasources) == {
            *catalog.datasource_names(),
            *between.datasource_names(),
            "crm",
            "shop",
        }
