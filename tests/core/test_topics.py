"""Topic prefix rules."""

from __future__ import annotations

import pytest

from custom_components.soul.core.topics import InvalidPrefixError, normalize_prefix


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("soul", "soul"),
        (" /soul/ ", "soul"),
        ("home/soul", "home/soul"),
        ("灵魂", "灵魂"),
    ],
)
def test_valid(raw: str, expected: str) -> None:
    assert normalize_prefix(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", " / ", "soul/#", "a/+/b", "$SYS", "a//b", "a\x00b", "x" * 65]
)
def test_invalid(raw: str) -> None:
    with pytest.raises(InvalidPrefixError):
        normalize_prefix(raw)
