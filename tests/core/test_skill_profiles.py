"""Which entity a skill becomes, and how a light skill is driven and read back."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.soul.core.protocol import Skill, parse_skill
from custom_components.soul.core.skill_profiles import (
    MAX_OPTIONS,
    Brightness,
    LightProfile,
    LightState,
    Profile,
    brightness_range,
    light_profile,
    profile,
)

from .spec_payloads import skills

MODE = {"type": "string", "enum": ["on", "off"]}
COLORS = {"type": "string", "enum": ["white", "red", "green"]}


def skill(properties: dict[str, Any], required: list[str] | None = None) -> Skill:
    """Return a parsed skill ``lamp`` with this schema."""
    return parse_skill(
        {
            "name": "lamp",
            "input_schema": {
                "type": "object",
                "properties": properties,
                "required": ["mode"] if required is None else required,
            },
        }
    )


def test_reference_control_light() -> None:
    control_light = next(s for s in skills()["skills"] if s["name"] == "control_light")
    found = light_profile(parse_skill(control_light))
    assert found == LightProfile(
        colors=("white", "red", "green"),
        set_color_mode="set_color",
        brightness=None,
        modes=("on", "off", "set_color"),
    )


@pytest.mark.parametrize(
    ("properties", "required", "expected"),
    [
        ({"mode": MODE}, None, Profile.LIGHT),
        ({"mode": MODE, "color": COLORS}, None, Profile.LIGHT),
        ({"mode": MODE, "brightness": {"type": "integer"}}, None, Profile.LIGHT),
        # A colour that is no enum cannot be offered: not a light (its mode a select).
        ({"mode": MODE, "color": {"type": "string"}}, None, Profile.SELECT),
        # A required colour or brightness cannot be left out when turning off.
        ({"mode": MODE, "color": COLORS}, ["mode", "color"], None),
        ({"mode": MODE, "brightness": {"type": "integer"}}, ["mode", "brightness"], None),
        ({"mode": {"type": "string", "enum": ["on", "dim"]}}, None, Profile.SELECT),
    ],
)  # fmt: skip
def test_light_rule(
    properties: dict[str, Any], required: list[str] | None, expected: Profile | None
) -> None:
    assert profile(skill(properties, required)) is expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, Profile.BUTTON),
        ({"type": "object", "properties": {"label": {"type": "string"}}}, Profile.BUTTON),
        # A press sends {}: a schema that refuses it would make a button that always fails.
        (
            {
                "type": "object",
                "properties": {"at": {"type": "string"}, "in": {"type": "number"}},
                "anyOf": [{"required": ["at"]}, {"required": ["in"]}],
            },
            None,
        ),
        ({"type": "object", "minProperties": 1}, None),
    ],
)  # fmt: skip
def test_button_rule(schema: dict[str, Any] | None, expected: Profile | None) -> None:
    raw: dict[str, Any] = {"name": "beep"}
    if schema is not None:
        raw["input_schema"] = schema
    assert profile(parse_skill(raw)) is expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer"}, Brightness(1, 100, integer=True)),
        ({"type": "integer", "minimum": 0, "maximum": 255}, Brightness(1, 255, integer=True)),
        ({"type": "integer", "minimum": 10, "maximum": 20}, Brightness(10, 20, integer=True)),
        ({"type": "integer", "exclusiveMinimum": 0, "maximum": 10}, Brightness(1, 10, integer=True)),
        ({"type": "number", "minimum": 0, "maximum": 1}, Brightness(1 / 255, 1, integer=False)),
        ({"type": "number", "minimum": 0.5, "maximum": 1}, Brightness(0.5, 1, integer=False)),
        ({"type": "string"}, None),
        ({"type": "integer", "minimum": 5, "maximum": 5}, None),
        ({"type": "integer", "maximum": 0}, None),
        ({"type": "integer", "maximum": True}, None),
        ({"type": "integer", "exclusiveMaximum": 100}, None),
        ({"type": "integer", "multipleOf": 10}, None),
        ({"type": "number", "maximum": float("inf")}, None),
        ({"enum": [1, 2]}, None),
        (None, None),
    ],
)  # fmt: skip
def test_brightness_range(schema: Any, expected: Brightness | None) -> None:
    assert brightness_range(schema) == expected


def test_a_brightness_it_cannot_honour_leaves_a_plain_light() -> None:
    found = light_profile(skill({"mode": MODE, "brightness": {"type": "string"}}))
    assert found is not None
    assert found.brightness is None


def test_commands() -> None:
    lamp = LightProfile(
        colors=("red", "暖白"),
        set_color_mode="set_color",
        brightness=Brightness(1, 100, integer=True),
    )
    assert lamp.turn_on() == {"mode": "on"}
    assert lamp.turn_on(color="暖白", brightness=40) == {
        "mode": "set_color",
        "color": "暖白",
        "brightness": 40,
    }
    assert LightProfile(colors=("red",)).turn_on(color="red", brightness=40) == {
        "mode": "on",
        "color": "red",
    }
    assert lamp.turn_off() == {"mode": "off"}


@pytest.mark.parametrize(
    ("arguments", "state"),
    [
        ({"mode": "on"}, LightState(on=True)),
        ({"mode": "off"}, LightState(on=False)),
        ({"mode": "set_color", "color": "red"}, LightState(on=True, color="red")),
        ({"mode": "on", "brightness": 30}, LightState(on=True, brightness=30.0)),
        # What the profile does not know says nothing.
        ({"mode": "blink", "color": "blue", "brightness": True}, LightState()),
        ({"mode": 1, "brightness": "30"}, LightState()),
        ({}, LightState()),
    ],
)
def test_state_of_what_was_sent(arguments: dict[str, Any], state: LightState) -> None:
    lamp = LightProfile(
        colors=("white", "red"),
        set_color_mode="set_color",
        brightness=Brightness(1, 100, integer=True),
        modes=("on", "off", "set_color"),
    )
    assert lamp.state_of(arguments) == state


def test_state_of_ignores_brightness_without_the_argument() -> None:
    assert LightProfile().state_of({"mode": "on", "brightness": 30}) == LightState(
        on=True
    )


@pytest.mark.parametrize(
    "option",
    [
        "a\x00b",
        "\x07bell",
        "x\ny",
        "\u2028ls",
        "\u202eabc",
        "\ufeffbom",
        "\x85",
        "o" * 256,
    ],
)
def test_an_option_home_assistant_cannot_hold_makes_no_entity(option: str) -> None:
    """Options are stored in the entity registry: each a clean line of 255 at most.

    A black-box run put NUL, BEL, a newline and a right-to-left override into
    a select's options and a light's effects (2026-11-27).
    """
    pick = {"type": "string", "enum": ["calm", option]}
    assert profile(skill({"o": pick}, ["o"])) is None
    assert (
        profile(skill({"o": {**pick, "enum": ["calm", "o" * 255]}}, ["o"]))
        is Profile.SELECT
    )
    colors = {**pick, "enum": ["red", option]}
    assert light_profile(skill({"mode": MODE, "color": colors})) is None


def test_an_enum_of_too_many_values_makes_no_entity() -> None:
    """Options live in the entity registry's file and in every state sent."""
    many = [f"option {n}" for n in range(MAX_OPTIONS + 1)]
    pick = {"type": "string", "enum": many}
    assert profile(skill({"o": pick}, ["o"])) is None
    assert light_profile(skill({"mode": MODE, "color": pick})) is None
    fewer = {"type": "string", "enum": many[:MAX_OPTIONS]}
    assert profile(skill({"o": fewer}, ["o"])) is Profile.SELECT
