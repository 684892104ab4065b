"""One user turn's events under one ``trace_id`` (XingChen-V §2).

``TurnTrace`` is created by the chat pipeline for every user turn, whatever
its way in (HTTP, Assist, Star): it writes the turn's ``user_input``, the
``psyche_update`` the user's emotion caused and the ``driver_response``,
each with the soul's ``psyche_state`` at that moment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..soul_events import EmotionSnapshot
from .events import Event, EventBus, EventType, Source, new_trace_id

MAX_CONTENT = 4096


def psyche_state(snapshot: EmotionSnapshot | None) -> dict[str, Any] | None:
    """Return a soul's state for ``meta.psyche_state``: PAD, mood, willingness."""
    if snapshot is None:
        return None
    return {
        "pleasure": snapshot.p,
        "arousal": snapshot.a,
        "dominance": snapshot.d,
        "mood": snapshot.mood.value,
        "exec_probability": snapshot.exec_probability,
        "exec_mode": snapshot.exec_mode.value,
    }


def pad_delta(
    before: EmotionSnapshot | None, after: EmotionSnapshot
) -> dict[str, float]:
    """Return how far pleasure, arousal and dominance moved (0 without a before)."""
    if before is None:
        return {"pleasure": 0.0, "arousal": 0.0, "dominance": 0.0}
    return {
        "pleasure": round(after.p - before.p, 4) + 0.0,
        "arousal": round(after.a - before.a, 4) + 0.0,
        "dominance": round(after.d - before.d, 4) + 0.0,
    }


@dataclass
class TurnTrace:
    """The events of one user turn, sharing its ``trace_id``."""

    bus: EventBus | None
    clock: Callable[[], float]
    soul_id: str
    session_id: str
    terminal_id: str | None
    trace_id: str = field(default_factory=new_trace_id)
    # The user whose session this is (``Event.user_id``).
    user_id: str | None = None

    def emit(
        self,
        kind: EventType,
        source: Source,
        payload: Mapping[str, Any],
        snapshot: EmotionSnapshot | None,
    ) -> None:
        """Write one event of this turn."""
        if self.bus is None:
            return
        self.bus.emit(
            Event(
                trace_id=self.trace_id,
                type=kind,
                source=source,
                payload=payload,
                timestamp=self.clock(),
                psyche_state=psyche_state(snapshot),
                soul_id=self.soul_id,
                session_id=self.session_id,
                terminal_id=self.terminal_id,
                user_id=self.user_id,
            )
        )

    def user_input(
        self,
        text: str,
        *,
        channel: str,
        user_id: str | None,
        inputs: list[str],
        snapshot: EmotionSnapshot | None,
    ) -> None:
        """Write the user's words (§2.2 ``user_input``) and the way they came in."""
        self.emit(
            EventType.USER_INPUT,
            Source.USER,
            {
                "content": text[:MAX_CONTENT],
                "channel": channel,
                "user_id": user_id,
                "inputs": inputs,
            },
            snapshot,
        )

    def psyche_update(
        self,
        before: EmotionSnapshot | None,
        after: EmotionSnapshot,
        reason: str,
        **details: Any,
    ) -> None:
        """Write how the soul's PAD moved and why (§2.2 ``psyche_update``)."""
        self.emit(
            EventType.PSYCHE_UPDATE,
            Source.PSYCHE,
            {"delta": pad_delta(before, after), "reason": reason, **details},
            after,
        )

    def driver_response(
        self,
        reply: str,
        *,
        inner_voice: str | None,
        snapshot: EmotionSnapshot | None,
        **details: Any,
    ) -> None:
        """Write the soul's answer (§2.2 ``driver_response``), inner voice included."""
        self.emit(
            EventType.DRIVER_RESPONSE,
            Source.DRIVER,
            {"content": reply[:MAX_CONTENT], "inner_voice": inner_voice, **details},
            snapshot,
        )
