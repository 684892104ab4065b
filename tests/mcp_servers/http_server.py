"""The test tools over HTTP, served by uvicorn in a subprocess on 127.0.0.1.

Paths of one server (``serve_http_server`` starts it on a free port):

- ``/mcp``: streamable HTTP (stateful: the server hands out ``mcp-session-id``);
- ``/sse`` and ``/messages/``: the (older) SSE transport;
- ``/never``, ``/never/...``: accepts any request and never answers it (for
  timeout tests). It needs no token.

With a token, every path but ``/never`` answers 401 unless the request carries
``Authorization: Bearer <token>``.

The server runs in its own process, so a test keeps no thread of it and
pytest-socket does not get in its way (the client still needs sockets to
127.0.0.1: the fixtures request ``socket_enabled``). It prints ``PORT <n>`` on
stdout once it listens. As a script::

    python tests/mcp_servers/http_server.py [--token TOKEN] [--name NAME]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
import json
import os
from pathlib import Path
import select
import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP
    from starlette.types import ASGIApp, Receive, Scope, Send

HOST = "127.0.0.1"
MCP_PATH = "/mcp"
SSE_PATH = "/sse"
NEVER_PATH = "/never"
START_TIMEOUT = 60.0  # seconds; Python and the SDK import slowly on a busy machine
STOP_TIMEOUT = 15.0


def build_app(
    token: str | None = None,
    name: str = "soul-test-http",
    server: FastMCP | None = None,
) -> ASGIApp:
    """The ASGI application: streamable HTTP, SSE, the never-answering path, auth.

    ``server`` serves other tools than the test tools (``tools.build_server``).
    """
    import anyio

    from tests.mcp_servers.tools import build_server

    if server is None:
        server = build_server(name)
    app = server.streamable_http_app()  # its lifespan runs the session manager
    app.router.routes.extend(server.sse_app().routes)
    expected = f"Bearer {token}".encode() if token is not None else None

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == NEVER_PATH or path.startswith(NEVER_PATH + "/"):
                await anyio.sleep_forever()
            headers = dict(scope["headers"])
            if expected is not None and headers.get(b"authorization") != expected:
                body = json.dumps({"error": "unauthorized"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return application


async def serve_app(app: ASGIApp) -> None:
    """Serve ``app`` on a free port of 127.0.0.1; print ``PORT <n>`` once it listens."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST, 0))
    listener.listen(128)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    # The listener queues connections until uvicorn accepts them, after startup.
    sys.stdout.write(f"PORT {listener.getsockname()[1]}\n")
    sys.stdout.flush()
    await server.serve(sockets=[listener])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--token", default=None)
    parser.add_argument("--name", default="soul-test-http")
    args = parser.parse_args(argv)
    # Run as a script, sys.path[0] is this folder: make the repository importable.
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    asyncio.run(serve_app(build_app(args.token, args.name)))
    return 0


@dataclass(frozen=True)
class HttpServer:
    """A running test HTTP server (its process is ``pid``)."""

    base_url: str
    pid: int
    token: str | None

    @property
    def mcp_url(self) -> str:
        """The streamable HTTP endpoint."""
        return self.base_url + MCP_PATH

    @property
    def sse_url(self) -> str:
        """The SSE transport's event stream (its messages go to /messages/)."""
        return self.base_url + SSE_PATH

    @property
    def never_url(self) -> str:
        """A path that accepts requests and never answers (no token needed)."""
        return self.base_url + NEVER_PATH

    @property
    def headers(self) -> dict[str, str]:
        """The headers a client must send (the bearer token, if any)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def _read_port(process: subprocess.Popen[bytes]) -> int:
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(
                f"the MCP HTTP server did not start in {START_TIMEOUT} s"
            )
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 1)
            if not chunk:
                raise RuntimeError(
                    f"the MCP HTTP server exited at start (status {process.wait()})"
                )
            line += chunk
    word, port = line.decode().split()
    assert word == "PORT", line
    return int(port)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


@contextmanager
def serve_http_server(
    token: str | None = None,
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
) -> Iterator[HttpServer]:
    """Run a test MCP HTTP server in a subprocess; stop it (and reap it) on exit.

    ``env`` is added to the server's environment (``MCP_TEST_TOKEN`` sets what
    ``whoami`` answers; it is removed from the inherited environment otherwise).
    ``command`` runs another server that prints ``PORT <n>`` (``hostile_server
    --http``) instead of this one.
    """
    from tests.mcp_servers.tools import TOKEN_ENV

    server_env = {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
    server_env.update(env or {})
    if command is None:
        command = [sys.executable, str(Path(__file__).resolve())]
        if token is not None:
            command += ["--token", token]
    process = subprocess.Popen(  # noqa: S603
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=server_env
    )
    try:
        port = _read_port(process)
        yield HttpServer(f"http://{HOST}:{port}", process.pid, token)
    finally:
        _stop(process)


@contextmanager
def serve_http(token: str | None = None, **kwargs: Any) -> Iterator[str]:
    """Run a test MCP HTTP server; yield the URL of its streamable HTTP endpoint."""
    with serve_http_server(token, **kwargs) as server:
        yield server.mcp_url


if __name__ == "__main__":
    sys.exit(main())
