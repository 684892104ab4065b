"""The transport's ``_Outbox``: one write a turn, aiohttp's framing, order, limits.

Unit tests over a recording transport (the frames must be the bytes aiohttp's
own writer produces), then the whole server: many senders to one client,
and a client that stops reading is cut off while the others are served.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import json
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import WSMsgType
from aiohttp._websocket.writer import WebSocketWriter
from aiohttp.base_protocol import BaseProtocol
import pytest

from custom_components.soul.core.star import transport
from custom_components.soul.core.star.hub import CLOSE_TRY_LATER, Identity, StarHub
from devtools.star_server import StarServer

WORLD = Identity("environment", "world_1", "world_1")


class Recording(asyncio.Transport):
    """A transport that keeps what is written; ``on_write`` may pause it."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closing = False
        self.on_write: Any = None

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))
        if self.on_write is not None:
            self.on_write()

    def is_closing(self) -> bool:
        return self.closing

    def abort(self) -> None:
        self.closing = True


class FakeSocket:
    """The parts of ``web.WebSocketResponse`` the outbox uses, over aiohttp's writer."""

    def __init__(self, sink: Recording, protocol: BaseProtocol, compress: int) -> None:
        self.compress = compress
        self.closed = False
        self.sink = sink
        self.writer = WebSocketWriter(protocol, sink, compress=compress)

    async def send_str(self, text: str) -> None:
        await self.writer.send_frame(text.encode(), WSMsgType.TEXT)

    async def close(self, *, code: int, message: bytes) -> None:
        self.closed = True
        self.sink.write(b"CLOSE %d %s" % (code, message))


def _outbox(
    *, compress: int = 0, queue_size: int = 256
) -> tuple[transport._Outbox, Recording, BaseProtocol, FakeSocket]:
    sink = Recording()
    protocol = BaseProtocol(asyncio.get_running_loop())
    protocol.connection_made(sink)
    ws = FakeSocket(sink, protocol, compress)
    request = SimpleNamespace(protocol=protocol, transport=sink)
    outbox = transport._Outbox(
        ws,  # type: ignore[arg-type]
        request,  # type: ignore[arg-type]
        WORLD,
        queue_size,
        1.0,
    )
    return outbox, sink, protocol, ws


async def _aiohttp_frames(texts: list[str]) -> bytes:
    """The bytes aiohttp's writer sends for ``texts``, one frame each."""
    sink = Recording()
    protocol = BaseProtocol(asyncio.get_running_loop())
    protocol.connection_made(sink)
    writer = WebSocketWriter(protocol, sink)
    for text in texts:
        await writer.send_frame(text.encode(), WSMsgType.TEXT)
    return b"".join(sink.writes)


async def _turn() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


