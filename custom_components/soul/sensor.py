"""Sensors: each soul's emotion, and diagnostic values of each terminal.

A soul shows pleasure, arousal and dominance (−1…1), its mood (the PAD
octant), its execution probability (%) and execution mode. A terminal shows
skill and catalog versions, last heartbeat, and the intent filter's last
decision on its commands (never the command text itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import PERCENTAGE, EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.event import async_track_time_interval

from .core.emotion.dynamics import ExecMode, Mood
from .core.emotion.labels import rounded
from .core.soul import Soul
from .core.soul_events import EmotionSnapshot
from .core.terminal import Change, Terminal
from .entity import (
    SoulDeviceEntity,
    SoulEntity,
    TerminalEntity,
    async_setup_soul_entities,
    async_setup_terminal_entities,
)
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0


@dataclass(frozen=True, kw_only=True)
class TerminalSensorDescription(SensorEntityDescription):
    """A terminal sensor: how to read its value from the terminal."""

    value_fn: Callable[[Terminal], int | str | datetime | None]
    attributes_fn: Callable[[Terminal], Mapping[str, Any] | None] = lambda _: None
    changes: frozenset[Change] = frozenset({Change.UPDATED, Change.AVAILABILITY})


def _decision_attributes(terminal: Terminal) -> Mapping[str, Any] | None:
    if (decision := terminal.last_decision) is None:
        return None
    attributes = decision.as_dict()
    del attributes["action"]  # the state
    attributes["decided_at"] = attributes.pop("at")
    return attributes


SENSORS: tuple[TerminalSensorDescription, ...] = (
    TerminalSensorDescription(
        key="skill_version",
        translation_key="skill_version",
        entity_category=EntityCategory.DIAGNOSTIC,
        # Versions are for debugging (diagnostics list them too): opt-in, so a
        # home with hundreds of bodies does not carry two idle entities each.
        entity_registry_enabled_default=False,
        value_fn=lambda t: t.skills.skill_version if t.skills else None,
    ),
    TerminalSensorDescription(
        key="catalog_version",
        translation_key="catalog_version",
        entity_category=EntityCategory.DIAGNOSTIC,
        entity_registry_enabled_default=False,
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
    TerminalSensorDescription(
        key="last_intent_decision",
        translation_key="last_intent_decision",
        device_class=SensorDeviceClass.ENUM,
        options=["execute_intents", "fallback_reasoning", "no_action"],
        entity_category=EntityCategory.DIAGNOSTIC,
        value_fn=lambda t: t.last_decision.action if t.last_decision else None,
        attributes_fn=_decision_attributes,
        changes=frozenset({Change.DECISION, Change.AVAILABILITY}),
    ),
)


@dataclass(frozen=True, kw_only=True)
class SoulSensorDescription(SensorEntityDescription):
    """A soul sensor: how to read its value from the soul's emotion."""

    value_fn: Callable[[EmotionSnapshot], float | str]


def _pad_sensor(key: str) -> SoulSensorDescription:
    return SoulSensorDescription(
        key=key,
        translation_key=key,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=1,
        # To one decimal: a soul settling towards its baseline writes a new
        # state (a recorder row) about 15 times an hour, not 150.
        value_fn=lambda s: rounded(getattr(s, key[0]), 1),
    )


SOUL_SENSORS: tuple[SoulSensorDescription, ...] = (
    _pad_sensor("pleasure"),
    _pad_sensor("arousal"),
    _pad_sensor("dominance"),
    SoulSensorDescription(
        key="mood",
        translation_key="mood",
        device_class=SensorDeviceClass.ENUM,
        options=[m.value for m in Mood],
        value_fn=lambda s: s.mood.value,
    ),
    SoulSensorDescription(
        key="exec_probability",
        translation_key="exec_probability",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=0,
        value_fn=lambda s: round(s.exec_probability * 100),
    ),
    SoulSensorDescription(
        key="exec_mode",
        translation_key="exec_mode",
        device_class=SensorDeviceClass.ENUM,
        options=[m.value for m in ExecMode],
        value_fn=lambda s: s.exec_mode.value,
    ),
)


