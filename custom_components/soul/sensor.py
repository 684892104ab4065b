"""Diagnostic sensors of each terminal.

Skill and catalog versions, last heartbeat, and the intent filter's last
decision on the terminal's commands (never the command text itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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

    value_fn: Callable[[Terminal], int | str | datetime | None]
    attributes_fn: Callable[[Terminal], Mapping[str, Any] | None] = lambda _: None
    changes: frozenset[Change] = frozenset({Change.UPDATED, Change.AVAILABILITY})


def _decision_attributes(terminal: Terminal) -> Mapping[str, Any] | None:
    decision = terminal.last_decision
    if decision is None:
        return None
    return {
        "reason": decision.reason,
        "trigger_intent_id": decision.trigger_intent_id,
        "intent_ids": list(decision.intent_ids),
        "confidence": decision.confidence,
        "decided_at": decision.at.isoformat(),
    }


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
    """Add the diagnostic sensors per terminal."""
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [TerminalSensor(entry, terminal, d) for d in SENSORS],
        "sensor",
    )
