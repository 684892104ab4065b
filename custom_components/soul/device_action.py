"""Device actions: one per skill of a body, with fields from the skill's input_schema."""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_DEVICE_ID, CONF_DOMAIN, CONF_TYPE
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.typing import ConfigType, TemplateVarsType
import voluptuous as vol

from .const import DOMAIN
from .core.protocol import Skill
from .helpers import (
    async_invoke_or_raise,
    find_terminal_id,
    loaded_entry,
    terminal_id_of_device,
)

ACTION_TYPE = "invoke_skill"
CONF_SUBTYPE = "subtype"  # the skill's name
ACTION_SCHEMA = cv.DEVICE_ACTION_BASE_SCHEMA.extend(
    {vol.Required(CONF_TYPE): ACTION_TYPE, vol.Required(CONF_SUBTYPE): cv.string},
    extra=vol.ALLOW_EXTRA,
)
_TYPES: dict[str, Any] = {
    "number": vol.Coerce(float),
    "integer": vol.Coerce(int),
    "boolean": cv.boolean,
    "string": cv.string,
}


def _skill(hass: HomeAssistant, device_id: str, name: str) -> Skill | None:
    terminal = loaded_entry(hass).runtime_data.registry.get(
        terminal_id_of_device(hass, device_id)
    )
    if terminal is None or terminal.skills is None:
        return None
    return terminal.skills.skill(name)


def fields_schema(skill: Skill) -> vol.Schema:
    """Return a form schema for the skill's arguments (enums become choices)."""
    fields: dict[Any, Any] = {}
    for name, prop in skill.properties.items():
        marker = vol.Required if name in skill.required else vol.Optional
        if isinstance(prop.get("enum"), list) and prop["enum"]:
            fields[marker(name)] = vol.In([str(v) for v in prop["enum"]])
        else:
            fields[marker(name)] = _TYPES.get(_one_type(prop.get("type")), cv.string)
    return vol.Schema(fields)


def _one_type(declared: Any) -> str:
    """Return a property's one JSON type: ``["integer", "null"]`` is "integer".

    "" when it has none or several. A list of types (valid JSON Schema a body
    may send) once raised ``unhashable type: 'list'`` in the action editor.
    """
    if isinstance(declared, list):
        types = [kind for kind in declared if kind != "null"]
        declared = types[0] if len(types) == 1 else ""
    return declared if isinstance(declared, str) else ""


async def async_get_actions(
    hass: HomeAssistant, device_id: str
) -> list[dict[str, str]]:
    """List one action per skill of the device's body (none for a soul's device)."""
    if (terminal_id := find_terminal_id(hass, device_id)) is None:
        return []
    terminal = loaded_entry(hass).runtime_data.registry.get(terminal_id)
    if terminal is None or terminal.skills is None:
        return []
    return [
        {
            CONF_DOMAIN: DOMAIN,
            CONF_DEVICE_ID: device_id,
            CONF_TYPE: ACTION_TYPE,
            CONF_SUBTYPE: skill.name,
        }
        for skill in terminal.skills.skills
    ]


async def async_get_action_capabilities(
    hass: HomeAssistant, config: ConfigType
) -> dict[str, vol.Schema]:
    """Return the argument fields of the action's skill."""
    skill = _skill(hass, config[CONF_DEVICE_ID], config[CONF_SUBTYPE])
    return {} if skill is None else {"extra_fields": fields_schema(skill)}


async def async_call_action_from_config(
    hass: HomeAssistant,
    config: ConfigType,
    variables: TemplateVarsType,
    context: Context | None,
) -> None:
    """Invoke the skill with the action's fields as arguments."""
    skip = {CONF_DOMAIN, CONF_DEVICE_ID, CONF_TYPE, CONF_SUBTYPE, "metadata"}
    arguments = {k: v for k, v in config.items() if k not in skip}
    await async_invoke_or_raise(
        loaded_entry(hass),
        terminal_id_of_device(hass, config[CONF_DEVICE_ID]),
        config[CONF_SUBTYPE],
        arguments,
        raise_on_failure=True,
    )
