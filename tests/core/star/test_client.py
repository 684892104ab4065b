"""The client SDK against ``devtools.star_server`` over real WebSockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
import itertools
import json
from pathlib import Path
import subprocess
import sys
import tomllib
from typing import Any

import aiohttp
from hypothesis import example, given, strategies as st
import pytest

from custom_components.soul.core.star import hub as star_hub
from custom_components.soul.core.star.hub import StarHub
from devtools.broker import free_port
from devtools.star_server import StarServer
import soul_star
from soul_star import (
    AgentClient,
    Envelope,
    EnvironmentClient,
    HumanClient,
    StarAuthError,
    StarClient,
    StarConnectionError,
    StarHubError,
    StarTimeoutError,
)

TOKEN = "star-test-token"
SDK = Path(__file__).resolve().parents[3] / "sdk" / "star-client"


@pytest.fixture
async def server(socket_enabled: None) -> AsyncGenerator[StarServer]:
    """A Star hub on 127.0.0.1 accepting ``TOKEN`` (auth frames wait 0.5 s)."""
    star = StarServer(tokens={TOKEN}, auth_timeout=0.5)
    await star.start()
    yield star
    await star.close()


@pytest.fixture
async def clients() -> AsyncGenerator[list[StarClient]]:
    """Clients to close after the test."""
    made: list[StarClient] = []
    yield made
    for client in made:
        await client.close()


@pytest.fixture
def make(server: StarServer, clients: list[StarClient]) -> Callable[..., Any]:
    """Build clients of the test server with the right token."""

    def build(kind: type[StarClient], *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("token", TOKEN)
        kwargs.setdefault("backoff_initial", 0.05)
        client = kind(server.base_url, *args, **kwargs)
        clients.append(client)
        return client

    return build


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until ``condition()`` holds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


# -- authentication -----------------------------------------------------------


async def test_bearer_header_auth(server: StarServer, make: Callable[..., Any]) -> None:
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    assert agent.connected
    assert agent.url == f"{server.base_url}/api/soul/star/env/world_1/agent/agent_1"
    assert server.hub.counts()["agent"] == 1


async def test_wrong_token_is_refused_and_not_retried(
    server: StarServer, make: Callable[..., Any]
) -> None:
    # As with Home Assistant, a wrong header leaves the connection waiting for
    # an auth frame, answered auth_invalid after the server's auth timeout.
    agent: AgentClient = make(AgentClient, "agent_1", "world_1", token="wrong")
    with pytest.raises(StarAuthError, match="refused the token"):
        await agent.connect(timeout=5)
    assert server.refused == 1
    assert list(agent.retry_delays) == []  # gave up at once
    assert agent.connections == 0
    assert not agent.connected
    # With frame auth a wrong token is refused at once.
    framed: AgentClient = make(
        AgentClient, "agent_2", "world_1", token="wrong", auth="frame"
    )
    with pytest.raises(StarAuthError, match="refused the token"):
        await framed.connect(timeout=0.4)
    assert server.refused == 2
    assert server.hub.connections() == []


async def test_frame_auth_client(server: StarServer, make: Callable[..., Any]) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1", auth="frame")
    env.on_action(lambda *_: {"status": "success", "message": "pong"})
    await env.connect()
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    assert (await agent.action("world_1", "ping"))["message"] == "pong"
    assert server.refused == 0


async def test_first_frame_auth(server: StarServer) -> None:
    url = f"{server.base_url}/api/soul/star/env/world_1"
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url) as ws:
            await ws.send_json({"type": "auth", "access_token": TOKEN})
            assert await ws.receive_json(timeout=3) == {"type": "auth_ok"}
            greeting = await ws.receive_json(timeout=3)
            assert greeting["type"] == "heartbeat"
            assert greeting["recipient"] == {"id": "world_1", "type": "environment"}
        for first in (
            {"type": "auth", "access_token": "wrong"},
            {"type": "message", "access_token": TOKEN},
            {"type": "auth"},
        ):
            async with session.ws_connect(url) as ws:
                await ws.send_json(first)
                answer = await ws.receive_json(timeout=3)
                assert answer["type"] == "auth_invalid"
                assert answer["message"]
                closing = await ws.receive(timeout=3)
                assert closing.type is aiohttp.WSMsgType.CLOSE
                assert ws.close_code == 1008
    assert server.refused == 3
    assert server.accepted == 1


async def test_wrong_header_falls_back_to_frame_auth(server: StarServer) -> None:
    """Home Assistant's behaviour: a wrong Bearer header is no authentication."""
    url = f"{server.base_url}/api/soul/star/env/world_1"
    async with aiohttp.ClientSession() as session:
        for header in ("Bearer wrong", "Basic xyz"):
            async with session.ws_connect(url, headers={"Authorization": header}) as ws:
                answer = await ws.receive_json(timeout=3)
                assert answer["type"] == "auth_invalid"
                assert (await ws.receive(timeout=3)).type is aiohttp.WSMsgType.CLOSE
                assert ws.close_code == 1008
        async with session.ws_connect(
            url, headers={"Authorization": "Bearer wrong"}
        ) as ws:
            await ws.send_json({"type": "auth", "access_token": TOKEN})
            assert await ws.receive_json(timeout=3) == {"type": "auth_ok"}
            assert (await ws.receive_json(timeout=3))["type"] == "heartbeat"


