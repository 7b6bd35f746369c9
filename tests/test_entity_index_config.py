"""The entity corpus's tuned numbers in typed config (docs/ranking.md): the channels'
query-time settings in ``[ranking.entities]``, the index-time ones in
``[ranking.entities.index]``; a schema index built with other index-time settings is
not read back, it is rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layersearch import Layersearch
from layersearch.config import load_settings
from layersearch.corpora.entities.config import (
    DEFAULT_INDEX,
    EntityIndexConfig,
    EntityRankingConfig,
)
from layersearch.errors import ConfigError
from layersearch.ranking.coverage import CoverageIndex, CoverageNode
from layersearch.ranking.params import (
    BRIDGES,
    QUESTION_READING,
    SCHEMA_SEARCH,
    WORD_NEIGHBOURS,
    VocabularyBridges,
)
from tests.support import MINI


def test_the_defaults_are_those_the_ranking_was_tuned_with() -> None:
    # (eval schema-linking on Spider dev gives the same numbers with them: docs/ranking.md)
    assert DEFAULT_INDEX.field_weights() == {
        "name": 3.0,
        "label": 2.0,
        "parent": 1.0,
        "description": 1.0,
        "values": 1.0,
        "formula": 0.7,
        "text": 1.5,
        "tags": 0.7,
    }
    cfg = EntityRankingConfig()
    assert (cfg.link_prior, cfg.top_tables, cfg.top_leaf_tables, cfg.value_fit) == (
        0.5,
        50,
        10,
        0.5,
    )
    assert cfg.schema_search() == SCHEMA_SEARCH
    assert (cfg.rrf_k, cfg.evidence_top, cfg.ancestor_weight) == (60, 10, 0.5)
    assert (cfg.neighbours, cfg.question_words) == (3, 32)
    assert cfg.word_neighbours() == WORD_NEIGHBOURS
    assert (cfg.bridge_known_words, cfg.abbreviate_known_words, cfg.elsewhere_synonyms) == (
        False,
        True,
        True,
    )
    assert cfg.abbreviation_weight == 1.0 and cfg.question_reading() == QUESTION_READING
    assert cfg.index == DEFAULT_INDEX and DEFAULT_INDEX.key() == ""
    assert DEFAULT_INDEX.vocabulary() == BRIDGES
    assert (BRIDGES.synonym_weight, BRIDGES.related_weight) == (0.5, 0.3)
    assert (BRIDGES.max_senses, BRIDGES.max_related) == (3, 40)
    lengths = (BRIDGES.min_abbreviation, BRIDGES.max_abbreviation, BRIDGES.min_truncation)
    assert lengths == (3, 6, 4)


def test_the_settings_file_reaches_the_index_config(tmp_path: Path) -> None:
    toml = tmp_path / "layersearch.toml"
    toml.write_text(
        "[ranking.entities]\nlink_prior = 0.25\n"
        "[ranking.entities.index]\nname_weight = 2\nvocabulary_bridges = false\n"
    )
    settings = load_settings(toml)
    with Layersearch(":memory:", embedder="none", ranking=settings.ranking) as ls:
        cfg = ls.entities.ranking
        assert cfg.link_prior == 0.25
        assert cfg.index.name_weight == 2.0 and cfg.index.vocabulary_bridges is False
        assert cfg.index.key() != "" and cfg.index.field_weights()["name"] == 2.0


@pytest.mark.parametrize(
    ("ranking", "message"),
    [
        ({"entities": {"link_prior": -1}}, "link_prior must not be negative"),
        ({"entities": {"top_tables": 0}}, "top_tables must be at least 1"),
        ({"entities": {"link_priors": 1}}, "did you mean 'link_prior'"),
        ({"entities": {"index": {"name_weigth": 1}}}, "did you mean 'name_weight'"),
        ({"entities": {"index": {"max_senses": "3"}}}, r"index\.max_senses: a whole number"),
        ({"entities": {"index": 3}}, "index: a table of settings"),
    ],
)
def test_bad_settings_are_refused(ranking: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Layersearch(":memory:", embedder="none", ranking=ranking)


def test_every_field_weight_at_zero_is_refused() -> None:
    zero = {f"{name}_weight": 0 for name in DEFAULT_INDEX.field_weights()}
    with pytest.raises(ConfigError, match="at least one field weight"):
        EntityIndexConfig.from_mapping(zero)


def _index_settings(ls: Layersearch) -> str:
    """The index-time settings key of the schema index persisted with the snapshot."""
    snapshot = ls.entities.corpus().snapshot
    assert snapshot.dir is not None
    meta = json.loads((snapshot.dir / "coverage" / "coverage.json").read_text())
    return str(meta.get("settings", ""))


def test_a_change_of_an_index_time_setting_rebuilds_the_schema_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "s.duckdb"
    question = "monthly revenue by store"
    with Layersearch(store, embedder="none") as ls:
        ls.load(MINI)
        plain = [h.id for h in ls.search(question=question, max_results=10).results]
        assert _index_settings(ls) == ""
    other = {"entities": {"index": {"name_weight": 0.1, "vocabulary_bridges": False}}}
    with Layersearch(store, embedder="none", ranking=other) as ls:
        changed = [h.id for h in ls.search(question=question, max_results=10).results]
        assert _index_settings(ls) == ls.entities.ranking.index.key()
    assert "built with other index settings" in caplog.text
    assert changed != plain  # the new weights rank
    caplog.clear()
    with Layersearch(store, embedder="none") as ls:
        again = [h.id for h in ls.search(question=question, max_results=10).results]
        assert _index_settings(ls) == ""
        ls.set_ranking(other)  # a running instance given other index settings
        assert [h.id for h in ls.search(question=question, max_results=10).results] == changed
    assert again == plain
    assert "built with other index settings" in caplog.text


def test_a_query_time_setting_reaches_the_schema_channel(tmp_path: Path) -> None:
    question = "monthly revenue by store"
    with Layersearch(tmp_path / "s.duckdb", embedder="none") as ls:
        ls.load(MINI)

        def schema(**ranking: object) -> list[tuple[str, float]]:
            ls.set_ranking({"entities": {**ranking}})
            hits = ls.search(question=question, explain=True, max_results=20).results
            return [
                (h.id, c.score) for h in hits for c in h.explanation or [] if c.channel == "schema"
            ]

        plain = schema()
        assert schema(link_prior=0.5, value_fit=0.5) == plain  # the defaults, given
        assert schema(link_prior=4.0) != plain


def test_the_part_lengths_are_those_the_index_was_built_with() -> None:
    nodes = [
        CoverageNode("shop", "group", None, {"name": "shop"}),
        CoverageNode("shop.orders", "table", "shop", {"name": "orders"}),
        CoverageNode("shop.orders.qty", "leaf", "shop.orders", {"name": "qty"}),
    ]
    plain = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=True)
    assert plain.abbr_shortest.tolist() == [3, 4]
    assert plain._abbreviating("quantity")  # qty abbreviates quantity
    assert "shop.orders.qty" in dict(plain.search("quantity of orders", 5))
    longer = CoverageIndex(
        nodes,
        DEFAULT_INDEX.field_weights(),
        bridges=True,
        vocabulary=VocabularyBridges(min_abbreviation=4),
    )
    assert longer.abbr_shortest.tolist() == [4, 4]
    assert longer._abbreviating("quantity") == []
    derived = CoverageIndex(nodes, DEFAULT_INDEX.field_weights(), bridges=longer)
    assert derived.abbr_shortest.tolist() == [4, 4]  # a derived index reads as its source
