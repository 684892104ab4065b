"""The Star Protocol hub inside Home Assistant: WebSocket endpoints, auth, souls as agents.

Endpoints (Home Assistant's HTTP server):

- ``/api/soul/star/env/{env_id}`` — an environment;
- ``/api/soul/star/env/{env_id}/agent/{agent_id}`` — an agent;
- ``/api/soul/star/human/{human_id}`` — a human.

These are the spec's paths (``transport.PATHS``) below ``/api/soul/star``: a
client written for the original Star hub connects with the base URL
``ws://HOST:8123/api/soul/star``. They are not registered at the root of Home
Assistant's URL space, which belongs to Home Assistant (docs/decisions.md).

A client authenticates with a Home Assistant access token, in an
``Authorization: Bearer`` header or — for browsers — in a first frame
``{"type": "auth", "access_token": …}`` (answered ``auth_ok`` or
``auth_invalid``), as Home Assistant's own WebSocket API does; otherwise the
connection is closed. Routing is ``core.star.hub.StarHub``'s. Each connection
has a bounded send queue; a client that cannot keep up is disconnected.

Every soul is the agent ``soul_<soul_id>`` in the environment ``home``, in
process (it never times out): an ``action`` ``chat`` (``{"text"}``) runs the
chat pipeline as the sender's Home Assistant user (an administrator may name
another ``user_id``) and is answered with an ``outcome`` (reply and executed
skills); ``event`` messages addressed to a soul join its Star session's
context. The agent ids ``soul_*`` and the environment ``home`` are reserved
for Soul; a human id belongs to the first user who connected as it (kept in
``.storage/soul.star``); docs/security.md has the whole model.
"""

from __future__ import annotations

from collections.abc import Callable
import contextlib
from datetime import timedelta
from typing import Any

