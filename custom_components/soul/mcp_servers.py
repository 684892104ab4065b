"""The MCP servers of a Soul hub in Home Assistant (docs/mcp.md).

The hub's options hold the spec's ``{"mcpServers": …}``; ``async_create_mcp``
makes the core's ``McpHub`` with Home Assistant's executor, background tasks
and SSL context, ``async_start_mcp`` starts every server, raises a repair
issue for a server that cannot start (removed once it connects) and stops
them all — child processes included — on unload and when Home Assistant
stops. A soul's subentry may list the servers it uses (none listed: all).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util.ssl import get_default_context
import httpx

from .const import (
    CONF_MCP_CONFIG,
    CONF_MCP_SERVERS,
    DOMAIN,
    ISSUE_MCP_SERVER_FAILED,
    LOGGER,
)
from .core.cognition.events import EventBus
from .core.markdown import markdown_inert
from .core.mcp.config import McpConfigError, ServerConfig, parse_config
from .core.mcp.connection import CONNECTED, FAILED, WrapTransport
from .core.mcp.hub import McpHub
from .helpers import now_timestamp, soul_options
from .models import SoulConfigEntry


def signal_mcp_changed(entry_id: str) -> str:
    """Return the dispatcher signal sent when a server's state or tools changed."""
    return f"{DOMAIN}_{entry_id}_mcp_changed"


def mcp_servers(options: Mapping[str, Any]) -> dict[str, ServerConfig]:
    """Return the configured servers (none when the stored option is unusable)."""
    try:
        return parse_config(options.get(CONF_MCP_CONFIG))
    except McpConfigError as err:  # the flow checked it: only a hand-edited file
        LOGGER.error("The MCP configuration is not usable: %s", err)
        return {}


def async_create_mcp(
    hass: HomeAssistant, entry: SoulConfigEntry, events: EventBus
) -> McpHub:
    """Return the hub's MCP servers, not yet started."""
    ssl_context = get_default_context()

    def http_client(
        headers: dict[str, str], timeout: float, wrap: WrapTransport
    ) -> httpx.AsyncClient:
        # Home Assistant's SSL context: no certificate loading on the event loop.
        return httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout, read=300),
            transport=wrap(httpx.AsyncHTTPTransport(verify=ssl_context)),
            follow_redirects=True,
        )

    return McpHub(
        run_blocking=hass.async_add_executor_job,
        http_client=http_client,
        # Not the entry's background tasks: unloading cancels those at once,
        # and a supervisor must close its child process in order (hub.stop).
        spawn=lambda coro: hass.async_create_background_task(
            coro, "soul mcp server", eager_start=False
        ),
        events=lambda: events,
        clock=now_timestamp,
        on_change=lambda: _changed(hass, entry),
    )


@callback
def _changed(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Keep the repair issues and the entities in step with the servers."""
    hub = entry.runtime_data.mcp
    for name, connection in hub.connections.items():
        issue_id = f"{ISSUE_MCP_SERVER_FAILED}_{entry.entry_id}_{name}"
        if connection.status == FAILED and connection.connects == 0:
            ir.async_create_issue(
                hass,
                DOMAIN,
                issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key=ISSUE_MCP_SERVER_FAILED,
                translation_placeholders={
                    "server": name,
                    # Administrators only see repairs: the server's stderr too,
                    # as text (repairs are Markdown: no link or picture of it).
                    "error": markdown_inert(
                        (connection.error or "")[:300]
                        + (
                            f"; stderr: {connection.stderr}"
                            if connection.stderr
                            else ""
                        )
                    ),
                },
            )
        elif connection.status == CONNECTED:
            ir.async_delete_issue(hass, DOMAIN, issue_id)
    async_dispatcher_send(hass, signal_mcp_changed(entry.entry_id))


@callback
def async_start_mcp(hass: HomeAssistant, entry: SoulConfigEntry) -> None:
    """Start the servers; stop them on unload and when Home Assistant stops."""
    hub = entry.runtime_data.mcp
    servers = mcp_servers(entry.options)
    registry = ir.async_get(hass)
    prefix = f"{ISSUE_MCP_SERVER_FAILED}_{entry.entry_id}_"
    for issue_id in [
        issue_id
        for (domain, issue_id) in registry.issues
        if domain == DOMAIN and issue_id.startswith(prefix)
    ]:
        if issue_id.removeprefix(prefix) not in servers:
            ir.async_delete_issue(hass, DOMAIN, issue_id)  # a removed server
    hub.start(servers)

    async def stop(_event: Event | None = None) -> None:
        await hub.stop()

    entry.async_on_unload(stop)
    entry.async_on_unload(hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, stop))


def allowed_servers(entry: SoulConfigEntry, soul_id: str) -> Collection[str] | None:
    """Return the servers a soul may use (None: all of them)."""
    if soul_id not in entry.subentries:
        return None
    chosen = soul_options(entry, soul_id).get(CONF_MCP_SERVERS)
    return None if chosen is None else set(chosen)
