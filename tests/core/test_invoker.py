"""Invocations: validation before publishing, correlation, timeouts, concurrency."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from custom_components.soul.core.invoker import (
    InvalidArgumentsError,
    Invoker,
    TerminalOfflineError,
    UnknownSkillError,
    UnknownTerminalError,
)
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind, Topics

from .spec_payloads import skills

T = "terminal-001"


class Bus:
    """Records publishes; can answer them like a body."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict, int, bool]] = []
        self.invoker: Invoker | None = None
        self.answer: Any = None  # callable(request) -> result payload, or None

    async def publish(self, topic: str, payload: str, qos: int, retain: bool) -> None:
        request = json.loads(payload)
        self.published.append((topic, request, qos, retain))
        if self.answer is not None and self.invoker is not None:
            answer = self.answer(request)
            asyncio.get_running_loop().call_soon(
                self.invoker.handle_result, T, request["request_id"], json.dumps(answer)
            )


@pytest.fixture
def registry() -> TerminalRegistry:
    registry = TerminalRegistry()
    registry.handle_message(Kind.ONLINE, T, "online")
    registry.handle_message(Kind.SKILLS, T, json.dumps(skills()))
    return registry


@pytest.fixture
def bus(registry: TerminalRegistry) -> Bus:
    bus = Bus()
    ids = itertools.count(1)
    bus.invoker = Invoker(
        registry,
        Topics("soul"),
        bus.publish,
        timeout=0.2,
        new_request_id=lambda: f"r{next(ids)}",
    )
    return bus


async def test_invoke_and_result(bus: Bus) -> None:
    bus.answer = lambda req: {
        "request_id": req["request_id"],
        "ok": True,
        "output": "light on",
    }
    result = await bus.invoker.invoke(
        T, "control_light", {"mode": "set_color", "color": "green"}
    )
    assert (result.ok, result.output, result.request_id) == (True, "light on", "r1")
    assert bus.published == [
        (
            "soul/terminal/terminal-001/invoke/r1",
            {
                "request_id": "r1",
                "skill": "control_light",
                "arguments": {"mode": "set_color", "color": "green"},
            },
            1,
            False,
        )
    ]
    assert bus.invoker.pending == 0


async def test_failed_result(bus: Bus) -> None:
    bus.answer = lambda req: {
        "request_id": req["request_id"],
        "ok": False,
        "error": "invalid color",
    }
    result = await bus.invoker.invoke(T, "control_light", {"mode": "on"})
    assert (result.ok, result.error) == (False, "invalid color")


@pytest.mark.parametrize(
    ("terminal", "skill", "arguments", "error"),
    [
        ("nobody", "control_light", {"mode": "on"}, UnknownTerminalError),
        (T, "fly", {}, UnknownSkillError),
        (T, "control_light", {}, InvalidArgumentsError),
        (T, "control_light", {"mode": "blink"}, InvalidArgumentsError),
        (
            T,
            "set_head_motion",
            {"action": "点头", "duration_seconds": 99},
            InvalidArgumentsError,
        ),
    ],
)
async def test_refused_before_publishing(
    bus: Bus, terminal: str, skill: str, arguments: dict, error: type[Exception]
) -> None:
    with pytest.raises(error) as caught:
        await bus.invoker.invoke(terminal, skill, arguments)
    assert bus.published == []
    assert caught.value.key in {
        "unknown_terminal",
        "unknown_skill",
        "invalid_arguments",
    }


async def test_offline_and_stale_terminals(
    bus: Bus, registry: TerminalRegistry
) -> None:
    registry.handle_message(Kind.ONLINE, T, "offline")
    with pytest.raises(TerminalOfflineError):
        await bus.invoker.invoke(T, "control_light", {"mode": "on"})
    registry.handle_message(Kind.ONLINE, T, "online")
    registry.get(T).stale = True
    with pytest.raises(TerminalOfflineError):
        await bus.invoker.invoke(T, "control_light", {"mode": "on"})
    assert bus.published == []


