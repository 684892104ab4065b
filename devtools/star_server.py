"""A standalone Star Protocol hub over aiohttp WebSockets, for tests, demos and benchmarks.

It serves ``core.star.hub.StarHub`` on the same endpoints as Home Assistant's
transport (``custom_components/soul/star.py``):

- ``/api/soul/star/env/{env_id}`` — an environment;
- ``/api/soul/star/env/{env_id}/agent/{agent_id}`` — an agent;
- ``/api/soul/star/human/{human_id}`` — a human;

and on the spec's own paths at its root (``/env/{env_id}``,
``/env/{env_id}/agent/{agent_id}``, ``/human/{human_id}``), so clients
written for the original Star hub connect unchanged (with ``tokens=None``,
as the spec's authentication is optional). The hub serves at most
``max_connections`` clients (``--max-connections``); one more is answered
``CONNECTION_FAILED`` and closed with 1013.

A client authenticates with one of the tokens given to the constructor, in an
``Authorization: Bearer`` header or — for browsers — in a first frame
``{"type": "auth", "access_token": …}`` answered ``{"type": "auth_ok"}`` or
``{"type": "auth_invalid", "message": …}`` and close 1008, as Home Assistant's
WebSocket API does. As in Home Assistant, a header with a wrong token does not
refuse the upgrade: the connection must then authenticate with its first
frame. ``tokens=None`` turns authentication off. Each connection has a bounded
send queue drained by a writer task; when it is full the hub cuts the slow
client off; the hub's other closes go out after the frames already queued.
``tick`` runs every ``tick_interval`` seconds (heartbeats and idle timeout)::

    server = StarServer(tokens={"secret"})
    await server.start()
    ...  # clients connect to server.base_url
    await server.close()

``python -m devtools.star_server [--max-connections N]`` runs it in the
foreground.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterable, Sequence
import contextlib
import logging
import secrets
from typing import Any

from aiohttp import web

from custom_components.soul.core.star.hub import (
    CLOSE_GOING_AWAY,
    HEARTBEAT_INTERVAL,
    MAX_CONNECTIONS,
    StarHub,
)
from custom_components.soul.core.star.transport import (
    AUTH_TIMEOUT,
    CLOSE_TIMEOUT,
    PATHS,
    SEND_QUEUE,
    frame_auth,
    identity_from,
    pump,
    websocket,
)
from devtools.serve import serve

_LOGGER = logging.getLogger(__name__)

PREFIX = "/api/soul/star"
PREFIXES = (PREFIX, "")  # Home Assistant's, and the spec's own paths at the root


class StarServer:
    """The hub on 127.0.0.1; ``await start()`` it, then connect to ``base_url``."""

    def __init__(
        self,
        tokens: Iterable[str] | None = None,
        *,
        hub: StarHub | None = None,
        queue_size: int = SEND_QUEUE,
        tick_interval: float | None = HEARTBEAT_INTERVAL,
        auth_timeout: float = AUTH_TIMEOUT,
        close_timeout: float = CLOSE_TIMEOUT,
    ) -> None:
        """Accept ``tokens`` (None: no authentication) and route with ``hub``."""
        self.tokens = None if tokens is None else frozenset(tokens)
        self.hub = hub if hub is not None else StarHub()
        self.queue_size = queue_size
        self.tick_interval = tick_interval
        self.auth_timeout = auth_timeout
        self.close_timeout = close_timeout  # then a client not reading is aborted
        self.port = 0
        self.accepted = 0  # connections handed to the hub
        self.refused = 0  # failed authentications
        self._runner: web.AppRunner | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._authenticating: set[web.WebSocketResponse] = set()
        self._handlers: set[asyncio.Task[Any]] = set()

    @property
    def base_url(self) -> str:
        """The hub's base URL for clients (``ws://127.0.0.1:PORT``)."""
        return f"ws://127.0.0.1:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port) and return ``base_url``."""
        app = web.Application()
        for prefix in PREFIXES:
            for path in PATHS.values():
                app.router.add_get(prefix + path, self._serve)
        self._runner, self.port = await serve(app, host, port)
        if self.tick_interval:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        return self.base_url

    async def close(self) -> None:
        """Disconnect every client and stop listening."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for connection in self.hub.connections():
            connection.closed = True
            connection.close(CLOSE_GOING_AWAY, "server shutting down")
            self.hub.disconnect(connection)
        for ws in list(self._authenticating):
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.close(code=CLOSE_GOING_AWAY, message=b"server shutting down")
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=self.close_timeout + 2)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _tick(self) -> None:
        assert self.tick_interval
        while True:
            await asyncio.sleep(self.tick_interval)
            self.hub.tick()

    # -- endpoint -------------------------------------------------------------------

    def _valid_token(self, token: Any) -> bool:
        if self.tokens is None:
            return True
        return isinstance(token, str) and any(
            secrets.compare_digest(token, known) for known in self.tokens
        )

    def _refuse(self) -> None:
        self.refused += 1

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        try:
            identity = identity_from(request.match_info)
        except ValueError as err:
            return web.json_response({"error": str(err)}, status=400)
        header = request.headers.get("Authorization", "")
        authenticated = self.tokens is None or (
            header.startswith("Bearer ")
            and self._valid_token(header.removeprefix("Bearer ").strip())
        )
        ws = websocket(self.hub)
        await ws.prepare(request)
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            if not authenticated:
                self._authenticating.add(ws)
                try:
                    authenticated = await frame_auth(
                        ws,
                        self._valid_token,
                        timeout=self.auth_timeout,
                        on_refused=self._refuse,
                    )
                finally:
                    self._authenticating.discard(ws)
            if authenticated:
                self.accepted += 1
                await pump(
                    self.hub,
                    request,
                    ws,
                    identity,
                    queue_size=self.queue_size,
                    close_timeout=self.close_timeout,
                )
        finally:
            self._handlers.discard(handler)
        return ws


async def _main(args: argparse.Namespace) -> None:
    server = StarServer(
        tokens=args.token or None, hub=StarHub(max_connections=args.max_connections)
    )
    await server.start(args.host, args.port)
    print(
        f"Star hub on ws://{args.host}:{server.port}{PREFIX}"
        f" and ws://{args.host}:{server.port} (the spec's paths),"
        f" at most {args.max_connections} clients",
        flush=True,
    )
    if args.token:
        print("Tokens:", ", ".join(args.token), flush=True)
    else:
        print("No token required (pass --token to require one)", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def main(argv: Sequence[str] | None = None) -> None:
    """Run the hub in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free one")
    parser.add_argument(
        "--token", action="append", help="an accepted token (repeatable)"
    )
    parser.add_argument(
        "--max-connections",
        type=_positive,
        default=MAX_CONNECTIONS,
        help=f"clients served at once; more are refused (default {MAX_CONNECTIONS})",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args))


if __name__ == "__main__":
    main()
