"""Regular expressions from untrusted sources (bodies' catalogs and schemas).

A body can send a pattern with catastrophic backtracking; it runs in Home
Assistant's event loop, so every pattern is bounded in length and every match in
time. The ``regex`` module (pure C, with musllinux wheels) stops a match after
``timeout`` seconds; Python's ``re`` cannot.

The timeout costs: ``regex`` with a timeout is ~10× slower than ``re``. So a
pattern whose worst case is provably small runs on ``re``: no repetition or
alternation inside a repetition, no backreferences or lookarounds, and — with
k unbounded repetitions — a text of n characters for which a backtracking
search cannot exceed (n + 1)^(k + 1) ≤ ``FAST_BUDGET`` steps. Everything else
runs on ``regex`` with the timeout.
"""

from __future__ import annotations

import functools
import re
from re import _constants as sre_constants, _parser as sre_parse  # type: ignore[attr-defined]

import regex

MAX_PATTERN_LENGTH = 512
DEFAULT_TIMEOUT = 0.02  # seconds one match may take
FAST_BUDGET = 200_000  # worst-case backtracking steps allowed without a timeout
_SAFE_OPS = {
    sre_constants.LITERAL, sre_constants.NOT_LITERAL, sre_constants.ANY,
    sre_constants.IN, sre_constants.AT, sre_constants.CATEGORY,
    sre_constants.BRANCH, sre_constants.SUBPATTERN,
    sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT,
}  # fmt: skip
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT}


class UnsafeRegexError(ValueError):
    """A pattern that is too long, invalid, or too slow; ``pattern`` names it."""

    def __init__(self, message: str, pattern: str) -> None:
        """Keep the offending pattern for the report."""
        super().__init__(message)
        self.pattern = pattern


class RegexTimeoutError(UnsafeRegexError):
    """A match took longer than its time bound."""


@functools.lru_cache(maxsize=4096)
def compile_untrusted(pattern: str) -> regex.Pattern[str]:
    """Compile a pattern from an untrusted source, or raise ``UnsafeRegexError``."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsafeRegexError(
            f"pattern longer than {MAX_PATTERN_LENGTH} characters", pattern[:80]
        )
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, TypeError, OverflowError, RecursionError) as err:
        raise UnsafeRegexError(f"invalid pattern {pattern!r}: {err}", pattern) from None


def _repeats(items: sre_parse.SubPattern | list, inside_repeat: bool) -> int | None:
    """Count unbounded repetitions; None when the pattern is not provably cheap."""
    count = 0
    for op, arg in items:
        if op not in _SAFE_OPS:
            return None  # backreferences, lookarounds, conditionals: no fast path
        children: list = []
        repeating = inside_repeat
        if op in _REPEATS:
            _low, high, body = arg
            if high > 1:
                if inside_repeat:
                    return None  # (a+)+: exponential
                repeating = True
                if high == sre_constants.MAXREPEAT or high > 64:
                    count += 1
            children = [body]
        elif op is sre_constants.SUBPATTERN:
            children = [arg[-1]]
        elif op is sre_constants.BRANCH:
            if inside_repeat:
                return None  # (a|aa)+: exponential
            children = list(arg[1])
        for child in children:
            inner = _repeats(child, repeating)
            if inner is None:
                return None
            count += inner
    return count


@functools.lru_cache(maxsize=4096)
def _fast(pattern: str) -> tuple[re.Pattern[str], int] | None:
    """Return ``pattern`` compiled with ``re`` and its unbounded repetitions, if cheap."""
    try:
        repeats = _repeats(sre_parse.parse(pattern), False)
        return None if repeats is None else (re.compile(pattern), repeats)
    except (re.error, RecursionError, OverflowError, TypeError):
        return None


def search(
    pattern: str, text: str, *, timeout: float = DEFAULT_TIMEOUT
) -> re.Match[str] | regex.Match[str] | None:
    """Search ``text`` like ``re.search``, giving up after ``timeout`` seconds."""
    fast = _fast(pattern)
    if fast is not None and (len(text) + 1) ** (fast[1] + 1) <= FAST_BUDGET:
        return fast[0].search(text)
    compiled = compile_untrusted(pattern)
    try:
        return compiled.search(text, timeout=timeout)
    except TimeoutError:
        raise RegexTimeoutError(
            f"pattern {pattern!r} took longer than {timeout * 1000:g} ms", pattern
        ) from None
