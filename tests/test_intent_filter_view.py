"""POST /api/soul/v1/intents/filter and the last decision of each terminal."""

from __future__ import annotations

import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.diagnostics import async_get_config_entry_diagnostics

from .core.spec_payloads import catalog
from .test_terminals import T, announce

URL = "/api/soul/v1/intents/filter"
DECISION = "sensor.terminal_001_last_intent_decision"
CATALOG = catalog()["intent_catalog"]


async def test_filter_over_http(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    client = await hass_client()
    response = await client.post(
        URL,
        json={
            "command": "开灯，然后点个头",
            "intent_catalog": CATALOG,
            "now": "2026-02-22T17:40:00+08:00",
        },
    )
    assert response.status == 200
    body = await response.json()
    assert body["decision"]["action"] == "execute_intents"
    assert [i["intent_id"] for i in body["intents"]] == [
        "intent_light_control",
        "intent_head_motion",
    ]
    # Without a timezone in the request, Home Assistant's applies.
    assert body["meta"]["timezone"] == hass.config.time_zone


async def test_filter_without_a_config_entry(
    hass: HomeAssistant, mqtt_mock: Any, hass_client: ClientSessionGenerator
) -> None:
    """The view belongs to the integration, not to the entry: it works before setup."""
    assert await async_setup_component(hass, "soul", {})
    client = await hass_client()
    response = await client.post(
        URL, json={"command": "关灯", "intent_catalog": CATALOG}
    )
    assert response.status == 200
    assert (await response.json())["intents"][0]["normalized"]["mode"] == "off"


async def test_filter_needs_authentication(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
) -> None:
    client = await hass_client_no_auth()
    response = await client.post(
        URL, json={"command": "开灯", "intent_catalog": CATALOG}
    )
    assert response.status == 401


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"intent_catalog": CATALOG}, "command is required"),
        ({"command": "   ", "intent_catalog": CATALOG}, "command is required"),
        ({"command": "开灯"}, "intent_catalog is required"),
        ({"command": "开灯", "intent_catalog": []}, "must not be empty"),
        (
            {"command": "开灯", "intent_catalog": [{"id": "a"}, {"id": "a"}]},
            "duplicate intent id 'a'",
        ),
        (
            {"command": "开灯", "intent_catalog": [{"id": "a", "match": {"regex_any": ["(x"]}}]},
            "intent 'a': regex_any: invalid pattern '(x'",
        ),
        ({"command": "开灯", "intent_catalog": CATALOG, "timezone": "Nowhere/City"}, "unknown timezone"),
        ({"command": "开灯", "intent_catalog": CATALOG, "options": {"max_intents": 0}}, "options.max_intents"),
        ({"command": "开灯", "terminal_id": "nobody"}, "unknown terminal 'nobody'"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)  # fmt: skip
async def test_invalid_requests_get_400_with_a_message(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    body: Any,
    message: str,
) -> None:
    client = await hass_client()
    response = await client.post(URL, json=body)
    assert response.status == 400
    assert message in (await response.json())["error"]


async def test_malformed_json_gets_400(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    client = await hass_client()
    response = await client.post(URL, data=b"{not json")
    assert response.status == 400
    assert "not valid JSON" in (await response.json())["error"]
    response = await client.post(URL, data=b"x" * (600 * 1024))
    assert response.status == 413
    assert "larger than" in (await response.json())["error"]
    # A number Home Assistant cannot write back (its slot default, echoed in
    # the answer) was a 500 to any user (a black-box run, 2026-11-29).
    for number, error in (
        (b"18446744073709551616", "an integer outside 64 bits"),
        (b"1e999", "a number too large for a float"),
    ):
        catalog = (
            b'[{"id": "a", "match": {"keywords_any": ["x"]},'
            b' "slots": [{"name": "n", "default": ' + number + b"}]}]"
        )
        response = await client.post(
            URL, data=b'{"command": "x", "intent_catalog": ' + catalog + b"}"
        )
        assert response.status == 400
        assert error in (await response.json())["error"]


async def test_hostile_pattern_is_bounded_and_reported(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    hostile = [{"id": "evil", "match": {"regex_any": ["^(a|aa)+$"]}}, *CATALOG]
    client = await hass_client()
    response = await client.post(
        URL, json={"command": "a" * 64 + "b", "intent_catalog": hostile}
    )
    assert response.status == 200
    warnings = (await response.json())["meta"]["warnings"]
    assert warnings[0]["intent_id"] == "evil"
    assert warnings[0]["pattern"] == "^(a|aa)+$"


async def test_terminal_catalog_and_last_decision(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    mqtt_mock: Any,
    hass_client: ClientSessionGenerator,
    entity_registry: er.EntityRegistry,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    # Enabled by default: it changes once per command, not on a timer.
    assert hass.states.get(DECISION).state == "unknown"
    client = await hass_client()
    response = await client.post(URL, json={"command": "关灯", "terminal_id": T})
    assert response.status == 200
    assert (await response.json())["intents"][0]["intent_id"] == "intent_light_control"
    await hass.async_block_till_done()
    state = hass.states.get(DECISION)
    assert state.state == "execute_intents"
    assert state.attributes["intent_ids"] == ["intent_light_control"]
    assert state.attributes["reason"] == "matched_catalog_intents"
    assert "command" not in state.attributes  # never the user's words
    entry = entity_registry.async_get(DECISION)
    assert entry.entity_category == "diagnostic"

    response = await client.post(URL, json={"command": "唉，累死了", "terminal_id": T})
    await hass.async_block_till_done()
    assert hass.states.get(DECISION).state == "no_action"

    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    decision = diagnostics["terminals"][0]["last_intent_decision"]
    assert decision["action"] == "no_action"
    assert decision["trigger_intent_id"] == "sys.no_action"


async def test_invalid_catalog_from_a_body_is_dropped_with_a_log(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    bad = catalog(catalog_version=99)
    bad["intent_catalog"][0]["slots"][1]["regex"] = "(unclosed"
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/intent_catalog", json.dumps(bad))
    await hass.async_block_till_done()
    assert "invalid intent_catalog" in caplog.text
    assert "(unclosed" in caplog.text
    # The previous, valid catalog is still in use.
    client = await hass_client()
    response = await client.post(URL, json={"command": "开灯", "terminal_id": T})
    assert (await response.json())["decision"]["action"] == "execute_intents"
