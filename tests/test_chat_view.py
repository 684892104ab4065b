"""POST /api/soul/v1/chat in Home Assistant (mocked MQTT)."""

from __future__ import annotations

from datetime import timedelta
import json
from typing import Any
from unittest.mock import patch

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    MqttMockHAClient,
)

from custom_components.soul.const import DOMAIN
from custom_components.soul.core.chat_request import NO_SOUL_ERROR, TEXT_INPUT_ERROR
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics
from custom_components.soul.helpers import find_device

from .core.spec_payloads import skills as spec_skills
from .test_terminals import T, announce

URL = "/api/soul/v1/chat"


def turn(text: str, **extra: object) -> dict[str, object]:
    """Return a §4.2.1 body."""
    return {
        "session_id": "s1",
        "terminal_id": T,
        "inputs": [{"type": "keyboard_text", "text": text}],
        **extra,
    }


async def test_chat_runs_the_intent_path(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    mqtt_mock: MqttMockHAClient,
) -> None:
    announce(hass)  # soul_hint binds the body to a new "friendly" soul
    await hass.async_block_till_done()
    client = await hass_client()
    response = await client.post(URL, json=turn("把灯调成绿色"))
    assert response.status == 200
    body = await response.json()
    assert body["intent_decision"] == "execute_intents"
    assert body["executed_skills"] == ["control_light"]
    assert body["exec_mode"] == "auto_execute"
    published = [
        (c.args[0].rsplit("/", 1)[-1], json.loads(c.args[1]))
        for c in mqtt_mock.async_publish.call_args_list
        if c.args[0].startswith(f"soul/terminal/{T}/")
    ]
    kinds = [k for k, p in published if p.get("session_id") != "system_decay_tick"]
    assert kinds == ["emotion_update", "intent_action"]
    # Without a language model the model path answers in character.
    assert not ir.async_get(hass).async_get_issue(DOMAIN, "llm_not_configured")
    body = await (await client.post(URL, json=turn("讲个笑话吧"))).json()
    assert body["intent_decision"] == "fallback_reasoning"
    assert "语言模型" in body["reply"]
    # The owner learns how to configure one.
    assert ir.async_get(hass).async_get_issue(DOMAIN, "llm_not_configured")
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert diagnostics["chat"]["last_route"] == "llm"
    assert diagnostics["chat"]["sessions"] == 1


async def test_chat_errors(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    client = await hass_client()
    # A body never seen and without a soul: said so, not "soul selection".
    response = await client.post(URL, json=turn("开灯"))
    assert response.status == 404
    assert "unknown terminal_id 'terminal-001'" in (await response.json())["error"]
    # A body that connected without a soul_hint: §4.3's error.
    base = f"soul/terminal/{T}"
    async_fire_mqtt_message(hass, f"{base}/online", "online")
    async_fire_mqtt_message(
        hass, f"{base}/skills", json.dumps(spec_skills(terminal_id=T, soul_hint=None))
    )
    await hass.async_block_till_done()
    response = await client.post(URL, json=turn("开灯"))
    assert response.status == 400
    assert (await response.json()) == {"error": NO_SOUL_ERROR}
    response = await client.post(
        URL, json={"session_id": "s", "terminal_id": T, "inputs": [{"type": "image"}]}
    )
    assert (await response.json()) == {"error": TEXT_INPUT_ERROR}
    response = await client.post(URL, data=b"{x")
    assert response.status == 400
    assert "not valid JSON" in (await response.json())["error"]


async def test_idle_summary_and_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    entry = init_integration
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    await client.post(URL, json=turn("我叫小明，喜欢绿色"))
    # Unloaded before 3 minutes: the session is stored, unsummarised.
    assert await hass.config_entries.async_unload(entry.entry_id)
    stored = hass_storage["soul.sessions"]["data"]["sessions"]
    assert stored[0]["summary"] == ""
    freezer.tick(timedelta(minutes=10))
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    freezer.tick(timedelta(seconds=15))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    session = entry.runtime_data.chat.sessions["s1"]
    assert "小明" in session.summary
    body = await (await client.post(URL, json=turn("你好"))).json()
    assert "小明" in body["context_summary"]


async def test_the_broker_down_is_an_answer_not_a_500(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    caplog: Any,
) -> None:
    """Issue 13: chat while the broker was down answered 500 (mqtt_broker_error)."""
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    down = HomeAssistantError("Cannot publish: mqtt_broker_error")
    with patch(
        "custom_components.soul.mqtt_bridge.mqtt.async_publish", side_effect=down
    ):
        response = await client.post(URL, json=turn("把灯调成绿色"))
        assert response.status == 200
        body = await response.json()
        assert body["executed_skills"] == []  # nothing reached the body
        assert "联系不上" in body["reply"]
        english = await client.post(
            URL, json=turn("turn on the light", session_id="s2")
        )
        assert english.status == 200
        device = find_device(hass, init_integration.entry_id, T)
        assert device is not None
        try:
            await hass.services.async_call(
                DOMAIN,
                "invoke_skill",
                {"device_id": device.id, "skill": "control_light",
                 "arguments": {"mode": "on"}},
                blocking=True,
                return_response=True,
            )  # fmt: skip
        except ServiceValidationError as err:
            assert err.translation_key == "publish_failed"  # noqa: PT017
        else:
            raise AssertionError("invoke_skill reported success")
    assert "Traceback" not in caplog.text


async def test_chat_binds_and_refuses_like_the_spec(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    """soul_hint and soul_id on a terminal's first contact, and what contradicts."""
    client = await hass_client()
    hub = init_integration.runtime_data.souls
    # soul_hint binds on first contact, exactly as a body's hint: a new soul.
    response = await client.post(
        URL, json=turn("你好", terminal_id="gateway-1", soul_hint="friendly")
    )
    assert response.status == 200
    friendly = hub.soul_of("gateway-1")
    assert friendly is not None and friendly.name == "friendly"
    assert (await response.json())["soul_id"] == friendly.soul_id
    # Only the first contact counts: a later hint on another unbound id that
    # was already seen is ignored like a body's.
    hub.first_connection("gateway-2", None)  # seen, without a hint
    response = await client.post(
        URL, json=turn("你好", terminal_id="gateway-2", soul_hint="friendly")
    )
    assert response.status == 404  # never connected, and no soul bound
    # An unknown soul_id is a 404; another soul than the bound one a 409.
    response = await client.post(
        URL, json=turn("你好", terminal_id="gateway-1", soul_id="nobody")
    )
    assert response.status == 404
    assert "unknown soul_id 'nobody'" in (await response.json())["error"]
    other = (
        await (
            await client.post(
                "/api/soul/v1/souls", json={"name": "Other", "mbti_type": "INTJ"}
            )
        ).json()
    )["soul_id"]
    response = await client.post(
        URL, json=turn("你好", terminal_id="gateway-1", soul_id=other)
    )
    assert response.status == 409
    assert "is bound to soul" in (await response.json())["error"]
    assert hub.soul_of("gateway-1").soul_id == friendly.soul_id  # unchanged
    # The bound soul's own id is fine; an unbound terminal takes the soul_id.
    response = await client.post(
        URL, json=turn("你好", terminal_id="gateway-1", soul_id=friendly.soul_id)
    )
    assert response.status == 200
    response = await client.post(
        URL, json=turn("你好", session_id="s3", terminal_id="gateway-3", soul_id=other)
    )
    assert response.status == 200
    assert hub.soul_of("gateway-3").soul_id == other
