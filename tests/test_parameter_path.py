"""scripts/parameter_path.py on the mini fixture: how far a search parameter travels
(issue #45). The request's datasource is resolved once, before the stages: it reaches
neither the channels nor the stages, and no call of the search climbs back up the
imports (the planner's own search of a grouped question's leaves aside)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.support import script

pytestmark = pytest.mark.slow


def _script() -> ModuleType:
    return script("parameter_path")


def test_the_datasource_stops_at_the_search_boundary() -> None:
    script = _script()
    got = script.measure("datasource", script.SEMANTIC)
    # 95c453c: 8 calls, 3 climbs; bebe19c: 12 calls, 3 climbs
    assert got["chain_calls"] <= 8, got["path"]
    assert not {"corpora.entities.channels", "corpora.entities.stages"} & set(got["files"])
    assert all(up.startswith("plan.") for up in got["up"]), got["up"]


def test_the_question_path_is_shorter_than_before() -> None:
    script = _script()
    got = script.measure("question", script.SEMANTIC)
    # 95c453c: 9 calls, 2 climbs (the longest of any parameter); bebe19c: 10 calls, 1
    # climb. Each channel is a stage of its own: no dispatcher between stage and channel.
    assert got["chain_calls"] <= 8, got["path"]
    assert all(up.startswith("plan.") for up in got["up"]), got["up"]
