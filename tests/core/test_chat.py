"""The chat pipeline (§4.2) against a real OpenAI-compatible HTTP test server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import json
from typing import Any

import pytest

from custom_components.soul.core.chat import ChatPipeline
from custom_components.soul.core.chat_phrases import normalize_reply, phrase
from custom_components.soul.core.chat_request import (
    NO_SOUL_ERROR,
    TEXT_INPUT_ERROR,
    ChatError,
    parse_chat_request,
)
from custom_components.soul.core.invoker import Invoker
from custom_components.soul.core.llm import LLMEndpoint, OpenAICompatibleLLM
from custom_components.soul.core.reasoning import MAX_REPLY
from custom_components.soul.core.soul import Soul
from custom_components.soul.core.souls import SoulHub
from custom_components.soul.core.topics import Topics
from devtools.fake_llm import DEFAULT_MODEL, FakeOpenAI, tool_call

from .spec_payloads import announced

T = "terminal-001"
T0 = 1_771_753_200.0  # 2026-02-22T09:40:00Z = 17:40 in Shanghai


class Body:
    """A body on a fake bus: records publishes and answers invocations."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, Any]]] = []
        self.invoker: Invoker | None = None
        self.answer: dict[str, Any] | None = {"ok": True, "output": "done"}

    async def publish(self, topic: str, payload: str, qos: int, retain: bool) -> None:
        message = json.loads(payload)
        self.published.append((topic, message))
        if "/invoke/" in topic and self.answer is not None and self.invoker is not None:
            result = {"request_id": message["request_id"], **self.answer}
            asyncio.get_running_loop().call_soon(
                self.invoker.handle_result, T, message["request_id"], json.dumps(result)
            )

    def on(self, kind: str) -> list[dict[str, Any]]:
        return [
            m for t, m in self.published if t.endswith(f"/{kind}") or f"/{kind}/" in t
        ]


class Env:
    """Registry, souls, invoker and pipeline around one announced terminal."""

    def __init__(self, model: OpenAICompatibleLLM | None, mbti: str = "ENFP") -> None:
        self.now = T0
        self.body = Body()
        topics = Topics("soul")
        self.registry = announced(T)
        self.souls = SoulHub(
            topics, self.body.publish, clock=lambda: self.now, is_online=lambda _t: True
        )
        self.souls.set_souls([Soul("s1", "Aria", mbti, "Cheerful desk robot.")])
        self.invoker = Invoker(self.registry, topics, self.body.publish, timeout=0.5)
        self.body.invoker = self.invoker
        self.pipeline = ChatPipeline(
            self.registry,
            self.souls,
            self.invoker,
            topics,
            self.body.publish,
            clock=lambda: self.now,
            model=model,
            default_timezone=lambda: "Asia/Shanghai",
        )

    async def say(self, text: str, **extra: Any) -> dict[str, Any]:
        body = {
            "session_id": "s1",
            "terminal_id": T,
            "inputs": [{"type": "keyboard_text", "text": text}],
            **extra,
        }
        return await self.pipeline.chat(body)


@pytest.fixture
async def llm(fake_llm: FakeOpenAI) -> AsyncGenerator[OpenAICompatibleLLM]:
    client = OpenAICompatibleLLM(LLMEndpoint(fake_llm.base_url, DEFAULT_MODEL))
    yield client
    await client.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "JSON object"),
        ({"terminal_id": T, "inputs": [{"type": "keyboard_text", "text": "x"}]}, "session_id is required"),
        ({"session_id": "s", "inputs": [{"type": "keyboard_text", "text": "x"}]}, "terminal_id is required"),
        ({"session_id": "s", "terminal_id": T}, "inputs is required"),
        ({"session_id": "s", "terminal_id": T, "inputs": []}, "inputs is required"),
        ({"session_id": "s", "terminal_id": T, "inputs": [{"type": "image", "media": {}}]}, TEXT_INPUT_ERROR),
        ({"session_id": "s", "terminal_id": T, "inputs": [{"type": "keyboard_text", "text": "  "}]}, TEXT_INPUT_ERROR),
        ({"session_id": "s", "terminal_id": T, "inputs": ["x"]}, "every input must be an object"),
    ],
)  # fmt: skip
def test_request_validation(body: Any, message: str) -> None:
    with pytest.raises(ChatError, match=message.replace("|", r"\|")):
        parse_chat_request(body)


