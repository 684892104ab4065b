"""The hub's fast paths give the answers of the slow ones; the transport writes in order.

No timing here: the figures are in ``benchmarks/star_hub.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import json
from typing import Any

import aiohttp
import pytest

from custom_components.soul.core import untrusted
from custom_components.soul.core.star import envelope as envelope_module, transport
from custom_components.soul.core.star.hub import Identity, StarHub, valid_id
from devtools.star_server import StarServer

GOOD: dict[str, Any] = {
    "type": "message",
    "sender": {"id": "agent_1", "type": "agent"},
    "recipient": {"id": "world_1", "type": "environment"},
    "payload": {"type": "action", "action": "move"},
    "timestamp": "2025-08-19T10:30:00Z",
    "message_id": "msg_1",
}


def _with(**changes: Any) -> dict[str, Any]:
    envelope = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is _DROP:
            envelope.pop(key)
        else:
            envelope[key] = value
    return envelope


_DROP = object()

ENVELOPES: list[Any] = [
    GOOD,
    _with(recipient={"id": "*", "type": "agent"}),
    _with(type="heartbeat"),
    _with(type="error"),
    _with(type="chat"),
    _with(type=None),
    _with(sender={"id": "agent_1"}),
    _with(sender={"id": "agent_1", "type": "robot"}),
    _with(sender={"id": "a", "type": "agent"}),
    _with(sender={"id": 5, "type": "agent"}),
    _with(sender=["agent_1", "agent"]),
    _with(recipient={"id": "*", "type": "environment", "extra": 1}),
    _with(recipient={"id": "bad id!", "type": "environment"}),
    _with(recipient={"type": ["environment"], "id": "world_1"}),
    _with(payload=_DROP),
    _with(payload=None),
    _with(timestamp=5),
    _with(message_id=["msg"]),
    _with(message_id=_DROP, timestamp=_DROP),
    [GOOD],
    "text",
    None,
    {},
]


@pytest.mark.parametrize("envelope", ENVELOPES)
def test_the_quick_check_agrees_with_the_full_validation(envelope: Any) -> None:
    code, problems = envelope_module.problems(envelope)
    if envelope_module.well_formed(envelope):
        assert problems == []
    # The full validation runs whenever the quick one is not sure.
    assert isinstance(code, str)


def test_every_well_formed_envelope_of_the_list_is_recognised() -> None:
    quick = [envelope_module.well_formed(e) for e in ENVELOPES]
    full = [not envelope_module.problems(e)[1] for e in ENVELOPES]
    assert quick == full


@pytest.mark.parametrize(
    "party",
    [
        {"id": "agent_1", "type": "agent"},
        {"type": "agent", "id": "agent_1"},
        {"id": "agent_1", "type": "agent", "name": "x"},
        {"id": "agent_2", "type": "agent"},
        {"id": "agent_1", "type": "environment"},
        {"id": "agent_1"},
        ["agent_1", "agent"],
        None,
    ],
)
def test_is_party_is_equality_with_as_party(party: Any) -> None:
    identity = Identity("agent", "agent_1", "world_1")
    assert identity.is_party(party) == (party == identity.as_party())


def test_valid_ids_are_remembered_but_never_invalid_ones() -> None:
    envelope_module._VALID_IDS.clear()
    assert valid_id("agent_42")
    assert "agent_42" in envelope_module._VALID_IDS
    assert valid_id("agent_42")  # from the set
    for bad in ("ab", "x" * 51, "bad id", "-lead", "*", "", None, 42, b"agent_1"):
        assert not valid_id(bad)
    assert {"agent_42"} == envelope_module._VALID_IDS


def test_the_remembered_ids_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envelope_module, "_VALID_IDS_KEPT", 3)
    envelope_module._VALID_IDS.clear()
    for n in range(10):
        assert valid_id(f"agent_{n}")
        assert len(envelope_module._VALID_IDS) <= 3
    assert valid_id("agent_0")


@pytest.fixture
async def server(socket_enabled: None) -> AsyncGenerator[StarServer]:
    star = StarServer(tokens=None, hub=StarHub(rate=1e9, burst=10**6))
    await star.start()
    yield star
    await star.close()


def _message(sequence: int) -> str:
    return json.dumps(
        {
            "type": "message",
            "sender": {"id": "agent_1", "type": "agent"},
            "recipient": {"id": "world_1", "type": "environment"},
            "payload": {"type": "stream", "sequence": sequence},
        }
    )


async def test_a_burst_arrives_whole_and_in_order(server: StarServer) -> None:
    """Frames written at once and frames queued behind a busy write keep their order."""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{server.base_url}/env/world_1") as world,
        session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as agent,
    ):
        assert (await world.receive_json(timeout=3))["type"] == "heartbeat"
        assert (await agent.receive_json(timeout=3))["type"] == "heartbeat"
        big = "x" * 100_000  # fills the socket buffers now and then: writes wait
        for sequence in range(200):
            frame = json.loads(_message(sequence))
            frame["payload"]["data"] = big if sequence % 20 == 0 else ""
            await agent.send_str(json.dumps(frame))
        got = [
            (await world.receive_json(timeout=5))["payload"]["sequence"]
            for _ in range(200)
        ]
    assert got == list(range(200))
    assert server.hub.stats.dropped_slow == 0


async def test_a_small_frame_of_many_values_is_decoded_in_a_thread(
    server: StarServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 frames of 32,000 zeros each, under 64 KiB, held the loop (black box)."""
    decoded: list[int] = []
    decode_frame = transport.decode_frame

    def counting(raw: str | bytes, max_bytes: int) -> Any:
        decoded.append(len(raw))
        return decode_frame(raw, max_bytes)

    monkeypatch.setattr(transport, "decode_frame", counting)
    zeros = "[" + ",".join(["0"] * (untrusted.LOOP_JSON_VALUES + 2)) + "]"
    assert len(zeros) < untrusted.LOOP_JSON_BYTES
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as agent,
    ):
        assert (await agent.receive_json(timeout=3))["type"] == "heartbeat"
        await agent.send_str(zeros)  # a batch of too many envelopes
        answer = await agent.receive_json(timeout=3)
    assert answer["type"] == "error", answer
    assert "VALIDATION_ERROR" in json.dumps(answer)
    assert decoded == [len(zeros)]


