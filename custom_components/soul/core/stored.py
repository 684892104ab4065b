"""Reading back Soul's own stores, where any JSON may be found.

Home Assistant moves a store that is not JSON aside, but a damaged SD card, a
hand edit or an older Soul's data can hold any value where Soul wrote a
count, a time or an id. Every loader reads such values through these helpers
and drops a record it cannot read. A fuzz of the five stores (2026-11-29)
found a time of -1e18 that hung Home Assistant at start, a far-future one
that failed every emotion tick, and a count past 64 bits that left a store
unwritable.
"""

from __future__ import annotations

from itertools import islice
import math
from typing import Any

from . import untrusted
from .chat_request import MAX_ID

MAX_COUNT = 2**53  # a stored count; Home Assistant writes integers within 64 bits
# How far a stored time may lie ahead of the clock: a device without a
# real-time clock starts from its last saved time until NTP answers, so what
# it stored just before may still be ahead. A later time is this far ahead.
CLOCK_SLACK = 86_400.0


def count(value: object) -> int:
    """Return a stored count as an integer from 0 to ``MAX_COUNT``; 0 for anything else."""
    if not isinstance(value, int) or isinstance(value, bool):
        return 0
    return min(max(0, value), MAX_COUNT)


def seconds(value: object, now: float | None = None) -> float:
    """Return a stored time as finite seconds; 0.0 for anything else.

    A time before 1970 is 0.0; one more than ``CLOCK_SLACK`` after ``now``
    (when given) is that much after it.
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return 0.0
    try:
        time = float(value)
    except OverflowError:  # an integer past what a float holds
        return 0.0
    if not math.isfinite(time) or time < 0:
        return 0.0
    return time if now is None else min(time, now + CLOCK_SLACK)


def ident(value: object, max_length: int = MAX_ID) -> str | None:
    """Return a stored id: one line of 1 to ``max_length`` characters; else None."""
    if isinstance(value, str) and untrusted.is_text(value, max_length):
        return value
    return None


def newest(stored: dict[Any, Any], limit: int) -> list[tuple[Any, Any]]:
    """Return the last ``limit`` items of a stored object, in their order.

    Only those are read: Soul never stores more, and 100,000 of them took
    a loader 175 ms to look through.
    """
    return list(islice(reversed(stored.items()), limit))[::-1]
