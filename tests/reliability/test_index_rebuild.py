"""The tantivy index is derived data: damaged or gone, it is rebuilt, with a warning when damaged."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.ranking.fulltext import FullTextIndex
from tests.support import MINI


def _garble(ent: Path, data: bytes) -> None:
    for f in ent.iterdir():
        if f.suffix in (".idx", ".term", ".pos", ".store", ".fast", ".fieldnorm"):
            f.write_bytes(data)


def _replace_with_file(ent: Path) -> None:
    shutil.rmtree(ent)
    ent.write_text("not a directory")


DAMAGE: dict[str, tuple[Callable[[Path], None], bool]] = {
    # name: (damage the entities index directory, a warning is expected)
    "meta-json-garbage": (lambda ent: (ent / "meta.json").write_text("garbage"), True),
    "segments-garbage": (lambda ent: _garble(ent, b"\x00garbage" * 10), True),
    "segments-truncated": (lambda ent: _garble(ent, b""), True),
    "marker-garbage": (lambda ent: (ent / "layersearch-index.json").write_text("{"), True),
    "directory-is-a-file": (_replace_with_file, True),
    # Deleted (or a store copied without it): rebuilt, and said once.
    "directory-deleted": (shutil.rmtree, True),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("pristine")
    with Layersearch(root / "s.duckdb") as ls:
        ls.load(MINI)
        m = ls.save_memory("Quokka deliveries are never taxed", entities=["shop.orders"])
        expected = [h.id for h in ls.search(question="quokka", max_results=20).results]
    assert expected[0] == m.id
    return root, expected


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_index_is_rebuilt(
    name: str, pristine: tuple[Path, list[str]], tmp_path: Path
) -> None:
    src, expected = pristine
    root = tmp_path / "copy"
    shutil.copytree(src, root)
    damage, warns = DAMAGE[name]
    base = root / "s.duckdb.index" / "entities"
    if name.startswith("directory"):
        damage(base)
    else:
        current = FullTextIndex.current_dir(base)
        assert current is not None
        damage(current)
    with Layersearch(root / "s.duckdb") as ls:
        resp = ls.search(question="quokka", max_results=20)
        assert [h.id for h in resp.results] == expected
        rebuilt = [w for w in resp.warnings if "rebuilt it from the store" in w]
        assert bool(rebuilt) == warns, resp.warnings
        # The warning is said once, not on every search.
        assert not any("rebuilt" in w for w in ls.search(question="tax").warnings)
    # and the rebuilt index is good for the next process without another rebuild
    with Layersearch(root / "s.duckdb") as ls:
        assert not any("rebuilt" in w for w in ls.search(question="quokka").warnings)
