"""Clock times in Chinese, Japanese, Korean and English.

"明天早上8点", "下午3点半", "明日の朝8時", "午後3時半", "내일 아침 8시", "오후 3시
반", "tomorrow at 8am", "at 3:30 pm".

Times resolve against ``now`` (an aware datetime in the request's timezone). A
time without a day is the next time it occurs; without a period ("8点", "8時",
"8시") it is whichever of 8:00 and 20:00 comes first. Days are calendar offsets
from ``now``'s date. At night ("晚上", "夜", "밤", "tonight") 12 is midnight and
1 to 4 are the small hours after it; in the daytime ("昼", "낮") 1 to 6 are p.m.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta
import re
from typing import NamedTuple

from .numbers import parse_chinese_number, parse_korean_number

_CN_NUM = r"[0-9０-９]{1,2}|[零〇一二两兩三四五六七八九十]{1,3}"
_DAYS = {
    "今天": 0, "今日": 0, "今晚": 0, "明天": 1, "明日": 1, "明晚": 1, "明早": 1,
    "后天": 2, "後天": 2, "大后天": 3, "大後天": 3,
    "きょう": 0, "今夜": 0, "こんや": 0, "今晩": 0, "こんばん": 0, "今朝": 0,
    "けさ": 0, "あした": 1, "あす": 1, "明晩": 1, "明朝": 1, "明後日": 2,
    "あさって": 2, "明々後日": 3, "明明後日": 3, "しあさって": 3,
    "오늘": 0, "내일": 1, "모레": 2, "내일모레": 2, "내일 모레": 2, "글피": 3,
    "today": 0, "tonight": 0, "tomorrow": 1, "day after tomorrow": 2,
}  # fmt: skip
_AM = {
    "凌晨", "早上", "早晨", "清晨", "上午", "明早", "午前", "早朝", "明け方", "朝",
    "今朝", "けさ", "明朝", "새벽", "아침", "오전", "morning", "am", "a.m.",
}  # fmt: skip
_NOON = {"中午", "noon"}
_DAYTIME = {"昼", "낮", "점심"}
_PM = {"下午", "午后", "午後", "傍晚", "夕方", "오후", "저녁",
       "afternoon", "evening", "pm", "p.m."}  # fmt: skip
_NIGHT = {
    "晚上", "夜里", "夜裡", "今晚", "明晚", "夜", "夜中", "深夜", "晩", "今夜",
    "こんや", "今晩", "こんばん", "明晩", "밤", "tonight",
}  # fmt: skip
_PERIODS = _AM | _NOON | _DAYTIME | _PM | _NIGHT


# Chinese and Japanese share the numerals and "時"; "の" may follow a day or a
# period in Japanese ("明日の朝8時"). "時間" is a duration, not a clock time.
_CJK = re.compile(
    r"(?:(?P<day>大后天|大後天|明々後日|明明後日|しあさって|明後日|あさって|今天|今日"
    r"|きょう|明天|明日|あした|あす|后天|後天|今晚|明晚|明早|今夜|こんや|今晩|こんばん"
    r"|明晩|今朝|けさ|明朝)の?\s*)?"
    r"(?:(?P<period>凌晨|早上|早晨|清晨|上午|中午|下午|午后|午後|午前|傍晚|晚上|夜里"
    r"|夜裡|夜中|深夜|早朝|明け方|夕方|朝|昼|夜|晩)の?\s*)?"
    rf"(?P<hour>{_CN_NUM})\s*(?:点|點|时|時)(?![間间])"
    rf"(?P<minute>半|一刻|三刻|(?:{_CN_NUM})分?)?"
)
_CJK_HOUR_MARKS = "点點时時"
_HOUR_MARKS = frozenset(_CJK_HOUR_MARKS)
# Korean hours are native numerals or digits, minutes Sino-Korean or digits.
_KO_HOUR = r"[0-9０-９]{1,2}|열\s?한|열\s?두|열|한|두|세|네|다섯|여섯|일곱|여덟|아홉"
_KO_MINUTE = r"[0-9０-９]{1,2}|[일이삼사오육칠팔구십]{1,3}"
# What may follow a Korean clock time in its word: particles, "정각", "쯤"...
_KO_END = (
    r"$|[^가-힣]|에|까지|부터|쯤|경|정각|전|후|께|엔|가|는|도|로|를|와|랑|만|요|야|예"
)
_KOREAN = re.compile(
    r"(?:(?P<day>내일 ?모레|오늘|내일|모레|글피)\s*)?"
    r"(?:(?P<period>새벽|아침|오전|낮|점심|오후|저녁|밤)\s*)?"
    rf"(?<![0-9０-９])(?P<hour>{_KO_HOUR})\s?시(?!간)"
    rf"(?:\s?(?:(?P<half>반)|(?P<minute>{_KO_MINUTE})\s?분))?"
    rf"(?={_KO_END})"
)
_CLOCK = re.compile(
    r"(?<![0-9])(?P<hour>[0-9]{1,2})[:：](?P<minute>[0-5][0-9])(?![0-9])"
)
_ENGLISH = re.compile(
    r"(?P<day>day after tomorrow|tomorrow|today|tonight)?\s*"
    r"(?:(?:in the\s+)?(?P<period1>morning|afternoon|evening)\s*)?"
    r"(?:at\s+)?(?P<hour>[0-9]{1,2})(?::(?P<minute>[0-5][0-9]))?\s*"
    r"(?P<period>a\.m\.|p\.m\.|am|pm|o'clock)"
    r"(?:\s+(?P<day2>tomorrow|today|tonight))?",
    re.IGNORECASE,
)
# The part every English time has; finding it first keeps other text fast.
_ENGLISH_CORE = re.compile(
    r"[0-9](?::[0-5][0-9])?\s*(?:a\.m\.|p\.m\.|am|pm|o'clock)", re.IGNORECASE
)
_ASCII_DIGITS = frozenset("0123456789")  # every English time holds one
_PERIOD_FIRSTS = frozenset("aApPoO")  # and "am", "pm", "a.m.", "p.m." or "o'clock"


class TimePoint(NamedTuple):
    """A clock time found in text, resolved to a moment.

    A named tuple, as ``lexicon.Entity``: cheaper to make than a frozen dataclass.
    """

    at: datetime
    start: int
    end: int

    def seconds_from(self, now: datetime) -> float:
        """Return how many seconds after ``now`` the time is."""
        return (self.at - now).total_seconds()


def _hour_of_day(hour: int, period: str | None) -> list[int]:
    """Return the candidate hours after the day's midnight (24+ is the next day)."""
    period = period.lower() if period else None
    if period in _AM:
        return [0 if hour == 12 else hour]
    if period in _NOON:
        return [hour + 12 if 1 <= hour <= 2 else hour]
    if period in _DAYTIME:
        return [hour + 12 if 1 <= hour <= 6 else hour]
    if period in _NIGHT:
        if hour in (0, 12):
            return [24]  # midnight at the end of the day
        return [hour + 24 if hour <= 4 else hour + 12 if hour < 12 else hour]
    if period in _PM:
        return [hour if hour >= 12 else hour + 12]
    if hour == 0 or hour >= 12:
        return [hour]
    return [hour, hour + 12]


