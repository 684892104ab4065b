"""Numbers: Arabic digits, Chinese/Japanese kanji, Korean (Sino and native), English.

Japanese writes numerals with the same kanji as Chinese ("二十", "一時間"), so
``parse_chinese_number`` reads both. Korean has two systems: Sino-Korean
("삼십", used for minutes and seconds) and native counting words ("한", "열두",
used for hours); ``parse_korean_number`` reads either.
"""

from __future__ import annotations

import math
import re

CN_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "壹": 1, "二": 2, "贰": 2, "貳": 2, "两": 2, "兩": 2,
    "三": 3, "叁": 3, "參": 3, "四": 4, "肆": 4, "五": 5, "伍": 5, "六": 6, "陆": 6,
    "陸": 6, "七": 7, "柒": 7, "八": 8, "捌": 8, "九": 9, "玖": 9,
}  # fmt: skip
CN_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
CN_BIG = {"万": 10_000, "萬": 10_000, "亿": 100_000_000, "億": 100_000_000}
CN_POINT = {"点", "點"}
# Arabic digits, half and full width (Japanese and Chinese input methods).
DIGITS = "0123456789０１２３４５６７８９"
# Characters a Chinese numeral may be made of (digits mixed in: "1万2千").
CN_NUMERAL_CHARS = "".join([*CN_DIGITS, *CN_UNITS, *CN_BIG, *CN_POINT]) + DIGITS + "."

# Sino-Korean numerals, read by mapping them onto the Chinese characters.
KO_SINO = {
    "영": "零", "공": "零", "일": "一", "이": "二", "삼": "三", "사": "四", "오": "五",
    "육": "六", "륙": "六", "칠": "七", "팔": "八", "구": "九", "십": "十", "백": "百",
    "천": "千", "만": "万", "억": "亿",
}  # fmt: skip
_KO_SINO_TO_CN = str.maketrans(KO_SINO)
# Native Korean counting words; the short forms ("한", "두") come before a counter.
KO_NATIVE_UNITS = {
    "하나": 1, "한": 1, "둘": 2, "두": 2, "셋": 3, "세": 3, "넷": 4, "네": 4,
    "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9,
}  # fmt: skip
KO_NATIVE_TENS = {
    "열": 10, "스물": 20, "스무": 20, "서른": 30, "마흔": 40, "쉰": 50, "예순": 60,
    "일흔": 70, "여든": 80, "아흔": 90,
}  # fmt: skip
# "열두", "열 두", "스물다섯", "세", "스무": a tens word, a units word, or both.
KO_NATIVE_PATTERN = (
    f"(?:(?:{'|'.join(KO_NATIVE_TENS)}) ?)?"
    f"(?:{'|'.join(sorted(KO_NATIVE_UNITS, key=len, reverse=True))})"
    f"|{'|'.join(KO_NATIVE_TENS)}"
)
_KO_NATIVE = re.compile(
    f"(?:(?P<tens>{'|'.join(KO_NATIVE_TENS)}) ?)?"
    f"(?P<units>{'|'.join(sorted(KO_NATIVE_UNITS, key=len, reverse=True))})?"
)

EN_UNITS = {
    "zero": 0, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
EN_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
EN_SCALES = {"hundred": 100, "thousand": 1000}
EN_NUMBER_WORDS = {*EN_UNITS, *EN_TENS, *EN_SCALES, "and"}
_ARABIC = re.compile(r"[0-9０-９]+(?:\.[0-9０-９]+)?")


def _integer(text: str) -> int | None:
    """Return the value of a Chinese integer numeral (digits may be mixed in)."""
    total = section = 0
    number: int | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if char in DIGITS:
            end = index
            while end < len(text) and text[end] in DIGITS:
                end += 1
            number = int(text[index:end])
            index = end
            continue
        if char in CN_DIGITS:
            number = CN_DIGITS[char]
        elif char in CN_UNITS:
            section += (1 if number is None else number) * CN_UNITS[char]
            number = None
        elif char in CN_BIG:
            total += (section + (number or 0)) * CN_BIG[char]
            section, number = 0, None
        else:
            return None
        index += 1
    return total + section + (number or 0)


def parse_chinese_number(text: str) -> float | None:
    """Return the value of a Chinese or Japanese numeral ("二十六", "三点五", "半")."""
    text = text.strip()
    if not text:
        return None
    if text == "半":
        return 0.5
    if _ARABIC.fullmatch(text):
        return float(text)
    whole, point, fraction = (
        text.partition("点") if "点" in text else text.partition("點")
    )
    value = _integer(whole) if whole else 0
    if value is None:
        return None
    if not point:
        return float(value)
    digits = [CN_DIGITS.get(c, int(c) if c in DIGITS else None) for c in fraction]
    if not digits or None in digits:
        return None
    return float(f"{value}.{''.join(str(d) for d in digits)}")


parse_japanese_number = parse_chinese_number


def parse_sino_korean_number(text: str) -> float | None:
    """Return the value of a Sino-Korean numeral ("삼십", "이십오", "백"), or None."""
    text = text.strip()
    if not text or any(char not in KO_SINO for char in text):
        return None
    value = _integer(text.translate(_KO_SINO_TO_CN))
    return None if value is None else float(value)


def parse_native_korean_number(text: str) -> float | None:
    """Return the value of native Korean counting words ("한", "열두", "스물다섯")."""
    match = _KO_NATIVE.fullmatch(text.strip())
    if match is None or not (match["tens"] or match["units"]):
        return None
    tens = KO_NATIVE_TENS[match["tens"]] if match["tens"] else 0
    units = KO_NATIVE_UNITS[match["units"]] if match["units"] else 0
    return float(tens + units)


def parse_korean_number(text: str) -> float | None:
    """Return the value of a Korean numeral (Sino, native, digits or "반"), or None."""
    text = text.strip()
    if text == "반":
        return 0.5
    if _ARABIC.fullmatch(text):
        return float(text)
    value = parse_native_korean_number(text)
    return value if value is not None else parse_sino_korean_number(text)


def parse_english_number(text: str) -> float | None:
    """Return the value of English number words ("twenty-five", "a hundred"), or None."""
    words = text.lower().replace("-", " ").split()
    if not words:
        return None
    if len(words) == 1 and _ARABIC.fullmatch(words[0]):
        return float(words[0])
    if words in (["half"], ["a", "half"]):
        return 0.5
    total = current = 0
    seen = False
    for word in words:
        if word in EN_UNITS:
            current += EN_UNITS[word]
        elif word in EN_TENS:
            current += EN_TENS[word]
        elif word in EN_SCALES:
            current = (current or 1) * EN_SCALES[word]
            if EN_SCALES[word] >= 1000:
                total, current = total + current, 0
        elif word == "and" and seen:
            continue
        else:
            return None
        seen = True
    return float(total + current)


def parse_number(text: str) -> float | None:
    """Return the value of a numeral in any of the supported forms, or None.

    None too for a numeral no float holds (400 digits): it is no number to
    hand a body (JSON has no infinity).
    """
    try:
        value = parse_chinese_number(text)
        if value is None:
            value = parse_korean_number(text)
        if value is None:
            value = parse_english_number(text)
    except OverflowError:  # an integer past what a float holds
        return None
    return value if value is not None and math.isfinite(value) else None
