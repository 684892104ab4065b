"""Connectivity of each terminal (online, LWT and heartbeat TTL) and the hub's memory."""

from __future__ import annotations

from typing import Any

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DOMAIN, MEMORY_NONE
from .core.registry import Terminal
from .entity import SoulEntity, TerminalEntity, async_setup_terminal_entities
from .helpers import entry_settings
from .memory import memory_backend_name, signal_memory_ready
from .models import SoulConfigEntry

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


class MemoryReady(SoulEntity, BinarySensorEntity):
    """On while the memory backend passes its health check (§2 step 11)."""

    _attr_device_class = BinarySensorDeviceClass.CONNECTIVITY
    _attr_entity_category = EntityCategory.DIAGNOSTIC

    def __init__(self, entry: SoulConfigEntry) -> None:
        """Create the hub's memory sensor."""
        super().__init__(entry, "memory")

    @property
    def is_on(self) -> bool:
        """Return whether recall_memory is offered now."""
        memory = self.entry.runtime_data.memory
        return memory is not None and memory.ready

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """Return the backend and the last error (never a secret)."""
        memory = self.entry.runtime_data.memory
        return {
            "backend": memory_backend_name(entry_settings(self.entry)),
            "last_error": memory.last_error if memory else None,
            "queued_archives": len(memory.queue) if memory else 0,
        }

    async def async_added_to_hass(self) -> None:
        """Follow readiness changes."""
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass,
                signal_memory_ready(self.entry.entry_id),
                self.async_write_ha_state,
            )
        )


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the hub's memory sensor (while memory is on) and one per terminal."""
    if memory_backend_name(entry_settings(entry)) != MEMORY_NONE:
        async_add_entities([MemoryReady(entry)])
    elif entity_id := er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_memory"
    ):
        # Memory was turned off: no "Disconnected" sensor for what is not there.
        er.async_get(hass).async_remove(entity_id)
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalConnectivity(entry, terminal)],
        "binary_sensor",
    )
