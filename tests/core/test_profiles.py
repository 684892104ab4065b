"""The profile store (XingChen-V §5.2) and the F-brain's update_user_profile tool."""

from __future__ import annotations

import json

import pytest

from custom_components.soul.core.cognition.profiles import (
    MAX_PREFERENCES,
    UPDATE_PROFILE_TOOL,
    ProfileError,
    ProfileStore,
)
from custom_components.soul.core.llm import OpenAICompatibleLLM
from devtools.fake_llm import FakeOpenAI, tool_call

from .test_chat import Env, T, llm  # noqa: F401  # fixture


def store(now: list[float] | None = None) -> tuple[ProfileStore, list[int]]:
    clock = now or [100.0]
    dirty: list[int] = []
    return ProfileStore(clock=lambda: clock[0], on_dirty=lambda: dirty.append(1)), dirty


def test_profiles_are_checked_bounded_and_stored() -> None:
    profiles, dirty = store()
    profile = profiles.update("u1", name=" 小明 ", preferences={"drink": "green tea"})
    assert (profile.name, profile.preferences) == ("小明", {"drink": "green tea"})
    assert dirty
    profiles.update("u1", preferences={"drink": "", "music": "jazz"})
    assert profiles.users["u1"].preferences == {"music": "jazz"}
    for bad in (
        {"name": "x" * 65},
        {"name": "bad\nname"},
        {"name": 7},
        {"preferences": {"": "x"}},
        {"preferences": {"k": "\ud800"}},
        {"preferences": ["not", "an", "object"]},
        {"preferences": {f"k{i}": "v" for i in range(MAX_PREFERENCES + 1)}},
    ):
        with pytest.raises(ProfileError):
            profiles.update("u1", **bad)
    assert profiles.users["u1"].preferences == {"music": "jazz"}  # unchanged
    assert profiles.prompt_line("u1") == (
        "About the user: their name is 小明; preferences: music: jazz."
    )
    assert profiles.prompt_line("nobody") is None
    again, _ = store()
    again.load(json.loads(json.dumps(profiles.dump())))
    assert again.users["u1"].as_dict() == profiles.users["u1"].as_dict()
    again.load({"user_profiles": {"u2": {"name": "\ud800"}, 5: {}}, "system_states": 3})
    assert "u2" not in again.users


def test_boots_are_counted_per_soul() -> None:
    now = [1000.0]
    profiles, _ = store(now)
    profiles.boot(["s1", "s2"], "1.0")
    now[0] = 2000.0
    profiles.boot(["s1"], "1.1")
    s1 = profiles.systems["s1"].as_dict()
    assert s1 == {
        "version": "1.1",
        "boot_count": 2,
        "first_boot": 1000.0,
        "last_boot": 2000.0,
    }
    assert profiles.systems["s2"].boot_count == 1
    profiles.forget_souls_except({"s1"})
    assert set(profiles.systems) == {"s1"}


async def test_the_model_records_what_the_user_tells(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    profiles, _ = store()
    env.pipeline.reasoner.profiles = profiles
    fake_llm.reply(
        "记住啦，小明！",
        tool_calls=[
            tool_call(
                UPDATE_PROFILE_TOOL, {"name": "小明", "preferences": {"drink": "绿茶"}}
            )
        ],
    )
    response = await env.say("你好，我叫小明，我爱喝绿茶", user_id="u1")
    assert response["reply"] == "记住啦，小明！"
    assert response["executed_skills"] == [UPDATE_PROFILE_TOOL]
    assert len(fake_llm.chat_requests) == 1  # no second round for it
    offered = {t["function"]["name"] for t in fake_llm.chat_requests[0]["tools"]}
    assert UPDATE_PROFILE_TOOL in offered
    assert profiles.users["u1"].preferences == {"drink": "绿茶"}
    fake_llm.reply("当然记得，你是小明。")
    await env.say("你记得我是谁吗？", user_id="u1")
    prompt = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert "About the user: their name is 小明; preferences: drink: 绿茶." in prompt
    # Invalid arguments are an error the model reads; nothing changes.
    fake_llm.reply(
        "好的。", tool_calls=[tool_call(UPDATE_PROFILE_TOOL, {"name": "x" * 100})]
    )
    response = await env.say("我改名了", user_id="u1")
    assert UPDATE_PROFILE_TOOL not in response["executed_skills"]
    assert profiles.users["u1"].name == "小明"


async def test_no_profile_tool_without_a_user(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    env.pipeline.reasoner.profiles, _ = store()
    fake_llm.reply("你好。")
    await env.say("你觉得人生的意义是什么？")
    offered = {
        t["function"]["name"] for t in fake_llm.chat_requests[0].get("tools", [])
    }
    assert UPDATE_PROFILE_TOOL not in offered
