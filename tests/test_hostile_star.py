"""Star under attack, over real WebSockets: frames, liveness, fairness."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import json
import logging
from typing import Any

from aiohttp import WSMsgType
from homeassistant.core import HomeAssistant
from hypothesis import strategies as st
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from .hostile import (
    assert_stores_serialise,
    check_property,
    hostile_text,
    json_values,
    mutated,
)
from .test_star import Clients, envelope, receive
from .test_terminals import T, announce


@pytest.fixture
async def clients(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> AsyncGenerator[Clients]:
    made = Clients(await hass_client_no_auth(), hass_access_token)
    yield made
    await made.close()


@pytest.fixture
async def soul_id(hass: HomeAssistant, init_integration: MockConfigEntry) -> str:
    announce(hass)
    await hass.async_block_till_done()
    return init_integration.runtime_data.souls.soul_of(T).soul_id


def _action(parameters: Any) -> dict[str, Any]:
    return {"type": "action", "action": "chat", "id": "a1", "parameters": parameters}


async def test_any_chat_action_gets_an_outcome(
    hass: HomeAssistant,
    clients: Clients,
    init_integration: MockConfigEntry,
    soul_id: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Hostile parameters (a string, wrong types, hostile text) get an answer."""
    human = await clients.connect("/human/dad01")
    agent = f"soul_{soul_id}"
    parameters = st.one_of(
        json_values,
        mutated({"text": "把灯调成绿色", "user_id": "kid"}),
        st.builds(lambda text: {"text": text}, hostile_text),
    )
    outcomes: set[str] = set()

    async def send(value: Any) -> None:
        await human.send_str(
            json.dumps(envelope(("dad01", "human"), (agent, "agent"), _action(value)))
        )
        frame = await receive(human, timeout=10)
        if frame["type"] == "error":  # not even valid text: refused by the hub
            assert frame["payload"]["error_code"] == "VALIDATION_ERROR", frame
            outcomes.add("refused")
            return
        outcome = frame["payload"]["outcome"]
        assert outcome["status"] in ("success", "error")
        outcomes.add(outcome["status"])

    await check_property(hass, parameters, send, max_examples=60)
    assert outcomes == {"success", "error", "refused"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert_stores_serialise(hass, init_integration)


async def test_parameters_as_a_string_is_an_error_outcome(
    clients: Clients, soul_id: str
) -> None:
    human = await clients.connect("/human/dad01")
    await human.send_json(
        envelope(("dad01", "human"), (f"soul_{soul_id}", "agent"), _action("把灯打开"))
    )
    outcome = (await receive(human))["payload"]["outcome"]
    assert outcome == {"status": "error", "message": "parameters must be an object"}


async def test_souls_answer_long_after_the_idle_timeout(
    hass: HomeAssistant,
    clients: Clients,
    init_integration: MockConfigEntry,
    soul_id: str,
) -> None:
    """Issue 13: 90 s after start every chat got RECIPIENT_NOT_FOUND."""
    hub = init_integration.runtime_data.star
    clock = [hub._clock()]
    hub._clock = lambda: clock[0]
    clock[0] += hub.idle_timeout * 5
    hub.tick()  # what the heartbeat timer does every 30 s
    hub.tick()
    human = await clients.connect("/human/dad01")
    await human.send_json(
        envelope(
            ("dad01", "human"),
            (f"soul_{soul_id}", "agent"),
            _action({"text": "把灯调成绿色"}),
        )
    )
    frame = await receive(human)
    assert frame["type"] == "message"
    assert frame["payload"]["outcome"]["status"] == "success"


async def test_a_burst_within_the_limit_never_cuts_a_reader_off(
    clients: Clients, init_integration: MockConfigEntry
) -> None:
    """Issue 13: burst 400 > queue 256 disconnected an innocent reader."""
    hub = init_integration.runtime_data.star
    world = await clients.connect("/env/world1")
    reader = await clients.connect("/env/world1/agent/reader")
    burst = hub.burst * 2  # an environment's whole burst, in one go
    frames = [
        json.dumps(
            envelope(
                ("world1", "environment"),
                ("reader", "agent"),
                {"type": "event", "id": f"e{n}", "data": "x" * 2000},
            )
        )
        for n in range(burst)
    ]

    async def read_all() -> int:
        got = 0
        while got < burst:
            message = await reader.receive(timeout=10)
            assert message.type is WSMsgType.TEXT, message
            if json.loads(message.data)["type"] == "message":
                got += 1
        return got

    reading = asyncio.create_task(read_all())
    for frame in frames:
        await world.send_str(frame)
    assert await reading == burst
    assert hub.stats.dropped_slow == 0
    assert "reader" in {c.identity.client_id for c in hub.connections()}
