"""An MCP server's messages, bounded before anything parses them (stdio and HTTP).

The SDK's transports read a message without a limit and parse it with
pydantic's JSON parser on the event loop, the ``result`` of a response as
``Any``: a tool list of 60,000 tools took 650 ms there at every
``notifications/tools/list_changed``, and a result of 150,000 parts 930 ms (a
hostile server, 2026-11-28). Here a message is refused past its size or
``MAX_MESSAGE_VALUES`` commas (an upper bound of its values), decoded by
``untrusted.loads`` — on the loop when it is small
(``untrusted.decodes_on_loop``), else in the executor — and trimmed
(``_trim``) before the SDK makes models of it: a result's parts and a
listing's tools are cut, a tool's output schema is dropped (the SDK would
check every result against it with ``jsonschema`` on the loop, whose
``pattern`` runs Python's ``re`` without a time limit; Soul reads a result's
text and never its structure), and so is a result's structured content when
a text part says it already (Soul reads only the text then). The stdio
transport makes the ``JSONRPCMessage`` from the decoded value
(``decode_message``); the HTTP transports hand the SDK the value written
again (``rewrite_message``), which it parses on the loop, each tool's input
schema kept aside in a ``SchemaStash`` and a stub in its place, so an HTTP
message is bounded by what the SDK parses (its size, its tools, its values
once cut). A refused message ends the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
import json
from typing import Any

from mcp import types
from mcp.shared.message import SessionMessage
import pydantic

from .. import untrusted

MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # one line of a stdio server's output
# One JSON body or server-sent event of an HTTP server: the SDK parses it again
# on the loop, where 4 MiB of text held it 16 ms with Soul's reading before
# (benchmarks.hostile, class 10b); Soul reads 16 KiB of a result.
MAX_HTTP_MESSAGE_BYTES = 2 * 1024 * 1024
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
# Over HTTP the SDK parses the message's JSON on the loop at 1.2–3 µs a value
# (1,024 tools of FastMCP's schemas, 12,289 values: 18–37 ms): one more tool
# than Soul keeps (so that it knows there were more), and at most this many
# values in all once the lists are cut and the input schemas stubbed.
MAX_HTTP_LISTED_TOOLS = 129
MAX_HTTP_MESSAGE_VALUES = 4096
# What stands for a tool's input schema in the message the SDK parses (HTTP).
STUB_KEY = "x-soul-schema"

RunBlocking = Callable[..., Awaitable[Any]]


class McpMessageError(Exception):
    """A message of the server that Soul does not read; ``str()`` says why."""


def _checked(raw: bytes, max_bytes: int, errors: str) -> str:
    """Return ``raw`` as text; raise ``McpMessageError`` when it is too large."""
    if len(raw) > max_bytes:
        raise McpMessageError(
            f"the server sent a message larger than {max_bytes} bytes"
        )
    if raw.count(b",") > MAX_MESSAGE_VALUES:
        raise McpMessageError(
            f"the server sent a message of more than {MAX_MESSAGE_VALUES} values"
        )
    return raw.decode("utf-8", errors)


def _value(text: str, max_bytes: int, max_tools: int = MAX_LISTED_TOOLS) -> Any:
    """Decode one message and cut its lists; raise ``UntrustedInputError``."""
    value = untrusted.loads(
        text,
        max_bytes=max_bytes,
        max_containers=MAX_MESSAGE_VALUES,
        max_depth=MAX_MESSAGE_DEPTH,
        what="the MCP server's message",
        # A lone surrogate becomes U+FFFD, as the SDK's decoder replaces bad
        # bytes: what a server says is read as well as it can be.
        repair=True,
        bound_numbers=False,  # below, on what is kept
    )
    _trim(value, max_tools)
    return untrusted.repair_numbers(value)


async def decode_message(
    line: bytes, run_blocking: RunBlocking, errors: str = "replace"
) -> SessionMessage | Exception:
    """Return one line of a stdio server's output as a message, or why it is not one.

    Raises ``McpMessageError`` for a line too large to read at all; a line
    that is not a JSON-RPC message is returned as the exception, which the
    session hands to its message handler (the SDK does the same).
    """
    text = _checked(line, MAX_MESSAGE_BYTES, errors)
    decode = partial(_value, text, MAX_MESSAGE_BYTES)
    try:
        value = (
            decode() if untrusted.decodes_on_loop(text) else await run_blocking(decode)
        )
        return SessionMessage(types.JSONRPCMessage.model_validate(value))
    except (untrusted.UntrustedInputError, pydantic.ValidationError) as err:
        return err


def _written(text: str, listing: int) -> tuple[bytes, list[Any] | None]:
    """Return the message written again, and its tools' input schemas if it lists any.

    Each tool's input schema (an object) becomes a stub naming ``listing`` and
    its place, for ``SchemaStash.restore``.
    """
    value = _value(text, MAX_HTTP_MESSAGE_BYTES, MAX_HTTP_LISTED_TOOLS)
    schemas: list[Any] | None = None
    tools = _listed_tools(value)
    if tools is not None:
        schemas = []
        for tool in tools:
            if isinstance(tool, dict) and isinstance(
                schema := tool.get("inputSchema"), dict
            ):
                tool["inputSchema"] = {
                    "type": "object",
                    STUB_KEY: f"{listing}:{len(schemas)}",
                }
                schemas.append(schema)
    if _more_values(value, MAX_HTTP_MESSAGE_VALUES):
        raise McpMessageError(
            f"the server sent a message of more than {MAX_HTTP_MESSAGE_VALUES}"
            " values (HTTP)"
        )
    return json.dumps(value, ensure_ascii=False).encode(), schemas


def _more_values(value: Any, limit: int) -> bool:
    """Whether ``value``'s objects and arrays hold more than ``limit`` members."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            count += len(item)
            stack.extend(item)
        else:
            continue
        if count > limit:
            return True
    return False