def test_other_inputs_are_context() -> None:
    request = parse_chat_request(
        {
            "session_id": "s",
            "terminal_id": T,
            "inputs": [
                {"type": "presence", "value": True},
                {"type": "speech_text", "text": " 开灯 "},
            ],
        }
    )
    assert request.text == "开灯"
    assert request.context == ({"type": "presence", "value": True},)


@pytest.mark.parametrize(
    ("raw", "reply"),
    [
        ("<NO_REPLY>", ""),
        ("NO_REPLY", ""),
        (" [NO_REPLY] ", ""),
        (None, ""),
        ("Hi", "Hi"),
    ],
)
def test_no_reply(raw: str | None, reply: str) -> None:
    assert normalize_reply(raw) == reply


async def test_no_soul_is_an_error() -> None:
    env = Env(None)
    with pytest.raises(ChatError, match=NO_SOUL_ERROR):
        await env.say("开灯")
    # Naming an existing soul in the request selects it.
    response = await env.say("开灯", soul_id="s1")
    assert response["soul_id"] == "s1"


async def test_intent_path_publishes_intent_action_without_a_model() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    response = await env.say("把灯调成绿色")
    assert response["intent_decision"] == "execute_intents"
    assert response["exec_mode"] == "auto_execute"
    assert response["executed_skills"] == ["control_light"]
    assert response["reply"]
    assert set(response) == {
        "session_id", "terminal_id", "soul_id", "reply", "executed_skills",
        "context_summary", "intent_decision", "exec_mode", "exec_probability",
        "trace_id",  # Soul's extra field: the turn's events in the journal
    }  # fmt: skip
    # emotion_update first (recognition), then intent_action.
    kinds = [t.rsplit("/", 1)[-1] for t, _ in env.body.published]
    assert kinds == ["emotion_update", "intent_action"]
    (action,) = env.body.on("intent_action")
    assert action["session_id"] == "s1" and action["soul_id"] == "s1"
    assert action["intents"][0]["normalized"] == {
        "skill": "control_light", "mode": "set_color", "color": "green"
    }  # fmt: skip
    assert action["exec_probability"] == response["exec_probability"]
    assert env.pipeline.last_route == "intent"


async def test_blocked_soul_declines_and_confirm_asks_first() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    response = await env.say("气死我了！！！滚！！！")  # a shock
    assert response["exec_mode"] == "blocked"
    response = await env.say("开灯")
    assert response["exec_mode"] == "blocked"
    assert response["executed_skills"] == []
    assert not env.body.on("intent_action")
    assert response["reply"]

    confirm = Env(None)
    confirm.souls.bind(T, "s1")
    state = confirm.souls._states["s1"]
    confirm.souls._states["s1"] = state.__class__(
        p=-0.5, a=0.0, d=0.0, at=state.at, last_input_at=state.at
    )
    response = await confirm.say("开灯")
    assert response["exec_mode"] == "confirm"
    assert not confirm.body.on("intent_action")
    assert "?" in response["reply"] or "？" in response["reply"]
    response = await confirm.say("好的")
    assert response["executed_skills"] == ["control_light"]
    assert len(confirm.body.on("intent_action")) == 1


async def test_no_action_and_no_model() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    response = await env.say("不要开灯")
    assert response["intent_decision"] == "no_action"
    assert response["reply"] == ""
    response = await env.say("讲个笑话吧")
    assert response["intent_decision"] == "fallback_reasoning"
    assert "语言模型" in response["reply"]
    response = await env.say("Tell me a joke")
    assert "language model" in response["reply"]


