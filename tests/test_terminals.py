"""Terminals in Home Assistant, driven through the mocked MQTT client."""

from __future__ import annotations

from datetime import timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.device_automation import DeviceAutomationType
from homeassistant.components.light import ATTR_HS_COLOR
from homeassistant.const import STATE_OFF, STATE_ON, STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
    async_get_device_automations,
)
from pytest_homeassistant_custom_component.typing import MqttMockHAClient
import voluptuous as vol

from custom_components.soul.const import DOMAIN
from custom_components.soul.core.protocol import parse_skills
from custom_components.soul.device_action import fields_schema
from custom_components.soul.helpers import find_device, find_terminal_id

from .core.spec_payloads import catalog, skills

T = "terminal-001"
LIGHT = "light.terminal_001_control_light"
CONNECTIVITY = "binary_sensor.terminal_001_connectivity"


def announce(hass: HomeAssistant, terminal_id: str = T, *, retain: bool = True) -> None:
    """Publish a body's connect sequence.

    ``retain``: as stored messages arrive on subscribing; live ones arrive without
    the flag (Home Assistant hands each subscription a retained topic only once).
    """
    base = f"soul/terminal/{terminal_id}"
    async_fire_mqtt_message(hass, f"{base}/online", "online", retain=retain)
    payload = skills(terminal_id=terminal_id, model="Desk bot", firmware="1.2")
    async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(payload), retain=retain)
    async_fire_mqtt_message(
        hass,
        f"{base}/intent_catalog",
        json.dumps(catalog(terminal_id=terminal_id)),
        retain=retain,
    )
    async_fire_mqtt_message(hass, f"{base}/heartbeat", "1")


def soul_entry_id(hass: HomeAssistant) -> str:
    """Return the id of the Soul hub entry."""
    return hass.config_entries.async_entries(DOMAIN)[0].entry_id


class Body:
    """Answers invocations published through the mocked client."""

    def __init__(self, hass: HomeAssistant, mqtt_mock: MqttMockHAClient) -> None:
        self.hass = hass
        self.mqtt_mock = mqtt_mock
        self.answer: dict[str, Any] | None = {"ok": True, "output": "done"}
        self.requests: list[dict[str, Any]] = []
        mqtt_mock.async_publish.side_effect = self._publish

    async def _publish(
        self, topic: str, payload: str, qos: int, retain: bool, **_: Any
    ) -> None:
        if "/invoke/" not in topic:
            return
        request = json.loads(payload)
        self.requests.append(request)
        assert (qos, retain) == (1, False)
        if self.answer is not None:
            result = {"request_id": request["request_id"], **self.answer}
            result_topic = topic.replace("/invoke/", "/result/")
            self.hass.loop.call_soon(
                async_fire_mqtt_message, self.hass, result_topic, json.dumps(result)
            )


@pytest.fixture
async def body(
    hass: HomeAssistant, init_integration: MockConfigEntry, mqtt_mock: MqttMockHAClient
) -> Body:
    body = Body(hass, mqtt_mock)
    announce(hass)
    await hass.async_block_till_done()
    return body


async def test_device_and_entities(
    hass: HomeAssistant,
    body: Body,
    device_registry: dr.DeviceRegistry,
    entity_registry: er.EntityRegistry,
) -> None:
    device = find_device(hass, soul_entry_id(hass), T)
    assert device is not None
    assert (device.name, device.model, device.sw_version) == (T, "Desk bot", "1.2")
    entities = {
        e.entity_id
        for e in er.async_entries_for_device(
            entity_registry, device.id, include_disabled_entities=True
        )
    }
    assert entities == {
        CONNECTIVITY,
        LIGHT,
        "button.terminal_001_create_alarm",
        "select.terminal_001_set_head_motion",
        "sensor.terminal_001_skill_version",
        "sensor.terminal_001_intent_catalog_version",
        "sensor.terminal_001_last_heartbeat",
        "sensor.terminal_001_last_intent_decision",
        "event.terminal_001_user_emotion",
        "select.terminal_001_soul",
    }
    assert hass.states.get(CONNECTIVITY).state == STATE_ON
    # Versions and heartbeats are opt-in diagnostics (hundreds of bodies).
    for opt_in in (
        "sensor.terminal_001_skill_version",
        "sensor.terminal_001_intent_catalog_version",
        "sensor.terminal_001_last_heartbeat",
    ):
        entry = entity_registry.async_get(opt_in)
        assert entry is not None
        assert entry.disabled_by is er.RegistryEntryDisabler.INTEGRATION
        assert hass.states.get(opt_in) is None
    select = hass.states.get("select.terminal_001_set_head_motion")
    assert select.attributes["options"] == ["点头", "摇头"]
    light = hass.states.get(LIGHT)
    assert light.attributes["supported_color_modes"] == ["hs"]


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_version_sensors_once_enabled(hass: HomeAssistant, body: Body) -> None:
    assert hass.states.get("sensor.terminal_001_skill_version").state == "3"
    assert hass.states.get("sensor.terminal_001_intent_catalog_version").state == "12"


