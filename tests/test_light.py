"""Skill lights: they follow whatever Soul sends, and offer only what the skill can do."""

from __future__ import annotations

import json
from typing import Any

from homeassistant.components.light import (
    ATTR_BRIGHTNESS,
    ATTR_EFFECT,
    ATTR_EFFECT_LIST,
    ATTR_HS_COLOR,
    ATTR_SUPPORTED_COLOR_MODES,
    ColorMode,
    LightEntityFeature,
)
from homeassistant.const import (
    ATTR_SUPPORTED_FEATURES,
    STATE_OFF,
    STATE_ON,
    STATE_UNKNOWN,
)
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import color as color_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.const import DOMAIN
from custom_components.soul.helpers import find_device

from . import test_terminals
from .core.spec_payloads import skills
from .test_terminals import LIGHT, Body, T, soul_entry_id

MODE = {"type": "string", "enum": ["on", "off"]}


# The reference body, announced, answering every invocation.
body = test_terminals.body


def announce_lamp(hass: HomeAssistant, terminal_id: str, properties: dict) -> None:
    """Announce a body whose only skill is ``lamp`` with these arguments."""
    base = f"soul/terminal/{terminal_id}"
    async_fire_mqtt_message(hass, f"{base}/online", "online", retain=True)
    payload = skills(
        terminal_id=terminal_id,
        skills=[
            {
                "name": "lamp",
                "input_schema": {
                    "type": "object",
                    "properties": properties,
                    "required": ["mode"],
                },
            }
        ],
    )
    async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(payload), retain=True)
    async_fire_mqtt_message(hass, f"{base}/heartbeat", "1")


