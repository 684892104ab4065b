"""Durations and relative times in Chinese and English."""

from __future__ import annotations

import pytest

from custom_components.soul.core.intent_filter.durations import find_durations


@pytest.mark.parametrize(
    ("text", "seconds", "span", "relative"),
    [
        ("10分钟后提醒我", 600, "10分钟后", True),
        ("定一个5分钟的闹钟", 300, "5分钟", False),
        ("半小时后叫我", 1800, "半小时后", True),
        ("半个小时以后", 1800, "半个小时以后", True),
        ("三分钟后提醒我喝水", 180, "三分钟后", True),
        ("点头3秒", 3, "3秒", False),
        ("一个半小时后叫我起床", 5400, "一个半小时后", True),
        ("两个半小时", 9000, "两个半小时", False),
        ("一小时半以后", 5400, "一小时半以后", True),
        ("一刻钟后", 900, "一刻钟后", True),
        ("过二十分钟叫我", 1200, "过二十分钟", True),
        ("1.5小时", 5400, "1.5小时", False),
        ("三個小時後", 10800, "三個小時後", True),
        ("remind me in 10 minutes", 600, "in 10 minutes", True),
        ("in half an hour", 1800, "in half an hour", True),
        ("an hour and a half later", 5400, "an hour and a half later", True),
        ("one and a half hours", 5400, "one and a half hours", False),
        ("nod for twenty-five seconds", 25, "twenty-five seconds", False),
        ("2 hrs from now", 7200, "2 hrs from now", True),
    ],
)
def test_durations(text: str, seconds: float, span: str, relative: bool) -> None:
    (duration,) = find_durations(text)
    assert duration.seconds == seconds
    assert duration.text(text) == span
    assert duration.relative is relative


@pytest.mark.parametrize(
    "text",
    [
        "明天早上8点叫我",
        "今天天气怎么样",
        "星期一",
        "开灯",
        "turn on the lights",
        "minutes",
    ],
)
def test_no_durations(text: str) -> None:
    assert find_durations(text) == []


def test_several_in_order() -> None:
    text = "点头3秒，然后10分钟后提醒我"
    assert [d.seconds for d in find_durations(text)] == [3, 600]
