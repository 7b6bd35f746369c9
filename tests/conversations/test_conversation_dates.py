"""Relative times resolved against the turn's date, and the switch that indexes them."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from layersearch.corpora.conversations.dates import named_periods, period_of, resolve_dates, within
from layersearch.corpora.conversations.search import MessageSearchConfig, message_doc
from layersearch.corpora.conversations.store import MessageRow
from layersearch.errors import ConfigError
from layersearch.eval.conversations import parse_config

MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went camping last Friday", ["5 May 2023"]),
        ("last Monday", ["1 May 2023"]),  # a week back, not today
        ("next Mon", ["15 May 2023"]),
        ("Yesterday was fun, tomorrow too", ["7 May 2023", "9 May 2023"]),
        ("we met two weeks ago", ["24 April 2023"]),
        ("3 days ago and 3 days ago", ["5 May 2023"]),
        ("a couple of months ago", ["March 2023"]),
        ("a few years ago", ["2020"]),
        ("last weekend", ["6 May 2023"]),
        ("last week", ["1 May 2023"]),
        ("last month", ["April 2023"]),
        ("Last year we went", ["2022"]),
        ("this Friday, in the summer", []),
    ],
)
def test_resolve_dates(text: str, expected: list[str]) -> None:
    assert resolve_dates(text, MONDAY) == expected


def test_resolve_dates_across_a_year_and_without_a_date() -> None:
    new_year = datetime(2024, 1, 2, 9, 0, tzinfo=UTC)  # a Tuesday
    assert resolve_dates("last month, last Sunday", new_year) == [
        "December 2023",
        "31 December 2023",
    ]
    assert resolve_dates("yesterday", None) == []


def _row(text: str) -> MessageRow:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    return MessageRow("m1", "c1", "user", text, when, 0, False, False, "Caroline", "D1:1")


def test_the_switch_adds_a_resolved_field() -> None:
    turns = [_row("I went to a support group yesterday.")]
    off = message_doc(turns, 0, MessageSearchConfig())
    assert "resolved" not in off.fields and off.fields["date"] == "8 May 2023"
    on_config = parse_config(["resolve_dates=true", "boost_resolved=0.7"])
    on = message_doc(turns, 0, on_config)
    assert on.fields["resolved"] == "7 May 2023"
    assert on_config.boosts()["resolved"] == 0.7
    assert on_config.document_shape() != MessageSearchConfig().document_shape()


def test_parse_config_errors() -> None:
    with pytest.raises(ConfigError, match="expected name=value with a name from"):
        parse_config(["resolve_datez=true"])
    with pytest.raises(ConfigError, match="'maybe' is not a bool"):
        parse_config(["resolve_dates=maybe"])
    with pytest.raises(ConfigError, match="'high' is not a float"):
        parse_config(["boost_resolved=high"])


def test_a_question_naming_the_resolved_day_finds_the_turn(tmp_path: Path) -> None:
    from layersearch.corpora.conversations.records import MessageDraft, assemble_conversation
    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.store.duckdb import DuckDBStore

    may8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    may5 = datetime(2023, 5, 5, 10, 0, tzinfo=UTC)
    conv = assemble_conversation(
        source="test",
        native_id="dates",
        title=None,
        created=None,
        updated=None,
        drafts=[
            MessageDraft(
                "user", "The concert hall was packed on opening night.", may5, speaker="A"
            ),
            MessageDraft("assistant", "Sounds lovely. Did you go out again?", may8, speaker="B"),
            MessageDraft("user", "We went to the concert hall last Friday.", may8, speaker="A"),
        ],
    )
    found = {}
    for on in (False, True):
        store = DuckDBStore(tmp_path / f"s{on}.duckdb")
        svc = ConversationService(store, None, config=MessageSearchConfig(resolve_dates=on))
        svc.import_conversations([conv])
        hits = svc.search_messages("concert hall 5 May 2023", 3, channels=["fulltext"]).hits
        found[on] = [h.message_id for h in hits]
    last_friday = conv.messages[2].id
    assert found[True][0] == last_friday  # the turn that dates it to 5 May
    assert found[False][0] != last_friday  # only the turn written that day matches without


def test_named_periods_in_questions() -> None:
    assert named_periods("Who did Maria have dinner with on May 3, 2023?") == [(2023, 5, 3)]
    assert named_periods("What did John do on 3 June, 2023 and in 2022?") == [
        (2023, 6, 3),
        (2022, None, None),
    ]
    assert named_periods("What happened in December 2023?") == [(2023, 12, None)]
    assert named_periods("on 31 February 2023, or last May") == []  # no such day; no year
    assert period_of("5 May 2023") == (2023, 5, 5) and period_of("2022") == (2022, None, None)
    with pytest.raises(ValueError, match="not a resolved date"):
        period_of("last week")
    assert within((2023, 5, 5), (2023, 5, None)) and within((2023, 5, None), (2023, None, None))
    assert not within((2023, 5, None), (2023, 5, 5)) and not within((2023, 4, 30), (2023, 5, None))


def test_a_question_naming_a_month_prefers_turns_dated_in_it(tmp_path: Path) -> None:
    from layersearch.corpora.conversations.records import MessageDraft, assemble_conversation
    from layersearch.corpora.conversations.search import ConversationService
    from layersearch.store.duckdb import DuckDBStore

    may1 = datetime(2023, 5, 1, 10, 0, tzinfo=UTC)
    jul2 = datetime(2023, 7, 2, 10, 0, tzinfo=UTC)
    conv = assemble_conversation(
        source="test",
        native_id="months",
        title=None,
        created=None,
        updated=None,
        drafts=[
            MessageDraft("user", "We hiked the ridge trail with my sister.", may1, speaker="A"),
            MessageDraft("assistant", "Good for you.", may1, speaker="B"),
            MessageDraft("user", "The weather was kind.", may1, speaker="A"),
            MessageDraft("assistant", "Any plans for the summer?", jul2, speaker="B"),
            MessageDraft("user", "Last month we hiked the ridge trail with my sister.", jul2),
            MessageDraft("assistant", "Lovely.", jul2, speaker="B"),
        ],
    )
    found = {}
    for bonus in (0.0, 1.0):
        store = DuckDBStore(tmp_path / f"s{bonus}.duckdb")
        config = MessageSearchConfig(date_match_bonus=bonus)
        svc = ConversationService(store, None, config=config)
        svc.import_conversations([conv])
        hits = svc.search_messages("hiked ridge trail in June 2023", 3, channels=["fulltext"]).hits
        found[bonus] = hits
    last_month = conv.messages[4].id
    assert found[0.0][0].message_id != last_month
    assert found[1.0][0].message_id == last_month  # "last month" on 2 July is June 2023
    assert "date" in found[1.0][0].channels
