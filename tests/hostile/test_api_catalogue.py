"""Every catalogue case through the Python API: the promised outcome, and an unchanged store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layersearch import Layersearch
from layersearch.errors import LayersearchError
from tests.support import MINI

from .catalogue import (
    CASES,
    CORPUS_CASES,
    CORPUS_WRITES,
    LOAD_OK,
    MCP_CASES,
    SECRET,
    Case,
    Err,
    build_corpus_store,
    by_entry,
    write_files,
)
from .snapshot import snapshot


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    ls = Layersearch(tmp_path_factory.mktemp("api") / "store.duckdb")
    ls.load(MINI)
    yield ls
    ls.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    path = tmp_path_factory.mktemp("corpus") / "store.duckdb"
    build_corpus_store(path)
    ls = Layersearch(path, embedder="fake")
    yield ls
    ls.close()


def check_ok(case: Case, result: Any) -> None:
    expect = case.expect
    assert not isinstance(expect, Err)
    if hasattr(result, "results") and hasattr(result, "warnings"):
        # Never a silent empty result: no hits comes with a reason.
        assert result.results or result.warnings, f"{case.id}: empty result without a warning"
        if expect.warning:
            assert any(expect.warning in w for w in result.warnings), (case.id, result.warnings)
    if expect.check is not None:
        assert expect.check(result), f"{case.id}: unexpected result {result!r:.500}"


def run_case(ls: Layersearch, case: Case, tmp: Path) -> None:
    assert case.api is not None
    files = write_files(case, tmp)
    before = snapshot(ls)
    if isinstance(case.expect, Err):
        with pytest.raises(LayersearchError) as info:
            case.api(ls, files)
        assert isinstance(info.value, case.expect.error), (case.id, type(info.value), info.value)
        assert case.expect.match in str(info.value), (case.id, str(info.value)[:500])
        assert SECRET not in str(info.value), case.id
    else:
        check_ok(case, case.api(ls, files))
    if not case.writes:
        assert snapshot(ls) == before, f"{case.id} changed the store"


@pytest.mark.parametrize("case", by_entry("api"), ids=lambda c: c.id)
def test_api(shared: Layersearch, case: Case, tmp_path: Path) -> None:
    run_case(shared, case, tmp_path)


@pytest.mark.parametrize("case", by_entry("api", LOAD_OK), ids=lambda c: c.id)
def test_api_successful_loads(case: Case, tmp_path: Path) -> None:
    with Layersearch(tmp_path / "store.duckdb") as ls:
        run_case(ls, case, tmp_path / "files")


@pytest.mark.parametrize("case", by_entry("api", CORPUS_CASES), ids=lambda c: c.id)
def test_api_corpora(corpus: Layersearch, case: Case, tmp_path: Path) -> None:
    run_case(corpus, case, tmp_path)


@pytest.mark.parametrize("case", by_entry("api", CORPUS_WRITES), ids=lambda c: c.id)
def test_api_corpus_writes(case: Case, tmp_path: Path) -> None:
    with Layersearch(tmp_path / "store.duckdb", embedder="fake") as ls:
        run_case(ls, case, tmp_path / "files")


def test_catalogue_ids_are_unique_and_every_row_has_an_entry_point() -> None:
    rows = CASES + LOAD_OK + CORPUS_CASES + CORPUS_WRITES + MCP_CASES
    names = [c.id for c in rows]
    assert len(names) == len(set(names))
    assert all(c.api is not None or c.cli is not None or c.mcp is not None for c in rows)


def test_snapshot_sees_a_write(shared: Layersearch) -> None:
    # The "store unchanged" check above is only worth something if a change shows.
    before = snapshot(shared)
    m = shared.save_memory("snapshot probe", entities=["shop.orders"])
    after = snapshot(shared)
    assert after["memories"] != before["memories"] and after["meta"] != before["meta"]
    shared.forget_memory(m.id)
