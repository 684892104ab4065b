"""Diagnostics for Soul, with secrets redacted."""

from __future__ import annotations

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.core import HomeAssistant

from .const import CONF_LLM_API_KEY
from .runtime import SoulConfigEntry

TO_REDACT = {CONF_LLM_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> dict[str, Any]:
    """Return what helps to debug a Soul hub, without secrets."""
    runtime = entry.runtime_data
    return {
        "options": async_redact_data(dict(entry.options), TO_REDACT),
        "topic_prefix": runtime.topic_prefix,
        "llm": None
        if runtime.llm is None
        else {
            "base_url": runtime.llm.endpoint.base_url,
            "model": runtime.llm.endpoint.model,
            "api_key_set": bool(runtime.llm.endpoint.api_key),
        },
    }