async def test_light_reaches_the_body(hass: HomeAssistant, body: Body) -> None:
    await hass.services.async_call(
        "light", "turn_on", {"entity_id": LIGHT}, blocking=True
    )
    assert hass.states.get(LIGHT).state == STATE_ON
    await hass.services.async_call(
        "light",
        "turn_on",
        {"entity_id": LIGHT, ATTR_HS_COLOR: (120, 100)},
        blocking=True,
    )
    await hass.services.async_call(
        "light", "turn_off", {"entity_id": LIGHT}, blocking=True
    )
    assert hass.states.get(LIGHT).state == STATE_OFF
    assert [r["arguments"] for r in body.requests] == [
        {"mode": "on"},
        {"mode": "set_color", "color": "green"},
        {"mode": "off"},
    ]
    assert {r["skill"] for r in body.requests} == {"control_light"}


async def test_button_and_select(hass: HomeAssistant, body: Body) -> None:
    await hass.services.async_call(
        "button",
        "press",
        {"entity_id": "button.terminal_001_create_alarm"},
        blocking=True,
    )
    await hass.services.async_call(
        "select",
        "select_option",
        {"entity_id": "select.terminal_001_set_head_motion", "option": "摇头"},
        blocking=True,
    )
    assert [(r["skill"], r["arguments"]) for r in body.requests] == [
        ("create_alarm", {}),
        ("set_head_motion", {"action": "摇头"}),
    ]
    assert hass.states.get("select.terminal_001_set_head_motion").state == "摇头"
    # An invoke from elsewhere (an action, the model) shows on the select too.
    await hass.services.async_call(
        DOMAIN,
        "invoke_skill",
        {
            "device_id": await device_id(hass),
            "skill": "set_head_motion",
            "arguments": {"action": "点头"},
        },
        blocking=True,
        return_response=True,
    )
    assert hass.states.get("select.terminal_001_set_head_motion").state == "点头"


async def test_failed_skill_raises(hass: HomeAssistant, body: Body) -> None:
    body.answer = {"ok": False, "error": "bulb broken"}
    with pytest.raises(HomeAssistantError, match="bulb broken") as caught:
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": LIGHT}, blocking=True
        )
    assert caught.value.translation_key == "skill_failed"


async def device_id(hass: HomeAssistant, terminal_id: str = T) -> str:
    device = find_device(hass, soul_entry_id(hass), terminal_id)
    assert device is not None
    return device.id


