"""The config, options and reconfigure flows, against a real OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator
import json
import logging
from typing import Any
from unittest.mock import patch

from homeassistant.config_entries import (
    SOURCE_MQTT,
    SOURCE_REAUTH,
    SOURCE_USER,
    ConfigEntryState,
)
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.soul.const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_EMOTION_TICK_INTERVAL,
    CONF_FOLLOW_UP,
    CONF_INVOKE_TIMEOUT,
    CONF_JOURNAL_DAYS,
    CONF_JOURNAL_MB,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MCP_CONFIG,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_TIMEOUT,
    CONF_NAVIGATOR_SWING,
    CONF_NAVIGATOR_TURNS,
    CONF_TOPIC_PREFIX,
    DEFAULT_INVOKE_TIMEOUT,
    DEFAULT_MEMORY_TIMEOUT,
    DOMAIN,
    SECTION_ADVANCED,
    SECTION_MCP,
    SECTION_MEMORY,
)
from custom_components.soul.core.emotion.dynamics import TICK_MAX
from custom_components.soul.core.llm import MAX_COMPLETION_BYTES
from devtools.broker import free_port
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI

from .test_terminals import T, announce

pytestmark = pytest.mark.usefixtures("mqtt_mock")
# What the options form fills in for the fields left alone.
MEMORY_FORM = {
    CONF_EMBEDDING_MODEL: "text-embedding-3-small",
    CONF_EMBEDDING_DIMS: 1536,
    CONF_MEMORY_TIMEOUT: 5.0,
}
ADVANCED_FORM = {
    CONF_INVOKE_TIMEOUT: 8.0,
    CONF_EMOTION_TICK_INTERVAL: 3.0,
    CONF_FOLLOW_UP: False,
    CONF_MAX_TOOL_ROUNDS: 3,
    CONF_JOURNAL_DAYS: 30,
    CONF_JOURNAL_MB: 100,
    CONF_NAVIGATOR_TURNS: 5,
    CONF_NAVIGATOR_SWING: 0.5,
}


def endpoint(server: FakeOpenAI, api_key: str = "") -> dict[str, Any]:
    """The entry's data for the fake server."""
    data = {CONF_LLM_BASE_URL: server.base_url, CONF_LLM_MODEL: DEFAULT_MODEL}
    if api_key:
        data[CONF_LLM_API_KEY] = api_key
    return data


def llm_input(server: FakeOpenAI, api_key: str = "", **extra: Any) -> dict[str, Any]:
    """The first setup's form pointing Soul at the fake server."""
    return {CONF_TOPIC_PREFIX: "soul", **endpoint(server, api_key), **extra}


