"""Event entities: each terminal fires the emotion recognised in its user's words."""

from __future__ import annotations

from homeassistant.components.event import EventEntity
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.emotion.labels import LABELS, group_of
from .core.soul_events import SoulEvent
from .core.terminal import Terminal
from .entity import TerminalEntity, async_setup_terminal_entities
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0


class UserEmotionEvent(TerminalEntity, EventEntity):
    """Fires one of the 15 emotion labels whenever a user turn is recognised."""

    _attr_translation_key = "user_emotion"

    def __init__(self, entry: SoulConfigEntry, terminal: Terminal) -> None:
        """Create the event entity of ``terminal``."""
        super().__init__(entry, terminal, "user_emotion")
        self._attr_event_types = list(LABELS)

    async def async_added_to_hass(self) -> None:
        """Follow the terminal and the souls' user turns."""
        await super().async_added_to_hass()
        self.async_on_remove(
            self.entry.runtime_data.souls.subscribe(
                self._async_turn, terminal_id=self.terminal_id
            )
        )

    @callback
    def _async_turn(self, event: SoulEvent) -> None:
        # Subscribed with terminal_id: only this body's user turns come here.
        if (emotion := event.user_emotion) is None:
            return
        label = str(emotion.get("emotion"))
        if label not in LABELS:
            return
        self._trigger_event(
            label,
            {
                "group": group_of(label),
                "intensity": emotion.get("intensity"),
                "p": emotion.get("p"),
                "a": emotion.get("a"),
                "d": emotion.get("d"),
                "soul_id": event.soul_id,
            },
        )
        self.async_write_ha_state()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the user-emotion event entity per terminal."""
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [UserEmotionEvent(entry, terminal)],
        "event",
    )
