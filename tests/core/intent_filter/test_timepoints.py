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


@pytest.mark.parametrize(
    ("text", "at", "span"),
    [
        ("明日の朝8時に起こして", "2026-02-23T08:00", "明日の朝8時"),
        ("午後3時半", "2026-02-23T15:30", "午後3時半"),
        ("今夜9時", "2026-02-22T21:00", "今夜9時"),
        ("8時30分に起こして", "2026-02-22T20:30", "8時30分"),
        ("明後日の午前7時", "2026-02-24T07:00", "明後日の午前7時"),
        ("夜の9時", "2026-02-22T21:00", "夜の9時"),
        ("あした7時", "2026-02-23T07:00", "あした7時"),
        ("朝7時", "2026-02-23T07:00", "朝7時"),
        ("明朝6時", "2026-02-23T06:00", "明朝6時"),
        ("今日の午後6時", "2026-02-22T18:00", "今日の午後6時"),
        ("十時十五分", "2026-02-22T22:15", "十時十五分"),
        ("深夜2時", "2026-02-23T02:00", "深夜2時"),
        ("昼1時", "2026-02-23T13:00", "昼1時"),
        ("８時", "2026-02-22T20:00", "８時"),
    ],
)
def test_japanese_time_points(text: str, at: str, span: str) -> None:
    (point,) = find_time_points(text, NOW)
    assert point.at == datetime.fromisoformat(at + ":00+08:00")
    assert text[point.start : point.end] == span


@pytest.mark.parametrize(
    ("text", "at", "span"),
    [
        ("내일 아침 8시에 깨워 줘", "2026-02-23T08:00", "내일 아침 8시"),
        ("오후 3시 반", "2026-02-23T15:30", "오후 3시 반"),
        ("오늘 밤 9시", "2026-02-22T21:00", "오늘 밤 9시"),
        ("오늘밤 9시", "2026-02-22T21:00", "오늘밤 9시"),
        ("8시 30분", "2026-02-22T20:30", "8시 30분"),
        ("8시30분에 알려 줘", "2026-02-22T20:30", "8시30분"),
        ("모레 오전 7시", "2026-02-24T07:00", "모레 오전 7시"),
        ("여덟 시", "2026-02-22T20:00", "여덟 시"),
        ("세 시", "2026-02-23T03:00", "세 시"),
        ("아홉시에", "2026-02-22T21:00", "아홉시"),
        ("열두 시", "2026-02-23T12:00", "열두 시"),
        ("열 한 시", "2026-02-22T23:00", "열 한 시"),
        ("여덟 시 삼십 분", "2026-02-22T20:30", "여덟 시 삼십 분"),
        ("저녁 7시쯤", "2026-02-22T19:00", "저녁 7시"),
        ("새벽 3시", "2026-02-23T03:00", "새벽 3시"),
        ("낮 2시", "2026-02-23T14:00", "낮 2시"),
        ("오전 12시", "2026-02-23T00:00", "오전 12시"),
        ("내일모레 10시", "2026-02-24T10:00", "내일모레 10시"),
        ("밤 12시", "2026-02-23T00:00", "밤 12시"),
    ],
)
def test_korean_time_points(text: str, at: str, span: str) -> None:
    (point,) = find_time_points(text, NOW)
    assert point.at == datetime.fromisoformat(at + ":00+08:00")
    assert text[point.start : point.end] == span


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("晚上12点", "2026-02-23T00:00"),  # midnight, not noon
        ("今晚12点", "2026-02-23T00:00"),
        ("晚上1点", "2026-02-23T01:00"),  # the small hours after midnight
        ("明晚12点", "2026-02-24T00:00"),
        ("오늘 밤 1시", "2026-02-23T01:00"),
        ("夜12時", "2026-02-23T00:00"),
        ("12 o'clock tonight", "2026-02-23T00:00"),
        ("晚上九点", "2026-02-22T21:00"),
    ],
)
def test_night_hours(text: str, at: str) -> None:
    (point,) = find_time_points(text, NOW)
    assert point.at == datetime.fromisoformat(at + ":00+08:00")


def test_a_time_without_a_day_is_the_next_one() -> None:
    early = datetime.fromisoformat("2026-02-22T00:30:00+08:00")
    (point,) = find_time_points("밤 1시", early)
    assert point.at == datetime.fromisoformat("2026-02-22T01:00:00+08:00")
    (point,) = find_time_points("8時", early)
    assert point.at == datetime.fromisoformat("2026-02-22T08:00:00+08:00")


def test_several_languages_in_order() -> None:
    text = "내일 8시, 明日の朝7時, 明天9点"
    assert [p.at.hour for p in find_time_points(text, NOW)] == [8, 7, 9]


def test_seconds_until_the_spec_example() -> None:
    """The dev set's case d32: tomorrow 08:00 seen from 17:40 is 51,600 s away."""
    (point,) = find_time_points("明天早上8点叫我", NOW)
    assert point.seconds_from(NOW) == 51600


@pytest.mark.parametrize(
    "text",
    [
        "开灯",
        "10分钟后提醒我",
        "25点",
        "3点70分",
        "turn on the lights",
        "一时间不知道",  # "for a moment"
        "1時間後に起こして",  # a duration
        "8時間",
        "10分後",
        "세 시간",  # a duration
        "1시간 후",
        "3시간 30분",
        "다시 시작해",
        "한시적으로",
        "몇 시야",
    ],
)
def test_no_time_points(text: str) -> None:
    assert find_time_points(text, NOW) == []
