"""An MCP server's messages, bounded before anything parses them (stdio and HTTP).

The SDK's transports read a message without a limit and parse it with
pydantic's JSON parser on the event loop, the ``result`` of a response as
``Any``: a tool list of 60,000 tools took 650 ms there at every
``notifications/tools/list_changed``, and a result of 150,000 parts 930 ms (a
hostile server, 2026-11-28). Here a message is refused past its size or
``MAX_MESSAGE_VALUES`` commas (an upper bound of its values), decoded by
``untrusted.loads`` — on the loop when it is small
(``untrusted.decodes_on_loop``), else in the executor — and its tool list and
result parts are cut (``_cut_lists``) before the SDK makes models of them. The
stdio transport makes the ``JSONRPCMessage`` from the decoded value
(``decode_message``); the HTTP transports hand the SDK the value written
again (``rewrite_message``), which it parses on the loop, so an HTTP message
is bounded more tightly (its size, its tools, its values once cut). A
refused message ends the connection.
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
# values in all once the lists are cut.
MAX_HTTP_LISTED_TOOLS = 129
MAX_HTTP_MESSAGE_VALUES = 4096

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
    )
    _cut_lists(value, max_tools)
    return value


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


def _written(text: str) -> bytes:
    value = _value(text, MAX_HTTP_MESSAGE_BYTES, MAX_HTTP_LISTED_TOOLS)
    if _more_values(value, MAX_HTTP_MESSAGE_VALUES):
        raise McpMessageError(
            f"the server sent a message of more than {MAX_HTTP_MESSAGE_VALUES}"
            " values (HTTP)"
        )
    return json.dumps(value, ensure_ascii=False).encode()


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


async def rewrite_message(raw: bytes, run_blocking: RunBlocking) -> bytes:
    """Return one HTTP message as the SDK may parse it on the loop.

    Raises ``McpMessageError`` for a message too large to read at all. Its
    lists cut and lone surrogates replaced, it is written again; what is not
    JSON goes on as it came, for the SDK to refuse (as any reply it cannot
    read), which the bounds keep quick.
    """
    text = _checked(raw, MAX_HTTP_MESSAGE_BYTES, "replace")
    write = partial(_written, text)
    try:
        return write() if untrusted.decodes_on_loop(text) else await run_blocking(write)
    except (untrusted.UntrustedInputError, UnicodeEncodeError):
        return raw


def _cut_lists(value: Any, max_tools: int = MAX_LISTED_TOOLS) -> None:
    """Keep a result's first parts and tools (the SDK makes a model of each).

    Past ``MAX_RESULT_PARTS`` a text part says how many more were not read;
    past ``max_tools`` the rest of a listing is left out (Soul keeps the
    first 128 anyway).
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
    if isinstance(tools := result.get("tools"), list) and len(tools) > max_tools:
        result["tools"] = tools[:max_tools]