async def test_invoke_skill_action(hass: HomeAssistant, body: Body) -> None:
    body.answer = {"ok": True, "output": "alarm set"}
    response = await hass.services.async_call(
        DOMAIN,
        "invoke_skill",
        {"skill": "create_alarm", "arguments": {"trigger_in_seconds": 600}},
        target={"device_id": await device_id(hass)},
        blocking=True,
        return_response=True,
    )
    assert response["ok"] is True
    assert response["output"] == "alarm set"
    assert response["terminal_id"] == T
    assert body.requests[0]["arguments"] == {"trigger_in_seconds": 600}

    body.answer = {"ok": False, "error": "too many alarms"}
    response = await hass.services.async_call(
        DOMAIN,
        "invoke_skill",
        {"skill": "create_alarm"},
        target={"device_id": await device_id(hass)},
        blocking=True,
        return_response=True,
    )
    assert (response["ok"], response["error"]) == (False, "too many alarms")


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"skill": "fly"}, "unknown_skill"),
        (
            {"skill": "control_light", "arguments": {"mode": "blink"}},
            "invalid_arguments",
        ),
        ({"skill": "control_light", "arguments": {}}, "invalid_arguments"),
    ],
)
async def test_invoke_skill_refusals(
    hass: HomeAssistant, body: Body, data: dict, key: str
) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        await hass.services.async_call(
            DOMAIN, "invoke_skill", data, target={"device_id": await device_id(hass)},
            blocking=True, return_response=True,
        )  # fmt: skip
    assert caught.value.translation_key == key
    assert body.requests == []


async def test_invoke_skill_counts_device_ids_before_reading_them(
    hass: HomeAssistant, body: Body
) -> None:
    """150,000 ids held the loop for 100 ms while each was checked (black box)."""
    with pytest.raises(vol.Invalid, match="length of value must be at most 16"):
        await hass.services.async_call(
            DOMAIN, "invoke_skill",
            {"skill": "create_alarm", "device_id": ["x"] * 17},
            blocking=True, return_response=True,
        )  # fmt: skip
    assert body.requests == []


async def test_invoke_skill_offline_and_timeout(
    hass: HomeAssistant, body: Body
) -> None:
    target = {"device_id": await device_id(hass)}
    body.answer = None
    runtime = hass.config_entries.async_entries(DOMAIN)[0].runtime_data
    runtime.invoker.timeout = 0.05
    with pytest.raises(HomeAssistantError) as caught:
        await hass.services.async_call(
            DOMAIN, "invoke_skill", {"skill": "create_alarm"}, target=target,
            blocking=True, return_response=True,
        )  # fmt: skip
    assert caught.value.translation_key == "timeout"
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    assert hass.states.get(LIGHT).state == STATE_UNAVAILABLE
    assert hass.states.get(CONNECTIVITY).state == STATE_OFF
    with pytest.raises(ServiceValidationError) as caught:
        await hass.services.async_call(
            DOMAIN, "invoke_skill", {"skill": "create_alarm"}, target=target,
            blocking=True, return_response=True,
        )  # fmt: skip
    assert caught.value.translation_key == "terminal_offline"


async def test_invoke_skill_needs_a_soul_device(
    hass: HomeAssistant, body: Body, device_registry: dr.DeviceRegistry
) -> None:
    other = MockConfigEntry(domain="other")
    other.add_to_hass(hass)
    foreign = device_registry.async_get_or_create(
        config_entry_id=other.entry_id, identifiers={("other", "x")}
    )
    with pytest.raises(ServiceValidationError) as caught:
        await hass.services.async_call(
            DOMAIN, "invoke_skill", {"skill": "x"}, target={"device_id": foreign.id},
            blocking=True, return_response=True,
        )  # fmt: skip
    assert caught.value.translation_key == "not_a_terminal"


async def test_heartbeat_ttl_makes_entities_unavailable(
    hass: HomeAssistant, body: Body, freezer: FrozenDateTimeFactory
) -> None:
    freezer.tick(timedelta(seconds=61))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert hass.states.get(CONNECTIVITY).state == STATE_OFF
    assert hass.states.get(LIGHT).state == STATE_UNAVAILABLE
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/heartbeat", "1")
    await hass.async_block_till_done()
    assert hass.states.get(LIGHT).state != STATE_UNAVAILABLE


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_new_snapshot_adds_and_removes_skill_entities(
    hass: HomeAssistant, body: Body, entity_registry: er.EntityRegistry
) -> None:
    payload = skills(skill_version=4)
    payload["skills"] = [s for s in payload["skills"] if s["name"] != "create_alarm"]
    payload["skills"].append({"name": "beep", "description": "Beep once"})
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/skills", json.dumps(payload))
    await hass.async_block_till_done()
    assert entity_registry.async_get("button.terminal_001_create_alarm") is None
    assert hass.states.get("button.terminal_001_beep") is not None
    assert hass.states.get("sensor.terminal_001_skill_version").state == "4"


