"""The Star hub served by Home Assistant, over real WebSockets."""

from __future__ import annotations

import asyncio
from datetime import timedelta
import json
from types import MappingProxyType
from typing import Any
from unittest.mock import patch

from aiohttp import ClientWebSocketResponse, WSMsgType, WSServerHandshakeError
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.core.chat_phrases import phrase
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics

from .test_terminals import T, announce

BASE = "/api/soul/star"


def envelope(
    sender: tuple[str, str], recipient: tuple[str, str], payload: Any, **extra: Any
) -> dict:
    """Return a message envelope."""
    return {
        "type": "message",
        "sender": {"id": sender[0], "type": sender[1]},
        "recipient": {"id": recipient[0], "type": recipient[1]},
        "payload": payload,
        **extra,
    }


async def receive(ws: ClientWebSocketResponse, timeout: float = 5) -> dict:
    """Return the next JSON frame that is not a heartbeat."""
    while True:
        message = await ws.receive(timeout=timeout)
        assert message.type is WSMsgType.TEXT, message
        frame = json.loads(message.data)
        if frame.get("type") != "heartbeat":
            return frame


class Clients:
    """Opens authenticated WebSockets to the hub."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.token = token
        self.open: list[ClientWebSocketResponse] = []

    async def connect(
        self, path: str, *, token: str | None = None
    ) -> ClientWebSocketResponse:
        ws = await self.client.ws_connect(
            BASE + path, headers={"Authorization": f"Bearer {token or self.token}"}
        )
        first = json.loads((await ws.receive(timeout=5)).data)
        assert first["type"] == "heartbeat"  # the hub greets every client
        self.open.append(ws)
        return ws

    async def close(self) -> None:
        for ws in self.open:
            await ws.close()


@pytest.fixture
async def clients(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> Any:
    made = Clients(await hass_client_no_auth(), hass_access_token)
    yield made
    await made.close()


async def test_authentication(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> None:
    client = await hass_client_no_auth()
    # A wrong header does not authenticate: the connection must then
    # authenticate with its first frame, and is closed when it does not.
    ws = await client.ws_connect(
        BASE + "/env/world1", headers={"Authorization": "Bearer nope"}
    )
    await ws.send_json({"type": "message"})
    assert (await ws.receive_json())["type"] == "auth_invalid"
    assert (await ws.receive()).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    # Without a header the first frame must authenticate.
    ws = await client.ws_connect(BASE + "/env/world1")
    await ws.send_json({"type": "auth", "access_token": "wrong"})
    assert (await ws.receive_json())["type"] == "auth_invalid"
    assert (await ws.receive()).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    ws = await client.ws_connect(BASE + "/env/world1")
    await ws.send_str("not json")
    assert (await ws.receive_json())["type"] == "auth_invalid"
    ws = await client.ws_connect(BASE + "/env/world1")
    await ws.send_json({"type": "auth", "access_token": hass_access_token})
    assert (await ws.receive_json())["type"] == "auth_ok"
    assert (await ws.receive_json())["type"] == "heartbeat"
    await ws.close()
    # Ids are checked.
    with pytest.raises(WSServerHandshakeError) as refused:
        await client.ws_connect(
            BASE + "/env/x", headers={"Authorization": f"Bearer {hass_access_token}"}
        )
    assert refused.value.status == 400


async def test_routing_errors_and_isolation(clients: Clients) -> None:
    world = await clients.connect("/env/world1")
    alice = await clients.connect("/env/world1/agent/alice")
    bob = await clients.connect("/env/world1/agent/bob")
    stranger = await clients.connect("/env/world2/agent/carol")
    action = {"type": "action", "action": "ping", "id": "a1", "parameters": {}}
    await alice.send_json(
        envelope(("alice", "agent"), ("world1", "environment"), action, message_id="m1")
    )
    routed = await receive(world)
    assert routed["payload"] == action and routed["sender"]["id"] == "alice"
    # Spoofed sender: refused, and the connection stays usable.
    await alice.send_json(
        envelope(("bob", "agent"), ("world1", "environment"), action, message_id="m2")
    )
    error = await receive(alice)
    assert error["type"] == "error"
    assert error["payload"]["error_code"] == "PERMISSION_DENIED"
    assert error["payload"]["details"]["original_message_id"] == "m2"
    # Malformed JSON and invalid envelopes.
    await alice.send_str("{nope")
    assert (await receive(alice))["payload"]["error_code"] == "VALIDATION_ERROR"
    await alice.send_json(
        {
            "type": "message",
            "sender": {"id": "alice", "type": "agent"},
            "message_id": "m3",
        }
    )
    error = await receive(alice)
    assert error["payload"]["error_code"] == "VALIDATION_ERROR"
    assert error["payload"]["details"]["validation_errors"]
    # Unknown recipient; agents in other environments are out of reach.
    await alice.send_json(
        envelope(
            ("alice", "agent"), ("carol", "agent"), {"type": "event"}, message_id="m4"
        )
    )
    assert (await receive(alice))["payload"]["error_code"] == "RECIPIENT_NOT_FOUND"
    # Broadcast reaches every agent of the environment, not the sender's peers elsewhere.
    event = {"type": "event", "event": "world_status", "id": "e1", "data": {}}
    await world.send_json(envelope(("world1", "environment"), ("*", "agent"), event))
    assert (await receive(alice))["payload"] == event
    assert (await receive(bob))["payload"] == event
    with pytest.raises(asyncio.TimeoutError):
        await receive(stranger, timeout=0.3)
    # The environment answers; order per sender→recipient is kept.
    for n in range(20):
        await world.send_json(
            envelope(
                ("world1", "environment"),
                ("alice", "agent"),
                {"type": "outcome", "id": f"a{n}"},
            )
        )
    assert [(await receive(alice))["payload"]["id"] for _ in range(20)] == [
        f"a{n}" for n in range(20)
    ]


async def test_oversize_frame_closes_only_that_client(clients: Clients) -> None:
    world = await clients.connect("/env/world1")
    alice = await clients.connect("/env/world1/agent/alice")
    big = envelope(
        ("alice", "agent"),
        ("world1", "environment"),
        {"blob": "x" * (1024 * 1024 + 10)},
    )
    await alice.send_str(json.dumps(big))
    error = await receive(alice)
    assert error["payload"]["error_code"] == "MESSAGE_TOO_LARGE"
    closing = await alice.receive(timeout=5)
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    # The environment is unaffected.
    bob = await clients.connect("/env/world1/agent/bob")
    await bob.send_json(
        envelope(
            ("bob", "agent"), ("world1", "environment"), {"type": "action", "id": "b"}
        )
    )
    assert (await receive(world))["sender"]["id"] == "bob"


async def test_takeover_heartbeat_timeout_and_rate_limit(
    clients: Clients, init_integration: MockConfigEntry
) -> None:
    hub = init_integration.runtime_data.star
    world = await clients.connect("/env/world1")
    first = await clients.connect("/env/world1/agent/alice")
    second = await clients.connect("/env/world1/agent/alice")  # reconnects
    closing = await first.receive(timeout=5)
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    await second.send_json(
        envelope(
            ("alice", "agent"), ("world1", "environment"), {"type": "action", "id": "x"}
        )
    )
    assert (await receive(world))["payload"]["id"] == "x"
    assert hub.counts() == {"agent": 1, "environment": 1, "human": 0}
    # Rate limit: a small bucket, then a burst.
    hub.burst, hub.rate = 3, 0.001
    for connection in hub.connections():
        connection.tokens = 3
    for n in range(5):
        await second.send_json(
            envelope(
                ("alice", "agent"),
                ("world1", "environment"),
                {"type": "action", "id": f"r{n}"},
            )
        )
    assert (await receive(second))["payload"]["error_code"] == "RATE_LIMITED"
    # Heartbeat timeout: silent clients are closed.
    hub.idle_timeout = -1
    hub.tick()
    while (closing := await world.receive(timeout=5)).type is WSMsgType.TEXT:
        pass  # the burst's routed messages
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)


async def test_slow_consumer_is_disconnected(
    clients: Clients, init_integration: MockConfigEntry
) -> None:
    hub = init_integration.runtime_data.star
    with patch("custom_components.soul.star.SEND_QUEUE", 2):
        world = await clients.connect("/env/world1")
        sleepy = await clients.connect("/env/world1/agent/sleepy")  # never reads
    awake = await clients.connect("/env/world1/agent/awake")
    chunk = {"type": "stream", "data": "x" * 200_000}
    for _ in range(60):
        await world.send_json(
            envelope(("world1", "environment"), ("sleepy", "agent"), chunk)
        )
        if hub.stats.dropped_slow:
            break
        await asyncio.sleep(0)
    for _ in range(100):
        if hub.stats.dropped_slow:
            break
        await asyncio.sleep(0.05)
    assert hub.stats.dropped_slow == 1
    assert "sleepy" not in {c.identity.client_id for c in hub.connections()}
    await world.send_json(
        envelope(
            ("world1", "environment"), ("awake", "agent"), {"type": "event", "id": "ok"}
        )
    )
    assert (await receive(awake))["payload"]["id"] == "ok"
    del sleepy


async def test_a_soul_answers_chat_actions(
    hass: HomeAssistant, clients: Clients, init_integration: MockConfigEntry
) -> None:
    announce(hass)  # soul "friendly", bound to the body
    await hass.async_block_till_done()
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id
    human = await clients.connect("/human/dad01")
    action = {
        "type": "action",
        "action": "chat",
        "id": "c1",
        "parameters": {"text": "把灯调成绿色", "user_id": "dad"},
    }
    await human.send_json(
        envelope(("dad01", "human"), (f"soul_{soul_id}", "agent"), action)
    )
    outcome = await receive(human)
    assert outcome["sender"] == {"id": f"soul_{soul_id}", "type": "agent"}
    assert outcome["payload"]["type"] == "outcome" and outcome["payload"]["id"] == "c1"
    assert outcome["payload"]["outcome"]["status"] == "success"
    assert outcome["payload"]["outcome"]["data"]["executed_skills"] == ["control_light"]
    await human.send_json(
        envelope(
            ("dad01", "human"),
            (f"soul_{soul_id}", "agent"),
            {"type": "action", "action": "dance", "id": "c2"},
        )
    )
    assert (await receive(human))["payload"]["outcome"]["status"] == "error"
    # Events addressed to the soul join its sessions' context.
    event = {
        "type": "event",
        "event": "door_opened",
        "id": "e1",
        "data": {"room": "hall"},
    }
    await human.send_json(
        envelope(("dad01", "human"), (f"soul_{soul_id}", "agent"), event)
    )
    for _ in range(50):
        await hass.async_block_till_done()
        sessions = init_integration.runtime_data.chat.sessions
        session = next(
            s for sid, s in sessions.items() if sid.startswith("star-human-")
        )
        if session.context:
            break
        await asyncio.sleep(0.02)
    assert session.context[-1]["event"] == event


async def test_a_soul_without_a_body_answers_chat_actions(
    hass: HomeAssistant, clients: Clients, init_integration: MockConfigEntry
) -> None:
    hass.config_entries.async_add_subentry(
        init_integration,
        ConfigSubentry(
            data=MappingProxyType({"name": "Lonely", "mbti_type": "INFP"}),
            subentry_type="soul",
            title="Lonely",
            unique_id=None,
        ),
    )
    await hass.async_block_till_done()
    soul_id = next(
        s for s, soul in init_integration.runtime_data.souls.souls.items()
        if soul.name == "Lonely"
    )  # fmt: skip
    human = await clients.connect("/human/dad01")
    action = {
        "type": "action",
        "action": "chat",
        "id": "c1",
        "parameters": {"text": "你好", "user_id": "dad"},
    }
    await human.send_json(
        envelope(("dad01", "human"), (f"soul_{soul_id}", "agent"), action)
    )
    outcome = (await receive(human))["payload"]["outcome"]
    # No model is configured here: the soul says so in character, no error.
    assert outcome["status"] == "success"
    assert outcome["message"] == phrase("你好", "no_model")
    assert outcome["data"]["executed_skills"] == []


async def test_rate_sensors_are_off_by_default(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """They write a state every 10 s: not in the recorder unless the user asks."""
    registry = er.async_get(hass)
    for key in ("star_messages", "star_errors", "star_latency", "star_agents"):
        entity_id = registry.async_get_entity_id(
            "sensor", "soul", f"{init_integration.entry_id}_{key}"
        )
        entry = registry.async_get(entity_id)
        assert entry is not None
        assert entry.disabled_by is er.RegistryEntryDisabler.INTEGRATION
        assert entry.entity_category is not None


@pytest.mark.usefixtures("entity_registry_enabled_by_default")
async def test_sensors_and_diagnostics(
    hass: HomeAssistant,
    clients: Clients,
    init_integration: MockConfigEntry,
    freezer: Any,
) -> None:
    world = await clients.connect("/env/world1")
    alice = await clients.connect("/env/world1/agent/alice")
    await hass.async_block_till_done()
    assert hass.states.get("sensor.soul_connected_agents_star").state == "1"
    assert hass.states.get("sensor.soul_connected_worlds_star").state == "1"
    for n in range(5):
        await alice.send_json(
            envelope(
                ("alice", "agent"),
                ("world1", "environment"),
                {"type": "action", "id": f"m{n}"},
            )
        )
    for _ in range(5):
        await receive(world)
    await alice.send_str("{bad")
    await receive(alice)
    freezer.tick(timedelta(seconds=10))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert float(hass.states.get("sensor.soul_star_messages_per_second").state) == 0.5
    assert float(hass.states.get("sensor.soul_star_errors_per_second").state) == 0.1
    assert float(hass.states.get("sensor.soul_star_routing_delay").state) >= 0
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert {c["id"] for c in diagnostics["star"]["connections"]} == {"world1", "alice"}


async def test_simple_world_demo_through_home_assistant(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> None:
    """The spec's SimpleWorld and the scripted agent, through Soul's hub."""
    from devtools.star_demo import run_demo

    client = await hass_client_no_auth()
    url = str(client.make_url("")).rstrip("/").replace("http://", "ws://")
    lines: list[str] = []
    summary = await run_demo(
        url, token=hass_access_token, seed=7, status_interval=0.2, say=lines.append
    )
    assert summary["picked_up"], summary
    assert summary["world_actions"]["pickup"] >= 1
    assert summary["world_actions"]["ping"] >= 1
    assert init_integration.runtime_data.star.stats.routed > 0


async def test_heartbeat_tick_runs_in_the_loop(
    hass: HomeAssistant,
    clients: Clients,
    init_integration: MockConfigEntry,
    freezer: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The 30 s heartbeat reaches clients and the soul agents without errors."""
    announce(hass)  # a soul, hence a soul agent that receives heartbeats too
    await hass.async_block_till_done()
    world = await clients.connect("/env/world1")
    freezer.tick(timedelta(seconds=31))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    # Whatever else the world was sent first (nothing today), a heartbeat comes.
    seen = [json.loads((await world.receive(timeout=5)).data)]
    while seen[-1]["type"] != "heartbeat" and len(seen) < 10:
        seen.append(json.loads((await world.receive(timeout=5)).data))
    assert seen[-1]["type"] == "heartbeat", seen
    assert not [r for r in caplog.records if r.levelno >= 40], caplog.text


