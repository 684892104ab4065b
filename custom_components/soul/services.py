"""The ``soul.invoke_skill`` action and the invocation helper entities share."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import ATTR_DEVICE_ID
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import config_validation as cv, device_registry as dr
import voluptuous as vol

from .const import DOMAIN
from .core.invoker import TIMEOUT_ERROR, InvokeError
from .core.protocol import InvokeResult
from .runtime import SoulConfigEntry

SERVICE_INVOKE_SKILL = "invoke_skill"
ATTR_SKILL = "skill"
ATTR_ARGUMENTS = "arguments"

INVOKE_SKILL_SCHEMA = vol.Schema(
    {
        vol.Required(ATTR_DEVICE_ID): vol.All(cv.ensure_list, [cv.string]),
        vol.Required(ATTR_SKILL): cv.string,
        vol.Optional(ATTR_ARGUMENTS, default=dict): vol.Any(dict, None),
    },
    extra=vol.ALLOW_EXTRA,
)


def find_loaded_entry(hass: HomeAssistant) -> SoulConfigEntry | None:
    """Return the loaded Soul hub entry, if there is one."""
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry.state is ConfigEntryState.LOADED:
            return entry
    return None


def loaded_entry(hass: HomeAssistant) -> SoulConfigEntry:
    """Return the loaded Soul hub entry, or raise."""
    if (entry := find_loaded_entry(hass)) is not None:
        return entry
    raise ServiceValidationError(
        translation_domain=DOMAIN, translation_key="not_loaded"
    )


def terminal_id_of_device(hass: HomeAssistant, device_id: str) -> str:
    """Return the terminal id behind a device, or raise."""
    device = dr.async_get(hass).async_get(device_id)
    if device is not None:
        for domain, identifier in device.identifiers:
            if domain == DOMAIN:
                return identifier
    raise ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="not_a_terminal",
        translation_placeholders={"device": device_id},
    )


async def async_invoke_or_raise(
    entry: SoulConfigEntry,
    terminal_id: str,
    skill: str,
    arguments: dict[str, Any],
    *,
    raise_on_failure: bool,
) -> InvokeResult:
    """Invoke a skill; refusals and timeouts raise translated errors.

    With ``raise_on_failure`` a result with ``ok=false`` raises too (entities);
    otherwise it is returned for the caller to report (the action's response).
    """
    try:
        result = await entry.runtime_data.invoker.invoke(terminal_id, skill, arguments)
    except InvokeError as err:
        raise ServiceValidationError(
            str(err),
            translation_domain=DOMAIN,
            translation_key=err.key,
            translation_placeholders={
                "terminal": terminal_id,
                "skill": skill,
                **err.placeholders,
            },
        ) from err
    if not result.ok and result.error == TIMEOUT_ERROR:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="timeout",
            translation_placeholders={"terminal": terminal_id, "skill": skill},
        )
    if not result.ok and raise_on_failure:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="skill_failed",
            translation_placeholders={
                "terminal": terminal_id,
                "skill": skill,
                "error": result.error or "",
            },
        )
    return result


async def _async_invoke_skill(call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(call.hass)
    devices = call.data[ATTR_DEVICE_ID]
    if len(devices) != 1:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="one_device_required"
        )
    terminal_id = terminal_id_of_device(call.hass, devices[0])
    result = await async_invoke_or_raise(
        entry,
        terminal_id,
        call.data[ATTR_SKILL],
        call.data[ATTR_ARGUMENTS] or {},
        raise_on_failure=False,
    )
    return {
        "terminal_id": terminal_id,
        "request_id": result.request_id,
        "ok": result.ok,
        "output": result.output,
        "error": result.error,
    }


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register Soul's actions."""
    hass.services.async_register(
        DOMAIN,
        SERVICE_INVOKE_SKILL,
        _async_invoke_skill,
        schema=INVOKE_SKILL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
