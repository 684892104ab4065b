"""Soul's Home Assistant events in the logbook, in words (docs/cognition.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homeassistant.components.logbook import LOGBOOK_ENTRY_MESSAGE, LOGBOOK_ENTRY_NAME
from homeassistant.core import Event, HomeAssistant, callback

from .const import (
    DOMAIN,
    EVENT_EMOTION_UPDATE,
    EVENT_EVOLUTION_REQUEST,
    EVENT_EXEC_MODE_CHANGED,
    EVENT_MOOD_CHANGED,
    EVENT_USER_EMOTION,
)
from .helpers import find_loaded_entry

EXEC_MODES = {
    "auto_execute": "acts on requests",
    "confirm": "asks before acting",
    "blocked": "refuses to act",
}


@callback
def async_describe_events(
    hass: HomeAssistant,
    async_describe_event: Callable[[str, str, Callable[[Event], dict[str, str]]], None],
) -> None:
    """Describe Soul's events."""

    def soul_name(data: Mapping[str, Any]) -> str:
        soul_id = str(data.get("soul_id") or "")
        entry = find_loaded_entry(hass)
        soul = entry.runtime_data.souls.soul(soul_id) if entry is not None else None
        return soul.name if soul is not None else f"Soul {soul_id}".strip()

    @callback
    def user_emotion(event: Event) -> dict[str, str]:
        data = event.data
        return {
            LOGBOOK_ENTRY_NAME: soul_name(data),
            LOGBOOK_ENTRY_MESSAGE: (
                f"heard {data.get('emotion', 'neutral')} (intensity "
                f"{data.get('intensity', 0)}) through {data.get('terminal_id')}"
            ),
        }

    @callback
    def mood_changed(event: Event) -> dict[str, str]:
        data = event.data
        return {
            LOGBOOK_ENTRY_NAME: soul_name(data),
            LOGBOOK_ENTRY_MESSAGE: (
                f"felt {data.get('mood')} (was {data.get('previous_mood')})"
            ),
        }

    @callback
    def exec_mode_changed(event: Event) -> dict[str, str]:
        data = event.data
        mode = str(data.get("exec_mode"))
        return {
            LOGBOOK_ENTRY_NAME: soul_name(data),
            LOGBOOK_ENTRY_MESSAGE: f"now {EXEC_MODES.get(mode, mode)}",
        }

    @callback
    def emotion_update(event: Event) -> dict[str, str]:
        data = event.data
        emotion = data.get("soul_emotion") or {}
        return {
            LOGBOOK_ENTRY_NAME: soul_name(data),
            LOGBOOK_ENTRY_MESSAGE: (
                f"showed its emotion to {data.get('terminal_id')} (pleasure "
                f"{emotion.get('p')}, arousal {emotion.get('a')}, dominance "
                f"{emotion.get('d')}; {data.get('exec_mode')})"
            ),
        }

    @callback
    def evolution_request(event: Event) -> dict[str, str]:
        # Not the request itself: the navigator's model wrote it from one
        # user's conversation, and every user reads the logbook (black box,
        # 2026-11-29). Automations read it from the event; the journal keeps
        # it for the conversation's user and administrators.
        return {
            LOGBOOK_ENTRY_NAME: soul_name(event.data),
            LOGBOOK_ENTRY_MESSAGE: "wishes it could grow",
        }

    async_describe_event(DOMAIN, EVENT_USER_EMOTION, user_emotion)
    async_describe_event(DOMAIN, EVENT_EVOLUTION_REQUEST, evolution_request)
    async_describe_event(DOMAIN, EVENT_MOOD_CHANGED, mood_changed)
    async_describe_event(DOMAIN, EVENT_EXEC_MODE_CHANGED, exec_mode_changed)
    async_describe_event(DOMAIN, EVENT_EMOTION_UPDATE, emotion_update)
