"""Base classes of Soul's entities and the helper that adds them per terminal."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DOMAIN
from .core.protocol import InvokeResult, Skill
from .core.sent import SentSkill
from .core.skill_profiles import Profile
from .core.soul import Soul
from .core.soul_events import EmotionSnapshot, SoulEvent
from .core.terminal import Change, Terminal
from .helpers import (
    async_invoke_or_raise,
    find_device,
    hub_device_info,
    signal_souls_changed,
    soul_device_info,
)
from .models import SoulConfigEntry


class SoulEntity(Entity):
    """An entity of the Soul hub: named by translation key, grouped under a device."""

    _attr_has_entity_name = True
    _attr_should_poll = False

    def __init__(self, entry: SoulConfigEntry, key: str) -> None:
        """Attach the entity to the hub device; ``key`` names it and makes it unique."""
        self.entry = entry
        self._attr_translation_key = key
        self._attr_unique_id = f"{entry.entry_id}_{key}"
        self._attr_device_info = hub_device_info(entry)


class TerminalEntity(Entity):
    """An entity of one terminal; unavailable while the terminal is offline or stale."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    # Changes that make the entity write its state.
    _changes: frozenset[Change] = frozenset({Change.UPDATED, Change.AVAILABILITY})

    def __init__(self, entry: SoulConfigEntry, terminal: Terminal, key: str) -> None:
        """Attach the entity to the terminal's device; ``key`` makes it unique."""
        self.entry = entry
        self.terminal_id = terminal.terminal_id
        self._attr_unique_id = f"{terminal.terminal_id}-{key}"
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, terminal.terminal_id)}
        )

    @property
    def terminal(self) -> Terminal | None:
        """Return the terminal as the registry knows it now."""
        return self.entry.runtime_data.registry.get(self.terminal_id)

    @property
    def available(self) -> bool:
        """Return whether the terminal is online and heard within the TTL."""
        terminal = self.terminal
        return terminal is not None and terminal.available

    async def async_added_to_hass(self) -> None:
        """Follow the terminal's changes."""
        self.async_on_remove(
            self.entry.runtime_data.registry.subscribe(
                self._async_changed, self.terminal_id
            )
        )

    @callback
    def _async_changed(self, terminal: Terminal, change: Change) -> None:
        if change in self._changes:
            self.async_write_ha_state()


class SkillEntity(TerminalEntity):
    """An entity that stands for one skill of a terminal."""

    def __init__(
        self, entry: SoulConfigEntry, terminal: Terminal, skill: Skill
    ) -> None:
        """Name the entity after the skill."""
        super().__init__(entry, terminal, f"skill-{skill.name}")
        self.skill_name = skill.name
        self._attr_name = skill.name.replace("_", " ").capitalize()

    @property
    def skill(self) -> Skill | None:
        """Return the skill as the terminal announces it now."""
        terminal = self.terminal
        return (
            None
            if terminal is None or terminal.skills is None
            else terminal.skills.skill(self.skill_name)
        )

    @property
    def available(self) -> bool:
        """Return whether the terminal is available and still has the skill."""
        return super().available and self.skill is not None

    async def async_added_to_hass(self) -> None:
        """Follow the terminal and what Soul sends to the skill, whoever sends it.

        Invocations that succeeded and published ``intent_action``s are
        announced on the invoker's ``SentSkills`` (``core.sent``).
        """
        await super().async_added_to_hass()
        self.async_on_remove(
            self.entry.runtime_data.invoker.sent.subscribe(
                self._async_sent, self.terminal_id, self.skill_name
            )
        )

    @callback
    def _async_sent(self, sent: SentSkill) -> None:
        if self._apply_sent(sent.arguments):
            self.async_write_ha_state()

    def _apply_sent(self, arguments: Mapping[str, Any]) -> bool:
        """Mirror ``arguments`` just sent to the skill; return whether to write the state.

        The base mirrors nothing; an entity with a state overrides it.
        """
        return False

    async def async_invoke(self, arguments: dict[str, Any]) -> InvokeResult:
        """Invoke the skill; failures become translated Home Assistant errors.

        A success is announced to ``_apply_sent`` before this returns.
        """
        return await async_invoke_or_raise(
            self.entry,
            self.terminal_id,
            self.skill_name,
            arguments,
            raise_on_failure=True,
        )


type EntityBuilder = Callable[[SoulConfigEntry, Terminal], Iterable[TerminalEntity]]

# Souls or bodies whose entities a platform adds before it lets the event loop
# run: Home Assistant adds entities inside the call, so a setup with 50 souls
# or 200 bodies is not one long step of the loop.
ADD_CHUNK = 8


def skill_entities(cls: type[SkillEntity], kind: Profile) -> EntityBuilder:
    """Return a builder of ``cls`` entities for a terminal's skills of profile ``kind``."""

    def build(entry: SoulConfigEntry, terminal: Terminal) -> list[SkillEntity]:
        skills = terminal.skills.skills if terminal.skills else ()
        kinds = terminal.skill_kinds
        return [
            cls(entry, terminal, skill)
            for skill in skills
            if kinds.get(skill.name) is kind
        ]

    return build


