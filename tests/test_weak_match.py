"""The weak-match detector: its signals, the evaluator on a known coefficient file, the
flag on a question the layer cannot answer and none on one it can (with and without a
model), the measurement's framing and its AUC, and the training script's fit."""

from __future__ import annotations

import fnmatch
import json
import math
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from layersearch.api import Layersearch
from layersearch.eval import weak
from layersearch.plan import confidence
from layersearch.ranking.trees import FORMAT as FOREST_FORMAT
from layersearch.types import ChannelScore, Hit
from tests.support import MINI, MODELS, ROOT, script


def hit(ident: str, matched: list[str], sim: float | None, score: float = 0.01) -> Hit:
    why = [ChannelScore(channel="schema", rank=1, score=1.0, contribution=0.01, matched=matched)]
    if sim is not None:
        why.append(ChannelScore(channel="vector", rank=2, score=sim, contribution=0.01))
    return Hit(kind="column", id=ident, score=score, explanation=why)


def test_signals_read_exact_and_bridged_matches_and_dense_scores() -> None:
    hits = [
        hit("a.b.c", ["revenue", "store→shop 0.4"], 0.3, 0.02),
        hit("a.b.d", ["month"], 0.5, 0.01),
    ]
    x = confidence.features("revenue store month", hits)
    assert x is not None
    assert x["coverage"] == pytest.approx(2 / 3) and x["single"] == pytest.approx(1 / 3)
    assert x["bridged"] == pytest.approx(0.4 / 3)  # store, held only through shop
    assert x["words"] == pytest.approx(math.log1p(3))
    assert (x["schema_rank"], x["schema_score"], x["agree"]) == (1.0, pytest.approx(1 / 3), 1.0)
    assert x["fused_drop"] == pytest.approx(0.5)
    assert (x["dense_best"], x["dense_mean"], x["dense_spread"]) == pytest.approx((0.5, 0.4, 0.2))
    lexical = confidence.features("revenue store month", [hit("a.b.c", ["revenue"], None)])
    assert lexical is not None and "dense_best" not in lexical
    assert confidence.features("the of and", []) is None


KNOWN: dict[str, Any] = {
    "models": {
        "lexical": {
            "features": ["coverage", "words"],
            "mean": [0.5, 1.0],
            "scale": [0.25, 2.0],
            "coef": [-2.0, 1.0],
            "intercept": 0.5,
            "threshold": 0.6,
        }
    }
}


def test_the_evaluator_reads_a_known_coefficient_file(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(KNOWN))
    model = confidence.read_models(path)["lexical"]
    x = {"coverage": 0.0, "words": 3.0}
    # z = 0.5 + (-2)(0 - 0.5)/0.25 + 1 (3 - 1)/2 = 0.5 + 4 + 1
    assert model.contributions(x) == {"coverage": 4.0, "words": 1.0}
    assert model.probability(x) == pytest.approx(1 / (1 + math.exp(-5.5)))
    m = confidence.Match(x, model)
    assert m.weak and m.reasons(1) == [("coverage", 4.0)]
    text = confidence.warning(m)
    assert text.startswith("weak match: probability 1.00") and "(flagged from 0.60" in text
    assert "question words the first hits hold 0% (+4.0)" in text
    assert not confidence.Match({"coverage": 1.0, "words": 1.0}, model).weak  # p = 0.03
    bad = json.loads(json.dumps(KNOWN))
    bad["models"]["lexical"]["scale"] = [0.0, 1.0]
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="malformed"):
        confidence.read_models(path)


def test_the_shipped_file_has_both_models_and_its_validation_databases() -> None:
    models = confidence.read_models()
    assert set(models) == {"dense", "lexical"}
    assert not any(f.startswith("dense_") for f in models["lexical"].names)
    assert {"dense_best", "coverage"} <= set(models["dense"].names)
    assert all(0 < m.threshold < 1 for m in models.values())
    doc = json.loads(confidence.MODEL_FILE.read_text())
    assert doc["validation_databases"] and doc["max_answerable_flagged"] == 0.05
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["layersearch"]
    rel = confidence.MODEL_FILE.relative_to(ROOT / "src" / "layersearch").as_posix()
    assert any(fnmatch.fnmatch(rel, p) for p in patterns)  # a wheel ships it


#: one of its words ("store") is in the layer, none of the others
UNANSWERABLE = "weather forecast for the moon landing at the store"


