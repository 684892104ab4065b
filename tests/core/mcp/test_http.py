"""Soul's bounded HTTP transport against a real MCP server that floods its client.

The server is tests/mcp_servers/hostile_server.py ``--http`` (written with the
SDK, served by uvicorn in a subprocess): streamable HTTP answering with
server-sent events or with JSON bodies, and the older SSE transport. The SDK's
HTTP clients read each message whole and parse it on the event loop; Soul's
transport (``core/mcp/http.py``) reads it first, within its bounds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
import gzip
import json
import sys
from typing import Any

from aiohttp import web
import httpx
from mcp import types
import pytest

from custom_components.soul.core.mcp.config import parse_config
from custom_components.soul.core.mcp.connection import (
    CONNECTED,
    FAILED,
    McpCallError,
    McpConnection,
)
from custom_components.soul.core.mcp.http import BoundedTransport, _Events, _line_end
from custom_components.soul.core.mcp.messages import (
    MAX_HTTP_LISTED_TOOLS,
    MAX_HTTP_MESSAGE_BYTES,
    MAX_HTTP_MESSAGE_VALUES,
    MAX_MESSAGE_VALUES,
    MAX_RESULT_PARTS,
    STUB_KEY,
    McpMessageError,
    SchemaStash,
    rewrite_message,
)
from tests.mcp_servers.hostile_server import rich_schema
from tests.mcp_servers.http_server import HttpServer, serve_http_server
from tests.mcp_servers.processes import HOSTILE_SERVER

from .test_hub import until
from .test_stdio import _text

RICH_SCHEMA_VALUES = 52  # ``hostile_server.rich_schema``: members of its objects

MODES = {
    "streamable, events": (["--http"], False),
    "streamable, json": (["--http", "--json-response"], False),
    "sse transport": (["--http"], True),
}


async def _in_thread(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


@pytest.fixture(params=list(MODES))
def flood_server(
    request: pytest.FixtureRequest, socket_enabled: None
) -> Iterator[tuple[HttpServer, bool]]:
    args, sse = MODES[request.param]
    with serve_http_server(command=[sys.executable, HOSTILE_SERVER, *args]) as server:
        yield server, sse


def _connection(server: HttpServer, sse: bool = False) -> McpConnection:
    entry: dict[str, Any] = {"url": server.sse_url if sse else server.mcp_url}
    if sse:
        entry["type"] = "sse"
    return McpConnection(
        parse_config({"mcpServers": {"flood": entry}})["flood"],
        run_blocking=_in_thread,
        http_client=lambda headers, timeout, wrap: httpx.AsyncClient(
            headers=headers,
            timeout=timeout,
            transport=wrap(httpx.AsyncHTTPTransport()),
        ),
        backoff=(30.0, 60.0),  # a failed attempt is not retried within a test
    )


@asynccontextmanager
async def _connected(*args: str) -> AsyncIterator[McpConnection]:
    """Yield a connection to ``hostile_server.py --http *args``, connected."""
    command = [sys.executable, HOSTILE_SERVER, "--http", *args]
    with serve_http_server(command=command) as server:
        connection = _connection(server)
        connection.start(asyncio.ensure_future)
        try:
            await until(lambda: connection.status == CONNECTED, timeout=30)
            yield connection
        finally:
            await connection.stop()


@pytest.fixture
async def flood(flood_server: tuple[HttpServer, bool]) -> AsyncIterator[McpConnection]:
    connection = _connection(*flood_server)
    connection.start(asyncio.ensure_future)
    await until(lambda: connection.status == CONNECTED, timeout=30)
    yield connection
    await connection.stop()


async def test_a_long_result_is_cut_and_one_of_too_many_values_ends_it(
    flood: McpConnection,
) -> None:
    assert len((await flood.call("parts", {"count": 500})).content) == 500
    # Each part is a model of the SDK's (about 4 µs): the rest are not read.
    result = await flood.call("parts", {"count": 3000})
    assert len(result.content) == MAX_RESULT_PARTS + 1
    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    assert last.text == f"…({3000 - MAX_RESULT_PARTS} more parts not read)"
    assert _text(await flood.call("big", {"size": 100_000})) == "x" * 100_000
    with pytest.raises(McpCallError):
        await flood.call("parts", {"count": MAX_MESSAGE_VALUES})
    await until(lambda: flood.status == FAILED)
    assert flood.error == (
        f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
    )
    assert flood.tools == []


async def test_a_message_over_the_size_bound_ends_the_connection(
    flood: McpConnection,
) -> None:
    with pytest.raises(McpCallError):
        await flood.call("big", {"size": MAX_HTTP_MESSAGE_BYTES})
    await until(lambda: flood.status == FAILED)
    assert flood.error == (
        f"the server sent a message larger than {MAX_HTTP_MESSAGE_BYTES} bytes"
    )


async def test_a_tool_list_of_too_many_values_ends_the_connection(
    flood: McpConnection,
) -> None:
    # About three values a tool: 6,000 tools are over the bound.
    assert _text(await flood.call("grow_many", {"count": 6000})) == "grown"
    await until(lambda: flood.status == FAILED)
    assert flood.error == (
        f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
    )


async def test_a_listing_over_http_is_cut_to_what_soul_keeps(
    socket_enabled: None,
) -> None:
    """The SDK parses an HTTP message on the loop: 1,024 tools took 18-37 ms."""
    async with _connected("--tools", "1200") as connection:
        assert len(connection.tools) == 128
        assert "1 or more tools over 128" in connection.skipped


async def test_a_message_of_too_many_values_once_cut_is_refused() -> None:
    # A result the SDK would parse whole: its structure, and no text part.
    structured = {f"p{n}": n for n in range(5000)}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [], "structuredContent": structured},
    }
    raw = json.dumps(message).encode()
    assert raw.count(b",") < MAX_MESSAGE_VALUES  # within the bound of a stdio line
    with pytest.raises(McpMessageError, match=f"more than {MAX_HTTP_MESSAGE_VALUES}"):
        await rewrite_message(raw, _in_thread, SchemaStash())
    # A tool's schema is not the SDK's to parse: kept aside, whatever its size.
    schema = {
        "type": "object",
        "properties": {f"p{n}": {"type": "string"} for n in range(5000)},
    }
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"tools": [{"name": "a", "inputSchema": schema}]},
    }
    assert (
        len(
            await rewrite_message(
                json.dumps(message).encode(), _in_thread, SchemaStash()
            )
        )
        < 200
    )
    few = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "tools": [{"name": f"t{n}", "inputSchema": {}} for n in range(300)]
            },
        }
    )
    cut = json.loads(await rewrite_message(few.encode(), _in_thread, SchemaStash()))
    assert len(cut["result"]["tools"]) == MAX_HTTP_LISTED_TOOLS


async def test_a_listing_of_rich_schemas_is_read_whole(socket_enabled: None) -> None:
    """The SDK parses stubs in place of the input schemas, which Soul keeps.

    128 tools of 16 described properties: more values than the SDK may parse
    on the loop (the listing was refused before), none of them the SDK's.
    """
    assert 128 * RICH_SCHEMA_VALUES > MAX_HTTP_MESSAGE_VALUES
    async with _connected("--rich", "128") as connection:
        rich = {
            tool.tool: tool.skill.input_schema
            for tool in connection.tools
            if tool.tool.startswith("r")
        }
        assert len(connection.tools) == 128
        assert len(rich) > 100 and all(
            schema == rich_schema(int(name[1:])) for name, schema in rich.items()
        )


async def test_a_result_is_read_whatever_its_tool_says_of_its_structure(
    flood: McpConnection,
) -> None:
    """As over stdio (``test_stdio``): no output schema reaches the SDK."""
    result = await flood.call("mismatch", {})
    assert _text(result) == "a"
    assert {tool.tool for tool in flood.tools} >= {"mismatch", "notify"}


async def test_a_stub_is_restored_only_from_its_own_listing() -> None:
    stash = SchemaStash()

    def listing(*schemas: Any) -> bytes:
        tools = [
            {"name": f"t{n}", "inputSchema": schema} for n, schema in enumerate(schemas)
        ]
        message = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
        return json.dumps(message).encode()

    def tools(written: bytes) -> list[types.Tool]:
        result = json.loads(written)["result"]
        return types.ListToolsResult.model_validate(result).tools

    first = tools(await rewrite_message(listing({"a": 1}, {}), _in_thread, stash))
    assert [tool.inputSchema for tool in first] == [
        {"type": "object", STUB_KEY: "1:0"},
        {"type": "object", STUB_KEY: "1:1"},
    ]
    restored = [stash.restore(tool) for tool in first]
    assert [tool and tool.inputSchema for tool in restored] == [{"a": 1}, {}]
    second = tools(await rewrite_message(listing({"b": 2}), _in_thread, stash))
    assert stash.restore(first[0]) is None  # a later listing came
    restored = stash.restore(second[0])
    assert restored is not None and restored.inputSchema == {"b": 2}
    # A result or a notification keeps the listing.
    await rewrite_message(
        b'{"jsonrpc": "2.0", "id": 2, "result": {}}', _in_thread, stash
    )
    assert stash.restore(second[0]) is not None
    for forged in (
        {"type": "object"},
        {"type": "object", STUB_KEY: "2:9"},
        {"type": "object", STUB_KEY: "2:\u00b2"},  # a digit, but not 0-9
    ):
        assert (
            stash.restore(second[0].model_copy(update={"inputSchema": forged})) is None
        )


async def test_what_soul_cannot_read_never_reaches_the_sdk() -> None:
    """A message Soul's decoder refuses is not handed on: the SDK's might read it."""
    for raw in (
        b"not json",
        b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}",  # deeper than Soul reads
        b'{"a": ' + b"1" * 5000 + b"}",  # more digits than Python reads
    ):
        with pytest.raises(McpMessageError, match="the MCP server's message"):
            await rewrite_message(raw, _in_thread, SchemaStash())


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def _events(chunks: list[bytes]) -> bytes:
    refused: list[str] = []
    stream = _Events(_Chunks(chunks), refused.append, _in_thread, SchemaStash())
    out = b"".join([part async for part in stream])
    assert refused == []
    return out


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
async def test_events_are_read_whatever_ends_their_lines(end: bytes) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"a\ud800": [1, 2]}}
    data = json.dumps(message).encode()
    stream = end.join(
        [b": a comment", b"id: 7", b"event: message", b"data: " + data, b"", b""]
    )
    # Every split of the stream in two chunks reads the same.
    seen = {await _events([stream[:cut], stream[cut:]]) for cut in range(len(stream))}
    assert seen == {
        b": a comment\nid: 7\nevent: message\ndata: "
        + json.dumps(
            {"jsonrpc": "2.0", "id": 1, "result": {"a\ufffd": [1, 2]}},
            ensure_ascii=False,
        ).encode()
        + b"\n\n"
    }


async def test_other_events_and_an_unfinished_one_go_on_as_they_came() -> None:
    assert await _events(
        [b"event: endpoint\ndata: /messages/?id=1\n\n", b"data: {\ndata: }\n\n"]
    ) == (b"event: endpoint\ndata: /messages/?id=1\n\ndata: {}\n\n")
    # The data lines of one event are one message (joined by a line feed).
    assert await _events([b"data: []\n\n", b"data: {"]) == (b"data: []\n\n")
    refused: list[str] = []
    with pytest.raises(McpMessageError, match="not valid JSON"):
        async for _ in _Events(
            _Chunks([b"data: not json\n\n"]), refused.append, _in_thread, SchemaStash()
        ):
            pass
    assert refused and "not valid JSON" in refused[0]


async def test_a_server_cannot_make_the_sdk_reconnect_at_once() -> None:
    """A GET stream saying "retry: 0" and ending had the SDK open 1,000 a second."""
    events = [
        b"retry: 0\n\n",
        b"retry: 25000\n\n",
        b"retry: 1e3\n\n",
        b"retry: " + b"9" * 5000 + b"\n\n",
    ]
    assert await _events(events) == (
        b"retry: 1000\n\nretry: 25000\n\nretry: 999999999\n\n"
    )


async def test_an_event_over_the_bound_is_refused_before_its_end() -> None:
    refused: list[str] = []
    huge = [b"data: " + b"x" * (1 << 20)] * 5  # no line end: never a whole event
    with pytest.raises(McpMessageError, match="larger than"):
        async for _ in _Events(
            _Chunks(huge), refused.append, _in_thread, SchemaStash()
        ):
            pass
    assert refused == [
        f"the server sent a message larger than {MAX_HTTP_MESSAGE_BYTES} bytes"
    ]


def test_line_ends() -> None:
    assert _line_end(bytearray(b"ab\ncd"), 0) == (2, 3)
    assert _line_end(bytearray(b"ab\r\ncd"), 0) == (2, 4)
    assert _line_end(bytearray(b"ab\rcd"), 0) == (2, 3)
    assert _line_end(bytearray(b"ab\r"), 0) is None  # an LF may come next
    assert _line_end(bytearray(b"abcd"), 0) is None
    assert _line_end(bytearray(b"a\nb\nc"), 2) == (3, 4)


@pytest.fixture
async def plain_server(socket_enabled: None) -> AsyncIterator[str]:
    """A real HTTP server: a gzip JSON body echoing Accept-Encoding; a huge error."""

    async def compressed(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(b'{"jsonrpc": "2.0", "id": 1, "result": {}}'),
            headers={
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
                "X-Asked": request.headers.get("Accept-Encoding", ""),
            },
        )

    async def huge_error(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            status=500, headers={"Content-Type": "text/plain"}
        )
        await response.prepare(request)
        for _ in range(3 * MAX_HTTP_MESSAGE_BYTES // 65536):
            await response.write(b"x" * 65536)
        return response

    app = web.Application()
    app.router.add_get("/gzip", compressed)
    app.router.add_get("/huge", huge_error)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_a_compressed_answer_is_refused(plain_server: str) -> None:
    refused: list[str] = []
    transport = BoundedTransport(
        httpx.AsyncHTTPTransport(), _in_thread, refused.append, SchemaStash()
    )
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("GET", plain_server + "/gzip") as response,
    ):
        assert response.headers["X-Asked"] == "identity"
        with pytest.raises(McpMessageError):
            await response.aread()
    assert refused == ["the server sent a response compressed as 'gzip'"]


async def test_a_body_passed_on_as_it_came_is_bounded_too(plain_server: str) -> None:
    """Neither events nor a JSON message (an error page): passed on, within the bound."""
    refused: list[str] = []
    transport = BoundedTransport(
        httpx.AsyncHTTPTransport(), _in_thread, refused.append, SchemaStash()
    )
    passed_on = 0

    async def read(response: httpx.Response) -> None:
        nonlocal passed_on
        async for chunk in response.aiter_raw():
            passed_on += len(chunk)

    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("GET", plain_server + "/huge") as response,
    ):
        with pytest.raises(McpMessageError, match="larger than"):
            await read(response)
    assert 0 < passed_on <= MAX_HTTP_MESSAGE_BYTES
    assert refused == [
        f"the server sent a message larger than {MAX_HTTP_MESSAGE_BYTES} bytes"
    ]


async def test_a_number_home_assistant_cannot_write_becomes_a_float() -> None:
    """Checked on what is kept of a message (``untrusted.repair_numbers``)."""
    raw = (
        b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [], "n": '
        + str(2**64).encode()
        + b', "m": -1'
        + b"0" * 400
        + b"}}"
    )
    written = json.loads(await rewrite_message(raw, _in_thread, SchemaStash()))
    assert written["result"]["n"] == 2.0**64
    assert written["result"]["m"] == -sys.float_info.max
