"""Durations and relative times: "10分钟后", "一个半小时", "in half an hour".

Each unit word is found first; the number is read backwards from it (Chinese
numerals, Arabic digits, or up to four English number words), so the patterns
here are Soul's own and fixed, never a body's.
"""

from __future__ import annotations

from dataclasses import dataclass
import re

from .numbers import CN_NUMERAL_CHARS, parse_chinese_number, parse_english_number

CN_UNIT_SECONDS = {
    "秒钟": 1, "秒鐘": 1, "秒": 1, "分钟": 60, "分鐘": 60, "小时": 3600, "小時": 3600,
    "钟头": 3600, "鐘頭": 3600, "刻钟": 900, "刻鐘": 900, "天": 86400,
    "星期": 604800, "周": 604800, "週": 604800,
}  # fmt: skip
EN_UNIT_SECONDS = {
    "second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600,
    "day": 86400, "week": 604800,
}  # fmt: skip
_CN_UNIT = re.compile("|".join(sorted(CN_UNIT_SECONDS, key=len, reverse=True)))
_CN_AFTER = re.compile(r"\s*(?:以后|以後|之后|之後|过后|過後|后|後)")
_EN_UNIT = re.compile(
    r"\b(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b", re.IGNORECASE
)
_EN_AND_HALF = re.compile(r"\s+and\s+a\s+half\b", re.IGNORECASE)
_EN_AFTER = re.compile(r"\s+(?:later|from\s+now)\b", re.IGNORECASE)
_EN_WORD = re.compile(r"[A-Za-z0-9.]+(?:-[A-Za-z]+)?")


@dataclass(frozen=True, slots=True)
class Duration:
    """A length of time found in text; ``relative`` when it says "from now"."""

    seconds: float
    start: int
    end: int
    relative: bool

    def text(self, source: str) -> str:
        """Return the words this duration was read from."""
        return source[self.start : self.end]


def _chinese(text: str) -> list[Duration]:
    found = []
    for match in _CN_UNIT.finditer(text):
        unit = CN_UNIT_SECONDS[match.group()]
        start = match.start()
        extra = 0.0
        if start >= 2 and text[start - 1] == "半" and text[start - 2] in "个個":
            extra, start = 0.5, start - 2  # 一个半小时
        elif start and text[start - 1] in "个個":
            start -= 1
        number_end = start
        while start and text[start - 1] in CN_NUMERAL_CHARS:
            start -= 1
        value = (
            parse_chinese_number(text[start:number_end]) if start < number_end else None
        )
        if value is None and start == number_end and start and text[start - 1] == "半":
            value, start = 0.5, start - 1  # 半小时, 半个小时
        if value is None:
            continue
        end = match.end()
        if text[end : end + 1] == "半":
            extra, end = extra + 0.5, end + 1  # 一小时半
        relative = False
        if after := _CN_AFTER.match(text, end):
            relative, end = True, after.end()
        if start and text[start - 1] in "过過":
            relative, start = True, start - 1
        found.append(Duration((value + extra) * unit, start, end, relative))
    return found


def _english_number(words: list[re.Match[str]]) -> tuple[float, int] | None:
    """Return the value and start of the longest suffix of ``words`` that is a number."""
    for size in range(min(4, len(words)), 0, -1):
        tail = [w.group().lower() for w in words[-size:]]
        if tail[-3:] == ["and", "a", "half"] and len(tail) > 3:
            base = parse_english_number(" ".join(tail[:-3]))
            value = None if base is None else base + 0.5
        elif tail[0] == "half" and tail[1:] in ([], ["a"], ["an"]):
            value = 0.5
        else:
            value = parse_english_number(" ".join(tail))
        if value is not None:
            return value, words[-size].start()
    return None


def _english(text: str) -> list[Duration]:
    found = []
    for match in _EN_UNIT.finditer(text):
        unit_word = match.group().lower().rstrip("s") or "s"
        unit = EN_UNIT_SECONDS.get(unit_word)
        if unit is None:
            continue
        before = list(
            _EN_WORD.finditer(text, max(0, match.start() - 40), match.start())
        )
        number = _english_number(before)
        if number is None:
            continue
        value, start = number
        end = match.end()
        if half := _EN_AND_HALF.match(text, end):
            value, end = value + 0.5, half.end()
        relative = False
        if after := _EN_AFTER.match(text, end):
            relative, end = True, after.end()
        prefix = text[max(0, start - 3) : start].lower()
        if prefix.endswith("in "):
            relative, start = True, start - 3
        found.append(Duration(value * unit, start, end, relative))
    return found


def find_durations(text: str) -> list[Duration]:
    """Return every duration in ``text``, in order of appearance."""
    return sorted([*_chinese(text), *_english(text)], key=lambda d: d.start)
