"""Souls in Home Assistant: config subentries, soul devices, events and the tick.

The core ``SoulHub`` owns bindings and emotion; this module feeds it the
``soul`` subentries of the hub entry, stores its data (a debounced ``Store``),
runs the emotion tick, applies a body's ``soul_hint`` on its first
connection, and turns hub events into Home Assistant events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_track_time_interval

from .const import (
    CONF_EMOTION_TICK_INTERVAL,
    CONF_MBTI_TYPE,
    CONF_NAME,
    CONF_PERSONA,
    CONF_USER_ID,
    DOMAIN,
    EVENT_EMOTION_UPDATE,
    EVENT_EXEC_MODE_CHANGED,
    EVENT_MOOD_CHANGED,
    EVENT_USER_EMOTION,
    LOGGER,
    SUBENTRY_SOUL,
)
from .core import stored, untrusted
from .core.access import Principal
from .core.emotion.dynamics import ExecMode
from .core.emotion.labels import group_of
from .core.emotion.persona import normalize_mbti
from .core.soul import (
    MAX_NAME_LENGTH,
    MAX_PERSONA_LENGTH,
    Soul,
    SoulError,
    validate_soul_fields,
)
from .core.soul_events import SoulEvent
from .core.souls import MAX_SOULS, SoulHub
from .core.terminal import Change, Terminal
from .helpers import (
    find_device,
    signal_souls_changed,
    soul_device_info,
    soul_identifier,
)
from .models import SoulConfigEntry
from .number_options import number_option

STORAGE_KEY = f"{DOMAIN}.souls"  # written by storage.DebouncedStore


def souls_of_entry(entry: SoulConfigEntry) -> list[Soul]:
    """Return the souls of the hub's ``soul`` subentries (malformed ones skipped).

    At most ``MAX_SOULS`` are read, each as its flow would have stored it: a
    damaged one (a hand edit, an old backup) with a number or a list as its
    name, or a name of a megabyte, broke its Assist agent and every body's
    ``soul_hint``, and 1,000 stored souls held the loop 269 ms at start (a
    fuzz of the stored entries, 2026-11-29). A name or persona of text is
    cleaned and cut as the 1.3 migration cleans names (a persona an older
    Soul stored with a form feed keeps its soul); a soul whose name is no
    text or shows nothing, whose type is unknown or whose user id is no id
    is left out, with a warning, and its reconfigure flow mends it.
    """
    souls: list[Soul] = []
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_SOUL:
            continue
        if len(souls) == MAX_SOULS:
            LOGGER.warning("Ignored the souls after the first %d", MAX_SOULS)
            break
        data = subentry.data
        name = data.get(CONF_NAME) or subentry.title
        persona = data.get(CONF_PERSONA)
        user_id = data.get(CONF_USER_ID)
        try:
            if not isinstance(name, str):
                raise SoulError("its name is not text")
            name = untrusted.clean(name, MAX_NAME_LENGTH, multiline=False)
            persona = (
                untrusted.clean(persona, MAX_PERSONA_LENGTH)
                if isinstance(persona, str)
                else ""
            )
            validate_soul_fields(name, data.get(CONF_MBTI_TYPE), persona)
            if user_id is not None and stored.ident(user_id) is None:
                raise SoulError("its user id is not an id")
            souls.append(
                Soul(
                    soul_id=subentry.subentry_id,
                    name=name,
                    mbti=normalize_mbti(data.get(CONF_MBTI_TYPE)),
                    persona_text=persona,
                    user_id=user_id,
                )
            )
        except ValueError as err:
            LOGGER.warning(
                "Ignored soul %s: %s",
                subentry.subentry_id,
                untrusted.shortened(str(err), 200),
            )
    return souls


def soul_data(
    name: str, mbti: str, persona: str | None = None, user_id: str | None = None
) -> dict[str, Any]:
    """Return the subentry data of a soul (fields validated by the caller)."""
    data: dict[str, Any] = {
        CONF_NAME: name.strip(),
        CONF_MBTI_TYPE: normalize_mbti(mbti),
    }
    if persona and persona.strip():
        data[CONF_PERSONA] = persona.strip()
    if user_id:
        data[CONF_USER_ID] = user_id
    return data


@callback
def async_sync_souls(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Hand the current subentries to the hub and refresh the soul devices."""
    hub = entry.runtime_data.souls
    souls = souls_of_entry(entry)
    hub.set_souls(souls)
    devices = dr.async_get(hass)
    for soul in souls:
        info = soul_device_info(soul)
        device = find_device(hass, entry.entry_id, soul_identifier(soul.soul_id)[1])
        if device is not None and (device.name, device.model) != (
            info["name"],
            info["model"],
        ):
            devices.async_update_device(
                device.id, name=info["name"], model=info["model"]
            )
    async_dispatcher_send(hass, signal_souls_changed(entry.entry_id))


