"""A button for every skill that needs no arguments."""

from __future__ import annotations

from homeassistant.components.button import ButtonEntity
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.skill_profiles import Profile
from .entity import SkillEntity, async_setup_terminal_entities, skill_entities
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0


class SkillButton(SkillEntity, ButtonEntity):
    """Pressing invokes the skill without arguments."""

    async def async_press(self) -> None:
        """Invoke the skill."""
        await self.async_invoke({})


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the skill buttons of every terminal."""
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        skill_entities(SkillButton, Profile.BUTTON),
        "button",
    )
