"""Soul's LLM APIs for any Home Assistant agent: "Soul bodies" and "Soul MCP tools".

Any conversation agent (OpenAI, Ollama, Anthropic, …) that selects "Soul
bodies" gets one tool per skill of every available body; a call is validated
against the skill's ``input_schema`` and sent as ``invoke`` (§3.6), and the
body's ``result`` is the tool's answer. Home Assistant's ``mcp_server``
offers the same API to MCP clients (docs/mcp.md).

"Soul MCP tools" offers the tools of Soul's connected MCP servers — stdio
programs included, which Home Assistant's own ``mcp`` integration cannot
start — named ``<server>__<tool>``, validated against their schemas.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from .compat import schema_from_json, tool_result
from .const import DOMAIN, LOGGER
from .core.invoker import InvokeError
from .core.mcp.hub import McpToolError
from .core.mcp.tools import McpTool
from .core.protocol import Skill
from .models import SoulConfigEntry

API_ID = "soul_bodies"
API_NAME = "Soul bodies"
MCP_API_ID = "soul_mcp_tools"
MCP_API_NAME = "Soul MCP tools"
MCP_API_PROMPT = (
    "You can use tools of Model Context Protocol servers, named "
    "<server>__<tool>. Each returns the server's answer as text."
)
API_PROMPT = (
    "You can drive physical bodies (desk robots, lamps, speakers) through the "
    "tools named after a body and one of its skills. Each tool runs that skill "
    "on that body and returns the body's result."
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _flat(schema: dict[str, Any]) -> dict[str, Any]:
    """Return an object schema with its properties at the top.

    Home Assistant's tool schemas (and its MCP server, which reads
    ``properties`` of every tool) need them there; ``anyOf``/``oneOf``/``allOf``
    branches lend theirs, and only what every branch requires stays required.
    The full schema still checks every call (``Skill.argument_errors``).
    """
    properties = dict(schema.get("properties") or {})
    required = {r for r in schema.get("required") or () if isinstance(r, str)}
    for key in ("anyOf", "oneOf", "allOf"):
        branches = [b for b in schema.get(key) or () if isinstance(b, dict)]
        for branch in branches:
            for name, prop in (branch.get("properties") or {}).items():
                properties.setdefault(name, prop)
        needed = [set(b.get("required") or ()) for b in branches]
        if key == "allOf":
            required.update(*needed)
        elif needed:
            required |= set.intersection(*needed)
    flat: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        flat["required"] = sorted(required & set(properties))
    return flat


def _parameters(skill: Skill) -> Any:
    """Return the skill's input_schema as Home Assistant's tool schema."""
    try:
        return schema_from_json(_flat(skill.input_schema))
    except Exception:  # noqa: BLE001 - the invoker still validates with jsonschema
        LOGGER.debug("Could not convert the schema of %s", skill.name, exc_info=True)
        return schema_from_json({"type": "object"})


class SkillTool(llm.Tool):
    """One skill of one body."""

    # Home Assistant 2026.10+ asks every tool for the integration providing it.
    integration = DOMAIN

    def __init__(
        self, entry: SoulConfigEntry, terminal_id: str, skill: Skill, name: str
    ) -> None:
        """Describe the skill for the model."""
        self.entry = entry
        self.terminal_id = terminal_id
        self.skill = skill.name
        self.name = name
        self.description = f"{skill.description or skill.name} (body {terminal_id})"
        self.parameters = _parameters(skill)

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> Any:
        """Invoke the skill and return the body's result."""
        try:
            result = await self.entry.runtime_data.invoker.invoke(
                self.terminal_id, self.skill, tool_input.tool_args
            )
        except InvokeError as err:
            return tool_result({"ok": False, "error": str(err)}, error=True)
        return tool_result(
            {"ok": result.ok, "output": result.output, "error": result.error},
            error=not result.ok,
        )


@dataclass(kw_only=True)
class SoulBodiesAPI(llm.API):
    """The skills of every available body."""

    entry: SoulConfigEntry

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Return the tools of the bodies available now."""
        tools: list[llm.Tool] = []
        names: set[str] = set()
        for terminal in self.entry.runtime_data.registry:
            if not terminal.available or terminal.skills is None:
                continue
            for skill in terminal.skills.skills:
                name = base = _UNSAFE.sub("_", f"{terminal.terminal_id}_{skill.name}")[
                    :60
                ]
                suffix = 2
                while name in names:
                    name = f"{base}_{suffix}"
                    suffix += 1
                names.add(name)
                tools.append(SkillTool(self.entry, terminal.terminal_id, skill, name))
        return llm.APIInstance(self, API_PROMPT, llm_context, tools=tools)


class SoulMcpTool(llm.Tool):
    """One tool of one of Soul's MCP servers."""

    integration = DOMAIN

    def __init__(self, entry: SoulConfigEntry, tool: McpTool) -> None:
        """Describe the tool for the model."""
        self.entry = entry
        self.tool = tool
        self.name = tool.name
        self.description = tool.skill.description or tool.tool
        self.parameters = _parameters(tool.skill)

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> Any:
        """Call the tool and return its result as text."""
        try:
            output = await self.entry.runtime_data.mcp.call(
                self.tool, dict(tool_input.tool_args)
            )
        except McpToolError as err:
            return tool_result({"ok": False, "error": str(err)}, error=True)
        return tool_result({"ok": True, "output": output}, error=False)


@dataclass(kw_only=True)
class SoulMcpAPI(llm.API):
    """The tools of every connected MCP server of Soul."""

    entry: SoulConfigEntry

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Return the tools of the servers connected now."""
        tools: list[llm.Tool] = [
            SoulMcpTool(self.entry, tool)
            for tool in self.entry.runtime_data.mcp.tools()
        ]
        return llm.APIInstance(self, MCP_API_PROMPT, llm_context, tools=tools)


def async_register_api(hass: HomeAssistant, entry: SoulConfigEntry) -> Any:
    """Register both APIs; return the callback that unregisters them."""
    unregister = [
        llm.async_register_api(
            hass, SoulBodiesAPI(hass=hass, id=API_ID, name=API_NAME, entry=entry)
        ),
        llm.async_register_api(
            hass,
            SoulMcpAPI(hass=hass, id=MCP_API_ID, name=MCP_API_NAME, entry=entry),
        ),
    ]

    def unregister_all() -> None:
        for callback_ in unregister:
            callback_()

    return unregister_all
