"""Durations and relative times in Chinese, Japanese, Korean and English."""

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


@pytest.mark.parametrize(
    ("text", "seconds", "span", "relative"),
    [
        ("10分後に電気を消して", 600, "10分後に", True),
        ("10分後", 600, "10分後", True),
        ("あと5分", 300, "あと5分", True),
        ("あと 5分で消して", 300, "あと 5分", True),
        ("あと十分で出る", 600, "あと十分", True),
        ("1時間半後に起こして", 5400, "1時間半後に", True),
        ("一時間後", 3600, "一時間後", True),
        ("30秒間うなずいて", 30, "30秒間", False),
        ("10秒後", 10, "10秒後", True),
        ("5分間", 300, "5分間", False),
        ("十五分間", 900, "十五分間", False),
        ("十分後", 600, "十分後", True),
        ("5分待って", 300, "5分", False),
        ("2分半待って", 150, "2分半", False),
        ("5分したら教えて", 300, "5分したら", True),
        ("10分経ったら", 600, "10分経ったら", True),
        ("半時間後", 1800, "半時間後", True),
        ("3日後", 259200, "3日後", True),
        ("2日間", 172800, "2日間", False),
        ("1週間後", 604800, "1週間後", True),
        ("２週間", 1209600, "２週間", False),
        ("１０分後", 600, "１０分後", True),
    ],
)
def test_japanese_durations(
    text: str, seconds: float, span: str, relative: bool
) -> None:
    (duration,) = find_durations(text)
    assert duration.seconds == seconds
    assert duration.text(text) == span
    assert duration.relative is relative


@pytest.mark.parametrize(
    ("text", "seconds", "span", "relative"),
    [
        ("10분 후에 불 꺼 줘", 600, "10분 후에", True),
        ("10분 후", 600, "10분 후", True),
        ("10분후", 600, "10분후", True),
        ("한 시간 반 뒤", 5400, "한 시간 반 뒤", True),
        ("한 시간 반후", 5400, "한 시간 반후", True),
        ("30초", 30, "30초", False),
        ("30초 동안 고개를 끄덕여", 30, "30초", False),
        ("5분 뒤에 알려 줘", 300, "5분 뒤에", True),
        ("5분만 기다려", 300, "5분", False),
        ("10분간", 600, "10분간", False),
        ("삼십 분 후에", 1800, "삼십 분 후에", True),
        ("오 분 있다가", 300, "오 분 있다가", True),
        ("이십초", 20, "이십초", False),
        ("두 시간", 7200, "두 시간", False),
        ("세 시간 뒤에", 10800, "세 시간 뒤에", True),
        ("열두 시간", 43200, "열두 시간", False),
        ("열 두 시간", 43200, "열 두 시간", False),
        ("2시간 있으면", 7200, "2시간 있으면", True),
        ("반 시간 후", 1800, "반 시간 후", True),
        ("1.5시간", 5400, "1.5시간", False),
        ("3일 후", 259200, "3일 후", True),
        ("3일 동안", 259200, "3일", False),
        ("삼일 뒤", 259200, "삼일 뒤", True),
        ("이틀 뒤", 172800, "이틀 뒤", True),
        ("하루", 86400, "하루", False),
        ("하루 반", 129600, "하루 반", False),
        ("2주 후", 1209600, "2주 후", True),
        ("일주일 뒤", 604800, "일주일 뒤", True),
        ("이 분 후", 120, "이 분 후", True),
    ],
)
def test_korean_durations(text: str, seconds: float, span: str, relative: bool) -> None:
    (duration,) = find_durations(text)
    assert duration.seconds == seconds
    assert duration.text(text) == span
    assert duration.relative is relative


@pytest.mark.parametrize(
    "text",
    [
        "十分好",  # "very good"
        "今天十分热",
        "3点20分",  # a clock time
        "3点20分后",
        "下午三点二十分",
        "考了90分",  # a score
        "20分",
        "百分之五十",
        "三分之一",
        "3日",  # a date
        "3月1日",
        "生日快乐",
        "十分です",  # "enough"
        "十分に休んで",
        "半分にして",  # "half"
        "3分の1",
        "8時30分に起こして",  # a clock time
        "明日の朝8時",
        "毎日",
        "多分",
        "두 분이 오셨어요",  # two people
        "이 시간에",  # at this time
        "이분은 누구야",  # this person
        "구분해 줘",  # distinguish
        "기분이 좋아",
        "충분해",
        "3일",  # a date
        "3월 1일",
        "8시 30분",  # a clock time
        "8시30분에 깨워 줘",
        "내일 일곱 시",
        "꺼 주세요",
        "일요일",
        "초록색 불",
    ],
)
def test_no_cjk_durations(text: str) -> None:
    assert find_durations(text) == []


def test_compound_durations_are_read_as_parts() -> None:
    text = "1시간 30분 후"
    assert [(d.seconds, d.text(text), d.relative) for d in find_durations(text)] == [
        (3600, "1시간", False),
        (1800, "30분 후", True),
    ]


def test_chinese_minutes_are_unchanged_by_japanese() -> None:
    """分钟 is the Chinese unit; a kana-free bare 分 needs a marker."""
    text = "5分钟后和十分钟"
    assert [(d.seconds, d.text(text)) for d in find_durations(text)] == [
        (300, "5分钟后"),
        (600, "十分钟"),
    ]


def test_several_in_order() -> None:
    text = "点头3秒，然后10分钟后提醒我"
    assert [d.seconds for d in find_durations(text)] == [3, 600]


def test_several_in_order_across_languages() -> None:
    text = "10분 후, 5分後, in 2 minutes"
    assert [d.seconds for d in find_durations(text)] == [600, 300, 120]
