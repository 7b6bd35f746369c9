"""The numpy ``schema`` channel agrees with its pure-Python reference on real schemas.

``tests/reference/coverage_ref.py`` is the readable implementation of the same
scoring; both are fed the same nodes (from a few Spider databases) and must
rank the same ids with the same scores, for catalog-wide and scoped questions.
"""

from __future__ import annotations

import json
from pathlib import Path

from layersearch.corpora.entities import build_coverage
from layersearch.ranking.coverage import CoverageIndex
from tests.reference import coverage_ref as ref

DBS = ("car_1", "network_1", "pets_1", "flight_2", "concert_singer", "world_1")


def test_numpy_channel_matches_reference(data_dir: Path, tmp_path: Path) -> None:
    from layersearch.api import Layersearch
    from layersearch.corpora.entities import coverage as ent

    tables = json.loads((data_dir / "spider" / "tables.json").read_text())
    catalog = tmp_path / "tables.json"
    catalog.write_text(json.dumps([t for t in tables if t["db_id"] in DBS]))
    questions = [
        q for q in json.loads((data_dir / "spider" / "dev.json").read_text()) if q["db_id"] in DBS
    ][::7]
    with Layersearch(":memory:") as ls:
        ls.load(str(catalog))
        corpus = ls.corpus()
        captured: dict[str, object] = {}
        original = ent.CoverageIndex

        def capture(nodes, weights, links=(), keys=(), **_):  # type: ignore[no-untyped-def]
            # The reference scores the question's own terms: vocabulary bridges (weighted
            # slots, tests/test_bridges.py) are left out of both.
            nodes = list(nodes)
            captured.update(nodes=nodes, weights=weights, links=list(links), keys=set(keys))
            return original(nodes, weights, links=captured["links"], keys=captured["keys"])

        ent.CoverageIndex = capture  # type: ignore[misc]
        try:
            fast = build_coverage(corpus.entities, corpus.edges_out)
        finally:
            ent.CoverageIndex = original  # type: ignore[misc]
    assert isinstance(fast, CoverageIndex)
    slow = ref.CoverageIndex(
        [
            ref.CoverageNode(n.id, n.level, n.parent, n.fields, n.data_type)
            for n in captured["nodes"]  # type: ignore[attr-defined]
        ],
        captured["weights"],  # type: ignore[arg-type]
        captured["links"],  # type: ignore[arg-type]
        captured["keys"],  # type: ignore[arg-type]
    )
    assert len(questions) > 20
    for q in questions:
        for scope in (None, q["db_id"]):
            got = fast.search(q["question"], 30, scope=scope)
            want = slow.search(q["question"], 30, scope=scope)
            assert [i for i, _ in got] == [i for i, _ in want], q["question"]
            for (_, a), (_, b) in zip(got, want, strict=True):
                assert abs(a - b) < 1e-6, q["question"]