@pytest.fixture(scope="module", params=["fake", None], ids=["fake-embedder", "no-embedder"])
def mini(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    # the hashing embedder stands in for a model; without one the lexical model decides
    with Layersearch(tmp_path_factory.mktemp("weak") / "s.duckdb", embedder=request.param) as ls:
        ls.load(MINI)
        if ls.embedder is not None:
            ls.embed()
        yield ls


def test_a_question_the_layer_cannot_answer_is_flagged(mini: Layersearch) -> None:
    resp = mini.search(question=UNANSWERABLE)
    assert resp.weak_match is True
    (text,) = [w for w in resp.warnings if w.startswith("weak match:")]
    model = "dense" if mini.embedder is not None else "lexical"
    assert f"{model} model" in text and "log-odds terms:" in text
    assert all(h.explanation is None for h in resp.results)  # not asked for


def test_an_answerable_question_is_not(mini: Layersearch) -> None:
    resp = mini.search(question="total revenue of orders")
    assert resp.weak_match is None
    assert "weak_match" not in json.loads(resp.model_dump_json())
    explained = mini.search(question="total revenue of orders", explain=True)
    assert explained.results[0].explanation  # kept when asked for
    assert [h.id for h in explained.results] == [h.id for h in resp.results]


def test_without_the_full_text_channel_nothing_is_judged(mini: Layersearch) -> None:
    # the models read the schema channel's matches, which run with full text
    question = UNANSWERABLE
    if mini.embedder is not None:
        assert mini.search(question=question, channels=["vector"]).weak_match is None
        lexical = mini.search(question=question, channels=["fulltext"])
        assert lexical.weak_match and "lexical model" in " ".join(lexical.warnings)
    # explanations asked for do not make a judge of channels the signals are not read from
    named = {"question": "revenue", "entities": ["orders", "customers"], "explain": True}
    for n in (1, 3):  # (the check's list would be the asked one, as deep as asked)
        resp = mini.search(**named, channels=["bm25"], max_results=n)
        assert resp.weak_match is None and not any("weak match" in w for w in resp.warnings)
    assert confidence.measure(question, [Hit(kind="column", id="a.b", score=0.1)]) is None
    assert confidence.measure(question, []) is None  # no hit: "no results" says it


def test_the_check_reads_channels_without_tracing_stages(mini: Layersearch) -> None:
    from layersearch.plan.answer import explained
    from layersearch.types import SearchRequest

    plain = SearchRequest(question="total revenue of orders by store")
    asked = explained(plain)
    assert asked.explain and asked._channels_only and not plain._channels_only
    assert explained(SearchRequest(entities=["shop.orders"])).explain is False
    assert explained(plain.model_copy(update={"channels": ["vector"]})).explain is False
    short = explained(plain.model_copy(update={"max_results": 3}))
    assert short.max_results == confidence.DEPTH > 3  # its depth, whatever is asked
    full = mini.entities.search(
        plain.model_copy(update={"explain": True, "max_results": confidence.DEPTH})
    )
    light = mini.entities.search(asked)
    assert [h.id for h in light.results] == [h.id for h in full.results]
    n = sum(1 for h in light.results if h.explanation)  # up to the hits the check reads
    assert [h.explanation for h in light.results] == [
        h.explanation if i < n else None for i, h in enumerate(full.results)
    ]
    fusion_stages = {"schema-over-fulltext"}
    assert explained(plain.model_copy(update={"max_results": 0})).max_results == 0  # refused
    assert any(m.stage in fusion_stages for h in full.results for m in h.stages or [])
    assert not any(m.stage in fusion_stages for h in light.results for m in h.stages or [])


def test_auc_counts_ordered_pairs_and_ties_half() -> None:
    assert weak.auc([0.1, 0.9], [False, True]) == 1.0
    assert weak.auc([0.9, 0.1], [False, True]) == 0.0
    assert weak.auc([0.5, 0.5, 0.7], [False, True, True]) == pytest.approx(0.75)
    assert weak.auc([0.5], [True]) is None


def test_each_question_is_asked_of_its_own_layer_and_of_one_without_it() -> None:
    groups = weak.layers([f"db{i}" for i in range(30)], seed=0)
    assert sorted(d for g in groups for d in g) == sorted(f"db{i}" for i in range(30))
    assert {len(g) for g in groups[:-1]} <= set(weak.LAYER_SIZES)
    assert groups == weak.layers([f"db{i}" for i in range(30)], seed=0)
    questions = {
        "library": ["How many books does each author have?", "titles of the books"],
        "flight_ops": ["Which pilots flew the longest flights?"],
        "school": ["average grade of the students"],
    }
    recs = weak.collect(ROOT / "examples", questions, sorted(questions), per_db=1)
    assert len(recs) == 6  # one per database, asked twice
    assert sum(r["right"] for r in recs) == 3
    layers = weak.layers(sorted(questions), seed=0)
    for r in recs:
        assert r["right"] == (r["db"] in layers[r["layer"]])
        assert set(r["x"]) >= {"coverage", "agree"} and "dense_best" not in r["x"]


def _script() -> ModuleType:
    return script("train_weak_match")


def test_the_fit_separates_and_the_threshold_bounds_false_flags() -> None:
    np = pytest.importorskip("numpy")
    train = _script()
    x = np.array([[0.0], [0.2], [0.8], [1.0], [0.4], [0.6]])
    y = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    coef, _ = train.fit((x - x.mean()) / x.std(), y)
    assert coef[0] < 0  # more coverage, less likely unanswerable
    probs = [0.9, 0.1, 0.2, 0.3, 0.05] * 4  # 20 answerable askings
    t = train.threshold_for(probs, 0.2)
    assert t == pytest.approx(0.6)  # between the 4 askings it may flag and the rest
    t = train.threshold_for(probs, 0.05)  # one may be flagged, but four tie at 0.9
    assert sum(p >= t for p in probs) == 0 and t > 0.9


def test_a_halved_database_keeps_its_other_tables_whole(tmp_path: Path) -> None:
    tables = json.loads((ROOT / "examples" / "spider" / "tables.json").read_text())
    db = max(tables, key=lambda t: len(t["table_names_original"]))
    half, removed = weak.halved(db)
    names = db["table_names_original"]
    assert len(half["table_names_original"]) == len(names) - len(names) // 2
    assert removed == {
        f"{db['db_id']}.{t}".lower() for t in names if t not in half["table_names_original"]
    }
    # every kept column sits in the same table as before, under its new index
    kept = half["table_names_original"]
    before = {(names[t], c) for t, c in db["column_names_original"] if t != -1}
    after = {(kept[t], c) for t, c in half["column_names_original"] if t != -1}
    assert after == {(t, c) for t, c in before if t in kept} and after
    assert weak.halved(db) == (half, removed)  # the same on every run
    path = tmp_path / "half.json"
    path.write_text(json.dumps([half]))
    with Layersearch(":memory:") as ls:
        report = ls.load(path)
    assert report.models == len(kept)


@pytest.mark.parametrize("n", [1, 3])
def test_the_sign_does_not_depend_on_how_many_results_are_asked(tmp_path: Path, n: int) -> None:
    # the check reads the first entity hits of a list confidence.DEPTH deep, whatever
    # max_results is: the same sign, and the asked list is the deep list's prefix (a
    # case the property tests found: with one result the check read one hit)
    ask = {"question": "revenue", "entities": ["orders", "campaigns"], "datasource": "marketing"}
    with Layersearch(tmp_path / "s.duckdb") as ls:
        ls.load(MODELS)
        deep = ls.search(**ask, max_results=confidence.DEPTH)
        short = ls.search(**ask, max_results=n)
    assert short.weak_match == deep.weak_match and short.warnings == deep.warnings
    assert short.results == deep.results[:n]


#: one tree: coverage <= 0.5 → +2 (log-odds), else -1; a second adds 0.5 on short questions
TREES: dict[str, Any] = {
    "models": {
        "lexical": {
            "kind": "trees",
            "threshold": 0.7,
            "forest": {
                "format": FOREST_FORMAT,
                "features": ["coverage", "words"],
                "trees": [
                    {
                        "feature": [0, -1, -1],
                        "threshold": [0.5, 0.0, 0.0],
                        "left": [1, -1, -1],
                        "right": [2, -1, -1],
                        "value": [0.0, 2.0, -1.0],
                    },
                    {
                        "feature": [1, -1, -1],
                        "threshold": [1.0, 0.0, 0.0],
                        "left": [1, -1, -1],
                        "right": [2, -1, -1],
                        "value": [0.0, 0.5, 0.0],
                    },
                ],
            },
        }
    }
}


def test_a_trees_model_reads_its_forest_as_log_odds(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(TREES))
    model = confidence.read_models(path)["lexical"]
    assert isinstance(model, confidence.TreesModel) and model.names == ("coverage", "words")
    low = {"coverage": 0.2, "words": 0.5}  # z = 2 + 0.5
    assert model.probability(low) == pytest.approx(1 / (1 + math.exp(-2.5)))
    assert model.contributions(low) == pytest.approx({"coverage": 2.0, "words": 0.5})
    m = confidence.Match(low, model)
    assert m.weak and m.reasons(1) == [("coverage", pytest.approx(2.0))]
    assert "lexical model" in confidence.warning(m)
    assert not confidence.Match({"coverage": 0.9, "words": 2.0}, model).weak  # z = -1


def test_training_chooses_the_kind_by_cross_validation_and_bounds_false_flags() -> None:
    np = pytest.importorskip("numpy")
    train = _script()
    rng = np.random.RandomState(0)

    def records(n: int, dbs: int) -> list[dict[str, Any]]:
        out = []
        for i in range(n):
            right = bool(i % 2)
            cov = float(np.clip(rng.normal(0.7 if right else 0.3, 0.2), 0, 1))
            x = {"coverage": cov, "words": float(rng.uniform(1, 3))}
            out.append({"db": f"db{i % dbs}", "right": right, "frame": "layer", "x": x})
        return out

    model, metrics = train.train_model(
        "lexical", ["coverage", "words"], records(400, 8), records(200, 4), 0.05
    )
    assert metrics["chosen"] in metrics["cross_validated_auc"]
    assert metrics["cross_validated_auc"]["regression"] > 0.8
    best = max(metrics["cross_validated_auc"].values())
    assert metrics["cross_validated_auc"][metrics["chosen"]] == best
    assert metrics["validation"]["answerable_flagged"] <= 0.05
    assert metrics["validation"]["auc"] > 0.8 and 0 < model["threshold"] < 1
