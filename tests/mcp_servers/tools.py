"""The test tools, defined once and served by every test MCP server.

``build_server`` returns a FastMCP server with these tools:

- ``add(a: int, b: int) -> int``: a normal tool (text "5" and structured
  ``{"result": 5}``).
- ``fail(reason: str)``: raises; the result has ``isError`` true and a text part
  containing the reason.
- ``slow(seconds: float)``: sleeps, then returns ``"done after {seconds:g} s"``.
- ``picture()``: a text part and an image part (a valid 1×1 PNG, base64,
  ``image/png``).
- ``resource()``: an embedded resource with text contents (``RESOURCE_URI``).
- ``whoami()``: the server's ``MCP_TEST_TOKEN`` environment variable, or
  ``"no token"``.
- ``grow(standalone: bool = False)``: registers ``extra(x: str) -> str`` (once)
  and sends ``notifications/tools/list_changed``. By default the notification is
  related to the ``grow`` request, so over streamable HTTP it travels on that
  request's response stream, before the result (deterministic). With
  ``standalone=True`` it is sent unrelated (``ServerSession.send_tool_list_changed``):
  over streamable HTTP it goes to the client's GET stream, and is dropped by the
  server while that stream is not open yet.

The server advertises ``tools.listChanged`` in its capabilities.

Module-level annotations are not postponed here: FastMCP finds the ``Context``
parameter of a tool from its annotation.
"""

import asyncio
import base64
import os
import struct
from typing import Any
import zlib

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import NotificationOptions
from mcp.server.lowlevel.server import Server

RESOURCE_URI = "test://soul/resource.txt"
RESOURCE_TEXT = "the contents of a test resource"
PICTURE_TEXT = "a tiny red square"
NO_TOKEN = "no token"
TOKEN_ENV = "MCP_TEST_TOKEN"

#: The tools every server has, before ``grow``.
TOOL_NAMES = frozenset({"add", "fail", "slow", "picture", "resource", "whoami", "grow"})


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _tiny_png() -> bytes:
    """A valid 1×1 opaque red PNG (8-bit RGB)."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then R G B
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


PNG_BYTES = _tiny_png()
PNG_BASE64 = base64.b64encode(PNG_BYTES).decode("ascii")


def _advertise_tools_list_changed(server: Server[Any, Any]) -> None:
    """Make every transport announce ``capabilities.tools.listChanged``.

    FastMCP's transports call ``create_initialization_options()`` without
    notification options; default them to ``tools_changed=True``.
    """
    create = server.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return create(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
        )

    server.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


def register_tools(server: FastMCP) -> None:
    """Register the test tools on ``server``."""

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail, with the given reason."""
        raise RuntimeError(reason)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Wait the given number of seconds, then answer."""
        await asyncio.sleep(seconds)
        return f"done after {seconds:g} s"

    @server.tool(structured_output=False)
    def picture() -> list[types.ContentBlock]:
        """A caption and a tiny PNG image."""
        return [
            types.TextContent(type="text", text=PICTURE_TEXT),
            types.ImageContent(type="image", data=PNG_BASE64, mimeType="image/png"),
        ]

    @server.tool(structured_output=False)
    def resource() -> list[types.ContentBlock]:
        """An embedded text resource."""
        return [
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=RESOURCE_URI,  # type: ignore[arg-type]
                    mimeType="text/plain",
                    text=RESOURCE_TEXT,
                ),
            )
        ]

    @server.tool()
    def whoami() -> str:
        """The server's MCP_TEST_TOKEN environment variable, or "no token"."""
        return os.environ.get(TOKEN_ENV, NO_TOKEN)

    def extra(x: str) -> str:
        """Echo x, tagged (added at run time by grow)."""
        return f"extra {x}"

    @server.tool()
    async def grow(ctx: Context, standalone: bool = False) -> str:  # type: ignore[type-arg]
        """Add the tool "extra" and notify the client that the tool list changed."""
        if "extra" not in {tool.name for tool in await server.list_tools()}:
            server.add_tool(extra)
        if standalone:
            await ctx.session.send_tool_list_changed()
        else:
            await ctx.session.send_notification(
                types.ServerNotification(
                    types.ToolListChangedNotification(
                        method="notifications/tools/list_changed"
                    )
                ),
                related_request_id=ctx.request_id,
            )
        return "extra added"


def build_server(name: str = "soul-test", **settings: Any) -> FastMCP:
    """A FastMCP server with the test tools (``settings`` go to FastMCP)."""
    settings.setdefault("log_level", "WARNING")
    server = FastMCP(name, **settings)
    _advertise_tools_list_changed(server._mcp_server)
    register_tools(server)
    return server
