"""Time in questions and memories: the period a question is about, and the periods a memory states.

A question can name the time it is about ("in May", "last week", "in 2022", 去年, 上个月) and it
can ask *for* a time ("When did ...", "How long ago ...", 什么时候). A memory is about its
`event_time` and about any time its own words state, read relative to that event time: "I went
yesterday", written on 8 May, is about 7 May; "last year", written in 2023, is about 2022.

- `question_times(query, reference)`: the periods the question names, relative words read
  against `reference` (the time the question is asked about). A month or season without a year
  ("in June", "during the summer") is a `MonthsOfYear`: any year's June matches, since the words
  do not say which; a year, a dated month or a day is a `Period`.
- `asks_for_time(query)`: whether the question asks when, or how long.
- `memory_periods(memory)`: the memory's event day and every period its words state
  (`stated_periods(content, event_time)`).
- `states_time(content)`: whether the words state a time (a date, a relative day, a duration).

These are word rules for English and Chinese, not a parser of every date phrase: a phrase they do
not know contributes nothing, so a missed phrase costs a signal, never a wrong filter. Periods
are half-open UTC day ranges, deliberately generous ("last week" is the 7 days of the previous
calendar week; "3 months ago" the month either side of that point), because the ranking uses
them as evidence, not as a filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Final

from rearview.models import Memory

__all__ = [
    "MonthsOfYear",
    "Period",
    "QuestionTimes",
    "asks_for_time",
    "matches",
    "memory_periods",
    "question_times",
    "stated_periods",
    "states_time",
]


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open UTC range [start, end)."""

    start: datetime
    end: datetime

    def overlaps(self, other: Period) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True, slots=True)
class MonthsOfYear:
    """Months of any year (1..12): what "in June" or "in the summer" says without a year."""

    months: frozenset[int]

    def overlaps(self, period: Period) -> bool:
        return any(month in self.months for month in _months_touched(period))


QuestionTimes = tuple[Period | MonthsOfYear, ...]
"""The periods a question names (empty: it names none)."""

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_WEEKDAYS: Final = {
    name: number
    for number, names in enumerate(
        (("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thurs"),
         ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")),
    )
    for name in names
}  # fmt: skip
_SEASONS: Final = {
    "spring": (3, 4, 5), "summer": (6, 7, 8), "fall": (9, 10, 11), "autumn": (9, 10, 11),
    "winter": (12, 1, 2), "春天": (3, 4, 5), "夏天": (6, 7, 8), "秋天": (9, 10, 11), "冬天": (12, 1, 2),
}  # fmt: skip
_NUMBERS: Final = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
    "few": 3, "several": 3,
}  # fmt: skip
_CN_DIGITS: Final = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNIT_DAYS: Final = {
    "day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365,
    "天": 1, "日": 1, "周": 7, "星期": 7, "个星期": 7, "个月": 30, "月": 30, "年": 365,
}  # fmt: skip

_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAME = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_COUNT = r"\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
_CN_NUMBER = r"[0-9]{1,3}|[一二两三四五六七八九十]{1,3}"

