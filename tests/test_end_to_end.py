"""Home Assistant + Soul + the reference body, over a real MQTT broker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from datetime import timedelta
import json
from typing import Any
import uuid

from homeassistant.const import STATE_OFF, STATE_ON, STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import device_registry as dr
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.soul.const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_TOPIC_PREFIX,
    DOMAIN,
)
from custom_components.soul.helpers import find_device, find_terminal_id
from devtools.body_sim import BodySim
from devtools.broker import MqttBroker
from devtools.fake_llm import (
    DEFAULT_MODEL,
    FakeOpenAI,
    Reply,
    mem0_responder,
    tool_call,
)


async def until(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    """Wait until ``predicate()`` is true, letting Home Assistant work meanwhile."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)


@pytest.fixture
async def soul(
    hass: HomeAssistant, real_mqtt: MockConfigEntry
) -> AsyncGenerator[tuple[MockConfigEntry, str]]:
    """Soul on the real broker, on a prefix of its own (the broker is shared)."""
    prefix = f"e2e{uuid.uuid4().hex[:8]}"
    entry = MockConfigEntry(domain=DOMAIN, data={}, options={CONF_TOPIC_PREFIX: prefix})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    yield entry, prefix
    assert await hass.config_entries.async_unload(entry.entry_id)


def start_body(broker: MqttBroker, prefix: str, **options: object) -> BodySim:
    """Start body-sim in its paho thread (blocking until it has reported)."""
    return BodySim(broker.host, broker.port, prefix=prefix, **options)


async def test_body_lifecycle(
    hass: HomeAssistant,
    soul: tuple[MockConfigEntry, str],
    mqtt_broker: MqttBroker,
    device_registry: dr.DeviceRegistry,
) -> None:
    entry, prefix = soul
    light = "light.terminal_001_control_light"
    connectivity = "binary_sensor.terminal_001_connectivity"
    body = start_body(mqtt_broker, prefix)
    await hass.async_add_executor_job(body.start)
    try:
        await until(
            lambda: (s := hass.states.get(light)) and s.state != STATE_UNAVAILABLE
        )
        device = find_device(hass, entry.entry_id, "terminal-001")
        assert device is not None
        assert device.model == "Soul body-sim"
        assert hass.states.get(connectivity).state == STATE_ON

        # The light entity drives the body's control_light.
        await hass.services.async_call(
            "light", "turn_on", {"entity_id": light}, blocking=True
        )
        assert body.light["on"] is True
        await hass.services.async_call(
            "light",
            "turn_on",
            {"entity_id": light, "hs_color": (0, 100)},
            blocking=True,
        )
        assert body.light == {"on": True, "color": "red"}
        await hass.services.async_call(
            "light", "turn_off", {"entity_id": light}, blocking=True
        )
        assert body.light["on"] is False

        # The action returns the body's own result.
        response = await hass.services.async_call(
            DOMAIN,
            "invoke_skill",
            {"skill": "create_alarm", "arguments": {"trigger_in_seconds": 60}},
            target={"device_id": device.id},
            blocking=True,
            return_response=True,
        )
        assert response["ok"] is True
        assert response["output"]
        assert body.alarms

        # Killed without a clean disconnect: the broker's LWT makes it unavailable.
        await hass.async_add_executor_job(body.kill)
        await until(lambda: hass.states.get(light).state == STATE_UNAVAILABLE)
        assert hass.states.get(connectivity).state == STATE_OFF
    finally:
        await hass.async_add_executor_job(body.stop)

    # Restarted: the same device comes back, no duplicate.
    body = start_body(mqtt_broker, prefix)
    await hass.async_add_executor_job(body.start)
    try:
        await until(lambda: hass.states.get(light).state != STATE_UNAVAILABLE)
        devices = dr.async_entries_for_config_entry(device_registry, entry.entry_id)
        terminals = [d.name for d in devices if find_terminal_id(hass, d.id)]
        assert terminals == ["terminal-001"]
    finally:
        await hass.async_add_executor_job(body.stop)


async def test_silent_body_times_out(
    hass: HomeAssistant, soul: tuple[MockConfigEntry, str], mqtt_broker: MqttBroker
) -> None:
    entry, prefix = soul
    entry.runtime_data.invoker.timeout = 1.0
    body = start_body(mqtt_broker, prefix, terminal_id="mute-body", answer=False)
    await hass.async_add_executor_job(body.start)
    try:
        await until(lambda: entry.runtime_data.registry.get("mute-body") is not None)
        device = find_device(hass, entry.entry_id, "mute-body")
        assert device is not None
        with pytest.raises(HomeAssistantError) as caught:
            async with asyncio.timeout(5):
                await hass.services.async_call(
                    DOMAIN,
                    "invoke_skill",
                    {"skill": "create_alarm", "arguments": {"trigger_in_seconds": 60}},
                    target={"device_id": device.id},
                    blocking=True,
                    return_response=True,
                )
        assert caught.value.translation_key == "timeout"
        assert body.invocations  # it did receive the invoke
    finally:
        await hass.async_add_executor_job(body.stop)


