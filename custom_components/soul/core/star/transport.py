"""Serving a ``StarHub`` over aiohttp WebSockets: identities, first-frame auth, the pump.

Shared by Home Assistant's transport (``custom_components/soul/star.py``) and
the standalone ``devtools.star_server``, so tests, the demo and the benchmark
exercise the same code Home Assistant runs. Nothing here knows how tokens are
checked: callers pass a predicate.

``PATHS`` are the spec's endpoints (``/env/{env_id}``,
``/env/{env_id}/agent/{agent_id}``, ``/human/{human_id}``); Home Assistant
serves them below ``/api/soul/star``, the standalone server at its root too.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping
import contextlib
import json
import time
from typing import Any
import weakref

from aiohttp import WSMessage, WSMsgType, web

from .. import untrusted
from ..access import Principal
from ..logs import trace_logger
from .hub import (
    CLOSE_POLICY,
    CLOSE_TRY_LATER,
    CONNECTION_FAILED,
    HUB_ID,
    PERMISSION_DENIED,
    HubFullError,
    Identity,
    IdentityError,
    StarHub,
    decode_frame,
    valid_id,
)

_LOGGER = trace_logger(__name__)

SEND_QUEUE = 256  # frames; at least a client's burst (hub.DEFAULT_BURST x 2)
AUTH_TIMEOUT = 10.0
AUTH_FRAME_BYTES = 8192
CLOSE_TIMEOUT = 5.0  # then a client that stopped reading is aborted
# Seconds a reader may handle frames already read without letting the loop run
# (then one more frame at most: a frame on the loop is at most 64 KiB).
YIELD_AFTER = 0.002
AUTH_INVALID = "invalid or missing access token"
# The spec's endpoints ("连接规范"), by client type; the spec leaves the human's
# commented out, but its clients use it.
PATHS = {
    "environment": "/env/{env_id}",
    "agent": "/env/{env_id}/agent/{agent_id}",
    "human": "/human/{human_id}",
}


def websocket(hub: StarHub) -> web.WebSocketResponse:
    """Return the response a Star endpoint upgrades with.

    Frames up to twice the hub's limit are read (the hub answers larger ones
    than its limit with ``MESSAGE_TOO_LARGE``); no aiohttp heartbeat (the
    hub's own runs); WebSocket pings are answered by ``frame_auth`` and
    ``pump``, which count them as the client's traffic: a client whose
    library pings (``websockets`` does, every 20 s) is alive without
    sending envelopes.
    """
    return web.WebSocketResponse(
        max_msg_size=2 * hub.max_message_bytes, heartbeat=None, autoping=False
    )


def identity_from(match_info: Mapping[str, str]) -> Identity:
    """Return the identity an endpoint's path gives; raise ``ValueError`` if invalid.

    ``{human_id}`` → human; ``{env_id}/agent/{agent_id}`` → agent; ``{env_id}``
    → environment.
    """
    if (human_id := match_info.get("human_id")) is not None:
        if not valid_id(human_id):
            raise ValueError("invalid human_id")
        return Identity("human", human_id, None)
    env_id = match_info.get("env_id", "")
    if (agent_id := match_info.get("agent_id")) is not None:
        if not (valid_id(env_id) and valid_id(agent_id)):
            raise ValueError("invalid env_id or agent_id")
        return Identity("agent", agent_id, env_id)
    if not valid_id(env_id):
        raise ValueError("invalid env_id")
    return Identity("environment", env_id, env_id)


async def frame_auth(
    ws: web.WebSocketResponse,
    authenticate: Callable[[Any], Any],
    *,
    timeout: float = AUTH_TIMEOUT,
    on_refused: Callable[[], None] = lambda: None,
) -> Any:
    """Read the first frame as ``{"type": "auth", "access_token": …}``.

    ``authenticate(token)`` returns who the token belongs to (truthy) or a
    falsy value. Answers ``auth_ok`` and returns that principal; or calls
    ``on_refused``, answers ``auth_invalid``, closes with 1008 and returns None.
    """
    try:
        async with asyncio.timeout(timeout):
            while (message := await ws.receive()).type in _PINGS:
                await _pong(ws, message)
        frame = (
            untrusted.loads(message.data, max_bytes=AUTH_FRAME_BYTES, max_depth=4)
            if message.type is WSMsgType.TEXT
            else None
        )
    except (TimeoutError, ValueError, TypeError):
        frame = None
    principal = (
        authenticate(frame.get("access_token"))
        if isinstance(frame, dict) and frame.get("type") == "auth"
        else None
    )
    if principal:
        await ws.send_json({"type": "auth_ok"})
        return principal
    on_refused()
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_json({"type": "auth_invalid", "message": AUTH_INVALID})
    await ws.close(code=CLOSE_POLICY, message=b"authentication required")
    return None


async def pump(
    hub: StarHub,
    request: web.Request,
    ws: web.WebSocketResponse,
    identity: Identity,
    *,
    queue_size: int = SEND_QUEUE,
    close_timeout: float = CLOSE_TIMEOUT,
    principal: Principal | None = None,
) -> None:
    """Pump frames between the socket and the hub until either side ends.

    The connection gets a bounded send queue drained by a writer task; ``send``
    reports a full queue to the hub, which then cuts the slow client off. The
    hub's closes go out after the frames already queued; a client that does
    not take the close frame within ``close_timeout`` is aborted. A frame is
    written at once when nothing is being written to that client (no task
    wake-up per frame). The reader takes the frames it has already read back
    to back, as a plain relay does, but lets the loop run after
    ``YIELD_AFTER`` of them, and between the envelopes of a batch frame; frames over
    ``untrusted.LOOP_JSON_BYTES`` are decoded in a thread. An identity the
    hub refuses gets a ``PERMISSION_DENIED`` error and 1008; a full hub,
    ``CONNECTION_FAILED`` and 1013 (try again later).
    """
    # Text to send, or (code, reason): close after what is already queued.
    # A frame is written at once when nothing is being written: ``put`` runs
    # ``ws.send_str`` by hand, and it finishes without suspending when the
    # socket takes the frame (no task, no wake-up). Otherwise a task (the
    # writer) finishes that write, and frames wait here, in order, for it to
    # take them next. At most ``queue_size`` frames wait.
    pending: deque[str | tuple[int, str]] = deque()
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[None]] = []
    writer: list[asyncio.Task[None]] = []  # the task writing, while suspended
    stopped = False  # the socket failed or was closed: nothing more is written

    async def closer(code: int, reason: str) -> None:
        try:
            async with asyncio.timeout(close_timeout):
                await ws.close(code=code, message=reason.encode()[:120])
        except TimeoutError:
            if request.transport is not None:
                request.transport.abort()

    async def write(item: str | tuple[int, str] | _Resumed) -> None:
        nonlocal stopped
        try:
            while True:
                if isinstance(item, tuple):
                    stopped = True
                    await closer(*item)
                    return
                await (ws.send_str(item) if isinstance(item, str) else item)
                if not pending:
                    return
                item = pending.popleft()
        except (ConnectionError, RuntimeError):
            stopped = True
        except Exception:  # the sender's frame is not at fault: never raise to it
            _LOGGER.exception("Star hub failed to write to %s", identity)
            stopped = True
        finally:
            writer.clear()

    def put(item: str | tuple[int, str]) -> bool:
        """Write ``item`` now, or queue it; False when the queue is full."""
        nonlocal stopped
        if writer or pending or stopped:
            if len(pending) >= queue_size:
                return False
            pending.append(item)
            return True
        if isinstance(item, tuple):  # a close: in a task (it waits for the client)
            task = asyncio.Task(write(item), loop=loop, eager_start=True)
            if not task.done():
                writer.append(task)
            return True
        sending = ws.send_str(item)
        try:
            waiting = sending.send(None)
        except StopIteration:
            return True  # written: the usual case
        except (ConnectionError, RuntimeError):
            stopped = True
            return True
        except Exception:  # the sender's frame is not at fault: never raise to it
            _LOGGER.exception("Star hub failed to write to %s", identity)
            stopped = True
            return True
        # The write waits (for the socket to drain): a task finishes it.
        task = asyncio.Task(
            write(_Resumed(sending, waiting)), loop=loop, eager_start=True
        )
        if not task.done():
            writer.append(task)
        return True

    def close(code: int, reason: str) -> None:
        if not put((code, reason)) and not closing:
            # a slow consumer: close at once
            closing.append(loop.create_task(closer(code, reason)))

    turns = _turns(loop)
    seen = -1  # the loop turn of the reader's stretch of frames
    stretch = 0.0  # when that stretch began

    try:
        connection = hub.connect(identity, put, close, principal=principal)
    except IdentityError as err:
        await refuse(ws, identity, str(err))
        return
    except HubFullError as err:
        await refuse(ws, identity, str(err), code=CONNECTION_FAILED,
                     close_code=CLOSE_TRY_LATER, suggested="retry later")  # fmt: skip
        return
    try:
        async for message in ws:
            if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                try:
                    steps: Iterable[None]
                    if len(message.data) <= untrusted.LOOP_JSON_BYTES:
                        steps = hub.receive_now(connection, message.data)
                    elif hub.admit(connection, message.data):
                        # Admitted first: a flooder's large frames cost nothing.
                        decoded = await asyncio.to_thread(
                            decode_frame, message.data, hub.max_message_bytes
                        )
                        steps = hub.receive_steps(
                            connection, message.data, decoded=decoded, admitted=True
                        )
                    else:
                        steps = iter(())
                    for _ in steps:  # between the envelopes of a batch
                        await asyncio.sleep(0)
                except Exception:
                    _LOGGER.exception("Star hub failed on a frame of %s", identity)
                    break
                # Frames already read are taken back to back, as a plain relay
                # does, for at most YIELD_AFTER; then the loop runs.
                if turns.count != seen:  # the loop ran: a new stretch
                    seen = turns.arm()
                    stretch = time.monotonic()
                elif time.monotonic() - stretch >= YIELD_AFTER:
                    await asyncio.sleep(0)
            elif message.type in _PINGS:
                await _pong(ws, message)
                hub.seen(connection)
            elif message.type is WSMsgType.ERROR:
                break
            if connection.closed:
                break
    finally:
        closed_by_hub = connection.closed
        hub.disconnect(connection)
        if writer:
            writing = writer[0]
            if not closed_by_hub:
                writing.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(close_timeout + 1):  # a queued close
                    await writing
            writing.cancel()
        stopped = True
        if closing:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await closing[0]
        if not ws.closed:
            await ws.close()


_PINGS = (WSMsgType.PING, WSMsgType.PONG)


class _Resumed:
    """Awaiting it goes on with a coroutine run by hand until it yielded ``waiting``.

    ``pump`` starts a write by hand (``coroutine.send(None)``), which is
    cheaper than a task when it finishes at once; when it suspends instead
    (on what it awaits: ``waiting``), the task that awaits this finishes it.
    That task waits for what the coroutine waits for and resumes it as a task
    would: with ``send(None)``, or with the exception the task is interrupted
    by (a cancellation cancels the write).
    """

    __slots__ = ("_coroutine", "_waiting")

    def __init__(self, coroutine: Coroutine[Any, Any, None], waiting: Any) -> None:
        self._coroutine = coroutine
        self._waiting = waiting

    def __await__(self) -> Generator[Any]:
        coroutine, waiting = self._coroutine, self._waiting
        while True:
            try:
                yield waiting
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as err:  # noqa: BLE001 - handed to the coroutine
                try:
                    waiting = coroutine.throw(err)
                except StopIteration:
                    return
            else:
                try:
                    waiting = coroutine.send(None)
                except StopIteration:
                    return


class _Turns:
    """Counts the event loop's turns, for readers to tell whether it has run.

    ``arm`` returns the current count and makes sure it goes up on the loop's
    next turn (one callback a turn, however many readers ask).
    """

    __slots__ = ("_armed", "_loop", "count")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._armed = False
        self.count = 0

    def arm(self) -> int:
        if not self._armed:
            self._armed = True
            self._loop.call_soon(self._turned)
        return self.count

    def _turned(self) -> None:
        self._armed = False
        self.count += 1


_LOOP_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = (
    weakref.WeakKeyDictionary()
)


def _turns(loop: asyncio.AbstractEventLoop) -> _Turns:
    if (turns := _LOOP_TURNS.get(loop)) is None:
        turns = _LOOP_TURNS[loop] = _Turns(loop)
    return turns


async def _pong(ws: web.WebSocketResponse, message: WSMessage) -> None:
    """Answer a WebSocket ping (a pong needs no answer)."""
    if message.type is WSMsgType.PING:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.pong(message.data)


async def refuse(
    ws: web.WebSocketResponse,
    identity: Identity,
    reason: str,
    *,
    code: str = PERMISSION_DENIED,
    close_code: int = CLOSE_POLICY,
    suggested: str | None = None,
) -> None:
    """Answer the spec's error ``code`` (``PERMISSION_DENIED``) and close (1008)."""
    details: dict[str, Any] = {"original_message_id": None}
    if suggested:
        details["suggested_action"] = suggested
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_str(
            json.dumps(
                {
                    "type": "error",
                    "sender": {"id": HUB_ID, "type": HUB_ID},
                    "recipient": identity.as_party(),
                    "payload": {
                        "error_code": code,
                        "message": reason,
                        "details": details,
                    },
                }
            )
        )
    await ws.close(code=close_code, message=reason.encode()[:120])
