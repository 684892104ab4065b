"""Interop with the Star Protocol spec over real WebSockets (``devtools.star_server``).

Issue 15: clients written for the original Star hub connect unchanged where
the spec allows — its paths, ``INVALID_CLIENT_TYPE``, batch frames, and a
configurable connection cap with a clear refusal. Home Assistant's side is in
``tests/test_star.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
import json
from pathlib import Path
import sys
from typing import Any

import aiohttp
import pytest

from custom_components.soul.core.star.hub import (
    CONNECTION_FAILED,
    INVALID_CLIENT_TYPE,
    MAX_BATCH,
    MAX_CONNECTIONS,
    StarHub,
)
from custom_components.soul.core.star.transport import PATHS
from devtools.star_server import StarServer, main as star_server_main
from soul_star import (
    AgentClient,
    EnvironmentClient,
    HumanClient,
    Party,
    StarAuthError,
    StarConnectionError,
    StarHubError,
)

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "interop-token"


@pytest.fixture
async def open_server(socket_enabled: None) -> AsyncGenerator[StarServer]:
    """A hub without authentication, as the spec's (optional) auth allows."""
    star = StarServer(tokens=None)
    await star.start()
    yield star
    await star.close()


@pytest.fixture
async def session() -> AsyncGenerator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as made:
        yield made


def message(
    sender: tuple[str, str], recipient: tuple[str, str], payload: Any, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "message",
        "sender": {"id": sender[0], "type": sender[1]},
        "recipient": {"id": recipient[0], "type": recipient[1]},
        "payload": payload,
        **extra,
    }