async def invoke_skill(
    hass: HomeAssistant, skill: str, arguments: dict[str, Any], terminal_id: str = T
) -> dict[str, Any]:
    """Call ``soul.invoke_skill`` on the terminal's device."""
    device = find_device(hass, soul_entry_id(hass), terminal_id)
    assert device is not None
    response = await hass.services.async_call(
        DOMAIN,
        "invoke_skill",
        {"skill": skill, "arguments": arguments},
        target={"device_id": device.id},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


def hs_of(name: str) -> tuple[float, float]:
    return color_util.color_RGB_to_hs(*color_util.color_name_to_rgb(name))


async def test_an_intent_action_from_chat_updates_the_light(
    hass: HomeAssistant, body: Body, hass_client: ClientSessionGenerator
) -> None:
    assert hass.states.get(LIGHT).state == STATE_UNKNOWN
    client = await hass_client()

    async def say(text: str) -> dict[str, Any]:
        response = await client.post(
            "/api/soul/v1/chat",
            json={
                "session_id": "s1",
                "terminal_id": T,
                "inputs": [{"type": "keyboard_text", "text": text}],
            },
        )
        assert response.status == 200
        return await response.json()

    reply = await say("把灯调成绿色")
    assert reply["intent_decision"] == "execute_intents"
    assert reply["executed_skills"] == ["control_light"]
    assert body.requests == []  # an intent_action, not an invoke
    state = hass.states.get(LIGHT)
    assert state.state == STATE_ON
    assert state.attributes[ATTR_EFFECT] == "green"
    assert state.attributes[ATTR_HS_COLOR] == hs_of("green")

    await say("关灯")
    assert hass.states.get(LIGHT).state == STATE_OFF


async def test_invoke_skill_updates_the_light(hass: HomeAssistant, body: Body) -> None:
    response = await invoke_skill(
        hass, "control_light", {"mode": "set_color", "color": "red"}
    )
    assert response["ok"] is True
    state = hass.states.get(LIGHT)
    assert state.state == STATE_ON
    assert state.attributes[ATTR_EFFECT] == "red"
    assert state.attributes[ATTR_HS_COLOR] == hs_of("red")
    await invoke_skill(hass, "control_light", {"mode": "off"})
    state = hass.states.get(LIGHT)
    assert state.state == STATE_OFF
    assert state.attributes[ATTR_EFFECT] is None  # Home Assistant hides it while off


async def test_a_failed_or_timed_out_invoke_claims_nothing(
    hass: HomeAssistant, body: Body, init_integration: MockConfigEntry
) -> None:
    await invoke_skill(hass, "control_light", {"mode": "off"})
    assert hass.states.get(LIGHT).state == STATE_OFF

    body.answer = {"ok": False, "error": "bulb broken"}
    response = await invoke_skill(
        hass, "control_light", {"mode": "set_color", "color": "red"}
    )
    assert response["ok"] is False
    with pytest.raises(HomeAssistantError, match="bulb broken"):
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": LIGHT}, blocking=True
        )
    assert hass.states.get(LIGHT).state == STATE_OFF

    body.answer = {"ok": False, "error": "b" * 1000}  # shown in a toast: short
    with pytest.raises(HomeAssistantError) as caught:
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": LIGHT}, blocking=True
        )
    assert caught.value.translation_placeholders["error"] == "b" * 299 + "…"

    # A body's own "invalid_result" or "timeout" is its words, not Soul's.
    for words in ("invalid_result", "timeout"):
        body.answer = {"ok": False, "error": words}
        with pytest.raises(HomeAssistantError) as caught:
            await hass.services.async_call(
                "light", "turn_on", {"entity_id": LIGHT}, blocking=True
            )
        assert caught.value.translation_key == "skill_failed"

    body.answer = {"ok": "yes"}  # not a result of §3.6: fails now, not in 8 s
    with pytest.raises(HomeAssistantError) as caught:
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": LIGHT}, blocking=True
        )
    assert caught.value.translation_key == "invalid_result"
    assert hass.states.get(LIGHT).state == STATE_OFF

    body.answer = None  # the body never answers
    init_integration.runtime_data.invoker.timeout = 0.05
    with pytest.raises(HomeAssistantError) as caught:
        await invoke_skill(hass, "control_light", {"mode": "on"})
    assert caught.value.translation_key == "timeout"
    with pytest.raises(HomeAssistantError):
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": LIGHT, ATTR_EFFECT: "red"}, blocking=True
        )
    state = hass.states.get(LIGHT)
    assert state.state == STATE_OFF
    assert len(body.requests) == 9  # all of them reached the body


async def test_the_reference_light_offers_its_colours(
    hass: HomeAssistant, body: Body
) -> None:
    state = hass.states.get(LIGHT)
    assert state.attributes[ATTR_SUPPORTED_COLOR_MODES] == [ColorMode.HS]
    assert state.attributes[ATTR_EFFECT_LIST] == ["white", "red", "green"]
    assert state.attributes[ATTR_SUPPORTED_FEATURES] == LightEntityFeature.EFFECT
    await hass.services.async_call(
        "light", "turn_on", {"entity_id": LIGHT, ATTR_EFFECT: "red"}, blocking=True
    )
    assert body.requests[-1]["arguments"] == {"mode": "set_color", "color": "red"}
    state = hass.states.get(LIGHT)
    assert (state.state, state.attributes[ATTR_EFFECT]) == (STATE_ON, "red")
    # A colour from the wheel is sent as the nearest name, and shown as that name.
    await hass.services.async_call(
        "light",
        "turn_on",
        {"entity_id": LIGHT, ATTR_HS_COLOR: (110, 90)},
        blocking=True,
    )
    assert body.requests[-1]["arguments"] == {"mode": "set_color", "color": "green"}
    state = hass.states.get(LIGHT)
    assert state.attributes[ATTR_EFFECT] == "green"
    assert state.attributes[ATTR_HS_COLOR] == hs_of("green")


