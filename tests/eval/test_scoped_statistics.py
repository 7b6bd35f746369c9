"""A search scoped to one datasource ranks with that datasource's own term statistics."""

from __future__ import annotations

from pathlib import Path

from layersearch import Layersearch

HERE = Path(__file__).resolve()
MINI = HERE.parents[2] / "fixtures" / "mini"


def test_scoped_index_holds_only_its_datasource_and_is_cached() -> None:
    with Layersearch(":memory:") as ls:
        ls.load(str(MINI))
        corpus = ls.corpus()
        shop = corpus.coverage("shop")
        assert shop is corpus.coverage("shop")
        assert shop is not corpus.coverage()
        assert shop.ids and all(i == "shop" or i.startswith("shop.") for i in shop.ids)
        assert "shop.orders" in shop.ids and "crm.deals" not in shop.ids
        # statistics differ: idf over one datasource's nodes, not the catalog's
        j_all = corpus.coverage().vocab["status"]
        j_shop = shop.vocab["status"]
        assert corpus.coverage().idf[j_all] != shop.idf[j_shop]


def test_scoped_search_ranks_with_the_scoped_index() -> None:
    with Layersearch(":memory:") as ls:
        ls.load(str(MINI))
        corpus = ls.corpus()
        question = "order status and tax paid per store"
        resp = ls.search(question=question, datasource="shop", channels=["fulltext"], explain=True)
        schema = [
            h.id for h in resp.results if any(c.channel == "schema" for c in h.explanation or [])
        ]
        expected = [i for i, _ in corpus.coverage("shop").search(question, 200)]
        # the hits the schema channel ranked, in the scoped index's order (join keys aside)
        assert schema and set(schema) <= set(expected)
        assert all(i.startswith("shop.") for i in schema)
        # (memories rank in their own list: the first entity is the schema channel's first)
        assert [h.id for h in resp.results if h.kind != "memory"][0] == expected[0]
