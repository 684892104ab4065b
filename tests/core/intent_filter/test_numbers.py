"""Numerals: Arabic, Chinese (all scripts), Japanese, Korean and English."""

from __future__ import annotations

import pytest

from custom_components.soul.core.intent_filter.numbers import (
    parse_chinese_number,
    parse_english_number,
    parse_japanese_number,
    parse_korean_number,
    parse_native_korean_number,
    parse_number,
    parse_sino_korean_number,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10", 10), ("3.5", 3.5), ("两", 2), ("兩", 2), ("十", 10), ("十五", 15),
        ("二十六", 26), ("一百零五", 105), ("一千零一", 1001), ("两千", 2000),
        ("1万2千", 12000), ("三万", 30000), ("三点五", 3.5), ("零点五", 0.5), ("半", 0.5),
        ("贰拾", 20), ("陸", 6),
    ],
)  # fmt: skip
def test_chinese(text: str, value: float) -> None:
    assert parse_chinese_number(text) == value


@pytest.mark.parametrize("text", ["", "灯", "十x", "三点", "点五x"])
def test_not_chinese_numbers(text: str) -> None:
    assert parse_chinese_number(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("one", 1), ("a", 1), ("an", 1), ("twelve", 12), ("twenty-five", 25),
        ("twenty five", 25), ("a hundred and five", 105), ("two thousand", 2000),
        ("half", 0.5), ("a half", 0.5), ("7", 7),
    ],
)  # fmt: skip
def test_english(text: str, value: float) -> None:
    assert parse_english_number(text) == value


@pytest.mark.parametrize("text", ["", "lights", "and", "one banana"])
def test_not_english_numbers(text: str) -> None:
    assert parse_english_number(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("十五", 15), ("二十", 20), ("百", 100), ("一万二千", 12000), ("〇", 0),
     ("１０", 10), ("３０", 30), ("半", 0.5)],
)  # fmt: skip
def test_japanese(text: str, value: float) -> None:
    """Japanese kanji numerals are the Chinese ones; full-width digits are read."""
    assert parse_japanese_number(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("일", 1), ("이", 2), ("오", 5), ("십", 10), ("십오", 15), ("이십", 20),
     ("삼십", 30), ("이십오", 25), ("백", 100), ("백오", 105), ("천", 1000),
     ("영", 0), ("육", 6)],
)  # fmt: skip
def test_sino_korean(text: str, value: float) -> None:
    assert parse_sino_korean_number(text) == value
    assert parse_korean_number(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("하나", 1), ("한", 1), ("두", 2), ("둘", 2), ("세", 3), ("셋", 3), ("네", 4),
     ("넷", 4), ("다섯", 5), ("여섯", 6), ("일곱", 7), ("여덟", 8), ("아홉", 9),
     ("열", 10), ("열한", 11), ("열두", 12), ("열 두", 12), ("스무", 20),
     ("스물다섯", 25), ("서른", 30), ("마흔", 40), ("쉰", 50)],
)  # fmt: skip
def test_native_korean(text: str, value: float) -> None:
    assert parse_native_korean_number(text) == value
    assert parse_korean_number(text) == value


@pytest.mark.parametrize("text", ["", "불", "기", "한국", "열한둘", "삼x"])
def test_not_korean_numbers(text: str) -> None:
    assert parse_korean_number(text) is None


def test_native_is_not_sino_and_back() -> None:
    assert parse_sino_korean_number("두") is None
    assert parse_native_korean_number("삼") is None


def test_korean_digits_and_half() -> None:
    assert parse_korean_number("10") == 10
    assert parse_korean_number("반") == 0.5


def test_any_form() -> None:
    assert parse_number("二十") == 20
    assert parse_number("twenty") == 20
    assert parse_number("이십") == 20
    assert parse_number("스물") == 20
    assert parse_number("１２") == 12
    assert parse_number("灯") is None
    assert parse_number("불") is None
