"""Soul: a personality, emotions and memory for the bodies on your MQTT broker."""

from __future__ import annotations

from homeassistant.components import mqtt
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryNotReady
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN
from .runtime import SoulConfigEntry, async_create_runtime

PLATFORMS: list[Platform] = []
ISSUE_MQTT_NOT_CONFIGURED = "mqtt_not_configured"


async def async_setup_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> bool:
    """Set up the Soul hub from a config entry."""
    if not mqtt.mqtt_config_entry_enabled(hass):
        # The user removed or disabled MQTT after adding Soul: tell them in Repairs.
        ir.async_create_issue(
            hass,
            DOMAIN,
            ISSUE_MQTT_NOT_CONFIGURED,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_MQTT_NOT_CONFIGURED,
        )
    else:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_MQTT_NOT_CONFIGURED)
    if not await mqtt.async_wait_for_mqtt_client(hass):
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN, translation_key="mqtt_unavailable"
        )
    entry.runtime_data = await async_create_runtime(hass, entry)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> bool:
    """Unload the Soul hub."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)
