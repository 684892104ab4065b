"""Soul's Home Assistant WebSocket commands: the journal, the souls, the panel's talk.

The Soul panel and card (docs/panel.md) use only these.

- ``soul/events/list`` — a page of stored events (the filters of
  ``GET /api/soul/v1/events``, with ``event_types`` for ``type``), newest
  first.
- ``soul/events/subscribe`` — every new event from now on, optionally of one
  soul or of some ``event_types``, as ``event`` messages until unsubscribed (the panel
  uses it). A reload of Soul ends the stream (the client subscribes again).

- ``soul/souls/list`` — the souls the caller sees, each with its emotion,
  mood and willingness, baseline, bodies and their connectivity, and the user
  emotion last recognised.
- ``soul/souls/subscribe`` — the same list at once (``{"souls": [...]}``),
  again whenever souls or bindings change, and one soul (``{"soul": {...}}``)
  whenever its emotion or a body's connectivity changes, at most every
  ``SOUL_PUSH_INTERVAL`` seconds per soul (the last change is never lost).
- ``soul/bodies/list`` — the bodies of the souls the caller sees (every body
  for administrators): skills, intent catalog, the intent filter's last
  decisions, invocation counts and latency.
- ``soul/chat`` — one chat turn with a soul through a body (or none), as
  ``POST /api/soul/v1/chat`` with channel ``panel``; ``ChatError``s are
  ``invalid_format`` (400), ``unauthorized`` (403), ``not_found`` (404) and
  ``conflict`` (409).

Users see their own and shared souls' events, administrators every soul's
(an event of no soul, or of a soul since deleted, too); the inner voice is
for administrators only. Error codes: ``invalid_format`` (a bad filter),
``not_ready`` (Soul is not set up), ``journal_unavailable`` (the journal
cannot be read now), ``too_many_subscriptions`` (more than
``MAX_SUBSCRIPTIONS`` streams on one connection). A page is read and
encoded in the executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import time
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.json import json_bytes
from homeassistant.util.hass_dict import HassKey
import voluptuous as vol

from .access import principal_of
from .const import DOMAIN
from .core.access import AccessError, Principal
from .core.body_stats import DecisionLog
from .core.chat_request import MAX_ID, MAX_TEXT, ChatError
from .core.cognition.events import MAX_EVENT_TYPES, Event, EventType, parse_query
from .core.cognition.journal import stored_form
from .core.registry import Change, Terminal
from .core.souls import Soul, SoulEvent
from .helpers import find_loaded_entry
from .journal import JournalReadError, async_read_events_json, for_reader
from .models import SoulConfigEntry

# Streams one connection may hold: each is one more listener every event visits.
MAX_SUBSCRIPTIONS = 16
# Names in ``event_types`` (five types; the length is checked before the names).
_TYPES = vol.All(
    vol.Length(max=MAX_EVENT_TYPES), [vol.In([t.value for t in EventType])]
)

_QUERY: dict[str | vol.Marker, Any] = {
    vol.Optional("soul_id"): str,
    vol.Optional("session_id"): str,
    vol.Optional("trace_id"): str,
    # "type" names the command: the filter is "event_types".
    vol.Optional("event_types"): _TYPES,
    vol.Optional("since"): vol.Any(str, vol.Coerce(float)),
    vol.Optional("until"): vol.Any(str, vol.Coerce(float)),
    vol.Optional("limit"): vol.Coerce(int),
    vol.Optional("before"): vol.Coerce(int),
}


# Seconds between two pushes of one soul to one subscriber (a browser needs no more).
SOUL_PUSH_INTERVAL = 0.5
# Soul streams one connection may hold (each is a listener of every soul change).
MAX_SOUL_SUBSCRIPTIONS = 8
# What the panel shows of a body's skills and intent catalog.
MAX_LISTED = 200
MAX_DESCRIPTION = 300
_ID = vol.All(str, vol.Length(min=1, max=MAX_ID))
_CHAT_ERRORS = {400: "invalid_format", 403: "unauthorized", 404: "not_found"}


@dataclass(slots=True)
class _Seen:
    """What Soul saw of the loaded entry, for the panel: kept while it is loaded."""

    # soul id → the user emotion last recognised (with when and its trace).
    user_emotions: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: DecisionLog = field(default_factory=DecisionLog)


_SEEN: HassKey[_Seen] = HassKey(f"{DOMAIN}_panel_seen")


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the commands (once; they find the loaded entry when called)."""
    websocket_api.async_register_command(hass, ws_list_events)
    websocket_api.async_register_command(hass, ws_subscribe_events)
    websocket_api.async_register_command(hass, ws_list_souls)
    websocket_api.async_register_command(hass, ws_subscribe_souls)
    websocket_api.async_register_command(hass, ws_list_bodies)
    websocket_api.async_register_command(hass, ws_chat)


