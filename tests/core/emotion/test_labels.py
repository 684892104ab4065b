"""Reported PAD coordinates."""

from __future__ import annotations

import json

from custom_components.soul.core.emotion.labels import rounded


def test_a_tiny_negative_is_reported_as_zero_not_minus_zero() -> None:
    # Seen on a soul's Arousal sensor as the state "-0.0".
    assert json.dumps([rounded(-0.04, 1), rounded(-0.0004, 3)]) == "[0.0, 0.0]"
    assert rounded(-0.06, 1) == -0.1
    assert rounded(0.1234, 3) == 0.123