async def test_bad_ids_are_http_400(server: StarServer) -> None:
    async with aiohttp.ClientSession() as session:
        for path, headers, status in (
            ("/env/w!", {"Authorization": f"Bearer {TOKEN}"}, 400),
            ("/env/world_1/agent/a", {"Authorization": f"Bearer {TOKEN}"}, 400),
            ("/human/" + "h" * 51, {"Authorization": f"Bearer {TOKEN}"}, 400),
        ):
            with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
                await session.ws_connect(
                    f"{server.base_url}/api/soul/star{path}", headers=headers
                )
            assert caught.value.status == status, path


async def test_no_tokens_means_no_auth(socket_enabled: None) -> None:
    server = StarServer(tokens=None)
    url = await server.start()
    human = HumanClient(url, "human_1")
    try:
        await human.connect()
        assert server.hub.counts()["human"] == 1
    finally:
        await human.close()
        await server.close()


def test_client_arguments() -> None:
    env = EnvironmentClient("http://hass.local:8123/", "world_1")
    assert env.url == "ws://hass.local:8123/api/soul/star/env/world_1"
    assert env.env_id == "world_1"
    human = HumanClient("https://hass.local", "human_1", path_prefix="")
    assert human.url == "wss://hass.local/human/human_1"
    with pytest.raises(ValueError, match="client_type"):
        StarClient("ws://x", "robot", "robot_1")
    with pytest.raises(ValueError, match="ids"):
        AgentClient("ws://x", "a", "world_1")
    with pytest.raises(ValueError, match="ids"):
        StarClient("ws://x", "agent", "agent_1")  # an agent needs an environment
    with pytest.raises(ValueError, match="own id"):
        StarClient("ws://x", "environment", "world_1", "world_2")
    with pytest.raises(ValueError, match="auth"):
        HumanClient("ws://x", "human_1", auth="cookie")


# -- actions --------------------------------------------------------------------


async def test_action_outcome_by_id(make: Callable[..., Any]) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    seen: list[tuple[str, dict[str, Any], str]] = []

    async def slow_then_fast(
        action: str, parameters: dict[str, Any], envelope: Envelope
    ) -> dict[str, Any]:
        seen.append((action, parameters, envelope.sender.id))
        await asyncio.sleep(parameters["delay"])  # later actions answer first
        return {"status": "success", "message": action, "data": parameters}

    env.on_action(slow_then_fast)
    env.on_action(lambda action, parameters, envelope: {"status": "success", "message": "pong"}, "ping")  # fmt: skip
    await env.connect()
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    outcomes = await asyncio.gather(
        *(
            agent.action("world_1", "move", {"n": n, "delay": 0.1 - n * 0.02})
            for n in range(5)
        )
    )
    assert [o["data"]["n"] for o in outcomes] == [0, 1, 2, 3, 4]
    assert all(o["status"] == "success" for o in outcomes)
    assert {s[2] for s in seen} == {"agent_1"}
    assert (await agent.action("world_1", "ping"))["message"] == "pong"
    assert agent._pending == {}
    assert agent._pending_messages == {}


