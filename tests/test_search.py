"""The search contract on the small fixture and on the bundled sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from layersearch import ConfigError, Layersearch, LimitExceeded, SearchRequest
from tests.support import MINI, MODELS

HOSTILE = [
    '"',
    "'",
    "it's the customer's \"total\"",
    "a/b-c:d (e) * f",
    "revenue:sum AND NOT tax~2 ^3 [x TO y] {z}",
    'title:"unclosed',
    "\\",
    "🎉 revenue 🎉",
    "ümlaut café naïve",
    "SELECT * FROM orders WHERE id = '1'; DROP TABLE x; --",
    "%_%",
    "r" * 10_000,
    "revenue " * 1_300,
    "\x00 revenue \x01",
]


def ids(resp) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.id for h in resp.results]


def test_question_finds_entities_and_memories(mini: Layersearch) -> None:
    resp = mini.search(question="tax charged on the order")
    # the note on tax_paid matches the question's words and is tagged with the top entity
    assert set(ids(resp)[:2]) == {"shop.orders.tax_paid", "memory:2"}


def test_named_entities_are_surfaced_and_bm25_finds_their_memories(mini: Layersearch) -> None:
    resp = mini.search(entities=["shop.orders.net_revenue"], explain=True)
    got = ids(resp)
    assert got[0] in ("shop.orders.net_revenue", "memory:1")
    assert set(got[:2]) == {"shop.orders.net_revenue", "memory:1"}
    channels = {h.id: {c.channel for c in h.explanation or []} for h in resp.results}
    assert channels["shop.orders.net_revenue"] == {"input"}
    assert "bm25" in channels["memory:1"]


def test_ancestor_tags_speak_for_the_model(mini: Layersearch) -> None:
    # memory:1 is tagged with a column of orders; asking about the model finds it too
    resp = mini.search(entities=["shop.orders"], explain=True)
    assert "memory:1" in ids(resp)


@pytest.mark.parametrize(
    "ref",
    [
        "shop.orders.order_total",
        "orders.order_total",
        "order_total",
        "ORDERS.Order_Total",
        "sum(order_total)",
        "order_total:sum",
        "SUM( order_total )",
    ],
)
def test_resolution_forms(mini: Layersearch, ref: str) -> None:
    resp = mini.search(entities=[ref])
    assert ids(resp)[0] == "shop.orders.order_total"
    assert resp.warnings == []


def test_ambiguous_and_unknown_are_dropped_with_warning(mini: Layersearch) -> None:
    resp = mini.search(entities=["status", "no_such_thing", "order_totl"], question="tax")
    text = " ".join(resp.warnings)
    assert "ambiguous entity 'status'" in text
    assert "crm.deals.status" in text and "shop.orders.status" in text
    assert "unknown entity 'no_such_thing'" in text
    assert "did you mean" in text and "order_total" in text
    assert resp.results  # the question still answers


def test_datasource_disambiguates(mini: Layersearch) -> None:
    resp = mini.search(entities=["deals.status"], datasource="crm")
    assert ids(resp)[0] == "crm.deals.status"
    resp = mini.search(entities=["status"], datasource="crm")
    assert ids(resp)[0] == "crm.deals.status"


def test_query_dict_contributes_entities(mini: Layersearch) -> None:
    resp = mini.search(
        query={
            "measures": ["total_revenue"],
            "dimensions": ["stores.store_name"],
            "filters": ["orders.status != 'returned'"],
            "sql": "select nothing from here",
        },
    )
    got = set(ids(resp))
    assert {"shop.orders.total_revenue", "shop.stores.store_name", "shop.orders.status"} <= got
    assert "memory:3" in got  # the example query that mentions them


def test_deep_query_is_a_clear_error(mini: Layersearch) -> None:
    deep: dict = {"m": "x"}
    for _ in range(40):
        deep = {"nested": deep}
    with pytest.raises(LimitExceeded, match="nested deeper"):
        mini.search(query=deep)


def test_datasource_scoping_is_by_segment(tmp_path: Path) -> None:
    ls = Layersearch(tmp_path / "s.duckdb")
    for name in ("prod", "prod_v2"):
        d = tmp_path / name
        d.mkdir()
        (d / "m.yaml").write_text(
            f"model: orders\ndatasource: {name}\ncolumns:\n  - {{name: revenue, description: revenue in {name}}}\n"
        )
        ls.load(d)
    got = ids(ls.search(question="revenue", datasource="prod"))
    assert got and all(i == "prod" or i.startswith("prod.") for i in got)
    with pytest.raises(
        ConfigError, match="unknown datasource 'pro'; known datasources: prod, prod_v2"
    ):
        ls.search(question="revenue", datasource="pro")
    ls.close()


def test_datasource_scopes_memories_and_bm25_statistics(mini: Layersearch) -> None:
    resp = mini.search(question="status", datasource="crm")
    # The schema channel adds the matched column's table and its other columns, all in scope.
    assert {"crm.deals.status", "memory:4"} <= set(ids(resp))
    assert all(i.startswith("crm.") or i == "memory:4" for i in ids(resp))
    resp = mini.search(entities=["crm.deals.status"], datasource="shop")
    assert ids(resp) == []
    assert any("unknown entity" in w for w in resp.warnings)


def test_hidden_entities_never_searchable(mini: Layersearch) -> None:
    for resp in (
        mini.search(question="fraud model score internal"),
        mini.search(question="raw clickstream payload"),
        mini.search(entities=["internal_score", "shop.orders.internal_score", "raw_events"]),
    ):
        assert not any("internal_score" in i or "raw_events" in i for i in ids(resp))
    # inspect shows a hidden entity when asked by its exact id
    info = mini.inspect(["shop.orders.internal_score"]).entities[0]
    assert info.hidden


def test_no_input_gives_newest_memories_with_warning(mini: Layersearch) -> None:
    resp = mini.search()
    assert ids(resp) == ["memory:4", "memory:3", "memory:2", "memory:1"]
    assert resp.warnings == ["no entities, query or question given: showing the newest memories"]


@pytest.mark.parametrize("n", [0, -1, 101])
def test_max_results_bounds(mini: Layersearch, n: int) -> None:
    with pytest.raises(ConfigError, match="max_results must be between 1 and 100"):
        mini.search(question="revenue", max_results=n)


def test_prefix_invariance(mini: Layersearch) -> None:
    req = dict(question="order revenue tax store status", entities=["shop.orders"])
    full = ids(mini.search(**req, max_results=100))
    for n in (1, 3, 7, 20):
        assert ids(mini.search(**req, max_results=n)) == full[:n]


def test_compact_and_full_hits(mini: Layersearch) -> None:
    compact = mini.search(question="order total", max_results=3)
    assert all(h.text is None and "\n" not in h.description for h in compact.results)
    full = mini.search(question="order total", max_results=3, compact=False)
    assert all(h.text and h.text.startswith(f"{h.kind} {h.id}") for h in full.results)
    hits = mini.search(entities=["shop.orders"], compact=False).results
    orders = next(h for h in hits if h.id == "shop.orders")
    assert "joins shop.customers (many_to_one) on customer_id = id" in (orders.text or "")


@pytest.mark.parametrize("question", HOSTILE)
def test_hostile_questions_never_fail(mini: Layersearch, question: str) -> None:
    resp = mini.search(question=question)
    if any(ch.isalpha() for ch in question):
        assert resp.results or resp.warnings, "never a silent empty result"
    else:
        assert resp.warnings


def test_question_length_limit(mini: Layersearch) -> None:
    with pytest.raises(LimitExceeded, match="limit is 100000"):
        mini.search(question="x" * 100_001)


def test_unknown_channel(mini: Layersearch) -> None:
    with pytest.raises(ConfigError, match="valid channels: bm25, fulltext, vector"):
        mini.search(question="x", channels=["bm26"])


def test_channels_select(mini: Layersearch) -> None:
    resp = mini.search(
        question="tax", entities=["shop.orders.tax_paid"], channels=["bm25"], explain=True
    )
    used = {c.channel for h in resp.results for c in h.explanation or []}
    assert "fulltext" not in used and "bm25" in used


def test_bad_request_fields_are_config_errors(mini: Layersearch) -> None:
    with pytest.raises(ConfigError, match="max_results"):
        mini.search(question="x", max_results="lots")
    with pytest.raises(ConfigError, match="invalid request"):
        mini.search(question="x", bogus=1)


def test_memory_lifecycle_and_incremental_index(mini: Layersearch) -> None:
    m = mini.save_memory("Wholesale orders are billed monthly", entities=["orders"])
    assert m.id == "memory:5" and m.entities == ["shop.orders"]
    assert ids(mini.search(question="wholesale billing"))[0] == "memory:5"
    assert mini.get_memory("memory:5").learning == "Wholesale orders are billed monthly"
    assert [x.id for x in mini.list_memories(limit=2)] == ["memory:5", "memory:4"]
    mini.forget_memory("memory:5")
    assert "memory:5" not in ids(mini.search(question="wholesale billing"))
    m6 = mini.save_memory("another")
    assert m6.id == "memory:6", "ids are never reused"


def test_memory_validation(mini: Layersearch) -> None:
    with pytest.raises(ConfigError, match="non-empty"):
        mini.save_memory("   ")
    with pytest.raises(ConfigError, match="at most 500"):
        mini.save_memory("x", description="d" * 501)
    with pytest.raises(ConfigError, match="ambiguous entity 'status'"):
        mini.save_memory("x", entities=["status"])
    with pytest.raises(ConfigError, match="not a memory id"):
        mini.get_memory("memory:abc")


def test_reload_keeps_memories_and_reports_unresolved_tags(tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "mini"
    shutil.copytree(MINI, src)
    ls = Layersearch(tmp_path / "s.duckdb")
    first = ls.load(src)
    assert first.memories_added == 4
    m = ls.save_memory("Stores close on Sundays", entities=["stores.opened_at"])
    again = ls.load(src)
    assert again.memories_added == 0, "re-loading is idempotent"
    assert len(ls.list_memories()) == 5
    text = (src / "shop" / "stores.yaml").read_text().replace("opened_at", "opening_date")
    (src / "shop" / "stores.yaml").write_text(text)
    third = ls.load(src)
    assert third.unresolved_tags == [f"{m.id} → shop.stores.opened_at"]
    assert ls.get_memory(m.id).learning == "Stores close on Sundays"
    ls.close()


@pytest.mark.slow
def test_determinism_across_processes(tmp_path: Path) -> None:
    script = (
        "import json,sys; from layersearch import Layersearch;"
        f"ls=Layersearch({str(tmp_path / 's.duckdb')!r}); ls.load({str(MODELS)!r});"
        "r=ls.search(question='revenue by store and customer country', entities=['orders'], explain=True, max_results=30);"
        "print(r.model_dump_json())"
    )
    outs = set()
    for seed in ("1", "2", "3"):
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
        import os

        env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME")})
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outs.add(out.stdout)
    assert len(outs) == 1
    assert json.loads(outs.pop())["results"]


def test_index_rebuilt_when_missing_or_corrupt(tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MINI)
        before = ids(ls.search(question="tax"))
    shutil.rmtree(store.with_name("s.duckdb.index") / "entities")
    with Layersearch(store) as ls:
        assert ids(ls.search(question="tax")) == before
    from layersearch.ranking.fulltext import MARKER, FullTextIndex

    current = FullTextIndex.current_dir(store.with_name("s.duckdb.index") / "entities")
    assert current is not None
    (current / MARKER).write_text("{not json")
    with Layersearch(store) as ls:
        resp = ls.search(question="tax")
        assert ids(resp) == before
        assert any("rebuilt" in w for w in resp.warnings)


def test_two_instances_see_each_others_writes(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    a = Layersearch(store)
    a.load(MINI)
    b = Layersearch(store)
    assert ids(b.search(question="tax"))
    m = a.save_memory("Zeppelin shipments are tax exempt", entities=["orders"])
    assert ids(b.search(question="zeppelin"))[0] == m.id
    b.forget_memory(m.id)
    assert m.id not in ids(a.search(question="zeppelin"))
    a.save_memory("Yodel orders", entities=["orders"])
    b.save_memory("Yak orders", entities=["orders"])
    assert ids(a.search(question="yak"))[0] == ids(b.search(question="yak"))[0]
    assert ids(b.search(question="yodel"))[0] == ids(a.search(question="yodel"))[0]
    a.close()
    b.close()


def test_request_object_and_kwargs_are_equivalent(mini: Layersearch) -> None:
    a = mini.search(SearchRequest(question="tax", max_results=5))
    b = mini.search(question="tax", max_results=5)
    assert a == b


def test_bundled_sample_readme_examples(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        report = ls.load(MODELS)
        assert report.skipped == [] and report.unresolved_tags == []
        assert ids(ls.search(question="monthly revenue by store"))
        r = ls.search(entities=["orders.order_total"], question="tax", explain=True)
        assert r.results[0].id == "shop.orders.order_total"
        m = ls.save_memory(
            "Revenue excludes refunds; use net_revenue", entities=["shop.orders.net_revenue"]
        )
        got = ls.inspect(["shop.orders.net_revenue", m.id])
        assert got.entities[0].id == "shop.orders.net_revenue" and got.memories[0].id == m.id


# -- reopening: a new process answers from the persisted snapshot -----------------------------

REOPEN_REQUESTS: list[dict[str, object]] = [
    {"question": "monthly revenue by store"},
    {"question": "tax charged on the order", "compact": False, "explain": True},
    {"question": "customers who churned", "datasource": "shop", "max_results": 20},
    {"entities": ["orders.net_revenue", "stores"], "explain": True},
    {"entities": ["shop.orders"], "question": "refunds", "compact": False},
    {"query": {"measures": ["sum(order_total)"], "dimensions": ["store_name"]}},
    {"entities": ["no_such_thing", "memory:1"], "question": "store"},
    {},
]


def _answers(ls: Layersearch) -> list[dict[str, object]]:
    return [ls.search(**req).model_dump(mode="json") for req in REOPEN_REQUESTS]  # type: ignore[arg-type]


def test_snapshot_answers_like_the_objects_it_replaces(tmp_path: Path) -> None:
    """The persisted, decode-on-access snapshot ranks and renders exactly like one built
    in memory from the store's rows as Python objects (what a load hands its reload)."""
    from layersearch.corpora.entities import EntityCorpus
    from layersearch.corpora.snapshot import Snapshot, tables_from_objects

    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MODELS)
    ls.save_memory("Store revenue excludes refunds", entities=["shop.stores"])
    persisted = _answers(ls)
    corpus = ls.corpus()
    assert corpus.snapshot is not None and corpus.snapshot.dir is not None
    tables, _ = tables_from_objects(list(ls.store.load_entities()), list(ls.store.load_edges()))
    tables.complete()
    in_memory = Snapshot(tables, None)
    plain = EntityCorpus.from_snapshot(in_memory, dict(corpus.memories), corpus.fulltext)
    ls.entities._corpus = plain  # same generation: corpus() keeps it
    assert _answers(ls) == persisted
    assert plain.coverage().ids == list(corpus.coverage().ids)
    assert in_memory.dir is None
    ls.close()


