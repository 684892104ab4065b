"""Regular expressions from untrusted sources (bodies' catalogs and schemas).

A body can send a pattern with catastrophic backtracking; it runs in Home
Assistant's event loop, so every pattern is bounded in length and every match in
time. The ``regex`` module (pure C, with musllinux wheels) stops a match after
``timeout`` seconds; Python's ``re`` cannot.
"""

from __future__ import annotations

import functools

import regex

MAX_PATTERN_LENGTH = 512
DEFAULT_TIMEOUT = 0.02  # seconds one match may take


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


def search(
    pattern: str, text: str, *, timeout: float = DEFAULT_TIMEOUT
) -> regex.Match[str] | None:
    """Search ``text`` like ``re.search``, giving up after ``timeout`` seconds."""
    compiled = compile_untrusted(pattern)
    try:
        return compiled.search(text, timeout=timeout)
    except TimeoutError:
        raise RegexTimeoutError(
            f"pattern {pattern!r} took longer than {timeout * 1000:g} ms", pattern
        ) from None
