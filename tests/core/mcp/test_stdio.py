"""Soul's stdio transport against a real MCP server that floods its client.

The server is tests/mcp_servers/hostile_server.py (written with the SDK).
Found by a black-box run (2026-11-28): the SDK's transport parsed every
message on the event loop without a bound, and Soul listed the tools again at
every ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import json
import logging
import sys
from typing import Any

import httpx
from mcp import types
import pydantic
import pytest

from custom_components.soul.core import untrusted
from custom_components.soul.core.mcp.config import parse_config
from custom_components.soul.core.mcp.connection import (
    CONNECTED,
    FAILED,
    McpCallError,
    McpConnection,
)
from custom_components.soul.core.mcp.messages import (
    MAX_LISTED_TOOLS,
    MAX_MESSAGE_BYTES,
    MAX_MESSAGE_VALUES,
    MAX_RESULT_PARTS,
    McpMessageError,
    decode_message,
)
from custom_components.soul.core.mcp.stdio import STDERR_KEPT, StderrTail
from tests.mcp_servers.processes import HOSTILE_SERVER, child_processes

from .test_hub import until


async def _in_thread(fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _connection(*args: str) -> McpConnection:
    config = parse_config(
        {
            "mcpServers": {
                "flood": {"command": sys.executable, "args": [HOSTILE_SERVER, *args]}
            }
        }
    )["flood"]
    return McpConnection(
        config,
        run_blocking=_in_thread,
        http_client=lambda headers, timeout, wrap: httpx.AsyncClient(
            headers=headers, timeout=timeout
        ),
        backoff=(30.0, 60.0),  # a failed attempt is not retried within a test
        list_interval=0.5,
    )


@pytest.fixture
async def hostile() -> AsyncIterator[McpConnection]:
    connection = _connection()
    connection.start(asyncio.ensure_future)
    await until(lambda: connection.status == CONNECTED)
    yield connection
    await connection.stop()
    assert child_processes(HOSTILE_SERVER) == {}


async def test_a_first_tool_list_of_too_many_values_says_so() -> None:
    connection = _connection("--tools", "6000")
    connection.start(asyncio.ensure_future)
    try:
        await until(lambda: connection.status == FAILED)
        assert connection.error == (
            f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
        )
    finally:
        await connection.stop()
    assert child_processes(HOSTILE_SERVER) == {}


async def test_a_long_tool_list_is_read_up_to_its_first_tools() -> None:
    """Each listed tool is a model of the SDK's: past 1,024 they are not read."""
    connection = _connection("--tools", "1300")  # about 12 values a tool: within
    connection.start(asyncio.ensure_future)
    try:
        await until(lambda: connection.status == CONNECTED)
        assert len(connection.tools) == 128
        assert f"{MAX_LISTED_TOOLS - 128} or more tools over 128" in connection.skipped
    finally:
        await connection.stop()


async def test_a_tool_nested_too_deep_leaves_out_only_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    connection = _connection("--deep", "60")
    with caplog.at_level(logging.WARNING):
        connection.start(asyncio.ensure_future)
        try:
            await until(lambda: connection.status == CONNECTED)
            names = {tool.name for tool in connection.tools}
            assert "flood__notify" in names and "flood__deep" not in names
            assert any("deep" in why for why in connection.skipped)
            # Listed again (the server says so): the same tool is not logged again.
            assert _text(await connection.call("notify", {"times": 1})) == "sent"
            for _ in range(200):  # within the interval of 0.5 s and a little
                if _text(await connection.call("calls", {})) == "2":
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError("the tools were not listed again")
        finally:
            await connection.stop()
    logged = [r for r in caplog.records if "tools left out" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].getMessage().startswith("MCP server flood: 1 tools left out: ")


