"""The persisted entity snapshot is derived data: stale, damaged, half-written or gone, it
is rebuilt from the store without a word in the response, and answers never change."""

from __future__ import annotations

import bisect
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.entities import build_coverage
from layersearch.corpora.entities import indexes as entities_module
from layersearch.corpora.snapshot import generations as snapshot_mod
from layersearch.ranking import persist
from layersearch.ranking.coverage import CoverageIndex
from tests.support import MINI, MODELS

QUESTIONS = ["tax charged on the order", "store revenue", "customer email"]


def _answers(ls: Layersearch) -> list[list[str]]:
    out = [[h.id for h in ls.search(question=q, max_results=20).results] for q in QUESTIONS]
    out.append([h.id for h in ls.search(entities=["orders.net_revenue"]).results])
    return out


def _current(root: Path) -> Path:
    base = root / "s.duckdb.index" / "snapshot"
    return base / (base / "CURRENT").read_text().strip()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[str]]]:
    root = tmp_path_factory.mktemp("pristine")
    with Layersearch(root / "s.duckdb") as ls:
        ls.load(MINI)
        ls.save_memory("Quokka deliveries are never taxed", entities=["shop.orders"])
        expected = _answers(ls)
    assert (_current(root) / "coverage").is_dir()
    return root, expected


def _garble_arrays(sub: Path, data: bytes) -> None:
    for f in sorted((sub / "tables").glob("a*.npy"))[:3]:
        f.write_bytes(data)


def _flip_bytes(sub: Path) -> None:
    # same size, different bytes: the content hash in the marker no longer matches
    f = max((sub / "tables").glob("a*.npy"), key=lambda p: p.stat().st_size)
    raw = bytearray(f.read_bytes())
    raw[-8:] = b"\xff" * 8
    f.write_bytes(bytes(raw))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "arrays-truncated": lambda sub: _garble_arrays(sub, b""),
    "arrays-garbage": lambda sub: _garble_arrays(sub, b"\x93NUMPY garbage" * 10),
    "arrays-bytes-flipped": _flip_bytes,
    "manifest-garbage": lambda sub: (sub / "tables" / "manifest.json").write_text("{"),
    "manifest-wrong-class": lambda sub: (sub / "tables" / "manifest.json").write_text(
        (sub / "tables" / "manifest.json").read_text().replace("EntityTables", "Nope")
    ),
    "marker-garbage": lambda sub: (sub / "snapshot.json").write_text("[]"),
    "marker-other-version": lambda sub: (sub / "snapshot.json").write_text(
        json.dumps({**json.loads((sub / "snapshot.json").read_text()), "code": "old"})
    ),
    "coverage-truncated": lambda sub: [
        f.write_bytes(b"") for f in (sub / "coverage").glob("*.npy")
    ],
    "coverage-manifest-garbage": lambda sub: (sub / "coverage" / "manifest.json").write_text("x"),
    "current-points-nowhere": lambda sub: (sub.parent / "CURRENT").write_text("g-missing"),
    "current-garbage": lambda sub: (sub.parent / "CURRENT").write_text("../../etc"),
    "directory-deleted": lambda sub: shutil.rmtree(sub.parent),
    "directory-is-a-file": lambda sub: (shutil.rmtree(sub.parent), sub.parent.write_text("x")),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_snapshot_is_rebuilt_silently(
    name: str, pristine: tuple[Path, list[list[str]]], tmp_path: Path
) -> None:
    src, expected = pristine
    root = tmp_path / "copy"
    shutil.copytree(src, root)
    DAMAGE[name](_current(root))
    with Layersearch(root / "s.duckdb") as ls:
        assert _answers(ls) == expected
        warnings = [w for q in QUESTIONS for w in ls.search(question=q).warnings]
        assert warnings == [], "the snapshot is rebuilt silently"
        sub = ls.corpus().snapshot.dir  # type: ignore[union-attr]
        assert sub is not None
    # the rebuilt snapshot is good for the next process: it maps it, rebuilding nothing
    with Layersearch(root / "s.duckdb") as ls:
        assert _answers(ls) == expected
        assert ls.corpus().snapshot.dir == sub  # type: ignore[union-attr]
        assert (sub / "coverage" / "coverage.json").is_file()