@callback
def async_add_soul(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    *,
    name: str,
    mbti: str,
    persona: str | None = None,
    user_id: str | None = None,
) -> Soul:
    """Create a soul subentry now and return the soul (fields already validated).

    Raises ``SoulError`` when the hub already has ``MAX_SOULS`` souls.
    """
    if len(entry.runtime_data.souls.souls) >= MAX_SOULS:
        raise SoulError(f"a Soul hub has at most {MAX_SOULS} souls")
    data = soul_data(name, mbti, persona, user_id)
    subentry = ConfigSubentry(
        data=MappingProxyType(data),
        subentry_type=SUBENTRY_SOUL,
        title=data[CONF_NAME],
        unique_id=None,
    )
    hass.config_entries.async_add_subentry(entry, subentry)
    # The update listener runs later; sync now so the soul can be bound at once.
    async_sync_souls(hass, entry)
    soul = entry.runtime_data.souls.soul(subentry.subentry_id)
    if soul is None:  # the data was validated; this would be a bug
        raise SoulError(f"could not create soul {name!r}")
    return soul


def soul_as_dict(hub: SoulHub, soul: Soul) -> dict[str, Any]:
    """Return a soul for the HTTP API and action responses."""
    snapshot = hub.snapshot(soul.soul_id)
    return {
        "soul_id": soul.soul_id,
        "name": soul.name,
        "mbti_type": soul.mbti,
        "persona": soul.persona_text,
        "user_id": soul.user_id,
        "terminal_ids": hub.terminals_of(soul.soul_id),
        "baseline": dict(zip("pad", soul.persona.baseline, strict=True)),
        "emotion": None if snapshot is None else snapshot.as_dict(),
    }


def tick_interval(entry: SoulConfigEntry) -> float:
    """Return the configured emotion tick interval, clamped to 2–5 s."""
    return float(number_option(entry.options, CONF_EMOTION_TICK_INTERVAL))