_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAME})\.?,?(?:\s+(\d{{4}}))?\b"
)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")
_MONTH_YEAR = re.compile(rf"\b({_MONTH_NAME})\.?,?\s+(\d{{4}})\b")
_MONTH_ALONE = re.compile(rf"\b(?:in|during|since|early|late|mid-?)\s+({_MONTH_NAME})\b")  # not "this may"
_YEAR = re.compile(r"\b(?:in|during|of|since|from|by|year|around)\s+((?:19|20)\d{2})\b")
_SEASON = re.compile(r"\b(spring|summer|fall|autumn|winter)\b|(春天|夏天|秋天|冬天)")
_RELATIVE_DAY = re.compile(
    r"\b(yesterday|last night|today|tonight|this morning|this afternoon|this evening|tomorrow)\b"
)
_LAST_THIS_NEXT = re.compile(r"\b(last|this|next|past)\s+(week|weekend|month|year)\b")
_LAST_WEEKDAY = re.compile(rf"\b(last|this|next|on)\s+({_WEEKDAY_NAME})\b")
_PAST_SPAN = re.compile(rf"\b(?:past|last|previous)\s+({_COUNT})\s+(day|week|month|year)s?\b")
_MONTH_SPAN = re.compile(
    rf"\b(?:from|between)\s+({_MONTH_NAME})\s+(?:to|and|through|until|till)\s+({_MONTH_NAME})\b"
    rf"|\b(?:in|during)\s+({_MONTH_NAME})\s+(?:and|or)\s+({_MONTH_NAME})\b"
    rf"|\bmonth\s+of\s+({_MONTH_NAME})\b"
)
_AGO = re.compile(rf"\b({_COUNT})\s+(day|weekend|week|month|year)s?\s+(?:ago|before|earlier)\b")
_FOR_DURATION = re.compile(
    rf"\b(?:for|over|about|almost|nearly)\s+(?:the\s+(?:past|last)\s+)?(?:{_COUNT})\s+(?:day|week|month|year)s?\b"
)
_DURATION = re.compile(
    r"\b(?:\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|a couple of)"
    r"\s+(?:day|week|month|year)s?\b"
)
_SINCE = re.compile(r"\bsince\s+(?:(?:19|20)\d{2}|last|i was|we were|childhood|high school|college)\b")
_CN_FULL_DATE = re.compile(r"(\d{4})年(\d{1,2})月(?:(\d{1,2})[日号])?")
_CN_MONTH_DAY = re.compile(rf"(?<![年\d])({_CN_NUMBER})月(?:(\d{{1,2}})[日号])?")
_CN_YEAR = re.compile(r"(\d{4})年(?!\d{1,2}月)")
_CN_RELATIVE: Final = {
    "前天": ("day", -2), "昨天": ("day", -1), "昨晚": ("day", -1), "今天": ("day", 0), "今晚": ("day", 0),
    "明天": ("day", 1), "上周": ("week", -1), "上星期": ("week", -1), "上个星期": ("week", -1),
    "这周": ("week", 0), "本周": ("week", 0), "下周": ("week", 1), "上个月": ("month", -1),
    "这个月": ("month", 0), "本月": ("month", 0), "下个月": ("month", 1), "前年": ("year", -2),
    "去年": ("year", -1), "今年": ("year", 0), "明年": ("year", 1),
}  # fmt: skip
_CN_RELATIVE_RE = re.compile("|".join(sorted(_CN_RELATIVE, key=len, reverse=True)))
_CN_AGO = re.compile(rf"({_CN_NUMBER})\s*(个星期|星期|个月|天|周|年)(?:前|以前|之前)")
_CN_DURATION = re.compile(rf"(?:{_CN_NUMBER})\s*(?:个星期|星期|个月|天|周|年)(?!级)")  # 三十五天, not 三年级
_CN_HABIT = re.compile(r"(?:周|星期|礼拜)[一二三四五六日天]|[上下]午|晚上|早上|每[天周月年]")
_HABIT = re.compile(
    rf"\b(?:every|each|on)\s+(?:{_WEEKDAY_NAME})s?\b"
    r"|\bevery\s+(?:day|week|month|year|morning|afternoon|evening|night|weekend)\b"
)

_ANY_TIME = re.compile(
    rf"\b(?:(?:{_MONTH_NAME}|{_WEEKDAY_NAME})s?|yesterday|today|tonight|tomorrow|night|morning|afternoon|evening"
    r"|days?|weeks?|weekends?|months?|years?|since|spring|summer|fall|autumn|winter|(?:19|20)\d{2})\b"
    r"|[年月日号天周星期昨今明午晚早每]"
)
"""A word every rule needs one of: a text without any states no time (checked first: it is cheap)."""
_ASKS_WHEN = re.compile(
    r"^\s*when\b|\b(?:what|which)\s+(?:date|day|time|year|month|week)\b"
    r"|\b(?:how\s+long|since\s+when|how\s+many\s+(?:days|weeks|months|years))\b"
    r"|什么时候|何时|哪一?年|哪个月|几月|哪天|哪一天|多久|多长时间",
    re.IGNORECASE,
)


def asks_for_time(query: str) -> bool:
    """Whether the question asks when something happened or how long it lasted."""
    return _ASKS_WHEN.search(query) is not None


