"""Interop (issue 15): DesktopRobot intent-filter catalogs, and clauses nothing claims.

Catalogs written for the DesktopRobot intent filter (``from_time_key``
``duration_seconds`` / ``trigger_at`` with ``time_kind``, its entity type names,
its locales and system intents) work unchanged; a clause that asks to be
reminded at a time yields the catalog's one timed intent even when its verb is
not a keyword; and a clause that yields nothing is reported, never dropped in
silence. The catalogs and commands here are our own; ``docs/intent-filter.md``
has the mapping.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.soul.core.intent_filter import (
    IntentFilterError,
    compile_catalog,
    filter_intents,
)

NOW = "2026-02-22T17:40:00+08:00"
DATA = Path(__file__).parents[2] / "data"
SPEC_DESK_ROBOT = json.loads(
    (DATA / "eval_interop" / "catalog_spec_desk_robot.json").read_text(encoding="utf-8")
)

# A catalog in the DesktopRobot filter's format: entity-bound slots, a timer
# bound to a duration (its length and the moment it ends) and an alarm bound
# to a clock time.
DESKTOP_ROBOT = [
    {
        "id": "lamp",
        "name": "台灯",
        "priority": 90,
        "match": {"keywords_any": ["台灯", "灯", "lamp", "light", "ライト", "불"], "min_confidence": 0.3},
        "slots": [
            {"name": "action", "required": True, "from_entity_types": ["action"]},
            {"name": "room", "from_entity_types": ["room"]},
        ],
    },
    {
        "id": "timer",
        "name": "计时",
        "priority": 80,
        "match": {"keywords_any": ["提醒", "remind", "知らせて", "알려"], "min_confidence": 0.3},
        "slots": [
            {"name": "duration_seconds", "required": True, "from_time_key": "duration_seconds", "time_kind": "duration"},
            {"name": "trigger_at", "required": True, "from_time_key": "trigger_at", "time_kind": "duration"},
        ],
    },
    {
        "id": "wake",
        "name": "叫醒",
        "priority": 85,
        "match": {"keywords_any": ["叫醒", "wake me"], "entity_types_any": ["time_time_point"]},
        "slots": [
            {"name": "trigger_at", "required": True, "from_time_key": "trigger_at", "time_kind": "time_point"},
            {"name": "zone", "from_time_key": "timezone"},
            {"name": "said", "from_time_key": "raw"},
            {"name": "kind", "from_time_key": "kind"},
        ],
    },
]  # fmt: skip


def run(command: str, catalog: list[Any], **extra: Any) -> dict[str, Any]:
    """Filter ``command`` at NOW in Shanghai."""
    return filter_intents(
        {
            "command": command,
            "intent_catalog": catalog,
            "now": NOW,
            "timezone": "Asia/Shanghai",
            **extra,
        }
    )


def business(response: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the non-system intents of a response."""
    return [i for i in response["intents"] if not i["intent_id"].startswith("sys.")]


def ids(response: dict[str, Any]) -> list[str]:
    """Return the ids of the catalog intents a response executes."""
    if response["decision"]["action"] != "execute_intents":
        return []
    return [i["intent_id"] for i in business(response)]


# --- point 1: DesktopRobot catalogs work unchanged ------------------------------


def test_a_desktop_robot_catalog_compiles() -> None:
    catalog = compile_catalog(DESKTOP_ROBOT)
    assert [i.id for i in catalog.intents] == ["lamp", "timer", "wake"]
    # its entity type names are Soul's duration / time_point
    assert catalog.intents[2].entity_types_any == ("time_point",)
    aliased = copy.deepcopy(DESKTOP_ROBOT)
    aliased[0]["slots"][1]["from_entity_types"] = ["time_duration"]
    assert compile_catalog(aliased).intents[0].slots[1].from_entity_types == (
        "duration",
    )


@pytest.mark.parametrize("key", ["confidence", "when", "Duration_Seconds"])
def test_other_time_keys_are_still_refused(key: str) -> None:
    catalog = [{"id": "a", "slots": [{"name": "s", "from_time_key": key}]}]
    with pytest.raises(IntentFilterError, match="from_time_key must be one of"):
        compile_catalog(catalog)


