"""The Star Protocol client SDK (``star-protocol.md``): agents, environments, humans.

A client is one WebSocket to a Star hub (the Soul integration's in Home
Assistant, or ``devtools.star_server`` in the Soul repository), authenticated
with a token in a Bearer header (or, with ``auth="frame"``, a first ``auth``
frame). It counts as connected once the hub greets it with a heartbeat, keeps
the connection up — reconnecting with capped exponential backoff when it
drops or the hub is full (``CONNECTION_FAILED``), but not after the hub
refused the token or the identity or another connection took over its
identity — answers the hub's heartbeats, and turns the envelopes it receives
into calls::

    agent = AgentClient("ws://127.0.0.1:8123", "agent_001", "demo_world", token=t)
    await agent.connect()
    outcome = await agent.action("demo_world", "move", {"direction": "north"})

    world = EnvironmentClient("ws://127.0.0.1:8123", "demo_world", token=t)
    world.on_action(lambda action, parameters, envelope: {"status": "success"})
    await world.connect()

``action`` sends an ``action`` and waits for the ``outcome`` with the same id;
an ``error`` envelope whose ``original_message_id`` is that action's message
raises ``StarHubError`` there, and no outcome in time raises
``StarTimeoutError`` (a ``TimeoutError``). Other errors go to ``on_error``
handlers (or the log). ``on_action`` handlers return the outcome dict
(``status``, ``message``, ``data``), which is sent back to the action's sender.
Handlers may be plain functions or coroutines. ``send_batch`` sends up to
``MAX_BATCH`` envelopes in one frame (the spec's batch messages; the hub
handles each as if sent alone). The SDK carries messages; what
they mean is the business layer's (``devtools/star_demo.py`` in the Soul
repository is an example).

This module is the distribution ``soul-star-client`` (``sdk/star-client`` in
the Soul repository) and never imports the integration: the few protocol
constants it shares with the hub (``custom_components/soul/core/star/hub.py``)
are copied below, and a test in the Soul repository keeps them equal.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
import inspect
import json
import logging
import random
import re
from typing import Any
import uuid

import aiohttp

_LOGGER = logging.getLogger(__name__)

# Copies of the hub's (custom_components/soul/core/star/hub.py); a test compares them.
HUB_ID = "hub"
CLIENT_TYPES = ("agent", "environment", "human")
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{2,49}")
MAX_BATCH = 100
PERMISSION_DENIED = "PERMISSION_DENIED"

PATH_PREFIX = "/api/soul/star"
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
REPLACED_REASON = "replaced"

type Handler = Callable[[Envelope], Any]
type ActionHandler = Callable[[str, dict[str, Any], Envelope], Any]
type ErrorHandler = Callable[[StarHubError], Any]


class StarError(Exception):
    """Base class of the SDK's errors."""


class StarConnectionError(StarError, ConnectionError):
    """Not connected, the connection was lost, or the client was closed."""


class StarAuthError(StarConnectionError):
    """The hub refused the token or the address (not retried)."""


class StarTimeoutError(StarError, TimeoutError):
    """No outcome arrived in time."""


class StarHubError(StarError):
    """An ``error`` envelope from the hub (``code``, ``message``, ``details``)."""

    def __init__(self, code: str, message: str, details: dict[str, Any],
                 envelope: Envelope | None = None) -> None:  # fmt: skip
        """Keep the fields of the error payload."""
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details
        self.envelope = envelope

    @property
    def original_message_id(self) -> str | None:
        """The ``message_id`` of the message that caused the error."""
        value = self.details.get("original_message_id")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Party:
    """A sender or recipient: ``{"id", "type"}``."""

    id: str
    type: str

    def as_dict(self) -> dict[str, str]:
        """Return the envelope form."""
        return {"id": self.id, "type": self.type}


