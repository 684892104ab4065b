"""The SimpleWorld demo: the world's rules, and world + agent end to end over a real hub."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from devtools import star_demo
from devtools.star_demo import SimpleWorld, WorldHost, run_agent, run_demo
from devtools.star_server import StarServer
from soul_star import AgentClient, Envelope, StarHubError

TOKEN = "demo-token"


@pytest.fixture
async def server(socket_enabled: None) -> AsyncGenerator[StarServer]:
    star = StarServer(tokens={TOKEN}, auth_timeout=0.3)
    await star.start()
    yield star
    await star.close()


def test_move_rules() -> None:
    world = SimpleWorld(size=20)
    outcome, events = world.act(
        "agent_1", "move", {"direction": "north", "distance": 2.5}
    )
    assert outcome["status"] == "success"
    assert outcome["data"] == {
        "new_position": {"x": 10.0, "y": 12.5},
        "energy_cost": 2.5,
    }
    assert events == [("agent_moved", {"agent_id": "agent_1", "new_position": {"x": 10.0, "y": 12.5}})]  # fmt: skip
    outcome, _ = world.act("agent_1", "move", {"direction": "east", "distance": 99})
    assert outcome["data"]["new_position"] == {
        "x": 15.0,
        "y": 12.5,
    }  # one step is 5 at most
    for _ in range(3):
        outcome, _ = world.act("agent_1", "move", {"direction": "east", "distance": 5})
    assert outcome["data"]["new_position"]["x"] == 20.0  # the edge of the world
    for bad in (
        {"direction": "up"},
        {"direction": "west", "distance": -1},
        {"direction": "west", "distance": "far"},
        {"direction": "west", "distance": True},
    ):
        outcome, events = world.act("agent_1", "move", bad)
        assert outcome["status"] == "error"
        assert events == []


def test_observe_pickup_and_ping() -> None:
    world = SimpleWorld(respawn=True, seed=1)
    near = world.spawn_item("apple", (10.5, 10.0))
    far = world.spawn_item("key", (19.0, 1.0))
    world.act("agent_2", "move", {"direction": "south", "distance": 1})
    outcome, _ = world.act("agent_1", "observe", {"range": 2})
    assert outcome["data"]["position"] == {"x": 10.0, "y": 10.0}
    assert [i["id"] for i in outcome["data"]["nearby_items"]] == [near.id]
    assert outcome["data"]["nearby_agents"] == [
        {"id": "agent_2", "position": {"x": 10.0, "y": 9.0}, "distance": 1.0}
    ]
    outcome, _ = world.act("agent_1", "observe", {"range": 100})
    assert [i["id"] for i in outcome["data"]["nearby_items"]] == [near.id, far.id]

    outcome, events = world.act("agent_1", "pickup", {"item_id": far.id})
    assert outcome["status"] == "error"
    assert outcome["data"]["success"] is False
    assert events == []
    outcome, events = world.act("agent_1", "pickup", {"item_id": near.id})
    assert outcome["status"] == "success"
    assert outcome["data"] == {"success": True, "item_id": near.id, "inventory": [near.id]}  # fmt: skip
    assert [name for name, _ in events] == ["item_picked_up", "item_spawned"]
    assert near.id not in world.items
    assert len(world.items) == 2  # the far key and the new item
    outcome, _ = world.act("agent_1", "pickup", {"item_id": near.id})
    assert outcome["data"]["success"] is False

    outcome, events = world.act("agent_1", "ping", {})
    assert outcome["message"] == "pong"
    assert outcome["data"]["pong"] is True
    outcome, _ = world.act("agent_1", "teleport", {})
    assert outcome["error_code"] == "INVALID_ACTION"
    status = world.status()["world_info"]
    assert status["agents"] == {"agent_1": {"x": 10.0, "y": 10.0}, "agent_2": {"x": 10.0, "y": 9.0}}  # fmt: skip
    assert status["items"] == 2


async def test_demo_end_to_end(server: StarServer) -> None:
    world = SimpleWorld()
    item = world.spawn_item("key", (18.0, 3.0))  # 8 east, 7 south of the start
    world.spawn_item("coin", (1.0, 19.0))
    lines: list[str] = []
    summary = await run_demo(
        server.base_url,
        token=TOKEN,
        world=world,
        status_interval=None,
        say=lines.append,
    )
    assert summary["pong"] is True
    assert summary["start"] == {"x": 10.0, "y": 10.0}
    assert summary["item"] == item.id
    assert summary["moves"] == 4  # east 5, south 5, east 3, south 2
    assert summary["position"] == {"x": 18.0, "y": 3.0}
    assert summary["picked_up"] is True
    assert summary["inventory"] == [item.id]
    # Events reach the agent before the outcome of the action that caused them.
    assert summary["events"] == {
        "agent_moved": 4,
        "item_picked_up": 1,
        "item_spawned": 1,
    }
    assert summary["world_actions"] == {"ping": 1, "observe": 1, "move": 4, "pickup": 1}
    assert any("pickup key_1 → success" in line for line in lines)
    assert item.id in world.inventories["agent_001"]
    await asyncio.sleep(0.05)
    assert server.hub.connections() == []  # both sides closed cleanly


async def test_world_status_and_events_reach_other_agents(server: StarServer) -> None:
    host = WorldHost(
        server.base_url,
        "world_9",
        token=TOKEN,
        status_interval=0.05,
        say=lambda _: None,
    )
    watcher = AgentClient(server.base_url, "watcher", "world_9", token=TOKEN)
    seen: list[str] = []
    watcher.on_event(lambda envelope: seen.append(envelope.payload["event"]))
    got_status = asyncio.Event()

    def on_status(envelope: Envelope) -> None:
        if envelope.payload["event"] == "world_status":
            got_status.set()

    watcher.on_event(on_status)
    await host.start()
    await watcher.connect()
    try:
        # The world broadcasts once it knows an agent.
        await watcher.action("world_9", "ping")
        summary = await run_agent(
            server.base_url, "world_9", "agent_x", token=TOKEN, say=lambda _: None
        )
        async with asyncio.timeout(3):
            await got_status.wait()
    finally:
        await watcher.close()
        await host.close()
    assert summary["picked_up"] is True
    assert seen.count("agent_moved") == summary["moves"]
    assert "item_picked_up" in seen
    assert "world_status" in seen


async def test_agent_alone_reports_a_missing_world(server: StarServer) -> None:
    with pytest.raises(StarHubError, match="RECIPIENT_NOT_FOUND"):
        await run_agent(server.base_url, "no_world", token=TOKEN, say=lambda _: None)
    await asyncio.sleep(0.05)
    assert server.hub.connections() == []


async def test_command_line_serve(
    socket_enabled: None, capsys: pytest.CaptureFixture[str]
) -> None:
    args: dict[str, Any] = {
        "url": "ws://127.0.0.1:1",
        "token": None,
        "env": "cli_world",
        "agent": "cli_agent",
        "serve": True,
        "port": 0,
        "role": "both",
        "status_interval": 5.0,
        "seed": 7,
    }
    assert await star_demo._main(argparse.Namespace(**args)) == 0
    out = capsys.readouterr().out
    assert "Serving a Star hub at ws://127.0.0.1:" in out
    assert "[cli_agent] ping → pong" in out
    assert "'picked_up': True" in out


async def test_command_line_reports_refused_token(
    server: StarServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(
        url=server.base_url,
        token="wrong",
        env="demo_world",
        agent="agent_001",
        serve=False,
        port=0,
        role="both",
        status_interval=5.0,
        seed=None,
    )
    assert await star_demo._main(args) == 1
    assert "refused the token" in capsys.readouterr().err
