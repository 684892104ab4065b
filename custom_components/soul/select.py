"""Selects: the soul of each terminal, and every skill whose single required argument is an enum."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
import weakref

from homeassistant.components.select import SelectEntity
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import Unauthorized
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .core.protocol import Skill
from .core.skill_profiles import Profile, select_profile
from .core.soul import Soul
from .core.souls import SoulHub
from .core.terminal import Terminal
from .entity import (
    SkillEntity,
    TerminalEntity,
    async_setup_terminal_entities,
    skill_entities,
)
from .models import SoulConfigEntry

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

    def _argument(self) -> str:
        skill = self.skill
        found = select_profile(skill) if skill is not None else None
        return found.argument if found else ""

    async def async_select_option(self, option: str) -> None:
        """Invoke the skill with ``option``; the state follows the announcement."""
        await self.async_invoke({self._argument(): option})

    def _apply_sent(self, arguments: Mapping[str, Any]) -> bool:
        """Show the option Soul just sent (this entity, chat, Assist or an action)."""
        option = arguments.get(self._argument())
        if not isinstance(option, str) or option not in self.options:
            return False
        self._attr_current_option = option
        return True


def soul_labels(souls: list[Soul]) -> dict[str, str]:
    """Return option label → soul id; names shared by several souls get their id."""
    names = Counter(soul.name for soul in souls)
    return {
        (soul.name if names[soul.name] == 1 else f"{soul.name} ({soul.soul_id})"): (
            soul.soul_id
        )
        for soul in souls
    }


# Each hub's labels at its souls' version (see TerminalSoulSelect._labels).
_LABELS: weakref.WeakKeyDictionary[SoulHub, tuple[int, dict[str, str], list[str]]] = (
    weakref.WeakKeyDictionary()
)


class TerminalSoulSelect(TerminalEntity, SelectEntity):
    """The soul a body is bound to; choosing one binds it."""

    _attr_translation_key = "soul"
    _attr_entity_category = EntityCategory.CONFIG

    def __init__(self, entry: SoulConfigEntry, terminal: Terminal) -> None:
        """Create the soul select of ``terminal``."""
        super().__init__(entry, terminal, "soul")
        self._written_for: tuple[int, str | None] | None = None

    @property
    def available(self) -> bool:
        """Return True: a body can be bound while it is offline."""
        return self.terminal is not None

    def _labels(self) -> tuple[dict[str, str], list[str]]:
        """Return label → soul id and the labels, shared by every body's select.

        Worked out once per change of the souls (not at every state write of
        each of hundreds of selects); one options list serves all their states.
        """
        hub = self.entry.runtime_data.souls
        cached = _LABELS.get(hub)
        if cached is None or cached[0] != hub.souls_version:
            labels = soul_labels(list(hub.souls.values()))
            cached = _LABELS[hub] = (hub.souls_version, labels, list(labels))
        return cached[1], cached[2]

    @property
    def options(self) -> list[str]:
        """Return the souls by name."""
        return self._labels()[1]

    @property
    def current_option(self) -> str | None:
        """Return the bound soul."""
        bound = self.entry.runtime_data.souls.soul_of(self.terminal_id)
        if bound is None:
            return None
        return next(
            (label for label, sid in self._labels()[0].items() if sid == bound.soul_id),
            None,
        )

    async def async_added_to_hass(self) -> None:
        """Follow the terminal, the souls and the bindings."""
        await super().async_added_to_hass()
        self.async_on_remove(
            self.entry.runtime_data.souls.subscribe_bindings(
                self._bindings_changed, self.terminal_id
            )
        )

    @callback
    def _bindings_changed(self) -> None:
        """Write the state when this body's soul or the souls changed.

        A change of the souls tells every select, and a rebind to the same
        soul tells this one again: only a real change writes the state.
        """
        hub = self.entry.runtime_data.souls
        bound = hub.soul_of(self.terminal_id)
        key = (hub.souls_version, bound.soul_id if bound else None)
        if key != self._written_for:
            self._written_for = key
            self.async_write_ha_state()

    async def async_select_option(self, option: str) -> None:
        """Bind the body to the chosen soul (administrators and automations only)."""
        if (context := self._context) is not None and context.user_id is not None:
            user = await self.hass.auth.async_get_user(context.user_id)
            if user is None or not user.is_admin:
                raise Unauthorized(context=context, entity_id=self.entity_id)
        self.entry.runtime_data.souls.bind(self.terminal_id, self._labels()[0][option])


async def async_setup_entry(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the soul select and the skill selects of every terminal."""
    skill_selects = skill_entities(SkillSelect, Profile.SELECT)
    await async_setup_terminal_entities(
        hass,
        entry,
        async_add_entities,
        lambda entry, terminal: [
            TerminalSoulSelect(entry, terminal),
            *skill_selects(entry, terminal),
        ],
        "select",
    )
