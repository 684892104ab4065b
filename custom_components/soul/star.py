"""The Star Protocol hub inside Home Assistant: WebSocket endpoints, auth, souls as agents.

Endpoints (Home Assistant's HTTP server):

- ``/api/soul/star/env/{env_id}`` — an environment;
- ``/api/soul/star/env/{env_id}/agent/{agent_id}`` — an agent;
- ``/api/soul/star/human/{human_id}`` — a human.

A client authenticates with a Home Assistant access token, in an
``Authorization: Bearer`` header or — for browsers — in a first frame
``{"type": "auth", "access_token": …}`` (answered ``auth_ok`` or
``auth_invalid``), as Home Assistant's own WebSocket API does; otherwise the
connection is closed. Routing is ``core.star.hub.StarHub``'s. Each connection
has a bounded send queue; a client that cannot keep up is disconnected.

Every soul is the agent ``soul_<soul_id>`` in the environment ``home``: an
``action`` ``chat`` (``{"text", "user_id"}``) runs the chat pipeline and is
answered with an ``outcome`` (reply and executed skills); ``event`` messages
addressed to a soul join its Star session's context.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
import json
from typing import Any

from aiohttp import web
from homeassistant.components.http import (
    KEY_AUTHENTICATED,
    KEY_HASS,
    KEY_HASS_USER,
    HomeAssistantView,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.event import async_track_time_interval

from .const import LOGGER
from .core.chat import ChatError
from .core.star.hub import HEARTBEAT_INTERVAL, Connection, Identity
from .core.star.transport import SEND_QUEUE, frame_auth, identity_from, pump
from .runtime import SoulConfigEntry
from .services import find_loaded_entry

HOME_ENV = "home"


def soul_agent_id(soul_id: str) -> str:
    """Return the Star agent id of a soul."""
    return f"soul_{soul_id}"


class _StarView(HomeAssistantView):
    """Accepts one kind of Star client; authentication is done here (header or frame)."""

    requires_auth = False

    async def get(self, request: web.Request, **ids: str) -> web.StreamResponse:
        """Connect the client the path names."""
        try:
            identity = identity_from(ids)
        except ValueError as err:
            return web.json_response({"message": str(err)}, status=400)
        hass: HomeAssistant = request.app[KEY_HASS]
        if (entry := find_loaded_entry(hass)) is None:
            return web.json_response({"message": "Soul is not set up"}, status=503)
        hub = entry.runtime_data.star
        ws = web.WebSocketResponse(
            max_msg_size=2 * hub.max_message_bytes, heartbeat=None
        )
        # Home Assistant's auth middleware has checked a Bearer header already.
        authenticated = bool(request.get(KEY_AUTHENTICATED)) and (
            (user := request.get(KEY_HASS_USER)) is not None and user.is_active
        )
        await ws.prepare(request)
        if authenticated or await frame_auth(
            ws, lambda token: _valid_token(hass, token)
        ):
            await pump(hub, request, ws, identity, queue_size=SEND_QUEUE)
        return ws


def _valid_token(hass: HomeAssistant, token: Any) -> bool:
    """Return whether ``token`` is a valid access token of an active user."""
    if not isinstance(token, str) or not token:
        return False
    refresh_token = hass.auth.async_validate_access_token(token)
    return refresh_token is not None and refresh_token.user.is_active


class StarEnvironmentView(_StarView):
    """``/api/soul/star/env/{env_id}``: an environment."""

    url = "/api/soul/star/env/{env_id}"
    name = "api:soul:star:env"


class StarAgentView(_StarView):
    """``/api/soul/star/env/{env_id}/agent/{agent_id}``: an agent."""

    url = "/api/soul/star/env/{env_id}/agent/{agent_id}"
    name = "api:soul:star:agent"


class StarHumanView(_StarView):
    """``/api/soul/star/human/{human_id}``: a human."""

    url = "/api/soul/star/human/{human_id}"
    name = "api:soul:star:human"


@callback
def async_register_star_views(hass: HomeAssistant) -> None:
    """Register the Star endpoints (once; they outlive config entries)."""
    for view in (StarEnvironmentView(), StarAgentView(), StarHumanView()):
        hass.http.register_view(view)


class SoulAgents:
    """Every soul as agent ``soul_<id>`` in ``home``, answering ``chat`` actions."""

    def __init__(self, hass: HomeAssistant, entry: SoulConfigEntry) -> None:
        """Follow the entry's souls."""
        self.hass = hass
        self.entry = entry
        self._connections: dict[str, Connection] = {}

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
            self._connections[soul_id] = hub.connect(
                identity, self._sender(soul_id), lambda _code, _reason: None
            )

    @callback
    def stop(self) -> None:
        """Disconnect every soul."""
        for connection in self._connections.values():
            self.entry.runtime_data.star.disconnect(connection)
        self._connections.clear()

    def _sender(self, soul_id: str) -> Callable[[str], bool]:
        def deliver(text: str) -> bool:
            self.entry.async_create_background_task(
                self.hass, self._handle(soul_id, text), "star soul message"
            )
            return True

        return deliver

    async def _handle(self, soul_id: str, text: str) -> None:
        envelope = json.loads(text)
        if envelope.get("type") != "message":
            return  # heartbeats and errors
        payload = envelope.get("payload")
        sender = envelope.get("sender", {})
        if not isinstance(payload, dict):
            return
        session_id = f"star-{sender.get('id')}"
        if payload.get("type") == "event":
            # Into the context of the soul's sessions (the sender's Star session first).
            note = {"type": "event_note", "source": sender, "event": payload}
            for session in self.entry.runtime_data.chat.sessions.values():
                if session.soul_id == soul_id or session.session_id == session_id:
                    session.context.append(note)
            return
        if payload.get("type") != "action":
            return
        outcome = await self._chat(soul_id, session_id, payload)
        reply = {
            "type": "message",
            "sender": {"id": soul_agent_id(soul_id), "type": "agent"},
            "recipient": sender,
            "payload": {
                "type": "outcome",
                "id": payload.get("id"),
                "outcome": outcome,
                "outcome_type": "dict",
            },
        }
        if (connection := self._connections.get(soul_id)) is not None:
            self.entry.runtime_data.star.receive(
                connection, json.dumps(reply, ensure_ascii=False)
            )

    async def _chat(
        self, soul_id: str, session_id: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        if payload.get("action") != "chat":
            return {
                "status": "error",
                "message": f"unknown action {payload.get('action')!r}",
            }
        parameters = payload.get("parameters") or {}
        runtime = self.entry.runtime_data
        terminals = runtime.souls.terminals_of(soul_id)
        if not terminals:
            return {"status": "error", "message": "this soul has no body"}
        try:
            response = await runtime.chat.chat(
                {
                    "session_id": session_id,
                    "terminal_id": terminals[0],
                    "user_id": parameters.get("user_id"),
                    "inputs": [
                        {"type": "keyboard_text", "text": parameters.get("text")}
                    ],
                }
            )
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
            },
        }


@callback
def async_start_star(hass: HomeAssistant, entry: SoulConfigEntry) -> Callable[[], None]:
    """Start heartbeats and the soul agents; return the stopper."""
    agents = SoulAgents(hass, entry)
    agents.sync()
    from homeassistant.helpers.dispatcher import async_dispatcher_connect  # noqa: PLC0415

    from .souls import signal_souls_changed  # noqa: PLC0415

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