def options_input(
    prefix: str = "soul",
    memory: dict[str, Any] | None = None,
    advanced: dict[str, Any] | None = None,
    mcp: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The options form: the prefix and its three sections."""
    return {
        CONF_TOPIC_PREFIX: prefix,
        SECTION_MEMORY: {**MEMORY_FORM, **(memory or {})},
        SECTION_MCP: mcp or {},
        SECTION_ADVANCED: {**ADVANCED_FORM, **(advanced or {})},
    }


@pytest.fixture(autouse=True)
async def unload_soul(hass: HomeAssistant) -> AsyncIterator[None]:
    """Unload the entries a test created, so no MQTT timer outlives it."""
    yield
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry.state is ConfigEntryState.LOADED:
            await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()


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
    assert entry.options == {CONF_TOPIC_PREFIX: "home/soul"}  # the rest: defaults
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "home/soul"
    assert entry.runtime_data.llm is None
    # Without an LLM, memory defaults to off: no "Disconnected" memory sensor.
    assert entry.runtime_data.memory is None
    assert hass.states.get("binary_sensor.soul_memory") is None


async def test_memory_settings_are_checked(
    hass: HomeAssistant, init_integration: MockConfigEntry, socket_enabled: None
) -> None:
    """The memory section of the options is checked field by field."""
    entry = init_integration
    result = await hass.config_entries.options.async_init(entry.entry_id)
    flow_id = result["flow_id"]
    for memory, errors in (
        (
            {CONF_MEMORY_BACKEND: "mem0_embedded"},
            {CONF_MEMORY_BACKEND: "memory_needs_llm"},
        ),
        ({CONF_MEMORY_BACKEND: "mem0_server"}, {CONF_MEM0_URL: "mem0_url_required"}),
        (
            {CONF_MEMORY_BACKEND: "mem0_server", CONF_MEM0_URL: "not a url"},
            {CONF_MEM0_URL: "invalid_url"},
        ),
        (
            {
                CONF_MEMORY_BACKEND: "mem0_server",
                CONF_MEM0_URL: "http://127.0.0.1:9",
                CONF_MEM0_API_KEY: "clé",
            },
            {CONF_MEM0_API_KEY: "invalid_api_key"},
        ),
    ):
        result = await hass.config_entries.options.async_configure(
            flow_id, options_input(memory=memory)
        )
        assert result["errors"] == errors
    result = await hass.config_entries.options.async_configure(
        flow_id,
        options_input(
            memory={
                CONF_MEMORY_BACKEND: "mem0_server",
                CONF_MEM0_URL: "http://127.0.0.1:9",
            }
        ),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done(wait_background_tasks=True)
    # Stored flat; the server is unreachable: memory exists but is not ready.
    assert entry.options[CONF_MEM0_URL] == "http://127.0.0.1:9"
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
    # The endpoint is the entry's data; the options hold behaviour.
    assert result["result"].data == endpoint(fake_llm, api_key="sk-right")
    assert result["result"].options == {CONF_TOPIC_PREFIX: "soul"}
    # The flow checked it, and so did the setup (the key still works).
    assert [r["path"] for r in fake_llm.requests] == ["/v1/models"] * 2
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
    assert [r["path"] for r in fake_llm.requests][:2] == [
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


async def test_an_endpoint_error_is_read_within_bounds(
    hass: HomeAssistant, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Soul's model client reads an answer within a completion's bound.

    Home Assistant's shared client read a 47 MB error whole (850 MB; the
    openai client parsed it on the loop).
    """
    fake_llm.models = None
    fake_llm.fail(500, "x" * (MAX_COMPLETION_BYTES + 10))
    caplog.set_level(logging.DEBUG, "custom_components.soul")
    flow_id = await start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, llm_input(fake_llm)
    )
    assert result["errors"] == {"base": "cannot_connect"}
    assert f"larger than {MAX_COMPLETION_BYTES} bytes" in caplog.text


