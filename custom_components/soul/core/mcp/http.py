"""The HTTP transports of an MCP server, each message bounded before the SDK parses it.

The SDK's streamable HTTP and SSE clients read a JSON body or a server-sent
event whole and parse it on the event loop, without a limit. ``BoundedTransport``
wraps the HTTP client's transport: a JSON body of a successful response and
each ``message`` event are read whole up to ``MAX_HTTP_MESSAGE_BYTES`` and
handed on as ``messages.rewrite_message`` writes them (bounded, decoded in the
executor when large, their tool list and result parts cut, the tools' input
schemas kept in a ``SchemaStash``), so that what the SDK parses on the loop
stays small; an event's ``retry`` is at least ``MIN_RETRY_MS``. Anything
else a server sends is passed on as it came, at most
``MAX_HTTP_MESSAGE_BYTES`` a body or an event. A message
over a bound ends the connection: ``on_refused`` hears why, and the response
ends with ``McpMessageError``. Responses are asked for without compression
(``http_limits``); a compressed one is refused, since its messages could not
be read before the SDK's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

from ..http_limits import ask_uncompressed, capped, compression, raw_stream, with_stream
from .messages import (
    MAX_HTTP_MESSAGE_BYTES,
    McpMessageError,
    RunBlocking,
    SchemaStash,
    rewrite_message,
)

_LF = 0x0A
# The least time the SDK waits before reconnecting a stream a server ended
# (its own default when the server says nothing).
MIN_RETRY_MS = 1000
# And the most: nine digits (a longer number is read as this, not as an int).
MAX_RETRY_DIGITS = 9
MAX_RETRY_MS = 10**MAX_RETRY_DIGITS - 1


class BoundedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport whose responses' messages are bounded (module docstring)."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        run_blocking: RunBlocking,
        on_refused: Callable[[str], None],
        stash: SchemaStash,
    ) -> None:
        """Wrap ``inner``; ``on_refused`` hears why a message was not read.

        ``stash`` keeps the input schemas of the tools the server lists.
        """
        self._inner = inner
        self._run_blocking = run_blocking
        self._on_refused = on_refused
        self._stash = stash

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; return the response with a bounded stream."""
        ask_uncompressed(request)
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").partition(";")[0]
        kind = kind.strip().lower()
        raw = raw_stream(response)
        refused = self._on_refused
        if (compressed := compression(response)) is not None:
            stream: _Bounded = _Refused(
                raw, refused, f"a response compressed as {compressed!r}"
            )
        elif kind == "text/event-stream":
            stream = _Events(raw, refused, self._run_blocking, self._stash)
        elif kind == "application/json" and response.is_success:
            stream = _JsonBody(raw, refused, self._run_blocking, self._stash)
        else:
            stream = _Capped(raw, refused)
        # The length changes when a message is written again.
        return with_stream(response, stream)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


class _Bounded(httpx.AsyncByteStream):
    """A response body read through a bound; ``refuse`` ends it."""

    def __init__(
        self, raw: httpx.AsyncByteStream, on_refused: Callable[[str], None]
    ) -> None:
        self._raw = raw
        self._on_refused = on_refused

    def refuse(self, why: str) -> McpMessageError:
        """Tell the connection why; return the error that ends the body."""
        self._on_refused(why)
        return McpMessageError(why)

    def too_large(self) -> McpMessageError:
        return self.refuse(
            f"the server sent a message larger than {MAX_HTTP_MESSAGE_BYTES} bytes"
        )

    async def aclose(self) -> None:
        await self._raw.aclose()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.read()

    def read(self) -> AsyncIterator[bytes]:  # pragma: no cover - each overrides
        raise NotImplementedError


class _Capped(_Bounded):
    """A body passed on as it comes, at most ``MAX_HTTP_MESSAGE_BYTES``."""

    def read(self) -> AsyncIterator[bytes]:
        return capped(self._raw, MAX_HTTP_MESSAGE_BYTES, self.too_large)


class _Refused(_Bounded):
    """A body not read at all."""

    def __init__(
        self, raw: httpx.AsyncByteStream, on_refused: Callable[[str], None], what: str
    ) -> None:
        super().__init__(raw, on_refused)
        self._what = what

    def __aiter__(self) -> AsyncIterator[bytes]:
        raise self.refuse(f"the server sent {self._what}")


