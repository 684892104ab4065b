"""The model's side of a chat turn: its interface, the tools it gets, what it reads.

``ChatModel`` is what the pipeline needs of a language model and
``ExtraTools`` what it needs of tools offered next to the body's skills (the
caller's, such as Assist's, and the soul's MCP tools, ``combine``d);
``recall_memory`` is the memory tool (docs/memory.md), and ``tool_message``
turns a tool's result into the text the model reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
import json
from typing import Any, Protocol

from . import untrusted
from .llm import ModelReply

MAX_TOOL_MESSAGE = 16 * 1024  # a tool result as the model reads it
RECALL_TOOL = "recall_memory"
RECALL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RECALL_TOOL,
        "description": "Search long-term memory of this user (facts they told you, "
        "earlier conversations) before answering questions about the past.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to recall"}
            },
            "required": ["query"],
        },
    },
}


class ChatModel(Protocol):
    """The language model: ``OpenAICompatibleLLM`` or a test double."""

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Return one completion (``response_format``: OpenAI's structured output)."""

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> AsyncIterator[str | ModelReply]:
        """Yield one completion's text in pieces, then the whole reply."""


class ExtraTools(Protocol):
    """Tools offered next to the body's skills (e.g. Home Assistant's Assist API)."""

    specs: list[dict[str, Any]]  # OpenAI function tools

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool; raise for failures (the model reads the error)."""


class CombinedTools:
    """Several ``ExtraTools`` as one; where two offer a name, the first wins."""

    def __init__(self, sets: list[ExtraTools]) -> None:
        """Combine ``sets`` in order of precedence."""
        self._owner: dict[str, ExtraTools] = {}
        self.specs: list[dict[str, Any]] = []
        for tools in sets:
            for spec in tools.specs:
                name = spec["function"]["name"]
                if name not in self._owner:
                    self._owner[name] = tools
                    self.specs.append(spec)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run the tool with the set that offers it."""
        owner = self._owner.get(name)
        if owner is None:
            raise KeyError(f"no tool {name}")
        return await owner.call(name, arguments)


def combine(*sets: ExtraTools | None) -> ExtraTools | None:
    """Return the given tool sets as one (None when there are none)."""
    present = [tools for tools in sets if tools is not None]
    if len(present) <= 1:
        return present[0] if present else None
    return CombinedTools(present)


def tool_message(result: dict[str, Any]) -> str:
    """Return a tool's result as the model reads it: JSON, cut to a size."""
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_TOOL_MESSAGE:
        text = text[:MAX_TOOL_MESSAGE] + " …(cut)"
    return untrusted.clean(text, MAX_TOOL_MESSAGE + 8)
