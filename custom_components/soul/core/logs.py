"""Log lines that carry the current user turn's ``trace_id`` (XingChen-V §2).

The chat pipeline marks the turn it is answering with ``traced``; every line
logged through a ``trace_logger`` while that turn runs — in the core or in
the Home Assistant glue, in the turn's task or in tasks it starts — begins
with ``[trace <id>]``, so a log line can be matched with the journal's
events of the same turn.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
import logging
from typing import Any

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
    """Return the trace-aware logger named ``name``."""
    return TraceLogger(logging.getLogger(name))