async def test_no_action_is_answered_in_words_by_a_model(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    """§4.4.3: a feeling runs nothing, but the soul may answer it (情绪回应)."""
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply(
        "抱抱你，我在这儿。",
        tool_calls=[tool_call("control_light", {"mode": "on"})],  # ignored
    )
    response = await env.say("不要开灯")
    assert response["intent_decision"] == "no_action"
    assert response["reply"] == "抱抱你，我在这儿。"
    assert response["executed_skills"] == []
    (request,) = fake_llm.chat_requests
    assert not request.get("tools")  # words only
    assert not env.body.on("intent_action") and not env.body.on("invoke")


async def test_llm_tool_call_round_trip(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    env.pipeline.follow_up = True  # the model reads the results
    fake_llm.reply(tool_calls=[tool_call("set_head_motion", {"action": "点头"})])
    fake_llm.reply("点好头啦！")
    response = await env.say("你觉得今天怎么样？")
    assert response["intent_decision"] == "fallback_reasoning"
    assert response["reply"] == "点好头啦！"
    assert response["executed_skills"] == ["set_head_motion"]
    (invoke,) = env.body.on("invoke")
    assert invoke["skill"] == "set_head_motion"
    first, second = fake_llm.chat_requests
    assert {t["function"]["name"] for t in first["tools"]} == {
        "control_light", "create_alarm", "set_head_motion"
    }  # fmt: skip
    assert "Aria" in first["messages"][0]["content"]
    assert "Cheerful desk robot." in first["messages"][0]["content"]
    assert "Your mood is" in first["messages"][0]["content"]
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"])["ok"] is True
    # Both calls' tokens are counted (the test server reports usage).
    assert env.pipeline.usage["prompt_tokens"] > 0
    assert env.pipeline.usage["completion_tokens"] > 0
    assert env.pipeline.last_route == "llm"


async def test_malformed_and_invalid_tool_calls_are_fed_back(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    env.pipeline.follow_up = True  # the model reads the results
    fake_llm.reply(
        tool_calls=[
            tool_call("set_head_motion", "{not json"),
            tool_call("set_head_motion", {"action": "dance"}),
            tool_call("no_such_skill", {}),
        ]
    )
    fake_llm.reply("<NO_REPLY>")
    response = await env.say("随便做点什么吧")
    assert response["reply"] == ""
    assert response["executed_skills"] == []
    assert not env.body.on("invoke")
    results = [
        json.loads(m["content"])
        for m in fake_llm.chat_requests[1]["messages"]
        if m["role"] == "tool"
    ]
    assert [r["ok"] for r in results] == [False, False, False]
    assert "not valid JSON" in results[0]["error"]
    assert "invalid arguments" in results[1]["error"]
    assert "no skill" in results[2]["error"]


async def test_rounds_are_bounded(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    env.pipeline.follow_up = True  # the model reads the results
    env.pipeline.max_rounds = 2
    for _ in range(3):
        fake_llm.reply(
            "thinking", tool_calls=[tool_call("set_head_motion", {"action": "点头"})]
        )
    response = await env.say("陪我玩个游戏吧")
    assert len(fake_llm.chat_requests) == 2
    assert response["executed_skills"] == ["set_head_motion", "set_head_motion"]


@pytest.mark.parametrize("status", [401, 500])
async def test_llm_errors_give_a_reply(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM, status: int
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.fail(status)
    fake_llm.fail(status)  # the client retries once
    response = await env.say("你觉得人生的意义是什么？")
    assert response["intent_decision"] == "fallback_reasoning"
    assert response["reply"]
    assert response["executed_skills"] == []


async def test_idle_sessions_are_summarised_once(fake_llm: FakeOpenAI) -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    await env.say("我叫小明，我喜欢绿色")
    env.now += 120
    await env.say("把灯调成绿色")
    env.now += 179  # the second user turn reset the 3-minute timer
    assert await env.pipeline.summarize_idle() == []
    env.now += 1
    (session,) = await env.pipeline.summarize_idle()
    assert "小明" in session.summary and "绿色" in session.summary
    env.now += 600
    assert await env.pipeline.summarize_idle() == []  # nothing new said
    response = await env.say("你好")
    assert response["context_summary"] == f"{session.summary} / 你好"


async def test_summary_by_the_model(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("你是小明呀。")  # the turn
    fake_llm.reply("用户小明喜欢绿色。")  # the summary
    await env.say("你觉得我是谁？")
    env.now += 180
    (session,) = await env.pipeline.summarize_idle()
    assert session.summary == "用户小明喜欢绿色。"
    # A failing model falls back to the extractive summary.
    fake_llm.fail(500)
    fake_llm.fail(500)
    fake_llm.fail(500)
    fake_llm.fail(500)
    await env.say("今天天气怎么样？")
    env.now += 180
    (session,) = await env.pipeline.summarize_idle()
    assert "今天天气怎么样" in session.summary


async def test_pending_sessions_survive_a_restart() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    await env.say("记住我家猫叫咪咪")
    stored = json.loads(json.dumps(env.pipeline.sessions.dump()))
    later = Env(None)
    later.now = env.now + 3600  # down for an hour
    later.pipeline.sessions.load(stored)
    later.pipeline.sessions.load({"sessions": [{"session_id": "broken"}]})  # ignored
    (session,) = await later.pipeline.summarize_idle()
    assert "咪咪" in session.summary


class HassTools:
    """Extra tools as Home Assistant's Assist API would offer them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.specs = [
            {
                "type": "function",
                "function": {
                    "name": "HassTurnOn",
                    "description": "Turns on a device",
                    "parameters": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "Broken",
                    "description": "fails",
                    "parameters": {},
                },
            },
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        if name == "Broken":
            raise RuntimeError("no such device")
        return {"success": True}


async def test_extra_tools_next_to_skills(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    env.pipeline.follow_up = True  # the model reads the results
    tools = HassTools()
    fake_llm.reply(
        tool_calls=[
            tool_call("HassTurnOn", {"name": "kitchen fan"}),
            tool_call("Broken", {}),
            tool_call("set_head_motion", {"action": "点头"}),
        ]
    )
    fake_llm.reply("Done.")
    response = await env.pipeline.chat(
        {
            "session_id": "s1",
            "terminal_id": T,
            "inputs": [
                {"type": "speech_text", "text": "Could you help me with the kitchen?"}
            ],
        },
        extra_tools=tools,
    )
    assert response["reply"] == "Done."
    assert response["executed_skills"] == ["HassTurnOn", "set_head_motion"]
    assert tools.calls == [("HassTurnOn", {"name": "kitchen fan"}), ("Broken", {})]
    offered = {t["function"]["name"] for t in fake_llm.chat_requests[0]["tools"]}
    assert {"HassTurnOn", "Broken", "control_light", "set_head_motion"} <= offered
    results = [
        json.loads(m["content"])
        for m in fake_llm.chat_requests[1]["messages"]
        if m["role"] == "tool"
    ]
    assert results[1] == {"ok": False, "error": "RuntimeError: no such device"}


async def test_the_prompt_carries_the_users_emotion(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("抱抱你。")
    await env.say("我好难过，你能陪我聊聊吗？")
    system = fake_llm.chat_requests[0]["messages"][0]["content"]
    assert "The user's emotion: sadness" in system


async def test_a_slow_model_times_out_into_a_reply(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    class Impatient:
        async def chat(self, messages: Any, tools: Any, **kwargs: Any) -> Any:
            return await llm.chat(messages, tools, timeout=0.2, **kwargs)

    env = Env(None)
    env.pipeline.model = Impatient()
    env.souls.bind(T, "s1")
    fake_llm.reply("too late", delay=2)
    fake_llm.reply("too late", delay=2)
    response = await env.say("你觉得呢？")
    assert response["reply"]
    assert response["reply"] != "too late"
    assert env.pipeline.last_route == "llm"


async def test_hostile_model_replies_are_bounded_and_storable(
    fake_llm: FakeOpenAI, llm: OpenAICompatibleLLM
) -> None:
    """Issue 13: a 20 MB reply was stored whole; a lone surrogate poisons stores."""
    env = Env(llm)
    env.souls.bind(T, "s1")
    huge = '"' + "\\ud800" + "话" * 300_000 + '"'
    fake_llm.raw(
        '{"id": "c1", "object": "chat.completion", "created": 1, "model": "m",'
        ' "choices": [{"index": 0, "finish_reason": "stop", "message":'
        f' {{"role": "assistant", "content": {huge}}}}}]}}',
        "application/json",
    )
    response = await env.say("你觉得人生的意义是什么？")
    assert 0 < len(response["reply"]) <= MAX_REPLY
    json.dumps(env.pipeline.sessions.dump(), ensure_ascii=False).encode("utf-8")
    assert response["reply"].startswith("\ufffd")
    # An HTML page instead of a completion is a reply in character too.
    fake_llm.raw("<html><body>Bad gateway</body></html>")
    response = await env.say("你觉得呢？", session_id="s2")
    assert response["reply"]
    assert response["executed_skills"] == []


@pytest.mark.parametrize("key", ["clarify", "confirm", "blocked", "failed", "undone"])
def test_a_bodys_words_in_a_reply_make_no_markdown(key: str) -> None:
    """A slot named "![m](http://…)" became a picture in Assist (black box).

    Each time the reply was shown, the browser fetched it from the body
    owner's server; a link could be planted the same way.
    """
    hostile = (
        "![m](http://evil.example/p.png) [sign in](http://evil.example)"
        " <img src=http://evil.example/q.png> <http://evil.example/r>"
        " https://evil.example/s www.evil.example WWW.evil.example me@evil.example"
    )
    for text in ("turn it on", "开灯"):
        reply = phrase(text, key, hostile)
        assert not set("[]<>@") & set(reply)
        assert "://" not in reply
        assert "www." not in reply.lower()
        assert "!［m］(http：//evil.example/p.png) ［sign in］" in reply
        assert "＜img src=http：//evil.example/q.png＞" in reply
        assert "https：//evil.example/s www．evil.example WWW．evil.example" in reply
        assert "me＠evil.example" in reply