async def test_timeout_is_a_failed_result(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    result = await bus.invoker.invoke(T, "control_light", {"mode": "on"}, timeout=0.05)
    assert (result.ok, result.error) == (False, "timeout")
    assert bus.invoker.pending == 0
    # The late answer is logged and dropped.
    bus.invoker.handle_result(T, "r1", json.dumps({"request_id": "r1", "ok": True}))
    assert "no invocation waits for it" in caplog.text


async def test_results_for_no_invocation_are_dropped(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    task = asyncio.create_task(bus.invoker.invoke(T, "control_light", {"mode": "on"}))
    while not bus.published:  # the arguments are checked in a thread first
        await asyncio.sleep(0.001)
    bus.invoker.handle_result(T, "nope", "{}")
    bus.invoker.handle_result(
        "other", "r1", json.dumps({"request_id": "r1", "ok": False})
    )
    assert not task.done()
    bus.invoker.handle_result(
        T, "r1", json.dumps({"request_id": "r1", "ok": True, "output": 1})
    )
    result = await task
    assert result.ok and result.output == 1
    assert caplog.text.count("no invocation waits for it") == 2


@pytest.mark.parametrize(
    ("payload", "logged"),
    [
        (b"{broken", "not valid JSON"),
        (json.dumps({"request_id": "r1", "ok": False}), "must carry an error"),
        (json.dumps({"request_id": "r1", "ok": "yes"}), "needs a boolean ok"),
        (json.dumps({"request_id": "r2", "ok": True}), "'r2' does not match"),
        (
            json.dumps({"request_id": ["r1"] * 10_000, "ok": True}),
            "request_id no string does not match",
        ),
        (
            json.dumps({"request_id": "x" * 100_000, "ok": True}),
            f"request_id {'x' * 64!r} does not match",
        ),
        # Home Assistant cannot write it: every answer carrying it was a 500.
        (
            json.dumps({"request_id": "r1", "ok": True, "output": {"n": 2**64}}),
            "an integer outside 64 bits",
        ),
    ],
)
async def test_an_invalid_result_fails_the_invocation_at_once(
    bus: Bus, caplog: pytest.LogCaptureFixture, payload: bytes | str, logged: str
) -> None:
    """The body answered, wrongly: its caller hears so now, not after 8 s."""
    task = asyncio.create_task(bus.invoker.invoke(T, "control_light", {"mode": "on"}))
    while not bus.published:
        await asyncio.sleep(0.001)
    bus.invoker.handle_result(T, "r1", payload)
    async with asyncio.timeout(1):  # the invocation's own timeout is 8 s
        result = await task
    assert (result.ok, result.error) == (False, "invalid_result")
    assert logged in caplog.text
    # The reason is logged short, whatever the body sent.
    assert max(len(r.getMessage()) for r in caplog.records) < 1000
    assert bus.invoker.stats.of(T).failures == 1
    # Later answers find no invocation waiting.
    bus.invoker.handle_result(T, "r1", json.dumps({"request_id": "r1", "ok": True}))
    assert "no invocation waits for it" in caplog.text


async def test_many_concurrent_invocations(bus: Bus) -> None:
    """Results answered in reverse order still reach their own callers."""
    tasks = [
        asyncio.create_task(
            bus.invoker.invoke(
                T, "set_head_motion", {"action": "点头", "duration_seconds": n}
            )
        )
        for n in range(1, 11)
    ]
    while len(bus.published) < 10:
        await asyncio.sleep(0)
    for _, request, _, _ in reversed(bus.published):
        seconds = request["arguments"]["duration_seconds"]
        bus.invoker.handle_result(
            T,
            request["request_id"],
            json.dumps(
                {"request_id": request["request_id"], "ok": True, "output": seconds}
            ),
        )
    results = await asyncio.gather(*tasks)
    assert [r.output for r in results] == list(range(1, 11))
    assert len({r.request_id for r in results}) == 10
