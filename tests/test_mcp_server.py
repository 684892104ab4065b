"""An MCP client drives a body through Home Assistant's MCP server (docs/mcp.md).

Home Assistant's ``mcp_server`` exposes the "Soul bodies" LLM API; the MCP
SDK's own client, authenticated with a Home Assistant token, lists the body's
skills and calls one, which travels as ``invoke`` over a real MQTT broker to
the reference body and comes back as its ``result``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import json
import uuid

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.const import CONF_TOPIC_PREFIX, DOMAIN
from custom_components.soul.llm_api import API_ID
from devtools.body_sim import BodySim
from devtools.broker import MqttBroker


async def until(check: Callable[[], object], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


async def test_an_mcp_client_calls_a_body_skill(
    hass: HomeAssistant,
    real_mqtt: MockConfigEntry,
    mqtt_broker: MqttBroker,
    hass_client: ClientSessionGenerator,
    hass_access_token: str,
) -> None:
    prefix = f"mcp{uuid.uuid4().hex[:8]}"
    soul = MockConfigEntry(domain=DOMAIN, data={}, options={CONF_TOPIC_PREFIX: prefix})
    soul.add_to_hass(hass)
    assert await hass.config_entries.async_setup(soul.entry_id)
    server = MockConfigEntry(
        domain="mcp_server", data={CONF_LLM_HASS_API: [API_ID]}, title="MCP"
    )
    server.add_to_hass(hass)
    assert await hass.config_entries.async_setup(server.entry_id)
    body = BodySim(mqtt_broker.host, mqtt_broker.port, prefix=prefix)
    await hass.async_add_executor_job(body.start)
    try:
        await until(
            lambda: (
                (t := soul.runtime_data.registry.get("terminal-001")) is not None
                and t.available
                and t.skills is not None
            )
        )
        client = await hass_client()  # a real HTTP server on 127.0.0.1
        url = str(client.make_url("/api/mcp"))
        async with (
            httpx.AsyncClient(
                headers={"Authorization": f"Bearer {hass_access_token}"}, timeout=10
            ) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            assert {
                "terminal-001_control_light",
                "terminal-001_set_head_motion",
            } <= names
            light = next(
                t for t in listed.tools if t.name == "terminal-001_control_light"
            )
            assert "mode" in json.dumps(light.inputSchema)
            result = await session.call_tool(
                "terminal-001_set_head_motion", {"action": "点头"}
            )
            assert not result.isError, result
            text = "".join(getattr(part, "text", "") for part in result.content)
            assert json.loads(text)["ok"] is True
            await until(lambda: body.head_motion is not None)
            assert body.invocations[-1]["skill"] == "set_head_motion"
            # A skill's schema still holds through MCP: a bad argument is refused.
            refused = await session.call_tool(
                "terminal-001_control_light", {"mode": "explode"}
            )
            assert refused.isError or '"ok": false' in "".join(
                getattr(part, "text", "") for part in refused.content
            )
    finally:
        await hass.async_add_executor_job(body.stop)
        assert await hass.config_entries.async_unload(server.entry_id)
        assert await hass.config_entries.async_unload(soul.entry_id)