def test_half_written_snapshot_is_never_used(
    pristine: tuple[Path, list[list[str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, expected = pristine
    root = tmp_path / "copy"
    shutil.copytree(src, root)
    # a load changes the entities; the process dies while writing the new snapshot
    original = persist.save_object

    def crash(obj: object, directory: Path) -> dict[str, int]:
        directory.mkdir(parents=True)
        (directory / "a0.npy").write_bytes(b"\x93NUMPY half")
        raise KeyboardInterrupt("killed mid-write")  # BaseException: nothing catches it

    monkeypatch.setattr(snapshot_mod, "save_object", crash)
    with Layersearch(root / "s.duckdb") as ls, pytest.raises(KeyboardInterrupt):
        ls.load(MODELS)
    monkeypatch.setattr(snapshot_mod, "save_object", original)
    with Layersearch(root / "s.duckdb") as ls:
        # the half-written directory is ignored: the store's new content is served
        got = ls.search(question="monthly revenue by store")
        assert got.warnings == []
        assert {"finance", "marketing", "shop"} <= set(ls.corpus().datasources)
        assert ls.corpus().snapshot.dir == _current(root)  # type: ignore[union-attr]
        assert not [p for p in _current(root).parent.iterdir() if p.name.endswith("half")]


def test_unwritable_snapshot_stays_in_memory(
    pristine: tuple[Path, list[list[str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, expected = pristine
    root = tmp_path / "copy"
    shutil.copytree(src, root)
    shutil.rmtree(_current(root).parent)

    def refuse(obj: object, directory: Path) -> dict[str, int]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_mod, "save_object", refuse)
    with Layersearch(root / "s.duckdb") as ls:
        assert _answers(ls) == expected
        assert ls.corpus().snapshot.dir is None  # type: ignore[union-attr]


def test_memory_writes_restamp_and_entity_writes_replace(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MINI)
    ls.search(question="order tax")
    first = _current(tmp_path)
    m = ls.save_memory("Refunds are booked on the day they are paid", entities=["shop.orders"])
    ls.forget_memory(m.id)
    other = Layersearch(tmp_path / "s.duckdb")  # another process saves a memory too
    note = other.save_memory("Quokka names are unique per region", entities=["shop.stores"])
    assert _current(tmp_path) == first, "memory writes keep the entity snapshot"
    marker = json.loads((first / "snapshot.json").read_text())
    assert marker["stamp"] == str(ls.store.generation())
    assert ls.search(question="quokka").results[0].id == note.id
    assert ls.corpus().snapshot.dir == first  # type: ignore[union-attr]
    # a new process after the memory writes maps it as it is, schema index included
    again = Layersearch(tmp_path / "s.duckdb")
    assert again.corpus().snapshot.dir == first  # type: ignore[union-attr]
    assert (first / "coverage").is_dir()
    # changed entities: a new directory, and every process sees the change
    ls.load(MODELS)
    assert _current(tmp_path) != first
    assert "finance" in again.corpus().datasources
    assert again.corpus().snapshot.dir == _current(tmp_path)  # type: ignore[union-attr]
    for x in (ls, other, again):
        x.close()


def test_stale_stamp_with_same_entities_is_restamped(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        ls.search(question="order tax")
        first = _current(tmp_path)
        # a write that goes around this process's memory path (as `embed` does)
        bulk = ls.store.add_memory("Wombat note", None, ["shop.orders"], None)
        assert ls.search(question="wombat").results[0].id == bulk.id
    assert _current(tmp_path) == first
    assert (first / "coverage").is_dir()


# -- the generic persistence ------------------------------------------------------------------


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        nan = a.dtype.kind == "f"
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, nan)
    if isinstance(a, dict):
        return dict(a) == dict(b)  # type: ignore[call-overload]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if hasattr(a, "__dict__"):
        return all(_same(v, getattr(b, k)) for k, v in vars(a).items())
    return a == b


def test_every_coverage_attribute_survives_a_round_trip(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
        corpus = ls.corpus()
        built = build_coverage(corpus.entities, corpus.edges_out)
    # an attribute someone adds later is persisted without touching the persistence code
    built.added_later = [np.arange(3), np.arange(5, dtype=np.float32)]  # type: ignore[attr-defined]
    built.per_term = [(np.arange(i), np.ones(i)) for i in range(300)]  # type: ignore[attr-defined]
    built.by_name = {f"t{i}": i for i in range(100)}  # type: ignore[attr-defined]
    persist.save_object(built, tmp_path / "cov")
    loaded = persist.load_object(tmp_path / "cov")
    assert isinstance(loaded, CoverageIndex)
    assert set(vars(loaded)) == set(vars(built))
    for name, value in vars(built).items():
        assert _same(value, getattr(loaded, name)), name
    for q in ["monthly revenue by store", "customer email", "campaign spend", "zzz"]:
        for scope in (None, "shop", "finance"):
            assert loaded.search(q, 200, scope=scope) == built.search(q, 200, scope=scope)


def test_a_string_map_iterates_its_items_as_the_dict_it_was_built_from() -> None:
    d = {f"term{i}": (i * 7) % 1000 for i in range(1000)} | {"café": 3, "日本": 4, "": 5}
    m = persist.StrIntMap.build(d)
    assert list(m.items()) == list(d.items())  # keys beside values, in the built order
    assert list(m.values()) == list(d.values()) and list(m) == list(d)
    assert ("café", 3) in m.items() and ("café", 4) not in m.items()
    assert m["日本"] == 4 and m.get("missing", -1) == -1 and len(m.items()) == len(d)


def test_an_attribute_it_cannot_save_keeps_the_index_in_memory(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        corpus = ls.corpus()
        built = build_coverage(corpus.entities, corpus.edges_out)
        built.opaque = object()  # type: ignore[attr-defined]
        with pytest.raises(persist.PersistError):
            persist.save_object(built, tmp_path / "cov")
        assert corpus.snapshot is not None
        snap = corpus.snapshot
        # The load published the index with the snapshot; take it away to build anew.
        assert snap.dir is not None and (snap.dir / "coverage").exists()
        shutil.rmtree(snap.dir / "coverage")
        got = snap.coverage(lambda: built)
        assert got is built
        assert not (snap.dir / "coverage").exists()  # type: ignore[operator]
        assert ls.search(question="order tax").results


def test_a_load_publishes_the_schema_index_so_no_search_builds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        snap = ls.corpus().snapshot
        assert snap is not None and snap.dir is not None
        assert (snap.dir / "coverage").exists()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the schema index was built again after the load")

    # Another process (here: another instance) searching after the load reads it back.
    monkeypatch.setattr(entities_module, "build_coverage", refuse)
    with Layersearch(tmp_path / "s.duckdb", create=False) as ls:
        assert ls.search(question="order tax").results


def test_string_tables_and_hash_index() -> None:
    words = ["", "a", "é", "shop.orders", "Shop.Orders", "x" * 300, "\U0001f389", "a.b.c"]
    table = persist.StringTable.build(words)
    assert list(table) == words and [table[i] for i in range(len(words))] == words
    assert table[-1] == "a.b.c" and table[1:3] == ["a", "é"]
    index = persist.HashIndex.build(table)
    assert [index.find(w) for w in words] == list(range(len(words)))
    assert index.find("shop.order") == -1 and index.find("SHOP.ORDERS") == -1
    many = persist.StringTable.build(f"k{i}" for i in range(5000))
    big = persist.HashIndex.build(many)
    assert all(big.find(f"k{i}") == i for i in range(0, 5000, 7))
    assert big.find("k5000") == -1


def test_a_sorted_string_table_bisects_as_the_list_does() -> None:
    """``sorted_position`` over a table compares bytes: the order of the strings, for
    every key, held or not, before the first and after the last."""
    words = sorted(
        ["", "a", "a.b", "a.b.c", "a/b", "b", "é", "ê.x", "z" * 40, "\U0001f389", "A", "ab"]
    )
    table = persist.StringTable.build(words)
    probes = [*words, "a.", "a/", "aa", "é.", "zz", "\uffff", "\ud800", "\U0001f38a", "0"]
    for key in probes:
        want = bisect.bisect_left(words, key)
        assert persist.sorted_position(table, key) == want, key
        assert persist.sorted_position(words, key) == want, key
    assert persist.sorted_position(persist.StringTable.build([]), "a") == 0


def test_content_hash_ignores_the_order_rows_come_in() -> None:
    import random

    from layersearch.corpora.snapshot import EntityTables
    from layersearch.semantic.model import EdgeRecord, Entity

    ents = [Entity(id=f"d.m{i}", kind="model", name=f"m{i}", datasource="d") for i in range(20)]
    ents.append(Entity(id="d", kind="datasource", name="d", datasource="d"))
    edges = [EdgeRecord("d.m1", "d.m2", "JOINS", {"source_columns": [c]}) for c in "abcde"]
    edges += [EdgeRecord("d", e.id, "CONTAINS") for e in ents[:-1]]
    first = EntityTables.build(ents, edges)
    rng = random.Random(0)
    for _ in range(5):
        rng.shuffle(ents)
        rng.shuffle(edges)
        again = EntityTables.build(ents, edges)
        assert again.content == first.content
        assert list(again.rows) == list(first.rows)
    edges[0] = EdgeRecord(edges[0].src, edges[0].dst, edges[0].type, {"other": 1})
    assert EntityTables.build(ents, edges).content != first.content


def test_edges_of_one_type_decode_like_the_filtered_list() -> None:
    """``EdgeMap.of_type`` skips rows of other types undecoded; a target whose name holds
    the type's text must not fool it, and a cached full list gives the same answer."""
    from layersearch.corpora.snapshot import EdgeMap, EntityTables
    from layersearch.semantic.model import EdgeRecord, Entity

    tricky = 'd.m,"JOINS",x'
    ids = ["d", "d.a", "d.b", tricky]
    ents = [Entity(id=i, kind="model", name=i, datasource="d") for i in ids]
    edges = [EdgeRecord("d.a", "d.b", "JOINS", {"source_columns": ["k"]})]
    edges += [EdgeRecord("d.a", tricky, "CONTAINS"), EdgeRecord("d.a", "d.b", "MENTIONS")]
    edges += [EdgeRecord("d", i, "CONTAINS") for i in ids[1:]]
    edges.append(EdgeRecord("d.b", tricky, "JOINS"))
    fresh = EdgeMap(EntityTables.build(ents, edges))
    for src in [*ids, "missing"]:
        for typ in ("JOINS", "CONTAINS", "MENTIONS"):
            want = [e for e in fresh.get(src, []) if e.type == typ]
            assert EdgeMap(EntityTables.build(ents, edges)).of_type(src, typ) == want
            assert fresh.of_type(src, typ) == want  # from the cached full list
    joins = EdgeMap(EntityTables.build(ents, edges)).of_type("d.a", "JOINS")
    assert [(e.dst, e.props) for e in joins] == [("d.b", {"source_columns": ["k"]})]


def test_eager_arrays_are_read_into_memory_the_rest_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class's ``__eager__`` arrays come back as plain in-memory arrays (searches binary
    search them), every other large array as a copy-on-write mapping of its file."""
    from layersearch.corpora.snapshot import EntityTables
    from layersearch.semantic.model import Entity

    monkeypatch.setattr(persist, "_MMAP_MIN_BYTES", 0)
    ents = [Entity(id=f"d.m{i}", kind="model", name=f"m{i}", datasource="d") for i in range(50)]
    tables = EntityTables.build(ents, [])
    persist.save_object(tables, tmp_path / "t")
    maps: list[object] = []
    back = persist.load_object(tmp_path / "t", maps=maps)
    assert maps, "large arrays are mapped"
    for name in EntityTables.__eager__:
        arr = getattr(back, name)
        assert np.array_equal(arr, getattr(tables, name))
        assert not isinstance(arr.base, np.memmap) and arr.flags.writeable
    assert isinstance(back.kind_codes.base, np.memmap)
    assert list(back.ids) == list(tables.ids)
