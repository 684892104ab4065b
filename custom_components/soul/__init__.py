"""Soul: a personality, emotions and memory for the bodies on your MQTT broker."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from homeassistant.components import mqtt
from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE, Platform
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import (
    config_validation as cv,
    device_registry as dr,
    issue_registry as ir,
)
from homeassistant.helpers.event import async_call_later, async_track_time_interval
from homeassistant.helpers.typing import ConfigType
from homeassistant.loader import async_get_integration

from .builder import async_create_runtime
from .const import (
    CONF_NAME,
    DOMAIN,
    ENDPOINT_KEYS,
    ISSUE_LLM_NOT_CONFIGURED,
    LOGGER,
    SUBENTRY_SOUL,
)
from .core import untrusted
from .core.cognition.notices import watch_bodies, watch_memory
from .core.llm import LLMAuthError, LLMConnectionError, OpenAICompatibleLLM
from .core.soul import MAX_NAME_LENGTH
from .core.terminal import Change, Terminal
from .core.topics import valid_terminal_id
from .helpers import find_device, now_timestamp, soul_id_of_device, terminal_device_info
from .journal import async_close_journal
from .llm_api import async_register_api
from .mcp_servers import async_start_mcp
from .memory import async_start_memory
from .models import SoulConfigEntry
from .panel import async_register_panel
from .services import async_setup_services
from .souls import async_start_souls, async_sync_souls
from .star import async_register_star_views, async_start_star
from .storage import DebouncedStore
from .views import async_register_views
from .websocket_api import async_register_commands
from .websocket_panel import async_register_panel_commands, async_watch_entry

PLATFORMS: list[Platform] = [
    Platform.BINARY_SENSOR,
    Platform.BUTTON,
    Platform.CONVERSATION,
    Platform.EVENT,
    Platform.LIGHT,
    Platform.SELECT,
    Platform.SENSOR,
]
ISSUE_MQTT_NOT_CONFIGURED = "mqtt_not_configured"
# How long after setup a terminal device without a retained snapshot counts as stale.
STALE_DEVICE_DELAY = 60
# How often idle sessions are looked for (a session is idle after 3 minutes).
SUMMARY_CHECK_INTERVAL = timedelta(seconds=15)
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# hass.data: the souls' boot_count was counted for this start of Home Assistant.
BOOTED = f"{DOMAIN}_booted"


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Register Soul's actions and HTTP API."""
    async_setup_services(hass)
    async_register_views(hass)
    async_register_star_views(hass)
    async_register_commands(hass)
    async_register_panel_commands(hass)
    return True


async def async_migrate_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> bool:
    """Bring an older entry up to date.

    1.1 → 1.2: the LLM endpoint moves from the options to the data.
    1.2 → 1.3: souls' names become lines without invisible characters, as a
    name must be now (an older Soul let a body name a soul "a\u202eb" or
    "fr\u200biendly"): each such character becomes U+FFFD, shown for what it is.
    """
    if entry.version != 1:
        # Above: a newer Soul wrote it. Below: no Soul did (every Soul wrote
        # version 1); a hand edit or a damaged backup is not guessed at.
        LOGGER.error(
            "Soul cannot read a configuration entry of version %s.%s",
            entry.version,
            entry.minor_version,
        )
        return False
    if entry.minor_version < 2:
        options = dict(entry.options)
        data = {**entry.data}
        for key in ENDPOINT_KEYS:
            if key in options:
                data[key] = options.pop(key)
        hass.config_entries.async_update_entry(
            entry, data=data, options=options, minor_version=2
        )
    if entry.minor_version < 3:
        _clean_soul_names(hass, entry)
        hass.config_entries.async_update_entry(entry, minor_version=3)
    return True


def _clean_soul_names(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Make every soul's name and title a clean line (entry 1.3)."""
    for subentry in list(entry.subentries.values()):
        if subentry.subentry_type != SUBENTRY_SOUL:
            continue
        data: Mapping[str, Any] = subentry.data
        name = data.get(CONF_NAME)
        if isinstance(name, str):
            name = untrusted.clean(name, MAX_NAME_LENGTH, multiline=False)
            data = {**data, CONF_NAME: name}
        title: Any = subentry.title  # typed text; a damaged store holds anything
        if not isinstance(title, str):
            # A damaged store: the soul's name, else what the title shows.
            LOGGER.warning("The title of soul %s was not text", subentry.subentry_id)
            if isinstance(name, str) and name:
                title = name
        title = untrusted.clean(title, MAX_NAME_LENGTH, multiline=False)
        if data != subentry.data or title != subentry.title:
            LOGGER.warning(
                "The name of soul %s was not a clean line: now %r",
                subentry.subentry_id,
                title,
            )
            hass.config_entries.async_update_subentry(
                entry, subentry, data=data, title=title
            )


async def async_setup_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> bool:
    """Set up the Soul hub from a config entry."""
    if not mqtt.mqtt_config_entry_enabled(hass):
        # The user removed or disabled MQTT after adding Soul: tell them in Repairs.
        ir.async_create_issue(
            hass,
            DOMAIN,
            ISSUE_MQTT_NOT_CONFIGURED,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=ISSUE_MQTT_NOT_CONFIGURED,
        )
    else:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_MQTT_NOT_CONFIGURED)
    if not await mqtt.async_wait_for_mqtt_client(hass):
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN, translation_key="mqtt_unavailable"
        )
    runtime = entry.runtime_data = await async_create_runtime(hass, entry)
    try:
        await _async_start(hass, entry)
    except BaseException:
        # Nothing is unloaded after a failed setup: the journal's writer stops here.
        await async_close_journal(hass, runtime.journal)
        raise
    return True


async def _async_start(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Start what the runtime needs: devices, platforms, souls, memory, the broker."""
    runtime = entry.runtime_data

    async def close_journal(_event: Event) -> None:
        await async_close_journal(hass, runtime.journal)

    # Home Assistant does not unload entries when it stops: write what is queued.
    entry.async_on_unload(
        hass.bus.async_listen_once(EVENT_HOMEASSISTANT_FINAL_WRITE, close_journal)
    )
    if runtime.llm is not None:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_LLM_NOT_CONFIGURED)
        await _async_check_llm(runtime.llm)
    entry.async_on_unload(runtime.registry.subscribe(_device_sync(hass, entry)))
    entry.async_on_unload(
        watch_bodies(runtime.registry, runtime.souls, runtime.events, now_timestamp)
    )
    async_sync_souls(hass, entry)
    if not hass.data.get(BOOTED):  # once per start of Home Assistant, not per reload
        hass.data[BOOTED] = True
        integration = await async_get_integration(hass, DOMAIN)
        runtime.profiles.boot(list(runtime.souls.souls), str(integration.version))
    entry.async_on_unload(entry.add_update_listener(_async_entry_updated))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    async_start_souls(hass, entry)
    entry.async_on_unload(async_watch_entry(hass, entry))
    entry.async_on_unload(await async_register_panel(hass))
    entry.async_on_unload(async_register_api(hass, entry))
    async_start_mcp(hass, entry)
    entry.async_on_unload(async_start_star(hass, entry))
    if runtime.memory is not None:
        entry.async_on_unload(
            watch_memory(runtime.memory, runtime.souls, runtime.events, now_timestamp)
        )
        entry.async_on_unload(
            async_start_memory(hass, runtime.memory, entry.async_create_background_task)
        )
    entry.async_on_unload(
        async_track_time_interval(
            hass,
            _summarize_idle(hass, entry),
            SUMMARY_CHECK_INTERVAL,
            name="soul idle session summaries",
            cancel_on_shutdown=True,
        )
    )
    # Subscribe last: retained snapshots then find every listener in place.
    await runtime.bridge.async_start()
    entry.async_on_unload(runtime.bridge.async_stop)
    entry.async_on_unload(
        async_call_later(hass, STALE_DEVICE_DELAY, _stale_device_cleanup(hass, entry))
    )


async def _async_check_llm(llm: OpenAICompatibleLLM) -> None:
    """Raise ``ConfigEntryAuthFailed`` (reauth) when the endpoint refuses the key.

    An unreachable endpoint is only logged: bodies, souls and the intent path
    work without the model, and each turn tries it again.
    """
    try:
        await llm.verify()
    except LLMAuthError as err:
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="llm_auth_failed"
        ) from err
    except LLMConnectionError as err:
        LOGGER.warning("The LLM endpoint cannot be reached now: %s", err)


async def _async_entry_updated(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Reload when the options or the endpoint changed; otherwise the souls did.

    The reconfigure and reauth flows only store the endpoint: this listener
    reloads (Home Assistant reports a flow that reloads an entry with one).
    """
    runtime = entry.runtime_data
    if dict(entry.options) != runtime.options or dict(entry.data) != runtime.data:
        hass.config_entries.async_schedule_reload(entry.entry_id)
        return
    async_sync_souls(hass, entry)


def _summarize_idle(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> Callable[[datetime], None]:
    """Return the job that summarises sessions idle for 3 minutes, off the chat path."""

    @callback
    def check(_now: datetime) -> None:
        entry.async_create_background_task(
            hass, entry.runtime_data.chat.summarize_idle(), "soul idle summaries"
        )

    return check


def _stale_device_cleanup(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> Callable[[datetime], None]:
    """Return the job that removes devices of bodies whose snapshot is gone.

    Retained snapshots arrive right after subscribing; a terminal device that
    still has none a while later belongs to a body that no longer exists.
    """

    @callback
    def cleanup(_now: datetime) -> None:
        devices = dr.async_get(hass)
        registry = entry.runtime_data.registry
        for device in dr.async_entries_for_config_entry(devices, entry.entry_id):
            terminal_ids = [
                i for d, i in device.identifiers if d == DOMAIN and valid_terminal_id(i)
            ]
            if terminal_ids and not any(registry.get(t) for t in terminal_ids):
                devices.async_remove_device(device.id)

    return cleanup


def _device_sync(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> Callable[[Terminal, Change], None]:
    """Return the listener that keeps terminal devices in the device registry."""
    devices = dr.async_get(hass)

    @callback
    def sync(terminal: Terminal, change: Change) -> None:
        if change in (Change.ADDED, Change.UPDATED):
            devices.async_get_or_create(
                config_entry_id=entry.entry_id, **terminal_device_info(terminal)
            )
        elif change is Change.REMOVED and (
            device := find_device(hass, entry.entry_id, terminal.terminal_id)
        ):
            devices.async_remove_device(device.id)

    return sync


async def async_unload_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> bool:
    """Unload the Soul hub, writing the souls' state first."""
    runtime = entry.runtime_data
    await runtime.store.async_flush()
    await runtime.sessions_store.async_flush()
    await runtime.memory_store.async_flush()
    await runtime.star_store.async_flush()
    await runtime.profiles_store.async_flush()
    unloaded = await hass.config_entries.async_unload_platforms(entry, PLATFORMS)
    if runtime.memory is not None:
        await runtime.memory.backend.close()
    await async_close_journal(hass, runtime.journal)
    return unloaded


async def async_remove_entry(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Forget bindings, emotion states and sessions when the hub entry is deleted."""
    for name in ("souls", "sessions", "memory", "star"):
        await DebouncedStore(hass, name).async_remove()


async def async_remove_config_entry_device(
    hass: HomeAssistant, entry: SoulConfigEntry, device: dr.DeviceEntry
) -> bool:
    """Let the user delete a terminal device unless the body is connected now.

    A soul's device goes with its subentry (delete the soul instead).
    """
    if soul_id_of_device(device) is not None:
        return False
    registry = entry.runtime_data.registry
    return not any(
        (terminal := registry.get(identifier)) is not None and terminal.available
        for domain, identifier in device.identifiers
        if domain == DOMAIN
    )
