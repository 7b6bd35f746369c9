"""scripts/parameter_path.py on the mini fixture: how far a search parameter travels
(issue #45). The request's datasource is resolved once, before the stages: it reaches
neither the channels nor the stages, and no call of the search climbs back up the
imports (the planner's own search of a grouped question's leaves aside)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.slow


def _script() -> ModuleType:
    path = ROOT / "scripts" / "parameter_path.py"
    spec = importlib.util.spec_from_file_location("parameter_path", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
