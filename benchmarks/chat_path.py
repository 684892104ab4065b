"""The chat path: a command until the body receives its intent_action, against the broker.

A real Home Assistant (``benchmarks.ha_harness``: the tests' machinery), its
MQTT integration on a real broker (``devtools.broker``), Soul set up on it,
its HTTP API served on 127.0.0.1 with a real access token, and the reference
body (``devtools.body_sim.BodySim``) bound by its ``soul_hint``. The body,
the baseline's clients and the quiet bodies run in a process of their own
(``benchmarks.chat_peer``), as devices do: in Home Assistant's process they
waited for its GIL. Each sample is timed from the request until the body
receives the ``intent_action`` (``time.monotonic``, one clock in both
processes):

- HTTP: ``POST /api/soul/v1/chat`` with "把灯调成绿色", which the intent filter
  executes (emotion, ``emotion_update``, filter, ``intent_action``), sent from
  the devices' process as a phone or a body sends it, timed there from the
  moment its request is sent (``chat_peer.Poster``); beside it, without a
  goal, the same request from a client on Home Assistant's own loop (until
  2026-11-27 the figure with the goal: that client's work held the loop, and
  Home Assistant's server needed no wake-up to read it);
- Assist: one ``conversation.async_converse`` turn on the soul's agent, the
  same command on the intent path.

The baseline, sampled in turns with them in the same run: the bare broker
round trip — a paho client publishes a payload as large as the
``intent_action`` (QoS 1) and another paho client receives it, both in the
devices' process. For scale, without a goal: the same clients with a turn's
two messages back to back (payloads as large as its ``emotion_update`` and
its ``intent_action``; the spec sends the ``emotion_update`` first), until
the second arrives, and
Home Assistant's own ``mqtt.async_publish`` of that payload to the same
receiver (no goal). Everything is measured with 1 body online, then with
100 (99 more bodies announce themselves with retained messages, heartbeat
every 10 s and are bound to a soul, so the 3 s emotion tick publishes to all).

Goals: p50 at most 3x the bare round trip's p50 (both phases), and a p99
that does not grow with 100 bodies online (at most ``--p99-growth`` times the
1-body p99). PASS or FAIL per goal; ``--check`` makes a FAIL exit 1;
``--profile`` prints cProfile's view of the loop during the 100-body phase;
``--timeline`` the median time of each of Soul's steps in a turn
(``benchmarks.turn_timeline``).
Run with ``scripts/bench`` or ``.venv/bin/python -m benchmarks.chat_path``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
import contextlib
from functools import partial
import gc
import logging
import statistics
import sys
import time
from typing import Any

from aiohttp import ClientSession
from homeassistant.components import conversation, mqtt
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er

from benchmarks.chat_peer import PROBE_TOPIC
from benchmarks.ha_harness import home_assistant, serve_http, soul_entry, until
from benchmarks.loop_meter import LoopMeter
from benchmarks.timing import verdict
from benchmarks.turn_timeline import Timeline
from devtools.broker import MqttBroker

PREFIX = "bench"
BODY = "terminal-001"
COMMAND = "把灯调成绿色"
QUIET_HINT = "Quiet"  # a soul of the hub entry: the tick publishes to its bodies
clock = time.monotonic  # CLOCK_MONOTONIC, as the devices' process stamps


class Peer:
    """``benchmarks.chat_peer`` in a child process: the body, the probes, the quiet bodies.

    A body is a device of its own: in Home Assistant's process its paho thread
    waited for Home Assistant's GIL, and a sample counted how long Home
    Assistant stayed busy after the message had left, not when it arrived.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        """Hold the child; ``start`` makes one."""
        self.process = process
        self.body: asyncio.Future[float] | None = None  # the next intent_action
        self.probe: asyncio.Future[float] | None = None  # the next probe
        self._replies: asyncio.Queue[str] = asyncio.Queue()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, broker: MqttBroker, quiet: int) -> Peer:
        """Start the child, its body connected; return when it is ready."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from benchmarks.chat_peer import main; main()",
            *("--host", broker.host, "--port", str(broker.port)),
            *("--prefix", PREFIX, "--body", BODY),
            *("--quiet", str(quiet), "--quiet-hint", QUIET_HINT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        peer = cls(process)
        async with asyncio.timeout(60):
            if (line := await peer._replies.get()) != "ready":
                raise RuntimeError(f"chat_peer: {line}")
        return peer

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode().strip()
            word, _, rest = line.partition(" ")
            if word not in ("ia", "probe"):
                self._replies.put_nowait(line)
            elif (
                waiter := self.body if word == "ia" else self.probe
            ) is not None and not waiter.done():
                waiter.set_result(float(rest))
        self._replies.put_nowait("the child ended")

    async def ask(self, command: str) -> str:
        """Send one command; return the child's answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        async with asyncio.timeout(120):
            return await self._replies.get()

    async def stop(self) -> None:
        """Stop the child's clients and wait for it."""
        with contextlib.suppress(Exception):
            await self.ask("stop")
        try:
            async with asyncio.timeout(20):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()


