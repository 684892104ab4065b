"""System notifications (XingChen-V §2.2 ``system_notification``).

What happens to a soul beside its user turns: its bodies connecting, going
offline and coming back, its sessions archived to memory, memory failing and
recovering. A notice written while a user turn runs carries that turn's
``trace_id``; any other is an event of its own trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..logs import current_trace_id
from ..memory.manager import MemoryManager
from ..registry import TerminalRegistry
from ..souls import SoulHub
from ..terminal import Change, Terminal
from .events import Event, EventBus, EventType, Source, new_trace_id
from .trace import psyche_state

INFO = "info"
WARNING = "warning"


def notice(
    bus: EventBus | None,
    clock: Callable[[], float],
    message: str,
    *,
    level: str = INFO,
    souls: SoulHub | None = None,
    soul_id: str | None = None,
    session_id: str | None = None,
    terminal_id: str | None = None,
    user_id: str | None = None,
    **details: Any,
) -> None:
    """Write one ``system_notification`` (``{"level", "message", …}``).

    A notice of one user's session names that ``user_id`` (see ``Event``).
    """
    if bus is None:
        return
    snapshot = souls.snapshot(soul_id) if souls is not None and soul_id else None
    bus.emit(
        Event(
            trace_id=current_trace_id() or new_trace_id(),
            type=EventType.SYSTEM_NOTIFICATION,
            source=Source.SYSTEM,
            payload={"level": level, "message": message, **details},
            timestamp=clock(),
            psyche_state=psyche_state(snapshot),
            soul_id=soul_id,
            session_id=session_id,
            terminal_id=terminal_id,
            user_id=user_id,
        )
    )


def watch_bodies(
    registry: TerminalRegistry,
    souls: SoulHub,
    bus: EventBus,
    clock: Callable[[], float],
) -> Callable[[], None]:
    """Write a notice when a body connects, goes away or comes back; return the unwatcher.

    The notice belongs to the soul the body is bound to (none yet: no soul).
    """
    available: dict[str, bool] = {}

    def changed(terminal: Terminal, change: Change) -> None:
        terminal_id = terminal.terminal_id
        soul = souls.soul_of(terminal_id)
        soul_id = soul.soul_id if soul is not None else None
        if change is Change.ADDED:
            available[terminal_id] = terminal.available
            message = "body connected"
        elif change is Change.REMOVED:
            available.pop(terminal_id, None)
            message = "body removed"
        elif change is Change.AVAILABILITY:
            now = terminal.available
            if available.get(terminal_id) == now:
                return
            available[terminal_id] = now
            message = "body online" if now else "body offline"
        else:
            return
        notice(
            bus,
            clock,
            message,
            level=INFO if message != "body offline" else WARNING,
            souls=souls,
            soul_id=soul_id,
            terminal_id=terminal_id,
            event=message.removeprefix("body ").replace(" ", "_"),
        )

    return registry.subscribe(changed)


_MEMORY_NOTICES = {
    "failing": ("memory failing", WARNING),
    "ready": ("memory ready", INFO),
    "archived": ("memory archived", INFO),
    "dropped": ("memory queue full: an archive was dropped", WARNING),
}


def watch_memory(
    memory: MemoryManager,
    souls: SoulHub,
    bus: EventBus,
    clock: Callable[[], float],
) -> Callable[[], None]:
    """Write a notice when memory fails, recovers, archives or drops; return the unwatcher."""

    def told(what: str, details: Mapping[str, Any]) -> None:
        message, level = _MEMORY_NOTICES[what]
        soul_id = details.get("soul_id")
        notice(
            bus,
            clock,
            message,
            level=level,
            souls=souls,
            soul_id=soul_id if isinstance(soul_id, str) else None,
            session_id=details.get("session_id"),
            user_id=details.get("user_id"),
            event=f"memory_{what}",
            **{
                k: v
                for k, v in details.items()
                if k not in ("soul_id", "session_id", "user_id")
            },
        )

    return memory.listen(told)
