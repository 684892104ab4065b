"""The base class of every Soul entity."""

from __future__ import annotations

from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity import Entity

from .const import DOMAIN, TITLE
from .runtime import SoulConfigEntry


class SoulEntity(Entity):
    """An entity of the Soul hub: named by translation key, grouped under a device."""

    _attr_has_entity_name = True
    _attr_should_poll = False

    def __init__(self, entry: SoulConfigEntry, key: str) -> None:
        """Attach the entity to the hub device; ``key`` names it and makes it unique."""
        self.entry = entry
        self._attr_translation_key = key
        self._attr_unique_id = f"{entry.entry_id}_{key}"
        self._attr_device_info = hub_device_info(entry)


def hub_device_info(entry: SoulConfigEntry) -> DeviceInfo:
    """Return the device that stands for the Soul hub itself."""
    return DeviceInfo(
        identifiers={(DOMAIN, entry.entry_id)},
        entry_type=DeviceEntryType.SERVICE,
        manufacturer=TITLE,
        name=TITLE,
    )