async def test_an_on_off_skill_is_an_on_off_light(
    hass: HomeAssistant, body: Body
) -> None:
    announce_lamp(hass, "lamp-1", {"mode": MODE})
    await hass.async_block_till_done()
    state = hass.states.get("light.lamp_1_lamp")
    assert state.attributes[ATTR_SUPPORTED_COLOR_MODES] == [ColorMode.ONOFF]
    assert state.attributes[ATTR_SUPPORTED_FEATURES] == 0
    assert ATTR_EFFECT_LIST not in state.attributes
    # Brightness and colour are not the skill's: Home Assistant drops them.
    await hass.services.async_call(
        "light",
        "turn_on",
        {
            "entity_id": "light.lamp_1_lamp",
            ATTR_BRIGHTNESS: 10,
            ATTR_HS_COLOR: (0, 100),
        },
        blocking=True,
    )
    assert body.requests[-1]["arguments"] == {"mode": "on"}
    assert hass.states.get("light.lamp_1_lamp").state == STATE_ON


async def test_colour_names_home_assistant_lacks_are_effects_only(
    hass: HomeAssistant, body: Body
) -> None:
    colors = {"type": "string", "enum": ["暖白", "red"]}
    announce_lamp(hass, "lamp-2", {"mode": MODE, "color": colors})
    await hass.async_block_till_done()
    entity_id = "light.lamp_2_lamp"
    state = hass.states.get(entity_id)
    assert state.attributes[ATTR_SUPPORTED_COLOR_MODES] == [ColorMode.ONOFF]
    assert state.attributes[ATTR_EFFECT_LIST] == ["暖白", "red"]
    assert state.attributes[ATTR_SUPPORTED_FEATURES] == LightEntityFeature.EFFECT
    await hass.services.async_call(
        "light", "turn_on", {"entity_id": entity_id, ATTR_EFFECT: "暖白"}, blocking=True
    )
    # Without a set_color mode the colour goes with "on".
    assert body.requests[-1]["arguments"] == {"mode": "on", "color": "暖白"}
    assert hass.states.get(entity_id).attributes[ATTR_EFFECT] == "暖白"
    # An effect the skill does not have is refused before anything is sent.
    sent = len(body.requests)
    with pytest.raises(HomeAssistantError) as caught:
        await hass.services.async_call(
            "light",
            "turn_on",
            {"entity_id": entity_id, ATTR_EFFECT: "blue"},
            blocking=True,
        )
    assert caught.value.translation_key == "invalid_arguments"
    assert len(body.requests) == sent


async def test_a_brightness_argument_gives_a_dimmable_light(
    hass: HomeAssistant, body: Body
) -> None:
    brightness = {"type": "integer", "minimum": 0, "maximum": 100}
    announce_lamp(hass, "lamp-3", {"mode": MODE, "brightness": brightness})
    await hass.async_block_till_done()
    entity_id = "light.lamp_3_lamp"
    state = hass.states.get(entity_id)
    assert state.attributes[ATTR_SUPPORTED_COLOR_MODES] == [ColorMode.BRIGHTNESS]
    assert state.attributes[ATTR_SUPPORTED_FEATURES] == 0
    await hass.services.async_call(
        "light",
        "turn_on",
        {"entity_id": entity_id, ATTR_BRIGHTNESS: 255},
        blocking=True,
    )
    assert body.requests[-1]["arguments"] == {"mode": "on", "brightness": 100}
    assert hass.states.get(entity_id).attributes[ATTR_BRIGHTNESS] == 255
    await hass.services.async_call(
        "light", "turn_on", {"entity_id": entity_id, ATTR_BRIGHTNESS: 1}, blocking=True
    )
    request = body.requests[-1]["arguments"]
    assert request == {"mode": "on", "brightness": 1}  # never 0, which means off
    assert isinstance(request["brightness"], int)
    # Another sender's brightness shows too.
    await invoke_skill(hass, "lamp", {"mode": "on", "brightness": 50}, "lamp-3")
    assert hass.states.get(entity_id).attributes[ATTR_BRIGHTNESS] == 128