async def arrival(
    peer: Peer, which: str, start: Callable[[], Awaitable[object]]
) -> tuple[float, float, Any]:
    """Run ``start()``; return when it began, when the peer's ``which`` arrived, and what it returned."""
    future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    setattr(peer, which, future)
    started = clock()
    try:
        returned = await start()
        async with asyncio.timeout(10):
            at = await future
    finally:
        setattr(peer, which, None)
    return started, at, returned


class Scenario:
    """The things sampled in turns: the baselines and the turns."""

    def __init__(
        self,
        hass: HomeAssistant,
        http: ClientSession,
        *,
        peer: Peer,
        agent: str,
    ) -> None:
        """Hold what each sample needs."""
        self.hass = hass
        self.http = http
        self.peer = peer
        self.agent = agent
        self.payload = ""
        self.turn = 0

    async def round_trip(self) -> float:
        """Bare broker round trip: paho publish → paho receive (QoS 1), timed by the peer."""
        return float((await self.peer.ask("rt")).removeprefix("rt "))

    async def two_messages(self) -> float:
        """Time a turn's two messages, bare: paho publishes both → paho gets the second."""
        return float((await self.peer.ask("rt2")).removeprefix("rt2 "))

    async def ha_publish(self) -> float:
        """Home Assistant's ``mqtt.async_publish`` → paho receive (QoS 1)."""

        async def publish() -> None:
            await mqtt.async_publish(self.hass, PROBE_TOPIC, self.payload, 1, False)

        started, at, _ = await arrival(self.peer, "probe", publish)
        return at - started

    async def http_turn(self) -> float:
        """POST /api/soul/v1/chat → the body receives intent_action."""
        self.turn += 1

        async def post() -> dict[str, Any]:
            async with self.http.post(
                "/api/soul/v1/chat",
                json={
                    "session_id": f"bench-{self.turn % 8}",
                    "terminal_id": BODY,
                    "inputs": [{"type": "speech_text", "text": COMMAND}],
                },
            ) as response:
                body: dict[str, Any] = await response.json()
                if response.status != 200 or body["executed_skills"] != [
                    "control_light"
                ]:
                    raise RuntimeError(f"the turn did not execute: {body}")
                return body

        started, at, _ = await arrival(self.peer, "body", post)
        return at - started

    async def device_turn(self) -> float:
        """POST /api/soul/v1/chat from the devices' process → the body receives intent_action.

        Timed in that process from just before the request is sent: Home
        Assistant's loop does not build or send it.
        """
        self.turn += 1
        _, at, reply = await arrival(
            self.peer,
            "body",
            partial(self.peer.ask, f"chat bench-{self.turn % 8} {COMMAND}"),
        )
        if not reply.startswith("chat "):
            raise RuntimeError(f"chat_peer: {reply}")
        return at - float(reply.removeprefix("chat "))

    async def assist_turn(self) -> float:
        """One Assist turn on the soul's agent → the body receives intent_action."""

        async def converse() -> conversation.ConversationResult:
            result = await conversation.async_converse(
                self.hass,
                COMMAND,
                None,
                Context(),
                language="zh-cn",
                agent_id=self.agent,
            )
            if result.response.error_code is not None:
                raise RuntimeError(f"the Assist turn failed: {result.response}")
            return result

        started, at, _ = await arrival(self.peer, "body", converse)
        return at - started

    async def sample(self, rounds: int) -> dict[str, list[float]]:
        """Return each figure's samples (ms), taken in turns ``rounds`` times."""
        samples: dict[str, list[float]] = {
            "round_trip": [],
            "two_messages": [],
            "ha_publish": [],
            "device": [],
            "http": [],
            "assist": [],
        }
        steps = (
            ("round_trip", self.round_trip),
            ("two_messages", self.two_messages),
            ("ha_publish", self.ha_publish),
            ("device", self.device_turn),
            ("http", self.http_turn),
            ("assist", self.assist_turn),
        )
        for _ in range(rounds):
            for name, step in steps:
                samples[name].append(await step() * 1000)
                await asyncio.sleep(0.005)  # let the body finish its side
        return samples


