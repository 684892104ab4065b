"""One MCP server, kept connected: started, watched, restarted, stopped.

``McpConnection`` runs one supervisor task per server. Each attempt opens the
transport — a child process for stdio (``stdio.bounded_stdio_client``: an
argument list, never a shell; every message bounded before it is parsed; the
end of its stderr kept, which goes to the log and the repair issue),
streamable HTTP or SSE with the configured headers, each message
bounded before the SDK parses it (``http.BoundedTransport``) — initialises the
session and lists the tools within ``connect_timeout``, then waits until it is
stopped or the connection ends: the child's output closes (it died), a ping
every ``ping_interval`` goes unanswered, or a call finds it closed. Then it
tries again after a backoff (1 s, doubling to 60 s; back to 1 s after a
minute connected). ``notifications/tools/list_changed`` lists the tools again.
Tool schemas are checked off the event loop (``run_blocking``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from datetime import timedelta
import time
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
import httpx
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
import pydantic

from .. import untrusted
from ..logs import trace_logger
from .config import ServerConfig
from .http import BoundedTransport
from .messages import McpMessageError, SchemaStash
from .stdio import StderrTail, bounded_stdio_client
from .tools import McpTool, parse_tools

_LOGGER = trace_logger(__name__)

CONNECT_TIMEOUT = 20.0
CALL_TIMEOUT = 60.0
PING_INTERVAL = 30.0
LIST_INTERVAL = 10.0  # seconds between two listings of the tools a server asked for
BACKOFF_MIN = 1.0
BACKOFF_MAX = 60.0
STABLE_AFTER = 60.0  # connected this long: the next failure starts the backoff anew
MAX_PAGES = 10
STDERR_TAIL = 600
LOGGED_SKIPPED = 5  # reasons a log line names of the tools left out

STARTING = "starting"
CONNECTED = "connected"
FAILED = "failed"
STOPPED = "stopped"

# The host's HTTP client: headers, timeout, and what wraps its transport.
WrapTransport = Callable[[httpx.AsyncBaseTransport], httpx.AsyncBaseTransport]
HttpClientFactory = Callable[[dict[str, str], float, WrapTransport], httpx.AsyncClient]
RunBlocking = Callable[..., Awaitable[Any]]


class McpCallError(Exception):
    """A tool call failed: the server is down, timed out or answered an error."""


class McpConnection:
    """A supervised session with one MCP server."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        run_blocking: RunBlocking,
        http_client: HttpClientFactory,
        on_change: Callable[[McpConnection], None] = lambda _c: None,
        connect_timeout: float = CONNECT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        ping_interval: float = PING_INTERVAL,
        list_interval: float = LIST_INTERVAL,
        backoff: tuple[float, float] = (BACKOFF_MIN, BACKOFF_MAX),
    ) -> None:
        """Describe the connection; ``start`` runs it."""
        self.config = config
        self._run_blocking = run_blocking
        self._http_client = http_client
        self._on_change = on_change
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.ping_interval = ping_interval
        self.list_interval = list_interval
        self._backoff = backoff
        self.status = STARTING
        self.tools: list[McpTool] = []
        self.skipped: list[str] = []
        self._skipped_logged: list[str] = []
        self.error: str | None = None
        # The end of what a stdio server wrote to stderr when its last attempt
        # failed. Apart from ``error``: a server may print anything there (its
        # environment, a token), so it goes to the log and the repair issue,
        # which administrators read, not to entities or diagnostics.
        self.stderr: str | None = None
        self.attempts = 0
        self.connects = 0
        self.server_info: str | None = None
        self._why: str | None = None  # why the current attempt ended
        self._refused: str | None = None  # a message the transport would not read
        self._session: ClientSession | None = None
        # The input schemas of the tools an HTTP server lists (per attempt).
        self._stash = SchemaStash()
        # What the session reads the server's messages from (while it runs).
        self._forward: MemoryObjectSendStream[Any] | None = None
        self._stop = asyncio.Event()
        self._ended: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """Return the server's configured name."""
        return self.config.name

    # -- lifecycle ---------------------------------------------------------------

    def start(
        self, spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]
    ) -> None:
        """Start the supervisor (``spawn`` creates the task, e.g. Home Assistant's)."""
        if self._task is None:
            self._task = spawn(self._supervise())

    async def stop(self, timeout: float = 10.0) -> None:
        """Close the session and end the child process; idempotent."""
        self._stop.set()
        if self._ended is not None:
            self._ended.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._set(STOPPED, None)

    async def _supervise(self) -> None:
        delay = self._backoff[0]
        while not self._stop.is_set():
            self.attempts += 1
            began = time.monotonic()
            try:
                await self._connect_once()
            except Exception as err:  # noqa: BLE001 - any failure is retried
                if self._stop.is_set():
                    break
                # Why the transport ended, when it said (a refused message),
                # rather than what that did to the request waiting then.
                self._set(FAILED, self._refused or describe(err))
                _LOGGER.info(
                    "MCP server %s: %s%s",
                    self.name,
                    self.error,
                    f"; stderr: {self.stderr}" if self.stderr else "",
                )
            else:
                if self._stop.is_set():
                    break
                self._set(FAILED, self._refused or self._why or "the connection ended")
            if time.monotonic() - began > STABLE_AFTER:
                delay = self._backoff[0]
            try:
                async with asyncio.timeout(delay):
                    await self._stop.wait()
            except TimeoutError:
                pass
            delay = min(delay * 2, self._backoff[1])

    async def _connect_once(self) -> None:
        self._why = None
        self._refused = None
        self._stash = SchemaStash()
        tail = StderrTail() if self.config.transport == "stdio" else None
        try:
            async with AsyncExitStack() as stack:
                if tail is not None:
                    read, write = await stack.enter_async_context(
                        bounded_stdio_client(
                            StdioServerParameters(
                                command=self.config.command or "",
                                args=list(self.config.args),
                                env=dict(self.config.env) or None,
                                cwd=self.config.cwd,
                                encoding_error_handler="replace",
                            ),
                            tail,
                            self._run_blocking,
                        )
                    )
                elif self.config.transport == "sse":
                    read, write = await stack.enter_async_context(
                        sse_client(
                            self.config.url or "",
                            headers=dict(self.config.headers),
                            timeout=self.connect_timeout,
                            httpx_client_factory=self._sse_client_factory,
                        )
                    )
                else:
                    client = await stack.enter_async_context(
                        self._http_client(
                            dict(self.config.headers),
                            self.connect_timeout,
                            self._bounded,
                        )
                    )
                    read, write, _ = await stack.enter_async_context(
                        streamable_http_client(
                            self.config.url or "", http_client=client
                        )
                    )
                await self._serve(read, write)
        except BaseException as err:
            # Read once the child has exited: its last words are in the tail.
            if tail is not None and not isinstance(err, asyncio.CancelledError):
                self.stderr = _last_words(tail.text()) or None
            raise

    async def _serve(self, read: Any, write: Any) -> None:
        """Run the session until stopped or the connection ends."""
        ended = self._ended = asyncio.Event()
        refresh = asyncio.Event()
        forward_send, forward_receive = anyio.create_memory_object_stream[Any](0)
        self._forward = forward_send

        async def pump() -> None:
            # The transport's stream ends when the child exits or the HTTP
            # stream closes: that ends this attempt.
            try:
                async with forward_send:
                    async for message in read:
                        await forward_send.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                if not ended.is_set():
                    self._why = self._why or "the server closed the connection"
                ended.set()

        async def handle(message: Any) -> None:
            if isinstance(message, types.ServerNotification) and isinstance(
                message.root, types.ToolListChangedNotification
            ):
                refresh.set()
            elif isinstance(message, McpMessageError):
                self._refused = str(message)  # the stream ends next
            elif isinstance(message, Exception):
                _LOGGER.debug("MCP server %s: %s", self.name, message)

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            async with ClientSession(
                forward_receive, write, message_handler=handle
            ) as session:
                with anyio.fail_after(self.connect_timeout):
                    info = await session.initialize()
                    self.server_info = (
                        f"{info.serverInfo.name} {info.serverInfo.version}"[:120]
                    )
                    await self._list_tools(session)
                self._session = session
                self.connects += 1
                self._set(CONNECTED, None)
                try:
                    await self._watch(session, ended, refresh)
                finally:
                    self._session = None
            group.cancel_scope.cancel()

    async def _watch(
        self, session: ClientSession, ended: asyncio.Event, refresh: asyncio.Event
    ) -> None:
        """Wait for the end; list the tools again when told; ping now and then.

        A server may say its tools changed as often as it likes: they are
        listed again at once the first time, then at most once every
        ``list_interval`` (a hostile server's notifications had Soul list
        60,000 tools three times a second).
        """
        listed_at = float("-inf")
        while not ended.is_set() and not self._stop.is_set():
            waiter = asyncio.ensure_future(ended.wait())
            waits = {waiter}
            timeout = self.ping_interval
            hold = listed_at + self.list_interval - time.monotonic()
            if refresh.is_set() and hold > 0:
                timeout = min(timeout, hold)  # told already: list when it is time
            else:
                waits.add(asyncio.ensure_future(refresh.wait()))
            done, pending = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if ended.is_set() or self._stop.is_set():
                return
            try:
                with anyio.fail_after(self.connect_timeout):
                    if (
                        refresh.is_set()
                        and time.monotonic() >= listed_at + self.list_interval
                    ):
                        refresh.clear()
                        listed_at = time.monotonic()
                        await self._list_tools(session)
                        self._on_change(self)
                    elif not done:
                        await session.send_ping()
            except Exception as err:  # noqa: BLE001 - the connection is gone
                self._why = describe(err)
                return

    async def _list_tools(self, session: ClientSession) -> None:
        listed: list[types.Tool] = []
        unread: list[str] = []
        cursor: str | None = None
        # Over HTTP the transport kept each tool's input schema (``messages``).
        stash = None if self.config.transport == "stdio" else self._stash
        for _ in range(MAX_PAGES):
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            if stash is None:
                listed += page.tools
            else:  # HTTP: each page's schemas, before the next page replaces them
                for tool in page.tools:
                    if (restored := stash.restore(tool)) is not None:
                        listed.append(restored)
                    else:
                        unread.append(
                            f"{untrusted.clean(tool.name, 80, multiline=False)!r}: "
                            "its input schema could not be read"
                        )
            cursor = page.nextCursor
            if not cursor:
                break
        self.tools, skipped = await self._run_blocking(parse_tools, self.name, listed)
        self.skipped = unread + skipped
        # One line, and only when the list changed: a server may list its
        # tools again every LIST_INTERVAL, and 128 of them may be left out.
        if self.skipped and self.skipped != self._skipped_logged:
            _LOGGER.warning(
                "MCP server %s: %d tools left out: %s%s",
                self.name,
                len(self.skipped),
                "; ".join(self.skipped[:LOGGED_SKIPPED]),
                " …" if len(self.skipped) > LOGGED_SKIPPED else "",
            )
        self._skipped_logged = self.skipped

    def _bounded(self, inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
        return BoundedTransport(inner, self._run_blocking, self._refuse, self._stash)

    def _refuse(self, why: str) -> None:
        """End the attempt: an HTTP server sent a message Soul does not read.

        The session's stream ends, so its pending requests fail at once
        ("Connection closed"), as when a stdio server's line is refused.
        """
        self._refused = self._refused or why  # the first says why it ended
        if self._forward is not None:
            self._forward.close()
        if self._ended is not None:
            self._ended.set()

    def _sse_client_factory(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        client = self._http_client(
            dict(headers or {}), self.connect_timeout, self._bounded
        )
        if timeout is not None:
            client.timeout = timeout
        if auth is not None:
            client.auth = auth
        return client

    def _set(self, status: str, error: str | None) -> None:
        changed = (status, error) != (self.status, self.error)
        self.status, self.error = status, error
        if status == CONNECTED:
            self.stderr = None
        if status in (FAILED, STOPPED):
            self.tools = []
        if changed:
            self._on_change(self)

    # -- calls -----------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call one tool; raise ``McpCallError`` when it cannot be answered."""
        session = self._session
        if session is None or self.status != CONNECTED:
            raise McpCallError(
                f"the MCP server {self.name} is not connected"
                + (f" ({self.error})" if self.error else "")
            )
        try:
            async with asyncio.timeout(self.call_timeout):
                return await session.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=timedelta(seconds=self.call_timeout),
                )
        except TimeoutError as err:
            raise McpCallError(
                f"{tool} took longer than {self.call_timeout:g} s"
            ) from err
        except McpError as err:
            if "closed" in str(err).lower() and self._ended is not None:
                self._why = "the server closed the connection"
                self._ended.set()
            raise McpCallError(describe(err)) from err
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as err:
            if self._ended is not None:
                self._why = "the server closed the connection"
                self._ended.set()
            raise McpCallError(f"the MCP server {self.name} went away") from err
        except pydantic.ValidationError as err:  # the SDK's model of the answer
            raise McpCallError(f"{tool} answered with no tool result") from err


def describe(err: BaseException) -> str:
    """Return a short text for an error, the first of a group."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, TimeoutError):
        return "no answer in time"
    if isinstance(err, FileNotFoundError):
        return f"command not found: {err.filename or err}"
    if isinstance(err, httpx.HTTPStatusError):
        return f"HTTP {err.response.status_code} from {err.request.url.host}"
    text = str(err) or type(err).__name__
    return text[:300]


def _last_words(text: str) -> str:
    """Return the end of what the child wrote to stderr, as one clean line."""
    return untrusted.clean(
        " ".join(text[-STDERR_TAIL:].split()), STDERR_TAIL, multiline=False
    )
