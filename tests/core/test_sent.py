"""What Soul sent (core.sent): one announcement for invocations and intent_actions."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.soul.core.invoker import InvalidArgumentsError
from custom_components.soul.core.sent import SentSkill, SentSkills, sent_intents
from custom_components.soul.core.topics import Kind

from .test_chat import Env

T = "terminal-001"


def heard(sent: SentSkills, terminal_id: str = T, skill: str = "control_light"):
    """Subscribe a recorder; return its list of (skill, arguments, via)."""
    got: list[tuple[str, dict[str, Any], Kind]] = []
    sent.subscribe(
        lambda s: got.append((s.skill, dict(s.arguments), s.via)), terminal_id, skill
    )
    return got


def test_listeners_hear_their_terminal_and_skill_only() -> None:
    sent = SentSkills()
    light = heard(sent)
    other = heard(sent, "terminal-002")
    alarm = heard(sent, skill="create_alarm")
    sent.announce(SentSkill(T, "control_light", {"mode": "on"}, Kind.INVOKE))
    assert light == [("control_light", {"mode": "on"}, Kind.INVOKE)]
    assert other == alarm == []


def test_unsubscribe_and_failing_listener(caplog: pytest.LogCaptureFixture) -> None:
    sent = SentSkills()

    def broken(_sent: SentSkill) -> None:
        raise RuntimeError("boom")

    sent.subscribe(broken, T, "control_light")
    got = heard(sent)
    unsubscribe = sent.subscribe(got.append, T, "control_light")
    unsubscribe()
    sent.announce(SentSkill(T, "control_light", {"mode": "off"}, Kind.INVOKE))
    # The broken listener is logged; the others still hear it, once.
    assert got == [("control_light", {"mode": "off"}, Kind.INVOKE)]
    assert "boom" in caplog.text


def test_listeners_get_a_read_only_copy() -> None:
    sent = SentSkills()
    seen: list[SentSkill] = []
    sent.subscribe(seen.append, T, "control_light")
    arguments = {"mode": "on"}
    sent.announce(SentSkill(T, "control_light", arguments, Kind.INVOKE))
    arguments["mode"] = "off"
    assert seen[0].arguments == {"mode": "on"}
    with pytest.raises(TypeError):
        seen[0].arguments["mode"] = "off"  # type: ignore[index]


def test_sent_intents_reads_normalized() -> None:
    intents = [
        {"normalized": {"skill": "control_light", "mode": "set_color", "color": "red"}},
        {"normalized": {"mode": "on"}},  # no skill: skipped
        {"normalized": "nonsense"},
        {"intent_id": "x"},
    ]
    assert sent_intents(T, intents) == [
        SentSkill(
            T,
            "control_light",
            {"mode": "set_color", "color": "red"},
            Kind.INTENT_ACTION,
        )
    ]


async def test_invoker_announces_a_success() -> None:
    env = Env(model=None)
    got = heard(env.invoker.sent)
    await env.invoker.invoke(T, "control_light", {"mode": "set_color", "color": "red"})
    assert got == [
        ("control_light", {"mode": "set_color", "color": "red"}, Kind.INVOKE)
    ]


@pytest.mark.parametrize("answer", [{"ok": False, "error": "bulb broken"}, None])
async def test_invoker_announces_no_failure_nor_timeout(
    answer: dict[str, Any] | None,
) -> None:
    env = Env(model=None)
    env.body.answer = answer  # None: the body never answers
    env.invoker.timeout = 0.05
    got = heard(env.invoker.sent)
    result = await env.invoker.invoke(T, "control_light", {"mode": "on"})
    assert result.ok is False
    with pytest.raises(InvalidArgumentsError):
        await env.invoker.invoke(T, "control_light", {"mode": "blink"})
    assert got == []


async def test_chat_announces_its_intent_action() -> None:
    env = Env(model=None)
    env.souls.bind(T, "s1")
    got = heard(env.invoker.sent)
    reply = await env.say("把灯调成绿色")
    assert reply["executed_skills"] == ["control_light"]
    assert env.body.on("intent_action")
    assert got == [
        ("control_light", {"mode": "set_color", "color": "green"}, Kind.INTENT_ACTION)
    ]


async def test_chat_announces_nothing_it_could_not_publish() -> None:
    env = Env(model=None)
    env.souls.bind(T, "s1")
    got = heard(env.invoker.sent)

    async def down(topic: str, payload: str, qos: int, retain: bool) -> None:
        if topic.endswith("/intent_action"):
            raise ConnectionError("broker down")
        await env.body.publish(topic, payload, qos, retain)

    env.pipeline.intents._publish = down  # the broker fails mid-turn
    reply = await env.say("把灯调成绿色")
    assert reply["executed_skills"] == []
    assert got == []
