"""Numerals: Arabic, Chinese (simplified, traditional, financial) and English."""

from __future__ import annotations

import pytest

from custom_components.soul.core.intent_filter.numbers import (
    parse_chinese_number,
    parse_english_number,
    parse_number,
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


def test_any_form() -> None:
    assert parse_number("二十") == 20
    assert parse_number("twenty") == 20
    assert parse_number("灯") is None
