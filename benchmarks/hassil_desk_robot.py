"""Hassil templates approximating the desk-robot catalog, for the intent filter baseline.

Home Assistant's own sentence matcher (``hassil``) is the natural yardstick for a
rule-based intent filter. These templates cover what the catalog in
``shared/eval/catalog_desk_robot.json`` covers: the light on, off and colour, an
alarm in a number of minutes (or at a clock time) and a head nod or shake, in
Chinese and English. Hassil holds one language per ``Intents``, so there are two;
``recognize_desk_robot`` picks one by script, as a Home Assistant pipeline knows its
language (trying Chinese first would double hassil's time on English commands).

Hassil matches one intent per whole sentence and returns the slot values it read:
it does not split compound commands ("开灯然后点个头"), convert minutes to seconds
or resolve clock times, so it does less work than the filter.
"""

from __future__ import annotations

import re
from typing import Any

from hassil import Intents, RecognizeResult, recognize

_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

_COLOURS_ZH = [
    {"in": "(红色|红)", "out": "red"},
    {"in": "(绿色|绿)", "out": "green"},
    {"in": "(白色|白)", "out": "white"},
    {"in": "(蓝色|蓝)", "out": "blue"},
]
_COLOURS_EN = [
    {"in": "red", "out": "red"},
    {"in": "green", "out": "green"},
    {"in": "white", "out": "white"},
    {"in": "blue", "out": "blue"},
]

ZH: dict[str, Any] = {
    "language": "zh",
    "settings": {"ignore_whitespace": True},
    "skip_words": ["请", "麻烦你", "帮我", "给我"],
    "lists": {
        "color": {"values": _COLOURS_ZH},
        "minutes": {"range": {"from": 1, "to": 1440}},
        "hour": {"range": {"from": 0, "to": 23}},
        "seconds": {"range": {"from": 1, "to": 600}},
        "task": {"wildcard": True},
    },
    "expansion_rules": {
        "light": "(灯|燈|灯光|台灯)",
        "ba": "(把|将)",
        "on": "(打开|开启|打開|开)",
        "off": "(关掉|关闭|关上|关了|关)",
        "to": "(变|变成|调成|换成|改成|设成|设为|切换成)",
        "end": "(吧|啊|呀|一下|哦)",
        "after": "(后|以后|之后)",
        "remind": "(提醒我|叫我|喊我|提醒|叫醒我)",
        "nod": "(点头|点点头|点个头|点一下头)",
        "shake": "(摇头|摇摇头|摇个头|摇一下头)",
        "day": "(今天|明天|后天)",
        "period": "(早上|上午|中午|下午|晚上)",
    },
    "intents": {
        "LightOn": {
            "data": [
                {
                    "sentences": [
                        "<on><light>[<end>]",
                        "[<ba>]<light><on>[<end>]",
                    ],
                    "slots": {"mode": "on"},
                }
            ]
        },
        "LightOff": {
            "data": [
                {
                    "sentences": [
                        "<off><light>[<end>]",
                        "[<ba>]<light><off>[<end>]",
                    ],
                    "slots": {"mode": "off"},
                }
            ]
        },
        "LightColor": {
            "data": [
                {
                    "sentences": [
                        "[<ba>]<light><to>{color}[<end>]",
                        "<light>(调|开)成{color}[<end>]",
                        "(开|打开){color}(的灯|灯)[<end>]",
                    ],
                    "slots": {"mode": "set_color"},
                }
            ]
        },
        "AlarmCreate": {
            "data": [
                {
                    "sentences": [
                        "{minutes}分钟<after><remind>[{task}]",
                        "(定|订|设|设置)[一]个{minutes}分钟[的|后的]闹钟",
                        "{minutes}分钟<after>(响|叫)[的]闹钟",
                    ]
                },
                {
                    "sentences": ["半(个小时|小时)<after><remind>[{task}]"],
                    "slots": {"minutes": 30},
                },
                {
                    "sentences": ["一个半(小时|钟头)<after><remind>[{task}]"],
                    "slots": {"minutes": 90},
                },
                {
                    "sentences": [
                        "[<day>][<period>]{hour}(点|点钟)[整]<remind>[{task}]",
                        "(定|订|设)[一]个[<day>][<period>]{hour}点[钟]的闹钟",
                    ]
                },
            ]
        },
        "HeadMotion": {
            "data": [
                {
                    "sentences": ["<nod>[{seconds}秒][<end>]"],
                    "slots": {"action": "点头"},
                },
                {
                    "sentences": ["<shake>[{seconds}秒][<end>]"],
                    "slots": {"action": "摇头"},
                },
            ]
        },
    },
}

EN: dict[str, Any] = {
    "language": "en",
    "skip_words": ["please", "can you", "could you"],
    "lists": {
        "color": {"values": _COLOURS_EN},
        "minutes": {"range": {"from": 1, "to": 1440}},
        "seconds": {"range": {"from": 1, "to": 600}},
    },
    "expansion_rules": {
        "light": "[the] (light|lights|lamp)",
        "turn": "(turn|switch)",
        "make": "(turn|make|set|change)",
        "minutes": "{minutes} (minute|minutes)",
    },
    "intents": {
        "LightOn": {
            "data": [
                {
                    "sentences": ["<turn> on <light>", "<turn> <light> on"],
                    "slots": {"mode": "on"},
                }
            ]
        },
        "LightOff": {
            "data": [
                {
                    "sentences": ["<turn> off <light>", "<turn> <light> off"],
                    "slots": {"mode": "off"},
                }
            ]
        },
        "LightColor": {
            "data": [
                {
                    "sentences": ["<make> <light> [to] {color}"],
                    "slots": {"mode": "set_color"},
                }
            ]
        },
        "AlarmCreate": {
            "data": [
                {
                    "sentences": [
                        "(remind|wake) me [up] in <minutes>",
                        "set [an] alarm (in|for) <minutes>",
                        "in <minutes> remind me",
                    ]
                }
            ]
        },
        "HeadMotion": {
            "data": [
                {
                    "sentences": ["nod [your head]", "give me a nod"],
                    "slots": {"action": "点头"},
                },
                {"sentences": ["shake your head"], "slots": {"action": "摇头"}},
            ]
        },
    },
}

#: Hassil intent name for each catalog intent id.
CATALOG_IDS = {
    "LightOn": "intent_light_control",
    "LightOff": "intent_light_control",
    "LightColor": "intent_light_control",
    "AlarmCreate": "intent_alarm_create",
    "HeadMotion": "intent_head_motion",
}


def build_intents() -> tuple[Intents, Intents]:
    """Return the Chinese and the English intents."""
    return Intents.from_dict(ZH), Intents.from_dict(EN)


def recognize_desk_robot(
    command: str, intents: tuple[Intents, Intents]
) -> RecognizeResult | None:
    """Return hassil's first match for ``command``: Chinese if it has Han characters."""
    zh, en = intents
    return recognize(command, zh if _HAN.search(command) else en)
