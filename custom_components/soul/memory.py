"""Memory in Home Assistant: the backend from the options, on-demand mem0, health checks.

``async_create_memory`` builds the ``MemoryManager`` of the hub entry (or
None when memory is off). The embedded backend needs ``mem0ai``, which is
not in ``manifest.json`` (Home Assistant ≥ 2026.10 pins protobuf 7, which
mem0ai rejects): it is installed through Home Assistant's requirements helper
when chosen, and a repair issue explains the conflict when that fails.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.requirements import async_process_requirements

from .const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_TIMEOUT,
    DEFAULT_EMBEDDING_DIMS,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_MEMORY_TIMEOUT,
    DOMAIN,
    ISSUE_MEM0_UNAVAILABLE,
    LOGGER,
    MEM0_REQUIREMENT,
    MEMORY_EMBEDDED,
    MEMORY_NONE,
    MEMORY_SERVER,
)
from .core.memory.base import MemoryBackend
from .core.memory.manager import MemoryManager
from .core.memory.mem0_embedded import EmbeddedMem0, EmbeddedMem0Config, mem0_available
from .core.memory.mem0_server import Mem0Server
from .helpers import now_timestamp
from .storage import DebouncedStore

HEALTH_INTERVAL = timedelta(seconds=60)
MEMORY_DIR = "soul_memory"


def signal_memory_ready(entry_id: str) -> str:
    """Return the dispatcher signal sent when memory readiness changes."""
    return f"{DOMAIN}_{entry_id}_memory_ready"


def memory_backend_name(options: Any) -> str:
    """Return the chosen backend: embedded by default when an LLM is configured."""
    if (chosen := options.get(CONF_MEMORY_BACKEND)) is not None:
        return str(chosen)
    return MEMORY_EMBEDDED if options.get(CONF_LLM_BASE_URL) else MEMORY_NONE


async def _async_embedded(hass: HomeAssistant, options: Any) -> MemoryBackend:
    """Install mem0ai if needed and build the embedded backend (raises on failure)."""
    await async_process_requirements(
        hass, DOMAIN, [MEM0_REQUIREMENT], is_built_in=False
    )
    # find_spec reads the file system: not in the event loop.
    if not await hass.async_add_executor_job(mem0_available):
        raise ImportError("mem0ai is not importable")
    config = EmbeddedMem0Config(
        data_dir=hass.config.path(MEMORY_DIR),
        llm_base_url=options[CONF_LLM_BASE_URL],
        llm_model=options.get(CONF_LLM_MODEL, ""),
        llm_api_key=options.get(CONF_LLM_API_KEY, ""),
        embedding_model=options.get(CONF_EMBEDDING_MODEL, DEFAULT_EMBEDDING_MODEL),
        embedding_dims=int(options.get(CONF_EMBEDDING_DIMS, DEFAULT_EMBEDDING_DIMS)),
    )
    return EmbeddedMem0(config, executor=hass.async_add_executor_job)


async def async_create_memory(
    hass: HomeAssistant, entry_id: str, options: Any
) -> tuple[MemoryManager | None, DebouncedStore]:
    """Return the memory manager of the options (None when off) and its queue store."""
    store = DebouncedStore(hass, "memory")
    name = memory_backend_name(options)
    backend: MemoryBackend | None = None
    if name == MEMORY_SERVER and options.get(CONF_MEM0_URL):
        backend = Mem0Server(
            async_get_clientsession(hass),
            options[CONF_MEM0_URL],
            options.get(CONF_MEM0_API_KEY, ""),
            timeout=float(options.get(CONF_MEMORY_TIMEOUT, DEFAULT_MEMORY_TIMEOUT)),
        )
    elif name == MEMORY_EMBEDDED and options.get(CONF_LLM_BASE_URL):
        try:
            backend = await _async_embedded(hass, options)
        except Exception as err:  # noqa: BLE001 - any install/import failure
            LOGGER.warning("mem0 could not be set up in Home Assistant: %s", err)
            ir.async_create_issue(
                hass,
                DOMAIN,
                ISSUE_MEM0_UNAVAILABLE,
                is_fixable=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key=ISSUE_MEM0_UNAVAILABLE,
                translation_placeholders={"error": str(err)[:200]},
            )
        else:
            ir.async_delete_issue(hass, DOMAIN, ISSUE_MEM0_UNAVAILABLE)
    if name != MEMORY_EMBEDDED:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_MEM0_UNAVAILABLE)
    if backend is None:
        return None, store

    @callback
    def ready_changed(ready: bool) -> None:
        LOGGER.info(
            "Memory (%s) is %s", backend.name, "ready" if ready else "not ready"
        )
        async_dispatcher_send(hass, signal_memory_ready(entry_id))

    manager = MemoryManager(
        backend,
        clock=now_timestamp,
        search_timeout=float(options.get(CONF_MEMORY_TIMEOUT, DEFAULT_MEMORY_TIMEOUT)),
        on_dirty=store.schedule,
        on_ready_changed=ready_changed,
    )
    store.dump = manager.dump
    manager.load(await store.async_load())
    return manager, store


@callback
def async_start_memory(
    hass: HomeAssistant, manager: MemoryManager, create_task: Callable[..., Any]
) -> Callable[[], None]:
    """Check health now and every minute (a healthy check flushes the queue)."""

    @callback
    def check(_now: Any = None) -> None:
        create_task(hass, manager.check(), "soul memory health check")

    check()
    return async_track_time_interval(
        hass, check, HEALTH_INTERVAL, name="soul memory health", cancel_on_shutdown=True
    )