from aiohttp import web
from homeassistant.components.http import (
    KEY_AUTHENTICATED,
    KEY_HASS,
    KEY_HASS_USER,
    HomeAssistantView,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import async_track_time_interval

from .access import principal_of
from .const import LOGGER
from .core import untrusted
from .core.access import AccessError, Principal
from .core.chat_request import MAX_TEXT, ChatError, SessionOwnerError
from .core.star.hub import HEARTBEAT_INTERVAL, Connection, Identity, IdentityError
from .core.star.transport import (
    PATHS,
    SEND_QUEUE,
    frame_auth,
    identity_from,
    pump,
    websocket,
)
from .helpers import HOME_ENV, find_loaded_entry, signal_souls_changed, soul_agent_id
from .models import SoulConfigEntry

MAX_EVENT_NOTE_BYTES = 4096  # an event kept in a session's context
MAX_CHATS_PER_SOUL = 4  # chat actions one soul agent runs at once
PREFIX = "/api/soul/star"  # the hub's base URL; the spec's paths follow


class _StarView(HomeAssistantView):
    """Accepts one kind of Star client; authentication is done here (header or frame)."""

    requires_auth = False

    async def get(self, request: web.Request, **ids: str) -> web.StreamResponse:
        """Connect the client the path names."""
        try:
            identity = identity_from(ids)
        except ValueError as err:
            return web.json_response({"error": str(err)}, status=400)
        hass: HomeAssistant = request.app[KEY_HASS]
        if (entry := find_loaded_entry(hass)) is None:
            return web.json_response({"error": "Soul is not set up"}, status=503)
        hub = entry.runtime_data.star
        if hub.reserved(identity):
            return web.json_response(
                {"error": f"{identity.client_id!r} is reserved for Soul"},
                status=403,
            )
        principal: Principal | None = None
        # Home Assistant's auth middleware has checked a Bearer header already.
        if (
            request.get(KEY_AUTHENTICATED)
            and (user := request.get(KEY_HASS_USER)) is not None
            and user.is_active
        ):
            principal = principal_of(user)
            try:
                await _async_check_identity(hass, entry, identity, principal)
            except IdentityError as err:
                return web.json_response({"error": str(err)}, status=403)
        ws = websocket(hub)
        await ws.prepare(request)
        if principal is None:
            principal = await frame_auth(ws, lambda token: _principal(hass, token))
            if principal is None:
                return ws
            # A refused identity: the pump answers PERMISSION_DENIED and closes.
            with contextlib.suppress(IdentityError):
                await _async_check_identity(hass, entry, identity, principal)
        await pump(
            hub, request, ws, identity, queue_size=SEND_QUEUE, principal=principal
        )
        return ws


async def _async_check_identity(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    identity: Identity,
    principal: Principal,
) -> None:
    """Free a human id whose owner no longer exists, then check the identity."""
    hub = entry.runtime_data.star
    owner = hub.human_owners.get(identity.client_id)
    if (
        identity.client_type == "human"
        and owner is not None
        and await hass.auth.async_get_user(owner) is None
    ):
        del hub.human_owners[identity.client_id]
    hub.check_identity(identity, principal)


def _principal(hass: HomeAssistant, token: Any) -> Principal | None:
    """Return the principal of a valid access token of an active user."""
    if not isinstance(token, str) or not token or len(token) > 4096:
        return None
    refresh_token = hass.auth.async_validate_access_token(token)
    if refresh_token is None or not refresh_token.user.is_active:
        return None
    return principal_of(refresh_token.user)


class StarEnvironmentView(_StarView):
    """``/api/soul/star/env/{env_id}``: an environment."""

    url = PREFIX + PATHS["environment"]
    name = "api:soul:star:env"


class StarAgentView(_StarView):
    """``/api/soul/star/env/{env_id}/agent/{agent_id}``: an agent."""

    url = PREFIX + PATHS["agent"]
    name = "api:soul:star:agent"


class StarHumanView(_StarView):
    """``/api/soul/star/human/{human_id}``: a human."""

    url = PREFIX + PATHS["human"]
    name = "api:soul:star:human"


@callback
def async_register_star_views(hass: HomeAssistant) -> None:
    """Register the Star endpoints (once; they outlive config entries)."""
    for view in (StarEnvironmentView(), StarAgentView(), StarHumanView()):
        hass.http.register_view(view)


class SoulAgents:
    """Every soul as the in-process agent ``soul_<id>`` in ``home``."""

    def __init__(self, hass: HomeAssistant, entry: SoulConfigEntry) -> None:
        """Follow the entry's souls."""
        self.hass = hass
        self.entry = entry
        self._connections: dict[str, Connection] = {}
        self._running: dict[str, int] = {}

    @callback
    def sync(self) -> None:
        """Connect new souls, disconnect removed ones."""
        hub = self.entry.runtime_data.star
        souls = self.entry.runtime_data.souls.souls
        for soul_id in list(self._connections):
            if soul_id not in souls:
                hub.disconnect(self._connections.pop(soul_id))
        for soul_id in souls:
            if soul_id in self._connections and not self._connections[soul_id].closed:
                continue
            identity = Identity("agent", soul_agent_id(soul_id), HOME_ENV)
            self._connections[soul_id] = hub.connect_local(
                identity, self._handler(soul_id)
            )

    @callback
    def stop(self) -> None:
        """Disconnect every soul."""
        for connection in self._connections.values():
            self.entry.runtime_data.star.disconnect(connection)
        self._connections.clear()

    def _handler(self, soul_id: str) -> Callable[[dict[str, Any], Connection], None]:
        @callback
        def handle(envelope: dict[str, Any], sender: Connection) -> None:
            if envelope.get("type") != "message":
                return  # errors addressed to the soul
            payload = envelope.get("payload")
            if not isinstance(payload, dict):
                return
            if payload.get("type") == "event":
                self._note(soul_id, sender, payload)
            elif payload.get("type") == "action":
                self._action(soul_id, sender, payload)

        return handle

    def _note(self, soul_id: str, sender: Connection, payload: dict[str, Any]) -> None:
        """Put an event into the context of the soul's sessions (bounded)."""
        try:
            untrusted.check_json(
                payload, max_bytes=MAX_EVENT_NOTE_BYTES, max_depth=8, what="event"
            )
        except untrusted.UntrustedInputError as err:
            LOGGER.info("Star event for soul %s not kept: %s", soul_id, err)
            return
        # A note goes into conversations only as far as its sender may speak:
        # never to another user's private soul, never from a read-only user,
        # and a user's only into that user's own sessions (a black-box run put
        # a user's note into an administrator's private conversations).
        principal = _principal_of(sender)
        soul = self.entry.runtime_data.souls.soul(soul_id)
        if (
            soul is None
            or not principal.sees(soul.user_id)
            or not principal.may_control
        ):
            LOGGER.info(
                "Star event for soul %s not kept: its sender may not speak to it",
                soul_id,
            )
            return
        note = {
            "type": "event_note",
            "source": sender.identity.as_party(),
            "event": payload,
        }
        for session in self.entry.runtime_data.chat.sessions.values():
            # (the sender's own Star session is its user's: one of these)
            if session.soul_id == soul_id and (
                principal.is_admin or session.user_id == principal.user_id
            ):
                session.context.append(note)

    def _action(
        self, soul_id: str, sender: Connection, payload: dict[str, Any]
    ) -> None:
        if self._running.get(soul_id, 0) >= MAX_CHATS_PER_SOUL:
            self._answer(
                soul_id,
                sender,
                payload,
                {"status": "error", "message": "busy: too many chats at once; retry"},
            )
            return
        self._running[soul_id] = self._running.get(soul_id, 0) + 1

        async def run() -> None:
            try:
                outcome = await self._chat(soul_id, sender, payload)
            finally:
                self._running[soul_id] -= 1
            self._answer(soul_id, sender, payload, outcome)

        self.entry.async_create_background_task(self.hass, run(), "star soul chat")

    def _answer(
        self,
        soul_id: str,
        sender: Connection,
        payload: dict[str, Any],
        outcome: dict[str, Any],
    ) -> None:
        action_id = payload.get("id")
        reply = {
            "type": "message",
            "recipient": sender.identity.as_party(),
            "payload": {
                "type": "outcome",
                "id": action_id if isinstance(action_id, str | int) else None,
                "outcome": outcome,
                "outcome_type": "dict",
            },
        }
        if (connection := self._connections.get(soul_id)) is not None:
            self.entry.runtime_data.star.send_local(connection, reply)

    async def _chat(
        self, soul_id: str, sender: Connection, payload: dict[str, Any]
    ) -> dict[str, Any]:
        if payload.get("action") != "chat":
            return {
                "status": "error",
                "message": f"unknown action {str(payload.get('action'))[:64]!r}",
            }
        parameters = payload.get("parameters")
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, dict):
            return {"status": "error", "message": "parameters must be an object"}
        text = parameters.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            return {
                "status": "error",
                "message": f"parameters.text must be 1 to {MAX_TEXT} characters",
            }
        principal = _principal_of(sender)
        requested = parameters.get("user_id")
        try:
            principal.require_control("chat with a soul")
            user_id = principal.acting_for(
                requested if isinstance(requested, str) else None
            )
        except AccessError as err:
            return {"status": "error", "message": str(err)}
        runtime = self.entry.runtime_data
        request: dict[str, Any] = {
            "session_id": _session_id(sender),
            "soul_id": soul_id,
            "user_id": user_id,
            "inputs": [{"type": "keyboard_text", "text": text}],
        }
        # A soul without a body still talks (the model and its memory).
        if terminals := runtime.souls.terminals_of(soul_id):
            request["terminal_id"] = terminals[0]
        try:
            response = await runtime.chat.chat(
                request, soul_only=True, caller=principal, channel="star"
            )
        except SessionOwnerError as err:
            return {"status": "error", "message": str(err)}
        except ChatError as err:
            return {"status": "error", "message": str(err)}
        except Exception:  # noqa: BLE001 - an agent must answer
            LOGGER.exception("Star chat for soul %s failed", soul_id)
            return {"status": "error", "message": "internal error"}
        return {
            "status": "success",
            "message": response["reply"],
            "data": {
                "reply": response["reply"],
                "executed_skills": response["executed_skills"],
                "intent_decision": response["intent_decision"],
                "trace_id": response["trace_id"],
            },
        }


