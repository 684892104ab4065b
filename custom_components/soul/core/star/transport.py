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
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping
import contextlib
import json
import struct
import time
from typing import Any

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
from .turns import flushes, turns

_LOGGER = trace_logger(__name__)

SEND_QUEUE = 256  # frames; at least a client's burst (hub.DEFAULT_BURST x 2)
# Characters those frames may hold together: a client that stopped reading
# made Home Assistant keep 256 frames of 1 MiB each (a black-box run).
SEND_QUEUE_CHARS = 8 * 1024 * 1024
AUTH_TIMEOUT = 10.0
AUTH_FRAME_BYTES = 8192
CLOSE_TIMEOUT = 5.0  # then a client that stopped reading is aborted
# Seconds a reader may handle frames already read without letting the loop run
# (then one more frame at most: a frame on the loop is at most 64 KiB).
YIELD_AFTER = 0.002
# Frames up to this many bytes of UTF-8 are framed by ``_Outbox`` and written
# at the end of the loop turn (several to one client: one write); larger ones
# by aiohttp's writer, at once.
FAST_FRAME_BYTES = 16 * 1024
FLUSH_BYTES = 64 * 1024  # kept frames are written at once when they reach this
AUTH_INVALID = "invalid or missing access token"
WRITE_FAILED = "Star hub failed to write to %s"
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

    The connection's frames go out through an ``_Outbox``: the frames routed
    to a client in one turn of the event loop are framed here and written
    with one ``transport.write`` at the end of the turn (large frames, and
    every frame of a connection that compresses, through aiohttp's writer,
    in order). While a write waits for the client to read, frames queue, at
    most ``queue_size``; ``send`` reports a full queue to the hub, which then
    cuts the slow client off. The hub's closes go out after the frames
    already queued; a client that does not take the close frame within
    ``close_timeout`` is aborted. The reader takes the frames it has already
    read back to back, as a plain relay does, but lets the loop run after
    ``YIELD_AFTER`` of them, and between the envelopes of a batch frame;
    frames ``untrusted.decodes_on_loop`` finds too large are decoded in a
    thread. An
    identity the hub refuses gets a ``PERMISSION_DENIED`` error and 1008; a
    full hub, ``CONNECTION_FAILED`` and 1013 (try again later).
    """
    loop = asyncio.get_running_loop()
    outbox = _Outbox(ws, request, identity, queue_size, close_timeout)
    loop_turns = turns(loop)
    seen = -1  # the loop turn of the reader's stretch of frames
    stretch = 0.0  # when that stretch began

    try:
        connection = hub.connect(
            identity, outbox.put, outbox.close, principal=principal
        )
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
                    if untrusted.decodes_on_loop(message.data):
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
                if loop_turns.count != seen:  # the loop ran: a new stretch
                    seen = loop_turns.arm()
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
        await outbox.finish(cancel=not closed_by_hub)
        if not ws.closed:
            await ws.close()


_PINGS = (WSMsgType.PING, WSMsgType.PONG)
_TEXT_FIN = 0x81  # a whole text frame (RFC 6455 5.2): FIN and opcode 1
_HEADER_SHORT = struct.Struct("!BB").pack  # payload length < 126
_HEADER_MEDIUM = struct.Struct("!BBH").pack  # payload length < 65536


class _Outbox:
    """One client's frames on their way out, in order.

    The usual frame (at most ``FAST_FRAME_BYTES`` of UTF-8, a connection
    without compression) is framed here, byte for byte as aiohttp's writer
    frames it (a server's frames are not masked), and kept until the end of
    the loop turn (``turns.Flushes``): then every frame the turn routed to this
    client goes out with one ``transport.write`` (one ``send`` instead of one
    a frame; an environment gets many a turn), or sooner once
    ``FLUSH_BYTES`` wait. Other frames go through aiohttp's writer (a
    ``ws.send_str`` run by hand; ``_Resumed`` when it has to wait), after
    what is kept. When the socket does not take a write (the transport
    paused writing, or aiohttp's write suspends), a task (``writer``) waits
    for it to drain and frames queue in ``pending``, at most ``queue_size``
    frames of ``SEND_QUEUE_CHARS`` characters in all
    (``put`` then returns False: the hub cuts the client off). A close
    (``(code, reason)``) goes out after every frame before it.
    """

    __slots__ = ("_close_timeout", "_flushes", "_identity", "_pending_chars",
                 "_protocol", "_queue_size", "_request", "_size", "_transport",
                 "_ws", "chunks", "closing", "pending", "stopped",
                 "writer")  # fmt: skip

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        identity: Identity,
        queue_size: int,
        close_timeout: float,
    ) -> None:
        self._ws = ws
        self._request = request
        self._identity = identity
        self._queue_size = queue_size
        self._close_timeout = close_timeout
        self._flushes = flushes(asyncio.get_running_loop())
        # Text to send, or (code, reason): close after what is before it.
        self.pending: deque[str | tuple[int, str]] = deque()
        self._pending_chars = 0  # the characters of the frames in it
        self.chunks: list[bytes] = []  # framed, for the end of this turn
        self._size = 0  # their bytes
        self.writer: asyncio.Task[None] | None = None  # while a write waits
        self.closing: asyncio.Task[None] | None = None  # a slow client's close
        self.stopped = False  # the socket failed or was closed: nothing more
        protocol: Any = request.protocol
        transport = request.transport
        # Frames are framed here unless the connection compresses them (or
        # this aiohttp lacks what waiting for a drain needs).
        fast = (
            not ws.compress
            and transport is not None
            and hasattr(protocol, "_drain_helper")
            and type(getattr(protocol, "writing_paused", None)) is bool
        )
        self._transport = transport if fast else None
        self._protocol = protocol

    def put(self, item: str | tuple[int, str]) -> bool:
        """Write ``item`` by the end of this turn, or queue it; False when full."""
        if self.writer is not None or self.pending or self.stopped:
            return self._queue(item)
        if type(item) is str:
            try:
                frame = self._framed(item)
            except Exception:  # the sender's frame is not at fault: never raise
                _LOGGER.exception(WRITE_FAILED, self._identity)
                self.stopped = True
                return True
            if frame is not None:  # the usual case
                chunks = self.chunks
                if not chunks:
                    self._flushes.add(self)
                chunks.append(frame)
                self._size += len(frame)
                if self._size >= FLUSH_BYTES:
                    self.flush()
                return True
        if self._flushed_and_busy():  # what is kept goes first
            return self._queue(item)
        if isinstance(item, tuple):  # a close: in a task (it waits for the client)
            self._start(item)
            return True
        sending = self._ws.send_str(item)  # by hand: no task when it finishes
        try:
            waiting = sending.send(None)
        except StopIteration:
            return True  # written
        except (ConnectionError, RuntimeError):
            self.stopped = True
            return True
        except Exception:  # the sender's frame is not at fault: never raise
            _LOGGER.exception(WRITE_FAILED, self._identity)
            self.stopped = True
            return True
        self._start(_Resumed(sending, waiting))  # it waits for the socket to drain
        return True

    def close(self, code: int, reason: str) -> None:
        """Close after the frames before it; at once when the queue is full."""
        if not self.put((code, reason)) and self.closing is None:
            self.closing = asyncio.get_running_loop().create_task(
                self._closer(code, reason)
            )

    def flush(self) -> None:
        """Write the frames kept for the turn's end (``turns.Flushes`` calls it)."""
        if not self.chunks:
            return
        if self.stopped:
            self.chunks.clear()
            self._size = 0
            return
        try:
            self._write_chunks()
        except (ConnectionError, RuntimeError):
            self.stopped = True
            return
        except Exception:  # the sender's frame is not at fault: never raise
            _LOGGER.exception(WRITE_FAILED, self._identity)
            self.stopped = True
            return
        if self._protocol.writing_paused and self.writer is None:
            self._start(self._drained())

    async def finish(self, *, cancel: bool) -> None:
        """Write what this turn kept, end the writer (``cancel``: at once), stop."""
        self.flush()
        if (writing := self.writer) is not None:
            if cancel:
                writing.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                async with asyncio.timeout(self._close_timeout + 1):  # a close
                    await writing
            writing.cancel()
        self.stopped = True
        if self.closing is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.closing

    def _flushed_and_busy(self) -> bool:
        """Write what is kept; return whether the next frame must queue."""
        self.flush()
        return self.writer is not None or self.stopped

    def _queue(self, item: str | tuple[int, str]) -> bool:
        chars = len(item) if type(item) is str else 0
        if (
            len(self.pending) >= self._queue_size
            or self._pending_chars + chars > SEND_QUEUE_CHARS
        ):
            return False
        self.pending.append(item)
        self._pending_chars += chars
        return True

    def _pop(self) -> str | tuple[int, str]:
        item = self.pending.popleft()
        if type(item) is str:
            self._pending_chars -= len(item)
        return item

    def _framed(self, text: str) -> bytes | None:
        """Return ``text`` as a WebSocket frame, or None: aiohttp frames it."""
        if self._transport is None or len(text) > FAST_FRAME_BYTES:
            return None
        data = text.encode()
        size = len(data)
        if size < 126:
            return _HEADER_SHORT(_TEXT_FIN, size) + data
        if size <= FAST_FRAME_BYTES:
            return _HEADER_MEDIUM(_TEXT_FIN, 126, size) + data
        return None

    def _write_chunks(self) -> None:
        chunks = self.chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._size = 0
        transport = self._transport
        if transport is None or self._ws.closed or transport.is_closing():
            raise ConnectionResetError("Cannot write to closing transport")
        transport.write(data)

    def _drained(self) -> Awaitable[None]:
        """Return what waits until the transport takes writes again."""
        drained: Awaitable[None] = self._protocol._drain_helper()  # noqa: SLF001
        return drained

    def _start(self, first: Awaitable[None] | tuple[int, str]) -> None:
        task = asyncio.Task(
            self._write(first), loop=asyncio.get_running_loop(), eager_start=True
        )
        if not task.done():
            self.writer = task

    async def _write(self, first: Awaitable[None] | tuple[int, str]) -> None:
        """Finish ``first`` (a write, a drain or a close), then what queued behind."""
        item: Awaitable[None] | tuple[int, str] | None = first
        try:
            while item is not None:
                if isinstance(item, tuple):
                    self.stopped = True
                    await self._closer(*item)
                    return
                await item
                item = self._next()
        except (ConnectionError, RuntimeError):
            self.stopped = True
        except Exception:  # the sender's frame is not at fault: never raise to it
            _LOGGER.exception(WRITE_FAILED, self._identity)
            self.stopped = True
        finally:
            self.writer = None

    def _next(self) -> Awaitable[None] | tuple[int, str] | None:
        """Write the queued frames framed here; return what to wait for next."""
        pending = self.pending
        while True:
            while pending and self._size < FLUSH_BYTES:
                item = pending[0]
                if type(item) is not str or (frame := self._framed(item)) is None:
                    break
                self._pop()
                self.chunks.append(frame)
                self._size += len(frame)
            if self.chunks:
                self._write_chunks()
                if self._protocol.writing_paused:
                    return self._drained()
                continue
            if not pending:
                return None
            item = self._pop()
            return item if isinstance(item, tuple) else self._ws.send_str(item)

    async def _closer(self, code: int, reason: str) -> None:
        try:
            async with asyncio.timeout(self._close_timeout):
                await self._ws.close(code=code, message=reason.encode()[:120])
        except TimeoutError:
            if self._request.transport is not None:
                self._request.transport.abort()


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
