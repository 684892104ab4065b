"""Device triggers: a body's user feels something; a soul's mood or willingness changes.

On a body's device: "user emotion detected" (one of the 15 labels) and "user
emotion group detected" (angry, afraid, sad, happy, excited, calm). On a
soul's device: "mood changed" (optionally to one mood), "execution blocked"
and "execution unblocked". Each listens to one of Soul's bus events,
filtered by the device.
"""

from __future__ import annotations

from typing import Any

from homeassistant.components.device_automation import (
    DEVICE_TRIGGER_BASE_SCHEMA,
    InvalidDeviceAutomationConfig,
)
from homeassistant.components.homeassistant.triggers import event as event_trigger
from homeassistant.const import (
    CONF_DEVICE_ID,
    CONF_DOMAIN,
    CONF_EVENT,
    CONF_PLATFORM,
    CONF_TYPE,
)
from homeassistant.core import CALLBACK_TYPE, HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.trigger import TriggerActionType, TriggerInfo
from homeassistant.helpers.typing import ConfigType
import voluptuous as vol

from .const import (
    DOMAIN,
    EVENT_EXEC_MODE_CHANGED,
    EVENT_MOOD_CHANGED,
    EVENT_USER_EMOTION,
)
from .core.emotion.dynamics import Mood
from .core.emotion.labels import LABELS, Group
from .helpers import find_terminal_id, soul_id_of_device

USER_EMOTION = "user_emotion"
USER_EMOTION_GROUP = "user_emotion_group"
MOOD_CHANGED = "mood_changed"
EXECUTION_BLOCKED = "execution_blocked"
EXECUTION_UNBLOCKED = "execution_unblocked"
CONF_TO = "to"
CONF_EMOTION = "emotion"
CONF_GROUP = "group"
GROUPS = [g.value for g in Group]
MOODS = [m.value for m in Mood]

TERMINAL_TRIGGERS = (USER_EMOTION, USER_EMOTION_GROUP)
SOUL_TRIGGERS = (MOOD_CHANGED, EXECUTION_BLOCKED, EXECUTION_UNBLOCKED)

TRIGGER_SCHEMA = DEVICE_TRIGGER_BASE_SCHEMA.extend(
    {
        vol.Required(CONF_TYPE): vol.In([*TERMINAL_TRIGGERS, *SOUL_TRIGGERS]),
        vol.Optional(CONF_EMOTION): vol.In(LABELS),
        vol.Optional(CONF_GROUP): vol.In(GROUPS),
        vol.Optional(CONF_TO): vol.In(MOODS),
    }
)
_EXTRA_FIELDS: dict[str, vol.Schema] = {
    USER_EMOTION: vol.Schema({vol.Required(CONF_EMOTION): vol.In(LABELS)}),
    USER_EMOTION_GROUP: vol.Schema({vol.Required(CONF_GROUP): vol.In(GROUPS)}),
    MOOD_CHANGED: vol.Schema({vol.Optional(CONF_TO): vol.In(MOODS)}),
}


def _device(hass: HomeAssistant, device_id: str) -> dr.DeviceEntry | None:
    return dr.async_get(hass).async_get(device_id)


async def async_get_triggers(
    hass: HomeAssistant, device_id: str
) -> list[dict[str, Any]]:
    """List the triggers of a body's or a soul's device."""
    device = _device(hass, device_id)
    if device is None:
        return []
    if soul_id_of_device(device) is not None:
        types: tuple[str, ...] = SOUL_TRIGGERS
    elif find_terminal_id(hass, device_id) is not None:
        types = TERMINAL_TRIGGERS
    else:
        return []
    return [
        {
            CONF_PLATFORM: "device",
            CONF_DOMAIN: DOMAIN,
            CONF_DEVICE_ID: device_id,
            CONF_TYPE: trigger_type,
        }
        for trigger_type in types
    ]


async def async_get_trigger_capabilities(
    hass: HomeAssistant, config: ConfigType
) -> dict[str, vol.Schema]:
    """Return the extra fields of a trigger (which emotion, group or mood)."""
    if (schema := _EXTRA_FIELDS.get(config[CONF_TYPE])) is None:
        return {}
    return {"extra_fields": schema}


async def async_validate_trigger_config(
    hass: HomeAssistant, config: ConfigType
) -> ConfigType:
    """Validate the trigger, including its extra field."""
    config = TRIGGER_SCHEMA(config)
    trigger_type = config[CONF_TYPE]
    if trigger_type == USER_EMOTION and CONF_EMOTION not in config:
        raise InvalidDeviceAutomationConfig("user_emotion needs an emotion")
    if trigger_type == USER_EMOTION_GROUP and CONF_GROUP not in config:
        raise InvalidDeviceAutomationConfig("user_emotion_group needs a group")
    return config


def _event_filter(config: ConfigType) -> tuple[str, dict[str, Any]]:
    """Return the bus event and data a trigger listens for."""
    data: dict[str, Any] = {CONF_DEVICE_ID: config[CONF_DEVICE_ID]}
    trigger_type = config[CONF_TYPE]
    if trigger_type == USER_EMOTION:
        return EVENT_USER_EMOTION, {**data, "emotion": config[CONF_EMOTION]}
    if trigger_type == USER_EMOTION_GROUP:
        return EVENT_USER_EMOTION, {**data, "group": config[CONF_GROUP]}
    if trigger_type == MOOD_CHANGED:
        if CONF_TO in config:
            data["mood"] = config[CONF_TO]
        return EVENT_MOOD_CHANGED, data
    if trigger_type == EXECUTION_BLOCKED:
        return EVENT_EXEC_MODE_CHANGED, {**data, "blocked": True, "was_blocked": False}
    return EVENT_EXEC_MODE_CHANGED, {**data, "blocked": False, "was_blocked": True}


async def async_attach_trigger(
    hass: HomeAssistant,
    config: ConfigType,
    action: TriggerActionType,
    trigger_info: TriggerInfo,
) -> CALLBACK_TYPE:
    """Listen for the trigger's bus event."""
    event_type, event_data = _event_filter(config)
    event_config = event_trigger.TRIGGER_SCHEMA(
        {
            event_trigger.CONF_PLATFORM: CONF_EVENT,
            event_trigger.CONF_EVENT_TYPE: event_type,
            event_trigger.CONF_EVENT_DATA: event_data,
        }
    )
    return await event_trigger.async_attach_trigger(
        hass, event_config, action, trigger_info, platform_type="device"
    )
