"""The entity and memory ranking as declared stages (docs/ranking.md): every stage can be
switched off, scores follow the order in every list, ``explain`` shows what each stage
did, and the settings come from the config file and ``eval --without``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from layersearch import Layersearch
from layersearch.config import load_settings
from layersearch.corpora.entities.config import ENTITY_STAGES, EntityRankingConfig
from layersearch.corpora.entities.stages import ENTITY_PIPELINE
from layersearch.errors import ConfigError
from layersearch.types import Hit
from tests.support import MINI

REQUESTS: list[dict[str, object]] = [
    {"question": "monthly revenue by store", "max_results": 20},
    {"question": "customers", "max_results": 20},
    {"entities": ["orders.tax_paid"], "question": "tax", "max_results": 20},
    {"question": "store", "datasource": "shop", "max_example_queries": 3, "max_memories": 3},
    {"question": "revenue", "max_entities": 20, "max_memories": 5},
]


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layersearch]:
    with Layersearch(tmp_path_factory.mktemp("stages") / "s.duckdb") as ls:
        ls.load(MINI)
        yield ls


def _lists(ls: Layersearch, req: dict[str, object]) -> list[list[Hit]]:
    r = ls.search(**req, explain=True)  # type: ignore[arg-type]
    return [x for x in (r.results, r.entities, r.memories, r.example_queries) if x]


def test_the_declared_stages_are_the_config_s_stages() -> None:
    assert ENTITY_PIPELINE.switchable == ENTITY_STAGES
    for name, doc, _ in ENTITY_PIPELINE.describe():
        assert doc and "\n" not in doc, name


@pytest.mark.parametrize("stage", [None, *ENTITY_STAGES])
def test_scores_never_increase_down_any_list(mini: Layersearch, stage: str | None) -> None:
    mini.entities.ranking = EntityRankingConfig(without=frozenset({stage} if stage else ()))
    try:
        for req in REQUESTS:
            for hits in _lists(mini, req):
                scores = [h.score for h in hits]
                assert scores == sorted(scores, reverse=True), (stage, req, scores)
    finally:
        mini.entities.ranking = EntityRankingConfig()


#: the rule stages without the learned column order after them
RULES_ALONE = EntityRankingConfig(without=frozenset({"learned-columns"}))


def test_explain_shows_the_stages_that_moved_a_hit(mini: Layersearch) -> None:
    mini.entities.ranking = RULES_ALONE
    try:
        hits = mini.search(question="monthly revenue by store", explain=True).results
    finally:
        mini.entities.ranking = EntityRankingConfig()
    moved = {h.id: h.stages for h in hits if h.stages}
    key = moved["shop.stores.id"]
    assert key is not None
    join = next(m for m in key if m.stage == "join-keys")
    # lifted to its place with a score of its own (not the score of the place it took)
    assert join.after < join.before and join.adjustment > 0
    scores = {h.id: h.score for h in hits}
    assert scores["shop.stores.id"] < scores["shop.stores"]
    lead = moved["memory:3"]
    assert lead is not None and lead[-1].stage == "memory-lead" and lead[-1].after == 1
    line = next(h for h in hits if h.id == "shop.stores.id").line(explain=True)
    assert "moved: " in line and "join-keys #" in line
    # without explain, no stage is reported (the JSON contract is unchanged)
    plain = mini.search(question="monthly revenue by store").results
    assert all(h.stages is None for h in plain)
    assert "stages" not in plain[0].model_dump_json()


def test_switching_a_stage_off_changes_what_it_did(mini: Layersearch) -> None:
    def ids(**kw: object) -> list[str]:
        return [h.id for h in mini.search(question="monthly revenue by store", **kw).results]  # type: ignore[arg-type]

    full = ids()
    try:
        mini.entities.ranking = EntityRankingConfig(without=frozenset({"memory-lead"}))
        assert ids()[0] != "memory:3" and "memory:3" in ids()
        mini.entities.ranking = RULES_ALONE
        rules = ids()
        mini.entities.ranking = RULES_ALONE.without_stages(["join-keys"])
        assert ids(max_results=20).index("shop.stores.id") > rules.index("shop.stores.id")
    finally:
        mini.entities.ranking = EntityRankingConfig()
    assert ids() == full


def test_the_settings_file_sets_the_ranking(tmp_path: Path) -> None:
    toml = tmp_path / "layersearch.toml"
    toml.write_text('[ranking.entities]\nwithout = ["memory-lead"]\njoin_key_tables = 3\n')
    settings = load_settings(toml)
    assert settings.ranking == {"entities": {"without": ["memory-lead"], "join_key_tables": 3}}
    with Layersearch(":memory:", embedder="none", ranking=settings.ranking) as ls:
        assert ls.entities.ranking.without == {"memory-lead"}
        assert ls.entities.ranking.join_key_tables == 3
        with pytest.raises(ConfigError, match="did you mean 'join-keys'"):
            ls.set_ranking({"entities": {"without": ["join-key"]}})
        with pytest.raises(ConfigError, match="unknown corpus 'vaults'"):
            ls.set_ranking({"vaults": {}})
        with pytest.raises(ConfigError, match="did you mean 'memory_run'"):
            ls.set_ranking({"entities": {"memory_runs": 1}})
        with pytest.raises(ConfigError, match="at least 1"):
            ls.set_ranking({"entities": {"memory_run": 0}})
    toml.write_text('ranking = "off"\n')
    with pytest.raises(ConfigError, match="one table per corpus"):
        load_settings(toml)


def test_eval_without_names_the_stages(tmp_path: Path) -> None:
    from layersearch.cli import main

    pairs = tmp_path / "p.jsonl"
    pairs.write_text("")
    args = ["--embedder", "none", "eval", "examples", "--catalog", str(MINI)]
    bad = CliRunner().invoke(main, [*args, "--pairs", str(pairs), "--without", "memory-run"])
    assert bad.exit_code == 2
    assert "did you mean 'memory-runs'" in bad.output and "join-keys" in bad.output


def test_eval_schema_linking_reports_without(tmp_path: Path) -> None:
    from layersearch.cli import main

    questions = tmp_path / "q.jsonl"
    row = {"question": "revenue of orders", "db_id": "shop"}
    questions.write_text(json.dumps({**row, "gold_tables": ["orders"], "gold_columns": []}))
    args = ["--embedder", "none", "eval", "schema-linking", "--catalog", str(MINI)]
    res = CliRunner().invoke(
        main,
        [*args, "--questions", str(questions), "--json", "--without", "learned-columns"]
        + ["--without", "join-keys"],
    )
    if res.exit_code != 0 and "catalog" in res.output:
        pytest.skip("the mini layer is not a schema-linking catalog")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["without"] == ["join-keys", "learned-columns"]


def test_shown_scores_of_n_results_are_a_prefix_of_n_plus_k(mini: Layersearch) -> None:
    for req in REQUESTS:
        q = {k: v for k, v in req.items() if k != "max_results"}
        full = [(h.id, h.score) for h in mini.search(**q, max_results=30).results]  # type: ignore[arg-type]
        for n in (1, 2, 3, 5, 8):
            got = [(h.id, h.score) for h in mini.search(**q, max_results=n).results]  # type: ignore[arg-type]
            assert got == full[:n], (req, n)
