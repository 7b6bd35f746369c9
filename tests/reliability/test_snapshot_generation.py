"""A snapshot describes one store generation: its memories, its entity tables and its
full-text searcher, even when another writer commits while it is being taken; and the
tables read from the store in batches are the tables read whole."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layersearch import Layersearch
from layersearch.corpora.snapshot import EntityTables, changed_entities, tables_from_store
from layersearch.ranking import fulltext as fulltext_mod
from layersearch.semantic.model import EdgeRecord, Entity
from tests.support import MINI


def _indexed_docs(ls: Layersearch) -> int:
    corpus = ls.corpus()
    visible = sum(not e.hidden for e in corpus.entities.values())
    return visible + len(corpus.memories)


class _HookedTantivy:
    """The tantivy module, except that ``Index.open`` runs ``before`` once first."""

    def __init__(self, real: Any, before: Any) -> None:
        self._real = real
        hooked = self

        class Index:
            def __new__(cls, *args: Any, **kwargs: Any) -> Any:
                return real.Index(*args, **kwargs)

            @staticmethod
            def open(path: str) -> Any:
                if hooked.before is not None:
                    run, hooked.before = hooked.before, None
                    run()
                return real.Index.open(path)

        self.Index = Index
        self.before: Any = before

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_write_while_the_index_opens_is_never_half_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MINI)
    reader, writer = Layersearch(store), Layersearch(store)
    reader.corpus()
    writer.save_memory("first note about quokkas", entities=["shop.orders"])
    late: list[str] = []

    def commit_in_between() -> None:
        # The reader has read the memories and checked the index marker; this lands
        # before it opens the index: store, then index (committed, marker re-stamped).
        late.append(writer.save_memory("late note about wombats", entities=["shop.orders"]).id)

    monkeypatch.setattr(
        fulltext_mod, "tantivy", _HookedTantivy(fulltext_mod.tantivy, commit_in_between)
    )
    corpus = reader.corpus()
    assert late, "the interleaving did not happen"
    # Memories and searcher agree: the late memory is in both, or (not here) in neither.
    assert late[0] in corpus.memories
    assert corpus.fulltext.num_docs == _indexed_docs(reader)
    hits = reader.search(question="wombats", channels=["fulltext"]).results
    assert [h.id for h in hits] == late
    assert reader.entities._gen == reader.store.generation()
    reader.close()
    writer.close()


def test_the_generation_file_lagging_the_database_is_waited_for(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MINI)
    gen_file = tmp_path / "s.duckdb.gen"
    # As if a writer died between its commit and publishing the generation.
    gen_file.write_text(str(int(gen_file.read_text()) - 1))
    with Layersearch(store) as ls:
        corpus = ls.corpus()
        assert ls.entities._gen == ls.store.stored_generation() == int(gen_file.read_text())
        assert corpus.fulltext.num_docs == _indexed_docs(ls)


def test_batches_give_the_tables_of_the_whole_rows(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        store = ls.store
        whole = EntityTables.build(store.load_entities(), store.load_edges())
        for size in (1, 2, 3, 7):
            streamed = EntityTables.from_batches(
                store.iter_entities(batch=size), store.iter_edges(batch=size)
            )
            assert streamed is not None
            streamed.complete()
            assert streamed.content == whole.content
            for name in ("ids", "rows", "edge_rows"):
                assert list(getattr(streamed, name)) == list(getattr(whole, name))
            assert list(streamed.edge_src.keys) == list(whole.edge_src.keys)
            assert streamed.edge_ptr.tolist() == whole.edge_ptr.tolist()
            assert streamed.kind_codes.tolist() == whole.kind_codes.tolist()
            assert streamed.hidden.tolist() == whole.hidden.tolist()
            assert dict(streamed.lower) == dict(whole.lower)
            assert streamed.datasources == whole.datasources
        assert tables_from_store(store).content == whole.content


def test_batches_out_of_order_are_refused() -> None:
    a = Entity(id="d.a", kind="model", name="a", datasource="d")
    b = Entity(id="d.b", kind="model", name="b", datasource="d")
    assert EntityTables.from_batches([[b], [a]], []) is None
    assert EntityTables.from_batches([[a], [a]], []) is None
    late = [EdgeRecord("d.a", "d.b", "JOINS")], [EdgeRecord("d", "d.a", "CONTAINS")]
    assert EntityTables.from_batches([[a, b]], late) is None
    # Within one batch, any order: it is sorted.
    assert EntityTables.from_batches([[b, a]], [[*late[0], *late[1]]]) is not None


def test_changed_entities_matches_comparing_documents() -> None:
    rng = random.Random(3)

    def ents(variant: int) -> list[Entity]:
        out = []
        for i in range(60):
            if rng.random() < 0.2:
                continue
            out.append(
                Entity(
                    id=f"d.m{i:02d}",
                    kind="model",
                    name=f"m{i}",
                    datasource="d",
                    description=f"v{variant}" if rng.random() < 0.3 else None,
                    hidden=rng.random() < 0.2,
                )
            )
        return out

    for _ in range(20):
        old_ents, new_ents = ents(1), ents(2)
        old, new = EntityTables.build(old_ents, []), EntityTables.build(new_ents, [])
        stale, fresh = changed_entities(old, new)
        before = {e.id: e for e in old_ents if not e.hidden}
        after = {e.id: e for e in new_ents if not e.hidden}
        assert set(stale) == {i for i, e in before.items() if after.get(i) != e}
        assert {new.ids[int(j)] for j in fresh} == {
            i for i, e in after.items() if before.get(i) != e
        }
        assert isinstance(fresh, np.ndarray)
    empty = EntityTables.build([], [])
    stale, fresh = changed_entities(empty, EntityTables.build(new_ents, []))
    assert stale == [] and len(fresh) == sum(not e.hidden for e in new_ents)


def test_the_api_names_the_dense_corpus_as_the_dense_module_does() -> None:
    from layersearch import api
    from layersearch.corpora import dense

    assert api.ENTITY_CORPUS == dense.ENTITY_CORPUS