async def async_setup_terminal_entities(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    build: EntityBuilder,
    platform: str,
) -> None:
    """Add ``build``'s entities for every terminal now and whenever one appears or changes.

    Entities whose skill disappeared from a new snapshot leave the entity
    registry, and so do skill entities registered before a restart that the
    terminal's first snapshot no longer yields (a skill removed while Home
    Assistant was off, or one whose entity kind changed).
    """
    registry = entry.runtime_data.registry
    added: dict[str, set[str]] = {}
    # The skills snapshot each terminal's entities were last built from: a
    # change that leaves it (a new catalog) has nothing to add or remove.
    built_from: dict[str, object] = {}

    @callback
    def sync(terminal: Terminal) -> None:
        if built_from.get(terminal.terminal_id) is (skills := terminal.skills):
            return
        built_from[terminal.terminal_id] = skills
        entities = {e.unique_id: e for e in build(entry, terminal)}
        first = terminal.terminal_id not in added
        known = added.setdefault(terminal.terminal_id, set())
        if new := [e for uid, e in entities.items() if uid not in known]:
            known.update(e.unique_id for e in new if e.unique_id)
            async_add_entities(new)
        gone = known - entities.keys()
        if first:
            gone |= _registered_skill_entities(
                hass, entry, platform, terminal.terminal_id
            )
            gone -= entities.keys()
        if gone:
            entity_registry = er.async_get(hass)
            for unique_id in gone:
                if entity_id := entity_registry.async_get_entity_id(
                    platform, DOMAIN, unique_id
                ):
                    entity_registry.async_remove(entity_id)
            known -= gone

    @callback
    def changed(terminal: Terminal, change: Change) -> None:
        if change in (Change.ADDED, Change.UPDATED):
            sync(terminal)
        elif change is Change.REMOVED:
            added.pop(terminal.terminal_id, None)
            built_from.pop(terminal.terminal_id, None)

    entry.async_on_unload(registry.subscribe(changed))
    for count, terminal in enumerate(list(registry), 1):
        if registry.get(terminal.terminal_id) is terminal:  # not removed meanwhile
            sync(terminal)
        if count % ADD_CHUNK == 0:
            await asyncio.sleep(0)


def _registered_skill_entities(
    hass: HomeAssistant, entry: SoulConfigEntry, platform: str, terminal_id: str
) -> set[str]:
    """Return the unique ids of the terminal's skill entities of ``platform`` in the registry."""
    device = find_device(hass, entry.entry_id, terminal_id)
    if device is None:
        return set()
    prefix = f"{terminal_id}-skill-"
    return {
        entity.unique_id
        for entity in er.async_entries_for_device(
            er.async_get(hass), device.id, include_disabled_entities=True
        )
        if entity.platform == DOMAIN
        and entity.domain == platform
        and entity.unique_id.startswith(prefix)
    }


class SoulDeviceEntity(Entity):
    """An entity of one soul (a ``soul`` subentry), following its emotion."""

    _attr_has_entity_name = True
    _attr_should_poll = False

    def __init__(self, entry: SoulConfigEntry, soul: Soul, key: str) -> None:
        """Attach the entity to the soul's device; ``key`` names it."""

        self.entry = entry
        self.soul_id = soul.soul_id
        self._attr_translation_key = key
        self._attr_unique_id = f"{soul.soul_id}-{key}"
        self._attr_device_info = soul_device_info(soul)

    @property
    def snapshot(self) -> EmotionSnapshot | None:
        """Return the soul's current emotion."""
        return self.entry.runtime_data.souls.snapshot(self.soul_id)

    @property
    def available(self) -> bool:
        """Return whether the soul still exists."""
        return self.snapshot is not None

    def _state_key(self) -> Any:
        """Return what the entity shows; the state is written when it changes."""
        return self.snapshot

    async def async_added_to_hass(self) -> None:
        """Follow the soul's emotion."""
        await super().async_added_to_hass()
        self._shown = self._state_key()
        self.async_on_remove(
            self.entry.runtime_data.souls.subscribe(
                self._async_soul_event, soul_id=self.soul_id
            )
        )

    @callback
    def _async_soul_event(self, event: SoulEvent) -> None:
        # Subscribed with soul_id: only this soul's events come here.
        if (shown := self._state_key()) != self._shown:
            self._shown = shown
            self.async_write_ha_state()


async def async_setup_soul_entities(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
    build: Callable[[SoulConfigEntry, Soul], Iterable[SoulDeviceEntity]],
) -> None:
    """Add ``build``'s entities for every soul now and whenever a soul is added.

    Each soul's entities belong to its subentry, so deleting the soul removes
    its device and entities.
    """

    added: set[str] = set()
    hub = entry.runtime_data.souls

    @callback
    def add(soul_id: str, soul: Soul) -> None:
        if soul_id not in added:
            added.add(soul_id)
            async_add_entities(build(entry, soul), config_subentry_id=soul_id)

    @callback
    def sync() -> None:
        for soul_id, soul in list(hub.souls.items()):
            add(soul_id, soul)
        added.intersection_update(hub.souls)

    entry.async_on_unload(
        async_dispatcher_connect(hass, signal_souls_changed(entry.entry_id), sync)
    )
    for count, (soul_id, soul) in enumerate(list(hub.souls.items()), 1):
        if hub.soul(soul_id) is soul:  # not removed meanwhile
            add(soul_id, soul)
        if count % ADD_CHUNK == 0:
            await asyncio.sleep(0)
