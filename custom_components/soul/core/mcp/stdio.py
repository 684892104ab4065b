"""The stdio transport of an MCP server, its messages bounded before they are parsed.

The child's output is read line by line; a line longer than
``messages.MAX_MESSAGE_BYTES`` is refused before its end is found, and each
line is made a message by ``messages.decode_message`` (bounded, decoded by
``untrusted.loads``, in the executor when large, its lists cut). A refused
line ends the connection (the session hears why, its pending requests fail
at once, and the supervisor tries again later). The process is started and
ended as the SDK does it: its own session (process group), stdin closed, then
SIGTERM to the group, then SIGKILL. Its stderr is read through a pipe and
only its last ``STDERR_KEPT`` bytes are kept (``StderrTail``): a file of all
of it grew without end while a server wrote, and was read whole on a
failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
import subprocess

import anyio
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from .messages import MAX_MESSAGE_BYTES, McpMessageError, RunBlocking, decode_message

EXIT_TIMEOUT = 2.0  # seconds the child has to exit once its stdin is closed
STDERR_KEPT = 4096  # bytes of the end of a server's stderr kept
STDERR_DRAIN = 0.5  # seconds to read what is left of stderr once it exited


class StderrTail:
    """The last ``STDERR_KEPT`` bytes a server wrote to stderr."""

    def __init__(self) -> None:
        """Start empty."""
        self._kept = bytearray()

    def add(self, chunk: bytes) -> None:
        """Keep ``chunk``, dropping what falls out of the window."""
        self._kept += chunk[-STDERR_KEPT:]
        if len(self._kept) > STDERR_KEPT:
            del self._kept[: len(self._kept) - STDERR_KEPT]

    def text(self) -> str:
        """Return what is kept as text (bad bytes replaced)."""
        return self._kept.decode("utf-8", "replace")


async def _read_stderr(
    stderr: ByteReceiveStream, tail: StderrTail, done: anyio.Event
) -> None:
    """Keep the end of what the child writes to stderr, until it closes it."""
    try:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in stderr:
                tail.add(chunk)
    finally:
        done.set()


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
    server: StdioServerParameters, tail: StderrTail, run_blocking: RunBlocking
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """Start ``server``'s command; yield the session's read and write streams.

    The end of what it writes to stderr goes to ``tail``.
    """
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
            stderr=subprocess.PIPE,
            cwd=server.cwd,
            start_new_session=True,
        )
    except OSError:
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        raise

    stdout, stdin, stderr = process.stdout, process.stdin, process.stderr
    if stdout is None or stdin is None or stderr is None:  # pragma: no cover
        await process.aclose()
        raise OSError("the MCP server's process has no stdin, stdout or stderr")

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
        stderr_read = anyio.Event()
        group.start_soon(_read_stderr, stderr, tail, stderr_read)
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
                # What it wrote last (why it failed) may still wait in the
                # pipe; a grandchild may hold the pipe open: not for long.
                with anyio.move_on_after(STDERR_DRAIN):
                    await stderr_read.wait()
            group.cancel_scope.cancel()
            for stream in (read_stream, write_stream, read_writer, write_reader):
                await stream.aclose()
