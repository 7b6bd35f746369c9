"""Sessions as documents in message search (``conversations.sessions``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from layersearch.corpora.conversations.search import ConversationService, MessageSearchConfig
from layersearch.corpora.conversations.sessions import (
    LABEL,
    SessionIndex,
    lift_sessions,
    standard_scores,
)
from layersearch.ranking.fusion import Fused
from layersearch.store.duckdb import DuckDBStore
from tests.support import turn_row


def test_bm25_of_a_session_counts_every_turn_of_it() -> None:
    turns = {
        "c": [
            turn_row(1, "A", "we adopted a puppy"),
            turn_row(2, "B", "from the shelter?"),
            turn_row(3, "A", "a pottery class"),
        ],
        "d": [turn_row(4, "A", "a puppy")],
    }
    session = {"c#1": 0, "c#2": 0, "c#3": 1, "c#4": 2}
    index = SessionIndex.build(turns, session)
    assert index.searched(None) is None
    assert index.searched(["c"]).tolist() == [True, True, False]
    assert not index.searched(["elsewhere"]).any()
    got = index.scores(["puppi", "shelter", "shelter"], index.searched(["c"]))
    # in c, session 0 holds both words once in its 7 tokens; session 1 neither
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    avg = (7 + 3) / 2
    one = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 7 / avg))
    assert got.tolist() == pytest.approx([2 * one, 0.0, 0.0])
    # over every session, idf and mean length are those of all three
    every = index.scores(["puppi"], None)
    idf3 = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avg3 = (7 + 3 + 2) / 3
    assert every[2] == pytest.approx(idf3 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avg3)))
    assert every[1] == 0.0 and every[0] > 0.0


def test_standard_scores_and_the_lift() -> None:
    z = standard_scores(np.array([3.0, 0.0, 0.0, 9.0]), np.array([True, True, True, False]))
    # over the first three (3, 0, 0): mean 1, spread √2
    assert z(0) == pytest.approx(2 / math.sqrt(2)) and z(1) == pytest.approx(-1 / math.sqrt(2))
    assert standard_scores(np.zeros(4), None)(0) == 0.0
    assert standard_scores(np.array([1.0]), np.array([False]))(0) == 0.0
    fused = [Fused("a", 1.0, 1), Fused("b", 0.9, 2), Fused("c", 0.0, 3)]
    session = {"a": 1, "b": 0, "c": 0}
    out = lift_sessions(fused, session.get, z, 0.5)
    assert [f.id for f in out] == ["b", "a", "c"]
    assert out[0].channels[LABEL][0] == 2 and out[0].channels[LABEL][1] == pytest.approx(z(0))
    assert lift_sessions(fused, session.get, z, 0.0) == fused


def write_chat(path: Path) -> Path:
    """Two days of one conversation: the first tells of adopting a puppy over three
    turns, the second mentions the shelter once."""
    turn = lambda i, who, text: {"speaker": who, "dia_id": i, "text": text}  # noqa: E731
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "9:00 am on 8 May, 2023",
        "session_1": [
            turn("D1:1", "Ana", "Guess what, we adopted a puppy!"),
            turn("D1:2", "Ben", "No way! What is she like?"),
            turn("D1:3", "Ana", "A beagle. We got her from the animal shelter."),
            turn("D1:4", "Ben", "Beagles are so cute."),
        ],
        "session_2_date_time": "6:00 pm on 1 June, 2023",
        "session_2": [
            turn("D2:1", "Ben", "I signed up for pottery classes."),
            turn("D2:2", "Ana", "The beagle puppy next door barked at the shelter van."),
            turn("D2:3", "Ben", "Oh no, I hope it opens again soon."),
        ],
    }
    path.write_text(json.dumps([{"sample_id": "s", "conversation": conv, "qa": []}]))
    return path


def ranked(svc: ConversationService, weight: float) -> list[tuple[str | None, dict[str, int]]]:
    svc.config = MessageSearchConfig(session_weight=weight)
    res = svc.search_messages(
        "What did Ana say about the beagle puppy she adopted at the shelter?",
        7,
        channels=["fulltext"],
    )
    return [(h.turn_id, h.channels) for h in res.hits]


def test_the_session_that_tells_the_story_lifts_its_turns(tmp_path: Path) -> None:
    svc = ConversationService(DuckDBStore(tmp_path / "s.duckdb"))
    svc.import_path(write_chat(tmp_path / "chat.json"))
    flat = ranked(svc, 0.0)
    lifted = ranked(svc, 0.5)
    assert not any(LABEL in ch for _t, ch in flat)
    # one turn of session 2 holds three of the question's words; session 1 tells the
    # story over three turns, and as one document it holds more of them
    before = [t for t, _ch in flat]
    assert before.index("D2:2") < before.index("D1:3")
    after = [t for t, _ch in lifted]
    assert after.index("D1:3") < after.index("D2:2")
    assert all(LABEL in ch for _t, ch in lifted)  # two sessions: one above, one below
    assert MessageSearchConfig().session_weight == 0.2
