"""Topic prefix rules and the §3.1 topic builder/parser with §3.2 QoS/retain."""

from __future__ import annotations

import pytest

from custom_components.soul.core.topics import (
    QOS_RETAIN,
    InvalidPrefixError,
    Kind,
    ParsedTopic,
    Topics,
    normalize_prefix,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("soul", "soul"),
        (" /soul/ ", "soul"),
        ("home/soul", "home/soul"),
        ("灵魂", "灵魂"),
    ],
)
def test_valid_prefix(raw: str, expected: str) -> None:
    assert normalize_prefix(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "", " / ", "soul/#", "a/+/b", "$SYS", "a//b", "a\x00b", "x" * 65,
        # A fuzz of the stored options: Home Assistant could no longer write
        # its configuration entries, and its MQTT client's subscribe raised.
        "soul\ud800", "so\nul", "so\u202eul", "so\x1bul", None, 5, ["soul"],
    ],
)  # fmt: skip
def test_invalid_prefix(raw: object) -> None:
    with pytest.raises(InvalidPrefixError):
        normalize_prefix(raw)


def test_every_topic_of_section_3_1() -> None:
    topics = Topics("soul")
    assert (
        topics.topic("terminal-001", Kind.ONLINE) == "soul/terminal/terminal-001/online"
    )
    assert topics.topic("t", Kind.HEARTBEAT) == "soul/terminal/t/heartbeat"
    assert topics.topic("t", Kind.SKILLS) == "soul/terminal/t/skills"
    assert topics.topic("t", Kind.INTENT_CATALOG) == "soul/terminal/t/intent_catalog"
    assert topics.topic("t", Kind.INVOKE, "r1") == "soul/terminal/t/invoke/r1"
    assert topics.topic("t", Kind.RESULT, "r1") == "soul/terminal/t/result/r1"
    assert topics.topic("t", Kind.STATUS) == "soul/terminal/t/status"
    assert topics.topic("t", Kind.EMOTION_UPDATE) == "soul/terminal/t/emotion_update"
    assert topics.topic("t", Kind.INTENT_ACTION) == "soul/terminal/t/intent_action"
    with pytest.raises(ValueError, match="request id"):
        topics.topic("t", Kind.INVOKE)


def test_qos_and_retain_of_section_3_2() -> None:
    assert {k: v for k, v in QOS_RETAIN.items() if v[1]} == {
        Kind.ONLINE: (1, True),
        Kind.SKILLS: (1, True),
        Kind.INTENT_CATALOG: (1, True),
    }
    assert QOS_RETAIN[Kind.HEARTBEAT] == (0, False)
    for kind in (
        Kind.INVOKE,
        Kind.RESULT,
        Kind.STATUS,
        Kind.EMOTION_UPDATE,
        Kind.INTENT_ACTION,
    ):
        assert QOS_RETAIN[kind] == (1, False)
    assert set(QOS_RETAIN) == set(Kind)


def test_subscriptions() -> None:
    assert Topics("home/soul").subscriptions() == [
        ("home/soul/terminal/+/online", 1),
        ("home/soul/terminal/+/heartbeat", 0),
        ("home/soul/terminal/+/skills", 1),
        ("home/soul/terminal/+/intent_catalog", 1),
        ("home/soul/terminal/+/result/+", 1),
    ]


@pytest.mark.parametrize(
    ("topic", "parsed"),
    [
        ("a/b/terminal/t-1/online", ParsedTopic("t-1", Kind.ONLINE)),
        ("a/b/terminal/t-1/result/r-9", ParsedTopic("t-1", Kind.RESULT, "r-9")),
        ("a/b/terminal/t.1:x/skills", ParsedTopic("t.1:x", Kind.SKILLS)),
        ("a/b/terminal/t-1/result", None),
        ("a/b/terminal/t-1/online/extra", None),
        ("a/b/terminal/t-1/unknown", None),
        ("a/b/terminal//online", None),
        ("a/b/terminal/t 1/online", None),
        ("a/c/terminal/t-1/online", None),
        ("a/b/terminal/t-1/result/r/x", None),
        ("a/b/terminal/" + "x" * 65 + "/online", None),
    ],
)
def test_parse(topic: str, parsed: ParsedTopic | None) -> None:
    assert Topics("a/b").parse(topic) == parsed


def test_build_then_parse_round_trips() -> None:
    topics = Topics("soul")
    for kind in Kind:
        request = "r1" if kind in (Kind.INVOKE, Kind.RESULT) else None
        parsed = topics.parse(topics.topic("term", kind, request))
        assert parsed == ParsedTopic("term", kind, request)
