"""``eval scope``: the labelled set, its validation against the mixed store, the baseline
run, and the report when ``search`` does not take ``scope``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from layersearch import ConfigError
from layersearch.api import Layersearch
from layersearch.cli import main
from layersearch.eval import scope as ev
from layersearch.eval.scope import (
    SOURCES,
    MixedStore,
    ScopeQuery,
    build_mixed_store,
    evaluate_scope,
    gold_keys,
    read_scope_queries,
    run_baseline,
    scope_supported,
    score,
    select_half,
    validate_queries,
)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Layersearch, MixedStore]]:
    from tests.support import shared_data

    locomo = shared_data() / "locomo"
    if not locomo.is_dir():
        pytest.skip(f"LoCoMo data not found at {locomo} (set LAYERSEARCH_SHARED_DATA)")
    tmp = tmp_path_factory.mktemp("scope")
    with Layersearch(tmp / "store.duckdb") as ls:
        yield ls, build_mixed_store(ls, locomo=locomo, workdir=tmp)


def test_the_set_has_60_queries_each_in_two_sources() -> None:
    queries = read_scope_queries()
    assert len(queries) >= 60
    assert all(len(q.relevant) >= 2 for q in queries)
    # every source is someone's relevant source
    assert {s for q in queries for s in q.relevant} == set(SOURCES)


def test_every_label_names_exactly_one_item_of_the_store(
    mixed: tuple[Layersearch, MixedStore],
) -> None:
    _, store = mixed
    assert store.counts["conversations"] == 5 and store.counts["vault_notes"] > 70
    queries = read_scope_queries()
    assert validate_queries(queries, store) == []
    for q in queries:
        gold = gold_keys(q, store)
        assert {s: len(k) for s, k in gold.items()} == {s: len(v) for s, v in q.relevant.items()}


def test_validation_names_each_label_that_matches_nothing_or_many(
    mixed: tuple[Layersearch, MixedStore],
) -> None:
    _, store = mixed
    bad = ScopeQuery(
        "x1",
        "anything",
        {
            "semantic": ("shop.orders.no_such_column",),
            "memory": ("the",),  # in many learning texts
            "conversation": ({"conv_id": "locomo:30", "turn_id": "D99:1"},),
            "vault": ("Metrics/No such note",),
        },
    )
    problems = validate_queries([bad], store)
    assert len(problems) == 4
    assert any("no entity 'shop.orders.no_such_column'" in p for p in problems)
    assert any("memories with learning text containing 'the'" in p for p in problems)
    assert any("no turn D99:1 in conversation locomo:30" in p for p in problems)
    assert any("no vault note 'Metrics/No such note'" in p for p in problems)
    with pytest.raises(ConfigError, match="x1"):
        gold_keys(bad, store)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q", "relevant": {"vault": ["a"]}}', "1 source"),
        ('{"query": "q", "relevant": {"vault": ["a"], "notes": ["b"]}}', "unknown source"),
        (
            '{"query": "q", "relevant": {"vault": ["a"], "conversation": ["D1:1"]}}',
            "conversation label",
        ),
        ('{"query": " ", "relevant": {"vault": ["a"], "memory": ["b"]}}', "empty"),
        ('{"query": "q", "relevant": {"vault": [], "memory": ["b"]}}', "non-empty list"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_query_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        read_scope_queries(path)
    assert f"{path}:1" in str(info.value)


def test_a_repeated_id_is_refused(tmp_path: Path) -> None:
    row = '{"id": "a", "query": "q", "relevant": {"vault": ["a"], "memory": ["b"]}}'
    path = tmp_path / "q.jsonl"
    path.write_text(row + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"q.jsonl:2: 'id'"):
        read_scope_queries(path)


def test_score_counts_each_source_and_the_whole() -> None:
    gold = {"semantic": {"a", "b"}, "vault": {"vault:x"}}
    out = score(gold, ["a", "z", "vault:x"])
    assert out["per_source"] == {"semantic": 0.5, "vault": 1.0}
    assert out["recall"] == round(2 / 3, 4)
    assert out["missing"] == ["b"]


def test_the_baseline_calls_each_tool(mixed: tuple[Layersearch, MixedStore]) -> None:
    ls, store = mixed
    q = next(q for q in read_scope_queries() if "conversation" in q.relevant)
    warnings: list[str] = []
    tools = run_baseline(ls, q.query, warnings)
    assert set(tools) == {"search", "conversations", "vault"}
    assert all(0 < len(ranked) <= 10 for ranked in tools.values())
    assert all(k.startswith("conversation:locomo:") for k in tools["conversations"])
    assert all(k.startswith("vault:") for k in tools["vault"])
    # keys are the ones the labels resolve to: a conversation key names a stored message
    known = {ev._conv_key(c, m) for (c, _), m in store.turns.items()}
    assert set(tools["conversations"]) <= known


def test_scope_support_is_checked_with_a_real_call(
    mixed: tuple[Layersearch, MixedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    ls, _ = mixed

    def refuses(*_a: Any, **kw: Any) -> Any:
        if "scope" in kw:
            raise ConfigError("invalid request: scope: Extra inputs are not permitted")
        raise AssertionError("not reached")

    monkeypatch.setattr(ls, "search", refuses)
    assert "does not take scope" in (scope_supported(ls) or "")

    def no_source(*_a: Any, **kw: Any) -> Any:
        class Hit:
            id = "shop.orders"
            source = None

        class Res:
            results = [Hit()]

        return Res()

    monkeypatch.setattr(ls, "search", no_source)
    assert "no 'source'" in (scope_supported(ls) or "")


def test_unsupported_scope_reports_the_baseline_alone(
    monkeypatch: pytest.MonkeyPatch, mixed: tuple[Layersearch, MixedStore]
) -> None:
    monkeypatch.setattr(ev, "scope_supported", lambda _ls: "search does not take scope yet")
    from tests.support import shared_data

    out = evaluate_scope(locomo=shared_data() / "locomo", limit=5)
    assert out["queries"] == 5
    assert out["scope_all"] is None
    assert out["scope_unsupported"] == "search does not take scope yet"
    assert any("baseline only" in w for w in out["warnings"])
    assert 0.0 < out["baseline"]["recall@10"] <= 1.0


def test_the_scope_run_is_scored_against_the_same_gold(
    monkeypatch: pytest.MonkeyPatch, mixed: tuple[Layersearch, MixedStore]
) -> None:
    # a stand-in scope=all that returns nothing but the first tool's hits scores what
    # that tool scores on its own sources and 0 on the others
    from tests.support import shared_data

    monkeypatch.setattr(ev, "scope_supported", lambda _ls: None)
    monkeypatch.setattr(ev, "run_scope_all", lambda ls, q: ev.run_baseline(ls, q, [])["vault"][:10])
    records: list[dict[str, Any]] = []
    out = evaluate_scope(locomo=shared_data() / "locomo", limit=8, details=records.append)
    assert out["scope_all"]["per_source"]["semantic"]["recall@10"] == 0.0
    assert out["scope_all"]["per_source"]["vault"] == out["baseline"]["per_source"]["vault"]
    assert len(records) == 8 and all("scope_all" in r for r in records)


def _scope_json(tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``eval scope ARGS --details --json`` on the shared LoCoMo data: its JSON and the
    details' rows (skipped without the data)."""
    from tests.support import shared_data

    locomo = shared_data() / "locomo"
    if not locomo.is_dir():
        pytest.skip(f"LoCoMo data not found at {locomo}")
    details = tmp_path / "d.jsonl"
    res = CliRunner().invoke(
        main,
        ["eval", "scope", "--locomo", str(locomo), *args, "--details", str(details), "--json"],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    return json.loads(res.stdout), rows


def test_the_command_writes_json_and_details(tmp_path: Path) -> None:
    out, rows = _scope_json(tmp_path, "--limit", "3")
    assert out["queries"] == 3
    assert set(out["baseline"]["per_source"]) == set(SOURCES)
    assert [r["id"] for r in rows] == ["q01", "q02", "q03"]


def test_half_a_is_the_odd_lines_and_b_the_even_lines() -> None:
    queries = read_scope_queries()
    a, b = select_half(queries, "A"), select_half(queries, "b")
    assert [q.id for q in a[:3]] == ["q01", "q03", "q05"]
    assert [q.id for q in b[:3]] == ["q02", "q04", "q06"]
    assert len(a) + len(b) == len(queries) and not {q.id for q in a} & {q.id for q in b}
    assert select_half(queries, None) == queries
    with pytest.raises(ConfigError, match="unknown half 'C'"):
        select_half(queries, "C")


def test_the_command_scores_one_half_and_says_where_each_miss_ranked(tmp_path: Path) -> None:
    out, rows = _scope_json(tmp_path, "--half", "B", "--limit", "4")
    assert out["half"] == "B" and out["queries"] == 4
    assert [r["id"] for r in rows] == ["q02", "q04", "q06", "q08"]
    for r in rows:
        run = r["scope_all"]
        assert sum(run["places"].values()) == len(run["ranked"])
        assert [m["id"] for m in run["misses"]] == run["missing"]
        for m in run["misses"]:
            tool = {"conversation": "conversations", "vault": "vault"}.get(m["source"], "search")
            assert (m["own_rank"] is None) == (m["id"] not in r["baseline"]["tools"][tool])


def test_a_miss_is_ranked_among_its_own_kind_in_its_tool() -> None:
    tools = {
        "search": ["shop.orders", "memory:1", "shop.orders.amount", "memory:2"],
        "conversations": ["conversation:c:m1", "conversation:c:m2"],
        "vault": ["vault:Metrics/Churn"],
    }
    gold = {
        "semantic": {"shop.orders.amount", "shop.stores"},
        "memory": {"memory:2"},
        "conversation": {"conversation:c:m2"},
        "vault": {"vault:Metrics/Churn"},
    }
    missing = ["conversation:c:m2", "memory:2", "shop.orders.amount", "shop.stores"]
    assert ev._misses(missing, gold, tools) == [
        {"id": "conversation:c:m2", "source": "conversation", "own_rank": 2},
        {"id": "memory:2", "source": "memory", "own_rank": 2},  # 2nd memory, 4th of search
        {"id": "shop.orders.amount", "source": "semantic", "own_rank": 2},
        {"id": "shop.stores", "source": "semantic", "own_rank": None},
    ]
    ranked = ["shop.orders", "vault:Metrics/Churn", "memory:1", "conversation:c:m1", "x.y"]
    assert ev._places(ranked) == {"semantic": 2, "memory": 1, "conversation": 1, "vault": 1}


def test_the_command_names_missing_locomo_data(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["eval", "scope", "--locomo", str(tmp_path / "none")])
    assert res.exit_code != 0
    assert "LoCoMo data" in res.output and "does not exist" in res.output


def test_the_table_says_scope_all_was_not_measured(
    monkeypatch: pytest.MonkeyPatch, mixed: tuple[Layersearch, MixedStore]
) -> None:
    from tests.support import shared_data

    monkeypatch.setattr(ev, "scope_supported", lambda _ls: "search does not take scope yet")
    res = CliRunner().invoke(
        main, ["eval", "scope", "--locomo", str(shared_data() / "locomo"), "--limit", "4"]
    )
    assert res.exit_code == 0, res.output
    overall = next(line for line in res.stdout.splitlines() if line.startswith("| overall |"))
    assert overall.startswith("| overall | 4 |") and overall.endswith("| n/a | n/a | n/a |")
    header = next(line for line in res.stdout.splitlines() if line.startswith("| source |"))
    assert header.endswith("| scope=all | best split | own split |")
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    assert "scope=all not measured: search does not take scope yet" in res.stderr


def test_the_best_split_gives_the_places_where_the_gold_is() -> None:
    from layersearch.eval.scope import best_split

    gold = {"semantic": {"a", "b"}, "memory": {"memory:3"}, "vault": {"vault:N"}}
    lists = {
        "semantic": ["a", "x1", "x2", "b"],
        "memory": ["memory:1", "memory:2", "memory:3"],
        "conversation": ["conversation:c:1"],
        "vault": ["vault:N"],
    }
    # ten places hold everything: 4 + 3 + 1; the conversation list gets none
    full = best_split(gold, lists)
    assert full["recall"] == 1.0 and full["places"] == {"semantic": 4, "memory": 3, "vault": 1}
    # five places: the vault note (1 place) and "a" (1) first; "b" needs 4, memory:3 needs 3
    five = best_split(gold, lists, places=5)
    assert five["recall"] == 0.75 and five["missing"] == ["memory:3"]
    assert five["places"] == {"semantic": 4, "vault": 1}
    two = best_split(gold, lists, places=2)
    assert two["recall"] == 0.5 and two["places"] == {"semantic": 1, "vault": 1}
    # a repeated key counts once; a source with no list gets no place
    assert best_split({"semantic": {"a"}}, {"semantic": ["a", "a"]}, places=1)["recall"] == 1.0
    assert best_split({"vault": {"vault:N"}}, {}, places=3)["places"] == {}


def test_the_best_split_is_reported_beside_scope_all(tmp_path: Path) -> None:
    out, rows = _scope_json(tmp_path, "--limit", "4")
    for run in ("best_split", "own_split"):
        split = out[run]
        assert set(split["per_source"]) == set(SOURCES) and 0.0 <= split["recall@10"] <= 1.0
        for r in rows:
            assert sum(r[run]["places"].values()) <= 10
            assert r[run]["recall"] >= 0.0
