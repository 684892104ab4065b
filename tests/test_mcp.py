"""Soul's MCP servers in Home Assistant, against real MCP servers (tests/mcp_servers).

The model is the local OpenAI-compatible test server; MQTT is Home
Assistant's mock. Chats over HTTP and Assist call the servers' tools; the
options flow refuses bad configurations field by field; a server that
cannot start raises a repair issue; unloading leaves no child process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
import json
import sys
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import STATE_OFF, STATE_ON
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import issue_registry as ir, llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    MqttMockHAClient,
)

from custom_components.soul.compat import tool_output
from custom_components.soul.const import (
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MCP_CONFIG,
    CONF_MCP_SERVERS,
    CONF_MEMORY_BACKEND,
    CONF_TOPIC_PREFIX,
    DOMAIN,
    SECTION_ADVANCED,
    SECTION_MCP,
    SECTION_MEMORY,
)
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI, tool_call
from tests.mcp_servers.http_server import HttpServer
from tests.mcp_servers.processes import STDIO_SERVER, child_processes

from .test_terminals import T, announce

pytest_plugins = ["tests.mcp_servers.fixtures"]

LOCAL = "binary_sensor.soul_mcp_server_local"
REMOTE = "binary_sensor.soul_mcp_server_remote"
SECRET = "env-secret-4711"


async def until(check: Callable[[], object], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


def servers(http: HttpServer, **more: Any) -> dict[str, Any]:
    return {
        "mcpServers": {
            "local": {
                "command": sys.executable,
                "args": [STDIO_SERVER],
                "env": {"MCP_TEST_TOKEN": SECRET},
            },
            "remote": {"url": http.mcp_url},
            **more,
        }
    }


def soul_entry(
    fake_llm: FakeOpenAI, config: dict[str, Any], **soul: Any
) -> MockConfigEntry:
    return MockConfigEntry(
        domain=DOMAIN,
        data={CONF_LLM_BASE_URL: fake_llm.base_url, CONF_LLM_MODEL: DEFAULT_MODEL},
        options={
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "none",
            CONF_MCP_CONFIG: config,
        },
        minor_version=2,
        subentries_data=[
            {
                "data": {"name": "Aria", "mbti_type": "ENFP", **soul},
                "subentry_type": "soul",
                "title": "Aria",
                "unique_id": None,
            }
        ],
    )


@pytest.fixture
async def loaded(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    mcp_http_server: HttpServer,
) -> AsyncIterator[MockConfigEntry]:
    entry = soul_entry(fake_llm, servers(mcp_http_server))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    entry.runtime_data.souls.bind(T, next(iter(entry.subentries)))
    announce(hass)
    await hass.async_block_till_done()
    await until(
        lambda: (
            (a := hass.states.get(LOCAL)) is not None
            and a.state == STATE_ON
            and (b := hass.states.get(REMOTE)) is not None
            and b.state == STATE_ON
        )
    )
    yield entry
    if entry.state is ConfigEntryState.LOADED:
        assert await hass.config_entries.async_unload(entry.entry_id)
    assert child_processes(STDIO_SERVER) == {}


async def test_chats_over_http_and_assist_use_mcp_tools(
    hass: HomeAssistant,
    loaded: MockConfigEntry,
    fake_llm: FakeOpenAI,
    hass_client: ClientSessionGenerator,
) -> None:
    state = hass.states.get(LOCAL)
    assert state is not None
    assert state.attributes["tools"] == 8  # the seven test tools and crash
    assert state.attributes["last_error"] is None
    # Over HTTP.
    fake_llm.reply(tool_calls=[tool_call("local__whoami", {})])
    fake_llm.reply("你的令牌找到了。")
    client = await hass_client()
    response = await client.post(
        "/api/soul/v1/chat",
        json={
            "session_id": "s-http",
            "terminal_id": T,
            "inputs": [{"type": "keyboard_text", "text": "我的令牌是什么？"}],
        },
    )
    assert response.status == 200
    body = await response.json()
    assert body["executed_skills"] == ["local__whoami"]
    assert body["reply"] == "你的令牌找到了。"
    tool_results = [
        json.loads(m["content"])
        for m in fake_llm.chat_requests[-1]["messages"]
        if m["role"] == "tool"
    ]
    assert tool_results == [{"ok": True, "output": SECRET}]
    # Over Assist.
    fake_llm.reply(tool_calls=[tool_call("remote__add", {"a": 40, "b": 2})])
    fake_llm.reply("是 42。")
    result = await conversation.async_converse(
        hass,
        "40 加 2？",
        None,
        Context(),
        language="zh-cn",
        agent_id="conversation.aria",
    )
    assert result.response.speech["plain"]["speech"] == "是 42。"
    tool_results = [
        json.loads(m["content"])
        for m in fake_llm.chat_requests[-1]["messages"]
        if m["role"] == "tool"
    ]
    assert tool_results == [{"ok": True, "output": "42"}]
    # Diagnostics list the servers and tools, never the secrets.
    diagnostics = await async_get_config_entry_diagnostics(hass, loaded)
    text = json.dumps(diagnostics)
    assert SECRET not in text
    assert diagnostics["options"][CONF_MCP_CONFIG] == "**REDACTED**"
    local = next(s for s in diagnostics["mcp"]["servers"] if s["name"] == "local")
    assert local["status"] == "connected"
    assert local["config"]["env"] == {"MCP_TEST_TOKEN": "**REDACTED**"}
    assert "local__add" in local["tools"]
    assert diagnostics["mcp"]["calls"] == 2
    # Unloading stops the servers: no child process is left (the fixture checks).
    assert await hass.config_entries.async_unload(loaded.entry_id)
    await hass.async_block_till_done()
    assert child_processes(STDIO_SERVER) == {}


async def test_a_soul_uses_only_its_servers_and_agents_get_the_llm_api(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    mcp_http_server: HttpServer,
) -> None:
    entry = soul_entry(
        fake_llm, servers(mcp_http_server), **{CONF_MCP_SERVERS: ["remote"]}
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    await until(
        lambda: all(
            c.status == "connected" for c in entry.runtime_data.mcp.connections.values()
        )
    )
    fake_llm.reply("好。")
    await conversation.async_converse(
        hass, "你好", None, Context(), language="zh-cn", agent_id="conversation.aria"
    )
    offered = {
        t["function"]["name"] for t in fake_llm.chat_requests[-1].get("tools", [])
    }
    assert "remote__add" in offered
    assert not any(name.startswith("local__") for name in offered)
    # Any Home Assistant agent may use the tools through the "Soul MCP tools" API.
    api = await llm.async_get_api(
        hass,
        "soul_mcp_tools",
        llm.LLMContext(
            platform="test", context=Context(), language="en",
            assistant=conversation.DOMAIN, device_id=None,
        ),
    )  # fmt: skip
    names = {tool.name for tool in api.tools}
    assert {"local__add", "remote__add"} <= names
    data, error = tool_output(
        await api.async_call_tool(
            llm.ToolInput(tool_name="local__add", tool_args={"a": 1, "b": 2})
        )
    )
    assert (data, error) == ({"ok": True, "output": "3"}, False)
    data, error = tool_output(
        await api.async_call_tool(
            llm.ToolInput(tool_name="remote__fail", tool_args={"reason": "nope"})
        )
    )
    assert data["ok"] is False and "nope" in data["error"]
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert child_processes(STDIO_SERVER) == {}


async def test_a_server_that_cannot_start_raises_a_repair_issue(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    mcp_http_server: HttpServer,
    mcp_stdio_exit_at_start_command: list[str],
) -> None:
    command, *args = mcp_stdio_exit_at_start_command
    config = servers(
        mcp_http_server,
        broken={"command": command, "args": args},
        # Repairs are Markdown: a third party's text makes no picture there.
        missing={"command": "/nonexistent/![m](http://evil.example/p.png)"},
    )
    entry = soul_entry(fake_llm, config)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    issues = ir.async_get(hass)
    missing_issue = f"mcp_server_failed_{entry.entry_id}_missing"
    broken_issue = f"mcp_server_failed_{entry.entry_id}_broken"
    await until(
        lambda: (
            issues.async_get_issue(DOMAIN, missing_issue) is not None
            and issues.async_get_issue(DOMAIN, broken_issue) is not None
        )
    )
    issue = issues.async_get_issue(DOMAIN, missing_issue)
    assert issue is not None
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["server"] == "missing"
    assert "command not found" in issue.translation_placeholders["error"]
    assert "![m](" not in issue.translation_placeholders["error"]
    assert "!［m］(http" in issue.translation_placeholders["error"]
    state = hass.states.get("binary_sensor.soul_mcp_server_missing")
    assert state is not None and state.state == STATE_OFF
    # What a server prints to stderr (its environment, a token…) is for the
    # administrators' repair issue, not for an entity every user reads.
    issue = issues.async_get_issue(DOMAIN, broken_issue)
    assert issue is not None and issue.translation_placeholders is not None
    assert "exiting at start" in issue.translation_placeholders["error"]
    state = hass.states.get("binary_sensor.soul_mcp_server_broken")
    assert state is not None and state.attributes["last_error"]
    assert "exiting at start" not in state.attributes["last_error"]
    # The working servers work meanwhile.
    await until(
        lambda: (s := hass.states.get(LOCAL)) is not None and s.state == STATE_ON
    )
    # The owner removes the broken servers: their issues and entities go.
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            CONF_TOPIC_PREFIX: "soul",
            SECTION_MEMORY: {CONF_MEMORY_BACKEND: "none"},
            SECTION_MCP: {CONF_MCP_CONFIG: json.dumps(servers(mcp_http_server))},
            SECTION_ADVANCED: {},
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert issues.async_get_issue(DOMAIN, missing_issue) is None
    assert issues.async_get_issue(DOMAIN, broken_issue) is None
    assert hass.states.get("binary_sensor.soul_mcp_server_missing") is None
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert child_processes(STDIO_SERVER) == {}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("{not json", "mcpServers"),
        ('{"mcpServers": {"a b": {"command": "x"}}}', "mcpServers.a b"),
        ('{"mcpServers": {"files": {"command": "npx", "args": "-y"}}}', "mcpServers.files.args"),
        ('{"mcpServers": {"web": {"url": "ftp://x"}}}', "mcpServers.web.url"),
        ('{"mcpServers": {"web": {"url": "http://x", "headers": {"A": "b\\nc"}}}}', "mcpServers.web.headers.A"),
    ],
)  # fmt: skip
async def test_bad_configurations_are_refused_in_the_flow(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    text: str,
    field: str,
) -> None:
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    assert result["description_placeholders"]["mcp_example"].startswith('{"mcpServers"')
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            CONF_TOPIC_PREFIX: "soul",
            SECTION_MEMORY: {},
            SECTION_MCP: {CONF_MCP_CONFIG: text},
            SECTION_ADVANCED: {},
        },
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_MCP_CONFIG: "invalid_mcp_config"}
    assert result["description_placeholders"]["mcp_field"] == field
    assert result["description_placeholders"]["mcp_error"]
    assert CONF_MCP_CONFIG not in init_integration.options


async def test_a_good_configuration_is_stored_and_shown_again(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    text = json.dumps(
        {"mcpServers": {"files": {"command": "npx", "args": ["-y", "server"],
                                  "env": {"TOKEN": "t"}}}}
    )  # fmt: skip
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            CONF_TOPIC_PREFIX: "soul",
            SECTION_MEMORY: {},
            SECTION_MCP: {CONF_MCP_CONFIG: text},
            SECTION_ADVANCED: {},
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert init_integration.options[CONF_MCP_CONFIG] == json.loads(text)
    result = await hass.config_entries.options.async_init(init_integration.entry_id)
    shown = next(
        key.description["suggested_value"]
        for section_key, section in result["data_schema"].schema.items()
        if str(section_key) == SECTION_MCP
        for key in section.schema.schema
    )
    assert json.loads(shown) == json.loads(text)
    hass.config_entries.options.async_abort(result["flow_id"])
