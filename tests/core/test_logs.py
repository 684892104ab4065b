"""Soul's warnings are thinned out per line of code (``core.logs.LogThrottle``).

A hostile body's 10,000 invalid ``online`` messages made 10,000 warnings
(2026-11-28); each line of code now logs 5 within 5 minutes, then says how
many it left out.
"""

from __future__ import annotations

import logging

import pytest

from custom_components.soul.core.logs import (
    BURST,
    THROTTLE,
    WINDOW,
    LogThrottle,
    trace_logger,
)
from custom_components.soul.core.registry import Kind, TerminalRegistry


def _record(level: int = logging.WARNING, line: int = 7) -> logging.LogRecord:
    return logging.LogRecord(
        "x", level, "/soul/module.py", line, "dropped %s", ("a",), None
    )


def test_a_line_of_code_logs_a_burst_then_says_what_it_left_out() -> None:
    now = [0.0]
    throttle = LogThrottle(clock=lambda: now[0])
    assert [throttle.filter(_record()) for _ in range(BURST + 2)] == [True] * BURST + [
        False,
        False,
    ]
    assert throttle.filter(_record(line=8))  # another line: a burst of its own
    assert throttle.filter(_record(logging.INFO))  # below WARNING: never counted
    now[0] = WINDOW - 1
    assert not throttle.filter(_record())
    now[0] = WINDOW
    record = _record()
    assert throttle.filter(record)
    assert record.getMessage() == "dropped a (3 more like this were left out)"
    throttle.forget()
    assert [throttle.filter(_record()) for _ in range(BURST)] == [True] * BURST


def test_every_trace_logger_has_the_throttle_once() -> None:
    trace_logger("custom_components.soul.test_logs")
    trace_logger("custom_components.soul.test_logs")
    filters = logging.getLogger("custom_components.soul.test_logs").filters
    assert filters.count(THROTTLE) == 1


def test_a_hostile_body_s_invalid_messages_make_a_few_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = TerminalRegistry()
    with caplog.at_level(logging.WARNING):
        for n in range(1000):
            registry.handle_message(
                Kind.ONLINE, f"bot{n % 300}", b'{"junk": ' + b"1" * 100 + b"}"
            )
    dropped = [r for r in caplog.records if "Dropped online" in r.getMessage()]
    assert len(dropped) == BURST


def test_a_record_that_cannot_be_formatted_does_not_raise_at_the_log_call() -> None:
    throttle = LogThrottle(clock=lambda: 0.0)
    for _ in range(BURST + 1):
        throttle.filter(_record())
    broken = logging.LogRecord(
        "x", logging.WARNING, "/soul/module.py", 7, "%s %s", ("a",), None
    )
    throttle._places[("/soul/module.py", 7)] = (-WINDOW, 0, 2)  # a new window
    assert throttle.filter(broken)
    assert broken.getMessage() == "%s %s (2 more like this were left out)"
