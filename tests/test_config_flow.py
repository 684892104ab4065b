"""The config, options and reconfigure flows, against a real OpenAI-compatible server."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from homeassistant.config_entries import SOURCE_MQTT, SOURCE_USER, ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.soul.const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_EMOTION_TICK_INTERVAL,
    CONF_INVOKE_TIMEOUT,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_TIMEOUT,
    CONF_TOPIC_PREFIX,
    DOMAIN,
)
from devtools.broker import free_port
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI

pytestmark = pytest.mark.usefixtures("mqtt_mock")
# What the form fills in for the memory fields left alone; memory itself is off
# here (its tests are tests/test_memory.py).
FORM_DEFAULTS = {
    CONF_EMBEDDING_MODEL: "text-embedding-3-small",
    CONF_EMBEDDING_DIMS: 1536,
    CONF_MEMORY_TIMEOUT: 5.0,
}
MEMORY_DEFAULTS = {CONF_MEMORY_BACKEND: "none", **FORM_DEFAULTS}


def llm_input(server: FakeOpenAI, api_key: str = "", **extra: Any) -> dict[str, Any]:
    """Form input that points Soul at the fake server."""
    data = {
        CONF_TOPIC_PREFIX: "soul",
        CONF_LLM_BASE_URL: server.base_url,
        CONF_LLM_MODEL: DEFAULT_MODEL,
        CONF_INVOKE_TIMEOUT: 8.0,
        CONF_EMOTION_TICK_INTERVAL: 3.0,
        CONF_MAX_TOOL_ROUNDS: 3,
        **MEMORY_DEFAULTS,
        **extra,
    }
    if api_key:
        data[CONF_LLM_API_KEY] = api_key
    return data


async def start_user_flow(hass: HomeAssistant) -> str:
    """Start the user flow, check it shows the form, and return its id."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    assert result["errors"] == {}
    return result["flow_id"]


async def test_user_flow_without_llm(hass: HomeAssistant) -> None:
    """The prefix alone is enough; blanks and slashes around it are dropped."""
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_TOPIC_PREFIX: " /home/soul/ "}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Soul"
    assert result["data"] == {}
    entry = result["result"]
    assert entry.options == {
        CONF_TOPIC_PREFIX: "home/soul",
        CONF_INVOKE_TIMEOUT: 8.0,
        CONF_EMOTION_TICK_INTERVAL: 3.0,
        CONF_MAX_TOOL_ROUNDS: 3,
        **FORM_DEFAULTS,
    }
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "home/soul"
    assert entry.runtime_data.llm is None
    # Without an LLM, memory defaults to off.
    assert entry.runtime_data.memory is None


async def test_memory_settings_are_checked(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_TOPIC_PREFIX: "soul", CONF_MEMORY_BACKEND: "mem0_embedded"}
    )
    assert result["errors"] == {CONF_MEMORY_BACKEND: "memory_needs_llm"}
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_TOPIC_PREFIX: "soul", CONF_MEMORY_BACKEND: "mem0_server"}
    )
    assert result["errors"] == {CONF_MEM0_URL: "mem0_url_required"}
    result = await hass.config_entries.flow.async_configure(
        flow_id,
        {
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "mem0_server",
            CONF_MEM0_URL: "not a url",
        },
    )
    assert result["errors"] == {CONF_MEM0_URL: "invalid_url"}
    result = await hass.config_entries.flow.async_configure(
        flow_id,
        {
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "mem0_server",
            CONF_MEM0_URL: "http://127.0.0.1:9",
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done(wait_background_tasks=True)
    entry = result["result"]
    # The server is unreachable: memory exists but is not ready.
    assert entry.runtime_data.memory is not None
    assert not entry.runtime_data.memory.ready
    assert hass.states.get("binary_sensor.soul_memory").state == "off"


async def test_user_flow_with_llm(hass: HomeAssistant, fake_llm: FakeOpenAI) -> None:
    """A working endpoint is checked with a real request carrying the key."""
    fake_llm.api_key = "sk-right"
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm, api_key="sk-right")
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["result"].options == llm_input(fake_llm, api_key="sk-right")
    assert [r["path"] for r in fake_llm.requests] == ["/v1/models"]
    await hass.async_block_till_done()
    llm = result["result"].runtime_data.llm
    assert llm is not None
    assert llm.endpoint.model == DEFAULT_MODEL


async def test_user_flow_unreachable_then_fixed(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """Nothing listening: cannot_connect, and the form keeps what was typed."""
    flow_id = await start_user_flow(hass)
    dead = {
        CONF_TOPIC_PREFIX: "soul",
        CONF_LLM_BASE_URL: f"http://127.0.0.1:{free_port()}/v1",
        CONF_LLM_MODEL: DEFAULT_MODEL,
    }
    result = await hass.config_entries.flow.async_configure(flow_id, dead)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "cannot_connect"}

    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm)
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_user_flow_invalid_auth(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """HTTP 401 from the endpoint is reported as invalid_auth."""
    fake_llm.api_key = "sk-right"
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm, api_key="sk-wrong")
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "invalid_auth"}
    assert not hass.config_entries.async_entries(DOMAIN)


