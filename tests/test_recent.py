"""The bounded most-recently-used mapping the vector and plan caches share."""

from __future__ import annotations

import pytest

from layersearch.recent import Recent


def test_the_entry_used_longest_ago_is_forgotten() -> None:
    kept: Recent[str, int] = Recent(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # a is now newer than b
    kept.put("c", 3)
    assert "b" not in kept and kept.get("a") == 1 and kept.get("c") == 3 and len(kept) == 2
    kept.put("a", 4)  # a new value makes it the newest too
    kept.put("d", 5)
    assert "c" not in kept and kept.get("a") == 4
    assert kept.get("zzz") is None
    kept.clear()
    assert len(kept) == 0


def test_a_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Recent(0)