def _resolve(
    now: datetime, day: str | None, period: str | None, hour: int, minute: int
) -> datetime | None:
    if not 0 <= hour <= 24 or not 0 <= minute < 60:
        return None
    day = day.lower() if day else None
    offset = _DAYS.get(day) if day else None
    if period is None and day in _PERIODS:
        period = day  # 今晚, 明早, 今夜, tonight
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    candidates = []
    for hours in _hour_of_day(hour, period):
        try:
            if offset is not None:
                candidates.append(
                    midnight + timedelta(days=offset, hours=hours, minutes=minute)
                )
            else:
                moment = midnight + timedelta(hours=hours % 24, minutes=minute)
                candidates.append(
                    moment if moment > now else moment + timedelta(days=1)
                )
        except OverflowError:  # past the calendar's end: not a time to use
            continue
    if not candidates:
        return None
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


def _is_hangul(char: str) -> bool:
    return "가" <= char <= "힣"


def _start(point: TimePoint) -> int:
    return point.start


def _add(
    found: list[TimePoint],
    taken: list[range],
    at: datetime | None,
    start: int,
    end: int,
) -> None:
    """Keep a clock time that does not overlap one kept before.

    A function of its own, not a closure: most texts hold no clock time, and
    making a closure (with its cells) on every call cost more than the rest.
    """
    if at is not None and not any(start in r or end - 1 in r for r in taken):
        found.append(TimePoint(at, start, end))
        taken.append(range(start, end))


def find_time_points(
    text: str, now: datetime, chars: AbstractSet[str] | None = None
) -> list[TimePoint]:
    """Return the clock times in ``text`` resolved against ``now``, in order.

    ``chars``, when given, is the set of ``text``'s characters (a clause's,
    read once for all its scans): the skips test it instead of the text.
    """
    found: list[TimePoint] = []
    taken: list[range] = []
    seen = text if chars is None else chars
    if not _HOUR_MARKS.isdisjoint(seen):
        for match in _CJK.finditer(text):
            hour = parse_chinese_number(match["hour"])
            minute = _minute(match["minute"])
            if hour is None or minute is None or hour != int(hour):
                continue
            at = _resolve(now, match["day"], match["period"], int(hour), minute)
            _add(found, taken, at, *match.span())
    if "시" in text:
        for match in _KOREAN.finditer(text):
            hour_start = match.start("hour")
            if (
                hour_start
                and _is_hangul(text[hour_start - 1])
                and hour_start not in (match.end("day"), match.end("period"))
            ):
                continue  # "세" must begin a word
            hour = parse_korean_number(match["hour"])
            minutes = (
                30 if match["half"] else parse_korean_number(match["minute"] or "0")
            )
            if hour is None or minutes is None or minutes != int(minutes):
                continue
            at = _resolve(now, match["day"], match["period"], int(hour), int(minutes))
            _add(found, taken, at, *match.span())
    if (
        not _ASCII_DIGITS.isdisjoint(seen)
        and not _PERIOD_FIRSTS.isdisjoint(seen)
        and _ENGLISH_CORE.search(text)
    ):
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
            _add(found, taken, at, start, match.end())
    if ":" in text or "：" in text:
        for match in _CLOCK.finditer(text):
            _add(
                found,
                taken,
                _resolve(now, None, None, int(match["hour"]), int(match["minute"])),
                *match.span(),
            )
    return sorted(found, key=_start) if len(found) > 1 else found
