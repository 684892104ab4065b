"""HTTP answers of a server Soul talks to, read within a size and uncompressed.

An HTTP client reads a body whole where it needs one (``openai`` reads an
error's body and a non-streamed answer, then parses it on the event loop),
and decompresses what a server compressed, however large. ``LimitedTransport``
wraps a client's transport: every request asks for an uncompressed answer
(``Accept-Encoding: identity``, as ``ask_uncompressed``), a compressed answer
is refused when its body is read, and no body is read past ``max_bytes``;
either raises ``AnswerRefusedError`` (an ``httpx.ReadError``, which the
client reports as a connection error). ``LimitedSyncTransport`` does the
same for a synchronous client (mem0's, in the executor). The MCP transport
(``mcp/http.py``) reads its messages the same way (``capped``), with its own
bounds.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from functools import partial

import httpx


class AnswerRefusedError(httpx.ReadError):
    """An answer Soul does not read; ``str()`` says why."""


def ask_uncompressed(request: httpx.Request) -> None:
    """Ask for an answer whose body can be bounded as it is read."""
    request.headers["Accept-Encoding"] = "identity"


def compression(response: httpx.Response) -> str | None:
    """Return how ``response`` is compressed, None when it is not."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    return None if encoding in ("", "identity") else encoding


def with_stream(
    response: httpx.Response, stream: httpx.AsyncByteStream | httpx.SyncByteStream
) -> httpx.Response:
    """Return ``response`` with ``stream`` as its body (its length may change)."""
    return httpx.Response(
        response.status_code,
        headers=[
            (k, v) for k, v in response.headers.raw if k.lower() != b"content-length"
        ],
        stream=stream,
        extensions=response.extensions,
    )


async def capped(
    chunks: AsyncIterable[bytes], max_bytes: int, too_large: Callable[[], Exception]
) -> AsyncIterator[bytes]:
    """Yield ``chunks`` as they come; raise ``too_large()`` past ``max_bytes`` in all."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise too_large()
        yield chunk


def capped_sync(
    chunks: Iterable[bytes], max_bytes: int, too_large: Callable[[], Exception]
) -> Iterator[bytes]:
    """``capped`` for a synchronous body."""
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise too_large()
        yield chunk


def raw_stream(response: httpx.Response) -> httpx.AsyncByteStream:
    """Return the body of an async transport's response."""
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)  # noqa: S101 - an async transport's
    return stream


class LimitedTransport(httpx.AsyncBaseTransport):
    """A transport whose answers are uncompressed and at most ``max_bytes`` a body."""

    def __init__(self, inner: httpx.AsyncBaseTransport, max_bytes: int) -> None:
        """Wrap ``inner``."""
        self._inner = inner
        self._max_bytes = max_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; return the answer with a bounded body."""
        ask_uncompressed(request)
        response = await self._inner.handle_async_request(request)
        return with_stream(
            response,
            _Limited(raw_stream(response), self._max_bytes, compression(response)),
        )

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


class LimitedSyncTransport(httpx.BaseTransport):
    """``LimitedTransport`` for a synchronous client."""

    def __init__(self, inner: httpx.BaseTransport, max_bytes: int) -> None:
        """Wrap ``inner``."""
        self._inner = inner
        self._max_bytes = max_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; return the answer with a bounded body."""
        ask_uncompressed(request)
        response = self._inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)  # noqa: S101 - a sync transport's
        return with_stream(
            response, _LimitedSync(stream, self._max_bytes, compression(response))
        )

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()


def _refusal(compressed: str | None) -> AnswerRefusedError | None:
    return (
        None
        if compressed is None
        else AnswerRefusedError(f"the server answered compressed as {compressed!r}")
    )


def _too_large(max_bytes: int) -> AnswerRefusedError:
    return AnswerRefusedError(f"the server's answer is larger than {max_bytes} bytes")


class _LimitedSync(httpx.SyncByteStream):
    def __init__(
        self, raw: httpx.SyncByteStream, max_bytes: int, compressed: str | None
    ) -> None:
        self._raw = raw
        self._max_bytes = max_bytes
        self._compressed = compressed

    def __iter__(self) -> Iterator[bytes]:
        if (refused := _refusal(self._compressed)) is not None:
            raise refused
        yield from capped_sync(
            self._raw, self._max_bytes, partial(_too_large, self._max_bytes)
        )

    def close(self) -> None:
        self._raw.close()


class _Limited(httpx.AsyncByteStream):
    def __init__(
        self, raw: httpx.AsyncByteStream, max_bytes: int, compressed: str | None
    ) -> None:
        self._raw = raw
        self._max_bytes = max_bytes
        self._compressed = compressed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if (refused := _refusal(self._compressed)) is not None:
            raise refused
        async for chunk in capped(
            self._raw, self._max_bytes, partial(_too_large, self._max_bytes)
        ):
            yield chunk

    async def aclose(self) -> None:
        await self._raw.aclose()
