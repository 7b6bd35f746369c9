"""open_or_rebuild: the one policy for stamped full-text indexes (open, update or rebuild)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from layersearch.ranking.fulltext import FTDoc, FullTextIndex, open_or_rebuild

BOOSTS = {"text": 1.0}


def _docs(*words: str) -> list[FTDoc]:
    return [FTDoc(id=f"d{i}", kind="doc", fields={"text": w}) for i, w in enumerate(words)]


def test_a_missing_index_is_built_then_opened(tmp_path: Path) -> None:
    calls: list[int] = []

    def docs() -> list[FTDoc]:
        calls.append(1)
        return _docs("revenue", "churn")

    first = open_or_rebuild(tmp_path / "ft", BOOSTS, "s1", docs)
    assert (first.how, first.reason, first.kept, first.damaged) == (
        "rebuilt",
        "missing",
        None,
        False,
    )
    assert [i for i, _ in first.index.search("churn", 5)] == ["d1"]
    again = open_or_rebuild(tmp_path / "ft", BOOSTS, "s1", docs)
    assert (again.how, again.reason) == ("opened", None)
    assert len(calls) == 1  # opened: the documents were not read again
    assert again.index.num_docs == 2


def test_a_stale_index_is_updated_when_update_can(tmp_path: Path) -> None:
    built = open_or_rebuild(tmp_path / "ft", BOOSTS, "s1", lambda: _docs("revenue")).index

    def update() -> FullTextIndex:
        built.write(add=_docs("revenue", "orders"), delete=["d0"], stamp="s2")
        return built

    def never() -> list[FTDoc]:
        raise AssertionError("rebuilt although update gave an index")

    up = open_or_rebuild(tmp_path / "ft", BOOSTS, "s2", never, update=update)
    assert (up.how, up.reason) == ("updated", "stale")
    assert [i for i, _ in up.index.search("orders", 5)] == ["d1"]
    # update declining (None) falls back to a rebuild
    again = open_or_rebuild(tmp_path / "ft", BOOSTS, "s3", lambda: _docs("x"), update=lambda: None)
    assert (again.how, again.reason, again.index.num_docs) == ("rebuilt", "stale", 1)


def test_a_corrupt_index_is_rebuilt_with_a_warning_unless_told_not_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ft"
    open_or_rebuild(path, BOOSTS, "s1", lambda: _docs("a"))
    (path / "CURRENT").write_text("")
    with caplog.at_level(logging.INFO, logger="layersearch.ranking.fulltext"):
        got = open_or_rebuild(path, BOOSTS, "s1", lambda: _docs("a", "b"), name="test index")
    assert got.how == "rebuilt" and got.damaged and got.reason is not None
    assert got.reason.startswith("corrupt")
    assert any(
        r.levelno == logging.WARNING and r.getMessage().startswith("test index ")
        for r in caplog.records
    )
    assert "building the test index (corrupt" in caplog.text
    (path / "CURRENT").write_text("")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="layersearch.ranking.fulltext"):
        quiet = open_or_rebuild(path, BOOSTS, "s1", lambda: _docs("a"), warn=False)
    assert quiet.damaged
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
