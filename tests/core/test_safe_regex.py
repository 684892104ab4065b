"""Untrusted patterns: bounded length, reported errors, matches bounded in time."""

from __future__ import annotations

import pytest

from custom_components.soul.core.safe_regex import (
    MAX_PATTERN_LENGTH,
    RegexTimeoutError,
    UnsafeRegexError,
    compile_untrusted,
    search,
)

HOSTILE = r"(a|aa)+$"
HOSTILE_INPUT = "a" * 40 + "b"


def test_ordinary_patterns_behave_like_re() -> None:
    match = search(r"([0-9]+(?:\.[0-9]+)?)\s*分钟", "10分钟后提醒我")
    assert match is not None
    assert match.group(1) == "10"
    assert search("(点头|摇头)", "开灯") is None


@pytest.mark.parametrize("pattern", ["(unclosed", "*x", "a{2,1}"])
def test_invalid_patterns_are_reported(pattern: str) -> None:
    with pytest.raises(UnsafeRegexError) as caught:
        compile_untrusted(pattern)
    assert caught.value.pattern == pattern


def test_long_patterns_are_refused() -> None:
    with pytest.raises(UnsafeRegexError, match="longer than"):
        compile_untrusted("a" * (MAX_PATTERN_LENGTH + 1))


def test_catastrophic_backtracking_is_stopped() -> None:
    with pytest.raises(RegexTimeoutError) as caught:
        search(HOSTILE, HOSTILE_INPUT, timeout=0.01)
    assert caught.value.pattern == HOSTILE
    assert search(HOSTILE, "aaaa") is not None  # harmless input still matches
