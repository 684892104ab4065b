"""What Soul's WebSocket commands share: the loaded entry, and streams that end.

``loaded_entry_for`` answers ``not_ready`` while Soul is not set up;
``refused_beyond`` answers ``too_many_subscriptions`` past a kind's limit;
``track_stream`` remembers a stream of the loaded entry and ends it — its
listeners dropped, a last ``{"ended": true}`` event sent — when the entry
unloads, so a page subscribes again to the new runtime after a reload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.json import json_bytes

from .const import DOMAIN
from .helpers import find_loaded_entry
from .models import SoulConfigEntry


def loaded_entry_for(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> SoulConfigEntry | None:
    """Return the loaded hub entry, or answer ``not_ready``."""
    if (entry := find_loaded_entry(hass)) is None:
        connection.send_error(msg["id"], "not_ready", "Soul is not set up")
    return entry


# Streams of each loaded entry, ended (with an {"ended": true} event) when it
# unloads: a reloaded Soul has a new runtime, and a stream of the old one
# would go quiet without the page knowing it should subscribe again.
_STREAMS: Final = f"{DOMAIN}_streams"


def track_stream(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    connection: websocket_api.ActiveConnection,
    msg_id: int,
    stop: Callable[[], None],
) -> Callable[[], None]:
    """Return ``stop`` that also forgets the stream; end it when ``entry`` unloads."""
    streams: dict[str, set[Callable[[], None]]] = hass.data.setdefault(_STREAMS, {})
    if entry.entry_id not in streams:
        streams[entry.entry_id] = set()

        @callback
        def end_all() -> None:
            for end in list(streams.pop(entry.entry_id, ())):
                end()

        entry.async_on_unload(end_all)
    mine = streams[entry.entry_id]

    @callback
    def end() -> None:
        stop()
        connection.send_message(
            websocket_api.messages.construct_event_message(
                msg_id, json_bytes({"ended": True})
            )
        )

    mine.add(end)

    @callback
    def unsubscribe() -> None:
        mine.discard(end)
        stop()

    return unsubscribe


def refused_beyond(
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
    kind: type,
    limit: int,
    what: str,
) -> bool:
    """Answer ``too_many_subscriptions`` when ``limit`` streams of ``kind`` are open."""
    streams = sum(isinstance(u, kind) for u in connection.subscriptions.values())
    if streams < limit:
        return False
    connection.send_error(
        msg["id"], "too_many_subscriptions", f"at most {limit} {what} per connection"
    )
    return True
