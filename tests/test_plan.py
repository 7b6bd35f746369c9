"""The query plan of a grouped question: the split, the choices made by the layer's own
search, the join path with keys, nothing invented without a grouping; CLI and MCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from layersearch.api import Layersearch
from layersearch.cli import main
from layersearch.plan import answer, confidence
from layersearch.plan.planner import Planner, split_question
from layersearch.types import Hit
from tests.support import MINI


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with Layersearch(tmp_path_factory.mktemp("plan") / "s.duckdb") as ls:
        ls.load(MINI)
        yield ls


def test_split_finds_the_measure_the_groupings_and_the_grain() -> None:
    parts = split_question("total claim amount by state last quarter")
    assert parts is not None
    assert (parts.measure, parts.groups) == ("total claim amount", ["state"])
    assert (parts.grain, parts.grain_words) == ("quarter", "last quarter")
    parts = split_question("number of orders by customer for each store")
    assert parts is not None and parts.groups == ["customer for", "store"]
    parts = split_question("monthly revenue")
    assert parts is not None and parts.groups == [] and parts.grain == "month"
    assert split_question("how many orders were refunded") is None
    assert split_question("by store") is None  # a grouping of nothing


def test_a_grouped_question_gets_measure_dimension_and_join_keys(mini: Layersearch) -> None:
    plan = mini.search(question="total revenue by store name").plan
    assert plan is not None
    assert [m.id for m in plan.measures] == ["shop.orders.total_revenue"]
    assert plan.measures[0].words == "total revenue"
    assert [d.id for d in plan.dimensions] == ["shop.stores.store_name"]
    assert plan.dimensions[0].words == "store name"
    assert plan.models == ["shop.orders", "shop.stores"]
    assert [(j.source, j.target, j.keys) for j in plan.joins] == [
        ("shop.orders", "shop.stores", [("shop.orders.store_id", "shop.stores.id")])
    ]
    assert plan.time is None and plan.measures[0].alternatives is None


def test_the_time_grain_names_a_date_of_the_measures_model(mini: Layersearch) -> None:
    plan = mini.search(question="order count per month", explain=True).plan
    assert plan is not None and plan.time is not None
    assert plan.time.grain == "month" and plan.time.words == "per month"
    assert plan.time.dimension == "shop.orders.ordered_at"
    assert plan.measures[0].alternatives  # explain: the runners-up


def test_no_grouping_no_plan(mini: Layersearch) -> None:
    resp = mini.search(question="how much tax was paid on orders")
    assert resp.plan is None
    assert "plan" not in json.loads(resp.model_dump_json())
    assert mini.search(entities=["shop.orders"]).plan is None


def test_the_plan_does_not_change_the_ranking(mini: Layersearch) -> None:
    with_plan = mini.search(question="total revenue by store name")
    plain = mini.entities.search(question="total revenue by store name")
    assert [h.id for h in with_plan.results] == [h.id for h in plain.results]


def test_cli_shows_the_plan(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["--store", store, "load", str(MINI)]).exit_code == 0
    res = runner.invoke(main, ["--store", store, "search", "total revenue by store name"])
    assert res.exit_code == 0, res.output
    assert "plan" in res.stdout and "shop.orders.store_id = shop.stores.id" in res.stdout
    explained = runner.invoke(
        main, ["--store", store, "search", "total revenue by store name", "--explain"]
    )
    assert '"store name"' in explained.stdout
    res = runner.invoke(main, ["--store", store, "search", "total revenue by store", "--json"])
    assert json.loads(res.stdout)["plan"]["measures"][0]["id"] == "shop.orders.total_revenue"


@pytest.mark.anyio
async def test_mcp_search_returns_the_plan(mini: Layersearch) -> None:
    from mcp import Client

    from layersearch.server import create_server

    async with Client(create_server(api=mini)) as client:
        res = await client.call_tool("search", {"question": "total revenue by store name"})
    plan = res.structured_content["plan"]
    assert plan["dimensions"][0]["id"] == "shop.stores.store_name"
    assert plan["joins"][0]["keys"] == [["shop.orders.store_id", "shop.stores.id"]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_parts_a_plan_searches_are_embedded_ahead(tmp_path: Path) -> None:
    """With a model, the question starts embedding with its search; the plan parts its
    hits do not answer start together before the plan searches them; a plain question or
    a lexical request starts nothing more."""
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        started: list[list[str]] = []
        real = ls.entities.vectors.prefetch
        ls.entities.vectors.prefetch = lambda texts: (started.append(list(texts)), real(texts))  # type: ignore[method-assign]
        searched: list[str | None] = []
        search = ls.entities.search
        ls.entities.search = lambda req, **kw: (searched.append(req.question), search(req, **kw))[1]  # type: ignore[method-assign]
        question = "total revenue by customer segment per month"
        resp = ls.search(question=question)
        assert resp.plan is not None
        assert started[0] == [question] and searched[0] == question
        assert "customer segment" in searched[1:]  # no hit's name holds both words
        assert started[1] == searched[1:]  # all ahead, in one go
        assert all(t == [q] for t, q in zip(started[2:], searched[1:], strict=True))  # (theirs)
        started.clear()
        ls.search(question="total revenue", channels=["vector"])
        ls.search(question="total revenue by store", channels=["fulltext"])
        assert all(len(t) == 1 for t in started)  # only the entity search's own question


def _counting_planner(mini: Layersearch) -> tuple[Planner, list[tuple[str, str | None]]]:
    calls: list[tuple[str, str | None]] = []

    def search(text: str, datasource: str | None) -> list[Hit]:
        calls.append((text, datasource))
        return mini.search(question=text, datasource=datasource, max_results=30).results

    return Planner(mini.entities.corpus(), search), calls


def test_parts_the_questions_hits_hold_are_not_searched_again(mini: Layersearch) -> None:
    question = "total revenue by store name"
    planner, calls = _counting_planner(mini)
    first = mini.search(question=question).results
    plan = planner.plan(question, None, explain=True, first=first)
    assert calls == []  # both parts read from the question's own hits
    assert plan is not None and plan.measures[0].id == "shop.orders.total_revenue"
    assert [d.id for d in plan.dimensions] == ["shop.stores.store_name"]
    assert plan.measures[0].alternatives  # the question's other leaves
    assert plan == mini.search(question=question, explain=True).plan


def test_a_part_no_hit_holds_is_searched_in_the_best_hits_datasource(mini: Layersearch) -> None:
    planner, calls = _counting_planner(mini)
    first = mini.search(question="revenue by customer segment").results
    plan = planner.plan("revenue by customer segment", None, explain=False, first=first)
    assert plan is not None and plan.measures[0].id == "shop.orders.total_revenue"
    assert calls == [("customer segment", "shop")]  # the grouping only
    calls.clear()
    assert planner.plan("total revenue by store name", None, explain=False) is not None
    assert calls[0] == ("total revenue", None)  # no hits: the catalog


def test_a_layer_with_measures_does_not_take_a_column_as_its_measure(
    mini: Layersearch,
) -> None:
    planner, calls = _counting_planner(mini)
    question = "net revenue by store name"
    first = mini.search(question=question).results
    assert "shop.orders.net_revenue" in [h.id for h in first]  # a column that holds the words
    planner.plan(question, None, explain=False, first=first)
    assert calls[:1] == [("net revenue", "shop")]


def test_the_weak_match_check_has_only_the_hits_it_reads_explained(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        req = ls.entities.request(question="total revenue by store", max_results=20)
        hits = ls.entities.search(answer.explained(req)).results
        entity = [h for h in hits if h.kind not in ("memory", "datasource")]
        assert len(entity) > confidence.TOP
        last = hits.index(entity[confidence.TOP - 1])
        assert all(h.explanation for h in hits[: last + 1])
        assert not any(h.explanation for h in hits[last + 1 :])
        asked = ls.entities.search(req.model_copy(update={"explain": True})).results
        assert all(h.explanation for h in asked)  # an explanation asked for: every hit


def test_a_plans_part_searches_rank_entities_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan reads leaves only: its part searches rank no memory, so notes that
    match a part's words take none of its places (and cost no time)."""
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        ls.save_memories([{"learning": f"customer country note {i}"} for i in range(40)])
        asked: list[tuple[Any, Any]] = []
        real = ls.entities.search

        def spy(request: Any = None, /, **kwargs: Any) -> Any:
            resp = real(request, **kwargs)
            asked.append((request, resp))
            return resp

        monkeypatch.setattr(ls.entities, "search", spy)
        plan = ls.search(question="total revenue by customer country").plan
        parts = [(req, resp) for req, resp in asked if req is not None and req._entities_only]
        assert [req.question for req, _ in parts] == ["customer country"]
        assert parts[0][1].results and all(h.kind != "memory" for h in parts[0][1].results)
        assert plan is not None and [d.id for d in plan.dimensions] == ["shop.customers.country"]
        # a search of the same words asked by a user still ranks the notes
        hits = ls.search(question="customer country", max_results=30).results
        assert any(h.kind == "memory" for h in hits)