@callback
def async_watch_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> CALLBACK_TYPE:
    """Keep the last user emotion of each soul and bodies' decisions; return the stop."""
    runtime = entry.runtime_data
    seen = hass.data[_SEEN] = _Seen()

    @callback
    def soul_changed(event: SoulEvent) -> None:
        if event.user_emotion is None:
            return
        emotion = event.user_emotion
        seen.user_emotions[event.soul_id] = {
            "emotion": str(emotion.get("emotion")),
            **{k: _number(emotion.get(k)) for k in ("intensity", "p", "a", "d")},
            "terminal_id": event.terminal_id,
            "trace_id": event.trace_id,
            "at": event.snapshot.at,
        }

    @callback
    def terminal_changed(terminal: Terminal, change: Change) -> None:
        if change is Change.DECISION and terminal.last_decision is not None:
            seen.decisions.record(terminal.terminal_id, terminal.last_decision)

    stops = (
        runtime.souls.subscribe(soul_changed),
        runtime.registry.subscribe(terminal_changed),
    )

    @callback
    def stop() -> None:
        for unsubscribe in stops:
            unsubscribe()
        if hass.data.get(_SEEN) is seen:
            del hass.data[_SEEN]

    return stop


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _seen(hass: HomeAssistant) -> _Seen:
    return hass.data.get(_SEEN) or _Seen()


def _bodies_of(entry: SoulConfigEntry, soul_id: str) -> list[dict[str, Any]]:
    """Return a soul's bodies with their connectivity."""
    registry = entry.runtime_data.registry
    bodies = []
    for terminal_id in entry.runtime_data.souls.terminals_of(soul_id):
        terminal = registry.get(terminal_id)
        bodies.append(
            {
                "terminal_id": terminal_id,
                "known": terminal is not None and terminal.registered,
                "connected": terminal is not None and terminal.available,
                "online": None if terminal is None else terminal.online,
                "stale": terminal is not None and terminal.stale,
            }
        )
    return bodies


def _soul_view(
    hass: HomeAssistant, entry: SoulConfigEntry, soul: Soul
) -> dict[str, Any]:
    """Return one soul as the panel shows it."""
    hub = entry.runtime_data.souls
    snapshot = hub.snapshot(soul.soul_id)
    return {
        "soul_id": soul.soul_id,
        "name": soul.name,
        "mbti_type": soul.mbti,
        "user_id": soul.user_id,
        "baseline": dict(zip("pad", soul.persona.baseline, strict=True)),
        "emotion": None if snapshot is None else snapshot.as_dict(),
        "at": None if snapshot is None else snapshot.at,
        "bodies": _bodies_of(entry, soul.soul_id),
        "user_emotion": _seen(hass).user_emotions.get(soul.soul_id),
    }


def _visible(entry: SoulConfigEntry, principal: Principal) -> list[Soul]:
    """Return the souls ``principal`` sees, by name."""
    souls = entry.runtime_data.souls.souls.values()
    return sorted(
        (s for s in souls if principal.sees(s.user_id)),
        key=lambda s: (s.name.casefold(), s.soul_id),
    )


