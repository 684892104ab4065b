"""The stdio transport of an MCP server, its messages bounded before they are parsed.

The SDK's ``stdio_client`` reads the child's output line by line without a
limit and parses each line with pydantic's JSON parser on the event loop, the
``result`` of a response as ``Any``: a tool list of 60,000 tools took 650 ms
there at every ``notifications/tools/list_changed``, and a result of 150,000
parts 930 ms (a hostile server, 2026-11-28). Here a line is refused past
``MAX_MESSAGE_BYTES`` or ``MAX_MESSAGE_VALUES`` commas (an upper bound of its
values), decoded by ``untrusted.loads`` — on the loop when it is small
(``untrusted.decodes_on_loop``), else in the executor — and only then made a
``JSONRPCMessage`` from the decoded value: a tenth of the time, for the same
message. A refused line ends the connection (the session hears why, its
pending requests fail at once, and the supervisor tries again later). The
process is started and ended as the SDK does it: its own session (process
group), stdin closed, then SIGTERM to the group, then SIGKILL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, TextIO

import anyio
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters, types
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
import pydantic

from .. import untrusted

MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # one line of the child's output
# Commas in one message: pydantic builds a tool list's models at about 2 µs a
# tool, so the session's own validation of what passes stays near 10 ms.
MAX_MESSAGE_VALUES = 16_384
# Nesting of one message: deeper than a tool's schema may be (12, checked per
# tool, which leaves out only that tool) with room for the envelope; a message
# refused as a whole would take every tool of the server with it.
MAX_MESSAGE_DEPTH = 128
# Parts of one tool result read: pydantic makes each a model at about 4 µs
# (8,000 parts took 34 ms), and the model reads 16 KB of them at most.
MAX_RESULT_PARTS = 1024
# Tools of one listing read: a model each too (about 3 µs); Soul keeps the
# first 128 of a server (``tools.MAX_TOOLS_PER_SERVER``).
MAX_LISTED_TOOLS = 1024
EXIT_TIMEOUT = 2.0  # seconds the child has to exit once its stdin is closed

RunBlocking = Callable[..., Awaitable[Any]]


class McpMessageError(Exception):
    """A message of the server that Soul does not read; ``str()`` says why."""


async def decode_message(
    line: bytes, run_blocking: RunBlocking, errors: str = "replace"
) -> SessionMessage | Exception:
    """Return one line of the server's output as a message, or why it is not one.

    Raises ``McpMessageError`` for a line too large to read at all; a line
    that is not a JSON-RPC message is returned as the exception, which the
    session hands to its message handler (the SDK does the same).
    """
    if len(line) > MAX_MESSAGE_BYTES:
        raise McpMessageError(
            f"the server sent a message larger than {MAX_MESSAGE_BYTES} bytes"
        )
    if line.count(b",") > MAX_MESSAGE_VALUES:
        raise McpMessageError(
            f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
        )
    text = line.decode("utf-8", errors)
    decode = partial(
        untrusted.loads,
        text,
        max_bytes=MAX_MESSAGE_BYTES,
        max_containers=MAX_MESSAGE_VALUES,
        max_depth=MAX_MESSAGE_DEPTH,
        what="the MCP server's message",
        # A lone surrogate becomes U+FFFD, as the SDK's decoder replaces bad
        # bytes: what a server says is read as well as it can be.
        repair=True,
    )
    try:
        value = (
            decode() if untrusted.decodes_on_loop(text) else await run_blocking(decode)
        )
        _cut_lists(value)
        return SessionMessage(types.JSONRPCMessage.model_validate(value))
    except (untrusted.UntrustedInputError, pydantic.ValidationError) as err:
        return err


def _cut_lists(value: Any) -> None:
    """Keep a result's first parts and tools (the SDK makes a model of each).

    Past ``MAX_RESULT_PARTS`` a text part says how many more were not read;
    past ``MAX_LISTED_TOOLS`` the rest of a listing is left out (Soul keeps
    the first 128 anyway).
    """
    if not isinstance(value, dict) or not isinstance(
        result := value.get("result"), dict
    ):
        return
    if isinstance(parts := result.get("content"), list) and (
        len(parts) > MAX_RESULT_PARTS
    ):
        result["content"] = [
            *parts[:MAX_RESULT_PARTS],
            {
                "type": "text",
                "text": f"…({len(parts) - MAX_RESULT_PARTS} more parts not read)",
            },
        ]
    if isinstance(tools := result.get("tools"), list) and len(tools) > MAX_LISTED_TOOLS:
        result["tools"] = tools[:MAX_LISTED_TOOLS]


async def _read_lines(
    stdout: ByteReceiveStream,
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    run_blocking: RunBlocking,
    errors: str,
) -> None:
    """Send each line of ``stdout`` on as a message; raise ``McpMessageError``."""
    pending = bytearray()
    async for chunk in stdout:
        # Only the new bytes can end a line: a long line is scanned once.
        start, searched = 0, len(pending)
        pending += chunk
        while (end := pending.find(b"\n", searched)) >= 0:
            message = await decode_message(
                bytes(pending[start:end]), run_blocking, errors
            )
            await messages.send(message)
            start = searched = end + 1
        del pending[:start]
        if len(pending) > MAX_MESSAGE_BYTES:
            raise McpMessageError(
                f"the server sent a message larger than {MAX_MESSAGE_BYTES} bytes"
            )


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters, errlog: TextIO, run_blocking: RunBlocking
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """Start ``server``'s command; yield the session's read and write streams."""
    read_writer, read_stream = anyio.create_memory_object_stream[
        SessionMessage | Exception
    ](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    environment = get_default_environment()
    if server.env is not None:
        environment.update(server.env)
    try:
        process = await anyio.open_process(
            [server.command, *server.args],
            env=environment,
            stderr=errlog,
            cwd=server.cwd,
            start_new_session=True,
        )
    except OSError:
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        raise

    stdout, stdin = process.stdout, process.stdin
    if stdout is None or stdin is None:  # pragma: no cover - both are pipes
        await process.aclose()
        raise OSError("the MCP server's process has no stdin or stdout")

    async def stdout_reader() -> None:
        async with read_writer:
            try:
                await _read_lines(
                    stdout, read_writer, run_blocking, server.encoding_error_handler
                )
            except McpMessageError as err:
                # The session hears why, then the end of the stream: its
                # pending requests fail at once ("Connection closed").
                await read_writer.send(err)

    async def stdin_writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                text = session_message.message.model_dump_json(
                    by_alias=True, exclude_none=True
                )
                await stdin.send(
                    (text + "\n").encode("utf-8", server.encoding_error_handler)
                )

    async with anyio.create_task_group() as group, process:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # The MCP specification's stdio shutdown: stdin closed, then the
            # process group is ended if it does not exit. Shielded: the end
            # may come from a cancellation.
            with anyio.CancelScope(shield=True):
                with suppress(Exception):
                    await stdin.aclose()
                try:
                    with anyio.fail_after(EXIT_TIMEOUT):
                        await process.wait()
                except TimeoutError:
                    await terminate_posix_process_tree(process, EXIT_TIMEOUT)
                except ProcessLookupError:
                    pass
            group.cancel_scope.cancel()
            for stream in (read_stream, write_stream, read_writer, write_reader):
                await stream.aclose()
