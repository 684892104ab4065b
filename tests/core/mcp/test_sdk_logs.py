"""What the MCP SDK logs of a hostile server's messages stays clean, short and few.

The SDK logs a notification it cannot validate at WARNING with the whole
message (on the root logger): a server wrote 21 MB of warnings in 5 s,
terminal escapes included (black box, 2026-11-28).
"""

from __future__ import annotations

import logging
import sys

import pytest

from custom_components.soul.core.logs import BURST, WINDOW
from custom_components.soul.core.mcp.connection import CONNECTED
from custom_components.soul.core.mcp.sdk_logs import (
    _SDK_FILES,
    MAX_LINE,
    SdkLogGuard,
    install_guard,
)
from tests.mcp_servers.processes import HOSTILE_SERVER

from .test_hub import _hub, until
from .test_stdio import _text


def _record(
    message: str, pathname: str = _SDK_FILES + "shared/session.py"
) -> logging.LogRecord:
    return logging.LogRecord(
        "root", logging.WARNING, pathname, 430, "%s", (message,), None
    )


def test_the_sdk_s_records_are_cleaned_cut_and_thinned_out() -> None:
    now = [0.0]
    guard = SdkLogGuard(clock=lambda: now[0])
    passed = []
    for _ in range(BURST + 3):
        record = _record("\x1b[31m" + "x" * 10_000)
        if guard.filter(record):
            passed.append(record.getMessage())
    assert len(passed) == BURST
    assert passed[0] == "\ufffd[31m" + "x" * (MAX_LINE - 5) + " …(cut)"
    now[0] = WINDOW  # a new window: the next one says what was left out
    record = _record("again")
    assert guard.filter(record)
    assert record.getMessage() == "again (3 more like this were left out)"
    # Another line of the SDK's code has a burst of its own.
    assert guard.filter(_record("elsewhere", _SDK_FILES + "client/sse.py"))
    # Records of other code pass as they are.
    other = _record("\x1b[31m" + "y" * 10_000, "/elsewhere/module.py")
    for _ in range(BURST + 3):
        assert guard.filter(other)
    assert other.getMessage() == "\x1b[31m" + "y" * 10_000


def test_the_guard_is_on_while_anything_installed_it() -> None:
    root = logging.getLogger()
    before = list(root.filters)
    first, second = install_guard(), install_guard()
    guards = [f for f in root.filters if isinstance(f, SdkLogGuard)]
    assert len(guards) == 1
    assert guards[0] in logging.getLogger("client").filters
    first()
    first()  # once only
    assert guards[0] in root.filters
    second()
    assert root.filters == before


async def test_a_hub_keeps_a_flood_of_invalid_notifications_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = _hub({"flood": {"command": sys.executable, "args": [HOSTILE_SERVER]}})
    try:
        connection = hub.connections["flood"]
        await until(lambda: connection.status == CONNECTED)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            result = await connection.call("junk", {"times": 200, "size": 100_000})
            assert _text(result) == "sent"
            assert _text(await connection.call("calls", {})) == "1"  # all were read
        sdk = [r for r in caplog.records if r.pathname.startswith(_SDK_FILES)]
        assert 1 <= len(sdk) <= BURST, len(sdk)
        for record in sdk:
            message = record.getMessage()
            assert len(message) <= MAX_LINE + 10 and "\x1b" not in message
    finally:
        await hub.stop()
    assert not any(isinstance(f, SdkLogGuard) for f in logging.getLogger().filters)


def test_the_sdk_s_debug_records_are_cleaned_never_left_out() -> None:
    guard = SdkLogGuard(clock=lambda: 0.0)
    for _ in range(BURST * 3):
        record = _record("\x1b[2J" + "y" * 1000)
        record.levelno = logging.DEBUG
        assert guard.filter(record)
        assert (
            record.getMessage().startswith("\ufffd[2J")
            and len(record.getMessage()) < 520
        )
