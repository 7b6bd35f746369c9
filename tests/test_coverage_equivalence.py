"""The table-first ``schema`` channel ranks exactly as its readable reference.

``tests/eval/test_coverage_oracle.py`` checks a few real Spider databases; they
hold fewer tables than ``SchemaSearch.top_tables``, so the paths that only the big catalogs
take (the cut to the best tables, ties at that cut, leaves left out because
their table is not among the best, orphan nodes, allowlists) are checked here
on seeded random schemas with a small vocabulary, where ties are everywhere.
"""

from __future__ import annotations

import random

import pytest

from layersearch.corpora.entities.config import DEFAULT_INDEX
from layersearch.ranking.coverage import CoverageIndex, CoverageNode
from layersearch.ranking.params import SCHEMA_SEARCH
from tests.reference import coverage_ref as ref

WORDS = [
    "order", "customer", "amount", "status", "date", "store", "revenue", "city",
    "country", "name", "price", "total", "region", "product", "count", "id",
]  # fmt: skip
FIELDS = ("name", "label", "description", "values", "formula")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _schema(seed: int) -> tuple[list[CoverageNode], list[tuple[str, str]], set[str]]:
    rng = random.Random(seed)
    nodes: list[CoverageNode] = []
    tables: list[str] = []
    keys: set[str] = set()
    for g in range(rng.randint(1, 4)):
        gid = f"g{g}"
        nodes.append(CoverageNode(gid, "group", None, {"name": _text(rng, 1)}))
        for t in range(rng.randint(5, 45)):
            tid = f"{gid}.t{t:02d}"
            tables.append(tid)
            nodes.append(
                CoverageNode(
                    tid, "table", gid, {"name": _text(rng, 2), "description": _text(rng, 3)}
                )
            )
            for c in range(rng.randint(0, 6)):
                cid = f"{tid}.c{c}"
                fields = {f: _text(rng, rng.randint(1, 3)) for f in rng.sample(FIELDS, 2)}
                nodes.append(CoverageNode(cid, "leaf", tid, fields))
                if rng.random() < 0.2:
                    keys.add(cid)
                if rng.random() < 0.1:  # a leaf under a leaf: its table is its grandparent
                    nodes.append(CoverageNode(f"{cid}.x", "leaf", cid, {"name": _text(rng, 2)}))
    # a leaf whose parent is unknown, and a table outside any group
    nodes.append(CoverageNode("lost.leaf", "leaf", "nowhere", {"name": "order amount"}))
    nodes.append(CoverageNode("solo", "table", None, {"name": "order status"}))
    links = [(rng.choice(tables), rng.choice(tables)) for _ in range(len(tables) // 2)]
    rng.shuffle(nodes)
    return nodes, links, keys


def _pair(seed: int) -> tuple[CoverageIndex, ref.CoverageIndex, list[CoverageNode]]:
    nodes, links, keys = _schema(seed)
    fast = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), links, keys)
    slow = ref.CoverageIndex(
        [
            ref.CoverageNode(n.id, n.level, n.parent, n.fields)
            for n in sorted(nodes, key=lambda n: n.id)
        ],
        DEFAULT_INDEX.field_weights(),
        links,
        keys,
    )
    return fast, slow, nodes


def _same(
    got: list[tuple[str, float]], slow: ref.CoverageIndex, text: str, k: int, **kw: object
) -> bool:
    """Whether ``got`` is the reference's ranking in exactly its order (True), or only up to
    the order of scores equal to 9 digits (False; anything else fails).

    The reference sorts raw float sums; the index sorts them rounded to 9 digits, so that
    sums taken in another order tie as they should. Where two sums differ in the 15th digit
    the two may order a pair differently; the scores, and which ids score what, agree."""
    want_all = slow.search(text, 10**6, **kw)  # type: ignore[arg-type]
    want = want_all[:k]
    if [i for i, _ in got] == [i for i, _ in want]:
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert abs(a - b) < 1e-9, text
        return True
    assert len(got) == len(want), text
    reference = dict(want_all)
    assert len({i for i, _ in got}) == len(got), text
    for (i, a), (_, b) in zip(got, want, strict=True):
        assert abs(a - b) < 1e-9, text
        assert abs(reference[i] - a) < 1e-9, text
    return False


@pytest.mark.parametrize("seed", range(8))
def test_table_first_matches_reference(seed: int) -> None:
    fast, slow, nodes = _pair(seed)
    rng = random.Random(1000 + seed)
    groups = sorted({n.id for n in nodes if n.level == "group"})
    n_tables = sum(n.level == "table" for n in nodes)
    if seed == 0:
        assert n_tables > SCHEMA_SEARCH.top_tables  # the cut to the best tables is exercised
    exact = total = 0
    for _ in range(25):
        text = _text(rng, rng.randint(1, 5))
        runs: list[tuple[int, dict[str, object]]] = [(1, {}), (7, {}), (200, {})]
        runs.append((50, {"scope": rng.choice(groups)}))
        runs.append((50, {"ids": {n.id for n in nodes if rng.random() < 0.5}}))
        for k, kw in runs:
            exact += _same(fast.search(text, k, **kw), slow, text, k, **kw)  # type: ignore[arg-type]
            total += 1
    # near-equal sums ordered apart by the reference are rare
    assert exact >= total - 3, (exact, total)


def test_unknown_words_and_empty_index() -> None:
    fast, slow, _ = _pair(3)
    assert fast.search("zebra quokka", 10) == slow.search("zebra quokka", 10) == []
    assert fast.search("order", 0) == []
    empty = CoverageIndex([], DEFAULT_INDEX.field_weights())
    assert empty.search("order amount", 10) == []


def test_state_is_plain_data() -> None:
    """The index is persisted by walking its attributes: nothing callable may hide there."""
    import numpy as np

    fast, _, _ = _pair(1)

    def check(value: object, where: str) -> None:
        if isinstance(value, np.ndarray | str | int | float | bool | type(None)):
            return
        if isinstance(value, list | tuple):
            for i, v in enumerate(value):
                check(v, f"{where}[{i}]")
            return
        if isinstance(value, dict):
            for k, v in value.items():
                check(v, f"{where}[{k!r}]")
            return
        if hasattr(value, "__dict__") and not callable(value):
            for k, v in vars(value).items():
                check(v, f"{where}.{k}")
            return
        raise AssertionError(f"{where} is {type(value).__name__}")

    check(fast, "index")
