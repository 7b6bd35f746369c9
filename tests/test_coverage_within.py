"""A datasource's schema index cut from the catalog-wide one (``coverage_cut.within``) is
the index built from that datasource's nodes: every array, term id and bridge the same."""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np
import pytest

from layersearch.api import Layersearch
from layersearch.corpora.entities.config import DEFAULT_INDEX
from layersearch.corpora.entities.coverage import coverage_of
from layersearch.ranking.coverage import CoverageIndex, CoverageNode
from layersearch.ranking.coverage_cut import within
from layersearch.ranking.persist import RaggedList, StringTable
from tests.support import MODELS, ROOT
from tests.test_coverage_equivalence import _schema


def _same(a: Any, b: Any, path: str = "index") -> None:
    """``a`` and ``b`` hold the same state: arrays equal with their dtypes, mappings
    equal in the same order, nested index objects alike."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype), path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, dict) or hasattr(a, "items"):
        assert list(dict(a).items()) == list(dict(b).items()), path
    elif isinstance(a, list | tuple | StringTable | RaggedList):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif hasattr(a, "__dict__"):
        assert set(vars(a)) == set(vars(b)), path
        for k in vars(a):
            _same(vars(a)[k], vars(b)[k], f"{path}.{k}")
    else:
        assert a == b, path


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bridges", [False, True])
def test_a_group_cut_from_the_wide_index_is_the_group_built_alone(seed: int, bridges: bool) -> None:
    nodes, links, keys = _schema(seed)
    weights = DEFAULT_INDEX.field_weights()
    wide = CoverageIndex(nodes, weights, links, keys, bridges=bridges)
    groups = sorted(n.id for n in nodes if n.level == "group")
    for g in groups:
        mine = [n for n in nodes if n.id == g or n.id.startswith(g + ".")]
        alone = CoverageIndex(mine, weights, links, keys, bridges=wide if bridges else False)
        cut = within(wide, g)  # with the wide index's bridges, or none
        _same(alone, cut, g)
        text = "order amount by customer city"
        assert cut.search(text, 20) == alone.search(text, 20)


def _bridges_for_reference(
    wide: CoverageIndex, vocab: dict[str, int]
) -> dict[str, list[tuple[int, float]]]:
    """The question-side bridges a narrower vocabulary keeps, read a key at a time (the
    readable form :func:`coverage_cut.bridges_for` computes in arrays)."""
    mine = {j: vocab[t] for t in vocab if (j := wide.vocab.get(t)) is not None}
    out: dict[str, list[tuple[int, float]]] = {}
    for key, row in sorted(wide.bridge_row.items(), key=lambda kv: kv[1]):
        lo, hi = int(wide.bridge_ptr[row]), int(wide.bridge_ptr[row + 1])
        pairs = zip(wide.bridge_term[lo:hi].tolist(), wide.bridge_w[lo:hi].tolist(), strict=True)
        found = [(mine[j], w) for j, w in pairs if j in mine]
        if found:
            out[key] = sorted(found)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_bridges_a_cut_keeps_are_those_read_a_key_at_a_time(seed: int) -> None:
    from layersearch.ranking.coverage_cut import bridges_for

    nodes, links, keys = _schema(seed)
    wide = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), links, keys, bridges=True)
    assert len(wide.bridge_term) > 100  # (enough bridges to mean something)
    rng = np.random.default_rng(seed)
    terms = sorted(wide.vocab)
    for share in (0.0, 0.1, 0.5, 1.0):
        picked = [t for t in terms if rng.random() < share]
        vocab = {t: k for k, t in enumerate(rng.permutation(picked).tolist())}
        _, (names, ptr, term, weight) = bridges_for(wide, vocab)
        got = {
            name: list(
                zip(
                    term[ptr[i] : ptr[i + 1]].tolist(),
                    weight[ptr[i] : ptr[i + 1]].tolist(),
                    strict=True,
                )
            )
            for i, name in enumerate(names)
        }
        expected = _bridges_for_reference(wide, vocab)
        assert list(got.items()) == list(expected.items())
        assert (ptr.dtype, term.dtype, weight.dtype) == (np.int64, np.int64, np.float64)


def test_only_the_group_and_the_nodes_under_it_are_cut() -> None:
    weights = DEFAULT_INDEX.field_weights()
    nodes = [
        CoverageNode("shop", "group", None, {"name": "shop"}),
        CoverageNode("shop.orders", "table", "shop", {"name": "orders"}),
        CoverageNode("shop.orders.amount", "leaf", "shop.orders", {"name": "amount"}),
        # ids that share the prefix without the dot sort around the group's
        CoverageNode("shop-eu", "group", None, {"name": "shop eu"}),
        CoverageNode("shop-eu.orders", "table", "shop-eu", {"name": "orders"}),
        CoverageNode("shops", "group", None, {"name": "shops"}),
        CoverageNode("shops.stock", "table", "shops", {"name": "stock"}),
    ]
    wide = CoverageIndex(nodes, weights, bridges=True)
    assert within(wide, "shop").ids == ["shop", "shop.orders", "shop.orders.amount"]
    assert within(wide, "shops").ids == ["shops", "shops.stock"]
    empty = within(wide, "nowhere")
    assert empty.ids == [] and empty.search("orders amount", 10) == []


@pytest.mark.parametrize(
    "source", [MODELS, ROOT / "examples" / "spider" / "tables.json"], ids=["models", "spider"]
)
def test_a_stores_scoped_index_is_the_one_its_entities_build(source: Any) -> None:
    # the store's catalog-wide index is read back from its files (persisted containers)
    with Layersearch(":memory:") as ls:
        ls.load(source)
        corpus = ls.corpus()
        wide = corpus.coverage()
        datasources = [e.id for e in corpus.entities.values() if e.kind == "datasource"]
        assert datasources
        for ds in datasources:
            ents = {i: corpus.entities[i] for i in corpus.entities.visible_in_scope(ds)}
            edges = chain.from_iterable(corpus.edges_out.get(k, []) for k in ents)
            built = coverage_of(ents, edges, bridges_from=wide, config=corpus.index_config)
            _same(built, corpus.coverage(ds), ds)


def test_a_datasources_ids_follow_the_memories_saved_and_forgotten() -> None:
    with Layersearch(":memory:") as ls:
        ls.load(MODELS)
        before = ls.corpus().scope_ids("shop")
        assert isinstance(before, frozenset) and "shop.orders" in before
        assert ls.corpus().scope_ids("shop") is before  # kept: one object per datasource
        m = ls.save_memory("refunds settle in three days", entities=["shop.refunds"])
        now = ls.corpus().scope_ids("shop")
        assert now == before | {m.id} and m.id not in ls.corpus().scope_ids("finance")
        ls.forget_memory(m.id)
        assert ls.corpus().scope_ids("shop") == before


def test_a_nodes_own_terms_are_those_of_its_name_label_and_description(tmp_path: Any) -> None:
    """``coverage_cut.own_terms`` reads off the forward index what analysing the
    entity's own fields gives (the learned orders' matched words), and no term only its
    values or formula hold."""
    from layersearch.corpora.entities.matched import own_terms as analysed_own_terms
    from layersearch.ranking.coverage_cut import own_terms

    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(ROOT / "fixtures" / "mini")
        corpus = ls.entities.corpus()
        wide = corpus.coverage()
        valued = 0
        for index in (wide, corpus.coverage("shop")):
            for node_id in index._ids_of(np.arange(len(index.ids))):
                e = corpus.entities[node_id]
                mine = own_terms(index, node_id)
                assert mine == frozenset(analysed_own_terms(index, e)), node_id
                i = index._ids_of(np.arange(len(index.ids))).index(node_id)
                every = set(index.fwd_term[index.fwd_ptr[i] : index.fwd_ptr[i + 1]].tolist())
                assert mine <= every
                valued += bool(e.values) and mine < every
        assert valued  # a column's values give terms that are not its own
        assert own_terms(wide, "shop.no_such_model") is None
