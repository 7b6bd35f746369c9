"""Hostile inputs that used to escape as foreign exceptions or change the store."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layersearch import ConfigError, Layersearch, LimitExceeded, SearchRequest
from layersearch.errors import LayersearchError
from tests.support import MINI

from .snapshot import snapshot


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    # One store for the module: these tests only add memories, which no assertion counts.
    with Layersearch(tmp_path_factory.mktemp("reg") / "store.duckdb") as ls:
        ls.load(MINI)
        yield ls


NATIVE = "datasource:\n  name: shop\n  models:\n    - model: a\n      columns: [{name: id}]\n"


@pytest.mark.parametrize(
    "query, message",
    [
        ({"a": {1, 2}}, "only JSON values"),
        ({"a": object()}, "only JSON values"),
        ({"since": datetime.date(2024, 1, 1)}, "only JSON values"),
        ({"x": float("nan")}, "only JSON values"),
        ({"x": float("inf")}, "only JSON values"),
    ],
)
def test_save_memory_refuses_non_json_queries(mini: Layersearch, query: Any, message: str) -> None:
    before = snapshot(mini)
    with pytest.raises(ConfigError, match=message):
        mini.save_memory("note", entities=["shop.orders"], query=query)
    assert snapshot(mini) == before


@pytest.mark.parametrize(
    "query_yaml, error",
    [
        ("{since: 2024-01-01}", ConfigError),
        ("{x: .nan}", ConfigError),
        ("{measures: [" + "{a: " * 20 + "1" + "}" * 20 + "]}", LimitExceeded),
    ],
)
def test_load_with_a_bad_memory_query_changes_nothing(
    mini: Layersearch, tmp_path: Path, query_yaml: str, error: type[Exception]
) -> None:
    (tmp_path / "d.yaml").write_text(NATIVE)
    (tmp_path / "m.yaml").write_text(f"memories: [{{learning: hi, query: {query_yaml}}}]\n")
    before = snapshot(mini)
    with pytest.raises(error, match="m.yaml memories"):
        mini.load(tmp_path)
    assert snapshot(mini) == before


@pytest.mark.parametrize("memory_id", [None, 3, "memory:²", "memory:١٢", "memory:½"])
def test_memory_ids_are_ascii_strings(mini: Layersearch, memory_id: Any) -> None:
    for call in (mini.get_memory, mini.forget_memory):
        with pytest.raises(ConfigError, match="memory"):
            call(memory_id)


@pytest.mark.parametrize("kwargs", [{"limit": "5"}, {"offset": 1.5}, {"limit": True}])
def test_list_memories_wants_integers(mini: Layersearch, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="must be integers"):
        mini.list_memories(**kwargs)


def test_search_positional_must_be_a_request(mini: Layersearch) -> None:
    with pytest.raises(ConfigError, match="SearchRequest or keyword"):
        mini.search("tax")  # type: ignore[arg-type]
    assert mini.search(SearchRequest(question="tax")).results


def test_a_lone_string_is_one_id(mini: Layersearch) -> None:
    assert [e.id for e in mini.inspect("shop.orders").entities] == ["shop.orders"]
    m = mini.save_memory("lone string tag", entities="shop.orders")  # type: ignore[arg-type]
    assert m.entities == ["shop.orders"]
    with pytest.raises(ConfigError, match="strings"):
        mini.inspect([1])  # type: ignore[list-item]


def test_empty_load_path_is_an_error_not_the_current_directory(mini: Layersearch) -> None:
    before = snapshot(mini)
    for path in ("", "   "):
        with pytest.raises(ConfigError, match="empty"):
            mini.load(path)
    assert snapshot(mini) == before


def test_empty_channel_list_is_an_error(mini: Layersearch) -> None:
    with pytest.raises(ConfigError, match="channels is empty"):
        mini.search(question="tax", channels=[])


def test_errors_are_ours(mini: Layersearch) -> None:
    # The regressions above all raised TypeError, AttributeError or ValueError before.
    for call in (
        lambda: mini.get_memory(None),  # type: ignore[arg-type]
        lambda: mini.save_memory("x", query={"a": {1}}),
        lambda: mini.list_memories(limit="x"),  # type: ignore[arg-type]
    ):
        with pytest.raises(LayersearchError):
            call()


def test_click_usage_errors_follow_the_contract_in_a_real_process(tmp_path: Path) -> None:
    # Used to print click's "Error: …" usage text on stderr, also under --json.
    import json
    import os
    import subprocess
    import sys

    from tests.support import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("LAYERSEARCH_DEBUG", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "layersearch", "--store", str(tmp_path / "s.duckdb"), *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)

    as_json = run("search", "tax", "-n", "ten", "--json")
    assert as_json.returncode == 2 and as_json.stderr == ""
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "usage" and "'ten' is not a valid integer" in error["message"]
    plain = run("load", "x", "--format", "bogus")
    assert plain.returncode == 2 and plain.stdout == ""
    first, *rest = plain.stderr.splitlines()
    assert (
        first.startswith("error: Invalid value for '--format'") and "Traceback" not in plain.stderr
    )
    assert run("--version").returncode == 0


# -- the filter time budget (issue 20): every kind of slow work is cancelled ------------------

SLOW_FILTERS = [
    # pure Python: a three-way cartesian product (32^3 bindings) building strings
    ("MATCH (a), (b), (c) WHERE a.id + b.id + c.id <> 'x' RETURN a.id AS id", {}),
    # projections and WITH ... WHERE over many rows
    ("MATCH (a), (b), (c) WITH a, b, c WHERE size(a.id + b.id) > 0 RETURN a.id AS id", {}),
    # one regular-expression match longer than the whole budget (the regex engine's timeout)
    (
        "MATCH (n:Datasource) WHERE $s =~ '[a-z]*[a-z]*[a-z]*[0-9]' RETURN n.id AS id",
        {"s": "a" * 2000},
    ),
]


@pytest.mark.parametrize("text, params", SLOW_FILTERS)
def test_filter_time_budget_cancels(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch, text: str, params: dict[str, Any]
) -> None:
    from layersearch.errors import CypherLimitError

    monkeypatch.setenv("LAYERSEARCH_FILTER_SECONDS", "0.001")
    with pytest.raises(CypherLimitError, match="MAX_FILTER_SECONDS"):
        mini.filter_ids(text, params)
    # the same filter under the default budget is not cancelled by it
    monkeypatch.delenv("LAYERSEARCH_FILTER_SECONDS")
    try:
        mini.filter_ids(text, params)
    except CypherLimitError as exc:
        assert "MAX_FILTER_SECONDS" not in str(exc)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "1e9"])
def test_filter_time_budget_setting_is_checked(
    mini: Layersearch, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("LAYERSEARCH_FILTER_SECONDS", value)
    with pytest.raises(ConfigError, match="LAYERSEARCH_FILTER_SECONDS"):
        mini.filter_ids("MATCH (n) RETURN n.id AS id")
