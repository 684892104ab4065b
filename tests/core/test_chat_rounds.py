"""Model calls per turn (§2 steps 8-10) and no action through an absent body."""

from __future__ import annotations

import json

from custom_components.soul.core.chat_phrases import phrase
from custom_components.soul.core.topics import Kind
from devtools.fake_llm import FakeOpenAI, tool_call

from .test_chat import Env, T, llm  # noqa: F401  # fixture

NOD = tool_call("set_head_motion", {"action": "点头"})


async def test_a_skill_turn_is_one_model_call(
    fake_llm: FakeOpenAI,
    llm: object,  # noqa: F811
) -> None:
    env = Env(llm)  # type: ignore[arg-type]
    env.souls.bind(T, "s1")
    fake_llm.reply("好，我点头。", tool_calls=[NOD])
    response = await env.say("你同意吗？")
    assert len(fake_llm.chat_requests) == 1
    assert response["reply"] == "好，我点头。"
    assert response["executed_skills"] == ["set_head_motion"]
    assert [i["skill"] for i in env.body.on("invoke")] == ["set_head_motion"]
    # The result reaches the session: the next turn's prompt carries it.
    fake_llm.reply("刚才点过头了。")
    await env.say("你刚才做了什么？")
    prompt = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert '"type": "skill_result"' in prompt and '"ok": true' in prompt
    # A call without text is confirmed in the user's language.
    fake_llm.reply(tool_calls=[NOD])
    response = await env.say("Do you agree?")
    assert response["reply"] == phrase("Do you agree?", "done")
    assert len(fake_llm.chat_requests) == 3


async def test_a_failed_skill_is_said_not_the_models_promise(
    fake_llm: FakeOpenAI,
    llm: object,  # noqa: F811
) -> None:
    env = Env(llm)  # type: ignore[arg-type]
    env.souls.bind(T, "s1")
    env.body.answer = {"ok": False, "error": "motor stuck"}
    fake_llm.reply("好的，马上点头！", tool_calls=[NOD])
    response = await env.say("你同意吗？")
    assert response["executed_skills"] == []
    assert response["reply"] == phrase("你同意吗？", "failed", "set_head_motion")
    assert len(fake_llm.chat_requests) == 1


async def test_follow_up_rounds_are_an_option(
    fake_llm: FakeOpenAI,
    llm: object,  # noqa: F811
) -> None:
    env = Env(llm)  # type: ignore[arg-type]
    env.souls.bind(T, "s1")
    env.pipeline.follow_up = True
    fake_llm.reply(tool_calls=[NOD])
    fake_llm.reply("点好头啦！")
    response = await env.say("你同意吗？")
    assert len(fake_llm.chat_requests) == 2
    assert response["reply"] == "点好头啦！"
    tool_message = fake_llm.chat_requests[1]["messages"][-1]
    assert json.loads(tool_message["content"])["ok"] is True


async def test_nothing_is_sent_to_an_offline_body(
    fake_llm: FakeOpenAI,
    llm: object,  # noqa: F811
) -> None:
    env = Env(llm)  # type: ignore[arg-type]
    env.souls.bind(T, "s1")
    env.registry.handle_message(Kind.ONLINE, T, "offline")  # its LWT
    # The intent path: no intent_action, nothing executed, said in character.
    response = await env.say("把灯调成绿色")
    assert response["intent_decision"] == "execute_intents"
    assert response["executed_skills"] == []
    assert response["reply"] == phrase("把灯调成绿色", "unreachable")
    assert not env.body.on("intent_action")
    # The model path: the body's skills are not offered, the model is told.
    fake_llm.reply("我现在够不着我的身体。")
    response = await env.say("你觉得今天怎么样？")
    request = fake_llm.chat_requests[-1]
    offered = {t["function"]["name"] for t in request.get("tools") or []}
    assert not offered & {"control_light", "set_head_motion", "create_alarm"}
    assert "cannot be reached" in request["messages"][0]["content"]
    assert response["executed_skills"] == []
    assert not env.body.on("invoke")


async def test_a_stale_body_is_absent_too_and_a_yes_sends_nothing() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    state = env.souls._states["s1"]
    env.souls._states["s1"] = state.__class__(
        p=-0.5, a=0.0, d=0.0, at=state.at, last_input_at=state.at
    )
    response = await env.say("开灯")
    assert response["exec_mode"] == "confirm"
    # Silent past the heartbeat TTL before the yes.
    env.registry.ttl = 0.0
    env.registry.expire()
    response = await env.say("好的")
    assert response["executed_skills"] == []
    assert response["reply"] == phrase("好的", "unreachable")
    assert not env.body.on("intent_action")