async def test_cleared_snapshot_removes_the_device(
    hass: HomeAssistant, body: Body, device_registry: dr.DeviceRegistry
) -> None:
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/skills", "")
    await hass.async_block_till_done()
    assert find_device(hass, soul_entry_id(hass), T) is None
    assert hass.states.get(LIGHT) is None
    announce(hass, retain=False)  # the body comes back: one device again
    await hass.async_block_till_done()
    devices = dr.async_entries_for_config_entry(
        device_registry, hass.config_entries.async_entries(DOMAIN)[0].entry_id
    )
    # (The hub and the spec's soul_hint's "friendly" soul are devices too.)
    assert [d.name for d in devices if find_terminal_id(hass, d.id)] == [T]
    assert hass.states.get(LIGHT).state != STATE_UNAVAILABLE


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_malformed_messages_do_not_break_anything(
    hass: HomeAssistant, body: Body, caplog: pytest.LogCaptureFixture
) -> None:
    for topic, payload in [
        ("skills", b"\xff\xfe{"),
        ("skills", json.dumps(skills(terminal_id="evil"))),
        ("intent_catalog", "[{]"),
        ("online", "perhaps"),
        ("result/abc", "{}"),
        ("unknown", "x"),
    ]:
        async_fire_mqtt_message(hass, f"soul/terminal/{T}/{topic}", payload)
    await hass.async_block_till_done()
    assert hass.states.get(LIGHT).state != STATE_UNAVAILABLE
    assert hass.states.get("sensor.terminal_001_skill_version").state == "3"
    assert "Dropped skills of terminal terminal-001" in caplog.text


async def test_device_actions(hass: HomeAssistant, body: Body) -> None:
    assert await async_setup_component(hass, "device_automation", {})
    target = await device_id(hass)
    actions = await async_get_device_automations(
        hass, DeviceAutomationType.ACTION, target
    )
    assert sorted(a["subtype"] for a in actions if a["domain"] == DOMAIN) == [
        "control_light", "create_alarm", "set_head_motion",
    ]  # fmt: skip
    from custom_components.soul import device_action

    capabilities = await device_action.async_get_action_capabilities(
        hass,
        {"device_id": target, "subtype": "set_head_motion", "type": "invoke_skill"},
    )
    schema = capabilities["extra_fields"]
    assert schema({"action": "点头", "duration_seconds": "2"}) == {
        "action": "点头",
        "duration_seconds": 2.0,
    }
    step = {
        "domain": DOMAIN,
        "device_id": target,
        "type": "invoke_skill",
        "subtype": "set_head_motion",
        "action": "点头",
    }
    # A named step's own keys are not the skill's arguments.
    named = {**step, "alias": "Nod", "enabled": True, "continue_on_error": False}
    for config in (step, named):
        await device_action.async_call_action_from_config(hass, config, {}, None)
        assert body.requests[-1]["arguments"] == {"action": "点头"}


def test_a_bodys_odd_argument_names_and_choices_make_no_fields() -> None:
    """A hostile body named arguments "type" and "device_id", and NUL and bidi ones.

    The action editor showed them as they were, and its own keys would have
    been overwritten (black box, 2026-11-29). ``soul.invoke_skill`` still
    takes every argument.
    """
    odd = "x\u202ey\u0000z\n<b>"
    properties: dict[str, Any] = {
        name: {"type": "string"}
        for name in ("type", "device_id", "domain", "subtype", "alias", "metadata", odd)
    }
    properties["y" * 500] = {"type": "string"}
    properties["mood"] = {"type": "string", "enum": ["calm", "wild\u202e"]}
    properties["level"] = {"type": "integer", "enum": [1, 2, 3]}
    properties["color"] = {"type": "string", "enum": ["red", "green"]}
    snapshot = parse_skills(
        T,
        {
            "skills": [
                {
                    "name": "odd",
                    "input_schema": {"type": "object", "properties": properties},
                }
            ]
        },
    )
    skill = snapshot.skill("odd")
    assert skill is not None, snapshot.rejected
    schema = fields_schema(skill)
    assert sorted(str(key) for key in schema.schema) == ["color", "level", "mood"]
    assert schema({"mood": "wild\u202e", "level": "2", "color": "red"}) == {
        "mood": "wild\u202e",  # typed in: its choices are not all clean lines
        "level": 2,  # a number, as the skill asks, not the text "2"
        "color": "red",
    }
    with pytest.raises(vol.Invalid):
        schema({"color": "blue"})