def agent_of(hass: HomeAssistant, soul_id: str) -> str:
    """Return the entity id of a soul's conversation agent."""
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", "soul", f"{soul_id}-conversation"
    )
    if entity_id is None:
        raise RuntimeError(f"soul {soul_id} has no conversation agent")
    return entity_id


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run both phases; return their samples."""
    broker = MqttBroker().start()
    results: dict[str, Any] = {"broker": broker.implementation}
    peer: Peer | None = None
    try:
        async with home_assistant(broker) as hass:
            entry = soul_entry(hass, PREFIX, [(QUIET_HINT, "ISTJ")])
            assert await hass.config_entries.async_setup(entry.entry_id)
            await hass.async_block_till_done()
            peer = await Peer.start(broker, args.bodies - 1)
            runtime = entry.runtime_data

            def ready() -> bool:
                terminal = runtime.registry.get(BODY)
                return (
                    terminal is not None
                    and terminal.available
                    and terminal.catalog is not None
                    and runtime.souls.soul_of(BODY) is not None
                )

            await until(ready)
            await hass.async_block_till_done()
            soul = runtime.souls.soul_of(BODY)
            assert soul is not None
            async with serve_http(hass) as served:
                scenario = Scenario(
                    hass, served.client, peer=peer, agent=agent_of(hass, soul.soul_id)
                )
                await peer.ask(f"http {served.port} {served.token}")
                await scenario.http_turn()  # the payload the probes carry
                reply = await peer.ask("probe-like-intent")
                scenario.payload = reply.removeprefix("payload ")
                await scenario.sample(args.warmup)
                gc.collect()
                results["1"] = await scenario.sample(args.rounds)

                await peer.ask("quiet-publish")

                def status() -> str:
                    terminals = list(runtime.registry)
                    return (
                        f"{len(terminals)} registered,"
                        f" {sum(1 for t in terminals if t.available)} available,"
                        f" {sum(1 for t in terminals if runtime.souls.soul_of(t.terminal_id))}"
                        " bound"
                    )

                try:
                    await until(
                        lambda: (
                            sum(1 for t in runtime.registry if t.available)
                            == args.bodies
                            and all(
                                runtime.souls.soul_of(t.terminal_id) is not None
                                for t in runtime.registry
                            )
                        ),
                        timeout=120,
                    )
                except TimeoutError:
                    raise RuntimeError(f"bodies not ready: {status()}") from None
                await hass.async_block_till_done()
                await scenario.sample(args.warmup)
                gc.collect()
                with LoopMeter(profile=args.profile) as meter:
                    results[str(args.bodies)] = await scenario.sample(args.rounds)
                results["meter"] = meter
                results["online"] = sum(1 for t in runtime.registry if t.available)
            await peer.ask("quiet-clear")
    finally:
        if peer is not None:
            await peer.stop()
        broker.stop()
    return results


def cuts(samples: list[float]) -> tuple[float, float]:
    """Return p50 and p99 of ``samples``."""
    points = statistics.quantiles(samples, n=100, method="inclusive")
    return points[49], points[98]


def main() -> None:
    """Measure and print every figure with its baseline; PASS or FAIL per goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--bodies", type=int, default=100)
    parser.add_argument("--max-ratio", type=float, default=3.0)
    parser.add_argument("--p99-growth", type=float, default=1.5)
    parser.add_argument("--profile", action="store_true", help="cProfile the loop")
    parser.add_argument("--profile-lines", type=int, default=40)
    parser.add_argument(
        "--timeline", action="store_true", help="mark Soul's steps in every turn"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 on a FAIL")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    timeline = Timeline()
    with timeline.installed() if args.timeline else contextlib.nullcontext():
        results = asyncio.run(measure(args))

    many = str(args.bodies)
    print(
        f"chat_path: '{COMMAND}' until the body receives intent_action, broker"
        f" {results['broker']}, {args.rounds} samples each, taken in turns"
    )
    ok = True
    for phase in ("1", many):
        samples = results[phase]
        rtt50 = cuts(samples["round_trip"])[0]
        print(f"  {phase} bod{'y' if phase == '1' else 'ies'} online:")
        rows = (
            ("baseline: bare broker round trip", "round_trip"),
            ("  the turn's two messages, bare", "two_messages"),
            ("HA mqtt.async_publish → body", "ha_publish"),
            ("POST /api/soul/v1/chat", "device"),
            ("  the same, client on HA's loop", "http"),
            ("Assist turn (async_converse)", "assist"),
        )
        for label, key in rows:
            p50, p99 = cuts(samples[key])
            note = ""
            if key in ("device", "assist"):
                good = p50 <= args.max_ratio * rtt50
                ok = ok and good
                note = (
                    f"   p50 {p50 / rtt50:5.1f}x baseline,"
                    f" goal <= {args.max_ratio:g}x: {verdict(good)}"
                )
            elif key in ("two_messages", "ha_publish", "http"):
                note = f"   p50 {p50 / rtt50:5.1f}x baseline (no goal)"
            print(f"    {label:<34}: p50 {p50:7.2f} ms   p99 {p99:7.2f} ms{note}")
    for label, key in (
        ("POST /api/soul/v1/chat", "device"),
        ("Assist turn", "assist"),
    ):
        one99 = cuts(results["1"][key])[1]
        many99 = cuts(results[many][key])[1]
        base_growth = (
            cuts(results[many]["round_trip"])[1] / cuts(results["1"]["round_trip"])[1]
        )
        good = many99 <= args.p99_growth * one99
        ok = ok and good
        print(
            f"  {label + ' p99, ' + many + ' vs 1 bodies':<36}: {many99 / one99:5.2f}x"
            f"   (baseline's p99 {base_growth:.2f}x)   goal <= {args.p99_growth:g}x:"
            f" {verdict(good)}"
        )
    meter: LoopMeter = results["meter"]
    print(
        f"  loop during the {many}-body phase: {meter.count} callbacks,"
        f" {meter.total:.2f} s busy; longest:"
    )
    for spent, what in meter.longest[:3]:
        print(f"      {spent * 1000:7.1f} ms  {what}")
    if args.profile:
        print(meter.profile_text(args.profile_lines, "tottime"))
        print(meter.profile_text(args.profile_lines, "cumulative"))
    if args.timeline:
        print(timeline.report())
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
