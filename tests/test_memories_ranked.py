"""Saved memories and example queries: tagging from queries, reload identity, ranking in
their own list, the buckets, and what a hit says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layersearch import ConfigError, Layersearch
from layersearch.corpora.entities import describe_memory, one_line_query
from layersearch.semantic.canonical import Resolver, expression_identifiers, query_strings
from layersearch.semantic.model import Entity
from layersearch.types import Memory
from tests.support import MINI, MODELS

# -- which parts of a query name entities -----------------------------------------------


def _resolver(*ids: str) -> Resolver:
    ents = []
    for i in ids:
        parts = i.split(".")
        kind = {1: "datasource", 2: "model", 3: "column"}[len(parts)]
        ents.append(
            Entity(
                id=i,
                kind=kind,
                name=parts[-1],
                datasource=parts[0],
                model=".".join(parts[:2]) if len(parts) == 3 else None,
            )
        )
    return Resolver(ents, lambda _m: False)


# A catalog where values of a query happen to be entity names too.
TRAPS = _resolver(
    "shop",
    "shop.orders",
    "shop.orders.order_dt",
    "shop.orders.status",
    "shop.orders.total",
    "shop.customers.email",
    "cal",
    "cal.month",
    "cal.day",
    "cal.day.day",
    "cal.completed",
    "cal.desc",
)


@pytest.mark.parametrize(
    "query",
    [
        {"time_dimensions": [{"dimension": "shop.orders.order_dt", "granularity": "month"}]},
        {"time_dimensions": [{"dimension": {"name": "order_dt"}, "granularity": "day"}]},
        {"measures": ["total"], "date_range": ["2024-01-01", "last 30 days"], "limit": 10},
        {"filters": ["shop.orders.status = 'completed'"]},
        {"filters": ["status in (\"completed\", 'email')"]},
        {"filters": [{"member": "status", "operator": "equals", "values": ["completed", "day"]}]},
        {"order": [{"by": "total", "direction": "desc"}], "granularity": "month"},
        {"order": ["total desc"], "unknown_key": "email", "sql": "select day from cal"},
        {"measures": [{"formula": "total:sum", "label": "month"}]},
    ],
)
def test_values_are_never_tags(query: dict[str, object]) -> None:
    res = TRAPS.resolve(None, query)
    assert res.warnings == []
    assert set(res.ids) <= {"shop.orders.order_dt", "shop.orders.status", "shop.orders.total"}
    assert res.ids, "the references of the query were not read"


def test_reference_keys_are_read_in_every_shape() -> None:
    query = {
        "measures": ["shop.orders.total"],
        "dimensions": [{"name": "shop.customers.email"}],
        "time_dimensions": [{"dimension": {"name": "order_dt"}, "granularity": "week"}],
        "filters": ["shop.orders.status <> 'x' AND 1e5 > 2"],
        "order": [{"column": {"name": "total"}, "direction": "asc"}],
    }
    assert set(TRAPS.resolve(None, query).ids) == {
        "shop.orders.total",
        "shop.customers.email",
        "shop.orders.order_dt",
        "shop.orders.status",
    }


def test_an_unknown_reference_is_named_an_unknown_key_is_not() -> None:
    res = TRAPS.resolve(None, {"measures": ["revenue_nope"], "whatever": ["revenue_nope2"]})
    assert len(res.warnings) == 1 and "revenue_nope'" in res.warnings[0]


def test_expression_identifiers_skip_literals_keywords_and_numbers() -> None:
    got = expression_identifiers("a.b in ('x', 'it''s') AND c IS NOT NULL and 3e2 < d.e_f")
    assert got == ["a.b", "c", "d.e_f"]


def test_query_bounds_still_hold_everywhere() -> None:
    deep: dict[str, object] = {"x": "y"}
    for _ in range(40):
        deep = {"unknown": deep}
    with pytest.raises(Exception, match="nested deeper"):
        query_strings(deep)


def test_saving_an_example_query_tags_only_its_references(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
        m = ls.save_memory(
            "Monthly revenue",
            query={
                "measures": ["shop.orders.net_revenue_total"],
                "time_dimensions": [{"dimension": "shop.orders.order_dt", "granularity": "month"}],
                "filters": ["shop.customers.segment = 'email'"],
            },
        )
        assert "shop.customers.email" not in m.entities
        assert {"shop.orders.net_revenue_total", "shop.orders.order_dt"} <= set(m.entities)
        with pytest.raises(ConfigError, match="unknown entity 'shop.orders.nope'"):
            ls.save_memory("bad", query={"measures": ["shop.orders.nope"]})


# -- reloads keep one copy ---------------------------------------------------------------


def test_reloading_never_duplicates_a_memory(tmp_path: Path) -> None:
    layer = tmp_path / "layer"
    (layer / "shop").mkdir(parents=True)
    for f in (MINI / "shop").iterdir():
        (layer / "shop" / f.name).write_text(f.read_text())
    (layer / "memories.yaml").write_text(
        "memories:\n"
        "  - learning: Orders by day\n"
        "    entities: [ordered_at]\n"
        "    query:\n"
        "      time_dimensions: [{dimension: ordered_at, granularity: day}]\n"
    )
    with Layersearch(tmp_path / "s.duckdb") as ls:
        assert ls.load(layer).memories_added == 1
        assert ls.load(layer).memories_added == 0
        # another datasource makes the bare name ambiguous: the memory is still the same one
        ls.load(MINI)
        assert ls.load(layer).memories_added == 0
        assert [m.learning for m in ls.list_memories(limit=100)].count("Orders by day") == 1


# -- memories rank as what they are ----------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Layersearch:
    ls = Layersearch(tmp_path_factory.mktemp("sample") / "s.duckdb")
    ls.load(MODELS)
    return ls


def _example(ls: Layersearch, learning: str) -> str:
    return next(m.id for m in ls.list_memories(limit=500) if m.learning.startswith(learning))


def test_the_saved_example_comes_back_for_its_question(sample: Layersearch) -> None:
    mid = _example(sample, "Monthly net revenue by store")
    got = [h.id for h in sample.search(question="monthly revenue by store").results]
    assert mid in got[:3], got


def test_memories_do_not_take_the_entities_place(sample: Layersearch) -> None:
    plain = sample.search(question="monthly revenue by store", max_entities=20)
    assert plain.entities is not None
    ents = [h.id for h in plain.entities]
    merged = [h.id for h in plain.results if h.kind != "memory"]
    # the entities of ``results`` are the entity ranking's first ones, in its order
    assert merged == ents[: len(merged)]


def test_many_similar_memories_leave_the_entity_channels_alone(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()
        before = ls.search(question="tax charged on the order", max_entities=10)
        ls.save_memories([{"learning": f"tax charged on the order, note {i}"} for i in range(300)])
        after = ls.search(question="tax charged on the order", max_entities=10, explain=True)
        assert [h.id for h in after.entities or []] == [h.id for h in before.entities or []]
        vec = [h for h in after.results if h.kind != "memory" and h.explanation]
        assert any(c.channel == "vector" for h in vec for c in h.explanation or [])


def test_a_named_entity_leads(sample: Layersearch) -> None:
    r = sample.search(entities=["orders.order_total"], question="tax")
    assert r.results[0].id == "shop.orders.order_total"


# -- buckets ------------------------------------------------------------------------------------

CAPS = st.one_of(st.none(), st.integers(min_value=1, max_value=12))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    question=st.sampled_from(["monthly revenue by store", "tax", "refunds per month", "churn"]),
    a=st.tuples(CAPS, CAPS, CAPS, st.integers(1, 15)),
    b=st.tuples(CAPS, CAPS, CAPS, st.integers(1, 15)),
)
def test_a_bucket_never_depends_on_the_other_caps(
    sample: Layersearch,
    question: str,
    a: tuple[int | None, int | None, int | None, int],
    b: tuple[int | None, int | None, int | None, int],
) -> None:
    def run(caps: tuple[int | None, int | None, int | None, int]) -> dict[str, list[str] | None]:
        r = sample.search(
            question=question,
            max_entities=caps[0],
            max_memories=caps[1],
            max_example_queries=caps[2],
            max_results=caps[3],
        )
        return {
            "entities": None if r.entities is None else [h.id for h in r.entities],
            "memories": None if r.memories is None else [h.id for h in r.memories],
            "example_queries": None
            if r.example_queries is None
            else [h.id for h in r.example_queries],
            "results": [h.id for h in r.results],
        }

    ra, rb = run(a), run(b)
    for i, name in enumerate(("entities", "memories", "example_queries")):
        if a[i] is None:
            assert ra[name] is None
            continue
        if b[i] is None:
            continue
        short, long_ = sorted((ra[name] or [], rb[name] or []), key=len)
        assert long_[: len(short)] == short  # the same ranking, cut at its own cap
        assert len(ra[name] or []) <= a[i]
    # results for n are a prefix of results for n+k, whatever the buckets
    short_r, long_r = sorted((ra["results"], rb["results"]), key=len)
    assert long_r[: len(short_r)] == short_r


def test_buckets_hold_their_kind_and_are_absent_unless_asked(sample: Layersearch) -> None:
    r = sample.search(question="revenue", max_memories=5, max_example_queries=5)
    assert r.entities is None
    assert r.memories and all(sample.get_memory(h.id).query is None for h in r.memories)
    assert r.example_queries and all(
        sample.get_memory(h.id).query is not None for h in r.example_queries
    )
    plain = json.loads(sample.search(question="revenue").model_dump_json())
    assert set(plain) == {"results", "warnings"}
    with pytest.raises(ConfigError, match="max_memories must be between 1 and 100"):
        sample.search(question="revenue", max_memories=0)


# -- what a memory hit says ------------------------------------------------------------------


def test_a_memory_hit_reads_as_its_note_and_query() -> None:
    from datetime import UTC, datetime

    long = "word " * 100
    m = Memory(
        id="memory:1",
        learning=long,
        description="Example query",
        query={"measures": ["a.b.c"], "limit": 3},
        created_at=datetime.now(UTC),
    )
    text = describe_memory(m)
    note, query = text.split(" | query: ")
    assert len(note) <= 300 and note.endswith("word…")
    assert query == '{"limit":3,"measures":["a.b.c"]}'
    assert one_line_query({"sql": "SELECT a\n  FROM b"}) == "SELECT a FROM b"
    assert one_line_query({"sql": "SELECT a\n  FROM b", "limit": 1}) == (
        '{"limit":1,"sql":"SELECT a FROM b"}'
    )
    short = Memory(id="memory:2", learning="A short note.", created_at=datetime.now(UTC))
    assert describe_memory(short) == "A short note."


def test_search_json_hits_carry_the_note(sample: Layersearch) -> None:
    r = sample.search(question="monthly revenue by store", max_example_queries=1)
    (hit,) = r.example_queries or []
    assert hit.text is None and "Monthly net revenue by store" in hit.description
    assert "| query: " in hit.description


# -- saving many at once -------------------------------------------------------------------


def test_save_memories_is_all_or_nothing_and_names_the_item(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        with pytest.raises(ConfigError, match="memory 2 of 2: cannot save the memory"):
            ls.save_memories(
                [
                    {"learning": "fine", "entities": ["shop.orders"]},
                    {"learning": "x", "entities": ["nope"]},
                ]
            )
        assert [m.learning for m in ls.list_memories(limit=50)].count("fine") == 0
        saved = ls.save_memories([{"learning": f"note {i}"} for i in range(5)])
        assert [m.id for m in saved] == sorted((m.id for m in saved), key=lambda i: int(i[7:]))
        assert saved[0].id in [h.id for h in ls.search(question="note 0").results]


# -- paraphrases of one example query ------------------------------------------------------


def test_the_paraphrase_asked_word_for_word_comes_first(tmp_path: Path) -> None:
    sql = {"sql": "SELECT count(*) FROM orders WHERE status = 'shipped'"}
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        short, long = ls.save_memories(
            [
                {"learning": "Count the shipped orders.", "query": sql},
                {
                    "learning": "How many of the orders have been shipped to customers?",
                    "query": sql,
                },
            ]
        )
        got = ls.search(question="How many of the orders have been shipped to customers?")
        mems = [h.id for h in got.results if h.kind == "memory"]
        assert mems[:2] == [long.id, short.id]
        # asked in the short one's words, the short one leads
        got = ls.search(question="Count the shipped orders")
        assert [h.id for h in got.results if h.kind == "memory"][:2] == [short.id, long.id]


@pytest.mark.parametrize(
    ("first", "other"),
    [
        # analysed, both are {order}: only the plain words tell them apart
        ("How many orders do we have?", "Count the number of orders."),
        ("Count the number of orders.", "How many orders do we have?"),
    ],
)
def test_of_paraphrases_that_share_alike_the_one_worded_as_asked_leads(
    tmp_path: Path, first: str, other: str
) -> None:
    sql = {"sql": "SELECT count(*) FROM orders"}
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        a, b = ls.save_memories(
            [{"learning": first, "query": sql}, {"learning": other, "query": sql}]
        )
        mems = [h.id for h in ls.search(question=first).results if h.kind == "memory"]
        assert mems[:2] == [a.id, b.id]


def test_of_notes_that_share_alike_the_one_worded_as_asked_leads(tmp_path: Path) -> None:
    asked = "Which orders are still waiting for shipping?"
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        # both hold the question's analysed words (order, still, wait, ship); the
        # shorter one is BM25's first
        close, short = ls.save_memories(
            [
                {"learning": "Which orders are still waiting for shipping today?"},
                {"learning": "Orders still wait to ship."},
            ]
        )
        mems = [h.id for h in ls.search(question=asked).results if h.kind == "memory"]
        assert mems[:2] == [close.id, short.id]


def test_the_note_that_says_what_is_asked_outranks_a_shorter_one(tmp_path: Path) -> None:
    asked = "What is the least number of orders of the students who registered last week?"
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        # the question's other words are common among the notes: BM25 weighs the rare
        # ones, and the short note holds them in fewer words
        ls.save_memories(
            [{"learning": f"What is the least number of orders in week {i}?"} for i in range(20)]
        )
        short, long = ls.save_memories([{"learning": "Students registered."}, {"learning": asked}])
        got = ls.search(question=asked, explain=True)
        mems = [h for h in got.results if h.kind == "memory"]
        assert mems[0].id == long.id, [h.id for h in mems]
        assert any(c.channel == "words" for c in mems[0].explanation or [])


def test_the_note_that_says_more_of_the_question_outranks_bm25s_first(tmp_path: Path) -> None:
    asked = "refunds on returned orders in stores"
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        # BM25 puts the two short notes first (length normalisation); the long one is the
        # only one that also says "store"
        full, short, other = ls.save_memories(
            [
                {
                    "learning": "Refunds of returned orders are booked against the store that "
                    "sold them, one business day later, once the warehouse has checked and "
                    "confirmed the return and the carrier has scanned it."
                },
                {"learning": "Refunds of returned orders."},
                {"learning": "Returned orders get refunds."},
            ]
        )
        got = ls.search(question=asked, explain=True)
        mems = [h for h in got.results if h.kind == "memory"]
        assert [h.id for h in mems[:3]] == [full.id, short.id, other.id]
        # the words ranking has taken full text's vote in the memory list
        assert {c.channel for c in mems[0].explanation or []} == {"words"}


def test_a_saved_question_worded_as_asked_leads_an_entity_that_says_as_much(
    tmp_path: Path,
) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MINI)
        (example,) = ls.save_memories(
            [
                {
                    "learning": "How many orders are there?",
                    "query": {"sql": "SELECT count(*) FROM orders"},
                }
            ]
        )
        # the question's one content word is the entity's too: how it is asked decides
        got = ls.search(question="How many orders are there?")
        assert got.results[0].id == example.id
        # a keyword search says nothing of how it is asked: the entity keeps the lead
        got = ls.search(question="orders")
        assert got.results[0].kind != "memory"
        assert got.results[1].id == example.id


# -- merging the two lists --------------------------------------------------------------------


def _merged(leading: set[str], n: int = 9) -> list[str]:
    from layersearch.corpora.entities.rank import _Ordered, merge_kinds
    from layersearch.ranking.fusion import fuse

    ents = fuse({"fulltext": [(f"e{i}", 1.0 / (i + 1)) for i in range(5)]})
    mems = fuse({"fulltext": [(f"memory:{i}", 1.0 / (i + 1)) for i in range(1, 6)]})
    e = _Ordered(ents, list(enumerate(ents.scores)))
    m = _Ordered(mems, list(enumerate(mems.scores)))
    out = merge_kinds(e, m, n, lambda mid, _eid: mid in leading)
    return [o.fused.ids[i] for o, i, _ in out]


def test_memories_that_cover_more_take_two_turns_in_a_row_at_most() -> None:
    every = {f"memory:{i}" for i in range(1, 6)}
    assert _merged(every) == [
        "memory:1", "memory:2", "e0", "memory:3", "memory:4", "e1", "memory:5", "e2", "e3",
    ]  # fmt: skip
    # only the first leads: plain alternation after it
    assert _merged({"memory:1"}) == [
        "memory:1", "e0", "memory:2", "e1", "memory:3", "e2", "memory:4", "e3", "memory:5",
    ]  # fmt: skip
    # none leads: an entity first, then turns
    assert _merged(set(), 4) == ["e0", "memory:1", "e1", "memory:2"]
    # results for n are a prefix of those for n + k
    assert _merged(every, 4) == _merged(every)[:4]


def _tag_ranking_reference(by_tag, by_table, entity_ids, admitted, text_hits):
    """The tags channel by its definition: each memory at the first place one of its
    tags ranks (a table's memories half a place after the entity), ties by the
    question's words, then memory order; the first CHANNEL_DEPTH."""
    from layersearch.corpora.entities.rank import CHANNEL_DEPTH

    best: dict[str, float] = {}
    for pos, eid in enumerate(entity_ids):
        for mid in by_tag.get(eid, ()):
            best.setdefault(mid, float(pos))
        table = eid if eid in by_table else eid.rsplit(".", 1)[0]
        for mid in by_table.get(table, ()):
            best.setdefault(mid, pos + 0.5)
    words = {mid: r for r, (mid, _) in enumerate(text_hits)}
    ranked = sorted(
        ((m, at) for m, at in best.items() if admitted(m)),
        key=lambda x: (x[1], words.get(x[0], len(words)), int(x[0].split(":")[1])),
    )
    return [(m, 1.0 / (1.0 + at)) for m, at in ranked[:CHANNEL_DEPTH]]


@settings(max_examples=200, deadline=None)
@given(
    tags=st.dictionaries(
        st.sampled_from([f"db.t{i}" for i in range(6)] + [f"db.t{i}.c" for i in range(6)]),
        st.lists(st.integers(1, 400), min_size=1, max_size=60, unique=True),
    ),
    order=st.permutations([f"db.t{i}" for i in range(6)] + [f"db.t{i}.c" for i in range(6)]),
    dropped=st.sets(st.integers(1, 400), max_size=40),
    matched=st.lists(st.integers(1, 400), max_size=30, unique=True),
)
def test_the_tags_walk_stops_early_but_ranks_as_defined(tags, order, dropped, matched) -> None:
    from layersearch.corpora.entities.search import CorpusSearch

    by_tag = {t: [f"memory:{n}" for n in sorted(ns)] for t, ns in tags.items()}
    by_table: dict[str, list[str]] = {}
    for t, mids in sorted(by_tag.items()):
        table = t if t.count(".") == 1 else t.rsplit(".", 1)[0]
        merged = set(by_table.get(table, [])) | set(mids)
        by_table[table] = sorted(merged, key=lambda m: int(m.split(":")[1]))

    class _Corpus:
        def _tag_index(self):
            return by_tag, by_table

    admitted = lambda m: int(m.split(":")[1]) not in dropped  # noqa: E731
    hits = [(f"memory:{n}", 1.0) for n in matched]
    got = CorpusSearch._tag_ranking(_Corpus(), list(order), admitted, hits)  # type: ignore[arg-type]
    assert got == _tag_ranking_reference(by_tag, by_table, list(order), admitted, hits)
