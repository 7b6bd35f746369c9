"""Physical names, browsing and the plan's join reads on each backend."""

from __future__ import annotations

from layersearch.api import Layersearch
from tests.support import MINI, MODELS


def test_physical_names_and_browsing(location: str) -> None:
    with Layersearch(location) as ls:
        ls.load(MODELS)
        assert ls.inspect(["shop.orders"]).entities[0].physical == "analytics.fct_orders"
        first = ls.browse.list_layer(("model",), datasource="shop", limit=2)
        rest = ls.browse.list_layer(("model",), datasource="shop", offset=2, limit=100)
        ids = [i.id for i in first.items + rest.items]
        assert ids == sorted(ids) and first.next_offset == 2 and rest.next_offset is None
        assert first.total == len(ids) and "shop.orders" in ids
        d = ls.browse.describe_model("shop.orders")
        assert any(j.target == "shop.customers" and j.keys for j in d.joins)


def test_joins_to_a_model(location: str) -> None:
    with Layersearch(location) as ls:
        ls.load(MINI)
        assert [(e.src, e.dst) for e in ls.store.joins_to("shop.customers")] == [
            ("shop.orders", "shop.customers")
        ]
        plan = ls.search(question="total revenue by store name").plan
        assert plan is not None and plan.joins[0].keys == [
            ("shop.orders.store_id", "shop.stores.id")
        ]