def test_reopened_process_answers_like_the_warm_one(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    with Layersearch(store) as ls:
        ls.load(MODELS)
        ls.save_memory("Store revenue excludes refunds", entities=["shop.stores"])
        warm = _answers(ls)
        snapshot = ls.corpus().snapshot
        assert snapshot is not None and snapshot.dir is not None
        assert (snapshot.dir / "coverage").is_dir(), "the first question persisted the schema index"
    code = (
        "import json, sys\n"
        "from layersearch import Layersearch\n"
        f"ls = Layersearch({str(store)!r}, create=False)\n"
        f"reqs = json.loads({json.dumps(json.dumps(REOPEN_REQUESTS))})\n"
        "print(json.dumps([ls.search(**r).model_dump(mode='json') for r in reqs]))\n"
        "print(ls.corpus().snapshot.dir)\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    answers, used = out.stdout.splitlines()
    assert json.loads(answers) == warm
    assert used == str(snapshot.dir), "the new process maps the persisted snapshot"


def test_scoped_search_lists_the_tables_its_words_did_not_reach(tmp_path: Path) -> None:
    # Spider's tables.json shape: a question that names its subject only by a value
    # ("Jetblue") reaches no word of `airlines`, yet in a search confined to the
    # database the table is still a candidate, after the matches.
    db = {
        "db_id": "air",
        "table_names_original": ["airlines", "airports", "flights"],
        "table_names": ["airlines", "airports", "flights"],
        "column_names_original": [
            [-1, "*"],
            [0, "uid"],
            [0, "Airline"],
            [1, "AirportCode"],
            [1, "City"],
            [2, "FlightNo"],
            [2, "Airline"],
            [2, "SourceAirport"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "uid"],
            [0, "airline"],
            [1, "airport code"],
            [1, "city"],
            [2, "flight no"],
            [2, "airline"],
            [2, "source airport"],
        ],
        "column_types": ["text", "number", "text", "text", "text", "number", "number", "text"],
        "primary_keys": [1, 3],
        "foreign_keys": [[7, 3], [6, 1]],
    }
    other = {**db, "db_id": "other", "table_names_original": ["x", "y", "z"]}
    path = tmp_path / "tables.json"
    path.write_text(json.dumps([db, other]))
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(path)
    scoped = ls.search(question="Jetblue flight numbers", datasource="air", explain=True)
    tables = [h.id for h in scoped.results if h.kind == "model"]
    assert tables[0] == "air.flights" and set(tables) == {
        "air.flights",
        "air.airlines",
        "air.airports",
    }
    # unreached tables come after every match, the most joined first, with no score of their own
    unreached = [h for h in scoped.results if h.id in ("air.airlines", "air.airports")]
    ranks = {h.id: i for i, h in enumerate(scoped.results)}
    assert all(ranks[h.id] > ranks["air.flights.FlightNo"] for h in unreached)
    assert scoped.warnings == []
    # without the scope nothing changes: a catalog search lists only what its words reach
    catalog = ls.search(question="Jetblue", explain=True)
    assert [h.id for h in catalog.results if h.kind == "model"] == []
    ls.close()


def test_full_text_runs_beside_the_schema_channel_and_its_errors_reach_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full text of a large index ranks on a worker thread while the schema channel ranks
    (here any index: ``FULLTEXT_THREAD_MIN_DOCS`` set to 0): the answer is the one of
    running them in turn, and a failure on the worker is the search's failure."""
    import threading

    from layersearch.corpora.entities import process
    from layersearch.errors import StoreError

    monkeypatch.setattr(process, "FULLTEXT_THREAD_MIN_DOCS", 0)

    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MODELS)
    ls.save_memory("Store revenue excludes refunds", entities=["shop.stores"])
    corpus = ls.corpus()
    original = corpus.fulltext.search
    threads: list[str] = []

    def on_worker(*args: object, **kwargs: object) -> list[tuple[str, float]]:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(corpus.fulltext, "search", on_worker)
    got = ls.search(question="store revenue refunds", explain=True, max_results=50)
    assert threads and all(t.startswith("layersearch-fulltext") for t in threads)
    channels = {c.channel for h in got.results for c in (h.explanation or [])}
    # (full text's memory hits are ranked by the ``words`` ranking made from them)
    assert {"schema", "words"} <= channels
    assert any(h.id.startswith("memory:") for h in got.results)

    def broken(*args: object, **kwargs: object) -> list[tuple[str, float]]:
        raise StoreError("full-text index is busy or unwritable: test")

    monkeypatch.setattr(corpus.fulltext, "search", broken)
    with pytest.raises(StoreError, match="busy or unwritable"):
        ls.search(question="store revenue refunds")
    ls.close()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_searches_with_workers_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full-text workers are threads: a child forked after the parent searched has none
    of them, and must start its own rather than queue work nobody runs."""
    import multiprocessing

    from layersearch.corpora.entities import process

    monkeypatch.setattr(process, "FULLTEXT_THREAD_MIN_DOCS", 0)  # workers for any index
    ls = Layersearch(tmp_path / "s.duckdb")
    ls.load(MODELS)
    want = [h.id for h in ls.search(question="store revenue").results]
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()

    def in_child() -> None:
        child.send([h.id for h in ls.search(question="store revenue").results])

    proc = ctx.Process(target=in_child)
    proc.start()
    try:
        assert parent.poll(60), "the forked child's search never finished"
        assert parent.recv() == want
        proc.join(10)
    finally:
        if proc.is_alive():
            proc.kill()
        ls.close()