# -- interop (issue 15): the spec's paths, INVALID_CLIENT_TYPE, batches, the cap --


async def test_the_spec_paths_live_below_the_hub_prefix(
    hass_client_no_auth: ClientSessionGenerator,
    init_integration: MockConfigEntry,
    hass_access_token: str,
) -> None:
    """An original client given ``BASE`` as its hub URL builds the spec's paths.

    Home Assistant's root URL space is not Soul's: ``/env/…`` is not registered.
    """
    client = await hass_client_no_auth()
    header = {"Authorization": f"Bearer {hass_access_token}"}
    server_url = BASE  # what the user gives the client as the hub's address
    world = await client.ws_connect(f"{server_url}/env/demo_world", headers=header)
    agent = await client.ws_connect(
        f"{server_url}/env/demo_world/agent/agent_001", headers=header
    )
    human = await client.ws_connect(f"{server_url}/human/human_01", headers=header)
    for ws in (world, agent, human):
        assert (await ws.receive_json(timeout=5))["type"] == "heartbeat"
    await agent.send_json(
        envelope(
            ("agent_001", "agent"),
            ("demo_world", "environment"),
            {"type": "action", "action": "move", "id": "a1"},
        )
    )
    assert (await receive(world))["payload"]["action"] == "move"
    for ws in (world, agent, human):
        await ws.close()
    for path in ("/env/demo_world", "/env/demo_world/agent/agent_001", "/human/h_1"):
        with pytest.raises(WSServerHandshakeError) as refused:
            await client.ws_connect(path, headers=header)
        assert refused.value.status == 404, path
    response = await client.get(BASE + "/env/x", headers=header)
    assert response.status == 400
    assert (await response.json()).keys() == {"error"}  # every view's error shape


