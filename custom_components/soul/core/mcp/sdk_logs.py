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

import mcp

from .. import untrusted
from ..logs import LogThrottle, left_out_note, message_of

MAX_LINE = 500  # characters of one record's message
_SDK_FILES = str(Path(mcp.__file__).parent) + os.sep
# Loggers the SDK's modules write to, beside the root logger: its own
# (``mcp.…``), and ``client`` (``mcp/client/session.py`` names its logger so).
_SDK_LOGGERS = ("mcp", "client")


class SdkLogGuard(LogThrottle):
    """Clean, cut and thin out the records of the MCP SDK's code (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Return whether the record goes on; an SDK record is cleaned first.

        Debug and info records (shown only when asked for) are cleaned and
        cut, never left out.
        """
        return not record.pathname.startswith(_SDK_FILES) or super().filter(record)

    def shown(self, record: logging.LogRecord, left_out: int) -> str:
        """Return the record's text clean, cut, and saying what was left out."""
        text = untrusted.clean(message_of(record), MAX_LINE)
        if len(text) == MAX_LINE:
            text += " …(cut)"
        return text + left_out_note(left_out)


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
