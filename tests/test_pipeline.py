"""The ranking pipeline framework: declared stages, ``without``, the config pattern, the
per-hit trace and the score rule (scores never increase down a list, no hit copies
another position's score)."""

from __future__ import annotations

import random
from dataclasses import FrozenInstanceError, dataclass

import pytest

from layersearch.errors import ConfigError
from layersearch.ranking.explain import explain_stages, stages_text
from layersearch.ranking.pipeline import (
    Move,
    Pipeline,
    RankingConfig,
    Stage,
    Trace,
    between,
    settle,
)


def _pipeline(log: list[str]) -> Pipeline[list[str]]:
    def step(name: str) -> Stage[list[str]]:
        return Stage(name, f"appends {name}", lambda state: state.append(name))

    return Pipeline(
        "toy",
        (
            Stage("read", "reads the question", lambda s: s.append("read"), switchable=False),
            step("name-votes"),
            step("join-keys"),
        ),
    )


def test_stages_run_in_order_and_without_skips() -> None:
    p = _pipeline([])
    assert p.run([]) == ["read", "name-votes", "join-keys"]
    assert p.run([], frozenset({"join-keys"})) == ["read", "name-votes"]
    assert p.switchable == ("name-votes", "join-keys")
    assert [d[0] for d in p.describe()] == ["read", "name-votes", "join-keys"]


def test_unknown_stage_names_the_known_and_the_closest() -> None:
    p = _pipeline([])
    with pytest.raises(ConfigError) as err:
        p.check({"table-vote"})
    msg = str(err.value)
    assert "unknown toy ranking stage 'table-vote'" in msg
    assert "did you mean 'name-votes'" in msg
    assert "name-votes, join-keys" in msg
    with pytest.raises(ConfigError, match="cannot be switched off"):
        p.check({"read"})
    with pytest.raises(ConfigError):
        p.run([], {"nope"})


def test_stage_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="kebab"):
        Stage("Table_Votes", "x", lambda s: None)
    with pytest.raises(ValueError, match="one line"):
        Stage("a", "two\nlines", lambda s: None)
    with pytest.raises(ValueError, match="twice"):
        Pipeline("toy", (Stage("a", "x", lambda s: None), Stage("a", "y", lambda s: None)))


@dataclass(frozen=True, slots=True)
class ToyRankingConfig(RankingConfig):
    PIPELINE_STAGES = ("name-votes", "join-keys")

    depth: int = 10
    share: float = 0.5
    infer: bool = True


def test_config_reads_a_table_with_types_checked() -> None:
    cfg = ToyRankingConfig.from_mapping({"depth": 5, "share": 1, "without": ["join-keys"]})
    assert cfg == ToyRankingConfig(depth=5, share=1.0, without=frozenset({"join-keys"}))
    assert not cfg.on("join-keys") and cfg.on("name-votes")
    assert cfg.settings()["without"] == ["join-keys"]
    assert cfg.without_stages(["name-votes"]).without == {"join-keys", "name-votes"}
    with pytest.raises(FrozenInstanceError):
        cfg.depth = 3  # type: ignore[misc]
    with pytest.raises(ConfigError, match="did you mean 'depth'"):
        ToyRankingConfig.from_mapping({"dept": 5})
    with pytest.raises(ConfigError, match="whole number"):
        ToyRankingConfig.from_mapping({"depth": 2.5})
    with pytest.raises(ConfigError, match="true or false"):
        ToyRankingConfig.from_mapping({"infer": "yes"})
    with pytest.raises(ConfigError, match="list of stage names"):
        ToyRankingConfig.from_mapping({"without": "join-keys"})
    with pytest.raises(ConfigError, match="did you mean 'join-keys'"):
        ToyRankingConfig.from_mapping({"without": ["join-key"]})
    assert ToyRankingConfig.corpus_name() == "toy"


def test_trace_records_moves_lazily_and_notes() -> None:
    t = Trace()
    t.reorder("name-votes", ["a", "b", "c"], ["b", "a", "c", "d"], "one more vote")
    t.reorder("join-keys", ["b", "a", "c", "d"], ["b", "d", "a", "c"], lambda i: f"key {i}")
    t.note("join-keys", "d", 4, 2, "lifted", 0.25)
    assert t.moves("a") == [
        Move("name-votes", 1, 2, "one more vote"),
        Move("join-keys", 2, 3, "key a"),
    ]
    assert t.moves("c") == [Move("join-keys", 3, 4, "key c")]
    up = Trace()
    up.reorder("join-keys", ["a", "b", "c"], ["c", "a", "b"], "key", up_only=True)
    assert up.moves("a") == [] and up.moves("c") == [Move("join-keys", 3, 1, "key")]
    assert t.moves("d") == [
        Move("name-votes", 0, 4, "one more vote"),
        Move("join-keys", 4, 2, "key d; lifted", 0.25),
    ]
    assert t.adjustment("d") == 0.25
    assert t.last_lift("d") == "join-keys" and t.last_lift("c") is None
    shown = explain_stages(t.moves("d"))
    assert stages_text(shown) == (
        "name-votes new→#4 (one more vote); join-keys #4→#2 +0.2500 (key d; lifted)"
    )


def test_between() -> None:
    assert between(0.3, 0.1, 0.2) == 0.2
    assert between(0.3, 0.1, 0.05) == pytest.approx(0.2)
    assert between(0.3, 0.1, 0.4) == pytest.approx(0.2)
    assert between(None, 0.1, 0.05) == pytest.approx(0.15)
    assert between(0.3, None, 0.4) == pytest.approx(0.15)
    assert between(None, None, 0.4) == 0.4


def test_settle_keeps_a_sorted_list_and_lifts_a_moved_hit() -> None:
    assert settle(["a", "b"], [0.3, 0.1]) == [0.3, 0.1]
    t = Trace()
    order = ["t", "c", "x", "y"]
    t.reorder("join-keys", ["t", "x", "y", "c"], order, "join key")
    got = settle(order, [0.03, 0.01, 0.025, 0.02], t)
    assert got == pytest.approx([0.03, 0.0275, 0.025, 0.02])
    (move,) = t.moves("c")
    assert move.stage == "join-keys" and move.adjustment == pytest.approx(0.0175)


def test_settle_is_non_increasing_and_copies_no_score() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 40)
        own = [rng.choice([0.0, rng.random(), rng.random() / 10]) for _ in range(n)]
        ids = [str(i) for i in range(n)]
        shown = settle(ids, own)
        assert all(shown[i] >= shown[i + 1] for i in range(n - 1)), own
        for i, s in enumerate(shown):
            if s == own[i]:
                continue
            # a lifted hit lies strictly between its neighbours: it copies neither
            assert s > own[i] and s > shown[i + 1]
            assert i == 0 or s < shown[i - 1]
