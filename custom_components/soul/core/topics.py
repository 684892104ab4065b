"""MQTT topic rules of the Soul-Body protocol v2 (§3.1)."""

from __future__ import annotations

DEFAULT_PREFIX = "soul"
MAX_PREFIX_LENGTH = 64


class InvalidPrefixError(ValueError):
    """A topic prefix that cannot carry the protocol's topics."""


def normalize_prefix(prefix: str) -> str:
    """Return the prefix without surrounding blanks and slashes, or raise.

    The prefix is the first level(s) of every topic (``{prefix}/terminal/...``),
    so it must be a valid publish topic itself: no MQTT wildcards, no NUL, not
    empty, and not a ``$`` system topic.
    """
    value = prefix.strip().strip("/")
    if not value:
        raise InvalidPrefixError("the topic prefix is empty")
    if len(value) > MAX_PREFIX_LENGTH:
        raise InvalidPrefixError(
            f"the topic prefix is longer than {MAX_PREFIX_LENGTH} characters"
        )
    if any(char in value for char in "+#\x00"):
        raise InvalidPrefixError("the topic prefix may not contain '+', '#' or NUL")
    if value.startswith("$"):
        raise InvalidPrefixError("the topic prefix may not start with '$'")
    if "//" in value:
        raise InvalidPrefixError("the topic prefix may not contain empty levels")
    return value
