"""``explain`` lists the question words the schema channel matched in a hit's own text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from layersearch import Layersearch
from layersearch.corpora.entities.matched import matched_words
from layersearch.ranking.coverage_terms import QueryReading
from tests.support import hr_layer


def test_exact_words_alone_and_bridges_with_their_term_and_weight() -> None:
    reading = QueryReading(
        slots=(((1, 1.0),), ((2, 0.4), (3, 0.3)), ((4, 1.0),)),
        share=1.0,
        elsewhere=(None, None, None),
        keys=("budget", "divis", "age"),
    )
    question = "The budget of the divisions"
    # the best reading the hit holds; a word it does not hold is left out
    assert matched_words(reading, question, {1: "budget", 3: "department"}) == [
        "budget",
        "divisions→department 0.30",
    ]
    assert matched_words(reading, question, {2: "unit", 3: "department"}) == ["divisions→unit 0.40"]
    assert matched_words(reading, question, {9: "other"}) == []


def _why(ls: Layersearch, question: str) -> dict[str, list[str] | None]:
    resp = ls.search(question=question, channels=["fulltext"], explain=True, max_results=5)
    out: dict[str, list[str] | None] = {}
    for h in resp.results:
        schema = [c for c in h.explanation or [] if c.channel == "schema"]
        out[h.id] = schema[0].matched if schema else None
    return out


def test_search_explains_the_words_each_hit_matched(tmp_path: Path) -> None:
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(hr_layer(tmp_path))
        why = _why(ls, "What is the budget of each dept?")
        assert why["hr.department.budget"] == ["budget"]
        # an abbreviation the analyzer expands reads as the question's own word
        assert why["hr.department"] == ["dept"]
        why = _why(ls, "which divisions are there")
        # a nearest word by the shipped word vectors, at its bridge weight
        (reading,) = why["hr.department"] or []
        assert re.fullmatch(r"divisions→department 0\.\d\d", reading)
        assert why["hr.department.budget"] == []


def test_matched_words_appear_only_in_the_schema_channel_and_in_the_line(
    tmp_path: Path,
) -> None:
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(hr_layer(tmp_path))
        ls.embed()
        resp = ls.search(question="budget of each dept", explain=True)
        hit = resp.results[0]
        assert hit.id == "hr.department.budget"
        wire = json.loads(resp.model_dump_json())["results"][0]["explanation"]
        assert {c["channel"]: c.get("matched") for c in wire} == {
            "schema": ["budget"],
            "vector": None,
        }
        assert ["matched" in c for c in wire] == [c["channel"] == "schema" for c in wire]
        assert "schema #1 (" in hit.line(explain=True)
        assert "[budget]" in hit.line(explain=True)
        plain = ls.search(question="budget of each dept", channels=["fulltext"])
        assert plain.results[0].explanation is None
