"""Untrusted patterns: bounded length, reported errors, matches bounded in time."""

from __future__ import annotations

import re

import pytest

from custom_components.soul.core.safe_regex import (
    MAX_PATTERN_LENGTH,
    RegexTimeoutError,
    UnsafeRegexError,
    _fast,
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


@pytest.mark.parametrize(
    ("pattern", "fast"),
    [
        ("(点头|摇头)", True),
        (r"([0-9]+(?:\.[0-9]+)?)\s*分钟", True),
        (r"(?i)play\s+music", True),
        ("(ab){2,3}", True),
        ("(a+)+$", False),  # repetition inside repetition
        ("(a|aa)+$", False),  # alternation inside repetition
        (r"(\w)\1", False),  # backreference
        ("(?=a)b", False),  # lookaround
        (r"\p{Han}+", False),  # regex-only syntax
    ],
)
def test_only_provably_cheap_patterns_skip_the_timeout(
    pattern: str, fast: bool
) -> None:
    assert (_fast(pattern) is not None) is fast


def test_fast_path_respects_the_step_budget() -> None:
    """Three unbounded repetitions: short texts run on re, long ones on regex."""
    pattern = "a*a*a*b"
    assert _fast(pattern)[1] == 3  # type: ignore[index]
    short = search(pattern, "aaab")  # (4 + 1)^4 steps at most
    assert isinstance(short, re.Match)
    long = search(pattern, "a" * 300 + "b")  # 301^4 steps: bounded by the timeout
    assert long is not None
    assert not isinstance(long, re.Match)
