"""The F-brain's JSON answer (XingChen-V §3.1) against a real HTTP test server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from custom_components.soul.core.cognition.driver import (
    JSON_INSTRUCTION,
    ReplyField,
    parse_driver_reply,
)
from custom_components.soul.core.cognition.events import EventType
from custom_components.soul.core.emotion.labels import Emotion
from custom_components.soul.core.llm import OpenAICompatibleLLM
from devtools.fake_llm import FakeOpenAI, Reply, tool_call

from .test_chat import Env, T, llm  # noqa: F401  # fixture
from .test_chat_trace import traced

ANSWER = {
    "reply": "好呀，我们一起听歌！",
    "inner_voice": "他今天好像很累。",
    "emotion": "joy",
}


def structured(body: dict[str, Any]) -> Reply | None:
    """An endpoint that follows response_format: the F-brain's JSON."""
    if body.get("response_format", {}).get("type") == "json_schema":
        return Reply(content=json.dumps(ANSWER, ensure_ascii=False))
    return None


def refuses_formats(body: dict[str, Any]) -> Reply | None:
    """An endpoint without structured output: the request is refused."""
    if "response_format" in body:
        return Reply(status=400, error="response_format is not supported")
    return None


@pytest.mark.parametrize(
    ("content", "reply", "inner", "emotion"),
    [
        (json.dumps(ANSWER), ANSWER["reply"], ANSWER["inner_voice"], Emotion.JOY),
        ("```json\n" + json.dumps(ANSWER) + "\n```", ANSWER["reply"], ANSWER["inner_voice"], Emotion.JOY),
        ("```json\n" + json.dumps(ANSWER), ANSWER["reply"], ANSWER["inner_voice"], Emotion.JOY),  # never closed
        ('{"reply": "hi", "emotion": "JOY"}', "hi", None, Emotion.JOY),
        ('{"reply": "hi", "emotion": "smug"}', "hi", None, None),
        ("Just words.", "Just words.", None, None),
        ('{"answer": "x"}', '{"answer": "x"}', None, None),
        ("{broken", "{broken", None, None),
    ],
)  # fmt: skip
def test_replies_are_read_tolerantly(
    content: str, reply: str, inner: str | None, emotion: Emotion | None
) -> None:
    said = parse_driver_reply(content, 4096)
    assert (said.reply, said.inner_voice, said.emotion) == (reply, inner, emotion)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50])
def test_only_the_reply_streams(size: int) -> None:
    for text in (json.dumps(ANSWER), json.dumps(ANSWER, ensure_ascii=False)):
        field = ReplyField()
        pieces = [field.feed(text[i : i + size]) for i in range(0, len(text), size)]
        assert "".join(pieces) == ANSWER["reply"]
    field = ReplyField()
    assert field.feed("  plain") + field.feed(" words") == "  plain words"


async def test_structured_output_is_used_and_the_inner_voice_kept_apart(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    fake_llm.responders.append(structured)
    before = env.souls.snapshot("s1")
    response = await env.say("今天好累啊，陪我聊聊")
    assert response["reply"] == ANSWER["reply"]
    request = fake_llm.chat_requests[-1]
    assert request["response_format"]["json_schema"]["name"] == "soul_reply"
    assert env.pipeline.reasoner.structured is True
    # The inner voice reaches the journal only: not the reply, not the body.
    driver = [e for e in journal.events if e.type is EventType.DRIVER_RESPONSE][-1]
    assert driver.payload["inner_voice"] == ANSWER["inner_voice"]
    assert driver.payload["content"] == ANSWER["reply"]
    published = json.dumps([m for _t, m in env.body.published], ensure_ascii=False)
    assert ANSWER["inner_voice"] not in published
    assert ANSWER["inner_voice"] not in json.dumps(
        env.pipeline.sessions.dump(), ensure_ascii=False
    )
    # The soul's own joy moved it: a psyche_update with reason driver_emotion.
    moved = [e for e in journal.events if e.type is EventType.PSYCHE_UPDATE]
    assert [e.payload["reason"] for e in moved] == ["user_emotion", "driver_emotion"]
    assert moved[-1].payload["emotion"] == "joy"
    after = env.souls.snapshot("s1")
    assert before is not None and after is not None
    assert moved[-1].trace_id == response["trace_id"]


async def test_an_endpoint_without_structured_output_is_instructed(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.responders.append(refuses_formats)
    fake_llm.reply(json.dumps(ANSWER, ensure_ascii=False))
    response = await env.say("你觉得人生的意义是什么？")
    assert response["reply"] == ANSWER["reply"]
    first, second = fake_llm.chat_requests
    assert "response_format" in first and "response_format" not in second
    assert JSON_INSTRUCTION in second["messages"][0]["content"]
    assert env.pipeline.reasoner.structured is False
    # Remembered: the next turn asks once, instructed, and a plain answer is fine.
    fake_llm.reply("就是普通的一句话。")
    response = await env.say("你好")
    assert response["reply"] == "就是普通的一句话。"
    assert len(fake_llm.chat_requests) == 3
    assert "response_format" not in fake_llm.chat_requests[-1]


async def test_an_endpoint_that_ignores_the_format_is_instructed_next_time(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("I answer plainly.")
    response = await env.say("hello there")
    assert response["reply"] == "I answer plainly."
    assert env.pipeline.reasoner.structured is False
    fake_llm.reply(
        json.dumps(ANSWER, ensure_ascii=False),
        tool_calls=[tool_call("set_head_motion", {"action": "点头"})],
    )
    response = await env.say("你同意吗？")
    assert response["reply"] == ANSWER["reply"]
    assert JSON_INSTRUCTION in fake_llm.chat_requests[-1]["messages"][0]["content"]
