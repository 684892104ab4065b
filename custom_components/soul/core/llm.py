"""The OpenAI-compatible LLM endpoint Soul talks to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai

# The client imports its resources (chat, models, …) on their first use: 140–165
# ms, which the first endpoint check or chat after a start held the event loop
# for (black-box run, 2026-11-28). Imported here, with Soul, not on the loop:
# the classes themselves, as the client imports them (openai 3.57 made every
# package of ``openai.resources`` lazy, so importing a package loads nothing).
from openai.resources.chat import AsyncChat, AsyncCompletions
from openai.resources.models import AsyncModels

from . import untrusted
from .http_limits import AnswerRefusedError, LimitedTransport

_RESOURCES = (AsyncChat, AsyncCompletions, AsyncModels)  # imported with Soul, above

# Sent when the user gives no key: local servers (Ollama, llama.cpp, vLLM) ignore it,
# and the openai client refuses to start without one.
NO_API_KEY = "no-api-key"
VERIFY_TIMEOUT = 10.0
MAX_CALL_ID = 128
MAX_TOOL_NAME = 128
MAX_COMPLETION_BYTES = 2 * 1024 * 1024  # one chat completion, as read from the wire
MAX_EVENT_BYTES = 256 * 1024  # one server-sent event of a streamed completion
MAX_STREAM_CALLS = 32  # tool calls assembled from one streamed completion
# Lines of a streamed completion read between two turns of the event loop
# (an event is a data line and a blank one): a server that sends thousands of
# tiny events at once held it 0.3 s (black-box run, 2026-11-29), since
# decoding a small event never waits. In Home Assistant an event costs the
# loop 13-23 us: 512 lines made steps of 4-8 ms, and a WebSocket ping that
# waited for several of them 26-29 ms; 128 make steps of 1-2 ms.
LINES_BETWEEN_YIELDS = 128
_READ_END = object()  # ``_server_sent_events``: the events of one read are over
# A completion, its one retry included, ends within this many times its
# timeout: the timeout bounds each wait, and an endpoint that drips a byte a
# second never lets one run out (a hostile model held a turn 200 s).
DEADLINE_TIMEOUTS = 2
MAX_ERROR_TEXT = 500  # characters of an endpoint's error kept in Soul's errors


class LLMError(Exception):
    """The LLM endpoint could not be used."""


class LLMConnectionError(LLMError):
    """The endpoint is unreachable or does not speak the OpenAI API."""


class LLMRequestRejectedError(LLMConnectionError):
    """The endpoint refused the request itself (HTTP 400/422): e.g. image parts."""


class LLMAuthError(LLMError):
    """The endpoint refused the API key."""


class LLMResponseError(LLMError):
    """The endpoint answered with something that is not a usable completion."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the model's raw JSON text."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One chat completion: text, tool calls, or both, and the token usage."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LLMEndpoint:
    """Where the OpenAI-compatible API lives and which model to use."""

    base_url: str
    model: str
    api_key: str = ""

    def __repr__(self) -> str:
        """Never show the key, not even in a traceback."""
        return f"LLMEndpoint(base_url={self.base_url!r}, model={self.model!r})"


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint, reached through the ``openai`` client.

    Building the client reads platform information from disk, so construct this
    class in an executor.
    """

    def __init__(
        self, endpoint: LLMEndpoint, *, http_client: httpx.AsyncClient | None = None
    ) -> None:
        """Create the client; ``http_client`` lets the host share its own pool.

        The host's client must read answers through ``limited_transport``;
        without one, Soul's own does. The openai client reads an error's
        body and a non-streamed answer whole and parses them on the event
        loop: an endpoint's 47 MB error took 850 MB, and a 47 MB list of its
        models held the loop 2 s in ``verify`` (2026-11-28).
        """
        self.endpoint = endpoint
        self._owns_http_client = http_client is None
        if http_client is None:
            # An httpx client, not the openai client's default: from openai 3 on,
            # that is an httpx2 one, whose transports are not httpx's.
            http_client = httpx.AsyncClient(
                transport=limited_transport(httpx.AsyncHTTPTransport()),
                follow_redirects=True,
            )
        self.client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key or NO_API_KEY,
            http_client=http_client,
        )
        # The client caches these headers on first use; they read files.
        self.client.platform_headers()

    async def close(self) -> None:
        """Close the HTTP client, unless it was lent by the host."""
        if self._owns_http_client:
            await self.client.close()

    async def verify(self) -> None:
        """Make one real request and raise an ``LLMError`` when it fails.

        ``GET /models`` is the cheapest call; servers that do not implement it
        (404) are asked for a one-token completion of the configured model.
        Only the answer's status counts: its body is not read. Both within
        the deadline of a completion: setting Soul up waits here.
        """
        client = self.client.with_options(timeout=VERIFY_TIMEOUT, max_retries=0)
        try:
            async with asyncio.timeout(DEADLINE_TIMEOUTS * VERIFY_TIMEOUT):
                try:
                    async with client.models.with_streaming_response.list():
                        pass
                except openai.NotFoundError:
                    async with client.chat.completions.with_streaming_response.create(
                        model=self.endpoint.model,
                        messages=[{"role": "user", "content": "ping"}],
                        max_tokens=1,
                    ):
                        pass
        except TimeoutError:
            raise LLMConnectionError(_late(VERIFY_TIMEOUT)) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise LLMAuthError(_said(err)) from err
        except (openai.OpenAIError, AnswerRefusedError) as err:
            raise LLMConnectionError(_said(err)) from err
        except httpx.HTTPError as err:
            raise LLMConnectionError(_broke(err, VERIFY_TIMEOUT)) from err

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        timeout: float = 30.0,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Return one completion of ``messages`` with ``tools`` offered.

        Raises ``LLMAuthError``, ``LLMConnectionError`` (unreachable, timeout,
        HTTP errors) or ``LLMResponseError`` (no choices).
        """
        client = self.client.with_options(timeout=timeout, max_retries=1)
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": list(messages),
        }
        if tools:
            kwargs["tools"] = list(tools)
        if response_format is not None:
            kwargs["response_format"] = response_format
        # The body is read by us, within MAX_COMPLETION_BYTES, and decoded as
        # untrusted JSON (off the event loop when large): a hostile or broken
        # endpoint can neither flood memory nor hold the loop.
        try:
            async with (
                asyncio.timeout(DEADLINE_TIMEOUTS * timeout),
                client.chat.completions.with_streaming_response.create(
                    **kwargs
                ) as response,
            ):
                body = bytearray()
                async for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_COMPLETION_BYTES:
                        raise LLMResponseError(
                            f"the completion is larger than {MAX_COMPLETION_BYTES} bytes"
                        )
        except TimeoutError:
            raise LLMConnectionError(_late(timeout)) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise LLMAuthError(_said(err)) from err
        except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
            raise LLMRequestRejectedError(_said(err)) from err
        except (openai.OpenAIError, AnswerRefusedError) as err:
            raise _unusable(err) from err
        except httpx.HTTPError as err:  # the answer broke off, after its headers
            raise LLMConnectionError(_broke(err, timeout)) from err
        try:
            # At most MAX_JSON_VALUES values: even in a thread the decoder holds
            # the GIL while it builds them (a million zeros held the loop 0.1 s).
            data = await untrusted.loads_off_loop(
                bytes(body),
                asyncio.to_thread,
                max_bytes=MAX_COMPLETION_BYTES,
                what="the completion",
                repair=True,
            )
        except untrusted.UntrustedInputError as err:
            # An HTML page, a proxy's error text, a truncated object…
            raise LLMResponseError(
                f"the endpoint did not answer with a chat completion: {err}"
            ) from None
        return _reply(data)

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        timeout: float = 30.0,
        response_format: dict[str, Any] | None = None,
    ) -> AsyncIterator[str | ModelReply]:
        """Stream one completion: its text in pieces as they arrive, then the reply.

        Yields ``str`` pieces of the content, and finally the whole
        ``ModelReply`` (content, assembled tool calls, usage). The server-sent
        events are read by Soul within ``MAX_COMPLETION_BYTES`` (each event
        within ``MAX_EVENT_BYTES``) and decoded as untrusted JSON. Raises
        what ``chat`` raises.
        """
        client = self.client.with_options(timeout=timeout, max_retries=1)
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": list(messages),
            "stream": True,
        }
        if tools:
            kwargs["tools"] = list(tools)
        if response_format is not None:
            kwargs["response_format"] = response_format
        assembly = _Assembly()
        # Checked at every chunk, not a timeout around the stream: the caller
        # runs between the pieces, and a timeout would cancel the caller.
        deadline = asyncio.get_running_loop().time() + DEADLINE_TIMEOUTS * timeout
        try:
            # The readers are closed here, not by the collector: a refused
            # event left them open, to be closed later by a task of their own.
            async with (
                client.chat.completions.with_streaming_response.create(
                    **kwargs
                ) as response,
                aclosing(_until(response.iter_bytes(), deadline, timeout)) as chunks,
                aclosing(_server_sent_events(chunks)) as events,
            ):
                # The content of the events read together is one piece:
                # 60,000 pieces sent at once became as many deltas of
                # Assist's chat log, one loop step (60-140 ms) for each 256
                # (black-box run, 2026-11-29). Each event is taken at once,
                # not kept until its read ends: 38,000 kept a while set off
                # full garbage collections (250 ms).
                pieces: list[str] = []
                async for event in events:
                    if event is not _READ_END:
                        if (piece := assembly.add(event)) is not None:
                            pieces.append(piece)
                    elif pieces:
                        yield "".join(pieces)
                        pieces.clear()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise LLMAuthError(_said(err)) from err
        except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
            raise LLMRequestRejectedError(_said(err)) from err
        except (openai.OpenAIError, AnswerRefusedError) as err:
            raise _unusable(err) from err
        except httpx.HTTPError as err:  # the answer broke off, after its headers
            raise LLMConnectionError(_broke(err, timeout)) from err
        yield assembly.reply()