async def test_action_handler_failures_become_error_outcomes(
    make: Callable[..., Any],
) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")

    def explode(action: str, parameters: dict[str, Any], envelope: Envelope) -> None:
        raise RuntimeError("the floor is lava")

    env.on_action(explode, "jump")
    await env.connect()
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    failed = await agent.action("world_1", "jump")
    assert failed == {
        "status": "error",
        "message": "the floor is lava",
        "error_code": "ACTION_FAILED",
    }
    unknown = await agent.action("world_1", "fly")
    assert unknown["status"] == "error"
    assert unknown["error_code"] == "INVALID_ACTION"


async def test_outcome_envelope_follows_the_spec(
    server: StarServer, make: Callable[..., Any]
) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    env.on_action(lambda *_: {"status": "success", "message": "ok", "data": {}})
    await env.connect()
    url = f"{server.base_url}/api/soul/star/env/world_1/agent/agent_raw"
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, headers={"Authorization": f"Bearer {TOKEN}"}) as ws,
    ):
        assert (await ws.receive_json(timeout=3))["type"] == "heartbeat"
        action = {"type": "action", "action": "move", "id": "action_42"}
        await ws.send_json(
            {
                "type": "message",
                "sender": {"id": "agent_raw", "type": "agent"},
                "recipient": {"id": "world_1", "type": "environment"},
                "payload": action,
            }
        )
        reply = await ws.receive_json(timeout=3)
    assert set(reply) == {
        "type",
        "sender",
        "recipient",
        "payload",
        "timestamp",
        "message_id",
    }
    assert reply["type"] == "message"
    assert reply["sender"] == {"id": "world_1", "type": "environment"}
    assert reply["recipient"] == {"id": "agent_raw", "type": "agent"}
    assert reply["timestamp"].endswith("Z")
    assert reply["payload"] == {
        "type": "outcome",
        "id": "action_42",
        "outcome": {"status": "success", "message": "ok", "data": {}},
        "outcome_type": "dict",
    }


async def test_action_timeout(make: Callable[..., Any]) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    gate = asyncio.Event()

    async def stuck(*_: Any) -> dict[str, Any]:
        await gate.wait()
        return {"status": "success"}

    env.on_action(stuck)
    await env.connect()
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    with pytest.raises(StarTimeoutError, match=r"within 0\.2 s") as caught:
        await agent.action("world_1", "wait", timeout=0.2)
    assert isinstance(caught.value, TimeoutError)  # asyncio.TimeoutError too
    assert agent._pending == {}
    gate.set()  # the late outcome is dropped quietly
    await asyncio.sleep(0.1)
    assert agent.connected


async def test_human_acts_on_an_agent(make: Callable[..., Any]) -> None:
    soul: AgentClient = make(AgentClient, "soul_demo", "home")
    soul.on_action(
        lambda action, parameters, envelope: {
            "status": "success",
            "message": f"hello {envelope.sender.id}: {parameters['text']}",
        },
        "chat",
    )
    await soul.connect()
    human: HumanClient = make(HumanClient, "human_1")
    await human.connect()
    outcome = await human.action(
        "soul_demo", "chat", {"text": "hi"}, recipient_type="agent"
    )
    assert outcome["message"] == "hello human_1: hi"


# -- errors ---------------------------------------------------------------------


async def test_error_on_action_raises_there(make: Callable[..., Any]) -> None:
    agent: AgentClient = make(AgentClient, "agent_1", "world_1")
    await agent.connect()
    with pytest.raises(StarHubError) as caught:
        await agent.action("world_1", "ping", timeout=5)  # no environment connected
    assert caught.value.code == "RECIPIENT_NOT_FOUND"
    assert caught.value.original_message_id is not None
    assert caught.value.details["suggested_action"]
    assert caught.value.envelope is not None
    assert caught.value.envelope.sender.type == "hub"


