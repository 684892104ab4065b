"""The hub's numeric options: their ranges, their form fields, and reading them.

One table for the options form (a field per option, its range) and for every
reader of ``entry.options``. Home Assistant's number field checks its range
by comparing, and every comparison with NaN is false: the form took "nan",
stored it (as ``null``: JSON has no NaN), a body's invoke then never timed out,
and after a restart Soul did not start. So a value is read here only when it
is a finite number; anything else, stored by an older Soul or by hand, is the
default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import math
from typing import Any

from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
)
import voluptuous as vol

from .const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMOTION_TICK_INTERVAL,
    CONF_INVOKE_TIMEOUT,
    CONF_JOURNAL_DAYS,
    CONF_JOURNAL_MB,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MEMORY_TIMEOUT,
    CONF_NAVIGATOR_SWING,
    CONF_NAVIGATOR_TURNS,
    DEFAULT_EMBEDDING_DIMS,
    DEFAULT_EMOTION_TICK_INTERVAL,
    DEFAULT_INVOKE_TIMEOUT,
    DEFAULT_JOURNAL_DAYS,
    DEFAULT_JOURNAL_MB,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MEMORY_TIMEOUT,
    DEFAULT_NAVIGATOR_SWING,
    DEFAULT_NAVIGATOR_TURNS,
)
from .core.emotion.dynamics import TICK_MAX, TICK_MIN


@dataclass(frozen=True, slots=True)
class NumberOption:
    """One numeric option: its default (whose type it keeps) and its range."""

    default: float
    low: float
    high: float
    step: float
    unit: str | None = None
    slider: bool = False

    def selector(self) -> NumberSelector:
        """Return the options form's field."""
        config = NumberSelectorConfig(
            min=self.low,
            max=self.high,
            step=self.step,
            mode=NumberSelectorMode.SLIDER if self.slider else NumberSelectorMode.BOX,
        )
        if self.unit is not None:
            config["unit_of_measurement"] = self.unit
        return NumberSelector(config)

    def read(self, value: Any) -> float | None:
        """Return ``value`` in range and of the default's type; None when not a finite number."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return None
        try:
            number = float(value)
        except (ValueError, OverflowError):  # "x", 10**400
            return None
        if not math.isfinite(number):
            return None
        number = max(self.low, min(self.high, number))
        return int(number) if isinstance(self.default, int) else number


NUMBER_OPTIONS: dict[str, NumberOption] = {
    CONF_EMBEDDING_DIMS: NumberOption(DEFAULT_EMBEDDING_DIMS, 8, 8192, 1),
    CONF_MEMORY_TIMEOUT: NumberOption(DEFAULT_MEMORY_TIMEOUT, 1, 30, 0.5, "s"),
    CONF_INVOKE_TIMEOUT: NumberOption(DEFAULT_INVOKE_TIMEOUT, 1, 60, 0.5, "s"),
    CONF_MAX_TOOL_ROUNDS: NumberOption(DEFAULT_MAX_TOOL_ROUNDS, 1, 8, 1),
    CONF_EMOTION_TICK_INTERVAL: NumberOption(
        DEFAULT_EMOTION_TICK_INTERVAL, TICK_MIN, TICK_MAX, 0.5, "s", slider=True
    ),
    CONF_NAVIGATOR_TURNS: NumberOption(DEFAULT_NAVIGATOR_TURNS, 1, 50, 1),
    CONF_NAVIGATOR_SWING: NumberOption(DEFAULT_NAVIGATOR_SWING, 0.1, 2.0, 0.05),
    CONF_JOURNAL_DAYS: NumberOption(DEFAULT_JOURNAL_DAYS, 1, 365, 1, "d"),
    CONF_JOURNAL_MB: NumberOption(DEFAULT_JOURNAL_MB, 1, 10_000, 1, "MB"),
}


def number_option(options: Mapping[str, Any], key: str) -> Any:
    """Return a numeric option as Soul uses it: in range, or its default."""
    option = NUMBER_OPTIONS[key]
    value = option.read(options.get(key))
    return option.default if value is None else value


def number_fields(*keys: str) -> dict[Any, Any]:
    """Return the options form's fields of these numeric options, with their defaults."""
    return {
        vol.Optional(key, default=NUMBER_OPTIONS[key].default): NUMBER_OPTIONS[
            key
        ].selector()
        for key in keys
    }


def flag_option(options: Mapping[str, Any], key: str, default: bool) -> bool:
    """Return a yes/no option as Home Assistant reads one (``cv.boolean``).

    A stored "false" (a hand edit, an old backup) was true to ``bool``; a
    value that says neither is the default.
    """
    try:
        return bool(cv.boolean(options.get(key, default)))
    except vol.Invalid:
        return default