@dataclass(frozen=True, slots=True)
class Envelope:
    """One received outer-protocol message, parsed at the edge."""

    type: str
    sender: Party
    recipient: Party
    payload: Any
    timestamp: str | None
    message_id: str | None

    @classmethod
    def parse(cls, data: Any) -> Envelope | None:
        """Return the envelope in ``data``, or None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            return None
        parties = []
        for part in ("sender", "recipient"):
            party = data.get(part)
            if not (
                isinstance(party, dict)
                and isinstance(party.get("id"), str)
                and isinstance(party.get("type"), str)
            ):
                return None
            parties.append(Party(party["id"], party["type"]))
        timestamp, message_id = data.get("timestamp"), data.get("message_id")
        return cls(
            data["type"],
            parties[0],
            parties[1],
            data.get("payload"),
            timestamp if isinstance(timestamp, str) else None,
            message_id if isinstance(message_id, str) else None,
        )

    @property
    def kind(self) -> str | None:
        """The inner type (``payload.type``: action, outcome, event, stream)."""
        if isinstance(self.payload, dict) and isinstance(self.payload.get("type"), str):
            return self.payload["type"]
        return None


def valid_id(value: Any) -> bool:
    """Return whether ``value`` is a 3–50 character id of the safe alphabet."""
    return isinstance(value, str) and ID_RE.fullmatch(value) is not None


def now_iso() -> str:
    """Return the current UTC time as an ISO 8601 string (``…Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """Return a unique id such as ``action_3f2a9c…``."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def _http_to_ws(url: str) -> str:
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            return ws + url.removeprefix(http)
    return url


class StarClient:
    """One Star client (agent, environment or human) and its connection."""

    def __init__(
        self,
        url_base: str,
        client_type: str,
        client_id: str,
        env_id: str | None = None,
        *,
        token: str | None = None,
        auth: str = "header",
        session: aiohttp.ClientSession | None = None,
        path_prefix: str = PATH_PREFIX,
        reconnect: bool = True,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        connect_timeout: float = 15.0,
        action_timeout: float = 30.0,
        ws_heartbeat: float | None = 30.0,
    ) -> None:
        """Describe the client; ``connect()`` opens the connection.

        ``url_base`` is the hub's origin (``ws://host:port``; http(s) works
        too); the endpoint path below ``path_prefix`` follows from the type.
        An environment's ``env_id`` is its own id. ``auth`` is ``"header"``
        (``Authorization: Bearer``) or ``"frame"`` (a first ``auth`` frame,
        as browsers do). Home Assistant, like ``devtools.star_server``, takes a
        wrong token in the header as no token and waits up to 10 s for an auth
        frame before answering ``auth_invalid``; with ``"frame"`` a wrong token
        is reported at once. Either way it raises ``StarAuthError``.
        """
        if auth not in ("header", "frame"):
            raise ValueError('auth must be "header" or "frame"')
        if client_type not in CLIENT_TYPES:
            raise ValueError(f"client_type must be one of {', '.join(CLIENT_TYPES)}")
        if client_type == "environment":
            if env_id not in (None, client_id):
                raise ValueError("an environment's env_id is its own id")
            env_id = client_id
        elif client_type == "human":
            env_id = None
        if not valid_id(client_id) or (client_type == "agent" and not valid_id(env_id)):
            raise ValueError("ids must be 3-50 characters of A-Z a-z 0-9 _ . -")
        self.client_type = client_type
        self.client_id = client_id
        self.env_id = env_id
        self.token = token
        self.auth = auth
        self.url = _http_to_ws(url_base.rstrip("/")) + path_prefix + self._path()
        self.reconnect = reconnect
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.connect_timeout = connect_timeout
        self.action_timeout = action_timeout
        self.ws_heartbeat = ws_heartbeat
        self.party = Party(client_id, client_type)
        self.connections = 0  # successful connects so far
        self.retry_delays: deque[float] = deque(maxlen=100)  # backoff history (s)
        self.close_code: int | None = None  # of the last connection that ended
        self.failure: StarConnectionError | None = None  # why the client gave up
        # The hub's last refusal before a greeting (e.g. CONNECTION_FAILED: full).
        self.refusal: StarHubError | None = None
        self._session = session
        self._own_session = session is None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._connected = asyncio.Event()
        self._stopped = asyncio.Event()  # the run loop ended (closed or gave up)
        self._runner: asyncio.Task[None] | None = None
        self._closing = False
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._pending_messages: dict[str, str] = {}  # message_id -> action id
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sequences: dict[str, int] = {}
        self._handlers: dict[str, list[Callable[..., Any]]] = {
            kind: []
            for kind in (
                "event",
                "stream",
                "message",
                "error",
                "connect",
                "disconnect",
            )
        }
        self._actions: dict[str | None, ActionHandler] = {}

    def _path(self) -> str:
        if self.client_type == "environment":
            return f"/env/{self.client_id}"
        if self.client_type == "agent":
            return f"/env/{self.env_id}/agent/{self.client_id}"
        return f"/human/{self.client_id}"

    def __repr__(self) -> str:
        """Show who the client is and where it connects."""
        return f"<{type(self).__name__} {self.client_type}:{self.client_id} {self.url}>"

    # -- connection ---------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the hub has accepted (greeted) the connection and it is open."""
        return self._connected.is_set()

    async def connect(self, timeout: float | None = None) -> None:
        """Open the connection (retrying with backoff) and wait until it is up.

        Raises ``StarAuthError`` when the hub refuses the token or address and
        ``StarConnectionError`` when no connection succeeds within ``timeout``
        (the client is then closed).
        """
        if self._closing:
            raise StarConnectionError("the client is closed")
        if self._runner is None:
            if self._session is None:
                self._session = aiohttp.ClientSession()
            self._stopped.clear()
            self._runner = asyncio.get_running_loop().create_task(
                self._run(self._session), name=f"star client {self.client_id}"
            )
        try:
            await self.wait_connected(
                self.connect_timeout if timeout is None else timeout
            )
        except StarConnectionError:
            await self.close()
            raise

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until connected; raise ``StarConnectionError`` on timeout or give-up."""
        if self.connected:
            return
        waiters = [
            asyncio.ensure_future(self._connected.wait()),
            asyncio.ensure_future(self._stopped.wait()),
        ]
        try:
            await asyncio.wait(
                waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
        if self.connected:
            return
        if self.failure is not None:
            raise self.failure
        if self._closing or self._stopped.is_set():
            raise StarConnectionError("the client is closed")
        refused = f" (the hub said {self.refusal})" if self.refusal else ""
        raise StarConnectionError(
            f"could not connect to {self.url} in {timeout} s{refused}"
        )

    async def close(self) -> None:
        """Close the connection, stop reconnecting and fail pending actions."""
        self._closing = True
        if (ws := self._ws) is not None:
            with contextlib.suppress(
                aiohttp.ClientError, ConnectionError, RuntimeError
            ):
                await ws.close(code=CLOSE_NORMAL, message=b"client closing")
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None
        self._fail_pending(StarConnectionError("the client was closed"))
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None
        self._stopped.set()

    async def __aenter__(self) -> StarClient:
        """Connect."""
        await self.connect()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        """Close."""
        await self.close()

    def _backoff(self, attempt: int) -> float:
        """Return the delay before retry ``attempt`` (0-based): doubling, capped."""
        delay = min(self.backoff_max, self.backoff_initial * 2**attempt)
        return delay * random.uniform(0.8, 1.0)  # noqa: S311 - jitter, not crypto

    async def _run(self, session: aiohttp.ClientSession) -> None:
        attempt = 0
        try:
            while not self._closing:
                headers = (
                    {"Authorization": f"Bearer {self.token}"}
                    if self.token and self.auth == "header"
                    else {}
                )
                try:
                    ws = await session.ws_connect(
                        self.url,
                        headers=headers,
                        heartbeat=self.ws_heartbeat,
                        timeout=aiohttp.ClientWSTimeout(ws_close=5.0),
                    )
                except aiohttp.WSServerHandshakeError as err:
                    if err.status in (400, 401, 403):
                        self.failure = StarAuthError(
                            f"the hub refused {self.url}: HTTP {err.status}"
                            f" {err.message}"
                        )
                        _LOGGER.error("%s", self.failure)
                        return
                    _LOGGER.debug("Star connect to %s failed: %s", self.url, err)
                except (aiohttp.ClientError, OSError, TimeoutError) as err:
                    _LOGGER.debug("Star connect to %s failed: %s", self.url, err)
                else:
                    greeted = self.connections
                    fatal = await self._serve(ws)
                    if fatal is not None:
                        self.failure = fatal
                        _LOGGER.error("Star %s: %s", self, fatal)
                        return
                    if self.connections > greeted:
                        attempt = 0
                if self._closing:
                    return
                if not self.reconnect:
                    self.failure = StarConnectionError(f"disconnected from {self.url}")
                    return
                delay = self._backoff(attempt)
                attempt += 1
                self.retry_delays.append(delay)
                _LOGGER.debug("Star %s reconnecting in %.2f s", self, delay)
                await asyncio.sleep(delay)
        finally:
            self._stopped.set()

    async def _serve(
        self, ws: aiohttp.ClientWebSocketResponse
    ) -> StarConnectionError | None:
        """Read ``ws`` until it ends; return why not to reconnect, if so.

        The client counts as connected once the hub greets it (the spec's
        heartbeat on connect), i.e. once authentication has succeeded.
        """
        self._ws = ws
        reason = ""
        fatal: StarConnectionError | None = None
        try:
            if self.auth == "frame":
                await ws.send_json({"type": "auth", "access_token": self.token or ""})
            while fatal is None:
                message = await ws.receive()
                if message.type is aiohttp.WSMsgType.TEXT:
                    fatal = self._dispatch(message.data)
                elif message.type is aiohttp.WSMsgType.BINARY:
                    fatal = self._dispatch(message.data.decode(errors="replace"))
                elif message.type is aiohttp.WSMsgType.CLOSE:
                    reason = message.extra or ""
                    break
                else:  # CLOSING, CLOSED, ERROR
                    break
        except (aiohttp.ClientError, ConnectionError) as err:
            _LOGGER.debug("Star %s connection failed: %s", self, err)
        finally:
            was_connected = self.connected
            self._ws = None
            self._connected.clear()
            if not ws.closed:
                with contextlib.suppress(aiohttp.ClientError, ConnectionError):
                    await ws.close()
            self.close_code = ws.close_code
            self._fail_pending(StarConnectionError("the connection was lost"))
            if was_connected and not self._closing:
                _LOGGER.info(
                    "Star %s disconnected (%s %s)", self, ws.close_code, reason
                )
                self._notify("disconnect")
        if fatal is None and (
            ws.close_code == CLOSE_GOING_AWAY and REPLACED_REASON in reason
        ):
            fatal = StarConnectionError(
                "another connection took over this client's identity"
            )
        return fatal

    def _greeted(self) -> None:
        self.refusal = None
        self.connections += 1
        self._connected.set()
        _LOGGER.debug("Star %s connected", self)
        self._notify("connect")

    def _fail_pending(self, error: StarConnectionError) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        self._pending_messages.clear()

    # -- handlers -----------------------------------------------------------------

    def _subscribe(self, kind: str, handler: Callable[..., Any]) -> Callable[[], None]:
        self._handlers[kind].append(handler)
        return lambda: self._handlers[kind].remove(handler)

    def on_event(self, handler: Handler) -> Callable[[], None]:
        """Call ``handler(envelope)`` for every ``event``; return the unsubscriber."""
        return self._subscribe("event", handler)

    def on_stream(self, handler: Handler) -> Callable[[], None]:
        """Call ``handler(envelope)`` for every ``stream``."""
        return self._subscribe("stream", handler)

    def on_message(self, handler: Handler) -> Callable[[], None]:
        """Call ``handler(envelope)`` for every ``message`` envelope, whatever its kind."""
        return self._subscribe("message", handler)

    def on_error(self, handler: ErrorHandler) -> Callable[[], None]:
        """Call ``handler(StarHubError)`` for errors no pending action claims."""
        return self._subscribe("error", handler)

    def on_connect(self, handler: Callable[[], Any]) -> Callable[[], None]:
        """Call ``handler()`` after every (re)connect."""
        return self._subscribe("connect", handler)

    def on_disconnect(self, handler: Callable[[], Any]) -> Callable[[], None]:
        """Call ``handler()`` when a connection ends (not on ``close()``)."""
        return self._subscribe("disconnect", handler)

    def on_action(
        self, handler: ActionHandler, action: str | None = None
    ) -> Callable[[], None]:
        """Answer actions: ``handler(action, parameters, envelope)`` returns the outcome.

        The outcome is a dict (``status``: success|error, ``message``,
        ``data``), returned or awaited; the SDK sends it to the action's sender
        in an ``outcome`` with the action's id. With ``action`` the handler
        answers only that action; the one without answers the rest.
        """
        self._actions[action] = handler

        def remove() -> None:
            if self._actions.get(action) is handler:
                del self._actions[action]

        return remove

    def _spawn(self, awaitable: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (err := task.exception()) is not None:
            _LOGGER.error("Star %s handler failed", self, exc_info=err)

    def _call(self, handler: Callable[..., Any], *args: Any) -> None:
        try:
            result = handler(*args)
        except Exception:
            _LOGGER.exception("Star %s handler failed", self)
            return
        if inspect.isawaitable(result):
            self._spawn(result)

    def _notify(self, kind: str, *args: Any) -> None:
        for handler in list(self._handlers[kind]):
            self._call(handler, *args)

    # -- receiving ----------------------------------------------------------------

    def _dispatch(self, text: str) -> StarConnectionError | None:
        """Handle one frame; return an error when the hub refused authentication."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            _LOGGER.warning("Star %s received malformed JSON", self)
            return None
        if isinstance(data, dict) and data.get("type") == "auth_invalid":
            return StarAuthError(
                f"the hub refused the token: {data.get('message') or 'auth_invalid'}"
            )
        envelope = Envelope.parse(data)
        if envelope is None:  # e.g. auth_ok
            _LOGGER.debug(
                "Star %s ignored a frame that is no envelope: %.200s", self, text
            )
            return None
        if not self.connected and envelope.sender.type == HUB_ID:
            if envelope.type == "heartbeat":  # the spec's greeting
                self._greeted()
            elif envelope.type == "error":  # refused before the greeting
                return self._refused(envelope)
        if envelope.type == "heartbeat":
            if envelope.sender.type == HUB_ID:
                self._spawn(self._pong())
        elif envelope.type == "error":
            self._handle_error(envelope)
        elif envelope.type == "message":
            self._handle_message(envelope)
        return None

    def _refused(self, envelope: Envelope) -> StarConnectionError | None:
        """Handle the hub's refusal of this connection; return it when final.

        ``PERMISSION_DENIED`` (the identity is not this token's) is final;
        other refusals, such as ``CONNECTION_FAILED`` from a full hub, are
        retried with backoff.
        """
        self._handle_error(envelope)
        payload = envelope.payload if isinstance(envelope.payload, dict) else {}
        code, message = payload.get("error_code"), payload.get("message")
        self.refusal = StarHubError(str(code), str(message or ""), {}, envelope)
        if code == PERMISSION_DENIED:
            return StarAuthError(f"the hub refused {self.url}: {message}")
        return None

    async def _pong(self) -> None:
        """Answer the hub's heartbeat so it sees this client alive."""
        with contextlib.suppress(StarConnectionError):
            await self.send(
                "heartbeat",
                Party(HUB_ID, HUB_ID),
                {"timestamp": now_iso(), "status": "alive"},
                wait=0,
            )

    def _handle_error(self, envelope: Envelope) -> None:
        payload = envelope.payload if isinstance(envelope.payload, dict) else {}
        details = payload.get("details")
        error = StarHubError(
            str(payload.get("error_code", "UNKNOWN_ERROR")),
            str(payload.get("message", "")),
            details if isinstance(details, dict) else {},
            envelope,
        )
        action_id = self._pending_messages.pop(error.original_message_id or "", None)
        future = self._pending.pop(action_id, None) if action_id else None
        if future is not None and not future.done():
            future.set_exception(error)
            return
        if self._handlers["error"]:
            self._notify("error", error)
        else:
            _LOGGER.warning("Star %s received an error: %s", self, error)

    def _handle_message(self, envelope: Envelope) -> None:
        kind = envelope.kind
        payload = envelope.payload
        if kind == "outcome":
            action_id = payload.get("id")
            future = (
                self._pending.pop(action_id, None)
                if isinstance(action_id, str)
                else None
            )
            if future is not None:
                self._pending_messages = {
                    m: a for m, a in self._pending_messages.items() if a != action_id
                }
                if not future.done():
                    outcome = payload.get("outcome")
                    future.set_result(outcome if isinstance(outcome, dict) else {})
            else:
                _LOGGER.debug(
                    "Star %s: outcome for no pending action %r", self, action_id
                )
        elif kind == "action":
            self._spawn(self._answer(envelope))
        elif kind in ("event", "stream"):
            self._notify(kind, envelope)
        self._notify("message", envelope)

    async def _answer(self, envelope: Envelope) -> None:
        payload = envelope.payload
        action = payload.get("action")
        parameters = payload.get("parameters")
        if not isinstance(parameters, dict):
            parameters = {}
        handler = self._actions.get(action) if isinstance(action, str) else None
        handler = handler or self._actions.get(None)
        if handler is None:
            outcome: Any = {
                "status": "error",
                "message": f"unknown action {action!r}",
                "error_code": "INVALID_ACTION",
            }
        else:
            try:
                outcome = handler(action, parameters, envelope)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except Exception as err:
                _LOGGER.exception("Star %s: action %r failed", self, action)
                outcome = {
                    "status": "error",
                    "message": str(err) or type(err).__name__,
                    "error_code": "ACTION_FAILED",
                }
        if outcome is None:
            outcome = {"status": "success"}
        try:
            await self.send_outcome(envelope.sender, payload.get("id"), outcome)
        except StarConnectionError:
            _LOGGER.warning("Star %s could not send the outcome of %r", self, action)

    # -- sending ------------------------------------------------------------------

    async def send(
        self,
        envelope_type: str,
        recipient: Party,
        payload: Any,
        *,
        message_id: str | None = None,
        wait: float | None = None,
    ) -> str:
        """Send one envelope and return its ``message_id``.

        When not connected, wait up to ``wait`` seconds (default the connect
        timeout) for the connection, then raise ``StarConnectionError``.
        """
        message_id = message_id or new_id("msg")
        text = json.dumps(
            {
                "type": envelope_type,
                "sender": self.party.as_dict(),
                "recipient": recipient.as_dict(),
                "payload": payload,
                "timestamp": now_iso(),
                "message_id": message_id,
            },
            ensure_ascii=False,
        )
        await self._send_text(text, self.connect_timeout if wait is None else wait)
        return message_id

    async def send_batch(
        self,
        messages: Iterable[tuple[str, Party, Any]],
        *,
        wait: float | None = None,
    ) -> list[str]:
        """Send ``(envelope type, recipient, payload)`` envelopes in one frame.

        The spec's batch messages: the hub validates, rate-limits and routes
        each envelope as if it were sent alone, and names it in its errors
        (``original_message_id``, ``details["batch_index"]``). Returns the
        ``message_id`` of each; at most ``MAX_BATCH`` envelopes.
        """
        envelopes = [
            {
                "type": envelope_type,
                "sender": self.party.as_dict(),
                "recipient": recipient.as_dict(),
                "payload": payload,
                "timestamp": now_iso(),
                "message_id": new_id("msg"),
            }
            for envelope_type, recipient, payload in messages
        ]
        if not 1 <= len(envelopes) <= MAX_BATCH:
            raise ValueError(f"a batch holds 1 to {MAX_BATCH} envelopes")
        await self._send_text(
            json.dumps(envelopes, ensure_ascii=False),
            self.connect_timeout if wait is None else wait,
        )
        return [envelope["message_id"] for envelope in envelopes]

    async def _send_text(self, text: str, wait: float) -> None:
        ws = self._ws
        if ws is None or ws.closed or not self.connected:
            if self._closing:
                raise StarConnectionError("the client is closed")
            if wait <= 0:
                raise StarConnectionError("not connected")
            await self.wait_connected(wait)
            ws = self._ws
            if ws is None or not self.connected:
                raise StarConnectionError("not connected")
        try:
            await ws.send_str(text)
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as err:
            raise StarConnectionError(f"send failed: {err}") from err

    async def send_message(
        self, recipient_type: str, recipient_id: str, payload: dict[str, Any]
    ) -> str:
        """Send a ``message`` with any inner payload; return its ``message_id``."""
        return await self.send("message", Party(recipient_id, recipient_type), payload)

    async def send_event(
        self,
        recipient_type: str,
        recipient_id: str,
        event: str,
        data: Any = None,
        *,
        event_id: str | None = None,
    ) -> str:
        """Send an ``event`` (``recipient_id`` ``"*"`` broadcasts); return its message id."""
        return await self.send_message(
            recipient_type,
            recipient_id,
            {
                "type": "event",
                "id": event_id or new_id("event"),
                "event": event,
                "data": {} if data is None else data,
            },
        )

    async def send_stream(
        self,
        recipient_type: str,
        recipient_id: str,
        stream_type: str,
        data: Any,
        *,
        sequence: int | None = None,
    ) -> str:
        """Send a ``stream`` chunk; ``sequence`` counts up per stream type by default."""
        if sequence is None:
            sequence = self._sequences.get(stream_type, 0) + 1
        self._sequences[stream_type] = sequence
        return await self.send_message(
            recipient_type,
            recipient_id,
            {
                "type": "stream",
                "stream_type": stream_type,
                "sequence": sequence,
                "data": data,
            },
        )

    async def send_outcome(
        self, recipient: Party, action_id: Any, outcome: dict[str, Any]
    ) -> str:
        """Send the ``outcome`` of action ``action_id`` to ``recipient``."""
        return await self.send(
            "message",
            recipient,
            {
                "type": "outcome",
                "id": action_id,
                "outcome": outcome,
                "outcome_type": "dict",
            },
        )

    async def action(
        self,
        recipient_id: str,
        action: str,
        parameters: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        recipient_type: str = "environment",
    ) -> dict[str, Any]:
        """Send an ``action`` and return its outcome (``status``, ``message``, ``data``).

        Raises ``StarTimeoutError`` when no outcome arrives within ``timeout``
        (default ``action_timeout``), ``StarHubError`` when the hub rejects
        the action (e.g. ``RECIPIENT_NOT_FOUND``) and ``StarConnectionError``
        when the client is not connected within ``timeout`` or the connection
        is lost before the outcome.
        """
        timeout = self.action_timeout if timeout is None else timeout
        action_id = new_id("action")
        message_id = new_id("msg")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        deadline = loop.time() + timeout
        if not self.connected:
            await self.wait_connected(timeout)  # StarConnectionError when it is not
        try:
            async with asyncio.timeout_at(deadline):
                self._pending[action_id] = future
                self._pending_messages[message_id] = action_id
                await self.send(
                    "message",
                    Party(recipient_id, recipient_type),
                    {
                        "type": "action",
                        "action": action,
                        "id": action_id,
                        "parameters": parameters or {},
                    },
                    message_id=message_id,
                    wait=0,
                )
                return await future
        except TimeoutError as err:
            raise StarTimeoutError(
                f"no outcome for {action!r} from {recipient_type} {recipient_id!r}"
                f" within {timeout} s"
            ) from err
        finally:
            self._pending.pop(action_id, None)
            self._pending_messages.pop(message_id, None)
            # When sending failed while the reader failed the future too, nobody
            # awaits it: mark its exception retrieved (no "never retrieved" log).
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()


class AgentClient(StarClient):
    """An agent in environment ``env_id``."""

    def __init__(
        self, url_base: str, agent_id: str, env_id: str, **kwargs: Any
    ) -> None:
        """See ``StarClient``."""
        super().__init__(url_base, "agent", agent_id, env_id, **kwargs)


class EnvironmentClient(StarClient):
    """An environment: answers actions and broadcasts events to its agents."""

    def __init__(self, url_base: str, env_id: str, **kwargs: Any) -> None:
        """See ``StarClient``."""
        super().__init__(url_base, "environment", env_id, env_id, **kwargs)

    async def broadcast_event(self, event: str, data: Any = None) -> str:
        """Send an event to every agent of this environment."""
        return await self.send_event("agent", "*", event, data)


class HumanClient(StarClient):
    """A human user, who may talk to any environment or agent."""

    def __init__(self, url_base: str, human_id: str, **kwargs: Any) -> None:
        """See ``StarClient``."""
        super().__init__(url_base, "human", human_id, None, **kwargs)
