"""Home Assistant's MQTT integration set up on a real broker: the tests' and the benchmarks'."""

from __future__ import annotations

import asyncio

from homeassistant.components import mqtt
from homeassistant.components.mqtt.const import (
    CONFIG_ENTRY_MINOR_VERSION,
    CONFIG_ENTRY_VERSION,
)
from homeassistant.core import HomeAssistant, callback
from pytest_homeassistant_custom_component.common import MockConfigEntry

from devtools.broker import MqttBroker


async def async_setup_mqtt(
    hass: HomeAssistant, broker: MqttBroker, *, timeout: float = 20.0
) -> MockConfigEntry:
    """Set up Home Assistant's MQTT integration on ``broker``; return once connected."""
    entry = MockConfigEntry(
        domain=mqtt.DOMAIN,
        data={mqtt.CONF_BROKER: broker.host, "port": broker.port},
        version=CONFIG_ENTRY_VERSION,
        minor_version=CONFIG_ENTRY_MINOR_VERSION,
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    connected = asyncio.Event()

    @callback
    def on_status(state: bool) -> None:
        if state:
            connected.set()

    unsubscribe = mqtt.async_subscribe_connection_status(hass, on_status)
    try:
        if mqtt.is_connected(hass):
            connected.set()
        async with asyncio.timeout(timeout):
            await connected.wait()
    finally:
        unsubscribe()
    return entry
