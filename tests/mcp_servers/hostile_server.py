"""An MCP server that floods its client, for the bounds of Soul's transports.

Run it as a script: ``python /abs/path/tests/mcp_servers/hostile_server.py
[--tools N] [--rich N] [--deep N] [--stderr-flood N] [--http
[--json-response]]``: ``--tools``
starts with ``N`` more tools (``t0``, …), ``--rich`` with ``N`` tools
(``r0``, …) whose input schemas have 16 described properties each (about 50
values a tool, as rich servers list them), ``--deep`` with a tool ``deep``
whose input schema nests ``N`` objects; ``--stderr-flood N`` writes ``N``
MiB to stderr, then ``"hostile_server: last words"``, and exits. Over stdio by default; with ``--http`` it serves
streamable HTTP (answers as server-sent events, or as JSON bodies with
``--json-response``) and SSE as ``http_server`` does, printing ``PORT <n>``
once it listens. Tools (written with the SDK's FastMCP):

- ``notify(times: int)``: sends ``notifications/tools/list_changed`` ``times``
  times, then answers ``"sent"``.
- ``grow_many(count: int)``: registers ``count`` more tools (``t0``, ``t1``, …),
  notifies the client that the list changed, answers ``"grown"``: a tool list
  of ``count`` tools is one message of about three values a tool.
- ``parts(count: int)``: answers ``count`` text parts ``"p0"``, ``"p1"``, ….
- ``calls()``: how many times ``tools/list`` was asked for, as text.
- ``big(size: int)``: answers one text of ``size`` characters ``x``.
- ``mismatch()``: listed with an output schema (a ``pattern``) that its
  structured answer does not meet; its text part says ``"a"``.
- ``malformed()``: answers ``{"content": 5}``, which is no tool result
  (written to the session's stream past the SDK's models; stdio).
- ``junk(times: int, size: int)``: sends ``times`` notifications the client
  cannot validate, each with ``size`` characters of text after a terminal
  escape sequence (past the SDK's models; stdio), then answers ``"sent"``.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
import sys
from typing import Any

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.message import SessionMessage


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def rich_schema(number: int) -> dict[str, Any]:
    """Return the input schema of ``--rich`` tool ``number`` (16 properties)."""
    return {
        "type": "object",
        "properties": {
            f"p{n}": {"type": "string", "description": f"property {n} of r{number}"}
            for n in range(16)
        },
        "required": ["p0"],
    }


MISMATCH = types.Tool(
    name="mismatch",
    inputSchema={"type": "object"},
    outputSchema={
        "type": "object",
        "properties": {"r": {"type": "string", "pattern": "^b$"}},
    },
)


def _echo(x: str) -> str:
    return x


def add_echoes(server: FastMCP, count: int) -> None:
    """Register ``count`` echo tools ``t0``, ``t1``, … (at most ``count``; none for 0).

    The SDK reads a function's signature into a model for every ``add_tool``:
    6,000 of them took 13 s to start on a slow machine, near the tests' 15 s
    wait. The first is registered so; the rest are copies of it, renamed.
    """
    if count <= 0:
        return
    server.add_tool(_echo, name="t0", description="d")
    tools = getattr(getattr(server, "_tool_manager", None), "_tools", None)
    first = tools.get("t0") if isinstance(tools, dict) else None
    for number in range(1, count):
        if first is None:  # another SDK: the slow way
            server.add_tool(_echo, name=f"t{number}", description="d")
        else:
            tools[f"t{number}"] = first.model_copy(update={"name": f"t{number}"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--rich", type=int, default=0)
    parser.add_argument("--stderr-flood", type=int, default=0)
    parser.add_argument("--deep", type=int, default=0)
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    args = parser.parse_args()
    if args.stderr_flood:
        chunk = "e" * 1023 + "\n"
        for _ in range(args.stderr_flood * 1024):
            sys.stderr.write(chunk)
        sys.stderr.write("hostile_server: last words\n")
        sys.stderr.flush()
        return 1
    server = FastMCP("soul-test-hostile", json_response=args.json_response)
    listed = [0]
    list_tools = server.list_tools

    async def counted_list_tools() -> list[types.Tool]:
        listed[0] += 1
        return await list_tools()

    server._mcp_server.list_tools()(counted_list_tools)

    async def changed(ctx: Context) -> None:  # type: ignore[type-arg]
        await ctx.session.send_notification(
            types.ServerNotification(
                types.ToolListChangedNotification(
                    method="notifications/tools/list_changed"
                )
            ),
            # Answering with JSON bodies, the server has no stream of the
            # request to send it on: it goes on the client's own event stream.
            related_request_id=None if args.json_response else ctx.request_id,
        )

    @server.tool()
    async def notify(ctx: Context, times: int) -> str:  # type: ignore[type-arg]
        """Say that the tool list changed ``times`` times."""
        for _ in range(times):
            await changed(ctx)
        return "sent"

    @server.tool()
    async def grow_many(ctx: Context, count: int) -> str:  # type: ignore[type-arg]
        """Add ``count`` tools and say that the tool list changed."""

        add_echoes(server, count)
        await changed(ctx)
        return "grown"

    @server.tool(structured_output=False)
    def parts(count: int) -> list[types.ContentBlock]:
        """``count`` text parts."""
        return [types.TextContent(type="text", text=f"p{n}") for n in range(count)]

    @server.tool()
    def big(size: int) -> str:
        """One text of ``size`` characters."""
        return "x" * size

    @server.tool()
    async def malformed(ctx: Context) -> str:  # type: ignore[type-arg]
        """Answer with no tool result, before the SDK answers with one."""
        response = types.JSONRPCResponse(
            jsonrpc="2.0", id=ctx.request_id, result={"content": 5}
        )
        await ctx.session._write_stream.send(
            SessionMessage(types.JSONRPCMessage(response))
        )
        return "too late"

    @server.tool()
    async def junk(ctx: Context, times: int, size: int) -> str:  # type: ignore[type-arg]
        """Send ``times`` notifications no client can validate."""
        notification = types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/progress",
            params={"progressToken": [1], "junk": "\x1b[31m" + "x" * size},
        )
        for _ in range(times):
            await ctx.session._write_stream.send(
                SessionMessage(types.JSONRPCMessage(notification))
            )
        return "sent"

    @server.tool()
    def calls() -> str:
        """How many times the tools were listed."""
        return str(listed[0])

    add_echoes(server, args.tools)
    extra = [MISMATCH]
    extra += [
        types.Tool(name=f"r{n}", description="d", inputSchema=rich_schema(n))
        for n in range(args.rich)
    ]
    if args.deep:
        extra.append(types.Tool(name="deep", inputSchema=_nested(args.deep)))

    async def with_extra() -> list[types.Tool]:
        return [*await counted_list_tools(), *extra]

    server._mcp_server.list_tools()(with_extra)
    call_tool = server.call_tool

    async def calling(name: str, arguments: dict[str, Any]) -> Any:
        if name == "mismatch":  # as it is, past the server's own output check
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="a")],
                structuredContent={"r": "a"},
            )
        return await call_tool(name, arguments)

    server._mcp_server.call_tool(validate_input=False)(calling)

    if not args.http:
        server.run("stdio")
        return 0
    # Run as a script, sys.path[0] is this folder: make the repository importable.
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.mcp_servers.http_server import build_app, serve_app

    asyncio.run(serve_app(build_app(server=server)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