async def test_invalid_client_type(clients: Clients) -> None:
    alice = await clients.connect("/env/world1/agent/alice")
    await alice.send_json(
        envelope(("alice", "agent"), ("world1", "world"), {}, message_id="m1")
    )
    error = await receive(alice)
    assert error["payload"]["error_code"] == "INVALID_CLIENT_TYPE"
    assert error["payload"]["details"]["original_message_id"] == "m1"
    assert error["payload"]["details"]["validation_errors"]
    await alice.send_json(
        envelope(("alice", "agent"), ("world1", "environment"), {}, message_id="m2")
    )
    assert (await receive(alice))["payload"]["error_code"] == "RECIPIENT_NOT_FOUND"


async def test_batch_frames(
    hass: HomeAssistant, clients: Clients, init_integration: MockConfigEntry
) -> None:
    """A batch reaches clients and a soul; each envelope is answered on its own."""
    announce(hass)
    await hass.async_block_till_done()
    soul = f"soul_{init_integration.runtime_data.souls.soul_of(T).soul_id}"
    world = await clients.connect("/env/world1")
    human = await clients.connect("/human/dad01")
    me = ("dad01", "human")
    chat = {
        "type": "action",
        "action": "chat",
        "id": "c1",
        "parameters": {"text": "把灯调成绿色", "user_id": "dad"},
    }
    batch = [
        envelope(me, ("world1", "environment"), {"type": "event", "id": "e1"}),
        envelope(me, ("ghost_1", "agent"), {"type": "event"}, message_id="m1"),
        envelope(me, (soul, "agent"), chat),
        envelope(me, ("world1", "nowhere"), {}, message_id="m3"),
    ]
    await human.send_json(batch)
    assert (await receive(world))["payload"]["id"] == "e1"
    answers = [await receive(human, timeout=10) for _ in range(3)]
    errors = [a for a in answers if a["type"] == "error"]
    assert [
        (e["payload"]["error_code"], e["payload"]["details"]["batch_index"])
        for e in errors
    ] == [("RECIPIENT_NOT_FOUND", 1), ("INVALID_CLIENT_TYPE", 3)]
    [outcome] = [a for a in answers if a["type"] == "message"]
    assert outcome["sender"]["id"] == soul
    assert outcome["payload"]["outcome"]["status"] == "success"
    await human.send_json([])
    assert (await receive(human))["payload"]["error_code"] == "VALIDATION_ERROR"