def question_times(query: str, reference: datetime) -> QuestionTimes:
    """The periods `query` names, relative words read against `reference` (see the module docstring).

    A question that asks "how long ago" names no period by its "ago": only "3 years ago" does.
    """
    text = query.casefold()
    out: list[Period | MonthsOfYear] = list(_stated(text, reference, bare_month_any_year=True))
    months = {_MONTHS[m.group(1)] for m in _MONTH_ALONE.finditer(text)}
    months |= {month for m in _MONTH_SPAN.finditer(text) for month in _month_span(m)}
    months |= {number for m in _SEASON.finditer(text) for number in _SEASONS[m.group(1) or m.group(2)]}
    if months:
        out.append(MonthsOfYear(frozenset(months)))
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=2048)
def stated_periods(content: str, event_time: datetime) -> tuple[Period, ...]:
    """The periods the words of `content` state, relative words read against `event_time`.

    Memoized: one search ranks its candidates twice (the second hop's seeds, then the answer),
    and consecutive searches share most candidates.
    """
    text = content.casefold()
    if _ANY_TIME.search(text) is None:
        return ()
    periods = list(_stated(text, event_time, bare_month_any_year=False))
    for m in _MONTH_ALONE.finditer(text):
        periods.append(_nearest_month(_MONTHS[m.group(1)], event_time))
    return tuple(dict.fromkeys(periods))


def memory_periods(memory: Memory) -> tuple[Period, ...]:
    """The memory's event day, then the periods its words state (`stated_periods`)."""
    return (_day(memory.event_time), *stated_periods(memory.content, memory.event_time))


@lru_cache(maxsize=2048)
def states_time(content: str) -> bool:
    """Whether `content` states a time: a date, a relative day or period, or a duration (memoized)."""
    text = content.casefold()
    if _ANY_TIME.search(text) is None:
        return False
    if any(True for _ in _stated(text, datetime(2000, 1, 1, tzinfo=UTC), bare_month_any_year=False)):
        return True
    patterns = (_MONTH_ALONE, _FOR_DURATION, _DURATION, _SINCE, _HABIT, _CN_DURATION, _CN_HABIT, _SEASON)
    return any(p.search(text) is not None for p in patterns)


def matches(times: QuestionTimes, periods: tuple[Period, ...]) -> bool:
    """Whether any of a memory's periods falls in any period the question names."""
    return any(t.overlaps(p) for t in times for p in periods)


# ------------------------------------------------------------------------------ the word rules


def _stated(text: str, at: datetime, *, bare_month_any_year: bool) -> Iterator[Period]:
    """Every dated or relative period in casefolded `text`, read against `at`.

    Month names alone are left to the callers (a question's means any year, a memory's the one
    nearest its event time); `bare_month_any_year` only decides whether "8 May" without a year
    is skipped (a question's) or read as the nearest 8 May (a memory's).
    """
    yield from _absolute(text, at, bare_month_any_year=bare_month_any_year)
    yield from _relative(text, at)
    yield from _chinese(text, at)


def _absolute(text: str, at: datetime, *, bare_month_any_year: bool) -> Iterator[Period]:
    for m in _DAY_MONTH_YEAR.finditer(text):
        yield from _dated_day(int(m.group(1)), _MONTHS[m.group(2)], m.group(3), at, bare_month_any_year)
    for m in _MONTH_DAY_YEAR.finditer(text):
        yield from _dated_day(int(m.group(2)), _MONTHS[m.group(1)], m.group(3), at, bare_month_any_year)
    for m in _MONTH_YEAR.finditer(text):
        yield _month(int(m.group(2)), _MONTHS[m.group(1)])
    for m in _YEAR.finditer(text):
        yield _year(int(m.group(1)))


def _relative(text: str, at: datetime) -> Iterator[Period]:
    day = _day(at)
    for m in _RELATIVE_DAY.finditer(text):
        shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(m.group(1), 0)
        yield _shift_days(day, shift)
    for m in _LAST_THIS_NEXT.finditer(text):
        yield _calendar(m.group(2), {"last": -1, "past": -1, "this": 0, "next": 1}[m.group(1)], at)
    for m in _LAST_WEEKDAY.finditer(text):
        yield _weekday(_WEEKDAYS[m.group(2)], m.group(1), at)
    for m in _AGO.finditer(text):
        yield _ago(_count(m.group(1)), _UNIT_DAYS[m.group(2)], at)
    for m in _PAST_SPAN.finditer(text):
        yield Period(day.start - timedelta(days=_count(m.group(1)) * _UNIT_DAYS[m.group(2)]), day.end)


def _month_span(m: re.Match[str]) -> list[int]:
    """The months a span names: "from July to October" (past December too), "in May and June"."""
    if m.group(1):
        first, last = _MONTHS[m.group(1)], _MONTHS[m.group(2)]
        return [(first - 1 + i) % 12 + 1 for i in range((last - first) % 12 + 1)]
    if m.group(3):
        return [_MONTHS[m.group(3)], _MONTHS[m.group(4)]]
    return [_MONTHS[m.group(5)]]


