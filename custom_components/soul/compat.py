"""What differs between Home Assistant 2026.2 (our minimum) and the newest.

Newer Home Assistant describes LLM tool parameters with ``probatio`` schemas
and returns ``llm.ToolResult`` from tools; 2026.2 uses voluptuous (converted
by ``voluptuous_openapi``) and plain JSON objects. Everything that touches
those APIs goes through here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from homeassistant.helpers import llm

if TYPE_CHECKING:
    from homeassistant.components.conversation import ToolResultContentDeltaDict

try:  # Home Assistant ≥ 2026.10
    import probatio
except ImportError:  # pragma: no cover - depends on the installed Home Assistant
    probatio = None


def schema_from_json(json_schema: dict[str, Any]) -> Any:
    """Return a tool parameter schema built from a JSON Schema."""
    if probatio is not None:
        return probatio.from_json_schema(json_schema)
    from voluptuous_openapi import convert_to_voluptuous  # noqa: PLC0415

    return convert_to_voluptuous(json_schema)


def schema_to_json(
    schema: Any, custom_serializer: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    """Return a tool parameter schema as JSON Schema for the model."""
    # Both libraries are untyped here; each returns the schema's JSON object.
    if probatio is not None:
        return cast(
            dict[str, Any],
            probatio.to_openapi(schema, custom_serializer=custom_serializer),
        )
    from voluptuous_openapi import convert  # noqa: PLC0415

    return cast(dict[str, Any], convert(schema, custom_serializer=custom_serializer))


def tool_result(data: dict[str, Any], *, error: bool) -> Any:
    """Return what a tool's ``async_call`` returns on this Home Assistant."""
    if (result_type := getattr(llm, "ToolResult", None)) is not None:
        return result_type(data=data, error=error)
    return data


def tool_output(result: Any) -> tuple[Any, bool]:
    """Return (data, error) of what ``APIInstance.async_call_tool`` returned."""
    if hasattr(result, "data") and hasattr(result, "error"):
        return result.data, bool(result.error)
    return result, False


def tool_result_delta(
    call_id: str, tool_name: str, data: dict[str, Any]
) -> ToolResultContentDeltaDict:
    """Return a chat log delta carrying a tool's result (``result`` from 2026.10)."""
    delta: dict[str, Any] = {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": tool_name,
    }
    if (result_type := getattr(llm, "ToolResult", None)) is not None:
        delta["result"] = result_type(data=data)
    else:
        delta["tool_result"] = data
    # The keys are those of this Home Assistant's TypedDict, which mypy sees for
    # one version only (``result`` exists from 2026.10).
    return cast("ToolResultContentDeltaDict", delta)


def tool_result_data(content: Any) -> Any:
    """Return the JSON of a chat log's ``ToolResultContent`` on either version."""
    if (result := getattr(content, "result", None)) is not None:
        return result.data
    return content.tool_result
