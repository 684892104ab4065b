"""Diagnostic sensors of each terminal: skill and catalog versions, last heartbeat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.registry import Change, Terminal
from .entity import TerminalEntity, async_setup_terminal_entities
from .runtime import SoulConfigEntry

PARALLEL_UPDATES = 0


@dataclass(frozen=True, kw_only=True)
class TerminalSensorDescription(SensorEntityDescription):
    """A terminal sensor: how to read its value from the terminal."""

    value_fn: Callable[[Terminal], int | datetime | None]
    changes: frozenset[Change] = frozenset({Change.UPDATED, Change.AVAILABILITY})


SENSORS: tuple[TerminalSensorDescription, ...] = (
    TerminalSensorDescription(
        key="skill_version",
        translation_key="skill_version",
        entity_category=EntityCategory.DIAGNOSTIC,
        value_fn=lambda t: t.skills.skill_version if t.skills else None,
    ),
    TerminalSensorDescription(
        key="catalog_version",
        translation_key="catalog_version",
        entity_category=EntityCategory.DIAGNOSTIC,
        value_fn=lambda t: t.catalog.catalog_version if t.catalog else None,
    ),
    TerminalSensorDescription(
        key="last_heartbeat",
        translation_key="last_heartbeat",
        device_class=SensorDeviceClass.TIMESTAMP,
        entity_category=EntityCategory.DIAGNOSTIC,
        # Changes every ~10 s per body: opt-in, to keep the recorder quiet.
        entity_registry_enabled_default=False,
        value_fn=lambda t: t.last_heartbeat,
        changes=frozenset({Change.HEARTBEAT, Change.AVAILABILITY}),
    ),
)


class TerminalSensor(TerminalEntity, SensorEntity):
    """A diagnostic value of a terminal."""

    entity_description: TerminalSensorDescription

    def __init__(
        self,
        entry: SoulConfigEntry,
        terminal: Terminal,
        description: TerminalSensorDescription,
    ) -> None:
        """Create the sensor ``description`` of ``terminal``."""
        super().__init__(entry, terminal, description.key)
        self.entity_description = description
        self._changes = description.changes

    @property
    def native_value(self) -> int | datetime | None:
        """Return the value from the registry."""
        terminal = self.terminal
        return None if terminal is None else self.entity_description.value_fn(terminal)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the diagnostic sensors per terminal."""
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalSensor(entry, terminal, d) for d in SENSORS],
        "sensor",
    )