class SoulSensor(SoulDeviceEntity, SensorEntity):
    """One dimension of a soul's emotion."""

    entity_description: SoulSensorDescription

    def __init__(
        self, entry: SoulConfigEntry, soul: Soul, description: SoulSensorDescription
    ) -> None:
        """Create the sensor ``description`` of ``soul``."""
        super().__init__(entry, soul, description.key)
        self.entity_description = description

    def _state_key(self) -> float | str | None:
        snapshot = self.snapshot
        return None if snapshot is None else self.entity_description.value_fn(snapshot)

    @property
    def native_value(self) -> float | str | None:
        """Return the value from the soul's current emotion."""
        return self._state_key()


STAR_RATE_INTERVAL = timedelta(seconds=10)


class StarClientsSensor(SoulEntity, SensorEntity):
    """How many Star clients of one type are connected to the hub."""

    _attr_state_class = SensorStateClass.MEASUREMENT
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    # For people who run Star agents or worlds; a home user does not need them.
    _attr_entity_registry_enabled_default = False

    def __init__(self, entry: SoulConfigEntry, client_type: str) -> None:
        """Count ``client_type`` clients."""
        super().__init__(entry, f"star_{client_type}s")
        self.client_type = client_type

    @property
    def native_value(self) -> int:
        """Return the number of connected clients of this type."""
        return self.entry.runtime_data.star.counts()[self.client_type]

    async def async_added_to_hass(self) -> None:
        """Follow connections."""
        self.async_on_remove(
            self.entry.runtime_data.star.subscribe(self.async_write_ha_state)
        )


class StarRateSensor(SoulEntity, SensorEntity):
    """Messages or errors per second, or routing latency, over the last 10 s."""

    _attr_state_class = SensorStateClass.MEASUREMENT
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_suggested_display_precision = 1
    # A state every 10 s: off unless the user wants it in the recorder.
    _attr_entity_registry_enabled_default = False

    def __init__(self, entry: SoulConfigEntry, key: str, unit: str) -> None:
        """Measure ``key``: star_messages, star_errors or star_latency."""
        super().__init__(entry, key)
        self.key = key
        self._attr_native_unit_of_measurement = unit
        self._last = (0, 0)
        self._attr_native_value = 0.0

    async def async_added_to_hass(self) -> None:
        """Sample every 10 s."""
        stats = self.entry.runtime_data.star.stats
        self._last = (stats.routed, stats.errors)
        self.async_on_remove(
            async_track_time_interval(self.hass, self._sample, STAR_RATE_INTERVAL)
        )

    @callback
    def _sample(self, _now: datetime) -> None:
        stats = self.entry.runtime_data.star.stats
        seconds = STAR_RATE_INTERVAL.total_seconds()
        if self.key == "star_messages":
            self._attr_native_value = (stats.routed - self._last[0]) / seconds
        elif self.key == "star_errors":
            self._attr_native_value = (stats.errors - self._last[1]) / seconds
        else:
            latencies = sorted(stats.latencies)
            self._attr_native_value = (
                latencies[len(latencies) // 2] * 1000 if latencies else None
            )
            stats.latencies.clear()
        self._last = (stats.routed, stats.errors)
        self.async_write_ha_state()


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
    def native_value(self) -> int | str | datetime | None:
        """Return the value from the registry."""
        terminal = self.terminal
        return None if terminal is None else self.entity_description.value_fn(terminal)

    @property
    def extra_state_attributes(self) -> Mapping[str, Any] | None:
        """Return details of the value, where the description has them."""
        terminal = self.terminal
        if terminal is None:
            return None
        return self.entity_description.attributes_fn(terminal)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the Star hub's sensors, the emotion sensors per soul and the terminals'."""
    async_add_entities(
        [
            *(StarClientsSensor(entry, t) for t in ("agent", "environment", "human")),
            StarRateSensor(entry, "star_messages", "messages/s"),
            StarRateSensor(entry, "star_errors", "errors/s"),
            StarRateSensor(entry, "star_latency", UnitOfTime.MILLISECONDS),
        ]
    )
    await async_setup_soul_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, soul: [SoulSensor(entry, soul, d) for d in SOUL_SENSORS],
    )
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalSensor(entry, terminal, d) for d in SENSORS],
        "sensor",
    )
