"""The hub's numeric options as Soul reads them: in range, or the default."""

from __future__ import annotations

import pytest

from custom_components.soul.const import (
    CONF_EMOTION_TICK_INTERVAL,
    CONF_INVOKE_TIMEOUT,
    CONF_JOURNAL_MB,
    CONF_MAX_TOOL_ROUNDS,
)
from custom_components.soul.number_options import NUMBER_OPTIONS, number_option


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3.0),
        (1, 2.0),
        (0, 2.0),
        (-4, 2.0),
        (9, 5.0),
        (4.5, 4.5),
        ("4", 4.0),
        (None, 3.0),  # what JSON made of a stored NaN
        ("x", 3.0),
        (True, 3.0),
        ([4], 3.0),
        (float("nan"), 3.0),
        (float("inf"), 3.0),
        ("1e999", 3.0),
        (10**400, 3.0),
    ],
)
def test_the_tick_interval(value: object, expected: float) -> None:
    assert (
        number_option({CONF_EMOTION_TICK_INTERVAL: value}, CONF_EMOTION_TICK_INTERVAL)
        == expected
    )


def test_whole_numbers_stay_whole_and_missing_ones_are_defaults() -> None:
    rounds = number_option({CONF_MAX_TOOL_ROUNDS: 5.0}, CONF_MAX_TOOL_ROUNDS)
    assert (rounds, type(rounds)) == (5, int)
    assert number_option({CONF_JOURNAL_MB: 10**30}, CONF_JOURNAL_MB) == 10_000
    assert number_option({}, CONF_INVOKE_TIMEOUT) == 8.0
    # Every default is within its own range.
    for option in NUMBER_OPTIONS.values():
        assert option.read(option.default) == option.default


@pytest.mark.parametrize(
    ("stored", "read"),
    [("false", False), ("true", True), ("off", False), (True, True), (0, False),
     ("maybe", None), ([1], None), (None, None), ({}, None)],
)  # fmt: skip
def test_a_stored_flag_is_read_as_home_assistant_reads_one(
    stored: object, read: bool | None
) -> None:
    """A stored "false" was true (``bool``): a fuzz of the stored entries."""
    from custom_components.soul.number_options import flag_option

    for default in (False, True):
        expected = default if read is None else read
        assert flag_option({"follow_up": stored}, "follow_up", default) is expected
    assert flag_option({}, "follow_up", True) is True
