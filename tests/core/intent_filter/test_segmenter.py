"""Clauses of multi-intent commands, with spans into the original command."""

from __future__ import annotations

import pytest

from custom_components.soul.core.intent_filter.segmenter import segment


@pytest.mark.parametrize(
    ("command", "clauses"),
    [
        ("开灯", [("开灯", 0, 2)]),
        ("帮我把灯变成绿色并且10分钟后提醒我", [("帮我把灯变成绿色", 0, 8), ("10分钟后提醒我", 10, 18)]),
        ("关灯，再定个20分钟的闹钟", [("关灯", 0, 2), ("定个20分钟的闹钟", 4, 13)]),
        ("打开灯，摇摇头，然后5分钟后提醒我", [("打开灯", 0, 3), ("摇摇头", 4, 7), ("5分钟后提醒我", 10, 17)]),
        ("開燈並且點頭", [("開燈", 0, 2), ("點頭", 4, 6)]),
        ("turn on the light and then nod", [("turn on the light", 0, 17), ("nod", 27, 30)]),
        ("turn on the lights, then remind me in 10 minutes", [("turn on the lights", 0, 18), ("remind me in 10 minutes", 25, 48)]),
        ("再见", [("再见", 0, 2)]),
        ("  开灯。 ", [("开灯", 2, 4)]),
        ("，，。", []),
        ("", []),
    ],
)  # fmt: skip
def test_segments(command: str, clauses: list[tuple[str, int, int]]) -> None:
    segments = segment(command)
    assert [(s.text, s.start, s.end) for s in segments] == clauses
    for index, piece in enumerate(segments):
        assert piece.index == index
        assert command[piece.start : piece.end] == piece.text
