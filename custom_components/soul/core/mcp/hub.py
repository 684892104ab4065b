"""Every configured MCP server, and their tools for the souls and the model.

``McpHub`` starts one ``McpConnection`` per server, offers a soul the tools of
the servers it may use (``tool_set``: an ``ExtraTools`` beside the body's
skills and ``recall_memory``), checks the model's arguments against a tool's
schema before the server sees them, turns results into text and failures
into errors the model can talk about — each failure also a
``system_notification`` in the journal (XingChen-V §2.2), as are servers
connecting and failing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import Any

from ..cognition.events import EventBus
from ..cognition.notices import INFO, WARNING, notice
from ..logs import trace_logger
from .config import ServerConfig
from .connection import (
    CALL_TIMEOUT,
    CONNECT_TIMEOUT,
    CONNECTED,
    FAILED,
    HttpClientFactory,
    McpCallError,
    McpConnection,
    RunBlocking,
)
from .sdk_logs import install_guard
from .tools import McpTool, result_text

_LOGGER = trace_logger(__name__)


class McpToolError(Exception):
    """A tool call the model asked for failed; the message is for the model."""


class McpHub:
    """The MCP servers of one Soul hub entry."""

    def __init__(
        self,
        *,
        run_blocking: RunBlocking,
        http_client: HttpClientFactory,
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]],
        events: Callable[[], EventBus | None] = lambda: None,
        clock: Callable[[], float],
        on_change: Callable[[], None] = lambda: None,
        connect_timeout: float = CONNECT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        **connection_options: Any,
    ) -> None:
        """Wire the hub; nothing starts before ``start``."""
        self._run_blocking = run_blocking
        self._http_client = http_client
        self._spawn = spawn
        self._events = events
        self._clock = clock
        self._on_change = on_change
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self._options = connection_options
        self.connections: dict[str, McpConnection] = {}
        self._seen: dict[str, str] = {}
        self.calls = 0
        self.failures = 0
        self._unguard: Callable[[], None] | None = None

    def start(self, servers: Mapping[str, ServerConfig]) -> None:
        """Start a connection for every server (they connect in the background).

        While servers run, what the SDK logs of their messages is bounded
        (``sdk_logs``).
        """
        if servers and self._unguard is None:
            self._unguard = install_guard()
        for name, config in servers.items():
            connection = McpConnection(
                config,
                run_blocking=self._run_blocking,
                http_client=self._http_client,
                on_change=self._changed,
                connect_timeout=self.connect_timeout,
                call_timeout=self.call_timeout,
                **self._options,
            )
            self.connections[name] = connection
            connection.start(self._spawn)

    async def stop(self) -> None:
        """Stop every connection (child processes end); idempotent."""
        connections = list(self.connections.values())
        await asyncio.gather(*(c.stop() for c in connections))
        if self._unguard is not None:
            self._unguard()
            self._unguard = None

    def _changed(self, connection: McpConnection) -> None:
        """Tell the glue, and the journal when a server connects or fails anew."""
        was = self._seen.get(connection.name)
        self._seen[connection.name] = connection.status
        if connection.status != was and connection.status in (CONNECTED, FAILED):
            notice(
                self._events(), self._clock,
                f"MCP server {connection.status}",
                level=INFO if connection.status == CONNECTED else WARNING,
                event=f"mcp_server_{connection.status}", server=connection.name,
                tools=len(connection.tools), error=connection.error,
            )  # fmt: skip
        self._on_change()

    # -- tools -----------------------------------------------------------------------

    def tools(self, allowed: Collection[str] | None = None) -> list[McpTool]:
        """Return the tools of the connected servers (of ``allowed`` ones only)."""
        return [
            tool
            for name, connection in self.connections.items()
            if connection.status == CONNECTED and (allowed is None or name in allowed)
            for tool in connection.tools
        ]

    def tool_set(self, allowed: Collection[str] | None = None) -> McpToolSet | None:
        """Return the tools a soul may use as an ``ExtraTools``, or None (no tools)."""
        tools = self.tools(allowed)
        return McpToolSet(self, tools) if tools else None

    async def call(self, tool: McpTool, arguments: dict[str, Any]) -> str:
        """Run one tool; return its result as text or raise ``McpToolError``."""
        self.calls += 1
        errors = tool.skill.argument_errors(arguments)
        if errors:
            raise McpToolError("invalid arguments: " + "; ".join(errors[:5]))
        connection = self.connections.get(tool.server)
        if connection is None:
            self._failed(tool, "the server is not configured")
            raise McpToolError(f"the MCP server {tool.server} is not configured")
        try:
            result = await connection.call(tool.tool, arguments)
        except McpCallError as err:
            self._failed(tool, str(err))
            raise McpToolError(str(err)) from err
        text = result_text(result.content, result.structuredContent)
        if result.isError:
            self._failed(tool, text[:300] or "the tool reported an error")
            raise McpToolError(text or "the tool reported an error")
        return text

    def _failed(self, tool: McpTool, error: str) -> None:
        self.failures += 1
        _LOGGER.info("MCP tool %s failed: %s", tool.name, error)
        notice(
            self._events(), self._clock, "MCP tool failed", level=WARNING,
            event="mcp_tool_failed", server=tool.server, tool=tool.tool, error=error,
        )  # fmt: skip

    def diagnostics(self) -> list[dict[str, Any]]:
        """Return each server's state, its tools and its redacted configuration."""
        return [
            {
                "name": name,
                "status": connection.status,
                "error": connection.error,
                "attempts": connection.attempts,
                "connects": connection.connects,
                "server": connection.server_info,
                "config": connection.config.redacted(),
                "tools": [tool.name for tool in connection.tools],
                "skipped": list(connection.skipped),
            }
            for name, connection in self.connections.items()
        ]


class McpToolSet:
    """A soul's MCP tools for one turn (``chat_tools.ExtraTools``)."""

    def __init__(self, hub: McpHub, tools: list[McpTool]) -> None:
        """Offer ``tools`` through ``hub``."""
        self._hub = hub
        self._tools = {tool.name: tool for tool in tools}
        self.specs = [tool.spec() for tool in tools]

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run the tool named ``name`` (``<server>__<tool>``)."""
        tool = self._tools.get(name)
        if tool is None:
            raise McpToolError(f"no MCP tool {name}")
        return await self._hub.call(tool, arguments)
