"""Clock times resolved against the request's `now` (Asia/Shanghai, 17:40)."""

from __future__ import annotations

from datetime import datetime

import pytest

from custom_components.soul.core.intent_filter.timepoints import find_time_points

NOW = datetime.fromisoformat("2026-02-22T17:40:00+08:00")


@pytest.mark.parametrize(
    ("text", "at", "span"),
    [
        ("明天早上8点叫我", "2026-02-23T08:00", "明天早上8点"),
        ("下午3点半提醒我", "2026-02-23T15:30", "下午3点半"),
        ("晚上九点", "2026-02-22T21:00", "晚上九点"),
        ("8点叫我", "2026-02-22T20:00", "8点"),
        ("明晚8点", "2026-02-23T20:00", "明晚8点"),
        ("后天上午十点一刻", "2026-02-24T10:15", "后天上午十点一刻"),
        ("凌晨两点", "2026-02-23T02:00", "凌晨两点"),
        ("中午12点", "2026-02-23T12:00", "中午12点"),
        ("明天早上8點", "2026-02-23T08:00", "明天早上8點"),
        ("tomorrow at 8am", "2026-02-23T08:00", "tomorrow at 8am"),
        ("remind me at 3:30 pm", "2026-02-23T15:30", "at 3:30 pm"),
        ("at 9 pm tomorrow", "2026-02-23T21:00", "at 9 pm tomorrow"),
        ("7:30", "2026-02-22T19:30", "7:30"),
    ],
)
def test_time_points(text: str, at: str, span: str) -> None:
    (point,) = find_time_points(text, NOW)
    assert point.at == datetime.fromisoformat(at + ":00+08:00")
    assert text[point.start : point.end] == span


def test_seconds_until_the_spec_example() -> None:
    """The dev set's case d32: tomorrow 08:00 seen from 17:40 is 51,600 s away."""
    (point,) = find_time_points("明天早上8点叫我", NOW)
    assert point.seconds_from(NOW) == 51600


@pytest.mark.parametrize(
    "text", ["开灯", "10分钟后提醒我", "25点", "3点70分", "turn on the lights"]
)
def test_no_time_points(text: str) -> None:
    assert find_time_points(text, NOW) == []
