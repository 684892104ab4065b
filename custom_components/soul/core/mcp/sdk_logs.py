"""What the MCP SDK logs about a server's messages: clean, short and few.

The SDK logs what a server sent, whole, at WARNING: a notification or a
request it cannot validate with the message itself (on the root logger,
``shared/session.py``), an unknown server-sent event, an ``initialize``
result it cannot read. A hostile server wrote 21 MB of warnings into Home
Assistant's log in 5 s, terminal escape sequences included, and could go on
for as long as it liked (black box, 2026-11-28). ``SdkLogGuard`` filters the
loggers the SDK writes to: a record made by the SDK's code is cleaned
(``untrusted.clean``: no control or bidi characters) and cut to
``MAX_LINE`` characters, and past ``logs.BURST`` records at WARNING or above
from one line of the SDK's code within ``logs.WINDOW`` seconds the rest are
left out, the next one let through saying how many (``logs.LogThrottle``;
debug and info records, shown only when asked for, are never left out).
Records of other code pass untouched, and the levels stay Home Assistant's
to set. Home Assistant's own MCP integrations use the same SDK and loggers:
while Soul's hub runs, their SDK records are cleaned and thinned out too.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import os
from pathlib import Path
import time

import mcp

from .. import untrusted
from ..logs import LogThrottle

MAX_LINE = 500  # characters of one record's message
_SDK_FILES = str(Path(mcp.__file__).parent) + os.sep
# Loggers the SDK's modules write to, beside the root logger: its own
# (``mcp.…``), and ``client`` (``mcp/client/session.py`` names its logger so).
_SDK_LOGGERS = ("mcp", "client")


class SdkLogGuard(LogThrottle):
    """Clean, cut and thin out the records of the MCP SDK's code (module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Start with no record seen; records at WARNING or above are thinned out."""
        super().__init__(clock=clock)

    def filter(self, record: logging.LogRecord) -> bool:
        """Return whether the record goes on; an SDK record is cleaned first.

        Debug and info records (shown only when asked for) are cleaned and
        cut, never left out.
        """
        if not record.pathname.startswith(_SDK_FILES):
            return True
        left_out = self.admit(record) if record.levelno >= logging.WARNING else 0
        if left_out is None:
            return False
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a filter must not raise into the SDK
            message = str(record.msg)
        text = untrusted.clean(message, MAX_LINE)
        if len(text) == MAX_LINE:
            text += " …(cut)"
        if left_out:
            text += f" ({left_out} more like this were left out)"
        record.msg, record.args = text, None
        return True


class _Installed:
    guard: SdkLogGuard | None = None
    users = 0


def install_guard() -> Callable[[], None]:
    """Put the guard on the SDK's loggers; return what takes it off again.

    Counted: the guard stays while anything that installed it has not taken
    it off (one per MCP hub).
    """
    if _Installed.guard is None:
        _Installed.guard = SdkLogGuard()
        for logger in _sdk_loggers():
            logger.addFilter(_Installed.guard)
    _Installed.users += 1
    removed = False

    def remove() -> None:
        nonlocal removed
        if removed:
            return
        removed = True
        _Installed.users -= 1
        if _Installed.users == 0 and (guard := _Installed.guard) is not None:
            for logger in _sdk_loggers():
                logger.removeFilter(guard)
            _Installed.guard = None

    return remove


def _sdk_loggers() -> list[logging.Logger]:
    """Return the root logger and every logger the SDK's modules made."""
    loggers = [logging.getLogger()]
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and (
            name in _SDK_LOGGERS or name.startswith("mcp.")
        ):
            loggers.append(logger)
    return loggers
