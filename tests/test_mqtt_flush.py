"""``MqttBridge.async_flush``: Home Assistant's MQTT client has written what was published.

A chat turn awaits it after its ``emotion_update`` and its ``intent_action``
so that they leave before the turn's bookkeeping (docs/performance.md, "Chat
path"). It rests on how Home Assistant's client writes: a publish queues the
packet in paho and registers the socket with the loop, which writes it on a
later turn. If Home Assistant ever writes at once, the first assertion fails
and the flush is no longer needed.
"""

from __future__ import annotations

import asyncio

from homeassistant.components.mqtt.models import DATA_MQTT
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Topics
from custom_components.soul.mqtt_bridge import MqttBridge


def _queued(hass: HomeAssistant) -> int:
    """Return how many packets Home Assistant's paho client has not written yet."""
    return len(hass.data[DATA_MQTT].client._mqttc._out_packet)


async def test_flush_returns_once_the_client_has_written(
    hass: HomeAssistant, real_mqtt: MockConfigEntry
) -> None:
    bridge = MqttBridge(hass, Topics("flush"), TerminalRegistry())
    for topic in (
        "flush/terminal/t-1/emotion_update",
        "flush/terminal/t-1/intent_action",
    ):
        await bridge.async_publish(topic, '{"x": 1}', 1, False)
    assert _queued(hass) == 2  # queued: the loop writes them on a later turn
    await bridge.async_flush()
    assert _queued(hass) == 0


async def test_one_yield_is_not_enough(
    hass: HomeAssistant, real_mqtt: MockConfigEntry
) -> None:
    """Why the flush yields twice: after one yield the write has not run."""
    bridge = MqttBridge(hass, Topics("flush"), TerminalRegistry())
    await bridge.async_publish("flush/terminal/t-1/emotion_update", "{}", 1, False)
    await asyncio.sleep(0)
    assert _queued(hass) == 1
    await asyncio.sleep(0)
    assert _queued(hass) == 0