async def test_body_feels_the_soul(
    hass: HomeAssistant,
    soul: tuple[MockConfigEntry, str],
    mqtt_broker: MqttBroker,
) -> None:
    """soul_hint binds the body; ticks and a user turn reach it as emotion_update."""
    entry, prefix = soul
    body = start_body(mqtt_broker, prefix)
    await hass.async_add_executor_job(body.start)
    try:
        souls = entry.runtime_data.souls
        await until(lambda: souls.soul_of("terminal-001") is not None)
        assert souls.soul_of("terminal-001").name == "friendly"
        # The 3 s tick reaches the online body.
        await until(lambda: body.last_emotion is not None, timeout=10)
        tick = body.last_emotion
        assert tick["session_id"] == "system_decay_tick"
        assert tick["soul_id"] == souls.soul_of("terminal-001").soul_id
        # A user turn is published at once, and the body shows the emotion.
        await souls.user_turn("terminal-001", "我好难过，想哭", "s1")
        await until(lambda: (body.last_emotion or {}).get("session_id") == "s1")
        update = body.last_emotion
        assert update["user_emotion"]["emotion"] == "sadness"
        assert update["exec_mode"] in {"auto_execute", "confirm"}
        # §3.8: sadness at high intensity → 哭 (and a head shake).
        await until(lambda: body.expression == "哭")
    finally:
        await hass.async_add_executor_job(body.stop)


def _answer_from_memory(body: dict) -> Reply | None:
    """The model's second pass: answer with what recall_memory returned."""
    last = body["messages"][-1]
    if last.get("role") != "tool":
        return None
    result = json.loads(last["content"])
    if result.get("memories"):
        return Reply(content="我记得：" + "；".join(result["memories"]))
    return Reply(content="我一时想不起来，但我在听。")


@pytest.mark.usefixtures("mem0_installed")
async def test_body_sees_memory_statuses_and_the_reply_uses_an_old_fact(
    hass: HomeAssistant,
    real_mqtt: MockConfigEntry,
    mqtt_broker: MqttBroker,
    fake_llm: FakeOpenAI,
    hass_client: Any,
) -> None:
    fake_llm.responders.extend([mem0_responder, _answer_from_memory])
    prefix = f"e2e{uuid.uuid4().hex[:8]}"
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={
            CONF_TOPIC_PREFIX: prefix,
            CONF_LLM_BASE_URL: fake_llm.base_url,
            CONF_LLM_MODEL: DEFAULT_MODEL,
            CONF_EMBEDDING_MODEL: "fake-embedding",
            CONF_EMBEDDING_DIMS: 64,
        },
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    body = start_body(mqtt_broker, prefix)
    await hass.async_add_executor_job(body.start)
    try:
        runtime = entry.runtime_data
        await until(lambda: runtime.souls.soul_of("terminal-001") is not None)
        assert runtime.memory is not None and runtime.memory.ready
        client = await hass_client()

        def say(text: str, session: str) -> Any:
            return client.post(
                "/api/soul/v1/chat",
                json={
                    "session_id": session,
                    "terminal_id": "terminal-001",
                    "user_id": "u1",
                    "inputs": [{"type": "speech_text", "text": text}],
                },
            )

        # Session 1 tells a fact; after 3 idle minutes it is archived and searchable.
        fake_llm.reply("咪咪是个好名字！")
        fake_llm.reply("用户的猫叫咪咪。")  # the idle summary
        await say("你觉得我家猫叫咪咪这个名字怎么样？", "s1")
        # Three idle minutes, on the session's clock (a frozen loop clock would
        # also stop the MQTT client and this test's polling).
        runtime.chat.sessions["s1"].last_user_at -= timedelta(minutes=3).total_seconds()
        await runtime.chat.summarize_idle()
        found = await runtime.memory.recall("猫", user_id="u1", soul_id=None)
        assert any("咪咪" in item.text for item in found)

        # Session 2 asks: the body sees searching, then done, then the reply uses it.
        fake_llm.reply(
            tool_calls=[tool_call("recall_memory", {"query": "我家的猫叫什么"})]
        )
        response = await (await say("我家的猫叫什么？", "s2")).json()
        assert "咪咪" in response["reply"]
        assert "recall_memory" in response["executed_skills"]
        await until(lambda: len(body.statuses) >= 2)
        assert [s["status"] for s in body.statuses] == [
            "mem0_searching",
            "mem0_search_done",
        ]
        assert all(s["session_id"] == "s2" for s in body.statuses)

        # The backend is stopped: the body sees the failure and still gets an answer.
        await runtime.memory.backend.close()
        fake_llm.reply(tool_calls=[tool_call("recall_memory", {"query": "猫"})])
        response = await (await say("我家的猫叫什么来着？", "s3")).json()
        assert response["reply"] == "我一时想不起来，但我在听。"
        await until(lambda: len(body.statuses) >= 4)
        assert [s["status"] for s in body.statuses[2:]] == [
            "mem0_searching", "mem0_search_failed"
        ]  # fmt: skip
    finally:
        await hass.async_add_executor_job(body.stop)
        assert await hass.config_entries.async_unload(entry.entry_id)
