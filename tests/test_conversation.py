"""Each soul is an Assist conversation agent acting through its body."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import MqttMockHAClient

from custom_components.soul.compat import tool_output
from custom_components.soul.const import (
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEMORY_BACKEND,
    CONF_TOPIC_PREFIX,
    DOMAIN,
)
from custom_components.soul.core.chat_phrases import phrase
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI

from .test_terminals import T, announce, body  # noqa: F401  # fixture

AGENT = "conversation.friendly"


def intent_actions(mqtt_mock: MqttMockHAClient) -> list[dict[str, Any]]:
    """Return the intent_action messages published so far."""
    return [
        json.loads(c.args[1])
        for c in mqtt_mock.async_publish.call_args_list
        if c.args[0].endswith("/intent_action")
    ]


async def setup_soul_with_model(
    hass: HomeAssistant, fake_llm: FakeOpenAI, soul: dict[str, Any]
) -> MockConfigEntry:
    """Set up a hub whose model is ``fake_llm``, with one soul (its subentry data)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={
            CONF_TOPIC_PREFIX: "soul",
            CONF_LLM_BASE_URL: fake_llm.base_url,
            CONF_MEMORY_BACKEND: "none",
            CONF_LLM_MODEL: DEFAULT_MODEL,
        },
        subentries_data=[
            {
                "data": soul,
                "subentry_type": "soul",
                "title": soul["name"],
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


async def test_assist_runs_the_intent_path(
    hass: HomeAssistant, init_integration: MockConfigEntry, mqtt_mock: MqttMockHAClient
) -> None:
    announce(hass)  # creates and binds the soul "friendly"
    await hass.async_block_till_done()
    assert hass.states.get(AGENT) is not None
    result = await conversation.async_converse(
        hass, "把灯调成绿色", None, Context(), language="zh-cn", agent_id=AGENT
    )
    assert result.response.response_type is not None
    assert result.response.speech["plain"]["speech"] == "好的。"
    (action,) = intent_actions(mqtt_mock)
    assert action["intents"][0]["normalized"]["color"] == "green"
    assert action["session_id"] == result.conversation_id


async def test_assist_sends_nothing_to_an_offline_body(
    hass: HomeAssistant, init_integration: MockConfigEntry, mqtt_mock: MqttMockHAClient
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    result = await conversation.async_converse(
        hass, "把灯调成绿色", None, Context(), language="zh-cn", agent_id=AGENT
    )
    assert result.response.speech["plain"]["speech"] == phrase("开灯", "unreachable")
    assert intent_actions(mqtt_mock) == []
    # Back online, the same command runs.
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "online")
    await hass.async_block_till_done()
    result = await conversation.async_converse(
        hass, "把灯调成绿色", None, Context(), language="zh-cn", agent_id=AGENT
    )
    assert result.response.speech["plain"]["speech"] == "好的。"
    assert len(intent_actions(mqtt_mock)) == 1


async def test_assist_with_the_model_and_home_assistant_tools(
    hass: HomeAssistant, fake_llm: FakeOpenAI, mqtt_mock: MqttMockHAClient
) -> None:
    assert await async_setup_component(hass, "intent", {})
    entry = await setup_soul_with_model(
        hass,
        fake_llm,
        {
            "name": "Aria",
            "mbti_type": "ENFP",
            "llm_hass_api": ["assist"],
        },
    )
    soul_id = next(iter(entry.subentries))
    entry.runtime_data.souls.bind(T, soul_id)
    announce(hass)
    await hass.async_block_till_done()
    agent = "conversation.aria"
    state = hass.states.get(agent)
    assert (
        state.attributes["supported_features"]
        == conversation.ConversationEntityFeature.CONTROL
    )
    provided = []
    provide = conversation.ChatLog.async_provide_llm_data

    async def counted(chat_log: conversation.ChatLog, *args: Any) -> None:
        provided.append(args)
        await provide(chat_log, *args)

    with patch.object(conversation.ChatLog, "async_provide_llm_data", counted):
        # A turn the intent filter answers needs no prompt and no LLM API.
        result = await conversation.async_converse(
            hass, "把灯调成绿色", None, Context(), language="zh-cn", agent_id=agent
        )
        assert result.response.speech["plain"]["speech"] == "好的。"
        assert provided == []
        fake_llm.reply("Hello from Aria!")
        result = await conversation.async_converse(
            hass,
            "What do you think about the weather?",
            None,
            Context(),
            language="en",
            agent_id=agent,
        )
    assert result.response.speech["plain"]["speech"] == "Hello from Aria!"
    assert len(provided) == 1  # given when the model is asked
    (request,) = fake_llm.chat_requests
    offered = {t["function"]["name"] for t in request["tools"]}
    assert "control_light" in offered  # the body's skills
    # and Assist's tools (newer Home Assistant prefixes their names)
    assert any(name.endswith("HassTurnOn") for name in offered)
    assert "Aria" in request["messages"][0]["content"]
    system = [m["content"] for m in request["messages"] if m["role"] == "system"]
    assert any("Home Assistant" in text for text in system[1:])  # its prompt


async def test_a_soul_without_a_body_talks(
    hass: HomeAssistant, fake_llm: FakeOpenAI, mqtt_mock: MqttMockHAClient
) -> None:
    """The model and Home Assistant's tools answer; the body's skills join later."""
    assert await async_setup_component(hass, "intent", {})
    hass.states.async_set("light.desk", "off", {"friendly_name": "Desk lamp"})
    entry = await setup_soul_with_model(
        hass,
        fake_llm,
        {
            "name": "Lonely",
            "mbti_type": "INFP",
            "llm_hass_api": ["assist"],
        },
    )
    agent = "conversation.lonely"
    fake_llm.reply("Hello! I have no body yet, but I can talk.")
    result = await conversation.async_converse(
        hass, "hello", None, Context(), language="en", agent_id=agent
    )
    assert result.response.error_code is None
    speech = result.response.speech["plain"]["speech"]
    assert speech == "Hello! I have no body yet, but I can talk."
    (request,) = fake_llm.chat_requests
    assert "You have no body yet" in request["messages"][0]["content"]
    offered = {t["function"]["name"] for t in request["tools"]}
    assert any(name.endswith("HassTurnOn") for name in offered)
    assert "control_light" not in offered
    assert not [
        c for c in mqtt_mock.async_publish.call_args_list if "/terminal/" in c.args[0]
    ]
    # Once a body is bound, its skills join.
    soul_id = next(iter(entry.subentries))
    entry.runtime_data.souls.bind(T, soul_id)
    announce(hass)
    await hass.async_block_till_done()
    fake_llm.reply("Now I have a body!")
    await conversation.async_converse(
        hass, "how do you feel?", None, Context(), language="en", agent_id=agent
    )
    offered = {t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]}
    assert "control_light" in offered
    assert (
        "You have no body yet"
        not in fake_llm.chat_requests[-1]["messages"][0]["content"]
    )


async def test_soul_bodies_llm_api(hass: HomeAssistant, body: Any) -> None:  # noqa: F811
    """Other agents drive the bodies through the "Soul bodies" API."""
    api = await llm.async_get_api(
        hass,
        "soul_bodies",
        llm.LLMContext(
            platform="test",
            context=Context(),
            language="en",
            assistant=None,
            device_id=None,
        ),
    )
    names = {tool.name for tool in api.tools}
    assert names == {
        "terminal-001_control_light", "terminal-001_create_alarm", "terminal-001_set_head_motion"
    }  # fmt: skip
    result = await api.async_call_tool(
        llm.ToolInput(
            tool_name="terminal-001_set_head_motion", tool_args={"action": "点头"}
        )
    )
    assert tool_output(result) == ({"ok": True, "output": "done", "error": None}, False)
    assert body.requests[-1]["skill"] == "set_head_motion"
    bad = await api.async_call_tool(
        llm.ToolInput(
            tool_name="terminal-001_control_light",
            tool_args={"mode": "on", "color": "pink"},
        )
    )
    data, error = tool_output(bad)
    assert data["ok"] is False
    assert error or not hasattr(llm, "ToolResult")  # 2026.2 has no error flag


async def test_an_llm_api_gone_fails_only_the_model_turn(
    hass: HomeAssistant, fake_llm: FakeOpenAI, mqtt_mock: MqttMockHAClient
) -> None:
    """An LLM API that no longer exists: the model turn says so, intents still run."""
    entry = await setup_soul_with_model(
        hass, fake_llm, {"name": "Aria", "mbti_type": "ENFP", "llm_hass_api": ["gone"]}
    )
    entry.runtime_data.souls.bind(T, next(iter(entry.subentries)))
    announce(hass)
    await hass.async_block_till_done()
    result = await conversation.async_converse(
        hass,
        "把灯调成绿色",
        None,
        Context(),
        language="zh-cn",
        agent_id="conversation.aria",
    )
    assert result.response.speech["plain"]["speech"] == "好的。"
    fake_llm.reply("never asked")
    result = await conversation.async_converse(
        hass,
        "How are you?",
        None,
        Context(),
        language="en",
        agent_id="conversation.aria",
    )
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "LLM API" in result.response.speech["plain"]["speech"]
    assert fake_llm.chat_requests == []


async def test_a_turn_that_says_nothing_is_still_an_answer(
    hass: HomeAssistant, init_integration: MockConfigEntry, mqtt_mock: MqttMockHAClient
) -> None:
    """An exclamation needs no action and no words (no_action, §4.4.3).

    A black-box run got "Unable to get response" in the Assist dialog and an
    error in the log: Home Assistant answers with the chat log's last
    assistant message, and the turn had added none.
    """
    announce(hass)
    await hass.async_block_till_done()
    result = await conversation.async_converse(
        hass, "哇，太好了！", None, Context(), language="zh-cn", agent_id=AGENT
    )
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert result.response.speech["plain"]["speech"] == ""
    assert intent_actions(mqtt_mock) == []
