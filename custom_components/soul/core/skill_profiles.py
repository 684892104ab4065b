"""Which Home Assistant entity a skill becomes (rules in docs/skills-as-entities.md).

1. **Light**: a ``mode`` string enum containing ``on`` and ``off`` (optionally
   ``set_color``), an optional ``color`` string enum, an optional numeric
   ``brightness``, and no other required argument. The spec's
   ``control_light`` is one (on/off and three colours, no brightness).
2. **Button**: no required arguments, and ``{}`` (what a press sends) fits the
   schema: one that needs an argument some other way (``anyOf`` of
   ``required``) would make a button that always fails.
3. **Select**: exactly one required argument, a string enum.
4. Anything else is reached through the ``soul.invoke_skill`` action and the
   device actions.

An enum of more than ``MAX_OPTIONS`` values makes no entity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
import math
from typing import Any

from . import untrusted
from .protocol import Skill

MAX_OPTION_LENGTH = 255  # Home Assistant's longest state
# Options of one enum that makes an entity (a select's options, a light's
# effects): Home Assistant keeps them in the entity registry's file and sends
# them with every state to every frontend; a body's 256 KiB snapshot could
# hold 1,000 options of 255 characters. A longer enum makes no entity.
MAX_OPTIONS = 128


class Profile(StrEnum):
    """The kind of entity a skill maps to."""

    LIGHT = "light"
    BUTTON = "button"
    SELECT = "select"


@dataclass(frozen=True, slots=True)
class Brightness:
    """A light's ``brightness`` argument: the values that mean lit, dimmest first.

    A range starting at 0 (or with an exclusive minimum) leaves that value out:
    a lit light is never sent brightness 0.
    """

    low: float
    high: float
    integer: bool


@dataclass(frozen=True, slots=True)
class LightState:
    """What a light's arguments say about it; None where they say nothing."""

    on: bool | None = None
    color: str | None = None
    brightness: float | None = None  # in the skill's own scale


@dataclass(frozen=True, slots=True)
class LightProfile:
    """How to drive a light skill, and how to read what was sent to it."""

    colors: tuple[str, ...] = ()  # empty: no colours
    set_color_mode: str | None = None  # the mode value that sets a colour, if any
    brightness: Brightness | None = None  # None: no brightness argument
    modes: tuple[str, ...] = ("on", "off")

    def turn_on(
        self, *, color: str | None = None, brightness: float | None = None
    ) -> dict[str, Any]:
        """Return the arguments that turn the light on, with a colour and brightness."""
        arguments: dict[str, Any] = {"mode": "on"}
        if color is not None:
            arguments = {"mode": self.set_color_mode or "on", "color": color}
        if brightness is not None and self.brightness is not None:
            arguments["brightness"] = brightness
        return arguments

    @staticmethod
    def turn_off() -> dict[str, Any]:
        """Return the arguments that turn the light off."""
        return {"mode": "off"}

    def state_of(self, arguments: Mapping[str, Any]) -> LightState:
        """Return what ``arguments`` sent to the skill make of the light.

        Like the reference body: ``off`` is off, every other announced mode is
        on; a colour or brightness the profile does not know is ignored.
        """
        mode = arguments.get("mode")
        on = None
        if mode == "off":
            on = False
        elif isinstance(mode, str) and mode in self.modes:
            on = True
        color = arguments.get("color")
        level = arguments.get("brightness")
        return LightState(
            on=on,
            color=color if isinstance(color, str) and color in self.colors else None,
            brightness=_bound(level) if self.brightness is not None else None,
        )


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
    if not isinstance(values, list) or not values or len(values) > MAX_OPTIONS:
        return None
    # Options become entity options and states (stored in Home Assistant's
    # entity registry): each a clean line Home Assistant can hold as a state.
    if not all(untrusted.is_text(v, MAX_OPTION_LENGTH) for v in values):
        return None
    if schema.get("type", "string") != "string":
        return None
    return tuple(dict.fromkeys(values))


def _bound(value: Any) -> float | None:
    """Return a number of a schema or of arguments as a finite float, or None.

    JSON integers may be far beyond the float range (``1e400`` written out):
    those are None too, never ``OverflowError``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def brightness_range(schema: Any) -> Brightness | None:
    """Return the lit range of a numeric ``brightness`` schema, or None.

    ``minimum`` defaults to 0 and ``maximum`` to 100 (percent). A schema
    this cannot honour (another type, ``exclusiveMaximum``, ``multipleOf``,
    an empty range) gives None: the light then has no brightness.
    """
    if not isinstance(schema, dict) or schema.get("type") not in ("integer", "number"):
        return None
    if "exclusiveMaximum" in schema or "multipleOf" in schema:
        return None
    integer = schema["type"] == "integer"
    low = _bound(schema.get("minimum", 0))
    high = _bound(schema.get("maximum", 100))
    if low is None or high is None:
        return None
    exclusive = schema.get("exclusiveMinimum")
    if exclusive is not None:
        if (exclusive := _bound(exclusive)) is None:
            return None
        low = max(low, exclusive)
    if exclusive is not None or low == 0:  # 0 and an open bound are not lit
        low = math.floor(low) + 1 if integer else low + (high - low) / 255
    if integer:
        low, high = float(math.ceil(low)), float(math.floor(high))
    if not low < high or not math.isfinite(high - low):
        return None
    return Brightness(low, high, integer)


def light_profile(skill: Skill) -> LightProfile | None:
    """Return how to drive ``skill`` as a light, or None."""
    props = skill.properties
    modes = string_enum(props.get("mode"))
    if modes is None or "on" not in modes or "off" not in modes:
        return None
    if set(skill.required) - {"mode"}:
        return None
    colors = string_enum(props.get("color")) if "color" in props else ()
    if colors is None:
        return None
    set_color = "set_color" if "set_color" in modes else None
    return LightProfile(
        colors=colors,
        set_color_mode=set_color,
        brightness=brightness_range(props.get("brightness")),
        modes=modes,
    )


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
    if not skill.required and not skill.argument_errors({}):
        return Profile.BUTTON
    if select_profile(skill) is not None:
        return Profile.SELECT
    return None