@callback
def async_start_souls(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Start the tick, the soul_hint handling and the Home Assistant events."""
    runtime = entry.runtime_data
    hub = runtime.souls

    running: asyncio.Task[None] | None = None

    @callback
    def tick(_now: Any) -> None:
        nonlocal running
        # A tick still publishing (a slow broker) is not overlapped: skip this one.
        if running is not None and not running.done():
            LOGGER.debug("The previous emotion tick is still running; skipped one")
            return
        running = entry.async_create_background_task(
            hass, hub.tick(), "soul emotion tick"
        )

    entry.async_on_unload(
        async_track_time_interval(
            hass,
            tick,
            timedelta(seconds=tick_interval(entry)),
            name="soul emotion tick",
            cancel_on_shutdown=True,
        )
    )
    entry.async_on_unload(runtime.registry.subscribe(_hint_listener(hass, entry)))
    entry.async_on_unload(hub.subscribe(_event_forwarder(hass, entry)))


@callback
def async_apply_soul_hint(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    terminal_id: str,
    hint: str | None,
    *,
    caller: Principal | None = None,
) -> str | None:
    """Apply a terminal's first ``soul_hint``; return the soul it bound, if any.

    One rule for a body's ``skills`` and a chat request's ``soul_hint``: only a
    terminal's first contact counts (``SoulHub.first_connection``), and it
    picks an existing soul or creates one named after the hint. A body's own
    hint (no ``caller``) picks only shared souls, never a user's private one,
    and may create a soul (at most one a minute); a chat's ``caller`` picks
    only souls it may see, and only an administrator's hint creates one.
    """
    hub = entry.runtime_data.souls
    decision = hub.first_connection(
        terminal_id,
        hint,
        visible=(_shared if caller is None else lambda soul: caller.sees(soul.user_id)),
        may_create=caller is None or caller.is_admin,
    )
    if decision is None:
        return None
    try:
        soul_id = decision.soul_id
        if soul_id is None:
            soul_id = async_add_soul(
                hass, entry, name=decision.name or "", mbti=decision.mbti or ""
            ).soul_id
            LOGGER.info(
                "Created soul %s (%s) for body %s from its soul_hint",
                decision.name,
                decision.mbti,
                terminal_id,
            )
        hub.bind(terminal_id, soul_id)
    except SoulError as err:
        LOGGER.warning("Could not apply the soul_hint of %s: %s", terminal_id, err)
        return None
    return soul_id


def _shared(soul: Soul) -> bool:
    """Whether ``soul`` is shared (no user owns it): all a body's hint may pick."""
    return soul.user_id is None


def _hint_listener(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> Callable[[Terminal, Change], None]:
    """Return the listener that applies ``soul_hint`` when a body first connects."""

    @callback
    def changed(terminal: Terminal, change: Change) -> None:
        if change not in (Change.ADDED, Change.UPDATED) or terminal.skills is None:
            return
        async_apply_soul_hint(
            hass, entry, terminal.terminal_id, terminal.skills.soul_hint
        )

    return changed


def _event_forwarder(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> Callable[[SoulEvent], None]:
    """Return the listener that fires Soul's Home Assistant events."""

    @callback
    def forward(event: SoulEvent) -> None:
        previous, now = event.previous, event.snapshot
        changed = previous is None or (
            previous.mood is not now.mood or previous.exec_mode is not now.exec_mode
        )
        # Home Assistant's recorder keeps every bus event: not one per 3 s tick,
        # only user turns and ticks that changed the mood or the execution mode.
        # A user turn's events carry its trace_id (XingChen-V §2).
        traced = {} if event.trace_id is None else {"trace_id": event.trace_id}
        if event.user_emotion is not None or changed:
            for payload in event.published:
                hass.bus.async_fire(EVENT_EMOTION_UPDATE, {**payload, **traced})
        if event.terminal_id is not None and event.user_emotion is not None:
            terminal_device = find_device(hass, entry.entry_id, event.terminal_id)
            emotion = event.user_emotion
            hass.bus.async_fire(
                EVENT_USER_EMOTION,
                {
                    "device_id": terminal_device.id if terminal_device else None,
                    "terminal_id": event.terminal_id,
                    "soul_id": event.soul_id,
                    "emotion": emotion.get("emotion"),
                    "group": group_of(str(emotion.get("emotion"))),
                    "intensity": emotion.get("intensity"),
                    "p": emotion.get("p"),
                    "a": emotion.get("a"),
                    "d": emotion.get("d"),
                    "trace_id": event.trace_id,
                },
            )
        if previous is None or not changed:
            return  # the usual tick: no device lookup
        soul_device = find_device(
            hass, entry.entry_id, soul_identifier(event.soul_id)[1]
        )
        soul_device_id = soul_device.id if soul_device else None
        if previous.mood is not now.mood:
            hass.bus.async_fire(
                EVENT_MOOD_CHANGED,
                {
                    "device_id": soul_device_id,
                    "soul_id": event.soul_id,
                    "mood": now.mood.value,
                    "previous_mood": previous.mood.value,
                    **traced,
                },
            )
        if previous.exec_mode is not now.exec_mode:
            hass.bus.async_fire(
                EVENT_EXEC_MODE_CHANGED,
                {
                    "device_id": soul_device_id,
                    "soul_id": event.soul_id,
                    "exec_mode": now.exec_mode.value,
                    "previous_exec_mode": previous.exec_mode.value,
                    "blocked": now.exec_mode is ExecMode.BLOCKED,
                    "was_blocked": previous.exec_mode is ExecMode.BLOCKED,
                    **traced,
                },
            )

    return forward
