"""Every user turn's events share one trace id (XingChen-V §2)."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from custom_components.soul.core import logs
from custom_components.soul.core.cognition.events import (
    Event,
    EventBus,
    EventType,
    Source,
)
from custom_components.soul.core.cognition.notices import (
    notice,
    watch_bodies,
    watch_memory,
)
from custom_components.soul.core.llm import OpenAICompatibleLLM
from custom_components.soul.core.logs import current_trace_id, trace_logger
from custom_components.soul.core.memory.manager import MemoryManager
from custom_components.soul.core.topics import Kind
from devtools.fake_llm import FakeOpenAI, tool_call

from .spec_payloads import skills
from .test_chat import Env, T, llm  # noqa: F401  # fixture
from .test_memory_manager import ListMemory


class Recorder:
    """A journal that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def append(self, event: Event) -> None:
        self.events.append(event)


def traced(env: Env) -> Recorder:
    recorder = Recorder()
    env.pipeline.events = EventBus(recorder)
    return recorder


async def test_an_intent_turn_is_one_trace() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    journal = traced(env)
    response = await env.say("太好了！把灯调成绿色")
    trace_id = response["trace_id"]
    assert uuid.UUID(trace_id).version == 4
    kinds = [(e.type, e.source) for e in journal.events]
    assert kinds == [
        (EventType.USER_INPUT, Source.USER),
        (EventType.PSYCHE_UPDATE, Source.PSYCHE),
        (EventType.DRIVER_RESPONSE, Source.DRIVER),
    ]
    assert {e.trace_id for e in journal.events} == {trace_id}
    assert {(e.soul_id, e.session_id, e.terminal_id) for e in journal.events} == {
        ("s1", "s1", T)
    }
    user, psyche, driver = journal.events
    assert user.payload["content"] == "太好了！把灯调成绿色"
    assert user.payload["channel"] == "http"
    assert psyche.payload["reason"] == "user_emotion"
    assert psyche.payload["delta"]["pleasure"] > 0  # joy moved it
    assert psyche.psyche_state is not None
    assert set(psyche.psyche_state) == {
        "pleasure", "arousal", "dominance", "mood", "exec_probability", "exec_mode"
    }  # fmt: skip
    assert driver.payload["content"] == response["reply"]
    assert driver.payload["executed_skills"] == ["control_light"]
    assert driver.payload["intent_decision"] == "execute_intents"
    # The spec's JSON shape.
    shape = driver.as_dict()
    assert set(shape) >= {"trace_id", "type", "source", "payload", "meta"}
    assert set(shape["meta"]) == {"timestamp", "psyche_state"}
    assert shape["meta"]["timestamp"] == env.now
    # The next turn is another trace.
    again = await env.say("你好")
    assert again["trace_id"] != trace_id
    assert len(journal.events) == 6