@websocket_api.websocket_command({vol.Required("type"): "soul/souls/list"})
@callback
def ws_list_souls(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Answer the souls the caller sees."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    principal = principal_of(connection.user)
    connection.send_result(
        msg["id"],
        {"souls": [_soul_view(hass, entry, s) for s in _visible(entry, principal)]},
    )


class _SoulStream:
    """One ``soul/souls/subscribe``: pushes, throttled per soul."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: SoulConfigEntry,
        connection: websocket_api.ActiveConnection,
        msg_id: int,
    ) -> None:
        self.hass = hass
        self.entry = entry
        self.connection = connection
        self.msg_id = msg_id
        self.principal = principal_of(connection.user)
        self.last_push: dict[str, float] = {}
        self.waiting: set[str] = set()
        self.timer: CALLBACK_TYPE | None = None
        self.stops: list[Callable[[], None]] = []
        self.forget: Callable[[], None] = self.stop

    def start(self) -> None:
        runtime = self.entry.runtime_data
        self.stops = [
            runtime.souls.subscribe(self.soul_changed),
            runtime.souls.subscribe_bindings(self.push_all),
            runtime.registry.subscribe(self.terminal_changed),
        ]
        self.push_all()

    @callback
    def __call__(self) -> None:
        """Unsubscribe."""
        self.forget()

    @callback
    def stop(self) -> None:
        """Stop listening (idempotent)."""
        for stop in self.stops:
            stop()
        self.stops = []
        if self.timer is not None:
            self.timer()
            self.timer = None

    def send(self, data: Mapping[str, Any]) -> None:
        self.connection.send_message(
            websocket_api.messages.construct_event_message(
                self.msg_id, json_bytes(data)
            )
        )

    @callback
    def push_all(self) -> None:
        souls = _visible(self.entry, self.principal)
        now = time.monotonic()
        for soul in souls:
            self.last_push[soul.soul_id] = now
        self.waiting.clear()
        self.send({"souls": [_soul_view(self.hass, self.entry, s) for s in souls]})

    @callback
    def soul_changed(self, event: SoulEvent) -> None:
        self.changed(event.soul_id)

    @callback
    def terminal_changed(self, terminal: Terminal, change: Change) -> None:
        if change in (Change.HEARTBEAT, Change.DECISION):
            return
        if (
            soul := self.entry.runtime_data.souls.soul_of(terminal.terminal_id)
        ) is None:
            return
        self.changed(soul.soul_id)

    @callback
    def changed(self, soul_id: str) -> None:
        soul = self.entry.runtime_data.souls.soul(soul_id)
        if soul is None or not self.principal.sees(soul.user_id):
            return
        now = time.monotonic()
        due = self.last_push.get(soul_id, float("-inf")) + SOUL_PUSH_INTERVAL
        if now >= due and soul_id not in self.waiting:
            self.push(soul)
            return
        self.waiting.add(soul_id)
        if self.timer is None:
            self.timer = async_call_later(self.hass, max(due - now, 0.05), self.flush)

    @callback
    def flush(self, _now: Any = None) -> None:
        self.timer = None
        waiting, self.waiting = self.waiting, set()
        for soul_id in waiting:
            if (soul := self.entry.runtime_data.souls.soul(soul_id)) is not None:
                self.push(soul)

    def push(self, soul: Soul) -> None:
        self.last_push[soul.soul_id] = time.monotonic()
        self.send({"soul": _soul_view(self.hass, self.entry, soul)})


@websocket_api.websocket_command({vol.Required("type"): "soul/souls/subscribe"})
@callback
def ws_subscribe_souls(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Stream the souls the caller sees as they feel."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    streams = sum(isinstance(u, _SoulStream) for u in connection.subscriptions.values())
    if streams >= MAX_SOUL_SUBSCRIPTIONS:
        connection.send_error(
            msg["id"],
            "too_many_subscriptions",
            f"at most {MAX_SOUL_SUBSCRIPTIONS} soul streams per connection",
        )
        return
    stream = _SoulStream(hass, entry, connection, msg["id"])
    stream.forget = _track(hass, entry, connection, msg["id"], stream.stop)
    connection.subscriptions[msg["id"]] = stream
    connection.send_result(msg["id"])
    stream.start()


def _text(value: Any, limit: int = MAX_DESCRIPTION) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _body_view(
    hass: HomeAssistant, entry: SoulConfigEntry, terminal: Terminal
) -> dict[str, Any]:
    """Return one body as the panel's Bodies tab shows it."""
    runtime = entry.runtime_data
    skills = terminal.skills
    catalog = terminal.catalog
    soul = runtime.souls.soul_of(terminal.terminal_id)
    return {
        "terminal_id": terminal.terminal_id,
        "soul_id": None if soul is None else soul.soul_id,
        "soul_name": None if soul is None else soul.name,
        "connected": terminal.available,
        "online": terminal.online,
        "stale": terminal.stale,
        "last_heartbeat": (
            None
            if terminal.last_heartbeat is None
            else terminal.last_heartbeat.timestamp()
        ),
        "model": None if skills is None else skills.model,
        "manufacturer": None if skills is None else skills.manufacturer,
        "firmware": None if skills is None else skills.firmware,
        "skill_version": None if skills is None else skills.skill_version,
        "skills": [
            {"name": s.name, "description": _text(s.description)}
            for s in (() if skills is None else skills.skills[:MAX_LISTED])
        ],
        "catalog_version": None if catalog is None else catalog.catalog_version,
        "intents": [
            {
                "id": _text(i.get("id")),
                "name": _text(i.get("name") or i.get("intent_name")),
                "skill": _text(i.get("skill")),
            }
            for i in (() if catalog is None else catalog.intents[:MAX_LISTED])
        ],
        "decisions": _seen(hass).decisions.of(terminal.terminal_id),
        "invoke": runtime.invoker.stats.of(terminal.terminal_id).as_dict(),
    }


@websocket_api.websocket_command(
    {vol.Required("type"): "soul/bodies/list", vol.Optional("terminal_id"): _ID}
)
@callback
def ws_list_bodies(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Answer the bodies of the souls the caller sees (administrators: all)."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    principal = principal_of(connection.user)
    runtime = entry.runtime_data
    bodies = []
    for terminal in runtime.registry:
        if "terminal_id" in msg and terminal.terminal_id != msg["terminal_id"]:
            continue
        soul = runtime.souls.soul_of(terminal.terminal_id)
        if not principal.is_admin and (
            soul is None or not principal.sees(soul.user_id)
        ):
            continue
        bodies.append(_body_view(hass, entry, terminal))
    bodies.sort(key=lambda b: b["terminal_id"])
    connection.send_result(msg["id"], {"bodies": bodies})


@websocket_api.websocket_command(
    {
        vol.Required("type"): "soul/chat",
        vol.Required("text"): vol.All(str, vol.Length(min=1, max=MAX_TEXT)),
        vol.Optional("soul_id"): _ID,
        vol.Optional("terminal_id"): _ID,
        vol.Optional("session_id"): _ID,
    }
)
@websocket_api.async_response
async def ws_chat(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Run one chat turn as the caller, through the panel."""
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    principal = principal_of(connection.user)
    try:
        principal.require_control("chat with a soul")
    except AccessError as err:
        connection.send_error(msg["id"], "unauthorized", str(err))
        return
    user = principal.user_id or "system"
    body: dict[str, Any] = {
        "session_id": msg.get("session_id")
        or f"panel-{user[:16]}-{msg.get('soul_id') or msg.get('terminal_id')}"[:MAX_ID],
        "user_id": principal.user_id,
        "inputs": [{"type": "keyboard_text", "text": msg["text"]}],
    }
    for key in ("soul_id", "terminal_id"):
        if key in msg:
            body[key] = msg[key]
    try:
        response = await entry.runtime_data.chat.chat(
            body, soul_only=True, caller=principal, channel="panel"
        )
    except ChatError as err:
        code = _CHAT_ERRORS.get(
            err.status, "conflict" if err.status == 409 else "invalid_format"
        )
        connection.send_error(msg["id"], code, str(err))
        return
    connection.send_result(msg["id"], response)


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


# Streams of each loaded entry, ended (with an {"ended": true} event) when it
# unloads: a reloaded Soul has a new runtime, and a stream of the old one
# would go quiet without the page knowing it should subscribe again.
_STREAMS: Final = f"{DOMAIN}_streams"


def _track(
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


class _Unsubscribe:
    """A stream's unsubscriber, told apart from the connection's other ones."""

    def __init__(self, unsubscribe: Callable[[], None]) -> None:
        self._unsubscribe = unsubscribe

    def __call__(self) -> None:
        self._unsubscribe()


@websocket_api.websocket_command(
    {
        vol.Required("type"): "soul/events/subscribe",
        vol.Optional("soul_id"): str,
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
    if (entry := _loaded(hass, connection, msg)) is None:
        return
    streams = sum(
        isinstance(u, _Unsubscribe) for u in connection.subscriptions.values()
    )
    if streams >= MAX_SUBSCRIPTIONS:
        connection.send_error(
            msg["id"],
            "too_many_subscriptions",
            f"at most {MAX_SUBSCRIPTIONS} event streams per connection",
        )
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
        if not principal.is_admin:
            # As a read of the journal: only events of souls the caller sees.
            soul = runtime.souls.soul(event.soul_id) if event.soul_id else None
            if soul is None or not principal.sees(soul.user_id):
                return
        try:
            data = json_bytes({"event": for_reader(principal, event.as_dict())})
        except (TypeError, ValueError):  # a payload JSON cannot hold, as stored
            data = json_bytes({"event": for_reader(principal, stored_form(event))})
        connection.send_message(
            websocket_api.messages.construct_event_message(msg["id"], data)
        )

    connection.subscriptions[msg["id"]] = _Unsubscribe(
        _track(hass, entry, connection, msg["id"], runtime.events.subscribe(forward))
    )
    connection.send_result(msg["id"])
