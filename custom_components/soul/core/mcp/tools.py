"""MCP tools as the model's functions: names, argument checks, results as text.

A tool ``read_file`` of the server ``files`` is offered to the model as
``files__read_file`` (OpenAI's function names: ``[A-Za-z0-9_-]{1,64}``; a
longer or odder name is cut and made unique with a short hash). Its input
schema is checked as a body's skill schema is (``protocol.parse_input_schema``:
bounded, ``$ref`` inlined, patterns with a time limit), and the model's
arguments are validated against it before the server sees them. A result's
parts become one text the model reads: text as is, an image or audio as a
short description, a resource as its text or its address.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import hashlib
import json
import re
from typing import Any

from mcp import types

from .. import untrusted
from ..protocol import MAX_TEXT_LENGTH, ProtocolError, Skill, parse_input_schema

MAX_NAME = 64
SEPARATOR = "__"
MAX_TOOLS_PER_SERVER = 128
MAX_RESULT_CHARS = 16 * 1024
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of one server, as the model sees it (``skill.name``) and the server."""

    server: str
    tool: str
    skill: Skill

    @property
    def name(self) -> str:
        """Return the model's name of the tool (``<server>__<tool>``)."""
        return self.skill.name

    def spec(self) -> dict[str, Any]:
        """Return the OpenAI function tool."""
        return {
            "type": "function",
            "function": {
                "name": self.skill.name,
                "description": self.skill.description or self.tool,
                "parameters": self.skill.input_schema,
            },
        }


def model_name(server: str, tool: str, taken: set[str]) -> str:
    """Return ``<server>__<tool>`` within the model API's rules, unique in ``taken``."""
    name = f"{server}{SEPARATOR}{_INVALID.sub('_', tool)}"
    if (
        len(name) <= MAX_NAME
        and name not in taken
        and name == f"{server}{SEPARATOR}{tool}"
    ):
        return name
    digest = hashlib.sha256(tool.encode(errors="replace")).hexdigest()
    for extra in range(1000):
        suffix = f"_{digest[:8]}" + (f"{extra}" if extra else "")
        candidate = name[: MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError("no free name")  # pragma: no cover - 1,000 collisions


def parse_tools(
    server: str, listed: Sequence[types.Tool]
) -> tuple[list[McpTool], list[str]]:
    """Return a server's usable tools and why the others were left out.

    Runs in an executor: checking a schema against its meta-schema costs
    milliseconds.
    """
    tools: list[McpTool] = []
    skipped: list[str] = []
    taken: set[str] = set()
    for tool in listed[:MAX_TOOLS_PER_SERVER]:
        label = untrusted.clean(tool.name, 80, multiline=False)
        if not tool.name or len(tool.name) > 256:
            skipped.append(f"{label!r}: a name of 1 to 256 characters is needed")
            continue
        try:
            schema, validator = parse_input_schema(tool.inputSchema)
        except ProtocolError as err:
            skipped.append(f"{label}: {err}")
            continue
        name = model_name(server, tool.name, taken)
        taken.add(name)
        description = untrusted.clean(
            tool.description or tool.title or "", MAX_TEXT_LENGTH
        )
        tools.append(
            McpTool(server, tool.name, Skill(name, description, schema, validator))
        )
    if len(listed) > MAX_TOOLS_PER_SERVER:
        skipped.append(
            # The transports cut a listing (``messages``): at least this many.
            f"{len(listed) - MAX_TOOLS_PER_SERVER} or more tools over"
            f" {MAX_TOOLS_PER_SERVER}"
        )
    return tools, skipped


def result_text(content: Iterable[Any], structured: Any = None) -> str:
    """Return a tool result's parts as the one text the model reads."""
    parts: list[str] = []
    length = -1  # of the parts joined by line feeds
    for part in content:
        if length > MAX_RESULT_CHARS:
            break  # the rest would be cut off anyway
        if isinstance(part, types.TextContent):
            parts.append(part.text)
        elif isinstance(part, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(part, types.ImageContent) else "audio"
            data = part.data
            size = len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))
            parts.append(f"[{kind}: {part.mimeType}, {size} bytes]")
        elif isinstance(part, types.EmbeddedResource):
            resource = part.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(
                    f"[resource {resource.uri}: {resource.mimeType or 'binary'}]"
                )
        elif isinstance(part, types.ResourceLink):
            parts.append(f"[resource link {part.uri}: {part.name}]")
        else:
            continue
        length += len(parts[-1]) + 1
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + " …(cut)"
    return untrusted.clean(text, MAX_RESULT_CHARS + 8)
