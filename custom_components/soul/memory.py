"""Memory in Home Assistant: the backend from the options, on-demand mem0, health checks.

``async_create_memory`` builds the ``MemoryManager`` of the hub entry (or
None when memory is off). The embedded backend needs ``mem0ai``, which is
not in ``manifest.json``: its metadata pins protobuf<7, which Home Assistant
≥ 2026.10 (protobuf 7) cannot install, although mem0 never imports protobuf.
When the backend is chosen, ``async_install_mem0`` installs mem0's real
requirements through Home Assistant's requirements helper, then mem0ai alone
(``--no-deps``) with the command Home Assistant uses, and mem0 is imported to
prove it works; a repair issue says what failed otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
import os
import site
import subprocess
import sys
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.requirements import async_process_requirements, pip_kwargs
from homeassistant.util import package as pkg_util
from packaging.requirements import Requirement

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
    DEFAULT_EMBEDDING_MODEL,
    DOMAIN,
    ISSUE_MEM0_UNAVAILABLE,
    LOGGER,
    MAX_SETTING_LENGTH,
    MEM0_DEPENDENCIES,
    MEM0_REQUIREMENT,
    MEMORY_EMBEDDED,
    MEMORY_NONE,
    MEMORY_SERVER,
)
from .core import untrusted
from .core.markdown import markdown_inert
from .core.memory.base import MemoryBackend
from .core.memory.manager import MemoryManager
from .core.memory.mem0_embedded import (
    EmbeddedMem0,
    EmbeddedMem0Config,
    import_mem0,
    mem0_available,
)
from .core.memory.mem0_server import Mem0Server
from .helpers import now_timestamp, valid_api_key
from .number_options import number_option
from .storage import DebouncedStore

HEALTH_INTERVAL = timedelta(seconds=60)
MEMORY_DIR = "soul_memory"
# The whole uv command; Home Assistant only bounds each HTTP request (uv's
# HTTP_TIMEOUT, from pip_kwargs).
INSTALL_TIMEOUT = 600
# As homeassistant.util.package: with these set, uv picks the environment itself.
_UV_PYTHON_VARS = ("UV_SYSTEM_PYTHON", "UV_PYTHON")


def signal_memory_ready(entry_id: str) -> str:
    """Return the dispatcher signal sent when memory readiness changes."""
    return f"{DOMAIN}_{entry_id}_memory_ready"


def memory_backend_name(options: Any) -> str:
    """Return the chosen backend: embedded by default when an LLM is configured."""
    if (chosen := options.get(CONF_MEMORY_BACKEND)) is not None:
        return str(chosen)
    return MEMORY_EMBEDDED if options.get(CONF_LLM_BASE_URL) else MEMORY_NONE


def install_without_dependencies(
    requirement: str,
    *,
    constraints: str | None = None,
    target: str | None = None,
    timeout: int | None = None,
) -> None:
    """Install ``requirement`` and none of its dependencies, as Home Assistant would.

    The command of ``homeassistant.util.package.install_package`` -- uv run by
    this interpreter, ``unsafe-first-match`` over the indexes of the ``UV_*``
    environment (Home Assistant's wheel index on its images), ``--upgrade``,
    Home Assistant's constraints, its ``deps`` target, or the user site outside
    a virtual environment -- plus ``--no-deps``. The keywords are
    ``homeassistant.requirements.pip_kwargs(config_dir)``. Blocks (executor);
    raises ``RuntimeError`` with uv's message when the install fails.
    """
    env = os.environ.copy()
    args = [
        sys.executable, "-m", "uv", "pip", "install", "--quiet", "--no-deps",
        requirement, "--index-strategy", "unsafe-first-match", "--upgrade",
    ]  # fmt: skip
    if timeout:
        env["HTTP_TIMEOUT"] = str(timeout)
    if constraints is not None:
        args += ["--constraint", constraints]
    if target:
        args += ["--target", os.path.abspath(target)]  # noqa: PTH100 - as HA
    elif (
        not pkg_util.is_virtual_env()
        and not any(var in env for var in _UV_PYTHON_VARS)
        and (user_site := site.getusersitepackages())
    ):
        args += ["--python", sys.executable, "--target", user_site]
    try:
        done = subprocess.run(  # noqa: S603 - our arguments, no shell
            args,
            env=env,
            capture_output=True,
            check=False,
            timeout=INSTALL_TIMEOUT,
            close_fds=False,  # as Home Assistant: lets Python use posix_spawn
        )
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(
            f"installing {requirement} took more than {INSTALL_TIMEOUT} s"
        ) from err
    if done.returncode:
        message = " ".join(done.stderr.decode(errors="replace").split())
        raise RuntimeError(
            f"cannot install {requirement}: {message or f'uv exit {done.returncode}'}"
        )


def _install_mem0(config_dir: str) -> None:
    """Install mem0ai without its dependencies unless it is there (executor)."""
    if not pkg_util.is_installed(MEM0_REQUIREMENT):
        install_without_dependencies(MEM0_REQUIREMENT, **pip_kwargs(config_dir))


async def async_install_mem0(hass: HomeAssistant) -> None:
    """Install mem0's real requirements, then mem0ai without its protobuf pin.

    The requirements go through Home Assistant's requirements helper (its
    constraints, retries and failure memory); mem0ai, absent from them, is
    installed alone unless Home Assistant is told to skip it
    (``skip_pip_packages``). Raises when an install fails.
    """
    await async_process_requirements(
        hass, DOMAIN, list(MEM0_DEPENDENCIES), is_built_in=False
    )
    if Requirement(MEM0_REQUIREMENT).name in hass.config.skip_pip_packages:
        LOGGER.warning(
            "Skipping requirement %s. This may cause issues", MEM0_REQUIREMENT
        )
        return
    await hass.async_add_executor_job(_install_mem0, hass.config.config_dir)


async def _async_embedded(hass: HomeAssistant, options: Any) -> MemoryBackend:
    """Install mem0ai if needed and build the embedded backend (raises on failure)."""
    await async_install_mem0(hass)
    config = EmbeddedMem0Config(
        data_dir=hass.config.path(MEMORY_DIR),
        llm_base_url=options[CONF_LLM_BASE_URL],
        llm_model=options.get(CONF_LLM_MODEL, ""),
        llm_api_key=options.get(CONF_LLM_API_KEY, ""),
        embedding_model=options.get(CONF_EMBEDDING_MODEL, DEFAULT_EMBEDDING_MODEL),
        embedding_dims=number_option(options, CONF_EMBEDDING_DIMS),
    )
    # find_spec and the first import read the file system: not in the event loop.
    if not await hass.async_add_executor_job(mem0_available):
        raise ImportError("mem0ai is not importable")
    # Importing proves that mem0's dependencies are there too.
    await hass.async_add_executor_job(import_mem0, config.mem0_dir)
    return EmbeddedMem0(config, executor=hass.async_add_executor_job)


async def async_create_memory(
    hass: HomeAssistant, entry_id: str, options: Any
) -> tuple[MemoryManager | None, DebouncedStore]:
    """Return the memory manager of the options (None when off) and its queue store."""
    store = DebouncedStore(hass, "memory")
    name = memory_backend_name(options)
    backend: MemoryBackend | None = None
    if name == MEMORY_SERVER and (url := options.get(CONF_MEM0_URL)):
        key = options.get(CONF_MEM0_API_KEY, "")
        if untrusted.is_text(url, MAX_SETTING_LENGTH) and valid_api_key(key):
            backend = Mem0Server(
                async_get_clientsession(hass),
                url,
                key,
                timeout=number_option(options, CONF_MEMORY_TIMEOUT),
            )
        else:  # a damaged store (a list raised at setup: a fuzz of the entries)
            LOGGER.warning(
                "The mem0 server's address or key in Soul's options is not"
                " usable; memory is off until they are set again"
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
                translation_placeholders={"error": markdown_inert(str(err)[:200])},
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
        search_timeout=number_option(options, CONF_MEMORY_TIMEOUT),
        on_dirty=store.schedule,
        on_ready_changed=ready_changed,
    )
    store.dump = manager.dump
    # Up to 500 queued sessions' texts, each checked again: not on the loop.
    await hass.async_add_executor_job(manager.load, await store.async_load())
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