def test_duration_seconds_is_the_length_and_trigger_at_the_moment_it_ends() -> None:
    response = run("帮我把卧室的台灯关掉，然后提醒我15分钟后出门", DESKTOP_ROBOT)
    assert ids(response) == ["lamp", "timer"]
    lamp, timer = business(response)
    assert lamp["normalized"] == {"action": "off", "room": "bedroom"}
    assert timer["normalized"] == {
        "duration_seconds": 900,
        "trigger_at": "2026-02-22T17:55:00+08:00",
    }
    assert type(timer["normalized"]["duration_seconds"]) is int
    assert timer["parameters"] == {
        "duration_seconds": "15分钟后",
        "trigger_at": "15分钟后",
    }
    # a plain duration is a length too ("a 90-second timer")
    timer = business(run("提醒我，90秒", DESKTOP_ROBOT))[0]
    assert timer["normalized"]["duration_seconds"] == 90


def test_trigger_at_of_a_clock_time_is_that_moment_in_the_request_zone() -> None:
    wake = business(run("明天早上六点半叫醒我", DESKTOP_ROBOT))[0]
    assert wake["intent_id"] == "wake"
    assert wake["normalized"] == {
        "trigger_at": "2026-02-23T06:30:00+08:00",
        "zone": "Asia/Shanghai",
        "said": "明天早上六点半",
        "kind": "time_point",
    }
    berlin = filter_intents(
        {
            "command": "wake me at 7am tomorrow",
            "intent_catalog": DESKTOP_ROBOT,
            "now": NOW,
            "timezone": "Europe/Berlin",
        }
    )
    # NOW is 10:40 in Berlin
    assert business(berlin)[0]["normalized"]["trigger_at"] == (
        "2026-02-23T07:00:00+01:00"
    )


def test_time_kind_picks_the_signal_and_a_missing_one_asks_for_it() -> None:
    # a clock time has no duration_seconds: the timer must ask for its length
    response = run("明天早上8点提醒我", DESKTOP_ROBOT)
    timer = business(response)[0]
    assert timer["intent_id"] == "timer"
    assert timer["status"] == "need_clarification"
    assert timer["missing_parameters"] == ["duration_seconds", "trigger_at"]
    assert response["decision"]["reason"] == "missing_required_slots"
    # a duration has no timezone, and a time_point slot ignores durations
    catalog = [
        {
            "id": "t",
            "match": {"keywords_any": ["提醒"]},
            "slots": [
                {"name": "zone", "from_time_key": "timezone"},
                {"name": "at", "from_time_key": "trigger_at", "time_kind": "time_point"},
                {"name": "any", "from_time_key": "trigger_at"},
            ],
        }
    ]  # fmt: skip
    normalized = business(run("10分钟后提醒我", catalog))[0]["normalized"]
    assert normalized == {"any": "2026-02-22T17:50:00+08:00"}


@pytest.mark.parametrize(
    ("command", "locale", "expected"),
    [
        ("帮我把书房的灯关了并且10分钟后提醒我喝水", "zh-CN", ["lamp", "timer"]),
        ("請幫我把臥室的燈打開", "zh-TW", ["lamp"]),
        ("please switch off the light and remind me in 20 minutes", "en-US", ["lamp", "timer"]),
        ("거실 불 켜줘 그리고 5분 뒤에 알려줘", "ko-KR", ["lamp", "timer"]),
        ("リビングのライトをつけて、5分後に知らせて", "ja-JP", ["lamp", "timer"]),
    ],
)  # fmt: skip
def test_meta_locale_takes_the_desktop_robot_values(
    command: str, locale: str, expected: list[str]
) -> None:
    response = run(command, DESKTOP_ROBOT)
    assert response["meta"]["locale"] == locale
    assert ids(response) == expected
    if "timer" in expected:
        timer = business(response)[-1]["normalized"]
        assert timer["duration_seconds"] in (300, 600, 1200)


@pytest.mark.parametrize(
    ("command", "system", "action"),
    [
        ("哎呀，吓死我了", "sys.no_action", "no_action"),
        ("ugh, so tired", "sys.no_action", "no_action"),
        ("你觉得人工智能会取代人类吗", "sys.fallback_reasoning", "fallback_reasoning"),
        ("why is the sky blue", "sys.fallback_reasoning", "fallback_reasoning"),
    ],
)
def test_system_intents_have_the_desktop_robot_shape(
    command: str, system: str, action: str
) -> None:
    response = run(command, DESKTOP_ROBOT)
    decision = response["decision"]
    assert decision["action"] == action
    assert decision["trigger_intent_id"] == system
    (intent,) = response["intents"]
    assert intent["intent_id"] == system
    names = {"sys.no_action": "无需处理", "sys.fallback_reasoning": "触发高级推理"}
    assert intent["intent_name"] == names[system]
    assert intent["status"] == "system"
    assert intent["segment_index"] == 0
    assert intent["span"] == {"text": command, "start": 0, "end": len(command)}
    assert intent["parameters"] == {"reason": decision["reason"]}
    assert intent["normalized"] == {"system_intent": True}
    assert intent["missing_parameters"] == []
    assert intent["evidence"][0]["type"] == "system"
    assert 0 < intent["confidence"] <= 1
    # without emit_system_intent_when_empty the decision stands alone
    quiet = run(
        command, DESKTOP_ROBOT, options={"emit_system_intent_when_empty": False}
    )
    assert quiet["intents"] == []
    assert quiet["decision"] == decision