async def test_other_errors_reach_the_error_handlers(
    make: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    await env.connect()
    message_id = await env.send_event("agent", "ghost_1", "hello")  # nobody there
    await until(lambda: "RECIPIENT_NOT_FOUND" in caplog.text)  # logged without handler
    errors: list[StarHubError] = []
    env.on_error(errors.append)
    message_id = await env.send_event("agent", "ghost_1", "hello")
    await until(lambda: bool(errors))
    assert errors[0].code == "RECIPIENT_NOT_FOUND"
    assert errors[0].original_message_id == message_id


# -- events and streams ---------------------------------------------------------


async def test_events_and_streams(make: Callable[..., Any]) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    streams: list[Envelope] = []
    env.on_stream(streams.append)
    await env.connect()
    received: dict[str, list[Envelope]] = {}
    agents = []
    for agent_id, env_id in (
        ("agent_1", "world_1"),
        ("agent_2", "world_1"),
        ("agent_3", "world_2"),
    ):
        agent: AgentClient = make(AgentClient, agent_id, env_id)
        received[agent_id] = []
        agent.on_event(received[agent_id].append)
        await agent.connect()
        agents.append(agent)
    human: HumanClient = make(HumanClient, "human_1")
    human_events: list[Envelope] = []

    async def async_handler(envelope: Envelope) -> None:
        human_events.append(envelope)

    human.on_event(async_handler)
    await human.connect()

    await env.broadcast_event("item_spawned", {"item_id": "apple_1"})
    await env.send_event("human", "human_1", "world_status", {"tick": 1})
    await until(lambda: len(received["agent_2"]) == 1 and len(human_events) == 1)
    event = received["agent_1"][0]
    assert event.sender.id == "world_1"
    assert event.recipient.id == "*"
    assert event.kind == "event"
    assert event.payload["event"] == "item_spawned"
    assert event.payload["data"] == {"item_id": "apple_1"}
    assert event.payload["id"].startswith("event_")
    assert received["agent_3"] == []  # another environment
    assert human_events[0].payload["event"] == "world_status"

    for value in (21.5, 22.0):
        await agents[0].send_stream(
            "environment", "world_1", "sensor_data", {"t": value}
        )
    await agents[0].send_stream("environment", "world_1", "telemetry", {"v": 1})
    await until(lambda: len(streams) == 3)
    assert [(s.payload["stream_type"], s.payload["sequence"]) for s in streams] == [
        ("sensor_data", 1),
        ("sensor_data", 2),
        ("telemetry", 1),
    ]
    assert streams[1].payload["data"] == {"t": 22.0}
    assert streams[0].sender.id == "agent_1"


# -- connection management --------------------------------------------------------


async def test_heartbeats_are_answered(socket_enabled: None) -> None:
    """A client that answers heartbeats outlives the idle timeout; a mute one does not."""
    server = StarServer(
        tokens={TOKEN}, hub=StarHub(idle_timeout=0.3), tick_interval=0.1
    )
    url = await server.start()
    agent = AgentClient(url, "agent_1", "world_1", token=TOKEN)
    try:
        await agent.connect()
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(
                f"{url}/api/soul/star/env/world_1/agent/mute_1",
                headers={"Authorization": f"Bearer {TOKEN}"},
            ) as mute,
        ):
            beats = 0
            while (message := await mute.receive(timeout=3)).type is (
                aiohttp.WSMsgType.TEXT
            ):
                beats += json.loads(message.data)["type"] == "heartbeat"
            assert message.type is aiohttp.WSMsgType.CLOSE
            assert mute.close_code == 1008
            assert beats >= 3
        await asyncio.sleep(0.5)
        assert agent.connected
        assert agent.connections == 1
        assert [c.identity.client_id for c in server.hub.connections()] == ["agent_1"]
    finally:
        await agent.close()
        await server.close()


