"""Serving a ``StarHub`` over aiohttp WebSockets: identities, first-frame auth, the pump.

Shared by Home Assistant's transport (``custom_components/soul/star.py``) and
the standalone ``devtools.star_server``, so tests, the demo and the benchmark
exercise the same code Home Assistant runs. Nothing here knows how tokens are
checked: callers pass a predicate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
import contextlib
import json
import logging
from typing import Any

from aiohttp import WSMsgType, web

from .hub import CLOSE_POLICY, Identity, StarHub, valid_id

_LOGGER = logging.getLogger(__name__)

SEND_QUEUE = 256
AUTH_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0  # then a client that stopped reading is aborted
AUTH_INVALID = "invalid or missing access token"


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
    valid_token: Callable[[Any], bool],
    *,
    timeout: float = AUTH_TIMEOUT,
    on_refused: Callable[[], None] = lambda: None,
) -> bool:
    """Read the first frame as ``{"type": "auth", "access_token": …}``.

    Answers ``auth_ok``, or calls ``on_refused``, answers ``auth_invalid`` and
    closes with 1008.
    """
    try:
        async with asyncio.timeout(timeout):
            message = await ws.receive()
        frame = json.loads(message.data) if message.type is WSMsgType.TEXT else None
    except (TimeoutError, ValueError, TypeError, RecursionError):
        frame = None
    if (
        isinstance(frame, dict)
        and frame.get("type") == "auth"
        and valid_token(frame.get("access_token"))
    ):
        await ws.send_json({"type": "auth_ok"})
        return True
    on_refused()
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_json({"type": "auth_invalid", "message": AUTH_INVALID})
    await ws.close(code=CLOSE_POLICY, message=b"authentication required")
    return False


async def pump(
    hub: StarHub,
    request: web.Request,
    ws: web.WebSocketResponse,
    identity: Identity,
    *,
    queue_size: int = SEND_QUEUE,
    close_timeout: float = CLOSE_TIMEOUT,
) -> None:
    """Pump frames between the socket and the hub until either side ends.

    The connection gets a bounded send queue drained by a writer task; ``send``
    reports a full queue to the hub, which then cuts the slow client off. The
    hub's closes go out after the frames already queued; a client that does
    not take the close frame within ``close_timeout`` is aborted.
    """
    # Text to send, or (code, reason): close after what is already queued.
    queue: asyncio.Queue[str | tuple[int, str]] = asyncio.Queue(maxsize=queue_size)
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[None]] = []

    def send(text: str) -> bool:
        try:
            queue.put_nowait(text)
        except asyncio.QueueFull:
            return False
        return True

    async def closer(code: int, reason: str) -> None:
        try:
            async with asyncio.timeout(close_timeout):
                await ws.close(code=code, message=reason.encode()[:120])
        except TimeoutError:
            if request.transport is not None:
                request.transport.abort()

    def close(code: int, reason: str) -> None:
        try:
            queue.put_nowait((code, reason))
        except asyncio.QueueFull:  # a slow consumer: close at once
            if not closing:
                closing.append(loop.create_task(closer(code, reason)))

    async def writer() -> None:
        while True:
            item = await queue.get()
            try:
                if isinstance(item, tuple):
                    await closer(*item)
                    return
                await ws.send_str(item)
            except (ConnectionError, RuntimeError):
                return

    connection = hub.connect(identity, send, close)
    writing = loop.create_task(writer())
    try:
        async for message in ws:
            if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                try:
                    hub.receive(connection, message.data)
                except Exception:
                    _LOGGER.exception("Star hub failed on a frame of %s", identity)
                    break
            elif message.type is WSMsgType.ERROR:
                break
            if connection.closed:
                break
    finally:
        closed_by_hub = connection.closed
        hub.disconnect(connection)
        if not closed_by_hub:
            writing.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            async with asyncio.timeout(close_timeout + 1):  # a queued close
                await writing
        writing.cancel()
        if closing:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await closing[0]
        if not ws.closed:
            await ws.close()
