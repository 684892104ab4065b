"""Clock times: "明天早上8点", "下午3点半", "晚上九点", "tomorrow at 8am", "at 3:30 pm".

Times resolve against ``now`` (an aware datetime in the request's timezone). A
time without a day is the next time it occurs; without a period ("8点") it is
whichever of 8:00 and 20:00 comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
import re

from .numbers import parse_chinese_number

_CN_NUM = r"[0-9]{1,2}|[零〇一二两兩三四五六七八九十]{1,3}"
_DAYS = {
    "今天": 0, "今日": 0, "今晚": 0, "明天": 1, "明日": 1, "明晚": 1, "明早": 1,
    "后天": 2, "後天": 2, "大后天": 3, "大後天": 3,
    "today": 0, "tonight": 0, "tomorrow": 1, "day after tomorrow": 2,
}  # fmt: skip
_AM = {"凌晨", "早上", "早晨", "清晨", "上午", "明早", "morning", "am", "a.m."}
_NOON = {"中午", "noon"}
_PM = {"下午", "午后", "午後", "傍晚", "晚上", "夜里", "夜裡", "今晚", "明晚",
       "afternoon", "evening", "tonight", "pm", "p.m."}  # fmt: skip
_CHINESE = re.compile(
    r"(?P<day>大后天|大後天|今天|今日|明天|明日|后天|後天|今晚|明晚|明早)?\s*"
    r"(?P<period>凌晨|早上|早晨|清晨|上午|中午|下午|午后|午後|傍晚|晚上|夜里|夜裡)?\s*"
    rf"(?P<hour>{_CN_NUM})\s*(?:点|點|时|時)"
    rf"(?P<minute>半|一刻|三刻|(?:{_CN_NUM})分?)?"
)
_CLOCK = re.compile(r"(?<![0-9])(?P<hour>[0-9]{1,2}):(?P<minute>[0-5][0-9])(?![0-9])")
_ENGLISH = re.compile(
    r"(?P<day>day after tomorrow|tomorrow|today|tonight)?\s*"
    r"(?:(?:in the\s+)?(?P<period1>morning|afternoon|evening)\s*)?"
    r"(?:at\s+)?(?P<hour>[0-9]{1,2})(?::(?P<minute>[0-5][0-9]))?\s*"
    r"(?P<period>a\.m\.|p\.m\.|am|pm|o'clock)"
    r"(?:\s+(?P<day2>tomorrow|today|tonight))?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TimePoint:
    """A clock time found in text, resolved to a moment."""

    at: datetime
    start: int
    end: int

    def seconds_from(self, now: datetime) -> float:
        """Return how many seconds after ``now`` the time is."""
        return (self.at - now).total_seconds()


def _hour_of_day(hour: int, period: str | None) -> list[int]:
    """Return the candidate 24-hour values for ``hour`` in ``period``."""
    period = period.lower() if period else None
    if period in _AM:
        return [0 if hour == 12 else hour]
    if period in _NOON:
        return [hour + 12 if 1 <= hour <= 2 else hour]
    if period in _PM:
        return [hour if hour >= 12 else hour + 12]
    if hour == 0 or hour >= 12:
        return [hour % 24]
    return [hour, hour + 12]


def _resolve(
    now: datetime, day: str | None, period: str | None, hour: int, minute: int
) -> datetime | None:
    if not 0 <= hour <= 24 or not 0 <= minute < 60:
        return None
    offset = _DAYS.get(day.lower()) if day else None
    if period is None and day and day.lower() in _PM:
        period = day
    if period is None and day in ("明早",):
        period = day
    base = now.replace(second=0, microsecond=0)
    candidates = []
    for hour24 in _hour_of_day(hour % 24 if hour == 24 else hour, period):
        moment = base.replace(hour=hour24, minute=minute)
        if offset is not None:
            candidates.append(moment + timedelta(days=offset))
        else:
            candidates.append(moment if moment > now else moment + timedelta(days=1))
    future = [c for c in candidates if c > now] or candidates
    return min(future)


def _minute(text: str | None) -> int | None:
    if not text:
        return 0
    if text == "半":
        return 30
    if text in ("一刻", "三刻"):
        return 15 if text == "一刻" else 45
    value = parse_chinese_number(text.removesuffix("分"))
    return None if value is None else int(value)


def find_time_points(text: str, now: datetime) -> list[TimePoint]:
    """Return the clock times in ``text`` resolved against ``now``, in order."""
    found: list[TimePoint] = []
    taken: list[range] = []

    def add(at: datetime | None, start: int, end: int) -> None:
        if at is not None and not any(start in r or end - 1 in r for r in taken):
            found.append(TimePoint(at, start, end))
            taken.append(range(start, end))

    for match in _CHINESE.finditer(text):
        hour = parse_chinese_number(match["hour"])
        minute = _minute(match["minute"])
        if hour is None or minute is None or hour != int(hour):
            continue
        at = _resolve(now, match["day"], match["period"], int(hour), minute)
        add(
            at,
            match.start() + len(match.group()) - len(match.group().lstrip()),
            match.end(),
        )
    for match in _ENGLISH.finditer(text):
        period = match["period"]
        period = None if period.lower() == "o'clock" else period
        day = match["day"] or match["day2"]
        at = _resolve(
            now,
            day,
            period or match["period1"],
            int(match["hour"]),
            int(match["minute"] or 0),
        )
        start = match.start() + len(match.group()) - len(match.group().lstrip())
        add(at, start, match.end())
    for match in _CLOCK.finditer(text):
        add(
            _resolve(now, None, None, int(match["hour"]), int(match["minute"])),
            *match.span(),
        )
    return sorted(found, key=lambda t: t.start)
