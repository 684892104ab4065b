"""What the harness sends: terminal topics, evil patterns, snapshots, chat bodies."""

from __future__ import annotations

import json
from typing import Any

from custom_components.soul.core.regex_choice import MAX_CHOICE_STEPS
from custom_components.soul.core.safe_regex import check_untrusted

PREFIX = "soul"
EVIL_PATTERN = "a{0,64}" * 6 + "b"
EVIL_TEXT = "a" * 80
# The regex module answers EVIL_PATTERN at once (it looks for the "b" first);
# this one really backtracks until its time limit.
EVIL_PATTERN2 = "^(a|aa)+$"
EVIL_TEXT2 = "a" * 80 + "b"  # ("!" would be cut off as punctuation)
SIMPLE_CATALOG: list[dict[str, Any]] = [
    {
        "id": "intent_light",
        "name": "light",
        "priority": 90,
        "match": {"keywords_any": ["light", "灯"]},
        "slots": [
            {"name": "skill", "default": "control_light"},
            {"name": "mode", "default": "on"},
        ],
    }
]


def good_skills(
    terminal_id: str, version: int = 1, extra: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Return a valid ``skills`` snapshot (plus ``extra`` skills)."""
    return {
        "terminal_id": terminal_id,
        "skill_version": version,
        "skills": [
            {
                "name": "control_light",
                "description": "turn the light on or off",
                "input_schema": {
                    "type": "object",
                    "properties": {"mode": {"type": "string", "enum": ["on", "off"]}},
                    "required": ["mode"],
                },
            },
            {
                "name": "say_hi",
                "description": "say hi",
                "input_schema": {"type": "object", "properties": {}},
            },
            *(extra or []),
        ],
    }


def regex_catalog(patterns: list[str], intents: int = 1) -> list[dict[str, Any]]:
    """Return a catalog whose intents each carry ``patterns`` (made distinct)."""
    return [
        {
            "id": f"intent_{n}",
            "match": {
                "regex_any": [
                    p if intents == 1 else f"{p}(?#{n}.{k})"
                    for k, p in enumerate(patterns)
                ]
            },
        }
        for n in range(intents)
    ]


def choice_ladder(text_length: int) -> str:
    """Return the longest ladder ``(ab|aab|…)`` that still runs on ``re`` in such a text.

    A literal choice runs without a timeout while its counted steps times the
    text's places stay within ``MAX_CHOICE_STEPS`` (``core/regex_choice.py``);
    on a text of ``a``s it matches nowhere, so every place is tried in full.
    """
    ladder = "(ab)"
    for rungs in range(2, 32):
        longer = "(" + "|".join("a" * k + "b" for k in range(1, rungs + 1)) + ")"
        steps = check_untrusted(longer).choice
        if steps is None or steps * (text_length + 1) > MAX_CHOICE_STEPS:
            break
        ladder = longer
    return ladder


def catalog(terminal_id: str, entries: list[dict[str, Any]], version: int = 1) -> str:
    """Return an ``intent_catalog`` payload."""
    return json.dumps(
        {
            "terminal_id": terminal_id,
            "catalog_version": version,
            "intent_catalog": entries,
        },
        ensure_ascii=False,
    )


def chat_body(
    terminal_id: str, session_id: str, text: str = "hello there", **extra: Any
) -> dict[str, Any]:
    """Return a §4.2.1 chat request."""
    return {
        "session_id": session_id,
        "terminal_id": terminal_id,
        "inputs": [{"input_id": "in-1", "type": "keyboard_text", "text": text}],
        **extra,
    }
