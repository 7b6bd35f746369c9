"""A table or leaf the lexical schema channel did not list votes just after its list.

Counted as no vote at all, a table only the dense channel ranks first falls behind
tables both channels rank far down (``rank.unlisted_votes``, given to ``fuse``).
"""

from __future__ import annotations

from pathlib import Path

from layersearch import Layersearch
from layersearch.corpora.entities.config import EntityRankingConfig
from layersearch.corpora.entities.rank import unlisted_votes
from layersearch.ranking.fusion import fuse
from tests.support import MINI


def _level(doc_id: str) -> int:
    # "db.t" a table, "db.t.c" a leaf, "db" a datasource
    return {1: 1, 2: 0}.get(doc_id.count("."), -1)


def test_unlisted_ids_vote_just_after_the_list() -> None:
    ranked = {
        "schema": [("a.t", 3.0), ("a.t.x", 2.0), ("b.u", 1.0), ("a.t", 0.5)],
        "vector": [("c.v", 0.9), ("b.u", 0.8), ("c.v.y", 0.7), ("c.v", 0.1)],
        "fulltext": [("a", 2.0), ("d.w", 1.0)],
    }
    superseded = {"fulltext": lambda i: _level(i) >= 0}
    got = unlisted_votes(ranked, ["schema"], _level, superseded)
    # three ids listed (a duplicate counts once): rank 4; d.w only a superseded vote had,
    # "a" is a datasource, b.u is listed
    assert got == {"schema": [("c.v", 4, 0.0), ("c.v.y", 4, 0.0)]}
    assert ("d.w", 4, 0.0) in unlisted_votes(ranked, ["schema"], _level)["schema"]
    assert unlisted_votes({"vector": ranked["vector"]}, ["schema"], _level) == {}
    assert unlisted_votes({"schema": ranked["schema"]}, ["schema"], _level) == {}


def test_a_table_one_channel_ranks_first_passes_one_both_rank_far_down() -> None:
    fillers = [(f"s.t{i}", 100.0 - i) for i in range(28)]
    ranked = {
        "schema": [*fillers, ("z.deep", 1.0)],  # 29th
        "vector": [("c.v", 0.9), *[(f"v.t{i}", 0.8 - i / 100) for i in range(8)], ("z.deep", 0.5)],
    }
    before = fuse(ranked, level=_level)
    assert before.ids.index("z.deep") < before.ids.index("c.v")  # 1/89 + 1/70 > 1/61
    given = unlisted_votes(ranked, ["schema"], _level)
    after = fuse(ranked, level=_level, given=given)
    assert after.ids.index("c.v") < after.ids.index("z.deep")  # + 1/90
    f = after.fused(after.ids.index("c.v"))
    assert f.channels["schema"] == (30, 0.0, 1 / 90)
    assert f.best_rank == 1  # the given rank is not the channel's ranking of it


def test_search_explains_the_vote_of_an_unlisted_hit(tmp_path: Path) -> None:
    # the question's words read through the embedder would let the schema channel list
    # what the hashing embedder ranks: without them it lists fewer than the vector channel
    with Layersearch(tmp_path / "s.duckdb", embedder="fake") as ls:
        ls.load(MINI)
        ls.embed()

        def schema_votes() -> dict[str, tuple[int, float]]:
            hits = ls.search(question="tax on orders", explain=True, max_results=50).results
            return {
                h.id: (c.rank, c.score)
                for h in hits
                for c in h.explanation or []
                if c.channel == "schema"
            }

        ls.entities.ranking = EntityRankingConfig(unlisted_channels=(), neighbours=0)
        before = schema_votes()
        ls.entities.ranking = EntityRankingConfig(neighbours=0)
        after = schema_votes()
    added = {i: v for i, v in after.items() if i not in before}
    assert added, "the vector channel ranks entities the schema channel did not list"
    # every one at the rank after the schema channel's last listed id, with no score
    assert {v for v in added.values()} == {(max(r for r, _ in before.values()) + 1, 0.0)}
    assert all(after[i] == v for i, v in before.items())