def limited_transport(inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """Wrap the transport of an HTTP client that talks to an endpoint (``__init__``)."""
    return LimitedTransport(inner, MAX_COMPLETION_BYTES)


def _said(err: Exception) -> str:
    """Return an endpoint's error as one clean line: its body may hold anything.

    An error page's NUL bytes and bidi overrides went into Home Assistant's
    log as they came (black-box run, 2026-11-28).
    """
    said = str(err)
    # openai 3.57 and later keep a body that is not JSON out of the message.
    body = err.body if isinstance(err, openai.APIStatusError) else None
    if isinstance(body, str) and body and body not in said:
        said = f"{said} - {body}"
    return untrusted.clean(said, MAX_ERROR_TEXT, multiline=False)


def _broke(err: httpx.HTTPError, timeout: float) -> str:
    """Say why an answer broke off: the endpoint went silent, or the connection broke.

    The openai client turns a failed request into its own errors, but not
    what fails while Soul reads the answer's body: a server that closes the
    connection or goes silent halfway gave a 500 and a traceback.
    """
    if isinstance(err, httpx.TimeoutException):
        return f"the endpoint went silent for {timeout:g} s during its answer"
    said = _said(err)
    return f"the answer broke off: {type(err).__name__}" + (f": {said}" if said else "")


def _unusable(err: Exception) -> LLMError:
    """Return the error of a failed call: an answer Soul did not read says why."""
    refused = err if isinstance(err, AnswerRefusedError) else err.__cause__
    if isinstance(refused, AnswerRefusedError):
        return LLMResponseError(_said(refused))
    return LLMConnectionError(_said(err))


def _late(timeout: float) -> str:
    return (
        "the endpoint did not finish its answer within "
        f"{DEADLINE_TIMEOUTS * timeout:g} s"
    )


async def _until(
    chunks: AsyncIterator[bytes], deadline: float, timeout: float
) -> AsyncGenerator[bytes]:
    """Yield ``chunks`` until the loop's clock passes ``deadline``."""
    loop = asyncio.get_running_loop()
    async for chunk in chunks:
        if loop.time() > deadline:
            raise LLMConnectionError(_late(timeout))
        yield chunk


async def _server_sent_events(chunks: AsyncIterator[bytes]) -> AsyncGenerator[Any]:
    """Yield the decoded ``data:`` events of a stream, within the size limits.

    ``_READ_END`` follows the events of each read of the connection, and the
    last ones.
    """
    buffer = bytearray()
    total = 0
    lines = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > MAX_COMPLETION_BYTES:
            raise LLMResponseError(
                f"the completion is larger than {MAX_COMPLETION_BYTES} bytes"
            )
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end]).strip()
            del buffer[: end + 1]
            lines += 1  # blank and comment lines too: 2 MiB of them held it 61 ms
            if lines % LINES_BETWEEN_YIELDS == 0:
                await asyncio.sleep(0)
            if not line.startswith(b"data:"):
                continue  # comments, event names, blank separators
            data = line[5:].strip()
            if data == b"[DONE]":
                yield _READ_END
                return
            try:
                yield await untrusted.loads_off_loop(
                    data,
                    asyncio.to_thread,
                    max_bytes=MAX_EVENT_BYTES,
                    what="an event",
                    repair=True,
                )
            except untrusted.UntrustedInputError as err:
                raise LLMResponseError(
                    f"the endpoint did not stream a chat completion: {err}"
                ) from None
        yield _READ_END
        if len(buffer) > MAX_EVENT_BYTES:
            raise LLMResponseError(f"an event is larger than {MAX_EVENT_BYTES} bytes")


