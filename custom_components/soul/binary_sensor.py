"""Connectivity of each terminal (online, LWT and heartbeat TTL)."""

from __future__ import annotations

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.registry import Terminal
from .entity import TerminalEntity, async_setup_terminal_entities
from .runtime import SoulConfigEntry

PARALLEL_UPDATES = 0


class TerminalConnectivity(TerminalEntity, BinarySensorEntity):
    """On while the body is online and heard within the TTL; never unavailable."""

    _attr_device_class = BinarySensorDeviceClass.CONNECTIVITY
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_translation_key = "connectivity"

    def __init__(self, entry: SoulConfigEntry, terminal: Terminal) -> None:
        """Create the connectivity sensor of ``terminal``."""
        super().__init__(entry, terminal, "connectivity")

    @property
    def available(self) -> bool:
        """Stay available: this entity reports the terminal's availability."""
        return self.terminal is not None

    @property
    def is_on(self) -> bool:
        """Return whether the terminal is connected."""
        terminal = self.terminal
        return terminal is not None and terminal.available


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a connectivity sensor per terminal."""
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalConnectivity(entry, terminal)],
        "binary_sensor",
    )
