"""The spec's own example payloads (soul-body-protocol-v2 §3.3 and §3.10)."""

from __future__ import annotations

import copy
from typing import Any

SKILLS: dict[str, Any] = {
    "terminal_id": "terminal-001",
    "soul_hint": "friendly",
    "skill_version": 3,
    "skills": [
        {
            "name": "control_light",
            "description": "控制灯：开灯、关灯、设置颜色",
            "input_schema": {
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["on", "off", "set_color"]},
                    "color": {"type": "string", "enum": ["white", "red", "green"]},
                },
                "required": ["mode"],
            },
        },
        {
            "name": "create_alarm",
            "description": "订闹钟",
            "input_schema": {
                "type": "object",
                "properties": {
                    "trigger_at": {"type": "string"},
                    "trigger_in_seconds": {"type": "number", "minimum": 1},
                    "label": {"type": "string"},
                },
            },
        },
        {
            "name": "set_head_motion",
            "description": "头部动作：点头/摇头",
            "input_schema": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["点头", "摇头"]},
                    "duration_seconds": {
                        "type": "number",
                        "minimum": 0.2,
                        "maximum": 10,
                    },
                },
                "required": ["action"],
            },
        },
    ],
}

CATALOG: dict[str, Any] = {
    "terminal_id": "terminal-001",
    "catalog_version": 12,
    "intent_catalog": [
        {
            "id": "intent_light_control",
            "name": "控制灯",
            "priority": 90,
            "match": {"keywords_any": ["开灯", "关灯", "灯"]},
            "slots": [{"name": "skill", "default": "control_light"}],
        },
        {
            "id": "intent_alarm_create",
            "name": "订闹钟",
            "priority": 90,
            "match": {"keywords_any": ["闹钟", "叫我", "alarm"]},
            "slots": [{"name": "skill", "default": "create_alarm"}],
        },
    ],
}


def skills(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's skills payload with top-level changes."""
    return {**copy.deepcopy(SKILLS), **changes}


def catalog(**changes: Any) -> dict[str, Any]:
    """Return a deep copy of the spec's catalog payload with top-level changes."""
    return {**copy.deepcopy(CATALOG), **changes}
