"""The S-brain (XingChen-V §3.2) against a real OpenAI-compatible HTTP test server."""

from __future__ import annotations

import asyncio
from dataclasses import replace
import json
from typing import Any

import pytest

from custom_components.soul.core.cognition.events import EventType, Source
from custom_components.soul.core.cognition.navigator import (
    MAX_DELTA,
    SUGGESTION_TURNS,
    Navigator,
    parse_advice,
)
from custom_components.soul.core.llm import OpenAICompatibleLLM
from custom_components.soul.core.memory.manager import MemoryManager
from devtools.fake_llm import FakeOpenAI, Reply

from .test_chat import Env, T, llm  # noqa: F401  # fixture
from .test_chat_trace import traced
from .test_memory_manager import ListMemory

ADVICE = {
    "suggestion": "Ask how their day went before anything else.",
    "psyche_delta": {"pleasure": 0.5, "arousal": -0.1, "dominance": 0.0},
    "memory_archival": True,
    "evolution_request": "need_calendar_tool",
    "skill": None,
}


def navigator_answers(advice: dict[str, Any], delay: float = 0.0):
    def respond(body: dict[str, Any]) -> Reply | None:
        if body["messages"][0]["content"].startswith("You are the navigator"):
            return Reply(content=json.dumps(advice), delay=delay)
        return None

    return respond


class Wired:
    """A pipeline with its navigator, the tasks it spawned and its evolutions."""

    def __init__(self, env: Env, **options: Any) -> None:
        self.env = env
        self.tasks: list[asyncio.Task[Any]] = []
        self.evolutions: list[tuple[str, str, str | None]] = []
        self.navigator = Navigator(
            env.souls,
            model=lambda: env.pipeline.model,
            events=lambda: env.pipeline.events,
            memory=lambda: env.pipeline.memory,
            profiles=lambda: None,
            clock=lambda: env.now,
            spawn=lambda coro: self.tasks.append(asyncio.ensure_future(coro)),
            archive=env.pipeline.archive,
            on_evolution=lambda *args: self.evolutions.append(args),
            **options,
        )
        env.pipeline.navigator = self.navigator

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)


def test_advice_is_read_and_bounded() -> None:
    advice = parse_advice(json.dumps(ADVICE))
    assert advice is not None
    assert advice.psyche_delta == {"p": MAX_DELTA, "a": -0.1, "d": 0.0}
    assert advice.memory_archival and advice.evolution_request == "need_calendar_tool"
    odd = parse_advice(
        '```json\n{"suggestion": 5, "psyche_delta": {"curiosity": 0.1, "p": "x",'
        ' "a": -9, "d": true}, "memory_archival": "yes"}\n```'
    )
    assert odd is not None
    assert (odd.suggestion, odd.psyche_delta, odd.memory_archival) == (
        None, {"a": -MAX_DELTA}, False
    )  # fmt: skip
    assert parse_advice("I think the user is tired.") is None
    assert parse_advice("[1, 2]") is None


