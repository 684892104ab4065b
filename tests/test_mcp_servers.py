"""The test MCP servers (tests/mcp_servers) behave as described, through the SDK's client.

Every tool is called over stdio, streamable HTTP and SSE; then what is particular
to each: crash, a server that never answers or cannot start, environment
passing, the bearer token, the never-answering URL, and that nothing is left
running afterwards.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
import os
from pathlib import Path
import struct
from urllib.parse import urlsplit
import zlib

import anyio
import httpx
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.session import RequestResponder
import pytest

from tests.mcp_servers.http_server import HttpServer, serve_http, serve_http_server
from tests.mcp_servers.processes import HTTP_SERVER, STDIO_SERVER, child_processes
from tests.mcp_servers.tools import (
    NO_TOKEN,
    PICTURE_TEXT,
    RESOURCE_TEXT,
    RESOURCE_URI,
    TOKEN_ENV,
    TOOL_NAMES,
)

pytest_plugins = ["tests.mcp_servers.fixtures"]

TIMEOUT = 60  # seconds: generous, the machine is shared


@dataclass
class Client:
    """A connected SDK client session and what the server sent on its own."""

    session: ClientSession
    notifications: list[types.ServerNotification] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)
    tools_changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(
        self,
        message: RequestResponder[types.ServerRequest, types.ClientResult]
        | types.ServerNotification
        | Exception,
    ) -> None:
        if isinstance(message, Exception):
            self.errors.append(message)
        elif isinstance(message, types.ServerNotification):
            self.notifications.append(message)
            if isinstance(message.root, types.ToolListChangedNotification):
                self.tools_changed.set()


@asynccontextmanager
async def _session(
    read: object, write: object, read_timeout: float
) -> AsyncIterator[Client]:
    client = Client(session=None)  # type: ignore[arg-type]
    async with ClientSession(
        read,  # type: ignore[arg-type]
        write,  # type: ignore[arg-type]
        read_timeout_seconds=timedelta(seconds=read_timeout),
        message_handler=client.handle,
    ) as session:
        client.session = session
        yield client


@asynccontextmanager
async def stdio(
    command: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    read_timeout: float = TIMEOUT,
) -> AsyncIterator[Client]:
    """An SDK client of a stdio server (not initialized yet)."""
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=env, cwd=cwd
    )
    async with (
        stdio_client(params) as (read, write),
        _session(read, write, read_timeout) as client,
    ):
        yield client


@asynccontextmanager
async def streamable_http(
    url: str, headers: dict[str, str] | None = None, read_timeout: float = TIMEOUT
) -> AsyncIterator[Client]:
    """An SDK client of a streamable HTTP server (not initialized yet)."""
    async with (
        httpx.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        _session(read, write, read_timeout) as client,
    ):
        yield client


@asynccontextmanager
async def sse(
    url: str, headers: dict[str, str] | None = None, read_timeout: float = TIMEOUT
) -> AsyncIterator[Client]:
    """An SDK client of an SSE server (not initialized yet)."""
    async with (
        sse_client(url, headers=headers, timeout=TIMEOUT) as (read, write),
        _session(read, write, read_timeout) as client,
    ):
        yield client


@pytest.fixture(params=["stdio", "http", "sse"])
def connect(request: pytest.FixtureRequest, tmp_path: Path):
    """Connect to a test server over each transport; the client is initialized."""
    transport: str = request.param

    @asynccontextmanager
    async def connect() -> AsyncIterator[Client]:
        if transport == "stdio":
            command = request.getfixturevalue("mcp_stdio_command")
            opened = stdio(command, tmp_path)
        elif transport == "http":
            opened = streamable_http(request.getfixturevalue("mcp_http_url"))
        else:
            opened = sse(request.getfixturevalue("mcp_sse_url"))
        async with opened as client:
            result = await client.session.initialize()
            assert result.capabilities.tools is not None
            assert result.capabilities.tools.listChanged is True
            yield client

    return connect


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    content = result.content[0]
    assert isinstance(content, types.TextContent), content
    return content.text


async def test_lists_the_tools(connect) -> None:
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
    assert set(tools) >= TOOL_NAMES
    assert "extra" not in tools
    assert set(tools["add"].inputSchema["properties"]) == {"a", "b"}
    assert tools["add"].inputSchema["properties"]["a"]["type"] == "integer"
    assert set(tools["grow"].inputSchema["properties"]) == {"standalone"}


async def test_add(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("add", {"a": 2, "b": 3})
    assert not result.isError
    assert text_of(result) == "5"
    assert result.structuredContent == {"result": 5}


async def test_fail_is_an_error_result(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("fail", {"reason": "the reason"})
    assert result.isError is True
    assert "the reason" in text_of(result)


async def test_slow(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("slow", {"seconds": 0.2})
    assert not result.isError
    assert text_of(result) == "done after 0.2 s"


async def test_slow_times_out_on_the_client(connect) -> None:
    async with connect() as client:
        with pytest.raises(McpError) as caught:
            await client.session.call_tool(
                "slow", {"seconds": 600}, read_timeout_seconds=timedelta(seconds=0.5)
            )
        # The session stays usable after a request timed out.
        assert not (await client.session.call_tool("add", {"a": 1, "b": 1})).isError
    assert caught.value.error.code == httpx.codes.REQUEST_TIMEOUT


async def test_picture_has_text_and_a_png(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("picture", {})
    assert not result.isError
    text, image = result.content
    assert isinstance(text, types.TextContent)
    assert text.text == PICTURE_TEXT
    assert isinstance(image, types.ImageContent)
    assert image.mimeType == "image/png"
    png = base64.b64decode(image.data, validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", png[8:16])
    assert (kind, length) == (b"IHDR", 13)
    header, crc = png[16:29], struct.unpack(">I", png[29:33])[0]
    assert struct.unpack(">II", header[:8]) == (1, 1)
    assert zlib.crc32(kind + header) == crc


async def test_resource_is_embedded(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("resource", {})
    assert not result.isError
    (content,) = result.content
    assert isinstance(content, types.EmbeddedResource)
    assert isinstance(content.resource, types.TextResourceContents)
    assert str(content.resource.uri) == RESOURCE_URI
    assert content.resource.text == RESOURCE_TEXT
    assert content.resource.mimeType == "text/plain"


async def test_whoami_without_token(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("whoami", {})
    assert text_of(result) == NO_TOKEN


async def test_grow_adds_a_tool_and_notifies(connect) -> None:
    async with connect() as client:
        assert not client.tools_changed.is_set()
        result = await client.session.call_tool("grow", {})
        assert text_of(result) == "extra added"
        async with asyncio.timeout(TIMEOUT):
            await client.tools_changed.wait()
        names = {tool.name for tool in (await client.session.list_tools()).tools}
        assert names == TOOL_NAMES | {"extra"} | ({"crash"} & names)
        extra = await client.session.call_tool("extra", {"x": "hi"})
        assert text_of(extra) == "extra hi"
        assert not client.errors


async def test_grow_standalone_notification(connect) -> None:
    """Unrelated to a request, the notification takes the GET stream over HTTP.

    The server drops it while the client's GET stream is not open yet, so grow
    is called again until a notification arrives.
    """
    async with connect() as client:
        for _attempt in range(30):
            await client.session.call_tool("grow", {"standalone": True})
            try:
                async with asyncio.timeout(1):
                    await client.tools_changed.wait()
                break
            except TimeoutError:
                continue
        assert client.tools_changed.is_set()
        names = {tool.name for tool in (await client.session.list_tools()).tools}
        assert "extra" in names


async def test_unknown_tool_is_an_error(connect) -> None:
    async with connect() as client:
        result = await client.session.call_tool("no_such_tool", {})
    assert result.isError is True


# stdio


async def test_stdio_has_crash(mcp_stdio_command: list[str], tmp_path: Path) -> None:
    async with stdio(mcp_stdio_command, tmp_path) as client:
        await client.session.initialize()
        tools = {tool.name for tool in (await client.session.list_tools()).tools}
    assert tools == TOOL_NAMES | {"crash"}


async def test_stdio_passes_the_environment(
    mcp_stdio_command: list[str], tmp_path: Path
) -> None:
    async with stdio(mcp_stdio_command, tmp_path, env={TOKEN_ENV: "s3cret"}) as client:
        await client.session.initialize()
        result = await client.session.call_tool("whoami", {})
    assert text_of(result) == "s3cret"


async def test_stdio_leaves_no_process(
    mcp_stdio_command: list[str], tmp_path: Path
) -> None:
    assert not child_processes(STDIO_SERVER)
    async with stdio(mcp_stdio_command, tmp_path) as client:
        await client.session.initialize()
        running = child_processes(STDIO_SERVER)
        assert len(running) == 1
        assert "Z" not in running.values()
    assert not child_processes(STDIO_SERVER)


async def test_stdio_crash_ends_the_process(
    mcp_stdio_command: list[str], tmp_path: Path
) -> None:
    async with stdio(mcp_stdio_command, tmp_path) as client:
        await client.session.initialize()
        ((pid, _state),) = child_processes(STDIO_SERVER).items()
        with pytest.raises(McpError) as caught:
            await client.session.call_tool("crash", {})
        assert caught.value.error.code == types.CONNECTION_CLOSED
        # Exited (a zombie until the client reaps it), and the session is closed.
        assert child_processes(STDIO_SERVER).get(pid) in {None, "Z"}
        # A request after the end raises (anyio.ClosedResourceError in SDK 1.26).
        with pytest.raises((McpError, anyio.ClosedResourceError)):
            await client.session.call_tool("add", {"a": 1, "b": 2})
    assert not child_processes(STDIO_SERVER)


async def test_stdio_server_that_never_answers(
    mcp_stdio_never_answers_command: list[str], tmp_path: Path
) -> None:
    async with stdio(
        mcp_stdio_never_answers_command, tmp_path, read_timeout=1
    ) as client:
        assert len(child_processes(STDIO_SERVER)) == 1
        with pytest.raises(McpError) as caught:
            await client.session.initialize()
    assert caught.value.error.code == httpx.codes.REQUEST_TIMEOUT
    # It ignores the end of its input: the client had to kill it.
    assert not child_processes(STDIO_SERVER)


async def test_stdio_server_that_cannot_start(
    mcp_stdio_exit_at_start_command: list[str], tmp_path: Path
) -> None:
    async with stdio(mcp_stdio_exit_at_start_command, tmp_path) as client:
        with pytest.raises(McpError) as caught:
            await client.session.initialize()
    assert caught.value.error.code == types.CONNECTION_CLOSED
    assert not child_processes(STDIO_SERVER)


# HTTP


async def test_http_token_is_required(
    mcp_http_url_with_token: str, mcp_http_token: str
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": mcp_http_token},
        ):
            response = await http.post(
                mcp_http_url_with_token, json=initialize, headers=accept | headers
            )
            assert response.status_code == httpx.codes.UNAUTHORIZED, headers
        response = await http.post(
            mcp_http_url_with_token,
            json=initialize,
            headers=accept | {"Authorization": f"Bearer {mcp_http_token}"},
        )
        assert response.status_code == httpx.codes.OK
        assert response.headers["mcp-session-id"]

    headers = {"Authorization": f"Bearer {mcp_http_token}"}
    async with streamable_http(mcp_http_url_with_token, headers) as client:
        await client.session.initialize()
        assert text_of(await client.session.call_tool("add", {"a": 1, "b": 2})) == "3"


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_sdk_client_without_token_gets_401(
    mcp_http_server_with_token: HttpServer, transport: str
) -> None:
    """The SDK (1.26) raises the 401 as httpx.HTTPStatusError in an ExceptionGroup."""
    server = mcp_http_server_with_token
    opened = (
        streamable_http(server.mcp_url, read_timeout=TIMEOUT)
        if transport == "http"
        else sse(server.sse_url, read_timeout=TIMEOUT)
    )
    with pytest.raises(BaseException) as caught:  # noqa: PT011  (checked below)
        async with opened as client:
            await client.session.initialize()
    statuses = [
        error.response.status_code
        for error in leaves(caught.value)
        if isinstance(error, httpx.HTTPStatusError)
    ]
    assert statuses == [httpx.codes.UNAUTHORIZED], caught.value


async def test_sse_token_is_required(
    mcp_http_server_with_token: HttpServer,
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.get(mcp_http_server_with_token.sse_url)
    assert response.status_code == httpx.codes.UNAUTHORIZED
    async with sse(
        mcp_http_server_with_token.sse_url, mcp_http_server_with_token.headers
    ) as client:
        await client.session.initialize()
        assert text_of(await client.session.call_tool("whoami", {})) == NO_TOKEN


async def test_http_passes_the_environment(socket_enabled: None) -> None:
    with serve_http_server(env={TOKEN_ENV: "http-s3cret"}) as server:
        async with streamable_http(server.mcp_url) as client:
            await client.session.initialize()
            result = await client.session.call_tool("whoami", {})
    assert text_of(result) == "http-s3cret"


async def test_never_answers_url(mcp_never_answers_url: str) -> None:
    async with httpx.AsyncClient(timeout=1) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(mcp_never_answers_url, json={})
        with pytest.raises(httpx.ReadTimeout):
            await http.get(mcp_never_answers_url + "/anything")
    async with streamable_http(mcp_never_answers_url, read_timeout=1) as client:
        with pytest.raises(McpError) as caught:
            await client.session.initialize()
    assert caught.value.error.code == httpx.codes.REQUEST_TIMEOUT


async def test_serve_http_stops_its_process(socket_enabled: None) -> None:
    with serve_http(token="t") as url:
        (pid,) = child_processes(HTTP_SERVER)
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        async with streamable_http(url, {"Authorization": "Bearer t"}) as client:
            await client.session.initialize()
    assert not child_processes(HTTP_SERVER)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_serve_http_stops_with_a_hanging_request(socket_enabled: None) -> None:
    with serve_http_server() as server:
        port = urlsplit(server.base_url).port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /never HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await reader.read(1)
    try:
        assert not child_processes(HTTP_SERVER)
        async with asyncio.timeout(TIMEOUT):
            # Read to the end: the server closed the connection (uvicorn may
            # first answer 500 to the request it cancelled at shutdown).
            await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()
