"""Soul's log lines: the current user turn's ``trace_id``, and never a flood.

The chat pipeline marks the turn it is answering with ``traced``; every line
logged through a ``trace_logger`` while that turn runs — in the core or in
the Home Assistant glue, in the turn's task or in tasks it starts — begins
with ``[trace <id>]``, so a log line can be matched with the journal's
events of the same turn.

Many warnings answer untrusted input (a body's invalid message, a server's
tool left out), and a hostile body can send thousands a second: 10,000
invalid ``online`` messages made 10,000 warnings (1.1 MB). ``LogThrottle``
lets ``BURST`` records at WARNING or above from one line of code through
within ``WINDOW`` seconds and leaves the rest out, the next one let through
saying how many; every ``trace_logger`` has it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
import logging
import threading
import time
from typing import Any

BURST = 5  # records from one line of code within a window
WINDOW = 300.0  # seconds

_TRACE_ID: ContextVar[str | None] = ContextVar("soul_trace_id", default=None)


def current_trace_id() -> str | None:
    """Return the ``trace_id`` of the turn being answered, if any."""
    return _TRACE_ID.get()


@contextmanager
def traced(trace_id: str) -> Iterator[None]:
    """Mark the code inside (and the tasks it starts) as part of one turn."""
    token = _TRACE_ID.set(trace_id)
    try:
        yield
    finally:
        _TRACE_ID.reset(token)


class TraceLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger whose lines start with the current turn's trace id."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        """Prefix the message while a turn is traced."""
        if (trace_id := _TRACE_ID.get()) is not None:
            return f"[trace {trace_id}] {msg}", kwargs
        return msg, kwargs


def trace_logger(name: str) -> TraceLogger:
    """Return the trace-aware logger named ``name``, its warnings throttled."""
    logger = logging.getLogger(name)
    if THROTTLE not in logger.filters:
        logger.addFilter(THROTTLE)
    return TraceLogger(logger)


class LogThrottle(logging.Filter):
    """At most ``BURST`` records from one line of code within ``WINDOW`` seconds.

    Only records at WARNING or above count; the first one let through after
    some were left out says how many. ``shown`` may write a record's text
    anew (``mcp.sdk_logs``).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Start with no record seen; ``clock`` measures the windows."""
        super().__init__()
        self._clock = clock
        self._lock = threading.Lock()
        # (file, line) → (when its window began, records in it, left out)
        self._places: dict[tuple[str, int], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Return whether the record goes on (saying what was left out before it)."""
        left_out = self._admit(record) if record.levelno >= logging.WARNING else 0
        if left_out is None:
            return False
        if (text := self.shown(record, left_out)) is not None:
            record.msg, record.args = text, None
        return True

    def shown(self, record: logging.LogRecord, left_out: int) -> str | None:
        """Return the record's text anew, or None to leave it as it is."""
        return f"{message_of(record)}{left_out_note(left_out)}" if left_out else None

    def _admit(self, record: logging.LogRecord) -> int | None:
        """Count ``record``; return None to leave it out, else how many were before it."""
        place = (record.pathname, record.lineno)
        now = self._clock()
        with self._lock:
            began, count, left_out = self._places.get(place, (now, 0, 0))
            if now - began >= WINDOW:
                began, count = now, 0
            if count >= BURST:
                self._places[place] = (began, count, left_out + 1)
                return None
            self._places[place] = (began, count + 1, 0)
        return left_out

    def forget(self) -> None:
        """Forget every record seen (tests start afresh)."""
        with self._lock:
            self._places.clear()


THROTTLE = LogThrottle()


def message_of(record: logging.LogRecord) -> str:
    """Return a record's message; a filter must not raise at a log call."""
    try:
        return record.getMessage()
    except Exception:  # noqa: BLE001 - arguments that do not fit the message
        return str(record.msg)


def left_out_note(count: int) -> str:
    """Return what a record says of the ``count`` left out before it."""
    return f" ({count} more like this were left out)" if count else ""