def test_action_fields_of_a_property_with_a_list_of_types() -> None:
    """``"type": ["string", "null"]`` is valid JSON Schema: it raised in the action editor."""
    snapshot = parse_skills(
        T,
        {
            "skills": [
                {
                    "name": "typed",
                    "input_schema": {
                        "type": "object",
                        "properties": {
                            "count": {"type": ["integer", "null"]},
                            # ("note" is a step's own key since Home Assistant 2026.10)
                            "label": {"type": ["string", "number"]},
                        },
                    },
                }
            ]
        },
    )
    skill = snapshot.skill("typed")
    assert skill is not None, snapshot.rejected
    schema = fields_schema(skill)
    assert schema({"count": "3", "label": "x"}) == {"count": 3, "label": "x"}


async def test_stale_devices_are_removed_after_setup(
    hass: HomeAssistant,
    mqtt_mock: MqttMockHAClient,
    soul_entry: MockConfigEntry,
    device_registry: dr.DeviceRegistry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A device whose body left the broker while Home Assistant was off goes away."""
    gone = device_registry.async_get_or_create(
        config_entry_id=soul_entry.entry_id, identifiers={(DOMAIN, "gone-body")}
    )
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    announce(hass)  # terminal-001 is still on the broker
    await hass.async_block_till_done()
    freezer.tick(timedelta(seconds=61))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert device_registry.async_get(gone.id) is None
    assert find_device(hass, soul_entry.entry_id, T) is not None


async def test_skill_entities_gone_while_home_assistant_was_off_are_removed(
    hass: HomeAssistant,
    mqtt_mock: MqttMockHAClient,
    soul_entry: MockConfigEntry,
    device_registry: dr.DeviceRegistry,
    entity_registry: er.EntityRegistry,
) -> None:
    """A skill dropped (or no longer a button) before a restart leaves no dead entity."""
    device = device_registry.async_get_or_create(
        config_entry_id=soul_entry.entry_id, identifiers={(DOMAIN, T)}
    )
    other = device_registry.async_get_or_create(
        config_entry_id=soul_entry.entry_id, identifiers={(DOMAIN, f"{T}-skill-x")}
    )

    def register(unique_id: str, device_id: str, domain: str = "button") -> str:
        return entity_registry.async_get_or_create(
            domain, DOMAIN, unique_id, config_entry=soul_entry, device_id=device_id
        ).entity_id

    dead = register(f"{T}-skill-dance", device.id)
    kept = register(f"{T}-skill-create_alarm", device.id)
    not_a_skill = register(f"{T}-last_decision", device.id, "sensor")
    elsewhere = register(f"{T}-skill-x-skill-beep", other.id)
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    announce(hass)
    await hass.async_block_till_done()
    assert entity_registry.async_get(dead) is None
    assert entity_registry.async_get(kept) is not None
    assert hass.states.get(kept) is not None
    assert entity_registry.async_get(not_a_skill) is not None
    assert entity_registry.async_get(elsewhere) is not None


async def test_user_may_delete_only_absent_bodies(
    hass: HomeAssistant, body: Body, device_registry: dr.DeviceRegistry
) -> None:
    from custom_components.soul import async_remove_config_entry_device

    entry = hass.config_entries.async_entries(DOMAIN)[0]
    device = find_device(hass, entry.entry_id, T)
    assert device is not None
    assert not await async_remove_config_entry_device(hass, entry, device)
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    assert await async_remove_config_entry_device(hass, entry, device)