async def greeted(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """Return the hub's greeting (the spec's heartbeat on connect)."""
    greeting: dict[str, Any] = await ws.receive_json(timeout=3)
    assert greeting["type"] == "heartbeat"
    assert greeting["sender"] == {"id": "hub", "type": "hub"}
    return greeting


async def frames(ws: aiohttp.ClientWebSocketResponse, count: int) -> list[Any]:
    """Return the next ``count`` JSON frames."""
    return [await ws.receive_json(timeout=3) for _ in range(count)]


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


# -- 1. the spec's paths --------------------------------------------------------------


class OriginalStyleClient:
    """How clients of the original hub build their URL: ``server_url`` + the spec's path."""

    def __init__(self, server_url: str, env_id: str, agent_id: str | None) -> None:
        self.url = (
            f"{server_url}/env/{env_id}/agent/{agent_id}"
            if agent_id
            else f"{server_url}/env/{env_id}"
        )


async def test_the_spec_paths_at_the_root(
    open_server: StarServer, session: aiohttp.ClientSession
) -> None:
    """连接规范: ws://host:port/env/{env_id} and /env/{env_id}/agent/{agent_id}."""
    base = open_server.base_url
    world_url = OriginalStyleClient(base, "demo_world", None).url
    agent_url = OriginalStyleClient(base, "demo_world", "agent_001").url
    assert world_url == f"{base}/env/demo_world"
    async with (
        session.ws_connect(world_url) as world,
        session.ws_connect(agent_url) as agent,
        session.ws_connect(f"{base}/human/human_01") as human,
    ):
        assert (await greeted(world))["recipient"] == {
            "id": "demo_world",
            "type": "environment",
        }
        assert (await greeted(agent))["recipient"]["id"] == "agent_001"
        assert (await greeted(human))["recipient"] == {
            "id": "human_01",
            "type": "human",
        }
        action = message(
            ("agent_001", "agent"),
            ("demo_world", "environment"),
            {"type": "action", "action": "move", "id": "action_1"},
            message_id="msg_1",
        )
        await agent.send_json(action)
        assert await world.receive_json(timeout=3) == action
        await human.send_json(
            message(("human_01", "human"), ("agent_001", "agent"), {"type": "event"})
        )
        assert (await agent.receive_json(timeout=3))["sender"]["id"] == "human_01"
    await until(lambda: open_server.hub.connections() == [])


async def test_root_and_prefixed_paths_are_one_hub(
    open_server: StarServer, session: aiohttp.ClientSession
) -> None:
    base = open_server.base_url
    async with (
        session.ws_connect(f"{base}/api/soul/star/env/world_1") as world,
        session.ws_connect(f"{base}/env/world_1/agent/agent_1") as agent,
    ):
        await greeted(world)
        await greeted(agent)
        await world.send_json(
            message(("world_1", "environment"), ("*", "agent"), {"type": "event"})
        )
        assert (await agent.receive_json(timeout=3))["recipient"]["id"] == "*"
    for path in ("/env/w!", "/env/world_1/agent/a", "/human/" + "h" * 51):
        with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
            await session.ws_connect(base + path)
        assert caught.value.status == 400, path
        async with session.get(base + path) as response:  # every view's error shape
            assert (await response.json()).keys() == {"error"}
    assert set(PATHS.values()) == {
        "/env/{env_id}",
        "/env/{env_id}/agent/{agent_id}",
        "/human/{human_id}",
    }


async def test_the_sdk_on_the_spec_paths(open_server: StarServer) -> None:
    world = EnvironmentClient(open_server.base_url, "world_1", path_prefix="")
    world.on_action(lambda *_: {"status": "success", "message": "pong"})
    agent = AgentClient(open_server.base_url, "agent_1", "world_1", path_prefix="")
    try:
        await world.connect()
        await agent.connect()
        assert agent.url == f"{open_server.base_url}/env/world_1/agent/agent_1"
        assert (await agent.action("world_1", "ping"))["message"] == "pong"
    finally:
        await agent.close()
        await world.close()


# -- 2. INVALID_CLIENT_TYPE -----------------------------------------------------------


async def test_invalid_client_type(
    open_server: StarServer, session: aiohttp.ClientSession
) -> None:
    """错误处理 → 验证错误: INVALID_CLIENT_TYPE for a type outside the spec's."""
    async with session.ws_connect(f"{open_server.base_url}/env/w_1/agent/a_1") as ws:
        await greeted(ws)
        await ws.send_json(
            message(("a_1", "agent"), ("w_1", "world"), {}, message_id="m1")
        )
        await ws.send_json(
            message(("a_1", "monitor"), ("w_1", "environment"), {}, message_id="m2")
        )
        await ws.send_json(
            {**message(("a_1", "agent"), ("w_1", "env"), {}), "id": "m3"}
        )
        errors = await frames(ws, 3)
        # The connection stays open and usable.
        await ws.send_json(message(("a_1", "agent"), ("w_1", "environment"), {}))
        not_found = await ws.receive_json(timeout=3)
    for error, message_id in zip(errors, ("m1", "m2", "m3"), strict=True):
        assert error["type"] == "error"
        assert error["sender"] == {"id": "hub", "type": "hub"}
        payload = error["payload"]
        assert payload["error_code"] == INVALID_CLIENT_TYPE
        assert payload["details"]["original_message_id"] == message_id
        assert payload["details"]["validation_errors"]
    assert not_found["payload"]["error_code"] == "RECIPIENT_NOT_FOUND"


# -- 3. batch frames --------------------------------------------------------------------


async def test_batch_frames(
    open_server: StarServer, session: aiohttp.ClientSession
) -> None:
    """性能考虑: 批量消息 — an array of envelopes in one frame, small and large."""
    base = open_server.base_url
    async with (
        session.ws_connect(f"{base}/env/world_1") as world,
        session.ws_connect(f"{base}/env/world_1/agent/agent_1") as agent,
        session.ws_connect(f"{base}/env/world_1/agent/agent_2") as other,
    ):
        for ws in (world, agent, other):
            await greeted(ws)
        me = ("agent_1", "agent")
        batch = [
            message(me, ("world_1", "environment"), {"type": "action"}, message_id="a"),
            message(me, ("agent_2", "agent"), {"type": "event"}, message_id="b"),
            message(me, ("ghost_1", "agent"), {"type": "event"}, message_id="c"),
            message(me, ("world_1", "robot"), {}, message_id="d"),
            message(
                ("agent_2", "agent"), ("world_1", "environment"), {}, message_id="e"
            ),
            message(me, ("world_1", "environment"), {"type": "action"}, message_id="f"),
        ]
        await agent.send_str(json.dumps(batch))
        assert await frames(world, 2) == [batch[0], batch[5]]  # one frame each
        assert await other.receive_json(timeout=3) == batch[1]
        errors = await frames(agent, 3)
        assert [
            (
                e["payload"]["error_code"],
                e["payload"]["details"]["original_message_id"],
                e["payload"]["details"]["batch_index"],
            )
            for e in errors
        ] == [
            ("RECIPIENT_NOT_FOUND", "c", 2),
            (INVALID_CLIENT_TYPE, "d", 3),
            ("PERMISSION_DENIED", "e", 4),
        ]
        # Over 64 KiB: decoded (and each envelope serialized) in a thread.
        blob = "字" * 30_000
        big = [
            message(me, ("world_1", "environment"), {"n": n, "blob": blob})
            for n in range(3)
        ]
        assert len(json.dumps(big, ensure_ascii=False).encode()) > 64 * 1024
        await agent.send_str(json.dumps(big, ensure_ascii=False))
        assert [f["payload"]["n"] for f in await frames(world, 3)] == [0, 1, 2]
        # Too many envelopes: the whole frame is refused.
        await agent.send_str(json.dumps([batch[0]] * (MAX_BATCH + 1)))
        refused = await agent.receive_json(timeout=3)
        assert refused["payload"]["error_code"] == "VALIDATION_ERROR"
        assert "batch_index" not in refused["payload"]["details"]


class CountingHub(StarHub):
    """Records how many loop turns a ticker saw before each envelope."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.seen: list[int] = []

    def _envelope(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append(self.turns)
        super()._envelope(*args, **kwargs)


async def test_the_loop_runs_between_the_envelopes_of_a_batch(
    socket_enabled: None, session: aiohttp.ClientSession
) -> None:
    """The reader yields between envelopes, as it does between frames."""
    hub = CountingHub()
    server = StarServer(tokens=None, hub=hub)
    await server.start()

    async def ticker() -> None:
        while True:
            hub.turns += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    try:
        async with (
            session.ws_connect(f"{server.base_url}/env/world_1") as world,
            session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as ws,
        ):
            await greeted(world)
            await greeted(ws)
            one = message(("agent_1", "agent"), ("world_1", "environment"), {})
            await ws.send_str(json.dumps([one] * 20))
            await frames(world, 20)
    finally:
        ticking.cancel()
        await server.close()
    assert len(hub.seen) == 20
    assert all(b > a for a, b in zip(hub.seen, hub.seen[1:], strict=False))


async def test_the_sdk_sends_batches(open_server: StarServer) -> None:
    world = EnvironmentClient(open_server.base_url, "world_1", path_prefix="")
    streams: list[Any] = []
    world.on_stream(lambda envelope: streams.append(envelope.payload["sequence"]))
    agent = AgentClient(open_server.base_url, "agent_1", "world_1", path_prefix="")
    errors: list[StarHubError] = []
    agent.on_error(errors.append)
    try:
        await world.connect()
        await agent.connect()
        env = Party("world_1", "environment")
        ids = await agent.send_batch(
            [
                ("message", env, {"type": "stream", "sequence": 1}),
                ("message", Party("nobody_1", "agent"), {"type": "event"}),
                ("message", env, {"type": "stream", "sequence": 2}),
            ]
        )
        await until(lambda: len(streams) == 2 and bool(errors))
        assert streams == [1, 2]
        assert errors[0].code == "RECIPIENT_NOT_FOUND"
        assert errors[0].original_message_id == ids[1]
        assert errors[0].details["batch_index"] == 1
        with pytest.raises(ValueError, match="1 to 100"):
            await agent.send_batch([])
    finally:
        await agent.close()
        await world.close()


# -- 4. the connection cap ----------------------------------------------------------------


async def test_the_connection_cap_refuses_clearly(
    socket_enabled: None, session: aiohttp.ClientSession
) -> None:
    """性能考虑 → 连接管理: 最大连接数 可配置; one more gets CONNECTION_FAILED and 1013."""
    server = StarServer(tokens={TOKEN}, hub=StarHub(max_connections=2))
    await server.start()
    base, auth = server.base_url, {"Authorization": f"Bearer {TOKEN}"}
    try:
        world = await session.ws_connect(f"{base}/env/world_1", headers=auth)
        agent = await session.ws_connect(f"{base}/env/world_1/agent/a_1", headers=auth)
        await greeted(world)
        await greeted(agent)
        async with session.ws_connect(f"{base}/human/human_1", headers=auth) as third:
            refusal = await third.receive_json(timeout=3)
            closing = await third.receive(timeout=3)
        assert refusal["type"] == "error"
        assert refusal["sender"] == {"id": "hub", "type": "hub"}
        assert refusal["recipient"] == {"id": "human_1", "type": "human"}
        assert refusal["payload"]["error_code"] == CONNECTION_FAILED
        assert "full" in refusal["payload"]["message"]
        assert refusal["payload"]["details"]["suggested_action"] == "retry later"
        assert closing.type is aiohttp.WSMsgType.CLOSE
        assert third.close_code == 1013
        # A client taking over its own identity is not refused.
        again = await session.ws_connect(f"{base}/env/world_1/agent/a_1", headers=auth)
        await greeted(again)
        assert (await agent.receive()).type is aiohttp.WSMsgType.CLOSE
        # The SDK retries a full hub with backoff and says why it could not connect.
        human = HumanClient(base, "human_1", token=TOKEN, backoff_initial=0.05)
        with pytest.raises(StarConnectionError, match=CONNECTION_FAILED):
            await human.connect(timeout=0.3)
        late = HumanClient(base, "human_2", token=TOKEN, backoff_initial=0.05)
        joining = asyncio.create_task(late.connect(timeout=5))
        await until(lambda: late.refusal is not None)
        await world.close()
        await joining
        assert late.connected and late.refusal is None
        await late.close()
        await again.close()
        assert server.hub.stats.refused_full >= 3
    finally:
        await server.close()


async def test_the_sdk_gives_up_when_the_identity_is_refused(
    socket_enabled: None,
) -> None:
    """PERMISSION_DENIED before the greeting is final, like a refused token."""
    server = StarServer(
        tokens=None,
        hub=StarHub(reserved=lambda identity: identity.client_id == "soul_1"),
    )
    url = await server.start()
    agent = AgentClient(url, "soul_1", "home", backoff_initial=0.01)
    try:
        with pytest.raises(StarAuthError, match="reserved"):
            await agent.connect(timeout=3)
        assert list(agent.retry_delays) == []
        assert agent.connections == 0
    finally:
        await agent.close()
        await server.close()


async def test_the_command_line_sets_the_cap(
    socket_enabled: None, session: aiohttp.ClientSession
) -> None:
    """``python -m devtools.star_server --max-connections N``."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "devtools.star_server",
        "--port",
        "0",
        "--max-connections",
        "1",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert "at most 1 clients" in line, line
        base = line.split(" and ")[1].split(" ")[0]  # ws://127.0.0.1:PORT (root)
        async with session.ws_connect(f"{base}/env/world_1") as world:
            await greeted(world)
            async with session.ws_connect(f"{base}/env/world_2") as refused:
                error = await refused.receive_json(timeout=3)
                assert error["payload"]["error_code"] == CONNECTION_FAILED
                assert (await refused.receive(timeout=3)).type is (
                    aiohttp.WSMsgType.CLOSE
                )
                assert refused.close_code == 1013
    finally:
        process.terminate()
        await process.wait()
    assert MAX_CONNECTIONS >= 50  # the benchmark's 50 agents and a world fit


def test_the_command_line_refuses_a_cap_below_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        star_server_main(["--max-connections", "0"])
    assert exited.value.code == 2
    assert "at least 1" in capsys.readouterr().err


# -- 5. liveness: WebSocket pings count ------------------------------------------------


async def test_websocket_pings_keep_a_quiet_client_alive(
    socket_enabled: None, session: aiohttp.ClientSession
) -> None:
    """连接超时 60 秒: a client whose library pings is alive without envelopes."""
    server = StarServer(
        tokens={TOKEN}, hub=StarHub(idle_timeout=0.3), tick_interval=0.1
    )
    base = await server.start()
    loop = asyncio.get_running_loop()
    try:
        pinger = await session.ws_connect(f"{base}/env/world_1", autoping=False)
        await pinger.ping(b"before auth")  # answered, not taken for the auth frame
        pong = await pinger.receive(timeout=3)
        assert (pong.type, pong.data) == (aiohttp.WSMsgType.PONG, b"before auth")
        await pinger.send_json({"type": "auth", "access_token": TOKEN})
        assert await pinger.receive_json(timeout=3) == {"type": "auth_ok"}
        await greeted(pinger)
        mute = await session.ws_connect(
            f"{base}/env/world_1/agent/mute_1",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        await greeted(mute)
        deadline = loop.time() + 1.0  # three idle timeouts
        while loop.time() < deadline:
            await pinger.ping(b"alive")
            await asyncio.sleep(0.1)
        assert [c.identity.client_id for c in server.hub.connections()] == ["world_1"]
        while (closing := await mute.receive(timeout=3)).type is (
            aiohttp.WSMsgType.TEXT
        ):
            pass  # heartbeats
        assert (closing.type, closing.data) == (aiohttp.WSMsgType.CLOSE, 1008)
        await pinger.close()
    finally:
        await server.close()