def test_a_grouping_that_opens_the_question_runs_to_the_first_comma() -> None:
    parts = split_question("For each team, how many technicians are there?")
    assert parts is not None
    assert (parts.measure, parts.groups) == ("how many technicians are there", ["team"])
    parts = split_question("In each bed type, find the average room price per floor.")
    assert parts is not None
    assert (parts.measure, parts.groups) == ("find the average room price", ["bed type", "floor"])
    # a grain there is the grain, not a grouping part
    parts = split_question("For each month, count the orders")
    assert parts is not None and (parts.measure, parts.groups) == ("count the orders", [])
    assert parts.grain == "month"
    # without a comma, or with nothing between the grouping word and it: cut as before
    parts = split_question("For each group how many")
    assert parts is not None and (parts.measure, parts.groups) == ("For", ["group how many"])
    parts = split_question("For each, the total")
    assert parts is not None and (parts.measure, parts.groups) == ("For", ["the total"])


def test_a_part_searchs_bare_hits_are_the_full_hits_kind_id_and_score(mini: Layersearch) -> None:
    """A part search renders no entity: each hit is the kind, id and score the same
    request shows in full, in the same order (an explanation asked for: full hits)."""
    req = mini.entities.request(question="customer country", max_results=30)
    req._entities_only = True
    bare = mini.entities.search(req).results
    full_req = req.model_copy()
    full_req._entities_only = False
    full = [h for h in mini.entities.search(full_req).results if h.kind != "memory"]
    assert len(bare) >= 5
    assert [(h.kind, h.id, h.score) for h in bare] == [(h.kind, h.id, h.score) for h in full]
    assert all(h.description == "" and h.text is None for h in bare)
    assert any(h.description for h in full)
    explained = mini.entities.search(req.model_copy(update={"explain": True})).results
    assert all(h.description or h.kind == "datasource" for h in explained)


