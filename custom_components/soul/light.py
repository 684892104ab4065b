"""A light for every skill that matches the light profile (like the spec's control_light)."""

from __future__ import annotations

from typing import Any

from homeassistant.components.light import ATTR_HS_COLOR, ColorMode, LightEntity
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import color as color_util

from .core.protocol import Skill
from .core.registry import Terminal
from .core.skill_profiles import LightProfile, Profile, light_profile
from .entity import SkillEntity, async_setup_terminal_entities, skill_entities
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0


def named_colors(colors: tuple[str, ...]) -> dict[str, tuple[int, int, int]]:
    """Return the RGB of every colour name Home Assistant knows."""
    rgb = {}
    for name in colors:
        try:
            rgb[name] = color_util.color_name_to_rgb(name)
        except ValueError:
            continue
    return rgb


def nearest_color(
    colors: dict[str, tuple[int, int, int]], hs_color: tuple[float, float]
) -> str:
    """Return the colour name closest to ``hs_color``."""
    target = color_util.color_hs_to_RGB(*hs_color)
    return min(
        colors,
        key=lambda name: sum(
            (a - b) ** 2 for a, b in zip(colors[name], target, strict=True)
        ),
    )


class SkillLight(SkillEntity, LightEntity):
    """On, off and named colours through the skill; state is what Soul last sent."""

    _attr_assumed_state = True

    def __init__(
        self, entry: SoulConfigEntry, terminal: Terminal, skill: Skill
    ) -> None:
        """Derive the colour support from the skill's enums."""
        super().__init__(entry, terminal, skill)
        found = light_profile(skill)
        self._profile = found or LightProfile(colors=(), set_color_mode=None)
        self._colors = named_colors(self._profile.colors)
        mode = ColorMode.HS if self._colors else ColorMode.ONOFF
        self._attr_supported_color_modes = {mode}
        self._attr_color_mode = mode
        self._attr_is_on = None

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn on, or set the nearest named colour when one is asked for."""
        arguments: dict[str, Any] = {"mode": "on"}
        hs_color = kwargs.get(ATTR_HS_COLOR)
        name = None
        if hs_color is not None and self._colors:
            name = nearest_color(self._colors, hs_color)
            arguments = {"mode": self._profile.set_color_mode or "on", "color": name}
        await self.async_invoke(arguments)
        self._attr_is_on = True
        if name is not None:
            self._attr_hs_color = color_util.color_RGB_to_hs(*self._colors[name])
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn off."""
        await self.async_invoke({"mode": "off"})
        self._attr_is_on = False
        self.async_write_ha_state()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the skill lights of every terminal."""
    async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        skill_entities(SkillLight, Profile.LIGHT),
        "light",
    )