async def test_reconnects_with_backoff_after_a_restart(socket_enabled: None) -> None:
    server = StarServer(tokens={TOKEN})
    url = await server.start()
    port = server.port
    env = EnvironmentClient(url, "world_1", token=TOKEN)
    env.on_action(lambda *_: {"status": "success", "message": "pong"})
    agent = AgentClient(
        url, "agent_1", "world_1", token=TOKEN, backoff_initial=0.02, backoff_max=0.16
    )
    ups: list[int] = []
    downs: list[int] = []
    agent.on_connect(lambda: ups.append(agent.connections))
    agent.on_disconnect(lambda: downs.append(agent.connections))
    try:
        await env.connect()
        await agent.connect()
        assert (await agent.action("world_1", "ping"))["message"] == "pong"
        await server.close()
        await until(lambda: not agent.connected)
        assert downs == [1]
        await until(lambda: len(agent.retry_delays) >= 6)
        with pytest.raises(StarConnectionError):
            await agent.action("world_1", "ping", timeout=0.05)
        server = StarServer(tokens={TOKEN})
        await server.start(port=port)
        await agent.wait_connected(5)
        await env.wait_connected(5)
        assert (await agent.action("world_1", "ping", timeout=5))["message"] == "pong"
    finally:
        await agent.close()
        await env.close()
        await server.close()
    assert ups == [1, 2]
    delays = list(agent.retry_delays)
    # Doubling (with up to 20 % jitter below) until the cap, never beyond it.
    assert 0.016 <= delays[0] <= 0.02
    for before, after in itertools.pairwise(delays[:4]):
        assert after >= before * 1.6
    assert max(delays) <= 0.16
    assert delays[-1] >= 0.16 * 0.8


