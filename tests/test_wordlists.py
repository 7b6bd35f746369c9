"""The ranking's (and the query plan's) English word lists are data (``ranking/words/*.txt``), each with the line
saying what it is for, shipped in the package, and equal to what the code held before
they moved (snapshots below, copied from the code of 2c88b07)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from layersearch.corpora.conversations import dates, ranking, records
from layersearch.plan import planner
from layersearch.ranking import analyzer, wordlists
from tests.support import ROOT


def _words(text: str) -> list[str]:
    return text.split()


# --- snapshots of the literals the code held (sorted) -----------------------------------
STOP_WORDS = _words(
    """a all also an and are as at be been but by can could did do does each every
find for from give had has have how i if in into is it its just list many me much my of on
or our please show so tell than that the their them then there these they this those to was
we were what when where which who whom whose why will with would you your"""
)
CONVERSATION_STOP_WORDS = _words(
    """about after ago any anything around been before being both
during else ever he her hers herself him himself his kind kinds likely might most must not
other others own recently same several she should some something still such thing things
time type types us very way ways well yet"""
)
AUXILIARIES = _words(
    """am are aren't can can't could couldn't did didn't do does doesn't don't had
has hasn't have haven't is isn't may might must shall should shouldn't was wasn't were
weren't will won't would wouldn't"""
)
ORDER_KINDS = _words(
    """alphabetic alphabetical alphabetically ascending chronological decreasing
descending increasing lexicographic lexicographical lexicographically numeric numerical
reverse reversed"""
)
ABBREVIATIONS = {
    "acct": "account", "addr": "address", "amt": "amount", "avg": "average", "cnt": "count",
    "cust": "customer", "desc": "description", "dept": "department", "dt": "date",
    "emp": "employee", "mgr": "manager", "nbr": "number", "num": "number", "pct": "percent",
    "qty": "quantity", "tel": "telephone", "yr": "year",
}  # fmt: skip
DATE_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3,
}  # fmt: skip
DATE_PATTERN = (
    r"\b(?:(?P<day>yesterday|tomorrow)|(?P<dir>last|past|next)\s+(?P<unit>wednesday|thursday"
    r"|saturday|tuesday|monday|friday|sunday|thurs|tues|thur|mon|tue|wed|thu|fri|sat|sun"
    r"|weekend|week|month|year)|(?P<n>\d{1,2}|a\ couple\ of|a\ few|three|seven|eight|four"
    r"|five|nine|one|two|six|ten|an|a)\s+(?P<ago>day|week|month|year)s?\s+ago)\b"
)
TIME_EXPRESSION = (
    r"(?i:\b(?:yesterday|today|tonight|tomorrow|ago|weekend|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday|january|february|march|april|june|july|august|september|october"
    r"|november|december)\b|\b(?:last|next|this|past|coming|few|couple of|every|each|the other)"
    r"\s+(?:day|days|week|weeks|weekend|weekends|month|months|year|years|night|morning|evening"
    r"|afternoon|summer|spring|fall|autumn|winter|mon|tue|tues|wed|thu|thurs|fri|sat|sun)\b"
    r"|\b(?:19|20)\d\d\b)|\bMay\b"
)
ASKS_PLACE = (
    r"^\W*(?:where|(?:in |to |from )?(?:what|which) (?:city|cities|country|countries|state"
    r"|states|town|towns|place|places|location|locations))\b"
)
GROUPING_WORDS = frozenset({"by", "per", "each", "across"})
GRAINS = {
    "day": "day", "daily": "day", "week": "week", "weekly": "week", "month": "month",
    "monthly": "month", "quarter": "quarter", "quarterly": "quarter", "year": "year",
    "yearly": "year", "annual": "year",
}  # fmt: skip
ASKS_NAME = (
    r"^\W*(?:what|which)(?: is| was| are| were)?(?:\s+\S+){0,2}?\s+(?:names?|books?|movies?"
    r"|films?|songs?|bands?|games?|shows?|novels?|authors?|artists?|titles?)\b"
)


def test_every_list_loads_with_its_purpose_line() -> None:
    names = wordlists.list_names()
    assert len(names) >= 19
    for name in names:
        text = (wordlists.WORDS_DIR / f"{name}.txt").read_text(encoding="utf-8")
        assert text.startswith("# "), name
        assert len(wordlists.purpose(name)) > 20, name
        words = wordlists.word_list(name)
        assert words, name
        assert len(set(words)) == len(words), f"{name} repeats an entry"
        assert not any(w.startswith("#") for w in words), name


def test_a_list_is_read_once() -> None:
    assert wordlists.word_set("stop_words") is wordlists.word_set("stop_words")
    assert analyzer.STOP_WORDS is wordlists.word_set("stop_words")


def test_the_loaded_lists_equal_what_the_code_held() -> None:
    assert sorted(analyzer.STOP_WORDS) == STOP_WORDS
    assert sorted(ranking.CONVERSATION_STOP_WORDS) == CONVERSATION_STOP_WORDS
    assert sorted(records._AUXILIARIES) == AUXILIARIES
    assert sorted(analyzer._ORDER_KINDS) == ORDER_KINDS
    assert list(analyzer.ABBREVIATIONS.items()) == list(ABBREVIATIONS.items())
    assert ranking.TIME_EXPRESSION.pattern == TIME_EXPRESSION
    assert ranking.ASKS_PLACE.pattern == ASKS_PLACE
    assert ranking.ASKS_NAME.pattern == ASKS_NAME
    assert list(dates._NUMBER.items()) == list(DATE_NUMBERS.items())
    assert dates._PATTERN.pattern == DATE_PATTERN
    assert list(dates._MONTHS.values()) == list(range(1, 13))
    assert wordlists.word_set("grouping_words") == GROUPING_WORDS
    assert dict(planner._grains()) == GRAINS


def test_a_bad_list_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordlists, "WORDS_DIR", tmp_path)
    (tmp_path / "nopurpose.txt").write_text("alpha\nbeta\n")
    (tmp_path / "pairs.txt").write_text("# pairs for a test of the reader\nalpha\n")
    with pytest.raises(ValueError, match="first line"):
        wordlists._read("nopurpose")
    with pytest.raises(ValueError, match="no word list"):
        wordlists._read("absent")
    with pytest.raises(ValueError, match="not 'key value'"):
        wordlists.word_pairs("pairs")
    with pytest.raises(ValueError, match="not 'words number'"):
        wordlists.word_numbers("pairs")
    wordlists._read.cache_clear()


def test_the_lists_are_package_data() -> None:
    """Every list file matches a package-data pattern, so a wheel ships it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["layersearch"]
    package = ROOT / "src" / "layersearch"
    for path in wordlists.WORDS_DIR.glob("*.txt"):
        rel = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel
