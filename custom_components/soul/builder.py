"""Building a hub entry's runtime (``entry.runtime_data``) from its settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.httpx_client import create_async_httpx_client
from homeassistant.util.hass_dict import HassKey
from homeassistant.util.ssl import client_context
import httpx

from .const import (
    CONF_FOLLOW_UP,
    CONF_INVOKE_TIMEOUT,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MAX_TOOL_ROUNDS,
    CONF_NAVIGATOR_MODEL,
    CONF_NAVIGATOR_SWING,
    CONF_NAVIGATOR_TURNS,
    CONF_TOPIC_PREFIX,
    DEFAULT_FOLLOW_UP,
    DEFAULT_TOPIC_PREFIX,
    DOMAIN,
    EVENT_EVOLUTION_REQUEST,
    ISSUE_LLM_NOT_CONFIGURED,
    LOGGER,
    MAX_SETTING_LENGTH,
)
from .core import untrusted
from .core.chat import ChatPipeline
from .core.cognition.navigator import Navigator
from .core.cognition.profiles import ProfileStore
from .core.ingest import SnapshotIngest
from .core.invoker import Invoker
from .core.llm import LLMEndpoint, OpenAICompatibleLLM, limited_transport
from .core.registry import TerminalRegistry
from .core.souls import SoulHub
from .core.star.hub import StarHub
from .core.topics import InvalidPrefixError, Topics, normalize_prefix
from .helpers import (
    entry_settings,
    find_device,
    is_url,
    now_timestamp,
    soul_identifier,
    star_identity_reserved,
    valid_api_key,
)
from .journal import async_open_journal
from .mcp_servers import allowed_servers, async_create_mcp
from .memory import async_create_memory
from .models import SoulConfigEntry, SoulRuntime
from .mqtt_bridge import MqttBridge
from .number_options import flag_option, number_option
from .souls import async_apply_soul_hint
from .storage import DebouncedStore


def llm_endpoint_from_config(config: Mapping[str, Any]) -> LLMEndpoint | None:
    """Return the configured LLM endpoint, or None when the LLM is off."""
    if not (base_url := config.get(CONF_LLM_BASE_URL)):
        return None
    return LLMEndpoint(
        base_url=base_url,
        model=config.get(CONF_LLM_MODEL, ""),
        api_key=config.get(CONF_LLM_API_KEY, ""),
    )


def stored_llm_endpoint(config: Mapping[str, Any]) -> LLMEndpoint | None:
    """Return a stored endpoint checked as the flows check it, or None when off.

    A damaged one (a hand edit, an old backup: a number or a list as the
    address, a NUL in it, a megabyte) made setup fail with a traceback, and
    a key an older Soul stored ("clé") raised in the HTTP client (a fuzz of
    the stored entries, 2026-11-29). A bad address or model is a
    ``ConfigEntryError`` (the reconfigure flow mends it); a key that cannot
    go into an HTTP header asks for a new one (reauthentication).
    """
    if (endpoint := llm_endpoint_from_config(config)) is None:
        return None
    if not (
        all(
            untrusted.is_text(text, MAX_SETTING_LENGTH)
            for text in (endpoint.base_url, endpoint.model)
        )
        and is_url(endpoint.base_url)
    ):
        raise ConfigEntryError(
            translation_domain=DOMAIN, translation_key="invalid_llm_endpoint"
        )
    if not valid_api_key(endpoint.api_key):
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="llm_auth_failed"
        )
    return endpoint


_LLM_HTTP_CLIENT: HassKey[httpx.AsyncClient] = HassKey(f"{DOMAIN}_llm_http_client")


@callback
def _llm_http_client(hass: HomeAssistant) -> httpx.AsyncClient:
    """Return the HTTP client of every model endpoint (closed when Home Assistant stops).

    As Home Assistant's shared client, with its SSL context, but reading an
    endpoint's answers within Soul's bounds (``core.llm.limited_transport``).
    """
    if (client := hass.data.get(_LLM_HTTP_CLIENT)) is None:
        client = hass.data[_LLM_HTTP_CLIENT] = create_async_httpx_client(
            hass,
            transport=limited_transport(
                httpx.AsyncHTTPTransport(verify=client_context())
            ),
        )
    return client


async def async_create_llm(
    hass: HomeAssistant, endpoint: LLMEndpoint
) -> OpenAICompatibleLLM:
    """Build the LLM client on Soul's shared HTTP client."""
    return await hass.async_add_executor_job(
        partial(OpenAICompatibleLLM, endpoint, http_client=_llm_http_client(hass))
    )


async def _async_navigator(
    hass: HomeAssistant,
    entry: SoulConfigEntry,
    chat: ChatPipeline,
    souls: SoulHub,
    llm: OpenAICompatibleLLM,
) -> Navigator:
    """Build the S-brain on the chat's endpoint (with its own model, if chosen)."""
    model = llm
    name = entry.options.get(CONF_NAVIGATOR_MODEL)
    if name and not untrusted.is_text(name, MAX_SETTING_LENGTH):
        # A damaged store (a list, a megabyte): the chat's model thinks too.
        LOGGER.warning("The S-brain's model in Soul's options is not a name")
    elif name and name != llm.endpoint.model:
        model = await async_create_llm(hass, replace(llm.endpoint, model=name))

    @callback
    def evolution(soul_id: str, request: str, user_id: str | None) -> None:
        device = find_device(hass, entry.entry_id, soul_identifier(soul_id)[1])
        hass.bus.async_fire(
            EVENT_EVOLUTION_REQUEST,
            {
                "device_id": device.id if device else None,
                "soul_id": soul_id,
                "request": request,
                "user_id": user_id,
            },
        )

    return Navigator(
        souls,
        model=lambda: model if chat.model is not None else None,
        events=lambda: chat.events,
        memory=lambda: chat.memory,
        profiles=lambda: chat.reasoner.profiles,
        clock=now_timestamp,
        spawn=lambda coro: entry.async_create_background_task(
            hass, coro, "soul navigator"
        ),
        archive=chat.archive,
        on_evolution=evolution,
        every_turns=number_option(entry.options, CONF_NAVIGATOR_TURNS),
        swing=number_option(entry.options, CONF_NAVIGATOR_SWING),
    )


def _topic_prefix(entry: SoulConfigEntry) -> str:
    """Return the entry's topic prefix, checked as the options flow checks it.

    A damaged one ("a/#", 70,000 characters) made Home Assistant's MQTT client
    drop other integrations' subscriptions of the same batch (a fuzz of the
    stored options, 2026-11-29): Soul does not start, and says why.
    """
    stored = entry.options.get(CONF_TOPIC_PREFIX, DEFAULT_TOPIC_PREFIX)
    try:
        return normalize_prefix(stored)
    except InvalidPrefixError as err:
        raise ConfigEntryError(
            translation_domain=DOMAIN,
            translation_key="invalid_topic_prefix",
            translation_placeholders={"error": str(err)},
        ) from None


async def async_create_runtime(
    hass: HomeAssistant, entry: SoulConfigEntry
) -> SoulRuntime:
    """Build the runtime objects of a hub entry from its options."""

    llm = None
    if endpoint := stored_llm_endpoint(entry.data):
        llm = await async_create_llm(hass, endpoint)
    topics = Topics(_topic_prefix(entry))
    registry = TerminalRegistry()
    bridge = MqttBridge(hass, topics, registry)
    bridge.ingest = SnapshotIngest(
        registry,
        run_blocking=hass.async_add_executor_job,
        spawn=lambda coro: entry.async_create_task(hass, coro, "soul snapshots"),
    )
    invoker = Invoker(
        registry,
        topics,
        bridge.async_publish,
        timeout=number_option(entry.options, CONF_INVOKE_TIMEOUT),
        run_blocking=hass.async_add_executor_job,
    )
    bridge.invoker = invoker
    store = DebouncedStore(hass, "souls")
    sessions_store = DebouncedStore(hass, "sessions")

    def is_online(terminal_id: str) -> bool:
        terminal = registry.get(terminal_id)
        return terminal is not None and terminal.available

    events, journal = await async_open_journal(hass, entry.options)
    souls = SoulHub(
        topics,
        bridge.async_publish,
        clock=now_timestamp,
        is_online=is_online,
        on_dirty=store.schedule,
    )
    store.dump = souls.dump
    souls.load(await store.async_load())
    chat = ChatPipeline(
        registry,
        souls,
        invoker,
        topics,
        bridge.async_publish,
        clock=now_timestamp,
        model=llm,
        default_timezone=lambda: hass.config.time_zone,
        max_rounds=number_option(entry.options, CONF_MAX_TOOL_ROUNDS),
        follow_up=flag_option(entry.options, CONF_FOLLOW_UP, DEFAULT_FOLLOW_UP),
        on_dirty=sessions_store.schedule,
        on_auth_failed=lambda: entry.async_start_reauth(hass),
        apply_hint=lambda terminal_id, hint, caller: async_apply_soul_hint(
            hass, entry, terminal_id, hint, caller=caller
        ),
        events=events,
        flush=bridge.async_flush,
        on_no_model=lambda: ir.async_create_issue(
            hass,
            DOMAIN,
            ISSUE_LLM_NOT_CONFIGURED,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key=ISSUE_LLM_NOT_CONFIGURED,
        ),
    )
    sessions_store.dump = chat.sessions.dump
    # 256 sessions' transcripts, each checked again (44 ms): not on the loop.
    await hass.async_add_executor_job(
        chat.sessions.load, await sessions_store.async_load()
    )
    profiles_store = DebouncedStore(hass, "profiles")
    profiles = ProfileStore(clock=now_timestamp, on_dirty=profiles_store.schedule)
    profiles_store.dump = profiles.dump
    profiles.load(await profiles_store.async_load())
    chat.reasoner.profiles = profiles
    if llm is not None:
        chat.navigator = await _async_navigator(hass, entry, chat, souls, llm)
    memory, memory_store = await async_create_memory(
        hass, entry.entry_id, entry_settings(entry)
    )
    chat.memory = memory
    mcp = async_create_mcp(hass, entry, events)
    chat.reasoner.soul_tools = lambda soul_id: mcp.tool_set(
        allowed_servers(entry, soul_id)
    )
    star_store = DebouncedStore(hass, "star")
    star = StarHub(
        reserved=star_identity_reserved, on_owners_changed=star_store.schedule
    )
    star_store.dump = lambda: {"human_owners": dict(star.human_owners)}
    stored = await star_store.async_load()
    if isinstance(stored, dict):
        star.load_owners(stored.get("human_owners"))
    return SoulRuntime(
        topics=topics,
        llm=llm,
        registry=registry,
        invoker=invoker,
        bridge=bridge,
        souls=souls,
        chat=chat,
        memory=memory,
        memory_store=memory_store,
        star=star,
        store=store,
        sessions_store=sessions_store,
        star_store=star_store,
        events=events,
        journal=journal,
        profiles=profiles,
        profiles_store=profiles_store,
        mcp=mcp,
        options=dict(entry.options),
        data=dict(entry.data),
    )
