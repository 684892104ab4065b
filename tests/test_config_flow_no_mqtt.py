"""The config flow without Home Assistant's MQTT integration."""

from __future__ import annotations

from homeassistant.config_entries import SOURCE_USER
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType

from custom_components.soul.const import DOMAIN


async def test_abort_without_mqtt(hass: HomeAssistant) -> None:
    """Soul needs the MQTT integration and says so."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "mqtt_not_configured"