async def test_endpoint_without_models_listing(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """A server without GET /models is asked for a one-token completion instead."""
    fake_llm.models = None
    fake_llm.reply("pong")
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm)
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert [r["path"] for r in fake_llm.requests] == [
        "/v1/models",
        "/v1/chat/completions",
    ]
    assert fake_llm.chat_requests[0]["model"] == DEFAULT_MODEL
    assert fake_llm.chat_requests[0]["max_tokens"] == 1


async def test_endpoint_server_error(hass: HomeAssistant, fake_llm: FakeOpenAI) -> None:
    """A server that answers with errors cannot be used: cannot_connect."""
    fake_llm.models = None
    fake_llm.fail(500, "boom")
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm)
    )
    assert result["errors"] == {"base": "cannot_connect"}


@pytest.mark.parametrize(
    ("user_input", "errors"),
    [
        ({CONF_TOPIC_PREFIX: "soul/+/x"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        ({CONF_TOPIC_PREFIX: "/"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        ({CONF_TOPIC_PREFIX: "$SYS"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        (
            {
                CONF_TOPIC_PREFIX: "soul",
                CONF_LLM_BASE_URL: "not a url",
                CONF_LLM_MODEL: "m",
            },
            {CONF_LLM_BASE_URL: "invalid_url"},
        ),
        (
            {CONF_TOPIC_PREFIX: "soul", CONF_LLM_BASE_URL: "http://127.0.0.1:9/v1"},
            {CONF_LLM_MODEL: "model_required"},
        ),
        (
            {CONF_TOPIC_PREFIX: "soul", CONF_LLM_MODEL: "gpt"},
            {CONF_LLM_BASE_URL: "base_url_required"},
        ),
    ],
)
async def test_field_errors(
    hass: HomeAssistant, user_input: dict[str, Any], errors: dict[str, str]
) -> None:
    """Bad fields are reported on the field, before any request is made."""
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(flow_id, user_input)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors


async def test_unexpected_error(hass: HomeAssistant, fake_llm: FakeOpenAI) -> None:
    """A bug while checking the endpoint shows `unknown`, not a crash."""
    flow_id = await start_user_flow(hass)
    with patch(
        "custom_components.soul.core.llm.OpenAICompatibleLLM.verify",
        side_effect=RuntimeError("bug"),
    ):
        result = await hass.config_entries.flow.async_configure(
            flow_id, llm_input(fake_llm)
        )
    assert result["errors"] == {"base": "unknown"}


async def test_single_instance(
    hass: HomeAssistant, soul_entry: MockConfigEntry
) -> None:
    """One hub serves every body; a second one is refused."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "single_instance_allowed"


async def test_options_flow(
    hass: HomeAssistant, init_integration: MockConfigEntry, fake_llm: FakeOpenAI
) -> None:
    """Options change the same settings, are checked, and reload the entry."""
    entry = init_integration
    assert entry.runtime_data.llm is None
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "init"

    fake_llm.api_key = "sk-right"
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], llm_input(fake_llm, api_key="sk-wrong")
    )
    assert result["errors"] == {"base": "invalid_auth"}

    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        llm_input(
            fake_llm,
            api_key="sk-right",
            **{CONF_TOPIC_PREFIX: "robots", CONF_INVOKE_TIMEOUT: 3},
        ),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options[CONF_TOPIC_PREFIX] == "robots"
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "robots"
    assert entry.runtime_data.llm is not None
    assert entry.runtime_data.llm.endpoint.api_key == "sk-right"
    assert entry.runtime_data.invoker.timeout == 3.0


async def test_options_flow_turns_llm_off(
    hass: HomeAssistant, fake_llm: FakeOpenAI, mqtt_mock: Any
) -> None:
    """Clearing the base URL (and model) turns the LLM off."""
    entry = MockConfigEntry(domain=DOMAIN, data={}, options=llm_input(fake_llm))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.runtime_data.llm is not None

    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {CONF_TOPIC_PREFIX: "soul"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options == {
        CONF_TOPIC_PREFIX: "soul",
        CONF_INVOKE_TIMEOUT: 8.0,
        CONF_EMOTION_TICK_INTERVAL: 3.0,
        CONF_MAX_TOOL_ROUNDS: 3,
        **FORM_DEFAULTS,
    }
    assert entry.runtime_data.llm is None


async def test_reconfigure_flow(
    hass: HomeAssistant, init_integration: MockConfigEntry, fake_llm: FakeOpenAI
) -> None:
    """Reconfigure shows the current settings, checks the new ones and reloads."""
    entry = init_integration
    result = await entry.start_reconfigure_flow(hass)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "reconfigure"

    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {
            **llm_input(fake_llm),
            CONF_LLM_BASE_URL: f"http://127.0.0.1:{free_port()}/v1",
        },
    )
    assert result["errors"] == {"base": "cannot_connect"}

    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], llm_input(fake_llm, **{CONF_TOPIC_PREFIX: "lab/soul"})
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.options == llm_input(fake_llm, **{CONF_TOPIC_PREFIX: "lab/soul"})
    assert entry.runtime_data.topic_prefix == "lab/soul"
    assert entry.runtime_data.llm is not None


async def discover(hass: HomeAssistant, topic: str, payload: str) -> dict[str, Any]:
    """Start the flow MQTT discovery starts for a message on ``topic``."""
    info = MqttServiceInfo(
        topic=topic,
        payload=payload,
        qos=1,
        retain=True,
        subscribed_topic="soul/terminal/+/online",
        timestamp=0,
    )
    return await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_MQTT}, data=info
    )


async def test_mqtt_discovery(hass: HomeAssistant) -> None:
    """A body announcing itself offers Soul; confirming leads to the settings form."""
    result = await discover(hass, "soul/terminal/desk-bot/online", "online")
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "mqtt_confirm"
    assert result["description_placeholders"] == {"terminal": "desk-bot"}
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["step_id"] == "user"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_TOPIC_PREFIX: "soul"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_mqtt_discovery_of_other_topics_aborts(hass: HomeAssistant) -> None:
    result = await discover(hass, "soul/terminal/desk-bot/heartbeat", "1")
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "invalid_discovery_info"


async def test_mqtt_discovery_with_a_hub_aborts(
    hass: HomeAssistant, soul_entry: MockConfigEntry
) -> None:
    """With the hub set up, new bodies are simply added: no second offer."""
    result = await discover(hass, "soul/terminal/desk-bot/online", "online")
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] in {"single_instance_allowed", "already_configured"}
