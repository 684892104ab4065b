"""Per event-loop-turn helpers for the Star transport (``transport.py``).

``turns(loop)`` counts the loop's turns, for a reader to tell whether the
loop has run since it last looked; ``flushes(loop)`` calls the ``flush`` of
every writer that kept frames this turn, once, at the start of the next
turn (one callback a turn, however many writers). One of each per loop.
"""

from __future__ import annotations

import asyncio
from typing import Protocol
import weakref


class Turns:
    """Counts the event loop's turns, for readers to tell whether it has run.

    ``arm`` returns the current count and makes sure it goes up on the loop's
    next turn (one callback a turn, however many readers ask).
    """

    __slots__ = ("_armed", "_loop", "count")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._armed = False
        self.count = 0

    def arm(self) -> int:
        """Return the count; it goes up on the loop's next turn."""
        if not self._armed:
            self._armed = True
            self._loop.call_soon(self._turned)
        return self.count

    def _turned(self) -> None:
        self._armed = False
        self.count += 1


class Flushable(Protocol):
    """A writer that keeps frames until the turn ends; ``flush`` never raises."""

    def flush(self) -> None:
        """Write what was kept."""


class Flushes:
    """Flushes the writers that kept frames this turn, once, on the next turn."""

    __slots__ = ("_due", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: list[Flushable] = []

    def add(self, writer: Flushable) -> None:
        """Flush ``writer`` on the loop's next turn (with every other added)."""
        if not self._due:
            self._loop.call_soon(self._flush)
        self._due.append(writer)

    def _flush(self) -> None:
        due, self._due = self._due, []
        for writer in due:
            writer.flush()


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = (
    weakref.WeakKeyDictionary()
)
_FLUSHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Flushes] = (
    weakref.WeakKeyDictionary()
)


def turns(loop: asyncio.AbstractEventLoop) -> Turns:
    """Return ``loop``'s turn counter."""
    if (found := _TURNS.get(loop)) is None:
        found = _TURNS[loop] = Turns(loop)
    return found


def flushes(loop: asyncio.AbstractEventLoop) -> Flushes:
    """Return ``loop``'s end-of-turn flusher."""
    if (found := _FLUSHES.get(loop)) is None:
        found = _FLUSHES[loop] = Flushes(loop)
    return found
