"""The intent filter's rules, one test (or table) per rule; requests as §4.4.1 bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.soul.core.intent_filter import filter_intents

CATALOG = json.loads(
    (Path(__file__).parents[2] / "data" / "eval" / "catalog_desk_robot.json").read_text(
        encoding="utf-8"
    )
)
NOW = "2026-02-22T17:40:00+08:00"


def run(command: str, catalog: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    """Filter ``command`` against ``catalog`` (default: the desk robot's)."""
    return filter_intents(
        {
            "command": command,
            "intent_catalog": CATALOG if catalog is None else catalog,
            "now": NOW,
            "timezone": "Asia/Shanghai",
            **extra,
        }
    )


def business(response: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the non-system intents of a response."""
    return [i for i in response["intents"] if not i["intent_id"].startswith("sys.")]


# --- the spec's own example (§4.4.1 → §4.4.2) ---------------------------------

SPEC_CATALOG = [
    {
        "id": "intent_light_control",
        "name": "控制灯",
        "priority": 90,
        "match": {
            "keywords_any": ["开灯", "打开灯", "把灯打开", "灯打开", "关灯", "关闭灯", "灯关了", "灯关", "灯",
                             "红色", "绿色", "白色", "灯白色", "变红", "变绿", "变白"],
            "min_confidence": 0.35,
        },
        "slots": [
            {"name": "skill", "default": "control_light"},
            {"name": "mode", "regex": "(开灯|打开灯|把灯打开|灯打开|打开|开启|关灯|关闭灯|把灯关掉|灯关了|关了|关掉|关闭|变红|变红色|变绿|变绿色|变白|变白色|红灯|绿灯|白灯)", "regex_group": 1},
            {"name": "color", "regex": "(红色|红|绿色|绿|白色|白|白灯|灯白色)", "regex_group": 1},
        ],
    },
    {
        "id": "intent_alarm_create",
        "name": "订闹钟",
        "priority": 90,
        "match": {"keywords_any": ["闹钟", "提醒", "alarm"]},
        "slots": [
            {"name": "skill", "default": "create_alarm"},
            {"name": "trigger_in_seconds", "regex": "([0-9]+(?:\\.[0-9]+)?)\\s*分钟", "regex_group": 1},
            {"name": "label", "default": "提醒事项"},
        ],
    },
]  # fmt: skip
SPEC_OPTIONS = {
    "allow_multi_intent": True,
    "max_intents": 8,
    "max_intents_per_segment": 1,
    "min_confidence": 0.35,
    "enable_time_parser": True,
    "emit_system_intent_when_empty": True,
    "return_debug_candidates": False,
    "return_debug_entities": False,
}


def test_spec_example_request_gives_the_spec_example_response() -> None:
    response = run(
        "帮我把灯变成绿色并且10分钟后提醒我",
        SPEC_CATALOG,
        options=SPEC_OPTIONS,
        request_id="ifr_xxx",
    )
    assert response["request_id"] == "ifr_xxx"
    assert response["decision"] == {
        "action": "execute_intents",
        "trigger_intent_id": "intent_light_control",
        "reason": "matched_catalog_intents",
    }
    light, alarm = response["intents"]
    assert light["intent_id"] == "intent_light_control"
    assert light["intent_name"] == "控制灯"
    assert light["status"] == "ready"
    assert light["segment_index"] == 0
    assert light["span"] == {"text": "帮我把灯变成绿色", "start": 0, "end": 8}
    assert light["normalized"] == {
        "skill": "control_light",
        "mode": "set_color",
        "color": "green",
    }
    assert light["parameters"] == {"color": "绿色"}  # raw captures only
    assert light["missing_parameters"] == []
    assert {"type": "keyword_any", "value": "灯"} in [
        {k: e[k] for k in ("type", "value")} for e in light["evidence"]
    ]
    assert 0.35 <= light["confidence"] <= 1
    assert alarm["intent_id"] == "intent_alarm_create"
    assert alarm["segment_index"] == 1
    assert alarm["span"]["text"] == "10分钟后提醒我"
    command = "帮我把灯变成绿色并且10分钟后提醒我"
    assert command[alarm["span"]["start"] : alarm["span"]["end"]] == "10分钟后提醒我"
    assert alarm["normalized"] == {
        "skill": "create_alarm",
        "trigger_in_seconds": 600,
        "label": "提醒事项",
    }
    assert alarm["parameters"] == {"trigger_in_seconds": "10"}
    meta = response["meta"]
    assert meta["segment_count"] == 2
    assert meta["catalog_size"] == 2
    assert meta["time_signals"] == 1
    assert meta["timezone"] == "Asia/Shanghai"
    assert meta["locale"] == "zh-CN"
    assert meta["now"] == NOW
    assert isinstance(meta["latency_ms"], float)
    json.dumps(response)  # plain JSON


def test_numbers_are_json_numbers() -> None:
    alarm = business(run("定一个5分钟的闹钟"))[0]
    assert alarm["normalized"]["trigger_in_seconds"] == 300
    assert type(alarm["normalized"]["trigger_in_seconds"]) is int
    head = business(run("点头2.5秒"))[0]
    assert head["normalized"]["duration_seconds"] == 2.5


# --- confidence ----------------------------------------------------------------


def test_long_keyword_list_does_not_dilute_a_specific_hit() -> None:
    short = [{"id": "light", "match": {"keywords_any": ["开灯"]}}]
    long = [
        {
            "id": "light",
            "match": {"keywords_any": ["开灯", *(f"无关词{n}" for n in range(400))]},
        }
    ]
    a = business(run("开灯", short))[0]["confidence"]
    b = business(run("开灯", long))[0]["confidence"]
    assert a == b >= 0.9


def test_a_hit_covering_the_clause_is_surer_than_a_mention() -> None:
    full = business(run("开灯"))[0]["confidence"]
    partial = business(run("帮我把灯变成绿色"))[0]["confidence"]
    assert full > partial >= 0.35


def test_min_confidence_per_intent_and_per_request() -> None:
    catalog = [
        {"id": "strict", "match": {"keywords_any": ["灯"], "min_confidence": 0.99}},
    ]
    assert run("请帮我把灯变成绿色", catalog)["decision"]["action"] != "execute_intents"
    catalog[0]["match"].pop("min_confidence")
    assert run("请帮我把灯变成绿色", catalog)["decision"]["action"] == "execute_intents"
    response = run("请帮我把灯变成绿色", catalog, options={"min_confidence": 0.99})
    assert response["decision"]["action"] != "execute_intents"


def test_priority_breaks_near_ties_and_hint_score_raises_confidence() -> None:
    catalog = [
        {"id": "low", "priority": 10, "match": {"keywords_any": ["音乐"]}},
        {"id": "high", "priority": 90, "match": {"keywords_any": ["音乐"]}},
    ]
    assert business(run("放音乐", catalog))[0]["intent_id"] == "high"
    hinted = copy.deepcopy(catalog)
    hinted[0]["hint_score"] = 0.9
    low = business(run("放音乐", hinted))[0]
    assert low["intent_id"] == "low"
    assert {"type": "hint_score", "value": "0.9", "score": 0.9} in low["evidence"]


# --- match rules ------------------------------------------------------------------


def test_keywords_all_needs_every_keyword() -> None:
    catalog = [{"id": "bright", "match": {"keywords_all": ["亮度", "调"]}}]
    assert run("亮度调高", catalog)["decision"]["action"] == "execute_intents"
    assert run("亮度是多少", catalog)["decision"]["action"] != "execute_intents"


def test_negative_keywords_exclude_the_intent() -> None:
    catalog = [
        {
            "id": "music",
            "match": {"keywords_any": ["歌"], "negative_keywords": ["歌手"]},
        }
    ]
    assert run("放首歌", catalog)["decision"]["action"] == "execute_intents"
    assert business(run("这个歌手真好", catalog)) == []


def test_regex_any_and_regex_all() -> None:
    catalog = [
        {"id": "any", "match": {"regex_any": [r"(?i)play\s+music"]}},
        {"id": "all", "match": {"regex_all": [r"volume", r"\d+"]}},
    ]
    assert business(run("Play music", catalog))[0]["intent_id"] == "any"
    assert business(run("volume 30", catalog))[0]["intent_id"] == "all"
    assert business(run("volume up", catalog)) == []


def test_entity_types_any_and_all() -> None:
    catalog = [
        {
            "id": "curtain",
            "match": {
                "keywords_any": ["窗帘", "curtains"],
                "entity_types_all": ["action"],
            },
            "slots": [
                {"name": "action", "from_entity_types": ["action"], "required": True},
                {
                    "name": "room",
                    "from_entity_types": ["room"],
                    "default": "living_room",
                },
            ],
        },
        {
            "id": "scene",
            "match": {"entity_types_any": ["room", "device"], "min_confidence": 0.4},
        },
    ]
    intent = business(run("把卧室的窗帘拉上", catalog))[0]
    assert intent["intent_id"] == "curtain"
    assert intent["normalized"] == {"action": "close", "room": "bedroom"}
    assert intent["parameters"] == {"action": "拉上", "room": "卧室"}
    assert business(run("open the curtains", catalog))[0]["normalized"] == {
        "action": "open",
        "room": "living_room",
    }
    # No action: entity_types_all fails; one room alone scores 0.3 < 0.4.
    assert business(run("窗帘", catalog)) == []
    assert business(run("厨房的灯", catalog))[0]["intent_id"] == "scene"


def test_examples_similarity() -> None:
    catalog = [
        {
            "id": "story",
            "match": {
                "examples": ["给我讲一个睡前故事", "讲个故事听听"],
                "min_confidence": 0.5,
            },
        }
    ]
    intent = business(run("讲个睡前故事", catalog))[0]
    assert intent["intent_id"] == "story"
    assert intent["evidence"][0]["type"] == "example"
    assert business(run("今天天气怎么样", catalog)) == []


# --- slots ------------------------------------------------------------------------


def test_required_slot_missing_needs_clarification() -> None:
    catalog = [
        {
            "id": "wake",
            "match": {"keywords_any": ["叫醒我", "wake me"]},
            "slots": [{"name": "at", "required": True, "from_time_key": "iso", "time_kind": "time_point"}],
        }
    ]  # fmt: skip
    response = run("叫醒我", catalog)
    assert response["decision"]["action"] == "execute_intents"
    assert response["decision"]["reason"] == "missing_required_slots"
    intent = response["intents"][0]
    assert intent["status"] == "need_clarification"
    assert intent["missing_parameters"] == ["at"]
    ready = run("明天早上7点叫醒我", catalog)["intents"][0]
    assert ready["status"] == "ready"
    assert ready["normalized"]["at"] == "2026-02-23T07:00:00+08:00"
    assert ready["parameters"]["at"] == "明天早上7点"


def test_from_time_key_variants() -> None:
    catalog = [
        {
            "id": "timer",
            "match": {"keywords_any": ["timer", "倒计时"]},
            "slots": [
                {"name": "length", "from_time_key": "seconds", "time_kind": "duration"},
                {"name": "ends", "from_time_key": "iso", "time_kind": "duration"},
                {
                    "name": "epoch",
                    "from_time_key": "timestamp",
                    "time_kind": "duration",
                },
                {"name": "said", "from_time_key": "text"},
            ],
        }
    ]
    intent = business(run("倒计时一刻钟", catalog))[0]
    assert intent["normalized"]["length"] == 900
    assert intent["normalized"]["ends"] == "2026-02-22T17:55:00+08:00"
    assert intent["normalized"]["epoch"] == 1771754100  # 09:55 UTC
    assert intent["normalized"]["said"] == "一刻钟"


def test_regex_group_by_name_and_value_map() -> None:
    catalog = [
        {
            "id": "music",
            "match": {"keywords_any": ["放"]},
            "slots": [
                {
                    "name": "genre",
                    "regex": "(?P<g>爵士|摇滚)",
                    "regex_group": "g",
                    "value_map": {"爵士": "jazz", "摇滚": "rock"},
                }
            ],
        }
    ]
    intent = business(run("放点爵士乐", catalog))[0]
    assert intent["parameters"] == {"genre": "爵士"}
    assert intent["normalized"] == {"genre": "jazz"}


def test_from_entity_types_raw_or_normalized() -> None:
    catalog = [
        {
            "id": "paint",
            "match": {"keywords_any": ["灯"]},
            "slots": [
                {"name": "c1", "from_entity_types": ["color"]},
                {
                    "name": "c2",
                    "from_entity_types": ["color"],
                    "use_normalized_entity": False,
                },
            ],
        }
    ]
    intent = business(run("灯调成紫色", catalog))[0]
    assert intent["normalized"] == {"c1": "purple", "c2": "紫色"}


@pytest.mark.parametrize(
    ("command", "seconds"),
    [
        ("10分钟后提醒我", 600),
        (
            "三分钟后提醒我",
            180,
        ),  # regex wants digits: the parsed duration fills the slot
        ("一个半小时后叫我", 5400),
        ("半小时后叫我", 1800),
        ("一刻钟后提醒我", 900),
        ("1小时30分钟后提醒我", 5400),
        ("明天早上8点叫我", 51600),
        ("下午3点半提醒我", 78600),  # 15:30 has passed: tomorrow
        ("晚上九点叫我", 12000),
        ("remind me in half an hour", 1800),
        ("remind me in 2 hours", 7200),
        ("十分鐘後提醒我", 600),
    ],
)
def test_seconds_slots_take_durations_and_times(command: str, seconds: int) -> None:
    alarm = business(run(command))[0]
    assert alarm["intent_id"] == "intent_alarm_create"
    assert alarm["normalized"]["trigger_in_seconds"] == seconds


def test_a_time_in_its_own_clause_reaches_the_intent() -> None:
    alarm = business(run("明天早上8点，叫我起床"))[0]
    assert alarm["normalized"]["trigger_in_seconds"] == 51600


def test_duration_slot_prefers_a_length_over_a_delay() -> None:
    head = business(run("点头3秒"))[0]
    assert head["normalized"]["duration_seconds"] == 3


@pytest.mark.parametrize(
    ("command", "normalized"),
    [
        ("开灯", {"mode": "on"}),
        ("把灯关掉吧", {"mode": "off"}),
        ("灯变红", {"mode": "set_color", "color": "red"}),
        ("灯调成白色", {"mode": "set_color", "color": "white"}),
        ("把燈調成紅色", {"mode": "set_color", "color": "red"}),
        ("turn the light red", {"mode": "set_color", "color": "red"}),
        ("turn the lights on", {"mode": "on"}),
        ("lights off please", {"mode": "off"}),
    ],
)
def test_light_mode_and_colour_are_canonical(
    command: str, normalized: dict[str, str]
) -> None:
    light = business(run(command))[0]
    assert light["intent_id"] == "intent_light_control"
    assert {k: light["normalized"].get(k) for k in normalized} == normalized
    assert "color" in light["normalized"] or "color" not in normalized


@pytest.mark.parametrize(
    ("command", "action"),
    [("摇摇头", "摇头"), ("点个头", "点头"), ("点一下头", "点头"), ("nod your head", "点头"),
     ("shake your head", "摇头"), ("搖搖頭", "摇头")],
)  # fmt: skip
def test_catalog_vocabulary_is_kept_for_its_own_values(
    command: str, action: str
) -> None:
    head = business(run(command))[0]
    assert head["intent_id"] == "intent_head_motion"
    assert head["normalized"]["action"] == action


# --- segmentation ------------------------------------------------------------------


def test_multi_intent_segments_and_limits() -> None:
    command = "打开灯，摇摇头，然后5分钟后提醒我"
    response = run(command)
    ids = [i["intent_id"] for i in business(response)]
    assert ids == ["intent_light_control", "intent_head_motion", "intent_alarm_create"]
    for intent in response["intents"]:
        span = intent["span"]
        assert command[span["start"] : span["end"]] == span["text"]
    assert [i["segment_index"] for i in response["intents"]] == [0, 1, 2]
    capped = run(command, options={"max_intents": 2})
    assert len(capped["intents"]) == 2
    single = run(command, options={"allow_multi_intent": False})
    assert len(single["intents"]) == 1
    assert single["meta"]["segment_count"] == 1


def test_max_intents_per_segment() -> None:
    catalog = [
        {"id": "a", "match": {"keywords_any": ["灯"]}},
        {"id": "b", "match": {"keywords_any": ["红色"]}},
    ]
    assert len(run("红色的灯", catalog)["intents"]) == 1
    both = run("红色的灯", catalog, options={"max_intents_per_segment": 2})
    assert {i["intent_id"] for i in both["intents"]} == {"a", "b"}


def test_english_clauses() -> None:
    response = run("turn on the light and then remind me in 10 minutes")
    assert [i["intent_id"] for i in business(response)] == [
        "intent_light_control",
        "intent_alarm_create",
    ]


# --- decisions (§4.4.3) -----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["不要开灯", "别关灯", "千万不要开灯", "我不想开灯", "don't turn on the light"],
)
def test_negation_never_executes(command: str) -> None:
    response = run(command)
    assert response["decision"]["action"] == "no_action"
    assert response["decision"]["reason"] == "negated_command"
    assert response["intents"][0]["intent_id"] == "sys.no_action"
    assert all(i["status"] in ("system", "rejected") for i in response["intents"])


def test_positive_phrases_that_look_negative_execute() -> None:
    assert run("别忘了提醒我")["decision"]["action"] == "execute_intents"
    assert run("能不能开灯")["decision"]["action"] == "execute_intents"


@pytest.mark.parametrize(
    "command",
    ["灯为什么是红色的", "灯是开着的吗", "is the light on?", "why is the light red?"],
)
def test_questions_about_a_device_go_to_reasoning(command: str) -> None:
    response = run(command)
    assert response["decision"] == {
        "action": "fallback_reasoning",
        "trigger_intent_id": "sys.fallback_reasoning",
        "reason": "question_about_device",
    }


@pytest.mark.parametrize(
    "command", ["能帮我开一下灯吗", "can you turn on the light?", "麻烦关一下灯"]
)
def test_polite_requests_execute(command: str) -> None:
    assert run(command)["decision"]["action"] == "execute_intents"


@pytest.mark.parametrize(
    "command",
    [
        "吓我一跳",
        "哇，好厉害啊",
        "唉，累死了",
        "I'm so tired",
        "wow!",
        "哇，灯好漂亮",
        "好无聊啊",
    ],
)
def test_exclamations_and_feelings_are_no_action(command: str) -> None:
    response = run(command)
    assert response["decision"]["action"] == "no_action"
    assert response["intents"][0]["intent_id"] == "sys.no_action"
    assert response["intents"][0]["status"] == "system"


@pytest.mark.parametrize(
    "command",
    ["今天上海天气如何？", "这个事情你怎么看", "给我讲个笑话吧", "为什么天空是蓝色的",
     "what do you think about love", "tell me a joke", "我喜欢红色", "你好"],
)  # fmt: skip
def test_open_questions_and_chat_go_to_reasoning(command: str) -> None:
    response = run(command)
    assert response["decision"]["action"] == "fallback_reasoning"
    assert response["intents"][0]["intent_id"] == "sys.fallback_reasoning"


def test_no_system_intent_when_not_wanted() -> None:
    response = run("你好", options={"emit_system_intent_when_empty": False})
    assert response["decision"]["action"] == "fallback_reasoning"
    assert response["intents"] == []


def test_debug_candidates_and_entities() -> None:
    response = run(
        "把客厅的灯调成红色",
        options={"return_debug_candidates": True, "return_debug_entities": True},
    )
    assert response["debug_candidates"][0]["intent_id"] == "intent_light_control"
    entities = response["debug_entities"][0]["entities"]
    assert {(e["type"], e["value"]) for e in entities} >= {
        ("room", "living_room"),
        ("device", "light"),
        ("color", "red"),
    }


# --- locales ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "locale"),
    [("开灯", "zh-CN"), ("開燈", "zh-TW"), ("turn on the light", "en-US"),
     ("電気をつけて", "ja-JP"), ("불 켜줘", "ko-KR")],
)  # fmt: skip
def test_locale_is_detected(command: str, locale: str) -> None:
    assert run(command)["meta"]["locale"] == locale


def test_locale_given_skips_detection() -> None:
    assert run("开灯", locale="zh_TW")["meta"]["locale"] == "zh-TW"


def test_traditional_input_against_simplified_catalog() -> None:
    light = business(run("把燈打開"))[0]
    assert light["normalized"]["mode"] == "on"
    assert light["span"]["text"] == "把燈打開"  # spans keep the original text


JA_KO_CATALOG = [
    {
        "id": "light",
        "match": {"keywords_any": ["電気", "ライト", "불", "조명"]},
        "slots": [{"name": "mode"}],
    },
    {
        "id": "timer",
        "match": {"keywords_any": ["タイマー", "타이머"]},
        "slots": [{"name": "duration_seconds"}],
    },
    {
        "id": "alarm",
        "match": {"keywords_any": ["起こして", "깨워"]},
        "slots": [{"name": "trigger_in_seconds"}],
    },
]


@pytest.mark.parametrize(
    ("command", "ids", "values"),
    [
        ("電気をつけて", ["light"], {"mode": "on"}),
        ("電気を消して", ["light"], {"mode": "off"}),
        ("불 켜줘", ["light"], {"mode": "on"}),
        ("조명 꺼줘", ["light"], {"mode": "off"}),
        ("5分のタイマー", ["timer"], {"duration_seconds": 300}),
        ("타이머 10분", ["timer"], {"duration_seconds": 600}),
        ("明日の朝8時に起こして", ["alarm"], {"trigger_in_seconds": 51600}),
        ("내일 아침 8시에 깨워", ["alarm"], {"trigger_in_seconds": 51600}),
        ("電気をつけて、それから5分のタイマー", ["light", "timer"], {}),
        ("불 켜고 타이머 10분", ["light", "timer"], {}),
    ],
)
def test_japanese_and_korean(
    command: str, ids: list[str], values: dict[str, Any]
) -> None:
    found = business(run(command, JA_KO_CATALOG))
    assert [i["intent_id"] for i in found] == ids
    for key, value in values.items():
        assert found[0]["normalized"][key] == value


@pytest.mark.parametrize(
    ("command", "intent_id", "normalized"),
    [
        ("turn the lamp on", "intent_light_control", {"mode": "on"}),
        ("電気をつけて", "intent_light_control", {"mode": "on"}),
        ("ライトを消して", "intent_light_control", {"mode": "off"}),
        ("조명 꺼", "intent_light_control", {"mode": "off"}),
        (
            "빨간색으로 바꿔줘",
            "intent_light_control",
            {"mode": "set_color", "color": "red"},
        ),
        ("うなずいて", "intent_head_motion", {"action": "点头"}),
        ("アラームを7時に", "intent_alarm_create", {"trigger_in_seconds": 4800}),
    ],
)
def test_keywords_reach_other_languages_through_their_entity(
    command: str, intent_id: str, normalized: dict[str, Any]
) -> None:
    """Keywords such as 灯, 红色, 点头 and 闹钟 name built-in entities; other names match too."""
    intent = business(run(command))[0]
    assert intent["intent_id"] == intent_id
    assert {k: intent["normalized"][k] for k in normalized} == normalized
    assert any(e["type"] == "keyword_synonym" for e in intent["evidence"])


@pytest.mark.parametrize(
    ("command", "intent_id"),
    [("关上灯", "intent_light_control"), ("叫醒我", "intent_alarm_create"),
     ("点三下头", "intent_head_motion"), ("开了灯", "intent_light_control")],
)  # fmt: skip
def test_separable_verbs_match_their_keyword(command: str, intent_id: str) -> None:
    assert business(run(command))[0]["intent_id"] == intent_id


def test_a_captured_hour_inside_a_clock_time_becomes_seconds_from_now() -> None:
    catalog = [
        {
            "id": "wake",
            "match": {"keywords_any": ["叫我"]},
            "slots": [{"name": "trigger_in_seconds", "regex": "([0-9]+)点"}],
        }
    ]
    intent = business(run("明天早上8点叫我", catalog))[0]
    assert intent["normalized"] == {"trigger_in_seconds": 51600}
    assert intent["parameters"] == {"trigger_in_seconds": "8"}
    plain = business(
        run("明天早上8点叫我", catalog, options={"enable_time_parser": False})
    )
    assert plain[0]["normalized"] == {"trigger_in_seconds": 8}


@pytest.mark.parametrize("command", ["İ", "xİ", "İx", "开İ灯", "İİ"])
def test_a_command_lower_casing_makes_longer_is_read(command: str) -> None:
    """Lower-cased, "İ" is "i̇", two characters: spans still map onto the command."""
    catalog = [{"id": "dot", "name": "dot", "match": {"keywords_any": ["i̇"]}}]
    response = filter_intents({"command": command, "intent_catalog": catalog})
    assert response["decision"]["action"] == "execute_intents"
    (intent,) = response["intents"]
    span = intent["span"]
    assert 0 <= span["start"] < span["end"] <= len(command)
    assert command[span["start"] : span["end"]] == span["text"]
