"""Connectivity of each terminal (online, LWT and heartbeat TTL), the hub's memory and MCP servers."""

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
from .core.mcp.connection import CONNECTED
from .core.terminal import Terminal
from .entity import SoulEntity, TerminalEntity, async_setup_terminal_entities
from .helpers import entry_settings
from .mcp_servers import mcp_servers, signal_mcp_changed
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


class McpServerConnected(SoulEntity, BinarySensorEntity):
    """On while an MCP server is connected; its tool count and last error beside."""

    _attr_device_class = BinarySensorDeviceClass.CONNECTIVITY
    _attr_entity_category = EntityCategory.DIAGNOSTIC

    def __init__(self, entry: SoulConfigEntry, server: str) -> None:
        """Create the sensor of the server named ``server``."""
        super().__init__(entry, "mcp_server")
        self.server = server
        self._attr_unique_id = f"{entry.entry_id}_mcp_{server}"
        self._attr_translation_placeholders = {"server": server}

    @property
    def is_on(self) -> bool:
        """Return whether the server is connected."""
        connection = self.entry.runtime_data.mcp.connections.get(self.server)
        return connection is not None and connection.status == CONNECTED

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """Return the number of tools and the last error (never a secret)."""
        connection = self.entry.runtime_data.mcp.connections.get(self.server)
        return {
            "tools": len(connection.tools) if connection else 0,
            "last_error": connection.error if connection else None,
        }

    async def async_added_to_hass(self) -> None:
        """Follow the server's state."""
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass,
                signal_mcp_changed(self.entry.entry_id),
                self.async_write_ha_state,
            )
        )


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the hub's memory sensor (while memory is on), one per MCP server and terminal."""
    if memory_backend_name(entry_settings(entry)) != MEMORY_NONE:
        async_add_entities([MemoryReady(entry)])
    elif entity_id := er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_memory"
    ):
        # Memory was turned off: no "Disconnected" sensor for what is not there.
        er.async_get(hass).async_remove(entity_id)
    servers = mcp_servers(entry.options)
    async_add_entities([McpServerConnected(entry, name) for name in servers])
    entities = er.async_get(hass)
    prefix = f"{entry.entry_id}_mcp_"
    for entity in er.async_entries_for_config_entry(entities, entry.entry_id):
        if (
            entity.domain == "binary_sensor"
            and entity.unique_id.startswith(prefix)
            and entity.unique_id.removeprefix(prefix) not in servers
        ):
            entities.async_remove(entity.entity_id)  # a server no longer configured
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalConnectivity(entry, terminal)],
        "binary_sensor",
    )
