"""A light for every skill that matches the light profile (like the spec's control_light).

The light offers what the skill's schema offers (docs/skills-as-entities.md):
on/off always; the ``color`` enum as the effect list; brightness only when the
skill has a ``brightness`` argument; an HS colour only when every colour name
is one Home Assistant knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.light import (
    ATTR_BRIGHTNESS,
    ATTR_EFFECT,
    ATTR_HS_COLOR,
    ColorMode,
    LightEntity,
    LightEntityFeature,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import color as color_util

from .core.protocol import Skill
from .core.skill_profiles import (
    Brightness,
    LightProfile,
    LightState,
    Profile,
    light_profile,
)
from .core.terminal import Terminal
from .entity import SkillEntity, async_setup_terminal_entities, skill_entities
from .models import SoulConfigEntry

PARALLEL_UPDATES = 0


def named_colors(colors: tuple[str, ...]) -> dict[str, tuple[int, int, int]] | None:
    """Return the RGB of every colour name, or None when Home Assistant lacks one."""
    rgb: dict[str, tuple[int, int, int]] = {}
    for name in colors:
        try:
            rgb[name] = color_util.color_name_to_rgb(name)
        except ValueError:
            return None
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


def color_modes(profile: LightProfile) -> set[ColorMode]:
    """Return the one colour mode the skill supports.

    HS needs every colour name to be one Home Assistant knows (so a colour
    from Assist, a scene or ``color_name`` reaches the body as that name);
    otherwise the colours are effects only. Home Assistant's colour modes
    imply brightness, so without colours a light has brightness only when
    the skill has a ``brightness`` argument.
    """
    if profile.colors and named_colors(profile.colors):
        return {ColorMode.HS}
    if profile.brightness is not None:
        return {ColorMode.BRIGHTNESS}
    return {ColorMode.ONOFF}


def brightness_value(scale: Brightness, brightness: int) -> float:
    """Return Home Assistant's brightness (1–255) in the skill's lit range."""
    value = color_util.brightness_to_value((scale.low, scale.high), brightness)
    value = min(scale.high, max(scale.low, value))  # never a value that means off
    return round(value) if scale.integer else round(value, 4)


class SkillLight(SkillEntity, LightEntity):
    """On, off, colours and brightness through the skill; state is what Soul last sent."""

    _attr_assumed_state = True

    def __init__(
        self, entry: SoulConfigEntry, terminal: Terminal, skill: Skill
    ) -> None:
        """Derive what the light offers from the skill's schema."""
        super().__init__(entry, terminal, skill)
        self._profile = light_profile(skill) or LightProfile()
        self._colors = named_colors(self._profile.colors) or {}
        modes = color_modes(self._profile)
        self._attr_supported_color_modes = modes
        self._attr_color_mode = next(iter(modes))
        if self._profile.colors:
            self._attr_supported_features = LightEntityFeature.EFFECT
            self._attr_effect_list = list(self._profile.colors)
        self._attr_is_on = None

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn on with the effect (colour) or nearest named colour and brightness asked for."""
        color = kwargs.get(ATTR_EFFECT)
        if color is None and (hs_color := kwargs.get(ATTR_HS_COLOR)) is not None:
            color = nearest_color(self._colors, hs_color) if self._colors else None
        brightness = kwargs.get(ATTR_BRIGHTNESS)
        scale = self._profile.brightness
        value = (
            brightness_value(scale, brightness)
            if brightness is not None and scale is not None
            else None
        )
        # The state follows from the invoker's announcement (_apply_sent).
        await self.async_invoke(self._profile.turn_on(color=color, brightness=value))

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn off."""
        await self.async_invoke(self._profile.turn_off())

    def _apply_sent(self, arguments: Mapping[str, Any]) -> bool:
        """Show what was sent to the skill: on/off, colour as effect (and HS), brightness."""
        state = self._profile.state_of(arguments)
        if state.on is not None:
            self._attr_is_on = state.on
        if state.color is not None:
            self._attr_effect = state.color
            if (rgb := self._colors.get(state.color)) is not None:
                self._attr_hs_color = color_util.color_RGB_to_hs(*rgb)
        if state.brightness is not None and (scale := self._profile.brightness):
            self._attr_brightness = color_util.value_to_brightness(
                (scale.low, scale.high), state.brightness
            )
        return state != LightState()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the skill lights of every terminal."""
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        skill_entities(SkillLight, Profile.LIGHT),
        "light",
    )
