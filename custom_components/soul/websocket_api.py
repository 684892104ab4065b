"""Soul's journal over Home Assistant's WebSocket API (docs/cognition.md).

- ``soul/events/list`` — a page of stored events (the filters of
  ``GET /api/soul/v1/events``, with ``event_types`` for ``type``), newest
  first.
- ``soul/events/subscribe`` — every new event from now on, optionally of one
  soul or of some ``event_types``, as ``event`` messages until unsubscribed (the panel
  uses it). A reload of Soul ends the stream with ``{"ended": true}`` (the
  client subscribes again).

Users see what a read shows them (``journal.may_read``: their own souls'
events, on a shared soul their own sessions'), administrators every soul's
(an event of no soul, or of a soul since deleted, too); the inner voice is
for administrators only. Error codes: ``invalid_format`` (a bad filter),
``not_ready`` (Soul is not set up), ``journal_unavailable`` (the journal
cannot be read now), ``too_many_subscriptions`` (more than
``MAX_SUBSCRIPTIONS`` streams on one connection). A page is read and
encoded in the executor. The panel's own commands are in
``websocket_panel.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.json import json_bytes
import voluptuous as vol

from .access import principal_of
from .core.cognition.events import (
    MAX_EVENT_TYPES,
    MAX_ID,
    Event,
    EventType,
    parse_query,
)
from .core.cognition.journal import stored_form
from .journal import JournalReadError, async_read_events_json, for_reader, may_read
from .streams import loaded_entry_for, refused_beyond, track_stream

# Streams one connection may hold: each is one more listener every event visits.
MAX_SUBSCRIPTIONS = 16
# Names in ``event_types`` (five types; the length is checked before the names).
_TYPES = vol.All(
    vol.Length(max=MAX_EVENT_TYPES), [vol.In([t.value for t in EventType])]
)


def _number(value: Any) -> float:
    """Return a JSON number as a float; ``true`` is no time (it was 1.0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise vol.Invalid("expected a number")
    return float(value)


def _whole(value: Any) -> int:
    """Return a whole JSON number; ``2.9`` is no count (it was 2)."""
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    ):
        raise vol.Invalid("expected a whole number")
    return int(value)


_QUERY: dict[str | vol.Marker, Any] = {
    vol.Optional("soul_id"): str,
    vol.Optional("session_id"): str,
    vol.Optional("trace_id"): str,
    # "type" names the command: the filter is "event_types".
    vol.Optional("event_types"): _TYPES,
    vol.Optional("since"): vol.Any(str, _number),
    vol.Optional("until"): vol.Any(str, _number),
    vol.Optional("limit"): _whole,
    vol.Optional("before"): _whole,
}


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the journal's commands (they find the loaded entry when called)."""
    websocket_api.async_register_command(hass, ws_list_events)
    websocket_api.async_register_command(hass, ws_subscribe_events)


@websocket_api.websocket_command({vol.Required("type"): "soul/events/list", **_QUERY})
@websocket_api.async_response
async def ws_list_events(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Answer one page of events."""
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
        return
    try:
        query = parse_query({**msg, "type": msg.get("event_types")})
    except ValueError as err:
        connection.send_error(msg["id"], "invalid_format", str(err))
        return
    runtime = entry.runtime_data
    try:
        page = await async_read_events_json(
            hass, runtime.journal, runtime.souls, principal_of(connection.user), query
        )
    except JournalReadError as err:
        connection.send_error(msg["id"], "journal_unavailable", str(err))
        return
    connection.send_message(
        websocket_api.messages.construct_result_message(msg["id"], page)
    )


class _Unsubscribe:
    """A stream's unsubscriber, told apart from the connection's other ones."""

    def __init__(self, unsubscribe: Callable[[], None]) -> None:
        self._unsubscribe = unsubscribe

    def __call__(self) -> None:
        self._unsubscribe()


@websocket_api.websocket_command(
    {
        vol.Required("type"): "soul/events/subscribe",
        # Kept while the stream lives (a black-box run sent 1 MB).
        vol.Optional("soul_id"): vol.All(str, vol.Length(max=MAX_ID)),
        vol.Optional("event_types"): _TYPES,
    }
)
@callback
def ws_subscribe_events(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Stream new events the caller may see."""
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
        return
    if refused_beyond(
        connection, msg, _Unsubscribe, MAX_SUBSCRIPTIONS, "event streams"
    ):
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
        if not may_read(principal, runtime.souls, event):  # as a read of the journal
            return
        try:
            data = json_bytes({"event": for_reader(principal, event.as_dict())})
        except (TypeError, ValueError):  # a payload JSON cannot hold, as stored
            data = json_bytes({"event": for_reader(principal, stored_form(event))})
        connection.send_message(
            websocket_api.messages.construct_event_message(msg["id"], data)
        )

    connection.subscriptions[msg["id"]] = _Unsubscribe(
        track_stream(
            hass, entry, connection, msg["id"], runtime.events.subscribe(forward)
        )
    )
    connection.send_result(msg["id"])