def test_evidence_values_are_strings() -> None:
    """§4.4.2's evidence is {type, value: string, score}; typed clients rely on it."""
    catalog = [
        {
            "id": "scene",
            "hint_score": 0.2,
            "match": {
                "keywords_all": ["灯", "调"],
                "entity_types_all": ["device", "color"],
                "examples": ["把灯调成暖光"],
            },
        }
    ]
    responses = [
        run("把灯调成红色", catalog),
        run("不要把灯调成红色", catalog),
        run("帮我把灯变成绿色并且10分钟后提醒我", DESKTOP_ROBOT),
    ]
    evidence = [e for r in responses for i in r["intents"] for e in i["evidence"]]
    assert {e["type"] for e in evidence} >= {
        "keywords_all",
        "entity_types_all",
        "example",
        "hint_score",
        "negation",
    }
    for item in evidence:
        assert isinstance(item["value"], str), item
        assert isinstance(item["score"], int | float)
        assert 0 <= item["score"] <= 1
    assert {"type": "example", "value": "把灯调成暖光"} in [
        {k: e[k] for k in ("type", "value")} for e in evidence
    ]
    assert {"type": "negation", "value": "不要", "score": 0} in evidence


# --- point 2: a time implies the catalog's timed intent -------------------------


def test_the_readme_flagship_yields_the_reminder_on_the_spec_catalog() -> None:
    """§3.10's catalog has no "提醒": the clause's time and the schema decide."""
    response = run("把灯调成红色然后10分钟后提醒我", SPEC_DESK_ROBOT)
    assert ids(response) == ["intent_light_control", "intent_alarm_create"]
    light, alarm = business(response)
    assert light["normalized"] == {
        "skill": "control_light",
        "mode": "set_color",
        "color": "red",
    }
    assert alarm["normalized"] == {
        "skill": "create_alarm",
        "trigger_in_seconds": 600,
        "label": "闹钟",
    }
    assert alarm["span"]["text"] == "10分钟后提醒我"
    assert alarm["evidence"][0] == {
        "type": "implied_by_time",
        "value": "trigger_in_seconds",
        "score": 0.45,
    }
    assert 0.35 <= alarm["confidence"] < light["confidence"]
    assert "unmatched" not in response


@pytest.mark.parametrize(
    ("command", "seconds"),
    [
        ("半小时后通知我一下", 1800),
        ("晚上9点提醒我给妈妈打电话", 12000),
        ("remind me in 15 minutes", 900),
        ("could you ping me in 5 minutes", 300),
        ("30分後に起こして", 1800),
        ("1시간 후에 깨워줘", 3600),
        ("明天早上八点有个会，提醒我一下", 51600),  # the time of the clause before
    ],
)
def test_a_request_on_the_user_at_a_moment_implies_the_timed_intent(
    command: str, seconds: int
) -> None:
    response = run(command, SPEC_DESK_ROBOT)
    assert ids(response) == ["intent_alarm_create"]
    assert business(response)[0]["normalized"]["trigger_in_seconds"] == seconds
    assert "unmatched" not in response


@pytest.mark.parametrize(
    "command",
    [
        "10分钟后再说吧",  # chat: nobody is to be acted on
        "我10分钟后到家",  # a statement: the user is the subject
        "他说一小时后来找我",  # someone else is the subject
        "一小时后帮我订外卖",  # the action is on something else
        "明天早上8点你来接我",  # the addressee is to come
        "不要10分钟后提醒我",  # negated
        "10分钟后提醒我吗",  # a question
        "一个小时后你能陪我聊天吗",  # conversation
        "过一会儿提醒我",  # no moment
        "十分钟后提醒他",  # not the user
        "I'll be back in 10 minutes",
        "order me a pizza in an hour",
        "you should call me in an hour",
        "10분 뒤에 문을 닫아줘",  # another object
    ],
)
def test_chat_and_statements_with_a_time_imply_nothing(command: str) -> None:
    assert ids(run(command, SPEC_DESK_ROBOT)) == []