TEXTS = [
    "",
    "x" * 125,
    "x" * 126,
    '{"type": "message", "payload": "é ✓ 🌍"}',
    "y" * 65_535,
    "z" * transport.FAST_FRAME_BYTES,
    "é" * (transport.FAST_FRAME_BYTES // 2 + 1),  # few characters, many bytes
    "w" * (transport.FAST_FRAME_BYTES + 1),
    "v" * 70_000,
    "tail",
]


async def test_the_frames_of_a_turn_go_out_in_one_write() -> None:
    outbox, sink, _protocol, _ws = _outbox()
    texts = [json.dumps({"n": n, "pad": "p" * n}) for n in range(50)]
    for text in texts:
        assert outbox.put(text)
    assert sink.writes == []  # kept for the end of the turn
    await _turn()
    assert sink.writes == [await _aiohttp_frames(texts)]


async def test_the_bytes_are_aiohttps_in_order_whatever_the_size() -> None:
    """Small frames are framed here, large ones by aiohttp; the stream is the same."""
    outbox, sink, _protocol, _ws = _outbox()
    for text in TEXTS:
        assert outbox.put(text)
    await _turn()
    assert b"".join(sink.writes) == await _aiohttp_frames(TEXTS)
    assert sink.writes[0] == await _aiohttp_frames(TEXTS[:4])  # one write


async def test_a_connection_that_compresses_is_written_by_aiohttp_at_once() -> None:
    outbox, sink, _protocol, _ws = _outbox(compress=15)
    assert outbox.put("compressed by aiohttp")
    assert len(sink.writes) == 1  # not kept for the end of the turn
    assert sink.writes[0][0] == 0xC1  # FIN, RSV1 (deflate), text


async def test_frames_wait_at_most_flush_bytes_for_the_turn() -> None:
    outbox, sink, _protocol, _ws = _outbox()
    text = "q" * 10_000
    for _ in range(transport.FLUSH_BYTES // 10_000 + 1):
        outbox.put(text)
    assert len(sink.writes) == 1  # written once FLUSH_BYTES waited
    outbox.put(text)
    await _turn()
    assert len(sink.writes) == 2


async def _paused(queue_size: int) -> tuple[Any, Any, Any]:
    """Return an outbox whose socket paused writing after its first frame."""
    outbox, sink, protocol, _ws = _outbox(queue_size=queue_size)

    def pause() -> None:
        if not protocol.writing_paused:
            protocol.pause_writing()

    sink.on_write = pause
    outbox.put("first")
    await _turn()
    assert protocol.writing_paused
    return outbox, sink, protocol


async def test_a_paused_socket_queues_frames_in_order_up_to_the_limit() -> None:
    outbox, sink, protocol = await _paused(queue_size=5)
    waiting = outbox.writer  # waits for the drain
    assert waiting is not None
    queued = [f"queued {n}" for n in range(5)]
    for text in queued:
        assert outbox.put(text)
    assert not outbox.put("one too many")  # the hub cuts the client off
    assert len(sink.writes) == 1
    sink.on_write = None
    protocol.resume_writing()
    await _turn()
    assert sink.writes[1:] == [await _aiohttp_frames(queued)]  # one write, in order
    assert waiting.done()
    assert outbox.writer is None
    outbox.put("after")
    await _turn()
    assert sink.writes[2] == await _aiohttp_frames(["after"])


async def test_a_paused_socket_queues_at_most_send_queue_chars() -> None:
    """A client that stopped reading had Home Assistant keep 256 frames of 1 MiB."""
    outbox, sink, protocol = await _paused(queue_size=256)
    big = "x" * (1024 * 1024)
    fits = transport.SEND_QUEUE_CHARS // len(big)
    for _ in range(fits):
        assert outbox.put(big)
    assert not outbox.put(big)  # the hub cuts the client off
    assert not outbox.put("x" * (transport.SEND_QUEUE_CHARS % len(big) + 1))
    sink.on_write = None
    protocol.resume_writing()
    await _turn()
    await _turn()
    assert not outbox.pending
    assert outbox.put(big)  # what was written is counted no more


async def test_a_close_goes_out_after_the_frames_before_it() -> None:
    outbox, sink, _protocol, ws = _outbox()
    outbox.put("a")
    outbox.put("b")
    outbox.close(CLOSE_TRY_LATER, "bye")
    await _turn()
    assert sink.writes == [
        await _aiohttp_frames(["a", "b"]),
        b"CLOSE %d bye" % CLOSE_TRY_LATER,
    ]
    assert ws.closed
    assert outbox.put("late")  # nothing more is written, and nothing raises
    await _turn()
    assert len(sink.writes) == 2


async def test_a_socket_closed_before_the_turn_ends_gets_nothing() -> None:
    outbox, sink, _protocol, ws = _outbox()
    outbox.put("lost")
    ws.closed = True
    await _turn()
    assert sink.writes == []
    assert outbox.stopped
    assert outbox.put("later")
    await outbox.finish(cancel=True)
    assert sink.writes == []


async def test_finish_writes_what_the_turn_kept() -> None:
    outbox, sink, _protocol, _ws = _outbox()
    outbox.put("last words")
    await outbox.finish(cancel=True)
    assert sink.writes == [await _aiohttp_frames(["last words"])]


async def test_a_frame_that_cannot_be_encoded_stops_the_writes_not_the_sender(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outbox, sink, _protocol, _ws = _outbox()
    assert outbox.put("\ud800")  # a lone surrogate: no UTF-8 for it
    assert outbox.stopped
    assert "failed to write" in caplog.text
    await _turn()
    assert sink.writes == []


# -- over real sockets ---------------------------------------------------------------


@pytest.fixture
async def server(socket_enabled: None) -> AsyncGenerator[StarServer]:
    star = StarServer(tokens=None, hub=StarHub(rate=1e9, burst=10**6), queue_size=16)
    await star.start()
    yield star
    await star.close()


def _message(sender: str, recipient: dict[str, str], payload: Any) -> str:
    return json.dumps(
        {
            "type": "message",
            "sender": {"id": sender, "type": "agent"},
            "recipient": recipient,
            "payload": payload,
        }
    )


async def test_many_senders_to_one_client_keep_each_senders_order(
    server: StarServer,
) -> None:
    world_party = {"id": "world_1", "type": "environment"}
    async with aiohttp.ClientSession() as session:
        world = await session.ws_connect(f"{server.base_url}/env/world_1")
        assert (await world.receive_json(timeout=3))["type"] == "heartbeat"
        agents = []
        for n in range(5):
            agent = await session.ws_connect(
                f"{server.base_url}/env/world_1/agent/agent_{n}"
            )
            assert (await agent.receive_json(timeout=3))["type"] == "heartbeat"
            agents.append(agent)

        async def send(n: int) -> None:
            for sequence in range(60):
                await agents[n].send_str(
                    _message(f"agent_{n}", world_party, {"sequence": sequence})
                )

        await asyncio.gather(*(send(n) for n in range(5)))
        got: dict[str, list[int]] = {f"agent_{n}": [] for n in range(5)}
        for _ in range(300):
            frame = await world.receive_json(timeout=5)
            got[frame["sender"]["id"]].append(frame["payload"]["sequence"])
        for socket in (*agents, world):
            await socket.close()
    assert got == {f"agent_{n}": list(range(60)) for n in range(5)}
    assert server.hub.stats.dropped_slow == 0


async def test_a_client_that_stops_reading_is_cut_off_and_others_are_served(
    server: StarServer,
) -> None:
    """The world does not read: its queue (16 frames) fills; agent_2 gets its frames."""
    world_party = {"id": "world_1", "type": "environment"}
    peer = {"id": "agent_2", "type": "agent"}
    pad = "x" * 8_000  # small enough to be framed by the outbox
    async with aiohttp.ClientSession() as session:
        world = await session.ws_connect(f"{server.base_url}/env/world_1")
        assert (await world.receive_json(timeout=3))["type"] == "heartbeat"
        agent = await session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1")
        other = await session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_2")
        for socket in (agent, other):
            assert (await socket.receive_json(timeout=3))["type"] == "heartbeat"
        sent = 0
        while server.hub.stats.dropped_slow == 0 and sent < 8_000:  # ~64 MB at most
            await agent.send_str(_message("agent_1", world_party, pad))
            sent += 1
            if sent % 100 == 0:
                await agent.send_str(_message("agent_1", peer, sent))
                assert (await other.receive_json(timeout=5))["payload"] == sent
        assert server.hub.stats.dropped_slow == 1
        assert WORLD not in {c.identity for c in server.hub.connections()}
        await agent.send_str(_message("agent_1", peer, "after"))
        assert (await other.receive_json(timeout=5))["payload"] == "after"
        # The world reads again: what was written, then the close (1013).
        while (await world.receive(timeout=10)).type is WSMsgType.TEXT:
            pass
        assert world.close_code == CLOSE_TRY_LATER
        for socket in (agent, other, world):
            await socket.close()


async def test_a_client_that_negotiated_compression_gets_every_frame_in_order(
    server: StarServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """permessage-deflate (browsers offer it): aiohttp frames and compresses them."""
    world_party = {"id": "world_1", "type": "environment"}
    framed_here: dict[str, bool] = {}
    init = transport._Outbox.__init__

    def spying(outbox: transport._Outbox, *args: Any) -> None:
        init(outbox, *args)
        framed_here[outbox._identity.client_type] = outbox._transport is not None

    monkeypatch.setattr(transport._Outbox, "__init__", spying)
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{server.base_url}/env/world_1", compress=15) as world,
        session.ws_connect(f"{server.base_url}/env/world_1/agent/agent_1") as agent,
    ):
        assert world.compress == 15
        assert (await world.receive_json(timeout=3))["type"] == "heartbeat"
        assert (await agent.receive_json(timeout=3))["type"] == "heartbeat"
        for sequence in range(30):
            await agent.send_str(_message("agent_1", world_party, sequence))
        got = [(await world.receive_json(timeout=5))["payload"] for _ in range(30)]
    assert got == list(range(30))
    assert framed_here == {"environment": False, "agent": True}