class _Assembly:
    """Puts a streamed completion together: content, tool calls by index, usage."""

    def __init__(self) -> None:
        self.content: list[str] = []
        # By index: id, name, and the arguments' pieces (joined once, at the
        # end: adding each piece to a string copied it whole every time).
        self.calls: dict[int, tuple[list[str], list[str]]] = {}
        self.usage: dict[str, int] = {}
        self.chosen = False  # an event had a choice: a chat completion's stream

    def add(self, event: Any) -> str | None:
        """Take one event; return its piece of content, if any."""
        if not isinstance(event, dict):
            raise LLMResponseError("a streamed event is not an object")
        if isinstance(raw_usage := event.get("usage"), dict):
            self.usage = _usage(raw_usage)
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices:
            return None
        self.chosen = True
        delta = choices[0].get("delta") if isinstance(choices[0], dict) else None
        if not isinstance(delta, dict):
            return None
        for raw in delta.get("tool_calls") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("index"), int):
                continue
            if raw["index"] not in self.calls and len(self.calls) >= MAX_STREAM_CALLS:
                continue
            named, arguments = self.calls.setdefault(raw["index"], (["", ""], []))
            if isinstance(raw.get("id"), str):
                named[0] = raw["id"][:MAX_CALL_ID]
            function = raw.get("function")
            if isinstance(function, dict):
                if isinstance(function.get("name"), str):
                    named[1] = (named[1] + function["name"])[:MAX_TOOL_NAME]
                if isinstance(function.get("arguments"), str):
                    arguments.append(function["arguments"])
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.content.append(content)
            return content
        return None

    def reply(self) -> ModelReply:
        """Return the whole completion; raise when no event held a choice.

        A 200 answer of an HTML page, or of events without choices, is not a
        completion: it became a silent empty reply (black-box run, 2026-11-29).
        """
        if not self.chosen:
            raise LLMResponseError("the endpoint did not stream a chat completion")
        return ModelReply(
            "".join(self.content) or None,
            tuple(
                ToolCall(named[0], named[1], "".join(arguments))
                for _index, (named, arguments) in sorted(self.calls.items())
            ),
            self.usage,
        )


def _usage(raw: dict[str, Any]) -> dict[str, int]:
    usage: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = raw.get(key)
        usage[key] = value if isinstance(value, int) and value >= 0 else 0
    return usage


def _reply(data: Any) -> ModelReply:
    """Return the usable part of a completion (decoded JSON); raise for anything else."""
    if not isinstance(data, dict):
        raise LLMResponseError("the endpoint did not answer with a chat completion")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise LLMResponseError("the completion has no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise LLMResponseError("the completion's first choice has no message")
    content = message.get("content")
    if isinstance(content, list):  # content parts, as some servers send them
        content = "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    if content is not None and not isinstance(content, str):
        raise LLMResponseError("the completion's content is not text")
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                str(call.get("id") or "")[:MAX_CALL_ID],
                str(function.get("name") or "")[:MAX_TOOL_NAME],
                arguments if isinstance(arguments, str) else "",
            )
        )
    usage = _usage(raw) if isinstance(raw := data.get("usage"), dict) else {}
    return ModelReply(content, tuple(calls), usage)
