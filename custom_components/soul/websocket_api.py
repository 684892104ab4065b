"""Soul's Home Assistant WebSocket commands: the event journal, live (docs/cognition.md).

- ``soul/events/list`` — a page of stored events (the filters of
  ``GET /api/soul/v1/events``, with ``event_types`` for ``type``), newest
  first.
- ``soul/events/subscribe`` — every new event from now on, optionally of one
  soul or of some ``event_types``, as ``event`` messages until unsubscribed (the panel
  uses it). A reload of Soul ends the stream (the client subscribes again).

Users see their own and shared souls' events, administrators every soul's;
the inner voice is for administrators only.
"""

from __future__ import annotations

from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
import voluptuous as vol

from .access import principal_of
from .core.cognition.events import Event, EventType, parse_query
from .helpers import find_loaded_entry
from .journal import async_read_events, for_reader
from .models import SoulConfigEntry

_QUERY: dict[str | vol.Marker, Any] = {
    vol.Optional("soul_id"): str,
    vol.Optional("session_id"): str,
    vol.Optional("trace_id"): str,
    # "type" names the command: the filter is "event_types".
    vol.Optional("event_types"): [vol.In([t.value for t in EventType])],
    vol.Optional("since"): vol.Any(str, vol.Coerce(float)),
    vol.Optional("until"): vol.Any(str, vol.Coerce(float)),
    vol.Optional("limit"): vol.Coerce(int),
    vol.Optional("before"): vol.Coerce(int),
}


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the commands (once; they find the loaded entry when called)."""
    websocket_api.async_register_command(hass, ws_list_events)
    websocket_api.async_register_command(hass, ws_subscribe_events)


def _loaded(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> SoulConfigEntry | None:
    """Return the loaded hub entry, or answer ``not_ready``."""
    if (entry := find_loaded_entry(hass)) is None:
        connection.send_error(msg["id"], "not_ready", "Soul is not set up")
    return entry


@websocket_api.websocket_command({vol.Required("type"): "soul/events/list", **_QUERY})
@websocket_api.async_response
async def ws_list_events(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Answer one page of events."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    try:
        query = parse_query({**msg, "type": msg.get("event_types")})
    except ValueError as err:
        connection.send_error(msg["id"], "invalid_format", str(err))
        return
    runtime = entry.runtime_data
    page = await async_read_events(
        hass, runtime.journal, runtime.souls, principal_of(connection.user), query
    )
    connection.send_result(msg["id"], {"events": page.events, "next": page.next})


@websocket_api.websocket_command(
    {
        vol.Required("type"): "soul/events/subscribe",
        vol.Optional("soul_id"): str,
        vol.Optional("event_types"): [vol.In([t.value for t in EventType])],
    }
)
@callback
def ws_subscribe_events(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Stream new events the caller may see."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    runtime = entry.runtime_data
    principal = principal_of(connection.user)
    soul_id = msg.get("soul_id")
    kinds = frozenset(msg.get("event_types") or ())

    @callback
    def forward(event: Event) -> None:
        if soul_id is not None and event.soul_id != soul_id:
            return
        if kinds and event.type.value not in kinds:
            return
        soul = runtime.souls.soul(event.soul_id) if event.soul_id else None
        owner = soul.user_id if soul is not None else None
        if not principal.sees(owner):
            return
        connection.send_message(
            websocket_api.event_message(
                msg["id"], {"event": for_reader(principal, event.as_dict())}
            )
        )

    connection.subscriptions[msg["id"]] = runtime.events.subscribe(forward)
    connection.send_result(msg["id"])
