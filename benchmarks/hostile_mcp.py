"""Class 10 of ``benchmarks.hostile``: an MCP server's messages.

What Soul's stdio transport (``core/mcp/messages.decode_message``) and then
the SDK's session (the result's model: ``ListToolsResult``,
``CallToolResult``) do with one line of a server's output, as a ticker on the
loop sees it: the largest messages within the bounds, one over them, and for
each an ordinary message of the same size (one long text part). Over HTTP
(``core/mcp/http.py``), the same messages as a JSON body: Soul writes each
again (``messages.rewrite_message``), then the SDK parses that on the loop
(``JSONRPCMessage.model_validate_json``) and makes the result's model; and
the largest text within the HTTP bound, ASCII and CJK. A black-box run
(2026-11-28) found 650 ms for a list of 60,000 tools through the SDK's own
transport. A helper module, not a benchmark.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
import json
from typing import Any

from mcp import types

from benchmarks.hostile_meter import Meter, Row, Section, in_executor, size_label
from custom_components.soul.core.mcp.messages import (
    MAX_HTTP_LISTED_TOOLS,
    MAX_HTTP_MESSAGE_BYTES,
    MAX_MESSAGE_VALUES,
    McpMessageError,
    SchemaStash,
    decode_message,
    rewrite_message,
)


def _response(result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": result}).encode()


def _tools(count: int) -> bytes:
    return _response(
        {
            "tools": [
                {"name": f"t{n}", "inputSchema": {"type": "object"}}
                for n in range(count)
            ]
        }
    )


def _parts(count: int) -> bytes:
    return _response({"content": [{"type": "text", "text": "p"}] * count})


def _fastmcp_tool(number: int) -> dict[str, Any]:
    """Return a tool as FastMCP lists one (12 values: its input and output schemas)."""
    return {
        "name": f"t{number}",
        "description": "d",
        "inputSchema": {
            "properties": {"x": {"title": "X", "type": "string"}},
            "required": ["x"],
            "title": "echoArguments",
            "type": "object",
        },
        "outputSchema": {
            "properties": {"result": {"title": "Result", "type": "string"}},
            "required": ["result"],
            "title": "echoOutput",
            "type": "object",
        },
    }


def _one_part(size: int) -> bytes:
    """Return an ordinary result of about ``size`` bytes: one text part."""
    return _response({"content": [{"type": "text", "text": "x" * max(0, size - 60)}]})


async def _read(raw: bytes, model: type[Any]) -> None:
    """Decode one line as the transport does, then make the session's model of it."""
    try:
        message = await decode_message(raw, in_executor)
    except McpMessageError:
        return  # refused: the connection ends
    if isinstance(message, Exception):
        return
    root = message.message.root
    if isinstance(root, types.JSONRPCResponse):
        model.model_validate(root.result)


async def _read_http(raw: bytes, model: type[Any]) -> None:
    """Read one JSON body as Soul's HTTP transport, then the SDK's client, do.

    A listing's tools get their input schemas back, as the connection does.
    """
    stash = SchemaStash()
    try:
        written = await rewrite_message(raw, in_executor, stash)
    except McpMessageError:
        return  # refused: the connection ends
    root = types.JSONRPCMessage.model_validate_json(written).root
    if isinstance(root, types.JSONRPCResponse):
        result = model.model_validate(root.result)
        if isinstance(result, types.ListToolsResult):
            for tool in result.tools:
                stash.restore(tool)


def _largest(build: Any, per_item: int) -> tuple[int, bytes]:
    """Return the largest count whose message ``build`` makes is within the bound."""
    count = MAX_MESSAGE_VALUES // per_item
    while (raw := build(count)).count(b",") > MAX_MESSAGE_VALUES:
        count -= 1
    return count, raw


async def _rows(
    meter: Meter,
    cases: list[tuple[str, bytes, type[Any]]],
    read: Callable[[bytes, type[Any]], Awaitable[None]],
) -> list[Row]:
    """Measure each case and its benign twin (one text part of its size)."""
    rows = []
    for name, raw, model in cases:
        benign = _one_part(len(raw))
        rows.append(
            Row(
                name,
                size_label(len(raw)),
                "stall",
                await meter.stall(lambda r=raw, m=model: read(r, m)),
                await meter.stall(lambda b=benign: read(b, types.CallToolResult)),
            )
        )
    return rows


async def mcp_messages(meter: Meter) -> list[Section]:
    """Class 10: one line of an MCP server's output, decoded and validated."""
    section = Section(
        "10",
        "An MCP server's messages",
        "core/mcp/stdio.decode_message (executor when large) + the SDK's result model",
    )
    # About three values a tool, two a part: at the bound, and well over it.
    tools, tools_raw = _largest(_tools, 3)
    parts, parts_raw = _largest(_parts, 2)
    cases = [
        (f"tool list, {tools:,} tools (1,024 read)", tools_raw, types.ListToolsResult),
        ("tool list, 60,000 tools (refused)", _tools(60_000), types.ListToolsResult),
        (
            f"result, {parts:,} parts (1,024 read)",
            parts_raw,
            types.CallToolResult,
        ),
        ("result, 150,000 parts (refused)", _parts(150_000), types.CallToolResult),
    ]
    section.rows += await _rows(meter, cases, _read)
    http = Section(
        "10b",
        "An MCP server's messages over HTTP",
        "core/mcp/messages.rewrite_message (executor when large) + the SDK's"
        " parse and result model",
    )
    text = MAX_HTTP_MESSAGE_BYTES - 100
    cases = [
        (
            f"tool list, {tools:,} tools ({MAX_HTTP_LISTED_TOOLS} read)",
            tools_raw,
            types.ListToolsResult,
        ),
        (
            f"tool list, 1,300 tools of FastMCP's schemas ({MAX_HTTP_LISTED_TOOLS} read)",
            _response({"tools": [_fastmcp_tool(n) for n in range(1300)]}),
            types.ListToolsResult,
        ),
        (
            "one tool, a schema of 5,000 properties (kept aside)",
            _response(
                {
                    "tools": [
                        {
                            "name": "wide",
                            "inputSchema": {
                                "type": "object",
                                "properties": {
                                    f"p{n}": {"type": "string"} for n in range(5000)
                                },
                            },
                        }
                    ]
                }
            ),
            types.ListToolsResult,
        ),
        *cases[1:],
        (
            "a result of 5,000 structured values, no text (refused)",
            _response(
                {"content": [], "structuredContent": {str(n): n for n in range(5000)}}
            ),
            types.CallToolResult,
        ),
        (f"one text of {size_label(text)}", _one_part(text), types.CallToolResult),
        (
            f"one text of {text // 6:,} CJK characters (escaped)",
            _response({"content": [{"type": "text", "text": "汉" * (text // 6)}]}),
            types.CallToolResult,
        ),
        (
            f"one text over {size_label(MAX_HTTP_MESSAGE_BYTES)} (refused)",
            _one_part(MAX_HTTP_MESSAGE_BYTES + 100),
            types.CallToolResult,
        ),
    ]
    http.rows += await _rows(meter, cases, _read_http)
    return [section, http]
