"""Which Home Assistant entity a skill becomes (rules in docs/skills-as-entities.md).

1. **Light**: a ``mode`` string enum containing ``on`` and ``off`` (optionally
   ``set_color``), an optional ``color`` string enum, and no other required
   argument. The spec's ``control_light`` is one.
2. **Button**: no required arguments.
3. **Select**: exactly one required argument, a string enum.
4. Anything else is reached through the ``soul.invoke_skill`` action and the
   device actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .protocol import Skill


class Profile(StrEnum):
    """The kind of entity a skill maps to."""

    LIGHT = "light"
    BUTTON = "button"
    SELECT = "select"


@dataclass(frozen=True, slots=True)
class LightProfile:
    """How to drive a light skill."""

    colors: tuple[str, ...]  # empty: on/off only
    set_color_mode: str | None  # the mode value that sets a colour, if any


@dataclass(frozen=True, slots=True)
class SelectProfile:
    """The one enum argument of a select skill."""

    argument: str
    options: tuple[str, ...]


def string_enum(schema: Any) -> tuple[str, ...] | None:
    """Return the values of a string enum schema, or None when it is not one."""
    if not isinstance(schema, dict):
        return None
    values = schema.get("enum")
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, str) and v for v in values):
        return None
    if schema.get("type", "string") != "string":
        return None
    return tuple(dict.fromkeys(values))


def light_profile(skill: Skill) -> LightProfile | None:
    """Return how to drive ``skill`` as a light, or None."""
    props = skill.properties
    modes = string_enum(props.get("mode"))
    if modes is None or "on" not in modes or "off" not in modes:
        return None
    if set(skill.required) - {"mode", "color"} or "color" in skill.required:
        return None
    colors = string_enum(props.get("color")) if "color" in props else ()
    if colors is None:
        return None
    set_color = "set_color" if "set_color" in modes else None
    return LightProfile(colors=colors, set_color_mode=set_color)


def select_profile(skill: Skill) -> SelectProfile | None:
    """Return the enum argument that makes ``skill`` a select, or None."""
    if len(skill.required) != 1:
        return None
    argument = skill.required[0]
    options = string_enum(skill.properties.get(argument))
    return None if options is None else SelectProfile(argument, options)


def profile(skill: Skill) -> Profile | None:
    """Return the entity kind of ``skill`` by the rules above, first match wins."""
    if light_profile(skill) is not None:
        return Profile.LIGHT
    if not skill.required:
        return Profile.BUTTON
    if select_profile(skill) is not None:
        return Profile.SELECT
    return None
