"""A select for every skill whose single required argument is an enum."""

from __future__ import annotations

from homeassistant.components.select import SelectEntity
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.protocol import Skill
from .core.registry import Terminal
from .core.skill_profiles import Profile, select_profile
from .entity import SkillEntity, async_setup_terminal_entities, skill_entities
from .runtime import SoulConfigEntry

PARALLEL_UPDATES = 0


class SkillSelect(SkillEntity, SelectEntity):
    """Choosing an option invokes the skill with it; the body reports no state back."""

    _attr_assumed_state = True

    def __init__(
        self, entry: SoulConfigEntry, terminal: Terminal, skill: Skill
    ) -> None:
        """Take the options from the skill's enum."""
        super().__init__(entry, terminal, skill)
        self._attr_current_option = None

    @property
    def options(self) -> list[str]:
        """Return the enum values the skill announces now."""
        skill = self.skill
        found = select_profile(skill) if skill is not None else None
        return list(found.options) if found else []

    async def async_select_option(self, option: str) -> None:
        """Invoke the skill with ``option``."""
        skill = self.skill
        found = select_profile(skill) if skill is not None else None
        argument = found.argument if found else ""
        await self.async_invoke({argument: option})
        self._attr_current_option = option
        self.async_write_ha_state()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the skill selects of every terminal."""
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        skill_entities(SkillSelect, Profile.SELECT),
        "select",
    )