def _principal_of(sender: Connection) -> Principal:
    """Return who a Star client is: its token's user, or none who may act."""
    return sender.principal or Principal(None, may_control=False)


def _session_id(sender: Connection) -> str:
    """Return the chat session of a Star client: its type, its user and its id.

    An agent and a human of the same id are two clients, and a client id says
    nothing of its user: with ``star-<id>`` alone, a user's agent took the
    session of an administrator's human of that id first, which locked the
    human out and let the agent's event notes into its conversations.
    """
    identity = sender.identity
    user = _principal_of(sender).user_id or "anonymous"
    return f"star-{identity.client_type}-{user[:16]}-{identity.client_id}"


@callback
def async_start_star(hass: HomeAssistant, entry: SoulConfigEntry) -> Callable[[], None]:
    """Start heartbeats and the soul agents; return the stopper."""
    agents = SoulAgents(hass, entry)
    agents.sync()

    @callback
    def heartbeat(_now: Any) -> None:
        # A callback: it must run in the event loop, not in the executor.
        entry.runtime_data.star.tick()

    unsubs = [
        async_dispatcher_connect(
            hass, signal_souls_changed(entry.entry_id), agents.sync
        ),
        async_track_time_interval(
            hass,
            heartbeat,
            timedelta(seconds=HEARTBEAT_INTERVAL),
            name="soul star heartbeat",
            cancel_on_shutdown=True,
        ),
    ]

    @callback
    def stop() -> None:
        for unsub in unsubs:
            unsub()
        agents.stop()
        for connection in entry.runtime_data.star.connections():
            connection.close(1001, "Soul is unloading")
            entry.runtime_data.star.disconnect(connection)

    return stop
