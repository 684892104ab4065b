"""Forms, actions and entities match their texts at run time.

The flows' forms against their steps' texts, the registered actions against
services.yaml, the entities Soul registers against their translations; the
rules are in ``tests/hassfest/runtime.py``.
"""

from __future__ import annotations

import json

from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import MqttMockHAClient

from custom_components.soul.const import (
    CONF_MBTI_TYPE,
    CONF_MCP_CONFIG,
    CONF_NAME,
    DOMAIN,
)
from custom_components.soul.services import async_setup_services
from custom_components.soul.soul_flow import _soul_schema

from .core.spec_payloads import catalog, skills
from .hassfest.common import dig, english, services_yaml
from .hassfest.runtime import (
    FORMS,
    action_schema_problems,
    entity_problems,
    form_problems,
)


@pytest.mark.parametrize("step", FORMS)
def test_form_matches_its_texts(step: str) -> None:
    problems = form_problems(step, FORMS[step], english())
    assert not problems, "en.json:\n" + "\n".join(problems)


def test_every_step_with_data_has_a_form_here() -> None:
    """A new form must join FORMS (or the soul test) to be compared."""
    strings = english()
    with_data = {
        f"{kind}.step.{step}"
        for kind in ("config", "options")
        for step, texts in (dig(strings, f"{kind}.step") or {}).items()
        if "data" in texts or "sections" in texts
    }
    assert with_data == set(FORMS)


async def test_soul_form_matches_its_texts(hass: HomeAssistant) -> None:
    # With MCP servers configured the form offers them too.
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Soul",
        data={},
        options={CONF_MCP_CONFIG: {"mcpServers": {"files": {"command": "npx"}}}},
    )
    entry.add_to_hass(hass)
    schema = _soul_schema(hass, entry)
    strings = english()
    problems = [
        problem
        for step in ("user", "reconfigure")
        for problem in form_problems(
            f"config_subentries.soul.step.{step}", schema, strings
        )
    ]
    assert not problems, "en.json:\n" + "\n".join(problems)


async def test_actions_match_services_yaml(hass: HomeAssistant) -> None:
    """Registered actions, their schemas' fields and select options match the YAML."""
    async_setup_services(hass)
    registered = hass.services.async_services_for_domain(DOMAIN)
    services = services_yaml()
    assert set(registered) == set(services)
    problems = action_schema_problems(registered, services)
    assert not problems, "services.yaml:\n" + "\n".join(problems)


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_registered_entities_are_translated(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, entity_registry: er.EntityRegistry
) -> None:
    """Every entity of a hub with a soul and a body has its name and states translated."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Soul",
        data={},
        options={"topic_prefix": "soul"},
        subentries_data=[
            {
                "data": {CONF_NAME: "Aria", CONF_MBTI_TYPE: "ENFP"},
                "subentry_type": "soul",
                "title": "Aria",
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    base = "soul/terminal/terminal-001"
    async_fire_mqtt_message(hass, f"{base}/online", "online")
    async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(skills()))
    async_fire_mqtt_message(hass, f"{base}/intent_catalog", json.dumps(catalog()))
    await hass.async_block_till_done()

    entries = er.async_entries_for_config_entry(entity_registry, entry.entry_id)
    translated = [e for e in entries if e.translation_key]
    # Hub (Star), soul (PAD, mood) and body (connectivity, event) entities.
    assert {e.domain for e in translated} >= {
        "sensor",
        "event",
        "binary_sensor",
        "select",
    }
    problems = entity_problems(translated, english())
    assert not problems, "en.json:\n" + "\n".join(problems)