def _chinese(text: str, at: datetime) -> Iterator[Period]:
    for m in _CN_FULL_DATE.finditer(text):
        year, month = int(m.group(1)), int(m.group(2))
        if 1 <= month <= 12:
            yield _month(year, month) if m.group(3) is None else _safe_day(year, month, int(m.group(3)))
    for m in _CN_MONTH_DAY.finditer(text):
        month = _cn_count(m.group(1))
        if 1 <= month <= 12:
            yield (
                _nearest_month(month, at)
                if m.group(2) is None
                else _safe_day(_nearest_month(month, at).start.year, month, int(m.group(2)))
            )
    for m in _CN_YEAR.finditer(text):
        yield _year(int(m.group(1)))
    for m in _CN_RELATIVE_RE.finditer(text):
        unit, shift = _CN_RELATIVE[m.group(0)]
        yield _shift_days(_day(at), shift) if unit == "day" else _calendar(unit, shift, at)
    for m in _CN_AGO.finditer(text):
        yield _ago(_cn_count(m.group(1)), _UNIT_DAYS[m.group(2)], at)


# ---------------------------------------------------------------------------- period arithmetic


def _day(at: datetime) -> Period:
    start = at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return Period(start, start + timedelta(days=1))


def _shift_days(day: Period, days: int) -> Period:
    return Period(day.start + timedelta(days=days), day.end + timedelta(days=days))


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, end)


def _year(year: int) -> Period:
    return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _safe_day(year: int, month: int, day: int) -> Period:
    try:
        return _day(datetime(year, month, day, tzinfo=UTC))
    except ValueError:
        return _month(year, month)


def _dated_day(day: int, month: int, year: str | None, at: datetime, skip_yearless: bool) -> Iterator[Period]:
    if year is not None:
        yield _safe_day(int(year), month, day)
    elif not skip_yearless:
        yield _safe_day(_nearest_month(month, at).start.year, month, day)


def _nearest_month(month: int, at: datetime) -> Period:
    """The given month of the year before, of or after `at`'s, whichever starts nearest to `at`."""
    options = [_month(at.year + delta, month) for delta in (-1, 0, 1)]
    return min(options, key=lambda p: abs((p.start - at).total_seconds()))


def _calendar(unit: str, shift: int, at: datetime) -> Period:
    """The calendar week (Monday first), weekend, month or year `shift` units from `at`'s."""
    day = _day(at)
    if unit == "week":
        monday = day.start - timedelta(days=at.weekday()) + timedelta(weeks=shift)
        return Period(monday, monday + timedelta(days=7))
    if unit == "weekend":
        saturday = day.start + timedelta(days=5 - at.weekday(), weeks=shift)  # of `at`'s week, shifted
        return Period(saturday, saturday + timedelta(days=2))
    if unit == "month":
        index = at.year * 12 + at.month - 1 + shift
        return _month(index // 12, index % 12 + 1)
    return _year(at.year + shift)


def _weekday(weekday: int, which: str, at: datetime) -> Period:
    """The day "last Friday"/"on Friday" (the latest before `at`'s day) or "next"/"this Friday" names."""
    day = _day(at)
    if which in ("last", "on"):
        back = (at.weekday() - weekday) % 7 or 7
        return _shift_days(day, -back)
    ahead = (weekday - at.weekday()) % 7 or 7
    return _shift_days(day, ahead)


def _ago(count: int, unit_days: int, at: datetime) -> Period:
    """`count` units before `at`, give or take one unit (a week at least)."""
    point = _day(at).start - timedelta(days=count * unit_days)
    slack = timedelta(days=max(unit_days, 7))
    return Period(point - slack, point + slack)


def _months_touched(period: Period) -> Iterator[int]:
    index = period.start.year * 12 + period.start.month - 1
    last = period.end - timedelta(microseconds=1)
    end = last.year * 12 + last.month - 1
    for i in range(index, min(end, index + 12) + 1):
        yield i % 12 + 1


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _cn_count(word: str) -> int:
    """A count in arabic digits or Chinese numerals up to 99 (十 = 10, 二十三 = 23)."""
    if word.isdigit():
        return int(word)
    if "十" in word:
        tens, _, ones = word.partition("十")
        return _CN_DIGITS.get(tens, 1) * 10 + _CN_DIGITS.get(ones, 0)
    return _CN_DIGITS.get(word, 0)