def test_what_the_loop_decodes_is_small_in_bytes_and_in_values() -> None:
    few = "[" + ",".join(["0"] * (untrusted.LOOP_JSON_VALUES + 1)) + "]"  # commas
    assert untrusted.decodes_on_loop(few)
    assert untrusted.decodes_on_loop(few.encode())
    assert not untrusted.decodes_on_loop(few[:-1] + ",0]")
    assert not untrusted.decodes_on_loop((few[:-1] + ",0]").encode())
    assert not untrusted.decodes_on_loop(b" " * (untrusted.LOOP_JSON_BYTES + 1))


async def test_the_loop_runs_during_a_long_stretch_of_frames(
    server: StarServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no time allowed for a stretch, the reader lets the loop run after each frame."""
    monkeypatch.setattr(transport, "YIELD_AFTER", 0.0)
    turns = 0
    seen: list[int] = []
    receive = server.hub._envelope

    def counting(*args: Any, **kwargs: Any) -> None:
        seen.append(turns)
        receive(*args, **kwargs)

    monkeypatch.setattr(server.hub, "_envelope", counting)

    async def ticker() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(f"{server.base_url}/env/world_1") as world,
            session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as agent,
        ):
            await world.receive_json(timeout=3)
            await agent.receive_json(timeout=3)
            # One write, many frames: the reader has them all at once.
            agent._writer.transport.write(  # type: ignore[union-attr]
                b"".join(_frame(_message(n)) for n in range(30))
            )
            for _ in range(30):
                await world.receive_json(timeout=5)
    finally:
        ticking.cancel()
    assert len(seen) == 30
    # Two frames back to back at most, then the loop ran (the ticker moved).
    assert all(b > a for a, b in zip(seen, seen[2:], strict=False))


def _frame(text: str) -> bytes:
    """A masked client text frame (RFC 6455), mask of zeros."""
    data = text.encode()
    assert len(data) < 65536
    header = (
        bytes([0x81, 0x80 | len(data)])
        if len(data) < 126
        else bytes([0x81, 0x80 | 126]) + len(data).to_bytes(2, "big")
    )
    return header + b"\0\0\0\0" + data


# -- receive_now: the answers of receive -------------------------------------------

FRAMES: list[str | bytes] = [
    json.dumps(GOOD),
    *(json.dumps(envelope) for envelope in ENVELOPES),
    json.dumps([GOOD, _with(type="chat"), 7, _with(message_id="m2")]),
    "[]",
    "{not json",
    '{"a": "\\ud800"}',
    "[" * 40 + "]" * 40,
    json.dumps(GOOD).encode(),
    b"\xff\xfe",
    json.dumps(_with(recipient={"id": "agent_2", "type": "agent"})),
    json.dumps(_with(recipient={"id": "world_2", "type": "environment"})),
    json.dumps(_with(recipient={"id": "human_1", "type": "human"})),
    json.dumps(_with(sender={"id": "agent_2", "type": "agent"})),
    json.dumps(_with(sender={"type": "agent", "id": "agent_1"})),
]


class _Peer:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def send(self, text: str) -> bool:
        self.texts.append(text)
        return True

    def close(self, _code: int, _reason: str) -> None:
        pass

    def received(self) -> list[Any]:
        """The frames, errors without their timestamp (the only part that varies)."""
        frames = [json.loads(text) for text in self.texts]
        for frame in frames:
            if frame["type"] == "error":
                frame.pop("timestamp")
        return frames


AGENT = Identity("agent", "agent_1", "world_1")


def _world(
    agent_identity: Identity = AGENT,
) -> tuple[StarHub, Any, _Peer, _Peer, _Peer]:
    hub = StarHub(clock=lambda: 1000.0)
    peers = _Peer(), _Peer(), _Peer()
    hub.connect(Identity("environment", "world_1", "world_1"), peers[0].send,
                peers[0].close)  # fmt: skip
    hub.connect(Identity("agent", "agent_2", "world_1"), peers[1].send, peers[1].close)
    agent = hub.connect(agent_identity, peers[2].send, peers[2].close)
    for peer in peers:
        peer.texts.clear()
    return hub, agent, *peers


@pytest.mark.parametrize("raw", FRAMES)
def test_receive_now_answers_as_receive(raw: str | bytes) -> None:
    slow_hub, slow_agent, *slow = _world()
    fast_hub, fast_agent, *fast = _world()
    slow_hub.receive(slow_agent, raw)
    for _ in fast_hub.receive_now(fast_agent, raw):
        pass
    assert [peer.received() for peer in fast] == [peer.received() for peer in slow]
    # What is routed is the frame as sent, byte for byte.
    assert [peer.texts for peer in fast[:2]] == [peer.texts for peer in slow[:2]]
    assert fast_hub.stats.routed == slow_hub.stats.routed
    assert fast_hub.stats.errors == slow_hub.stats.errors


def test_receive_now_handles_one_envelope_at_once_and_a_batch_in_steps() -> None:
    hub, agent, world, _other, _peer = _world()
    assert hub.receive_now(agent, json.dumps(GOOD)) == ()
    assert world.texts == [json.dumps(GOOD)]
    steps = iter(hub.receive_now(agent, json.dumps([GOOD, GOOD, GOOD])))
    assert len(world.texts) == 1  # a batch: nothing before the first step
    next(steps)
    assert len(world.texts) == 2
    hub.disconnect(agent)
    assert list(steps) == []
    assert len(world.texts) == 2
    assert hub.receive_now(agent, json.dumps(GOOD)) == ()  # closed: nothing
    assert len(world.texts) == 2


def test_an_identity_that_fails_the_sender_checks_is_validated_in_full() -> None:
    """A transport's identity is not trusted to be valid: its envelopes are checked."""
    bad = Identity("agent", "a!", "world_1")
    hub, agent, world, _other, peer = _world(bad)
    assert agent.party is None
    raw = json.dumps(_with(sender=bad.as_party()))
    for _ in hub.receive_now(agent, raw):
        pass
    assert world.texts == []
    [error] = peer.received()
    assert error["payload"]["error_code"] == "VALIDATION_ERROR"
    assert any(
        "sender.id" in p for p in error["payload"]["details"]["validation_errors"]
    )


@pytest.mark.parametrize("envelope", [e for e in ENVELOPES if isinstance(e, dict)])
def test_the_sender_quick_check_is_the_quick_check_and_the_sender(
    envelope: dict[str, Any],
) -> None:
    party = Identity("agent", "agent_1", "world_1").as_party()
    assert envelope_module.well_formed_from(envelope, party) == (
        envelope_module.well_formed(envelope) and envelope["sender"] == party
    )


# -- a write started by hand and finished by a task ---------------------------------


async def test_a_suspended_write_is_finished_by_the_task_that_awaits_it() -> None:
    loop = asyncio.get_running_loop()
    done: list[Any] = []

    async def write(future: asyncio.Future[str]) -> None:
        done.append(await future)
        done.append(await asyncio.sleep(0, "after"))

    future: asyncio.Future[str] = loop.create_future()
    coroutine = write(future)
    waiting = coroutine.send(None)  # suspends on the future
    task = loop.create_task(_await(transport._Resumed(coroutine, waiting)))
    await asyncio.sleep(0)
    assert not task.done()
    future.set_result("drained")
    await task
    assert done == ["drained", "after"]


async def test_a_suspended_write_takes_the_exception_and_the_cancellation() -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    async def write(future: asyncio.Future[None]) -> None:
        try:
            await future
        except ConnectionResetError:
            seen.append("failed")
            raise
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    failing: asyncio.Future[None] = loop.create_future()
    coroutine = write(failing)
    task = loop.create_task(_await(transport._Resumed(coroutine, coroutine.send(None))))
    await asyncio.sleep(0)
    failing.set_exception(ConnectionResetError())
    with pytest.raises(ConnectionResetError):
        await task
    waiting: asyncio.Future[None] = loop.create_future()
    coroutine = write(waiting)
    task = loop.create_task(_await(transport._Resumed(coroutine, coroutine.send(None))))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["failed", "cancelled"]


async def _await(awaitable: transport._Resumed) -> None:
    await awaitable


async def test_writes_that_wait_for_a_client_not_reading_arrive_in_order(
    server: StarServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket fills: a write suspends, a task finishes it, the rest queue behind."""
    resumed = 0
    resumed_class = transport._Resumed

    class Counting(resumed_class):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any) -> None:
            nonlocal resumed
            resumed += 1
            super().__init__(*args)

    monkeypatch.setattr(transport, "_Resumed", Counting)
    big = "x" * 400_000
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{server.base_url}/env/world_1") as world,
        session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as agent,
    ):
        assert (await world.receive_json(timeout=3))["type"] == "heartbeat"
        assert (await agent.receive_json(timeout=3))["type"] == "heartbeat"
        # 7.2 MB the world does not read yet (a queue holds at most
        # SEND_QUEUE_CHARS: test_outbox cuts off a client that holds more)
        for sequence in range(18):
            frame = json.loads(_message(sequence))
            frame["payload"]["data"] = big
            await agent.send_str(json.dumps(frame))
        for _ in range(200):  # until the hub has routed them all
            if server.hub.stats.routed >= 18:
                break
            await asyncio.sleep(0.02)
        got = [
            (await world.receive_json(timeout=10))["payload"]["sequence"]
            for _ in range(18)
        ]
    assert got == list(range(18))
    assert resumed >= 1
    assert server.hub.stats.dropped_slow == 0
