"""Durations and relative times in Chinese, Japanese, Korean and English.

"10分钟后", "一个半小时", "10分後", "あと5分", "1時間半後", "10분 후", "한 시간
반 뒤", "in half an hour". Each unit word is found first; the number is read
backwards from it (Chinese or Japanese kanji, Korean numerals, Arabic digits,
or up to four English number words), so the patterns here are Soul's own and
fixed, never a body's.

Two CJK units are ambiguous and count only in unambiguous contexts:

* a bare "分" is a minute (Japanese) only when a relative marker follows
  ("10分後", "5分したら"), "あと" comes before ("あと5分"), or the text contains
  kana ("5分待って"). Even then it is not a minute after a clock hour
  ("3点20分", "8時30分"), before "の" ("3分の1") or after a lone "十" ("十分"
  means "very" in Chinese and "enough" in Japanese) unless a marker says so.
  Chinese minutes are "分钟"; "分間" is always a Japanese minute.
* a bare "日" (and Korean "일") is a day only with a relative marker ("3日後",
  "3일 후"); otherwise it is more likely a date ("3日", "3일"). "日間", "일간"
  and "3일 동안" are always days.

Korean minutes and seconds take Sino-Korean numerals or digits ("삼십 분",
"30초"; "두 분" is two people); hours take native numerals or digits ("한
시간", "2시간"; "이 시간" is "this time").
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
import re
from typing import NamedTuple

from .numbers import (
    CN_NUMERAL_CHARS,
    DIGITS,
    EN_NUMBER_WORDS,
    KO_NATIVE_TENS,
    parse_chinese_number,
    parse_english_number,
    parse_native_korean_number,
    parse_sino_korean_number,
)

CN_UNIT_SECONDS = {
    "秒钟": 1, "秒鐘": 1, "秒": 1, "分钟": 60, "分鐘": 60, "小时": 3600, "小時": 3600,
    "钟头": 3600, "鐘頭": 3600, "刻钟": 900, "刻鐘": 900, "天": 86400,
    "星期": 604800, "周": 604800, "週": 604800,
}  # fmt: skip
JA_UNIT_SECONDS = {
    "秒間": 1, "分間": 60, "時間": 3600, "日間": 86400, "週間": 604800,
    "分": 60, "日": 86400,
}  # fmt: skip
KO_UNIT_SECONDS = {
    "초": 1, "초간": 1, "분": 60, "분간": 60, "시간": 3600, "일": 86400,
    "일간": 86400, "주": 604800, "주간": 604800, "주일": 604800,
}  # fmt: skip
# Native words that are a number of days by themselves: "하루", "이틀 후".
KO_DAY_WORDS = {"하루": 1, "이틀": 2, "사흘": 3, "나흘": 4}
EN_UNIT_SECONDS = {
    "second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600,
    "day": 86400, "week": 604800,
}  # fmt: skip
_CJK_UNIT_SECONDS = CN_UNIT_SECONDS | JA_UNIT_SECONDS
_CN_UNIT = re.compile("|".join(sorted(_CJK_UNIT_SECONDS, key=len, reverse=True)))
_CN_AFTER = re.compile(
    r"\s*(?:以后|以後|之后|之後|过后|過後|後に|したら|経ったら|たったら|后|後)"
)
_KANA = re.compile(r"[\u3041-\u309f\u30a1-\u30ff]")
_CLOCK_HOUR = "点點时時"

_KO_UNIT = re.compile(
    "|".join(sorted([*KO_UNIT_SECONDS, *KO_DAY_WORDS], key=len, reverse=True))
)
_KO_AFTER = re.compile(
    r"\s*(?:후에|후|뒤에|뒤|있다가|있으면|이따가|지나서|지나면|지나고|지난\s?(?:후|뒤)에?)"
)
_KO_HALF = re.compile(r"\s?반")
# What may follow a Korean duration inside its word: particles and counters.
_KO_PARTICLE = re.compile(
    r"동안|정도|짜리|까지|부터|으로|마다|만큼|있|이따|지나"
    r"|[이가은는을를에도만쯤씩내안로과와나째후뒤]"
)
_KO_DURING = re.compile(r"\s?동안")
_KO_MAX_NUMERAL = 8  # syllables: "구천구백구십구", "스물다섯"
# Numeral kinds each Korean unit takes (digits always).
_KO_KINDS = {
    "초": "sino", "초간": "sino", "분": "sino", "분간": "sino",
    "시간": "native half", "일": "sino", "일간": "sino",
    "주": "sino native", "주간": "sino native", "주일": "sino native",
}  # fmt: skip

_EN_UNIT = re.compile(
    r"\b(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b", re.IGNORECASE
)
_EN_AND_HALF = re.compile(r"\s+and\s+a\s+half\b", re.IGNORECASE)
_EN_AFTER = re.compile(r"\s+(?:later|from\s+now)\b", re.IGNORECASE)
_EN_WORD = re.compile(r"[A-Za-z0-9.]+(?:-[A-Za-z]+)?")
# What the words of an English number are made of (``parse_english_number``),
# with "half" ("half an hour", "two and a half"); a lone Arabic number.
_NUMBER_PARTS = frozenset({*EN_NUMBER_WORDS, "half"})
_ARABIC_WORD = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# What a match of each unit pattern can begin with: a text holding none of
# them holds no unit of that kind, so its scan is skipped. ``_EN_UNIT`` ignores
# case, and for ``re`` "ſ" (U+017F) is an "s" then.
_CJK_UNIT_FIRSTS = frozenset(word[0] for word in _CJK_UNIT_SECONDS)
# A CJK duration's amount is a numeral (digits too) or "半": a text holding
# none of these holds no CJK duration.
_CJK_AMOUNT_CHARS = frozenset(CN_NUMERAL_CHARS + "半")
_EN_UNIT_FIRSTS = frozenset("smhdwSMHDW\u017f")
# An English unit counts only when its lower case is one of ``EN_UNIT_SECONDS``
# (maybe with an "s"), so the lowered text holds one of these: else ``_english``
# finds nothing, and its case-blind scan is skipped.
_EN_UNIT_STEMS = re.compile("sec|min|hour|hr|day|week")
_KO_UNIT_FIRSTS = frozenset(word[0] for word in (*KO_UNIT_SECONDS, *KO_DAY_WORDS))


class Duration(NamedTuple):
    """A length of time found in text; ``relative`` when it says "from now".

    A named tuple, as ``lexicon.Entity``: cheaper to make than a frozen dataclass.
    """

    seconds: float
    start: int
    end: int
    relative: bool

    def text(self, source: str) -> str:
        """Return the words this duration was read from."""
        return source[self.start : self.end]


def _cjk(text: str) -> list[Duration]:
    """Chinese and Japanese durations (both write units and numbers in kanji)."""
    found = []
    kana: bool | None = None
    for match in _CN_UNIT.finditer(text):
        word = match.group()
        unit = _CJK_UNIT_SECONDS[word]
        bare = word in ("分", "日")
        start = match.start()
        extra = 0.0
        if start >= 2 and text[start - 1] == "半" and text[start - 2] in "个個":
            extra, start = 0.5, start - 2  # 一个半小时
        elif start and text[start - 1] in "个個":
            start -= 1
        number_end = start
        while start and text[start - 1] in CN_NUMERAL_CHARS:
            start -= 1
        numeral = text[start:number_end]
        value = parse_chinese_number(numeral) if numeral else None
        if value is None and not numeral and start and text[start - 1] == "半":
            if word == "分":
                continue  # 半分 is "half" in Japanese
            value, start = 0.5, start - 1  # 半小时, 半个小时, 半時間
        if value is None:
            continue
        end = match.end()
        if text[end : end + 1] == "半":
            extra, end = extra + 0.5, end + 1  # 一小时半, 1時間半
        relative = False
        if after := _CN_AFTER.match(text, end):
            relative, end = True, after.end()
        if start and text[start - 1] in "过過":
            relative, start = True, start - 1
        else:
            ato = start - 1 if start and text[start - 1] == " " else start
            if text.endswith("あと", 0, ato):
                relative, start = True, ato - 2  # あと5分
        if bare:
            if (start and text[start - 1] in _CLOCK_HOUR) or any(
                char in _CLOCK_HOUR for char in numeral
            ):
                continue  # 3点20分, 8時30分: a clock time
            if not relative:
                following = text[end + 1 : end + 2]
                fraction = (
                    text[end : end + 1] == "の"
                    and bool(following)
                    and (following in CN_NUMERAL_CHARS)
                )
                if word == "日" or fraction or numeral == "十":
                    continue  # 3日 (a date), 3分の1 (a third), 十分 (very, enough)
                if kana is None:
                    kana = _KANA.search(text) is not None
                if not kana:
                    continue  # 5分 in Chinese: points, cents or a clock time
        found.append(Duration((value + extra) * unit, start, end, relative))
    return found


def _is_hangul(char: str) -> bool:
    return "가" <= char <= "힣"


def _korean_number(text: str, end: int) -> tuple[float, int, str] | None:
    """Return the value, start and kind of the Korean numeral ending at ``end``."""
    if end and text[end - 1] == " ":
        end -= 1  # "한 시간", "10 분"
    start = end
    while start and (text[start - 1] in DIGITS or text[start - 1] == "."):
        start -= 1
    if start < end:
        value = parse_chinese_number(text[start:end])
        return None if value is None else (value, start, "digits")
    while start and _is_hangul(text[start - 1]):
        start -= 1  # the numeral is a whole word: "구분" is read as "구"
        if end - start > _KO_MAX_NUMERAL:
            return None  # stays linear on long runs of Hangul ("일일일…")
    word = text[start:end]
    if word == "반":
        return 0.5, start, "half"
    if (value := parse_native_korean_number(word)) is not None:
        if value < 10 and start >= 2 and text[start - 1] == " ":
            tens_start = start - 1
            while tens_start and _is_hangul(text[tens_start - 1]):
                tens_start -= 1
                if start - tens_start > _KO_MAX_NUMERAL:
                    break
            if tens := KO_NATIVE_TENS.get(text[tens_start : start - 1]):
                return value + tens, tens_start, "native"  # "열 두 시간"
        return value, start, "native"
    if (value := parse_sino_korean_number(word)) is not None:
        return value, start, "sino"
    return None


def _korean_word_ends(text: str, index: int) -> bool:
    """Whether a Korean word may end at ``index`` (particles may follow)."""
    return (
        index >= len(text)
        or not _is_hangul(text[index])
        or _KO_PARTICLE.match(text, index) is not None
    )


def _korean(text: str) -> list[Duration]:
    found = []
    for match in _KO_UNIT.finditer(text):
        word = match.group()
        if days := KO_DAY_WORDS.get(word):
            start = match.start()
            if start and _is_hangul(text[start - 1]):
                continue
            value, unit, kind = float(days), 86400, "digits"
        else:
            number = _korean_number(text, match.start())
            if number is None:
                continue
            value, start, kind = number
            unit = KO_UNIT_SECONDS[word]
            if kind != "digits" and kind not in _KO_KINDS[word]:
                continue  # "두 분" (two people), "이 시간" (this time)
            if (
                word in ("분", "초")
                and text[max(0, start - 2) : start].strip()[-1:] == "시"
            ):
                continue  # "8시 30분": a clock time
        end = match.end()
        if (half := _KO_HALF.match(text, end)) and _korean_word_ends(text, half.end()):
            value, end = value + 0.5, half.end()  # "한 시간 반"
        relative = False
        if after := _KO_AFTER.match(text, end):
            relative, end = True, after.end()
        elif not _korean_word_ends(text, end):
            continue  # "구분해" (distinguish) is not nine minutes
        elif (word == "일" and not _KO_DURING.match(text, end)) or (
            kind == "sino" and value == 2 and text[start] == "이"
        ):
            continue  # "3일" (a date), "이 분" (this person)
        found.append(Duration(value * unit, start, end, relative))
    return found


def _may_be_number(word: str) -> bool:
    """Whether ``word`` may be part of a number ``parse_english_number`` reads."""
    return _ARABIC_WORD.fullmatch(word) is not None or all(
        part in _NUMBER_PARTS for part in word.split("-")
    )


def _english_number(words: list[re.Match[str]]) -> tuple[float, int] | None:
    """Return the value and start of the longest suffix of ``words`` that is a number."""
    lowered = [w.group().lower() for w in words[-4:]]
    # A suffix holding a word that is in no number is none: only the words
    # at the end that may be in one are tried.
    run = 0
    for word in reversed(lowered):
        if not _may_be_number(word):
            break
        run += 1
    for size in range(min(4, len(words), run), 0, -1):
        tail = lowered[-size:]
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


def find_durations(text: str, chars: AbstractSet[str] | None = None) -> list[Duration]:
    """Return every duration in ``text``, in order of appearance.

    ``chars``, when given, is the set of ``text``'s characters (a clause's,
    read once for all its scans): the skips test it instead of the text.
    """
    seen = text if chars is None else chars
    found = (
        []
        if _CJK_UNIT_FIRSTS.isdisjoint(seen) or _CJK_AMOUNT_CHARS.isdisjoint(seen)
        else _cjk(text)
    )
    if not _EN_UNIT_FIRSTS.isdisjoint(seen) and _EN_UNIT_STEMS.search(text.lower()):
        found.extend(_english(text))
    if not _KO_UNIT_FIRSTS.isdisjoint(seen) and _KO_UNIT.search(text):
        found.extend(_korean(text))
    return sorted(found, key=_start) if len(found) > 1 else found


def _start(duration: Duration) -> int:
    return duration.start