async def test_a_client_that_stops_reading_is_cut_off(socket_enabled: None) -> None:
    """Its bounded send queue fills up; the hub drops it and serves the others."""
    server = StarServer(tokens={TOKEN}, queue_size=16, close_timeout=0.2)
    url = await server.start()
    env = EnvironmentClient(url, "world_1", token=TOKEN)
    fast = AgentClient(url, "agent_fast", "world_1", token=TOKEN)
    got: list[int] = []
    fast.on_event(lambda envelope: got.append(envelope.payload["data"]["n"]))
    blob = "x" * 256 * 1024
    try:
        await env.connect()
        await fast.connect()
        async with aiohttp.ClientSession() as session:
            stuck = await session.ws_connect(
                f"{url}/api/soul/star/env/world_1/agent/agent_stuck",
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
            await until(lambda: server.hub.counts()["agent"] == 2)
            for n in range(100):  # 25 MB: more than the socket buffers hold
                await env.broadcast_event("tick", {"n": n, "blob": blob})
            await until(lambda: server.hub.stats.dropped_slow == 1, timeout=5)
            await until(lambda: server.hub.counts()["agent"] == 1)
            await until(lambda: len(got) == 100, timeout=5)
            await stuck.close()
    finally:
        await fast.close()
        await env.close()
        await server.close()
    assert got == list(range(100))
    assert fast.connections == 1


async def test_pending_actions_fail_when_the_connection_drops(
    socket_enabled: None,
) -> None:
    server = StarServer(tokens={TOKEN})
    url = await server.start()
    env = EnvironmentClient(url, "world_1", token=TOKEN)
    env.on_action(lambda *_: asyncio.sleep(10))  # never answers in time
    agent = AgentClient(url, "agent_1", "world_1", token=TOKEN, backoff_initial=0.05)
    try:
        await env.connect()
        await agent.connect()
        pending = asyncio.ensure_future(agent.action("world_1", "wait", timeout=10))
        await until(lambda: bool(agent._pending))
        await server.close()
        with pytest.raises(StarConnectionError, match="lost"):
            await pending
    finally:
        await agent.close()
        await env.close()
        await server.close()


async def test_takeover_stops_the_old_client(
    server: StarServer, make: Callable[..., Any]
) -> None:
    old: AgentClient = make(AgentClient, "agent_1", "world_1")
    await old.connect()
    new: AgentClient = make(AgentClient, "agent_1", "world_1")
    await new.connect()
    await until(lambda: old.failure is not None)
    assert not old.connected
    assert old.close_code == 1001
    assert "took over" in str(old.failure)
    await asyncio.sleep(0.2)  # no reconnect war
    assert old.connections == 1
    assert new.connected
    assert len(server.hub.connections()) == 1


async def test_clean_close(server: StarServer, make: Callable[..., Any]) -> None:
    env: EnvironmentClient = make(EnvironmentClient, "world_1")
    disconnects: list[None] = []
    env.on_disconnect(lambda: disconnects.append(None))
    await env.connect()
    await env.close()
    await until(lambda: server.hub.connections() == [])
    assert not env.connected
    assert disconnects == []  # closing on purpose is no disconnect
    with pytest.raises(StarConnectionError, match="closed"):
        await env.send_event("agent", "*", "late")
    with pytest.raises(StarConnectionError):
        await env.connect()
    await env.close()  # twice is fine


async def test_context_manager(server: StarServer) -> None:
    async with HumanClient(server.base_url, "human_1", token=TOKEN) as human:
        assert human.connected
        assert server.hub.counts()["human"] == 1
    await until(lambda: server.hub.connections() == [])


async def test_connect_timeout(socket_enabled: None) -> None:
    agent = AgentClient(
        f"ws://127.0.0.1:{free_port()}", "agent_1", "world_1", backoff_initial=0.01
    )
    with pytest.raises(StarConnectionError, match="could not connect"):
        await agent.connect(timeout=0.2)
    assert len(agent.retry_delays) >= 2
    assert agent._runner is None


# -- the distribution (sdk/star-client) ------------------------------------------


def test_sdk_constants_equal_the_hub() -> None:
    """The SDK's copies of the hub's protocol constants are the hub's."""
    assert soul_star.HUB_ID == star_hub.HUB_ID
    assert soul_star.CLIENT_TYPES == star_hub.CLIENT_TYPES
    assert soul_star.client.ID_RE.pattern == star_hub.ID_RE.pattern
    assert soul_star.client.ID_RE.flags == star_hub.ID_RE.flags
    assert soul_star.MAX_BATCH == star_hub.MAX_BATCH
    assert soul_star.client.PERMISSION_DENIED == star_hub.PERMISSION_DENIED


@given(
    st.one_of(
        st.text(max_size=60),
        st.from_regex(star_hub.ID_RE, fullmatch=True),
        st.none(),
        st.integers(),
    )
)
@example("ab")
@example("abc")
@example("a" * 50)
@example("a" * 51)
@example("_agent")
@example("agent_1.x-2")
@example("agent_1\n")
def test_sdk_valid_id_agrees_with_the_hub(value: Any) -> None:
    """The SDK accepts exactly the ids the hub accepts."""
    assert soul_star.valid_id(value) == star_hub.valid_id(value)


def test_sdk_imports_without_the_integration(tmp_path: Path) -> None:
    """A pip user has only the SDK: it imports with the repository off the path."""
    script = f"""
import sys
sys.path.insert(0, {str(SDK)!r})
import soul_star
assert soul_star.__file__.startswith({str(SDK)!r}), soul_star.__file__
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("custom_components", "devtools", "homeassistant")
)
assert not loaded, loaded
print("ok", soul_star.__version__)
"""
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-I", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ok {soul_star.__version__}"


def test_sdk_distribution_metadata() -> None:
    """pyproject.toml names the package, its version and its one dependency."""
    text = (SDK / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"]
    assert project["name"] == "soul-star-client"
    assert project["version"] == soul_star.__version__
    assert project["dependencies"] == ["aiohttp>=3.9"]
    # The SDK ships once, in its own distribution, not in the integration.
    assert Path(soul_star.client.__file__).resolve().parent == SDK / "soul_star"
    assert not (Path(star_hub.__file__).parent / "client.py").exists()