class _Messages(_Bounded):
    """A body whose messages are written again (off the loop when large)."""

    def __init__(
        self,
        raw: httpx.AsyncByteStream,
        on_refused: Callable[[str], None],
        run_blocking: RunBlocking,
        stash: SchemaStash,
    ) -> None:
        super().__init__(raw, on_refused)
        self._run_blocking = run_blocking
        self._stash = stash


class _JsonBody(_Messages):
    """A JSON body: one message, read whole and written again."""

    async def read(self) -> AsyncIterator[bytes]:
        body = bytearray()
        async for chunk in self._raw:
            body += chunk
            if len(body) > MAX_HTTP_MESSAGE_BYTES:
                raise self.too_large()
        try:
            yield await rewrite_message(bytes(body), self._run_blocking, self._stash)
        except McpMessageError as err:
            raise self.refuse(str(err)) from None


class _Events(_Messages):
    """A stream of server-sent events: each ``message`` event's data written again.

    Lines end with CR LF, LF or CR; an empty line ends an event (the HTML
    standard's event stream). An event's ``data`` lines are one message;
    its other fields and comments go on as they came. What follows the last
    empty line when the stream ends is no event and is dropped, as the
    standard says.
    """

    async def read(self) -> AsyncIterator[bytes]:
        event: list[bytes] = []
        size = 0
        async for line in self._lines():
            if line:
                size += len(line) + 1
                if size > MAX_HTTP_MESSAGE_BYTES:
                    raise self.too_large()
                event.append(line)
                continue
            if event and (written := await self._written(event)):
                yield written
            event, size = [], 0

    async def _lines(self) -> AsyncIterator[bytes]:
        """Yield each line of the stream without its end (bounded)."""
        pending = bytearray()
        async for chunk in self._raw:
            # Only the new bytes can end a line (and a CR that ended the old
            # ones may be followed by an LF): a long line is scanned once.
            searched = max(0, len(pending) - 1)
            pending += chunk
            start = 0
            while (found := _line_end(pending, searched)) is not None:
                end, after = found
                yield bytes(pending[start:end])
                start = searched = after
            del pending[:start]
            if len(pending) > MAX_HTTP_MESSAGE_BYTES:
                raise self.too_large()
        if pending.endswith(b"\r"):  # no LF can follow now
            yield bytes(pending[:-1])

    async def _written(self, event: list[bytes]) -> bytes:
        kept: list[bytes] = []
        data: list[bytes] = []
        kind = b"message"
        for line in event:
            field, colon, value = line.partition(b":")
            if colon and value.startswith(b" "):
                value = value[1:]
            if field == b"data":
                data.append(value)
                continue
            if field == b"event":
                kind = value
            elif field == b"retry":
                # How long the SDK waits before it opens the stream again: a
                # server's "retry: 0" had it reconnect a thousand times a
                # second. Not digits: ignored, as the standard says.
                if value.isascii() and value.isdigit():
                    wait = (
                        int(value) if len(value) <= MAX_RETRY_DIGITS else MAX_RETRY_MS
                    )
                    kept.append(b"retry: %d" % max(wait, MIN_RETRY_MS))
                continue
            kept.append(line)
        if data and kind == b"message":
            try:
                message = await rewrite_message(
                    b"\n".join(data), self._run_blocking, self._stash
                )
            except McpMessageError as err:
                raise self.refuse(str(err)) from None
            # JSON written by ``json.dumps`` holds no line break.
            kept.append(b"data: " + message)
        else:
            kept += [b"data: " + part for part in data]
        # Nothing left of it (a retry that was no number): no event at all.
        return b"\n".join(kept) + b"\n\n" if kept else b""


def _line_end(buffer: bytearray, start: int) -> tuple[int, int] | None:
    """Return where the first line from ``start`` ends and the next begins.

    None when no line ends there yet: no CR or LF, or a CR last (an LF may
    follow in the next chunk).
    """
    lf = buffer.find(b"\n", start)
    cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
    if cr < 0:
        return None if lf < 0 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return None
    return cr, cr + 2 if buffer[cr + 1] == _LF else cr + 1
