"""A turn's messages leave before its bookkeeping (``ChatPipeline``'s ``flush``).

After its ``emotion_update`` and after its ``intent_action`` a turn awaits the
transport's ``flush``; the soul's and the decision's listeners (Home
Assistant's entities) hear of the turn once the ``intent_action`` has left,
before the model is asked, or at the turn's end (an error too).
"""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.soul.core.chat import ChatPipeline
from custom_components.soul.core.invoker import Invoker
from custom_components.soul.core.soul import Soul
from custom_components.soul.core.soul_events import SoulEvent
from custom_components.soul.core.souls import SoulHub
from custom_components.soul.core.terminal import Change, Terminal
from custom_components.soul.core.topics import Topics
from custom_components.soul.core.turn import tell_held

from .spec_payloads import announced

T = "terminal-001"
T0 = 1_771_753_200.0


class Recorder:
    """A terminal on a fake bus and every listener, writing one log in order."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.now = T0
        topics = Topics("soul")
        self.registry = announced(T)
        self.souls = SoulHub(
            topics, self.publish, clock=lambda: self.now, is_online=lambda _t: True
        )
        self.souls.set_souls([Soul("s1", "Aria", "ENFP", "Cheerful desk robot.")])
        self.souls.bind(T, "s1")
        self.events: list[SoulEvent] = []
        self.souls.subscribe(self.on_soul)
        self.registry.subscribe(self.on_terminal)
        self.invoker = Invoker(self.registry, topics, self.publish, timeout=0.5)
        self.pipeline = ChatPipeline(
            self.registry,
            self.souls,
            self.invoker,
            topics,
            self.publish,
            clock=lambda: self.now,
            default_timezone=lambda: "Asia/Shanghai",
            flush=self.flush,
        )

    async def publish(
        self, topic: str, _payload: str, _qos: int, _retain: bool
    ) -> None:
        self.log.append("publish " + topic.rsplit("/", 1)[-1])

    async def flush(self) -> None:
        self.log.append("flush")

    def on_soul(self, event: SoulEvent) -> None:
        self.events.append(event)
        self.log.append("soul heard" + (" the user" if event.user_emotion else ""))

    def on_terminal(self, _terminal: Terminal, change: Change) -> None:
        if change is Change.DECISION:
            self.log.append("decision heard")

    async def say(self, text: str) -> dict[str, Any]:
        return await self.pipeline.chat(
            {
                "session_id": "s1",
                "terminal_id": T,
                "inputs": [{"type": "keyboard_text", "text": text}],
            }
        )


async def test_the_intent_action_leaves_before_the_listeners_hear() -> None:
    turn = Recorder()
    response = await turn.say("把灯调成绿色")
    assert response["executed_skills"] == ["control_light"]
    assert turn.log == [
        "publish emotion_update",
        "flush",
        "publish intent_action",
        "flush",
        "soul heard the user",
        "decision heard",
    ]


async def test_without_a_body_nothing_is_flushed() -> None:
    turn = Recorder()
    await turn.pipeline.chat(
        {"session_id": "s1", "soul_id": "s1", "inputs": [{"type": "keyboard_text", "text": "开灯"}]},
        soul_only=True,
    )  # fmt: skip
    assert "flush" not in turn.log
    assert turn.log.count("soul heard the user") == 1


async def test_a_turn_that_runs_nothing_still_tells_its_listeners() -> None:
    turn = Recorder()
    await turn.say("不要开灯")  # negated: no_action, no intent_action
    assert turn.log == [
        "publish emotion_update",
        "flush",
        "soul heard the user",
        "decision heard",
    ]


async def test_the_listeners_hear_before_the_model_is_asked() -> None:
    turn = Recorder()
    heard_when_asked: list[list[str]] = []
    reason = turn.pipeline.reasoner.reason

    async def asked(*args: Any, **kwargs: Any) -> None:
        heard_when_asked.append(list(turn.log))
        await reason(*args, **kwargs)

    turn.pipeline.reasoner.reason = asked  # type: ignore[method-assign]
    await turn.say("你觉得人生的意义是什么？")
    assert heard_when_asked == [
        ["publish emotion_update", "flush", "soul heard the user", "decision heard"]
    ]


async def test_a_failing_turn_still_tells_its_listeners() -> None:
    turn = Recorder()

    async def failing(_turn: object) -> None:
        raise RuntimeError("route failed")

    turn.pipeline._route = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="route failed"):
        await turn.say("把灯调成绿色")
    assert turn.log == ["publish emotion_update", "flush", "soul heard the user"]


async def test_a_tick_between_hold_and_telling_leaves_the_newest_snapshot() -> None:
    turn = Recorder()
    held: list[Any] = []
    _emotion, snapshot = await turn.souls.user_turn(T, "我好开心！", "s1", held=held)
    assert not turn.events  # held
    turn.now += 3
    await turn.souls.tick()  # a tick's event comes first
    ticked = turn.events[-1].snapshot
    assert ticked.at > snapshot.at
    (tell,) = held
    tell()
    told = turn.events[-1]
    assert told.user_emotion  # the user's turn, as the event entity needs it
    assert told.snapshot is ticked  # not the older one of the turn


async def test_held_listeners_are_told_once() -> None:
    turn = Recorder()
    held: list[Any] = []
    await turn.souls.user_turn(T, "开灯", "s1", held=held)
    turn.registry.filter_command(
        T, {"command": "开灯"}, default_timezone="UTC", held=held
    )
    assert turn.log == ["publish emotion_update"]
    tell_held(held)
    tell_held(held)
    assert turn.log == [
        "publish emotion_update",
        "soul heard the user",
        "decision heard",
    ]
