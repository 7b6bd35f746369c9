"""Relative times in a chat turn resolved against the day the turn was written.

"I went camping last Friday", written on 8 May 2023, happened on 5 May 2023; a
question asking about "early May" or "2023" shares no word with the turn, but it
does with the resolved date. :func:`resolve_dates` turns each relative expression
it recognises into the words a question would use: a day as ``"5 May 2023"`` (the
form of the session date field), a month as ``"April 2023"``, a year as ``"2022"``.

Recognised, case-insensitively: ``yesterday``, ``tomorrow``; ``last`` / ``past`` /
``next`` + a weekday (``Fri`` too), ``week``, ``weekend``, ``month`` or ``year``;
``N days / weeks / months / years ago`` with N a number, a number word up to ten,
``a`` / ``an``, ``a couple of`` (2) or ``a few`` (3). Anything else (``this
Friday``, ``in the summer``) is left alone: a wrong date is worse than none.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from layersearch.ranking.wordlists import word_numbers

__all__ = ["Period", "day_words", "named_periods", "period_of", "resolve_dates", "within"]

_WEEKDAY = word_numbers("date_weekdays")
_NUMBER = word_numbers("date_numbers")
_WEEKDAYS = "|".join(sorted(_WEEKDAY, key=len, reverse=True))
_NUMBERS = "|".join(sorted((re.escape(n) for n in _NUMBER), key=len, reverse=True))

_PATTERN = re.compile(
    rf"\b(?:(?P<day>yesterday|tomorrow)"
    rf"|(?P<dir>last|past|next)\s+(?P<unit>{_WEEKDAYS}|weekend|week|month|year)"
    rf"|(?P<n>\d{{1,2}}|{_NUMBERS})\s+(?P<ago>day|week|month|year)s?\s+ago)\b",
    re.IGNORECASE,
)


def day_words(d: date) -> str:
    """``"5 May 2023"``: day, month name and year, as people write them in questions."""
    return f"{d.day} {d:%B %Y}"


def _month_words(year: int, month: int) -> str:
    return f"{date(year, month, 1):%B %Y}"


def _shift_month(d: date, months: int) -> tuple[int, int]:
    index = d.year * 12 + d.month - 1 + months
    return index // 12, index % 12 + 1


def _resolve(match: re.Match[str], d: date) -> str | None:
    if match.group("day"):
        return day_words(d + timedelta(days=-1 if match.group("day").lower() == "yesterday" else 1))
    if match.group("ago"):
        raw = match.group("n").lower()
        n = int(raw) if raw.isdigit() else _NUMBER[" ".join(raw.split())]
        unit = match.group("ago").lower()
        if unit == "day":
            return day_words(d - timedelta(days=n))
        if unit == "week":
            return day_words(d - timedelta(weeks=n))
        if unit == "month":
            return _month_words(*_shift_month(d, -n))
        return str(d.year - n)
    sign = 1 if match.group("dir").lower() == "next" else -1
    unit = match.group("unit").lower()
    if unit in _WEEKDAY:
        if sign < 0:  # the latest such weekday before today
            back = (d.weekday() - _WEEKDAY[unit]) % 7 or 7
            return day_words(d - timedelta(days=back))
        ahead = (_WEEKDAY[unit] - d.weekday()) % 7 or 7
        return day_words(d + timedelta(days=ahead))
    if unit == "weekend":  # the Saturday of the weekend before (or after) today
        if sign < 0:
            back = (d.weekday() - 5) % 7 or 7
            return day_words(d - timedelta(days=back))
        return day_words(d + timedelta(days=(5 - d.weekday()) % 7 or 7))
    if unit == "week":
        return day_words(d + timedelta(weeks=sign))
    if unit == "month":
        return _month_words(*_shift_month(d, sign))
    return str(d.year + sign)


def resolve_dates(text: str, written: datetime | date | None) -> list[str]:
    """The dates that ``text``'s relative times name, in order, each once; ``[]``
    when the turn has no date."""
    if written is None:
        return []
    d = written.date() if isinstance(written, datetime) else written
    out: list[str] = []
    for match in _PATTERN.finditer(text):
        words = _resolve(match, d)
        if words is not None and words not in out:
            out.append(words)
    return out


#: a year, a month of a year, or a day: ``(2023, 5, None)`` is May 2023
Period = tuple[int, int | None, int | None]

_MONTHS = word_numbers("date_months")
_MONTH = "|".join(_MONTHS)
_DAY = r"(?P<{0}>[0-3]?\d)(?:st|nd|rd|th)?"
#: a date as questions name one: "May 3, 2023", "3 June, 2023", "December 2023", "2022"
_NAMED = re.compile(
    rf"\b(?:{_DAY.format('d1')}\s+(?P<m1>{_MONTH}),?\s+(?P<y1>(?:19|20)\d\d)"
    rf"|(?P<m2>{_MONTH})\s+{_DAY.format('d2')}(?:,\s*|\s+)(?P<y2>(?:19|20)\d\d)"
    rf"|(?P<m3>{_MONTH}),?\s+(?P<y3>(?:19|20)\d\d)"
    rf"|(?P<y4>(?:19|20)\d\d))\b",
    re.IGNORECASE,
)


def named_periods(text: str) -> list[Period]:
    """The dates ``text`` names outright ("on May 3, 2023", "in December 2023", "in
    2022"), in order, each once; a day that is not a real date is left out."""
    out: list[Period] = []
    for m in _NAMED.finditer(text):
        g = m.groupdict()
        year = int(g["y1"] or g["y2"] or g["y3"] or g["y4"])
        month_name = g["m1"] or g["m2"] or g["m3"]
        month = _MONTHS[month_name.lower()] if month_name else None
        raw_day = g["d1"] or g["d2"]
        day = int(raw_day) if raw_day else None
        if month is not None and day is not None:
            try:
                date(year, month, day)
            except ValueError:
                continue
        period: Period = (year, month, day)
        if period not in out:
            out.append(period)
    return out


def period_of(words: str) -> Period:
    """The period of one of :func:`resolve_dates`' results ("5 May 2023", "April
    2023", "2022")."""
    found = named_periods(words)
    if len(found) != 1:
        raise ValueError(f"not a resolved date: {words!r}")
    return found[0]


def within(inner: Period, outer: Period) -> bool:
    """Whether ``inner`` lies in ``outer``: 5 May 2023 in May 2023 and in 2023, May 2023
    in 2023; a coarser ``inner`` (May 2023) is not within a day."""
    for a, b in zip(inner, outer, strict=True):
        if b is None:
            return True
        if a != b:
            return False
    return True
