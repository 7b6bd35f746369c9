"""A parsed data file kept in the user's cache directory (``ranking.diskcache``): read
back instead of parsed, parsed again when its source changes, and pruned."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from layersearch.ranking import static_words
from layersearch.ranking.diskcache import KEPT, cache_dir, cached
from layersearch.ranking.static_words import read_vectors
from tests.test_static_words import _write


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "layersearch"


def _source(tmp_path: Path, text: str = "a b c") -> Path:
    path = tmp_path / "source.txt"
    path.write_text(text)
    return path


def test_a_parse_is_read_back_until_its_source_changes(tmp_path: Path, home: Path) -> None:
    source = _source(tmp_path)
    parses: list[list[str]] = []

    def parse() -> list[str]:
        parses.append(source.read_text().split())
        return parses[-1]

    first = cached("words", 1, [source], list, parse)
    assert first == ["a", "b", "c"] and first is not parses[0]  # the copy read back
    assert cache_dir() == home and len(list(home.glob("words-*.pickle"))) == 1
    assert cached("words", 1, [source], list, parse) == first and len(parses) == 1
    # another version of what is kept, or a changed source, is parsed again
    assert cached("words", 2, [source], list, parse) == first and len(parses) == 2
    source.write_text("a b c d")
    assert cached("words", 2, [source], list, parse) == ["a", "b", "c", "d"]
    assert len(parses) == 3


def test_a_bad_copy_or_an_unwritable_folder_costs_only_the_parse(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path)
    cached("words", 1, [source], list, lambda: ["a"])
    (copy,) = home.glob("words-*.pickle")
    copy.write_bytes(b"not a pickle")
    assert cached("words", 1, [source], list, lambda: ["b"]) == ["b"]
    copy.write_bytes(pickle.dumps({"a": 1}))  # a copy of another type
    assert cached("words", 1, [source], list, lambda: ["c"]) == ["c"]
    # None is returned and not kept; a missing source is the caller's error
    assert cached("other", 1, [source], list, lambda: None) is None
    assert not list(home.glob("other-*"))
    with pytest.raises(OSError):
        cached("words", 1, [tmp_path / "missing"], list, lambda: ["d"])
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert cached("words", 1, [source], list, lambda: ["e"]) == ["e"]


def test_only_the_copies_used_last_are_kept(tmp_path: Path, home: Path) -> None:
    sources = []
    for i in range(KEPT + 2):
        folder = tmp_path / f"checkout{i}"
        folder.mkdir()
        sources.append(_source(folder, str(i)))
    for i, source in enumerate(sources[: KEPT + 1]):
        cached("words", 1, [source], list, lambda s=source: s.read_text().split())
        if i == 0:
            oldest = next(home.glob("words-*.pickle"))
            os.utime(oldest, ns=(0, 0))
    # the oldest copy was pruned when the (KEPT + 1)th was written
    assert len(list(home.glob("words-*.pickle"))) == KEPT and not oldest.exists()
    # a copy read is used again: it stays when the next one is written
    second = sorted(home.glob("words-*.pickle"), key=lambda p: p.stat().st_mtime_ns)[0]
    os.utime(second, ns=(1, 1))
    assert cached("words", 1, [sources[1]], list, lambda: ["parsed again"]) == ["1"]
    cached("words", 1, [sources[-1]], list, lambda: ["new"])
    assert second.exists() and len(list(home.glob("words-*.pickle"))) == KEPT


def test_the_word_vectors_are_read_back_as_they_were_read(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = np.array([[127, 0, 0], [0, -127, 0], [90, 90, 0]], dtype=np.int8)
    base = _write(tmp_path / "v", ["alpha", "betas", "gamma"], rows)
    monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", str(base))
    read = read_vectors(base)
    reads: list[object] = []
    monkeypatch.setattr(static_words, "read_vectors", lambda b: reads.append(b) or read_vectors(b))
    for _ in range(2):
        static_words._load.cache_clear()
        sw = static_words.static_words()
        assert sw is not None and sw is not read
        assert (sw.words, sw.rows, sw.by_key, sw.floor) == (
            read.words,
            read.rows,
            read.by_key,
            read.floor,
        )
        np.testing.assert_array_equal(sw.unit([0, 1, 2]), read.unit([0, 1, 2]))
        assert sw._spaces is not read._spaces and len(sw._spaces) == 0
    assert reads == [base]  # read once, then from the cache
    assert len(list(home.glob("wordvec-*.pickle"))) == 1
    static_words._load.cache_clear()


def test_the_shipped_models_are_read_back_as_parsed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learned orders' forests and the weak-match models: a new process reads the
    cached copy, which scores as the JSON it was parsed from; a copy that cannot be
    read back costs the parse only."""
    from layersearch.plan import confidence
    from layersearch.ranking import trees

    def fresh() -> tuple[trees.Forest, dict[str, object]]:
        trees.shipped.cache_clear()
        confidence._shipped.cache_clear()
        return trees.shipped("columns"), confidence._shipped()

    try:
        fresh()
        copies = sorted(p.name.split("-")[0] for p in home.glob("*.pickle"))
        assert copies == ["forest", "weak"]
        loads: list[str] = []
        real = trees.Forest.load
        monkeypatch.setattr(trees.Forest, "load", lambda path: loads.append(path) or real(path))
        forest, models = fresh()
        assert loads == []  # (read back, not parsed)
        parsed = real(trees.LEARNED / "columns.json")
        rows = np.random.default_rng(0).uniform(-2, 30, size=(40, len(parsed.features)))
        assert np.array_equal(forest.predict(rows), parsed.predict(rows))
        for name, model in confidence.read_models().items():
            row = {f: 0.1 * (k + 1) for k, f in enumerate(model.names)}
            assert models[name].probability(row) == model.probability(row)  # type: ignore[attr-defined]
        for copy in home.glob("forest-*.pickle"):
            copy.write_bytes(b"not a pickle")
        forest, _ = fresh()
        assert len(loads) == 1 and np.array_equal(forest.predict(rows), parsed.predict(rows))
    finally:
        trees.shipped.cache_clear()
        confidence._shipped.cache_clear()