async def test_the_connection_cap(
    hass: HomeAssistant,
    clients: Clients,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> None:
    """One client more than the cap: CONNECTION_FAILED and 1013, whatever the auth."""
    from custom_components.soul.core.star.hub import MAX_CONNECTIONS

    hub = init_integration.runtime_data.star
    assert hub.max_connections == MAX_CONNECTIONS
    announce(hass)  # a soul: an in-process agent, not counted
    await hass.async_block_till_done()
    hub.max_connections = 2
    world = await clients.connect("/env/world1")
    await clients.connect("/env/world1/agent/alice")
    client = await hass_client_no_auth()
    header = {"Authorization": f"Bearer {hass_access_token}"}
    ws = await client.ws_connect(BASE + "/human/dad01", headers=header)
    refusal = await ws.receive_json(timeout=5)
    assert refusal["payload"]["error_code"] == "CONNECTION_FAILED"
    assert "full" in refusal["payload"]["message"]
    assert (await ws.receive(timeout=5)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    assert ws.close_code == 1013
    ws = await client.ws_connect(BASE + "/human/dad01")  # first-frame auth
    await ws.send_json({"type": "auth", "access_token": hass_access_token})
    assert (await ws.receive_json(timeout=5))["type"] == "auth_ok"
    assert (await ws.receive_json(timeout=5))["payload"]["error_code"] == (
        "CONNECTION_FAILED"
    )
    assert (await ws.receive(timeout=5)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    # Taking over one's own identity is not refused; a free place is taken.
    await clients.connect("/env/world1/agent/alice")
    await world.close()
    for _ in range(50):
        if hub.counts()["environment"] == 0:
            break
        await asyncio.sleep(0.02)
    await clients.connect("/human/dad01")
    assert hub.stats.refused_full == 2


async def test_websocket_pings_count_as_traffic(
    clients: Clients,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
    hass_access_token: str,
) -> None:
    """A client whose library pings stays connected without sending envelopes."""
    hub = init_integration.runtime_data.star
    client = await hass_client_no_auth()
    pinger = await client.ws_connect(BASE + "/env/world1", autoping=False)
    await pinger.ping(b"before auth")
    assert (await pinger.receive(timeout=5)).type is WSMsgType.PONG
    await pinger.send_json({"type": "auth", "access_token": hass_access_token})
    assert (await pinger.receive_json(timeout=5))["type"] == "auth_ok"
    assert (await pinger.receive_json(timeout=5))["type"] == "heartbeat"
    mute = await clients.connect("/env/world1/agent/mute1")
    hub.idle_timeout = 0.2
    await asyncio.sleep(0.3)
    await pinger.ping(b"alive")
    assert (await pinger.receive(timeout=5)).type is WSMsgType.PONG
    hub.tick()
    while (closing := await mute.receive(timeout=5)).type is WSMsgType.TEXT:
        pass
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    assert [c.identity.client_id for c in hub.connections()] == ["world1"]
    await pinger.close()