def test_only_a_catalog_with_one_fitting_timed_intent_implies_it() -> None:
    two = copy.deepcopy(SPEC_DESK_ROBOT)
    two.append(
        {
            "id": "intent_reminder",
            "match": {"keywords_any": ["备忘"]},
            "slots": [{"name": "at", "from_time_key": "iso"}],
        }
    )
    response = run("开灯，然后10分钟后提醒我", two)
    assert ids(response) == ["intent_light_control"]
    assert response["unmatched"] == [
        {
            "segment_index": 1,
            "span": {"text": "10分钟后提醒我", "start": 5, "end": 13},
            "reason": "ambiguous",
            "intent_ids": ["intent_alarm_create", "intent_reminder"],
        }
    ]
    # a slot for clock times only does not fit a relative time
    two[-1]["slots"][0]["time_kind"] = "time_point"
    assert ids(run("开灯，然后10分钟后提醒我", two)) == [
        "intent_light_control",
        "intent_alarm_create",
    ]
    assert ids(run("开灯，然后明天早上7点提醒我", two)) == ["intent_light_control"]


def test_a_length_slot_is_no_moment_and_the_catalog_still_decides() -> None:
    # the head motion's duration_seconds is a length: "10分钟后" does not fit it
    head_only = [i for i in SPEC_DESK_ROBOT if i["id"] == "intent_head_motion"]
    assert ids(run("10分钟后提醒我", head_only)) == []
    # min_confidence and rules that must hold are the catalog's word
    strict = copy.deepcopy(SPEC_DESK_ROBOT)
    strict[1]["match"]["min_confidence"] = 0.9
    assert ids(run("10分钟后提醒我", strict)) == []
    hard = copy.deepcopy(SPEC_DESK_ROBOT)
    hard[1]["match"]["keywords_all"] = ["闹钟"]
    assert ids(run("10分钟后提醒我", hard)) == []
    negative = copy.deepcopy(SPEC_DESK_ROBOT)
    negative[1]["match"]["negative_keywords"] = ["提醒"]
    assert ids(run("10分钟后提醒我", negative)) == []


def test_a_timed_request_keeps_its_time_from_its_neighbour() -> None:
    response = run("点头，10分钟后提醒我", SPEC_DESK_ROBOT)
    head, alarm = business(response)
    assert "duration_seconds" not in head["normalized"]
    assert alarm["normalized"]["trigger_in_seconds"] == 600


# --- no silent half-execution -------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "reason", "text"),
    [
        ("开灯，10分钟后再说", "no_catalog_match", "10分钟后再说"),
        ("开灯，顺便把窗户打开", "no_catalog_match", "顺便把窗户打开"),
        ("开灯，不要摇头", "negated", "不要摇头"),
        ("开灯，为什么天是蓝的", "question", "为什么天是蓝的"),
        ("turn on the light and I love you", "remark", "I love you"),
    ],
)
def test_a_clause_that_gives_no_intent_is_reported(
    command: str, reason: str, text: str
) -> None:
    response = run(command, SPEC_DESK_ROBOT)
    assert ids(response) == ["intent_light_control"]
    (note,) = response["unmatched"]
    assert note["reason"] == reason
    assert note["span"]["text"] == text
    assert command[note["span"]["start"] : note["span"]["end"]] == text
    assert note["segment_index"] == 1


def test_clauses_cut_by_max_intents_are_reported() -> None:
    response = run(
        "开灯，点头，10分钟后叫我", SPEC_DESK_ROBOT, options={"max_intents": 2}
    )
    assert ids(response) == ["intent_light_control", "intent_head_motion"]
    assert response["unmatched"] == [
        {
            "segment_index": 2,
            "span": {"text": "10分钟后叫我", "start": 6, "end": 13},
            "reason": "max_intents",
        }
    ]


def test_nothing_is_reported_when_every_clause_gave_its_part() -> None:
    for command in ("开灯然后摇摇头", "明天早上8点，叫我起床", "开灯。"):
        assert "unmatched" not in run(command, SPEC_DESK_ROBOT), command
    # and a command that executes nothing has its system intent instead
    response = run("10分钟后再说吧", SPEC_DESK_ROBOT)
    assert "unmatched" not in response
    assert response["intents"][0]["intent_id"] == "sys.fallback_reasoning"