def _text(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


async def test_notifications_do_not_make_a_listing_each(
    hostile: McpConnection,
) -> None:
    """200 notifications at once: one listing at once, then one per interval."""
    assert _text(await hostile.call("calls", {})) == "1"  # connecting lists them
    assert _text(await hostile.call("notify", {"times": 200})) == "sent"
    await asyncio.sleep(1.3)  # the interval is 0.5 s
    listed = int(_text(await hostile.call("calls", {})))
    assert 2 <= listed <= 4, listed  # 201 before


async def test_a_tool_list_of_too_many_values_ends_the_connection(
    hostile: McpConnection,
) -> None:
    # About three values a tool: 6,000 tools are over the bound.
    assert _text(await hostile.call("grow_many", {"count": 6000})) == "grown"
    await until(lambda: hostile.status == FAILED)
    assert hostile.error == (
        f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
    )
    assert hostile.tools == []


async def test_a_result_of_too_many_parts_fails_the_call(
    hostile: McpConnection,
) -> None:
    result = await hostile.call("parts", {"count": 500})
    assert len(result.content) == 500
    # Each part is a model of its own (about 4 µs): the rest are not read.
    result = await hostile.call("parts", {"count": 3000})
    assert len(result.content) == MAX_RESULT_PARTS + 1
    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    assert last.text == f"…({3000 - MAX_RESULT_PARTS} more parts not read)"
    with pytest.raises(McpCallError):
        await hostile.call("parts", {"count": MAX_MESSAGE_VALUES})
    await until(lambda: hostile.status == FAILED)
    assert "more than" in (hostile.error or "")


async def test_a_result_is_read_whatever_its_tool_says_of_its_structure(
    hostile: McpConnection,
) -> None:
    """The SDK checks structured content against a tool's output schema.

    On the loop, with ``jsonschema``, whose ``pattern`` runs Python's ``re``
    without a time limit: a hostile server's ``^(a+)+$`` held the loop for
    0.57 s with 24 characters, and the time doubles with each one more
    (black box, 2026-11-28). Soul drops output schemas before the SDK reads
    a listing: ``mismatch``'s answer does not meet its schema, and the SDK
    would refuse it (RuntimeError) had it seen the schema.
    """
    result = await hostile.call("mismatch", {})
    assert _text(result) == "a"
    assert result.structuredContent is None  # a text part says it already


async def test_an_answer_that_is_no_tool_result_fails_the_call(
    hostile: McpConnection,
) -> None:
    """The SDK's model of the answer fails: the call says so, the connection stays."""
    with pytest.raises(McpCallError, match="malformed answered with no tool result"):
        await hostile.call("malformed", {})
    assert _text(await hostile.call("calls", {})) == "1"
    assert hostile.status == CONNECTED


async def test_a_listing_loses_its_output_schemas_and_a_result_its_structure() -> None:
    tools = {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "tools": [
                {
                    "name": "a",
                    "inputSchema": {"type": "object"},
                    "outputSchema": {"type": "object"},
                },
                "not a tool",
            ]
        },
    }
    decoded = await decode_message(json.dumps(tools).encode(), _in_thread)
    assert not isinstance(decoded, Exception)
    assert decoded.message.root.result == {  # type: ignore[union-attr]
        "tools": [{"name": "a", "inputSchema": {"type": "object"}}, "not a tool"]
    }
    for content, kept in (
        ([{"type": "text", "text": "{}"}], False),
        ([{"type": "image", "data": "", "mimeType": "image/png"}], True),
        ([], True),
    ):
        result = {"content": content, "structuredContent": {"r": 1}}
        line = json.dumps({"jsonrpc": "2.0", "id": 4, "result": result}).encode()
        decoded = await decode_message(line, _in_thread)
        assert not isinstance(decoded, Exception)
        read = decoded.message.root.result  # type: ignore[union-attr]
        assert ("structuredContent" in read) is kept


def test_only_the_end_of_stderr_is_kept() -> None:
    tail = StderrTail()
    for n in range(2000):
        tail.add(f"line {n} ".encode() * 100)
    kept = tail.text()
    assert len(kept.encode()) == STDERR_KEPT
    assert kept.endswith("line 1999 ")


async def test_a_server_s_stderr_flood_leaves_its_last_words() -> None:
    """Its stderr went to a file that grew without end and was read whole."""
    connection = _connection("--stderr-flood", "20")  # 20 MiB, then last words
    connection.start(asyncio.ensure_future)
    try:
        await until(lambda: connection.status == FAILED, timeout=30)
        assert (connection.stderr or "").endswith("hostile_server: last words")
    finally:
        await connection.stop()


async def test_a_message_decodes_as_the_sdk_reads_it() -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "tools": [
                {
                    "name": f"t{n}",
                    "description": "d",
                    "inputSchema": {"type": "object", "properties": {}},
                }
                for n in range(1000)  # over LOOP_JSON_VALUES: decoded in a thread
            ]
        },
    }
    line = json.dumps(message).encode()
    assert not untrusted.decodes_on_loop(line)
    decoded = await decode_message(line, _in_thread)
    assert not isinstance(decoded, Exception)
    assert decoded.message == types.JSONRPCMessage.model_validate_json(line)
    small = await decode_message(
        b'{"jsonrpc": "2.0", "method": "a\\ud800"}', _in_thread
    )
    assert not isinstance(small, Exception)
    assert small.message.root.method == "a\ufffd"  # type: ignore[union-attr]


async def test_what_is_not_a_message_is_handed_to_the_session() -> None:
    for line in (b"not json", b'{"jsonrpc": "2.0"}', b"\xff\xfe{"):
        decoded = await decode_message(line, _in_thread)
        assert isinstance(
            decoded, untrusted.UntrustedInputError | pydantic.ValidationError
        ), decoded
    with pytest.raises(McpMessageError, match="values"):
        await decode_message(
            b"[" + b"0," * (MAX_MESSAGE_VALUES + 1) + b"0]", _in_thread
        )
    with pytest.raises(McpMessageError, match="larger"):
        await decode_message(b'"' + b"a" * MAX_MESSAGE_BYTES + b'"', _in_thread)