async def rewrite_message(
    raw: bytes, run_blocking: RunBlocking, stash: SchemaStash
) -> bytes:
    """Return one HTTP message as the SDK may parse it on the loop.

    Raises ``McpMessageError`` for a message Soul does not read: too large,
    or not JSON within ``untrusted.loads``' bounds (nothing of it goes to the
    SDK, whose parser might read it otherwise). Its lists cut, its tools'
    input schemas kept in ``stash``, lone surrogates replaced, it is written
    again. An empty body goes on as it is.
    """
    if not raw.strip():  # no message (an answer to DELETE, say): nothing to parse
        return raw
    text = _checked(raw, MAX_HTTP_MESSAGE_BYTES, "replace")
    listing = stash.number()
    write = partial(_written, text, listing)
    try:
        written, schemas = (
            write() if untrusted.decodes_on_loop(text) else await run_blocking(write)
        )
    except (untrusted.UntrustedInputError, UnicodeEncodeError) as err:
        raise McpMessageError(str(err)) from None
    if schemas is not None:
        stash.keep(listing, schemas)
    return written


class SchemaStash:
    """The input schemas of an HTTP server's latest tool listing, kept from the SDK.

    A tool's input schema is most of a listing's values (FastMCP's: 8 of about
    12), and the SDK parses every value of an HTTP message on the loop; a
    server whose 128 tools had rich schemas was refused for it. The SDK gets a
    stub instead (``_written``), the schemas wait here, and ``restore`` puts
    them back into the tools the session returns. One listing is kept, the
    latest: the connection restores each page as it comes.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._numbers = 0
        self._kept: tuple[int, list[Any]] = (0, [])

    def number(self) -> int:
        """Return the number of the next message (on the loop)."""
        self._numbers += 1
        return self._numbers

    def keep(self, listing: int, schemas: list[Any]) -> None:
        """Keep the schemas of message ``listing``, unless a later one came first."""
        if listing > self._kept[0]:
            self._kept = (listing, schemas)

    def restore(self, tool: types.Tool) -> types.Tool | None:
        """Return ``tool`` with its input schema; None when it is not kept."""
        stub = tool.inputSchema
        reference = stub.get(STUB_KEY) if len(stub) == 2 else None
        if not isinstance(reference, str):
            return None
        listing, _, place = reference.partition(":")
        kept, schemas = self._kept
        if listing != str(kept) or not (place.isascii() and place.isdigit()):
            return None
        if int(place) >= len(schemas):
            return None
        return tool.model_copy(update={"inputSchema": schemas[int(place)]})


def _listed_tools(value: Any) -> list[Any] | None:
    """Return a response's ``result.tools`` list, if it has one."""
    if isinstance(value, dict) and isinstance(result := value.get("result"), dict):
        tools = result.get("tools")
        return tools if isinstance(tools, list) else None
    return None


def _trim(value: Any, max_tools: int = MAX_LISTED_TOOLS) -> None:
    """Trim a response's result to what Soul reads before the SDK makes models of it.

    Past ``MAX_RESULT_PARTS`` a text part says how many more were not read;
    past ``max_tools`` the rest of a listing is left out (Soul keeps the
    first 128 anyway). A listed tool's ``outputSchema`` is dropped, so the
    SDK checks no result against it (module docstring); a result's
    ``structuredContent`` too when a text part goes with it.
    """
    if not isinstance(value, dict) or not isinstance(
        result := value.get("result"), dict
    ):
        return
    if isinstance(parts := result.get("content"), list):
        if len(parts) > MAX_RESULT_PARTS:
            result["content"] = parts = [
                *parts[:MAX_RESULT_PARTS],
                {
                    "type": "text",
                    "text": f"…({len(parts) - MAX_RESULT_PARTS} more parts not read)",
                },
            ]
        if "structuredContent" in result and any(
            isinstance(part, dict) and part.get("type") == "text" for part in parts
        ):
            del result["structuredContent"]
    if isinstance(tools := result.get("tools"), list):
        if len(tools) > max_tools:
            result["tools"] = tools = tools[:max_tools]
        for tool in tools:
            if isinstance(tool, dict):
                tool.pop("outputSchema", None)
