"""Class 6 of ``benchmarks.hostile``: Star frames.

Big, deep, invalid and poisoned frames through ``StarHub.receive`` on the loop
and through the transport's threaded decode (``decode_frame``), an oversized
frame, batch frames (the longest single step of ``StarHub.receive_steps``:
the transport yields between a batch's envelopes), and a burst of small
frames from one client. A helper module, not a benchmark.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import statistics
import time
from typing import Any

from benchmarks.hostile_meter import (
    LOOP,
    Meter,
    Row,
    Section,
    chain,
    json_array,
    quietly,
    size_label,
    worst_message,
)
from custom_components.soul.core import untrusted
from custom_components.soul.core.star.hub import (
    RATE_LIMITED,
    Connection,
    Identity,
    StarHub,
    decode_frame,
)

# -- 6. Star frames --------------------------------------------------------------------


class Peer:
    """The transport side of a connection: an unbounded queue that keeps nothing."""

    def __init__(self) -> None:
        self.sent = 0
        self.rate_limited = 0
        self.closes: list[tuple[int, str]] = []

    def send(self, text: str) -> bool:
        """Count a frame (and a RATE_LIMITED error)."""
        self.sent += 1
        if RATE_LIMITED in text[:300]:
            self.rate_limited += 1
        return True

    def close(self, code: int, reason: str) -> None:
        """Record a close."""
        self.closes.append((code, reason))


def star(**limits: Any) -> tuple[StarHub, Connection, Peer]:
    """Return a hub with an environment and an agent; the agent and its peer."""
    hub = StarHub(**limits)
    environment = Peer()
    hub.connect(
        Identity("environment", "world_1", "world_1"),
        environment.send,
        environment.close,
    )
    peer = Peer()
    agent = hub.connect(Identity("agent", "agent_1", "world_1"), peer.send, peer.close)
    return hub, agent, peer


_HEAD = (
    '{"type":"message","sender":{"id":"agent_1","type":"agent"},'
    '"recipient":{"id":"world_1","type":"environment"},"message_id":"m1","payload":'
)


def frame(payload: bytes, size: int) -> bytes:
    """Return an envelope to the environment whose payload fills it to ``size``."""
    return _HEAD.encode() + payload[: size - len(_HEAD) - 1] + b"}"


def frame_of(unit: str, size: int) -> bytes:
    """Return a frame of ``size`` bytes whose payload is an array of ``unit``."""
    return _HEAD.encode() + json_array(unit, size - len(_HEAD) - 1) + b"}"


def receive_decoded(
    meter: Meter, hub: StarHub, agent: Connection, raw: str | bytes
) -> float:
    """Return the loop time of ``receive`` for a frame the transport decoded in a thread."""
    decoded = decode_frame(raw, hub.max_message_bytes)
    return meter.loop(lambda: hub.receive(agent, raw, decoded=decoded))


async def pump_frame(hub: StarHub, agent: Connection, raw: str | bytes) -> None:
    """Do what ``transport.pump`` does with one frame (yielding inside a batch)."""
    decoded = None
    if len(raw) > untrusted.LOOP_JSON_BYTES:
        decoded = await asyncio.to_thread(decode_frame, raw, hub.max_message_bytes)
    for _ in hub.receive_steps(agent, raw, decoded=decoded, admitted=True):
        await asyncio.sleep(0)


def batch_of(count: int, size: int, unit: str) -> str:
    """Return a batch of ``count`` envelopes of about ``size`` bytes in all.

    Each envelope's payload is an array of ``unit``.
    """
    one = frame_of(unit, size // count - 1).decode()
    return "[" + ",".join([one] * count) + "]"


def worst_step(
    meter: Meter, hub: StarHub, agent: Connection, raw: str, *, threaded: bool = False
) -> float:
    """Return the longest step of ``receive_steps`` in ms: one turn of the loop.

    The median over the meter's rounds. ``threaded``: the frame was decoded
    in a thread first, as the transport does above 64 KiB (not timed).
    """
    clock = time.perf_counter_ns
    samples = []
    for _ in range(meter.rounds):
        decoded = decode_frame(raw, hub.max_message_bytes) if threaded else None
        steps = hub.receive_steps(agent, raw, decoded=decoded, admitted=True)
        gc.collect()
        worst = 0
        done = False
        while not done:
            start = clock()
            try:
                next(steps)
            except StopIteration:
                done = True
            worst = max(worst, clock() - start)
        samples.append(worst)
    return statistics.median(samples) / 1e6


async def star_frames(meter: Meter) -> list[Section]:
    """Class 6: big, deep, invalid and poisoned frames, and a burst."""
    section = Section(
        "6",
        "Star frames",
        "StarHub.receive on the loop; transport.pump decodes frames > 64 KiB in a "
        "thread (decode_frame) and passes decoded=",
    )
    hub, agent, _ = star(rate=1e9, burst=10**9)
    limit = hub.max_message_bytes - 1
    text_frames = [
        ("valid, 1 MiB string payload", frame_of('"' + "x" * 1000 + '"', limit)),
        ("depth-32 chains, 1 MiB", frame_of(chain(30), limit)),
        # Half a million values: refused by counting commas before decoding.
        ("integer array, 1 MiB", frame_of("1", limit)),
        (
            "65,520 integers (about the most a frame may hold)",
            frame_of("1", 2 * (untrusted.MAX_JSON_VALUES - 16) + len(_HEAD)),
        ),
        ("100,000 levels", _HEAD.encode() + chain(100_000).encode() + b"}"),
        ("invalid UTF-8 (binary), 1 MiB", frame_of('"x"', limit)[:-8] + b"\xff\xfe}"),
    ]
    benign_big = frame_of('"' + "y" * 1000 + '"', limit)
    for name, raw in text_frames:
        binary = name.startswith("invalid")
        payload: str | bytes = raw if binary else raw.decode()
        benign: str | bytes = benign_big if binary else benign_big.decode()
        section.rows.append(
            Row(
                f"{name}: receive(decoded=)",
                size_label(len(raw)),
                "loop",
                receive_decoded(meter, hub, agent, payload),
                receive_decoded(meter, hub, agent, benign),
            )
        )
        section.rows.append(
            Row(
                f"{name}: thread decode + receive",
                size_label(len(raw)),
                "stall",
                await meter.stall(lambda p=payload: pump_frame(hub, agent, p)),
                await meter.stall(lambda b=benign: pump_frame(hub, agent, b)),
                "decode_frame alone: "
                f"{meter.loop(quietly(decode_frame, payload, limit + 1)):.1f} ms "
                f"(benign {meter.loop(quietly(decode_frame, benign, limit + 1)):.1f} ms)",
            )
        )
    small_benign = frame_of('"' + "y" * 100 + '"', LOOP).decode()
    small_frames = [
        ("depth-32 chains (legal)", frame_of(chain(30), LOOP).decode()),
        ("invalid UTF-8 (binary)", frame_of('"x"', LOOP)[:-8] + b"\xff\xfe}"),
        (
            "surrogate pairs, one lone one last",
            frame_of('"\\ud83d\\ude00"', LOOP - 12)[:-2].decode() + ',"\\ud800"]}',
        ),
    ]
    for name, raw in small_frames:
        benign_raw: str | bytes = (
            small_benign.encode() if isinstance(raw, bytes) else small_benign
        )
        section.rows.append(
            Row(
                name,
                size_label(len(raw)),
                "loop",
                meter.loop(lambda r=raw: hub.receive(agent, r)),
                meter.loop(lambda b=benign_raw: hub.receive(agent, b)),
            )
        )
    # A frame over the limit closes its connection: a fresh one each round.
    fresh: list[Connection] = []
    oversized = "x" * (hub.max_message_bytes + 1)
    section.rows.append(
        Row(
            "over 1 MiB (refused by size, connection closed)",
            size_label(len(oversized)),
            "loop",
            meter.loop(
                lambda: hub.receive(fresh[0], oversized),
                lambda: fresh.__setitem__(slice(None), [star()[1]]),
            ),
            receive_decoded(meter, hub, agent, benign_big.decode()),
            "benign: receive(decoded=) of a valid 1 MiB frame",
        )
    )
    big_batch = batch_of(100, limit, '"' + "x" * 1000 + '"')
    small_batch = batch_of(100, LOOP, "0")
    single = benign_big.decode()
    section.rows.append(
        Row(
            "batch of 100 envelopes (string payloads): worst step",
            size_label(len(big_batch)),
            "loop",
            worst_step(meter, hub, agent, big_batch, threaded=True),
            receive_decoded(meter, hub, agent, single),
            "decoded in a thread first; benign: one 1 MiB frame, receive(decoded=)",
        )
    )
    section.rows.append(
        Row(
            "batch of 100 envelopes (string payloads): thread decode + steps",
            size_label(len(big_batch)),
            "stall",
            await meter.stall(lambda: pump_frame(hub, agent, big_batch)),
            await meter.stall(lambda: pump_frame(hub, agent, single)),
            "benign: one 1 MiB frame",
        )
    )
    section.rows.append(
        Row(
            "batch of 100 envelopes (integer arrays): worst step",
            size_label(len(small_batch)),
            "loop",
            worst_step(meter, hub, agent, small_batch),
            meter.loop(lambda: hub.receive(agent, small_benign)),
            "decoded on the loop (64 KiB); benign: one 64 KiB frame",
        )
    )
    burst_hub, burst_agent, burst_peer = star()
    small = frame_of('"ping"', 200).decode()
    worst, _mean = worst_message(
        [functools.partial(burst_hub.receive, burst_agent, small)] * 10_000
    )
    routed = burst_hub.stats.routed
    benign_hub, benign_agent, _ = star()
    benign_worst, _ = worst_message(
        [functools.partial(benign_hub.receive, benign_agent, small)] * 100
    )
    section.rows.append(
        Row(
            "burst of 10,000 small frames, one client",
            "10,000 × 200 B",
            "loop",
            worst,
            benign_worst,
            f"worst frame; {routed} routed, {burst_agent.dropped} refused, "
            f"{burst_peer.rate_limited} RATE_LIMITED errors sent; benign: 100 frames",
        )
    )
    return [section]