async def test_a_model_turn_is_one_trace_and_listeners_see_it(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    journal = traced(env)
    streamed: list[Event] = []
    assert env.pipeline.events is not None
    unsubscribe = env.pipeline.events.subscribe(streamed.append)
    fake_llm.reply(
        "我点头了。", tool_calls=[tool_call("set_head_motion", {"action": "点头"})]
    )
    response = await env.pipeline.chat(
        {
            "session_id": "s1",
            "terminal_id": T,
            "inputs": [
                {"type": "keyboard_text", "text": "你同意吗？"},
                {"type": "presence", "present": True},
            ],
        },
        channel="assist",
    )
    assert streamed == journal.events
    assert {e.trace_id for e in journal.events} == {response["trace_id"]}
    user = journal.events[0]
    assert user.payload["channel"] == "assist"
    assert user.payload["inputs"] == ["presence"]
    assert journal.events[-1].payload["executed_skills"] == ["set_head_motion"]
    assert journal.events[-1].payload["route"] == "llm"
    unsubscribe()
    await env.say("好")
    assert len(streamed) == 3


async def test_a_broken_journal_or_listener_never_stops_a_turn() -> None:
    class Broken:
        def append(self, event: Event) -> None:
            raise RuntimeError("disk on fire")

    env = Env(None)
    env.souls.bind(T, "s1")
    env.pipeline.events = EventBus(Broken())

    def explode(_event: Event) -> None:
        raise ValueError("listener bug")

    env.pipeline.events.subscribe(explode)
    response = await env.say("把灯调成绿色")
    assert response["executed_skills"] == ["control_light"]


async def test_bodies_and_summaries_are_system_notifications() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    journal = traced(env)
    assert env.pipeline.events is not None
    unwatch = watch_bodies(
        env.registry, env.souls, env.pipeline.events, lambda: env.now
    )
    env.registry.handle_message(Kind.ONLINE, T, "offline")
    env.registry.handle_message(Kind.ONLINE, T, "offline")  # no change, no notice
    env.registry.handle_message(Kind.ONLINE, T, "online")
    notices = [e for e in journal.events if e.type is EventType.SYSTEM_NOTIFICATION]
    assert [n.payload["event"] for n in notices] == ["offline", "online"]
    assert [n.payload["level"] for n in notices] == ["warning", "info"]
    assert {(n.soul_id, n.terminal_id, n.source) for n in notices} == {
        ("s1", T, Source.SYSTEM)
    }
    assert len({n.trace_id for n in notices}) == 2  # each its own trace
    other = "terminal-002"
    env.registry.handle_message(Kind.ONLINE, other, "online")
    env.registry.handle_message(
        Kind.SKILLS, other, json.dumps(skills(terminal_id=other))
    )
    added = journal.events[-1]
    assert added.payload["event"] == "connected" and added.soul_id is None
    unwatch()
    env.registry.handle_message(Kind.ONLINE, T, "offline")
    assert journal.events[-1] is added
    # An idle session summarised.
    await env.say("我叫小明")
    env.now += 180
    (session,) = await env.pipeline.summarize_idle()
    summarised = journal.events[-1]
    assert summarised.payload["event"] == "session_summarised"
    assert summarised.payload["summary"] == session.summary
    assert summarised.session_id == "s1" and summarised.soul_id == "s1"


async def test_log_lines_of_a_turn_carry_its_trace_id(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    traced(env)
    fake_llm.fail(400)  # the model fails: the reasoner logs a warning
    with caplog.at_level(logging.WARNING, logger="custom_components.soul"):
        response = await env.say("讲个故事吧")
    failed = [r for r in caplog.records if "LLM call failed" in r.getMessage()]
    assert failed
    assert all(
        r.getMessage().startswith(f"[trace {response['trace_id']}] ") for r in failed
    )
    # Outside a turn the same logger adds nothing.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="custom_components.soul"):
        trace_logger("custom_components.soul.test").warning("plain %s", "line")
    assert caplog.records[-1].getMessage() == "plain line"
    assert current_trace_id() is None


async def test_memory_failing_recovering_and_archiving_are_notices() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    journal = traced(env)
    assert env.pipeline.events is not None
    backend = ListMemory()
    memory = MemoryManager(backend, clock=lambda: env.now)
    unwatch = watch_memory(memory, env.souls, env.pipeline.events, lambda: env.now)
    await memory.check()
    backend.down = True
    await memory.check()
    await memory.check()  # still the same failure: one notice, not one a minute
    await memory.archive_session(
        session_id="s1", terminal_id=T, soul_id="s1", user_id="u1",
        summary="用户养了一只猫", turns=[],
    )  # fmt: skip
    backend.down = False
    await memory.check()  # ready again: the queued summary is stored
    notices = [e for e in journal.events if e.type is EventType.SYSTEM_NOTIFICATION]
    assert [(n.payload["event"], n.payload["level"]) for n in notices] == [
        ("memory_ready", "info"),
        ("memory_failing", "warning"),
        ("memory_ready", "info"),
        ("memory_archived", "info"),
    ]
    assert notices[1].payload["error"] == "backend down"
    archived = notices[-1]
    assert (archived.soul_id, archived.session_id) == ("s1", "s1")
    assert archived.payload["type"] == "episode"
    unwatch()
    backend.down = True
    await memory.check()
    assert (
        len([e for e in journal.events if e.type is EventType.SYSTEM_NOTIFICATION]) == 4
    )


async def test_a_notice_inside_a_turn_joins_its_trace() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    journal = traced(env)
    assert env.pipeline.events is not None
    with logs.traced("trace-of-the-turn"):
        notice(env.pipeline.events, lambda: env.now, "memory failing")
    notice(env.pipeline.events, lambda: env.now, "memory ready")
    inside, outside = journal.events
    assert inside.trace_id == "trace-of-the-turn"
    assert outside.trace_id != "trace-of-the-turn"
