"""The test harness itself: the fake OpenAI server and the real MQTT broker.

Later tests rely on both, so their behaviour is pinned here: the real ``openai``
client talks real HTTP to the fake server (tool calls, streaming, embeddings,
auth), and Home Assistant's MQTT integration talks to a real broker.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from amqtt.client import MQTTClient
from homeassistant.components import mqtt
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, callback
import openai
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from devtools.broker import MqttBroker
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI, embed, tool_call

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "control_light",
            "description": "Turn the light on or off",
            "parameters": {
                "type": "object",
                "properties": {"mode": {"type": "string", "enum": ["on", "off"]}},
                "required": ["mode"],
            },
        },
    }
]


def client_for(server: FakeOpenAI, api_key: str = "sk-test") -> openai.AsyncOpenAI:
    """A real openai client pointed at the fake server."""
    return openai.AsyncOpenAI(base_url=server.base_url, api_key=api_key, max_retries=0)


async def test_chat_with_tool_calls(fake_llm: FakeOpenAI) -> None:
    """A scripted tool call reaches the client intact; requests are recorded."""
    fake_llm.reply(tool_calls=[tool_call("control_light", {"mode": "on"}, "call_1")])
    fake_llm.reply("The light is on.")
    async with client_for(fake_llm) as client:
        first = await client.chat.completions.create(
            model=DEFAULT_MODEL,
            messages=[{"role": "user", "content": "开灯"}],
            tools=TOOLS,
        )
        call = first.choices[0].message.tool_calls[0]
        assert first.choices[0].finish_reason == "tool_calls"
        assert call.id == "call_1"
        assert call.function.name == "control_light"
        assert json.loads(call.function.arguments) == {"mode": "on"}

        second = await client.chat.completions.create(
            model=DEFAULT_MODEL,
            messages=[
                {"role": "user", "content": "开灯"},
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            ],
            tools=TOOLS,
        )
    assert second.choices[0].message.content == "The light is on."
    assert fake_llm.chat_requests[0]["tools"] == TOOLS
    assert fake_llm.chat_requests[1]["messages"][-1]["role"] == "tool"
    assert fake_llm.pending == 0


async def test_streamed_chat(fake_llm: FakeOpenAI) -> None:
    """Streaming assembles content and tool-call deltas."""
    fake_llm.reply(
        "Hello there", tool_calls=[tool_call("control_light", {"mode": "off"})]
    )
    async with client_for(fake_llm) as client:
        stream = await client.chat.completions.create(
            model=DEFAULT_MODEL,
            messages=[{"role": "user", "content": "hi"}],
            tools=TOOLS,
            stream=True,
        )
        text, arguments, name, finish = "", "", None, None
        async for chunk in stream:
            choice = chunk.choices[0]
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                name = delta.function.name or name
                arguments += delta.function.arguments or ""
            finish = choice.finish_reason or finish
    assert text == "Hello there"
    assert name == "control_light"
    assert json.loads(arguments) == {"mode": "off"}
    assert finish == "tool_calls"


async def test_embeddings_are_deterministic(fake_llm: FakeOpenAI) -> None:
    """Equal texts embed equally, different texts differently."""
    async with client_for(fake_llm) as client:
        result = await client.embeddings.create(
            model="embed", input=["灯", "灯", "alarm"], dimensions=8
        )
    vectors = [item.embedding for item in result.data]
    assert len(vectors[0]) == 8
    assert vectors[0] == pytest.approx(vectors[1])
    assert vectors[0] != pytest.approx(vectors[2])
    assert vectors[0] == pytest.approx(embed("灯", 8))


async def test_errors(fake_llm: FakeOpenAI) -> None:
    """Wrong keys get 401; scripted failures and an empty script are errors."""
    fake_llm.api_key = "sk-right"
    async with client_for(fake_llm, "sk-wrong") as client:
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
    async with client_for(fake_llm, "sk-right") as client:
        fake_llm.fail(503, "overloaded")
        with pytest.raises(openai.InternalServerError, match="overloaded"):
            await client.chat.completions.create(model="m", messages=[])
        with pytest.raises(openai.InternalServerError, match="no scripted reply"):
            await client.chat.completions.create(model="m", messages=[])


async def test_home_assistant_mqtt_on_real_broker(
    hass: HomeAssistant, mqtt_broker: MqttBroker, real_mqtt: MockConfigEntry
) -> None:
    """Home Assistant's MQTT integration connects to the broker and exchanges messages."""
    assert real_mqtt.state is ConfigEntryState.LOADED
    assert mqtt.is_connected(hass)
    # The session's broker keeps other tests' retained topics: use our own.
    uid = uuid.uuid4().hex[:8]
    body = MQTTClient(client_id="test-body")
    await body.connect(f"mqtt://{mqtt_broker.host}:{mqtt_broker.port}")
    received: asyncio.Queue[mqtt.ReceiveMessage] = asyncio.Queue()

    @callback
    def on_message(message: mqtt.ReceiveMessage) -> None:
        received.put_nowait(message)

    try:
        # Retained, as a body's `online` is: it reaches a later subscriber.
        await body.publish(
            f"harness-{uid}/terminal/t-1/online", b"online", qos=1, retain=True
        )
        unsubscribe = await mqtt.async_subscribe(
            hass, f"harness-{uid}/terminal/+/online", on_message
        )
        async with asyncio.timeout(10):
            message = await received.get()
        unsubscribe()
        assert message.topic == f"harness-{uid}/terminal/t-1/online"
        assert message.payload == "online"
        assert message.retain

        await body.subscribe([(f"harness-{uid}/terminal/t-1/status", 1)])
        await mqtt.async_publish(
            hass, f"harness-{uid}/terminal/t-1/status", '{"status":"ok"}', qos=1
        )
        async with asyncio.timeout(10):
            # amqtt also replays other tests' retained topics to a new subscriber.
            delivered = await body.deliver_message()
            while delivered.topic != f"harness-{uid}/terminal/t-1/status":
                delivered = await body.deliver_message()
        assert json.loads(delivered.data) == {"status": "ok"}
    finally:
        await body.publish(
            f"harness-{uid}/terminal/t-1/online", b"", qos=1, retain=True
        )
        await body.disconnect()