@pytest.mark.parametrize(
    ("user_input", "errors"),
    [
        ({CONF_TOPIC_PREFIX: "soul/+/x"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        ({CONF_TOPIC_PREFIX: "/"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        ({CONF_TOPIC_PREFIX: "$SYS"}, {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}),
        ({CONF_TOPIC_PREFIX: "soul\ud800"}, {CONF_TOPIC_PREFIX: "invalid_text"}),
        ({CONF_TOPIC_PREFIX: "so\u202eul"}, {CONF_TOPIC_PREFIX: "invalid_text"}),
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
        (
            {
                CONF_TOPIC_PREFIX: "soul",
                CONF_LLM_BASE_URL: "http://127.0.0.1:9/v1",
                CONF_LLM_MODEL: "gpt\x1b[2J",
            },
            {CONF_LLM_MODEL: "invalid_text"},
        ),
        *(
            (
                {
                    CONF_TOPIC_PREFIX: "soul",
                    CONF_LLM_BASE_URL: "http://127.0.0.1:9/v1",
                    CONF_LLM_MODEL: "m",
                    CONF_LLM_API_KEY: key,
                },
                {CONF_LLM_API_KEY: "invalid_api_key"},
            )
            # A black-box run: a traceback in the log, and "unknown" shown.
            for key in ("ключ", "clé", "k😀", "sk-1\u00a02")
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
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Options: the prefix, then the folded memory, MCP and advanced sections."""
    entry = init_integration
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "init"
    fields = {str(key): value for key, value in result["data_schema"].schema.items()}
    assert set(fields) == {
        CONF_TOPIC_PREFIX, SECTION_MEMORY, SECTION_MCP, SECTION_ADVANCED
    }  # fmt: skip
    assert fields[SECTION_MEMORY].options == {"collapsed": True}
    assert fields[SECTION_MCP].options == {"collapsed": True}
    assert fields[SECTION_ADVANCED].options == {"collapsed": True}
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        options_input("robots", advanced={CONF_INVOKE_TIMEOUT: 3}),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options == {
        CONF_TOPIC_PREFIX: "robots",
        **MEMORY_FORM,
        **ADVANCED_FORM,
        CONF_INVOKE_TIMEOUT: 3.0,
    }
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "robots"
    assert entry.runtime_data.invoker.timeout == 3.0
    # The form shows stored options in their sections again.
    result = await hass.config_entries.options.async_init(entry.entry_id)
    schema = result["data_schema"].schema
    suggested = {
        str(key): (key.description or {}).get("suggested_value") for key in schema
    }
    assert suggested[CONF_TOPIC_PREFIX] == "robots"
    advanced = next(v for k, v in schema.items() if str(k) == SECTION_ADVANCED)
    inner = {
        str(key): (key.description or {}).get("suggested_value")
        for key in advanced.schema.schema
    }
    assert inner[CONF_INVOKE_TIMEOUT] == 3.0


@pytest.mark.parametrize("prefix", ["soul\ud800", "so\u202eul", "so\nul", "so\x1bul"])
async def test_options_refuse_a_prefix_that_is_not_a_clean_line(
    hass: HomeAssistant, init_integration: MockConfigEntry, prefix: str
) -> None:
    """The options flow stored a lone surrogate (a fuzz of the stored options).

    Home Assistant could then write no configuration entry (its encoder
    refuses lone surrogates), and the reload's subscribe raised in its MQTT
    client.
    """
    entry = init_integration
    before = dict(entry.options)
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], options_input(prefix)
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_TOPIC_PREFIX: "invalid_topic_prefix"}
    assert entry.options == before


async def test_options_show_a_stored_mcp_config_that_does_not_parse(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Shown as no servers, saving the form unchanged deleted every server.

    (A fuzz of the stored entries: one unknown key made the stored servers
    unusable.) The form shows what is stored, and saving it says what is wrong.
    """
    entry = init_integration
    stored = {
        "mcpServers": {
            "home": {"url": "http://127.0.0.1:9/mcp"},
            "odd": {"url": "http://127.0.0.1:9/mcp", "colour": "blue"},
        }
    }
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_MCP_CONFIG: stored}
    )
    await hass.async_block_till_done()
    result = await hass.config_entries.options.async_init(entry.entry_id)
    mcp = next(
        v for k, v in result["data_schema"].schema.items() if str(k) == SECTION_MCP
    )
    [field] = mcp.schema.schema
    shown = (field.description or {}).get("suggested_value")
    assert json.loads(shown) == stored
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], options_input(mcp={CONF_MCP_CONFIG: shown})
    )
    assert result["errors"] == {CONF_MCP_CONFIG: "invalid_mcp_config"}
    assert entry.options[CONF_MCP_CONFIG] == stored


async def test_options_show_damaged_numbers_as_soul_reads_them(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """A stored number that is no number, or out of range, shows as Soul uses it.

    (A fuzz of the stored options: the form was filled with "x" and 1e9.)
    """
    entry = init_integration
    hass.config_entries.async_update_entry(
        entry,
        options={
            **entry.options,
            CONF_INVOKE_TIMEOUT: "x",
            CONF_EMOTION_TICK_INTERVAL: 1e9,
            CONF_MEMORY_TIMEOUT: None,
        },
    )
    await hass.async_block_till_done()
    result = await hass.config_entries.options.async_init(entry.entry_id)
    schema = result["data_schema"].schema
    shown: dict[str, Any] = {}
    for section in (SECTION_MEMORY, SECTION_ADVANCED):
        inner = next(v for k, v in schema.items() if str(k) == section)
        shown |= {
            str(key): (key.description or {}).get("suggested_value")
            for key in inner.schema.schema
        }
    assert shown[CONF_INVOKE_TIMEOUT] == DEFAULT_INVOKE_TIMEOUT
    assert shown[CONF_EMOTION_TICK_INTERVAL] == TICK_MAX
    assert shown[CONF_MEMORY_TIMEOUT] == DEFAULT_MEMORY_TIMEOUT


NUMBERS = (CONF_EMBEDDING_DIMS, CONF_MEMORY_TIMEOUT, *ADVANCED_FORM)


async def test_options_refuse_a_number_that_is_none(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Home Assistant's number field takes "nan" (its range check compares).

    A black-box run got a 500 for each whole-number field; "nan" in a timeout
    was stored (as null), an invoke then never timed out, and after a restart
    Soul did not start.
    """
    entry = init_integration
    before = dict(entry.options)
    numbers = [key for key in NUMBERS if key != CONF_FOLLOW_UP]
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        options_input(
            memory={CONF_EMBEDDING_DIMS: "nan", CONF_MEMORY_TIMEOUT: "NaN"},
            advanced={key: "nan" for key in numbers if key in ADVANCED_FORM},
        ),
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == dict.fromkeys(numbers, "invalid_number")
    assert entry.options == before


async def test_stored_numbers_that_are_none_are_their_defaults(
    hass: HomeAssistant, init_integration: MockConfigEntry, socket_enabled: None
) -> None:
    """Options an older Soul stored as null (its "nan") do not stop the hub."""
    entry = init_integration
    hass.config_entries.async_update_entry(
        entry,
        options={
            **entry.options,
            CONF_MEMORY_BACKEND: "mem0_server",
            CONF_MEM0_URL: "http://127.0.0.1:9",
            **dict.fromkeys(NUMBERS, None),
            CONF_FOLLOW_UP: False,
            CONF_JOURNAL_MB: "1e999",
            CONF_INVOKE_TIMEOUT: float("nan"),
        },
    )
    await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.invoker.timeout == ADVANCED_FORM[CONF_INVOKE_TIMEOUT]
    assert entry.runtime_data.memory is not None  # the server's, unreachable


async def test_reconfigure_changes_the_endpoint(
    hass: HomeAssistant, init_integration: MockConfigEntry, fake_llm: FakeOpenAI
) -> None:
    """Reconfigure checks the new endpoint and reloads; clearing it turns the LLM off."""
    entry = init_integration
    result = await entry.start_reconfigure_flow(hass)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "reconfigure"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {**endpoint(fake_llm), CONF_LLM_BASE_URL: f"http://127.0.0.1:{free_port()}/v1"},
    )
    assert result["errors"] == {"base": "cannot_connect"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], endpoint(fake_llm)
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.data == endpoint(fake_llm)
    assert entry.runtime_data.llm is not None
    # The same endpoint again: nothing changed, the entry reloads all the same.
    before = entry.runtime_data
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], endpoint(fake_llm)
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data is not before
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.data == {}
    assert entry.runtime_data.llm is None


async def test_a_refused_key_starts_reauth(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """Setup with a key the endpoint refuses: ConfigEntryAuthFailed, then reauth."""
    fake_llm.api_key = "sk-new"
    entry = MockConfigEntry(
        domain=DOMAIN,
        data=endpoint(fake_llm, api_key="sk-old"),
        options={CONF_TOPIC_PREFIX: "soul"},
        version=1,
        minor_version=2,
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_ERROR
    await hass.async_block_till_done()
    (flow,) = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert flow["context"]["source"] == SOURCE_REAUTH
    assert flow["step_id"] == "reauth_confirm"
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_LLM_API_KEY: "sk-wrong"}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_LLM_API_KEY: "sk-new"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert entry.data[CONF_LLM_API_KEY] == "sk-new"
    assert entry.state is ConfigEntryState.LOADED


async def test_a_key_refused_during_chat_starts_reauth(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """A turn whose model call gets 401 answers in character and starts reauth."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data=endpoint(fake_llm),
        options={CONF_TOPIC_PREFIX: "soul", CONF_MEMORY_BACKEND: "none"},
        version=1,
        minor_version=2,
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    fake_llm.api_key = "sk-rotated"  # the key was revoked after setup
    announce(hass)
    await hass.async_block_till_done()
    response = await entry.runtime_data.chat.chat(
        {
            "session_id": "s1",
            "terminal_id": T,
            "inputs": [
                {"type": "keyboard_text", "text": "What is the meaning of life?"}
            ],
        }
    )
    assert response["reply"]
    await hass.async_block_till_done()
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == [SOURCE_REAUTH]
    # The loaded entry takes the new key through its update listener.
    before = entry.runtime_data
    result = await hass.config_entries.flow.async_configure(
        flows[0]["flow_id"], {CONF_LLM_API_KEY: "sk-rotated"}
    )
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert entry.data[CONF_LLM_API_KEY] == "sk-rotated"
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data is not before


async def test_old_entries_move_the_endpoint_to_data(
    hass: HomeAssistant, fake_llm: FakeOpenAI
) -> None:
    """1.1 entries kept the endpoint in the options; 1.2 keeps it in the data."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={
            CONF_TOPIC_PREFIX: "soul",
            **endpoint(fake_llm, "k"),
            CONF_MAX_TOOL_ROUNDS: 2,
        },
        version=1,
        minor_version=1,
    )
    fake_llm.api_key = "k"
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.minor_version == 3
    assert entry.data == endpoint(fake_llm, "k")
    assert entry.options == {CONF_TOPIC_PREFIX: "soul", CONF_MAX_TOOL_ROUNDS: 2}
    assert entry.runtime_data.llm is not None


async def test_migration_shows_invisible_characters_in_souls_names(
    hass: HomeAssistant,
) -> None:
    """1.3: an older Soul let bodies name souls with overrides and invisible characters."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        version=1,
        minor_version=2,
        subentries_data=[
            {
                "data": {"name": name, "mbti_type": "ENFP"},
                "subentry_type": "soul",
                "title": name,
                "unique_id": None,
            }
            for name in ("a\u202eb", "fr\u200biendly", "Aria", "ar\u200dia")
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.minor_version == 3
    names = sorted(
        (s.title, s.data["name"], s.data["mbti_type"])
        for s in entry.subentries.values()
    )
    assert names == [
        ("Aria", "Aria", "ENFP"),
        ("ar\u200dia", "ar\u200dia", "ENFP"),  # a joiner words need stays
        ("a\ufffdb", "a\ufffdb", "ENFP"),
        ("fr\ufffdiendly", "fr\ufffdiendly", "ENFP"),
    ]
    assert sorted(s.name for s in entry.runtime_data.souls.souls.values()) == [
        "Aria",
        "ar\u200dia",
        "a\ufffdb",
        "fr\ufffdiendly",
    ]


@pytest.mark.parametrize(
    ("title", "data", "expected"),
    [
        (None, {"name": "Nova"}, "Nova"),
        (["Nova"], {"name": "No\u200bva"}, "No\ufffdva"),
        (5, {}, "5"),  # no name: what the title shows
    ],
)
async def test_migration_gives_a_title_that_is_no_text_the_souls_name(
    hass: HomeAssistant,
    title: Any,
    data: dict[str, Any],
    expected: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A damaged store's title of None became an empty name (a fuzz, 2026-11-29)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        version=1,
        minor_version=2,
        subentries_data=[
            {
                "data": {**data, "mbti_type": "INTP"},
                "subentry_type": "soul",
                "title": title,
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.minor_version == 3
    (subentry,) = entry.subentries.values()
    assert subentry.title == expected
    assert [s.name for s in entry.runtime_data.souls.souls.values()] == [expected]
    assert "was not text" in caplog.text


@pytest.mark.parametrize("version", [0, 2])
async def test_an_entry_no_soul_of_this_version_wrote_is_not_migrated(
    hass: HomeAssistant, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Version 0 was migrated to 0.3 as if it were 1.x; every Soul writes 1."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        version=version,
        minor_version=1,
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.MIGRATION_ERROR
    assert (entry.version, entry.minor_version) == (version, 1)
    if version < 1:  # a newer one: Home Assistant 2026.10 refuses it itself
        assert f"configuration entry of version {version}.1" in caplog.text


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
    # The discovery card's title names the body (flow_title).
    (flow,) = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert flow["context"]["title_placeholders"] == {"terminal": "desk-bot"}
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
