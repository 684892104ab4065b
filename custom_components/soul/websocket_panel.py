"""The Soul panel's and card's WebSocket commands (docs/panel.md).

- ``soul/souls/list`` — the souls the caller sees, each with its emotion,
  mood and willingness, baseline, bodies and their connectivity, and the user
  emotion last recognised.
- ``soul/souls/subscribe`` — the same list at once (``{"souls": [...]}``),
  again whenever souls or bindings change, and one soul (``{"soul": {...}}``)
  whenever its emotion or a body's connectivity changes, at most every
  ``SOUL_PUSH_INTERVAL`` seconds per soul (the last change is never lost); a
  reload of Soul ends it with ``{"ended": true}``.
- ``soul/bodies/list`` — the bodies of the souls the caller sees (every body
  for administrators): skills, intent catalog, the intent filter's last
  decisions, invocation counts and latency.
- ``soul/chat`` — one chat turn with a soul through a body (or none), as
  ``POST /api/soul/v1/chat`` with channel ``panel``; ``ChatError``s are
  ``invalid_format`` (400), ``unauthorized`` (403), ``not_found`` (404) and
  ``conflict`` (409).

Users see their own and shared souls, administrators every soul;
``not_ready`` while Soul is not set up, ``too_many_subscriptions`` beyond
``MAX_SOUL_SUBSCRIPTIONS`` soul streams on one connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import time
from typing import Any

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
from .core.soul import Soul
from .core.soul_events import SoulEvent
from .core.terminal import Change, Terminal
from .helpers import request_in_flight
from .models import SoulConfigEntry
from .streams import loaded_entry_for, refused_beyond, track_stream

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

    # soul id → the user emotion last recognised (with when and its trace),
    # and who may see it (``_user_emotion``).
    user_emotions: dict[str, tuple[dict[str, Any], str | None]] = field(
        default_factory=dict
    )
    decisions: DecisionLog = field(default_factory=DecisionLog)


_SEEN: HassKey[_Seen] = HassKey(f"{DOMAIN}_panel_seen")


@callback
def async_register_panel_commands(hass: HomeAssistant) -> None:
    """Register the panel's commands (they find the loaded entry when called)."""
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
        heard = {
            "emotion": str(emotion.get("emotion")),
            **{k: _number(emotion.get(k)) for k in ("intensity", "p", "a", "d")},
            "terminal_id": event.terminal_id,
            "trace_id": event.trace_id,
            "at": event.snapshot.at,
        }
        # Through a body, every user sees it anyway (the body's event entity).
        speaker = None if event.terminal_id else event.user_id
        seen.user_emotions[event.soul_id] = (heard, speaker)

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
    hass: HomeAssistant, entry: SoulConfigEntry, soul: Soul, principal: Principal
) -> dict[str, Any]:
    """Return one soul as the panel shows it to ``principal``."""
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
        "user_emotion": _user_emotion(hass, soul.soul_id, principal),
        # a read-only user sees the soul but may not talk to it (soul/chat)
        "may_chat": principal.may_control,
    }


def _user_emotion(
    hass: HomeAssistant, soul_id: str, principal: Principal
) -> dict[str, Any] | None:
    """Return the soul's last heard user emotion, if ``principal`` may see it.

    What a user said without a body is theirs: another user of a shared soul
    saw "anger · +1.00" heard from an administrator's panel chat (black box).
    """
    heard, speaker = _seen(hass).user_emotions.get(soul_id, (None, None))
    return heard if principal.sees(speaker) else None


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
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
        return
    principal = principal_of(connection.user)
    connection.send_result(
        msg["id"],
        {
            "souls": [
                _soul_view(hass, entry, s, principal)
                for s in _visible(entry, principal)
            ]
        },
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
        self.send(
            {
                "souls": [
                    _soul_view(self.hass, self.entry, s, self.principal) for s in souls
                ]
            }
        )

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
        self.send({"soul": _soul_view(self.hass, self.entry, soul, self.principal)})


@websocket_api.websocket_command({vol.Required("type"): "soul/souls/subscribe"})
@callback
def ws_subscribe_souls(
    hass: HomeAssistant,
    connection: websocket_api.ActiveConnection,
    msg: dict[str, Any],
) -> None:
    """Stream the souls the caller sees as they feel."""
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
        return
    if refused_beyond(
        connection, msg, _SoulStream, MAX_SOUL_SUBSCRIPTIONS, "soul streams"
    ):
        return
    stream = _SoulStream(hass, entry, connection, msg["id"])
    stream.forget = track_stream(hass, entry, connection, msg["id"], stream.stop)
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
                # A catalog intent's name (checked as one line), else its id;
                # "intent_name" is a response's field, unchecked in a catalog.
                "name": _text(i.get("name", i.get("id"))),
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
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
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
    if (entry := loaded_entry_for(hass, connection, msg)) is None:
        return
    principal = principal_of(connection.user)
    try:
        principal.require_control("chat with a soul")
    except AccessError as err:
        connection.send_error(msg["id"], "unauthorized", str(err))
        return
    user = principal.user_id or "system"
    own = f"panel-{user[:16]}-"
    if (asked := msg.get("session_id")) and (
        asked.startswith("panel-") and not asked.startswith(own)
    ):
        connection.send_error(
            msg["id"], "unauthorized", "panel session ids are their users' own"
        )
        return
    body: dict[str, Any] = {
        "session_id": asked
        or f"{own}{msg.get('soul_id') or msg.get('terminal_id')}"[:MAX_ID],
        "user_id": principal.user_id,
        "inputs": [{"type": "keyboard_text", "text": msg["text"]}],
    }
    for key in ("soul_id", "terminal_id"):
        if key in msg:
            body[key] = msg[key]
    try:
        with request_in_flight(hass, connection.user) as refused:
            if refused is not None:  # chats waiting for the model, as over HTTP
                connection.send_error(msg["id"], "too_many_requests", refused)
                return
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