async def test_every_nth_turn_reflects_and_the_advice_is_applied(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    wired = Wired(env, every_turns=2, swing=10)
    fake_llm.responders.append(navigator_answers(ADVICE))
    for _ in range(2):
        fake_llm.reply("嗯嗯。")
        await env.say("你觉得人生的意义是什么？", user_id="u1")
    assert len(wired.tasks) == 1
    before = env.souls.snapshot("s1")
    await wired.settle()
    after = env.souls.snapshot("s1")
    assert before is not None and after is not None
    assert after.p == pytest.approx(min(1.0, before.p + MAX_DELTA), abs=0.02)
    kinds = [(e.type, e.source) for e in journal.events[-4:]]
    assert kinds == [
        (EventType.NAVIGATOR_SUGGESTION, Source.NAVIGATOR),
        (EventType.PSYCHE_UPDATE, Source.NAVIGATOR),
        (EventType.SYSTEM_NOTIFICATION, Source.SYSTEM),  # evolution requested
        (EventType.SYSTEM_NOTIFICATION, Source.SYSTEM),  # session archived
    ]
    assert journal.events[-3].payload["reason"] == "navigator"
    assert journal.events[-2].payload["request"] == "need_calendar_tool"
    assert wired.evolutions == [("s1", "need_calendar_tool", "u1")]
    session = env.pipeline.sessions["s1"]
    assert session.summary  # archived now, not at idle
    navigator_request = next(
        r for r in fake_llm.chat_requests
        if r["messages"][0]["content"].startswith("You are the navigator")
    )  # fmt: skip
    situation = json.loads(navigator_request["messages"][1]["content"])
    assert situation["conversation"][-1]["role"] == "assistant"
    assert set(situation["psyche"]) >= {"pleasure", "arousal", "dominance"}
    # The suggestion joins the next model turns of its session only, then
    # expires: another user's session with the same soul never reads it (it
    # may repeat what u1 said; black box, 2026-11-29).
    wired.navigator.every_turns = 1000  # no other run meanwhile
    fake_llm.reply("好。")
    await env.say("你好吗？", user_id="u2", session_id="s2")
    assert (
        ADVICE["suggestion"] not in fake_llm.chat_requests[-1]["messages"][0]["content"]
    )
    for _ in range(SUGGESTION_TURNS + 1):
        fake_llm.reply("好。")
        await env.say("你好吗？", user_id="u1")
    prompts = [r["messages"][0]["content"] for r in fake_llm.chat_requests[-4:]]
    assert [ADVICE["suggestion"] in p for p in prompts] == [True, True, True, False]


async def test_a_strong_swing_reflects_at_once() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    wired = Wired(env, every_turns=100, swing=0.3)
    ran: list[str] = []

    async def run(_session: Any, reason: str) -> None:
        ran.append(reason)

    wired.navigator.run = run  # type: ignore[method-assign]
    await env.say("你好")
    env.pipeline.model = object()  # type: ignore[assignment]  # a model exists
    session = env.pipeline.sessions["s1"]
    calm = env.souls.snapshot("s1")
    assert calm is not None
    assert wired.navigator.after_turn(session, calm, calm) is None
    upset = env.souls.nudge("s1", {"p": -0.2, "a": 0.2, "d": -0.2})
    assert upset is not None
    assert wired.navigator.after_turn(session, calm, upset) == "emotion_swing"
    await wired.settle()
    assert ran == ["emotion_swing"]


async def test_failures_and_timeouts_are_journalled_never_shown(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    wired = Wired(env, every_turns=1, swing=10, timeout=0.3)
    fake_llm.responders.append(navigator_answers(ADVICE, delay=2))
    fake_llm.reply("你好呀。")
    response = await env.say("你觉得人生的意义是什么？")
    assert response["reply"] == "你好呀。"
    await wired.settle()
    failed = journal.events[-1]
    assert failed.payload["event"] == "navigator_failed"
    assert failed.payload["level"] == "warning"
    assert wired.navigator.failures == 1
    # Not JSON: journalled too.
    fake_llm.responders[:] = [navigator_answers({}, 0)]
    fake_llm.responders[0] = lambda body: (
        Reply(content="The user seems fine.")
        if body["messages"][0]["content"].startswith("You are the navigator")
        else None
    )
    fake_llm.reply("好。")
    await env.say("你好吗？")
    await wired.settle()
    assert journal.events[-1].payload["event"] == "navigator_failed"


async def test_one_run_per_soul_and_idle_sessions_reflect_first(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    wired = Wired(env, every_turns=1000, swing=10)
    quiet = {**ADVICE, "memory_archival": False, "evolution_request": None}
    fake_llm.responders.append(navigator_answers(quiet, delay=0.2))
    fake_llm.reply("好。")
    await env.say("你觉得人生的意义是什么？")
    session = env.pipeline.sessions["s1"]
    first = asyncio.ensure_future(wired.navigator.run(session, "test"))
    await asyncio.sleep(0.05)
    assert await wired.navigator.run(session, "test") is None  # already running
    assert await first is not None
    env.now += 180
    (summarised,) = await env.pipeline.summarize_idle()
    types = [e.type for e in journal.events[-3:]]
    # The navigator's suggestion and nudge come before the idle summary.
    assert types == [
        EventType.NAVIGATOR_SUGGESTION,
        EventType.PSYCHE_UPDATE,
        EventType.SYSTEM_NOTIFICATION,
    ]
    assert summarised.summary


async def test_a_learnt_skill_becomes_a_skill_memory(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    backend = ListMemory()
    env.pipeline.memory = MemoryManager(backend, clock=lambda: env.now)
    await env.pipeline.memory.check()
    wired = Wired(env, every_turns=1, swing=10)
    lesson = "When the user is tired, dim the light before talking."
    skill = {
        **ADVICE, "memory_archival": False, "evolution_request": None,
        "skill": lesson + "\x00" + "x" * 1000,
    }  # fmt: skip
    fake_llm.responders.append(navigator_answers(skill))
    fake_llm.reply("辛苦了。")
    await env.say("今天好累", user_id="u1")
    await wired.settle()
    (stored,) = [a for a in backend.adds if a["metadata"]["type"] == "skill"]
    text = stored["messages"][0]["content"]
    assert text.startswith(lesson) and "\x00" not in text and len(text) <= 300
    assert stored["infer"] is False and stored["user_id"] == "u1"
    assert stored["metadata"]["tags"] == ["navigator", "turns"]
    learnt = journal.events[-1]
    assert learnt.payload["event"] == "skill_learnt"
    assert learnt.trace_id == journal.events[-2].trace_id  # the run's own trace
    # Memory down: the skill is not stored and nothing breaks.
    backend.down = True
    await env.pipeline.memory.check()
    fake_llm.reply("好。")
    await env.say("晚安", user_id="u1")
    await wired.settle()
    assert len([a for a in backend.adds if a["metadata"]["type"] == "skill"]) == 1


@pytest.mark.parametrize("change", [{"user_id": "u2"}, {"soul_id": "s2"}])
async def test_a_suggestion_is_for_its_user_and_soul_only(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
    change: dict[str, str],
) -> None:
    """A body's session id ("default") may later be another user's, or move souls.

    The suggestion may repeat what its user said: a session of the same id
    with another user or soul does not read it, and it is dropped then.
    """
    env = Env(llm)
    env.souls.bind(T, "s1")
    wired = Wired(env, every_turns=1, swing=10)
    fake_llm.responders.append(navigator_answers(ADVICE))
    fake_llm.reply("嗯嗯。")
    await env.say("你觉得人生的意义是什么？", user_id="u1")
    await wired.settle()
    session = env.pipeline.sessions["s1"]
    assert wired.navigator.suggestion_for(session) == ADVICE["suggestion"]
    assert wired.navigator.suggestion_for(replace(session, **change)) is None
    assert wired.navigator.suggestion_for(session) is None  # dropped, not kept
