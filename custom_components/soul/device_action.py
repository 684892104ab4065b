"""Device actions: one per skill of a body, with fields from the skill's input_schema."""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_DEVICE_ID, CONF_DOMAIN, CONF_TYPE
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.typing import ConfigType, TemplateVarsType
import voluptuous as vol

from .const import DOMAIN
from .core import untrusted
from .core.protocol import MAX_INTENT_ID_LENGTH, Skill
from .core.skill_profiles import string_enum
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
# The action's own keys (Home Assistant's and Soul's): everything else in an
# action is a skill argument. A skill argument of one of these names has no
# field (soul.invoke_skill takes it): a hostile body named them "type" and
# "device_id", which the form would have overwritten (black box, 2026-11-29).
_ACTION_KEYS = frozenset(str(key) for key in ACTION_SCHEMA.schema)
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
    """Return a form schema for the skill's arguments (string enums become choices).

    A body's words become the form's labels and choices as they are: an
    argument is a field only when its name is a clean line that is not one
    of the action's own keys, and an enum a choice only when its values are
    clean lines a select could hold (``string_enum``); else it is typed in.
    """
    fields: dict[Any, Any] = {}
    for name, prop in skill.properties.items():
        if name in _ACTION_KEYS or not untrusted.is_text(name, MAX_INTENT_ID_LENGTH):
            continue
        marker = vol.Required if name in skill.required else vol.Optional
        if (options := string_enum(prop)) is not None:
            fields[marker(name)] = vol.In(list(options))
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
    """Invoke the skill with the action's fields as arguments.

    Not its own keys: an action's ``alias``, ``enabled`` or
    ``continue_on_error`` went to the body as arguments.
    """
    arguments = {k: v for k, v in config.items() if k not in _ACTION_KEYS}
    await async_invoke_or_raise(
        loaded_entry(hass),
        terminal_id_of_device(hass, config[CONF_DEVICE_ID]),
        config[CONF_SUBTYPE],
        arguments,
        raise_on_failure=True,
    )
