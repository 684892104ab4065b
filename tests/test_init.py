"""Setting the hub up and down, repairs and diagnostics."""

from __future__ import annotations

from http import HTTPStatus
import json
from typing import Any

from homeassistant.auth.const import GROUP_ID_USER
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    CLIENT_ID,
    MockConfigEntry,
    MockUser,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.const import (
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEMORY_BACKEND,
    CONF_TOPIC_PREFIX,
    DOMAIN,
)
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI

from .core.spec_payloads import skills


async def test_setup_and_unload(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """The entry loads with its runtime objects and unloads cleanly."""
    entry = init_integration
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "soul"

    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.NOT_LOADED


async def test_retry_and_repair_without_mqtt(
    hass: HomeAssistant, soul_entry: MockConfigEntry
) -> None:
    """Without MQTT the entry waits (setup retry) and Repairs says what to do."""
    assert not await hass.config_entries.async_setup(soul_entry.entry_id)
    assert soul_entry.state is ConfigEntryState.SETUP_RETRY
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "mqtt_not_configured")
    assert issue is not None
    assert issue.severity is ir.IssueSeverity.ERROR
    assert issue.translation_key == "mqtt_not_configured"


async def test_repair_cleared_when_mqtt_returns(
    hass: HomeAssistant, soul_entry: MockConfigEntry, mqtt_mock: Any
) -> None:
    """A stale MQTT repair issue goes away once Soul sets up with MQTT."""
    ir.async_create_issue(
        hass,
        DOMAIN,
        "mqtt_not_configured",
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key="mqtt_not_configured",
    )
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    assert ir.async_get(hass).async_get_issue(DOMAIN, "mqtt_not_configured") is None


async def _entry_with_diagnostics(
    hass: HomeAssistant, endpoint: dict[str, str]
) -> MockConfigEntry:
    """Set up a hub entry with the model ``endpoint`` (options), and diagnostics."""
    options = {
        CONF_TOPIC_PREFIX: "soul",
        CONF_MEMORY_BACKEND: "none",
        CONF_LLM_MODEL: DEFAULT_MODEL,
        **endpoint,
    }
    entry = MockConfigEntry(domain=DOMAIN, data={}, options=options)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert await async_setup_component(hass, "diagnostics", {})
    return entry


async def test_diagnostics_redact_a_password_in_the_endpoint(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    mqtt_mock: Any,
    fake_llm: FakeOpenAI,
) -> None:
    """A user and password in the model's address stayed in diagnostics (black box)."""
    url = (
        fake_llm.base_url.replace("http://", "http://bob:pw-secret@") + "?key=q-secret"
    )
    entry = await _entry_with_diagnostics(hass, {CONF_LLM_BASE_URL: url})
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "pw-secret" not in str(diagnostics)
    assert "q-secret" not in str(diagnostics)
    hidden = fake_llm.base_url.replace("http://", "http://**REDACTED**@")
    assert diagnostics["data"][CONF_LLM_BASE_URL] == hidden + "?**REDACTED**"
    assert diagnostics["llm"]["base_url"] == hidden + "?**REDACTED**"


@pytest.mark.parametrize(
    "prefix",
    [
        "a/#",
        pytest.param("x" * 70_000, id="70000 characters"),
        None,
        pytest.param("so\u202eul", id="an override"),
    ],
)
async def test_a_damaged_topic_prefix_stops_soul_and_nothing_else(
    hass: HomeAssistant, mqtt_mock: Any, prefix: Any
) -> None:
    """A damaged stored prefix: Soul does not start, and says why.

    "a/#" made Home Assistant's MQTT client drop other integrations'
    subscriptions of the same batch (a fuzz of the stored options).
    """
    entry = MockConfigEntry(domain=DOMAIN, data={}, options={CONF_TOPIC_PREFIX: prefix})
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_ERROR
    assert "topic prefix" in (entry.reason or "")
    # Of Soul's topics, only MQTT's discovery (manifest.json) subscribed.
    subscribed = {call.args[0] for call in mqtt_mock.async_subscribe.call_args_list}
    assert {t for t in subscribed if "/terminal/" in t} <= {"soul/terminal/+/online"}
    # As the reason says, setting it again in the options starts Soul.
    result = await hass.config_entries.options.async_init(entry.entry_id)
    form = {
        CONF_TOPIC_PREFIX: "soul",
        "memory": {CONF_MEMORY_BACKEND: "none"},
        "mcp": {},
        "advanced": {},
    }
    result = await hass.config_entries.options.async_configure(result["flow_id"], form)
    assert result["type"] == "create_entry", result
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.topic_prefix == "soul"