def test_a_lexical_part_search_runs_without_the_learned_orders(
    mini: Layersearch, tmp_path: Path
) -> None:
    """A part search with no vector channel ranks as the configured ranking without the
    learned orders (they were trained on whole questions); one with a vector channel
    ranks as the configured ranking."""

    def ranked(ls: Layersearch, lexical_without: frozenset[str]) -> list[str]:
        req = ls.entities.request(question="store", max_results=30)
        req._entities_only = True
        req._lexical_without = lexical_without
        return [h.id for h in ls.entities.search(req).results]

    part = ranked(mini, answer.PART_LEXICAL_WITHOUT)
    assert part != ranked(mini, frozenset())  # (the learned orders move this one)
    configured = mini.entities.ranking
    try:
        mini.entities.ranking = configured.without_stages(answer.PART_LEXICAL_WITHOUT)
        assert part == ranked(mini, frozenset())
    finally:
        mini.entities.ranking = configured
    with Layersearch(tmp_path / "dense.duckdb", embedder="fake") as dense:
        dense.load(MINI)
        dense.embed()
        assert ranked(dense, answer.PART_LEXICAL_WITHOUT) == ranked(dense, frozenset())


def test_a_part_searched_once_is_read_again_until_the_store_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part's hits depend on its words, datasource and channels and the snapshot:
    another question with the same grouping reads them, a write searches again; a search
    with other channels is another entry."""
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        parts: list[str] = []
        real = ls.entities.search

        def spy(request: Any = None, /, **kwargs: Any) -> Any:
            if request is not None and request._entities_only:
                parts.append(request.question)
                assert request._lexical_without == answer.PART_LEXICAL_WITHOUT
            return real(request, **kwargs)

        monkeypatch.setattr(ls.entities, "search", spy)
        first = ls.search(question="total revenue by customer country").plan
        assert parts == ["customer country"]
        again = ls.search(question="revenue total by customer country", explain=True).plan
        assert parts == ["customer country"]  # read, not searched
        assert first is not None and again is not None
        assert first.dimensions[0].id == again.dimensions[0].id == "shop.customers.country"
        ls.save_memory("country means the billing country")  # a new snapshot
        asked = len(parts)
        assert ls.search(question="total revenue by customer country").plan == first
        assert parts[asked:] == ["customer country"]
        kept = answer.part_searches(ls.entities)
        corpus = ls.entities.corpus()
        assert kept.get(corpus, ("customer country", "shop", ())) is not None
        assert kept.get(corpus, ("customer country", "shop", ("bm25",))) is None
