"""Tables and columns vote once more at their table's rank: columns with their table's
evidence.

Counted alone, a look-alike column of an unrelated database outranks the columns of
the question's third table; the ``table`` vote (``rank.table_votes``, given to
``fuse``, weighed by the separation of the fused table scores) orders columns of
equally matched tables by their tables' ranks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.rank import table_votes
from layersearch.ranking.fusion import fuse


def _level(doc_id: str) -> int:
    # "db.t" a table, "db.t.c" a leaf, "db" a datasource
    return {1: 1, 2: 0}.get(doc_id.count("."), -1)


def _table_of(doc_id: str) -> str | None:
    return {1: doc_id, 2: doc_id.rsplit(".", 1)[0]}.get(doc_id.count("."))


def test_given_votes_count_for_fused_ids_only_and_share_ranks() -> None:
    ranked = {"schema": [("a.t", 3.0), ("a.t.x", 2.0), ("b.u.y", 1.0)]}
    given = [("a.t.x", 1, 0.5), ("b.u.y", 1, 0.5), ("c.v.z", 1, 0.5)]
    got = fuse(ranked, given={"table": given})
    assert "c.v.z" not in got.ids  # a given vote never adds an id
    f = got.fused(got.ids.index("b.u.y"))
    assert f.channels["table"] == (1, 0.5, 1 / 61)
    assert f.score == 1 / 63 + 1 / 61
    assert f.best_rank == 3  # a given rank is not a channel's ranking of the id
    with pytest.raises(ValueError, match="rank 0"):
        fuse(ranked, given={"table": [("a.t.x", 0, 0.5)]})


def test_table_votes_rank_tables_among_tables() -> None:
    ranked = {
        "schema": [("a.t", 4.0), ("z.w.look_alike", 3.5), ("b.u", 3.0), ("a.t.x", 2.0)],
        "vector": [("b.u", 0.9), ("b.u.y", 0.8)],
        "fulltext": [("a", 1.0)],
    }
    fused = fuse(ranked, level=_level)
    votes = dict((i, (r, s)) for i, r, s in table_votes(fused, _level, _table_of))
    tables = [i for i in fused.ids if _level(i) == 1]
    assert votes["a.t.x"][0] == tables.index("a.t") + 1
    assert votes["b.u.y"][0] == tables.index("b.u") + 1
    assert votes["b.u.y"][1] == fused.scores[fused.ids.index("b.u")]
    assert "z.w.look_alike" not in votes  # its table was not fused
    assert votes["a.t"] == (tables.index("a.t") + 1, fused.scores[fused.ids.index("a.t")])
    assert "a" not in votes and all(_level(i) >= 0 for i in votes)  # schema entities only


def test_a_look_alike_column_falls_below_the_third_tables_columns(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersearch import Layersearch

    question = (
        "What is the first name and gender of the all the students who have more than one pet?"
    )
    # the mechanism alone: WordNet's bridges, not the shipped word vectors' readings
    monkeypatch.setenv("LAYERSEARCH_WORD_VECTORS", "")
    with Layersearch(":memory:") as ls:
        ls.load(data_dir / "spider" / "tables.json")

        def columns() -> list[str]:
            hits = ls.search(question=question, max_results=40, explain=True).results
            return [h.id.lower() for h in hits if h.kind == "column"]

        # (the learned column order off: the table vote alone)
        learned = frozenset({"learned-columns"})
        ls.entities.ranking = EntityRankingConfig(without=learned | {"table-votes"})
        before = columns()
        ls.entities.ranking = EntityRankingConfig(without=learned)
        after = columns()
        hits = ls.search(question=question, max_results=40, explain=True).results
    look_alike, wanted = "behavior_monitoring.teachers.first_name", "pets_1.student.sex"
    assert before.index(look_alike) < before.index(wanted)
    assert after.index(wanted) < after.index(look_alike)
    sex = next(h for h in hits if h.id.lower() == wanted)
    table = next(c for c in sex.explanation or [] if c.channel == "table")
    # weighed by how far the fused tables stand apart (their separation)
    assert table.separation == table.weight and 0 < table.weight <= 1 and table.rank >= 1
    assert table.contribution == pytest.approx(table.weight / (60 + table.rank), abs=1e-6)