@pytest.mark.parametrize(
    "endpoint",
    [
        {CONF_LLM_BASE_URL: 5},
        {CONF_LLM_BASE_URL: ["http://x"]},
        {CONF_LLM_BASE_URL: "http://a\x00b/", CONF_LLM_MODEL: "m"},
        pytest.param({CONF_LLM_BASE_URL: "http://" + "a" * 10**6}, id="a megabyte"),
        {CONF_LLM_BASE_URL: "not a url", CONF_LLM_MODEL: "m"},
        {CONF_LLM_BASE_URL: "http://127.0.0.1:9/v1", CONF_LLM_MODEL: ["m"]},
    ],
)
async def test_a_damaged_stored_endpoint_stops_soul_and_says_why(
    hass: HomeAssistant, mqtt_mock: Any, endpoint: dict[str, Any]
) -> None:
    """A stored address that is a number, a list or holds a NUL: a traceback at setup.

    (A fuzz of the stored entries.) The reconfigure flow mends it.
    """
    entry = MockConfigEntry(
        domain=DOMAIN,
        data=endpoint,
        options={CONF_TOPIC_PREFIX: "soul"},
        minor_version=3,
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_ERROR
    assert "Reconfigure Soul" in (entry.reason or "")


async def test_a_stored_key_no_header_takes_asks_for_a_new_one(
    hass: HomeAssistant, mqtt_mock: Any, fake_llm: FakeOpenAI
) -> None:
    """An older Soul stored "clé": the HTTP client raised at every start."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={
            CONF_LLM_BASE_URL: fake_llm.base_url,
            CONF_LLM_MODEL: DEFAULT_MODEL,
            CONF_LLM_API_KEY: "clé",
        },
        options={CONF_TOPIC_PREFIX: "soul"},
        minor_version=3,
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    [flow] = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert flow["context"]["source"] == "reauth"


async def test_diagnostics_are_for_administrators(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    hass_read_only_user: MockUser,
    mqtt_mock: Any,
    fake_llm: FakeOpenAI,
) -> None:
    """Home Assistant serves the download to any signed-in user; Soul's, to admins."""
    entry = await _entry_with_diagnostics(hass, {CONF_LLM_BASE_URL: fake_llm.base_url})
    url = f"/api/diagnostics/config_entry/{entry.entry_id}"
    admin = await hass_client()
    assert (await admin.get(url)).status == HTTPStatus.OK
    user = await hass.auth.async_create_user("Kid", group_ids=[GROUP_ID_USER])
    for who in (user, hass_read_only_user):
        refresh = await hass.auth.async_create_refresh_token(who, CLIENT_ID)
        client = await hass_client(hass.auth.async_create_access_token(refresh))
        response = await client.get(url)
        assert response.status == HTTPStatus.UNAUTHORIZED
        assert "soul" not in (await response.text()).lower()


async def test_diagnostics_redact_the_api_key(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    mqtt_mock: Any,
    fake_llm: FakeOpenAI,
) -> None:
    """Diagnostics show the setup but never the API key."""
    entry = await _entry_with_diagnostics(
        hass,
        {CONF_LLM_BASE_URL: fake_llm.base_url, CONF_LLM_API_KEY: "sk-very-secret"},
    )
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "sk-very-secret" not in str(diagnostics)
    assert diagnostics["data"][CONF_LLM_API_KEY] == "**REDACTED**"
    assert diagnostics["llm"] == {
        "base_url": fake_llm.base_url,
        "model": DEFAULT_MODEL,
        "api_key_set": True,
    }
    assert diagnostics["topic_prefix"] == "soul"
    assert diagnostics["terminals"] == []

    async_fire_mqtt_message(hass, "soul/terminal/t-9/online", "online")
    async_fire_mqtt_message(
        hass, "soul/terminal/t-9/skills", json.dumps(skills(terminal_id="t-9"))
    )
    await hass.async_block_till_done()
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert diagnostics["terminals"] == [
        {
            "terminal_id": "t-9",
            "online": True,
            "stale": False,
            "last_heartbeat": None,
            "skill_version": 3,
            "skills": ["control_light", "create_alarm", "set_head_motion"],
            "rejected_skills": {},
            "catalog_version": None,
            "catalog_intents": 0,
            "last_intent_decision": None,
        }
    ]


def test_the_endpoint_is_the_datas_only() -> None:
    """One left in the options started embedded memory against it (a fuzz)."""
    from custom_components.soul.helpers import entry_settings

    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_LLM_BASE_URL: "http://new.example/v1", CONF_LLM_MODEL: "new"},
        options={
            CONF_LLM_BASE_URL: "http://old.example/v1",
            CONF_LLM_API_KEY: "old",
            CONF_MEMORY_BACKEND: "mem0_embedded",
        },
        minor_version=3,
    )
    assert entry_settings(entry) == {
        CONF_LLM_BASE_URL: "http://new.example/v1",
        CONF_LLM_MODEL: "new",
        CONF_MEMORY_BACKEND: "mem0_embedded",
    }


@pytest.mark.parametrize("key", [5, "a\nb", "clé"])
async def test_a_mem0_key_no_header_takes_leaves_memory_off(
    hass: HomeAssistant, mqtt_mock: Any, key: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored key of 5 raised in every memory check, every minute (a review)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "mem0_server",
            "mem0_url": "http://127.0.0.1:9",
            "mem0_api_key": key,
        },
        minor_version=3,
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.runtime_data.memory is None
    assert "memory is off" in caplog.text


async def test_a_damaged_navigator_model_leaves_the_chats_model_thinking(
    hass: HomeAssistant,
    mqtt_mock: Any,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stored S-brain model that was a list went into every request (a review)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_LLM_BASE_URL: fake_llm.base_url, CONF_LLM_MODEL: DEFAULT_MODEL},
        options={
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "none",
            "navigator_model": ["gpt"],
        },
        minor_version=3,
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert "S-brain's model in Soul's options is not a name" in caplog.text
