"""Assist on Home Assistant's chat log: one history, real streaming, every step recorded."""

from __future__ import annotations

import json
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
import pytest

from custom_components.soul.compat import tool_result_data
from custom_components.soul.const import (
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEMORY_BACKEND,
    CONF_TOPIC_PREFIX,
)
from custom_components.soul.core.reasoning import MAX_REPLY
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI, Reply, tool_call

from .test_terminals import Body, body  # noqa: F401  # fixture

AGENT = "conversation.friendly"


@pytest.fixture
def soul_options(fake_llm: FakeOpenAI) -> dict[str, Any]:
    """A hub with the fake model (and no memory)."""
    return {
        CONF_TOPIC_PREFIX: "soul",
        CONF_LLM_BASE_URL: fake_llm.base_url,
        CONF_LLM_MODEL: DEFAULT_MODEL,
        CONF_MEMORY_BACKEND: "none",
    }


def _content(hass: HomeAssistant, conversation_id: str) -> list[Any]:
    with (
        chat_session.async_get_chat_session(hass, conversation_id) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        return list(chat_log.content)


async def test_the_debug_view_shows_every_step(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    """Tool calls and results are in the chat log, then the reply.

    One model call (§2 step 8): its streamed text and its tool call, then the
    body's result; a call without text gets a short confirmation after it.
    """
    fake_llm.reply(
        "The lamp is on now.",
        tool_calls=[tool_call("control_light", {"mode": "on"}, "c1")],
    )
    result = await conversation.async_converse(
        hass, "Could you brighten things up?", None, Context(), "en", agent_id=AGENT
    )
    assert result.response.speech["plain"]["speech"] == "The lamp is on now."
    assert len(fake_llm.chat_requests) == 1
    content = _content(hass, result.conversation_id)
    roles = [c.role for c in content]
    # The streamed text with its call, the result, and the answer that closes
    # the turn (added whole: a voice pipeline does not say it twice).
    assert roles == ["system", "user", "assistant", "tool_result", "assistant"]
    assert content[2].content == content[4].content == "The lamp is on now."
    assert not content[4].tool_calls
    call = content[2].tool_calls[0]
    assert (call.tool_name, call.tool_args, call.id, call.external) == (
        "control_light",
        {"mode": "on"},
        "c1",
        True,
    )
    assert content[3].tool_call_id == "c1"
    assert tool_result_data(content[3])["ok"] is True
    assert body.requests[-1]["skill"] == "control_light"
    assert fake_llm.chat_requests[0].get("stream")
    # Without text, the confirmation follows the result.
    fake_llm.reply(tool_calls=[tool_call("set_head_motion", {"action": "点头"}, "c2")])
    result = await conversation.async_converse(
        hass, "Do you agree?", result.conversation_id, Context(), "en", agent_id=AGENT
    )
    assert result.response.speech["plain"]["speech"] == "Okay."
    content = _content(hass, result.conversation_id)
    assert [c.role for c in content[-3:]] == ["assistant", "tool_result", "assistant"]
    assert content[-1].content == "Okay."


async def test_one_history_serves_the_agent(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    """The second turn's model messages are the chat log's, tool steps included."""
    fake_llm.reply(
        "I nodded.", tool_calls=[tool_call("set_head_motion", {"action": "点头"}, "n1")]
    )
    first = await conversation.async_converse(
        hass, "Do you agree with me?", None, Context(), "en", agent_id=AGENT
    )
    fake_llm.reply("You asked me to nod.")
    await conversation.async_converse(
        hass, "What did I ask?", first.conversation_id, Context(), "en", agent_id=AGENT
    )
    messages = fake_llm.chat_requests[-1]["messages"]
    assert messages[0]["role"] == "system" and "friendly" in messages[0]["content"]
    history = [
        (m["role"], m.get("content")) for m in messages[1:] if m["role"] != "system"
    ]
    assert history[0] == ("user", "Do you agree with me?")
    assert ("tool", '{"ok": true, "output": "done", "error": null}') in history
    assert history[-2] == ("assistant", "I nodded.")
    assert history[-1] == ("user", "What did I ask?")
    tool_calls = [m for m in messages if m.get("tool_calls")]
    assert tool_calls[0]["tool_calls"][0]["function"]["name"] == "set_head_motion"


async def test_the_reply_streams_before_the_model_finishes(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    arrived: list[tuple[float, dict[str, Any]]] = []

    def listener(_chat_log: Any, delta: dict[str, Any]) -> None:
        arrived.append((time.monotonic(), delta))

    fake_llm.reply("Good evening, how was your day?", chunk_delay=0.3)
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(
            hass, session, chat_log_delta_listener=listener
        ),
    ):
        result = await conversation.async_converse(
            hass,
            "Tell me something nice",
            session.conversation_id,
            Context(),
            "en",
            agent_id=AGENT,
        )
        finished = time.monotonic()
    assert (
        result.response.speech["plain"]["speech"] == "Good evening, how was your day?"
    )
    pieces = [(at, d["content"]) for at, d in arrived if d.get("content")]
    assert len(pieces) >= 2
    assert "".join(p for _at, p in pieces) == "Good evening, how was your day?"
    # The first piece reached Assist while the model was still talking.
    assert pieces[0][0] < finished - 0.25


async def test_the_intent_path_and_no_reply_in_the_chat_log(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    result = await conversation.async_converse(
        hass, "把灯调成绿色", None, Context(), "zh-cn", agent_id=AGENT
    )
    content = _content(hass, result.conversation_id)
    assert content[-1].role == "assistant" and content[-1].content == "好的。"
    assert fake_llm.chat_requests == []  # no model for an intent
    fake_llm.reply("NO_REPLY")
    result = await conversation.async_converse(
        hass, "Hmm, interesting weather today", None, Context(), "en", agent_id=AGENT
    )
    content = _content(hass, result.conversation_id)
    assert not any(
        c.role == "assistant" and c.content and "NO_REPLY" in c.content for c in content
    )


async def test_a_json_answer_streams_its_reply_only(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    """The F-brain's JSON (XingChen-V §3.1): Assist shows the reply, never the rest."""
    answer = {
        "reply": "Let's take it slow tonight.",
        "inner_voice": "They sound exhausted; keep it short.",
        "emotion": "calm",
    }
    fake_llm.responders.append(
        lambda request: (
            Reply(content=json.dumps(answer), chunk_delay=0.001)
            if "response_format" in request
            else None
        )
    )
    result = await conversation.async_converse(
        hass, "What a long day it was.", None, Context(), "en", agent_id=AGENT
    )
    assert result.response.speech["plain"]["speech"] == answer["reply"]
    assert fake_llm.chat_requests[0].get("stream")
    content = _content(hass, result.conversation_id)
    shown = json.dumps([getattr(c, "content", None) for c in content])
    assert answer["inner_voice"] not in shown
    assert '"emotion"' not in shown


async def _streamed_turn(hass: HomeAssistant, text: str) -> tuple[Any, str, str]:
    """Ask Assist; return its result, what streamed into the chat log, and what it kept."""
    arrived: list[dict[str, Any]] = []
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(
            hass, session, chat_log_delta_listener=lambda _log, d: arrived.append(d)
        ),
    ):
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), "en", agent_id=AGENT
        )
    streamed = "".join(d.get("content") or "" for d in arrived)
    return result, streamed, _content(hass, result.conversation_id)[-1].content


async def test_a_reply_shows_no_image_nor_tag(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    """A model's image made every reader's browser fetch its address (black box).

    The fake streams the reply in two halves, cut between "!" and "[": the
    pair is still found. A link stays a link.
    """
    tail = "[m](http://evil.example/a.png) <img src=x> [ok](http://a.example) a<b"
    head = "Look" + "!"
    head = "x" * (len(tail) - len(head)) + head  # the halves meet at "!" | "["
    fake_llm.reply(head + tail)
    result, streamed, kept = await _streamed_turn(hass, "Show me")
    tamed = (
        head
        + "［m](http://evil.example/a.png) ＜img src=x> [ok](http://a.example) a＜b"
    )
    assert result.response.speech["plain"]["speech"] == tamed
    assert streamed == tamed
    assert kept == tamed


async def test_a_streamed_reply_is_cut_as_the_whole(
    hass: HomeAssistant,
    fake_llm: FakeOpenAI,
    body: Body,  # noqa: F811
) -> None:
    """Each streamed piece was cut, not the reply: 2 MB reached Assist (black box)."""
    fake_llm.reply("x" * (3 * MAX_REPLY))  # two pieces, each longer than the cut
    result, streamed, kept = await _streamed_turn(hass, "Talk")
    assert streamed == result.response.speech["plain"]["speech"] == "x" * MAX_REPLY
    assert kept == streamed
