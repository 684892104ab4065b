"""The emotion tick: 1,000 souls bound to 1,000 online bodies, against baselines.

Every ``emotion_tick_interval`` (3 s by default) ``SoulHub.tick`` evolves every
soul's PAD state and publishes an ``emotion_update`` (§3.8) to each online body
bound to it. Three figures, each against a baseline of the same run:

1. The core tick, publishing stubbed out: ``--souls`` souls (the 16 MBTI
   types in turn), each bound to one body, all online, one listener (as Home
   Assistant's glue always has one); the clock advances 3 s per tick; each
   ``await hub.tick()`` is timed on its own over ``--ticks`` ticks (median and
   worst). The baseline, timed in turns with it, is plain Python on lists of
   floats: the same decay (``dynamics.evolve``'s steps, boredom and recovery),
   the same rounding and gating, the same payload dicts serialised with
   ``json.dumps(..., ensure_ascii=False)`` — no objects, listeners nor
   publishing. Goals: a median of at most 10 ms and at most 2x the baseline.
   The last tick's published texts must equal the baseline's, byte for byte.
2. The longest the tick holds Home Assistant's event loop at once when it
   publishes through Home Assistant's MQTT integration (``MqttBridge.
   async_publish`` → ``mqtt.async_publish``, QoS 1, to a real broker:
   ``devtools.broker``), started as the glue starts it (a background task):
   the worst lateness of a coroutine that sleeps 1 ms, per tick; the median
   over ``--loop-ticks`` ticks and the worst. Goal: at most 20 ms. The
   baseline is the floor of publishing: the same texts, published one after
   the other through the same path by a bare loop.

Each goal prints PASS or FAIL; ``--check`` makes a FAIL exit 1. Run with
``scripts/bench`` or ``.venv/bin/python -m benchmarks.emotion_tick``
(``--no-loop`` skips the second part, which needs a broker).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
import gc
import json
import math
import statistics
import sys
import time
from typing import Any

from benchmarks.hostile_meter import Ticker
from benchmarks.timing import verdict
from custom_components.soul.core.emotion import dynamics as dyn
from custom_components.soul.core.emotion.labels import PROTOTYPE, Emotion
from custom_components.soul.core.emotion.persona import MBTI_TYPES
from custom_components.soul.core.protocol import SYSTEM_DECAY_TICK, utc_ts
from custom_components.soul.core.soul import Soul
from custom_components.soul.core.soul_events import NEUTRAL_USER_EMOTION, SoulEvent
from custom_components.soul.core.souls import SoulHub
from custom_components.soul.core.topics import Kind, Topics

T0 = 1_700_000_000.0
INTERVAL = 3.0


def make_souls(count: int) -> list[Soul]:
    """Return ``count`` souls with ULID-like ids (as subentry ids are)."""
    return [
        Soul(f"01JSOUL{i:019d}", f"Soul {i}", MBTI_TYPES[i % len(MBTI_TYPES)])
        for i in range(count)
    ]


def body_of(index: int) -> str:
    """Return the terminal id of the ``index``-th body."""
    return f"body-{index:04d}"


class Clock:
    """A settable epoch clock."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        """Return the current time."""
        return self.now


def make_hub(
    souls: list[Soul],
    publish: Callable[[str, str, int, bool], Awaitable[None]],
    clock: Clock,
) -> SoulHub:
    """Return a hub with ``souls``, each bound to one body, every body online."""
    hub = SoulHub(
        Topics("soul"), publish, clock=clock, is_online=lambda _terminal: True
    )
    hub.set_souls(souls)
    emotions = list(Emotion)
    for index, soul in enumerate(souls):
        hub.bind(body_of(index), soul.soul_id)
        # Souls in motion: each felt something, so every tick moves its PAD.
        hub.express(soul.soul_id, emotions[index % len(emotions)], 1.0)
    published: list[int] = [0]

    def listener(event: SoulEvent) -> None:
        published[0] += len(event.published)

    hub.subscribe(listener)
    return hub


# -- the baseline: the same maths on plain floats -----------------------------


class PlainSouls:
    """The same souls as parallel lists of floats: the baseline's whole state."""

    def __init__(self, souls: list[Soul], stored: dict[str, dict[str, float]]) -> None:
        """Take the souls and their states as ``SoulHub.dump()`` stores them."""
        self.ids = [soul.soul_id for soul in souls]
        self.bodies = [body_of(i) for i in range(len(souls))]
        keys = ("p", "a", "d", "at", "last_input_at", "shock_until")
        self.states = [[stored[soul.soul_id][key] for key in keys] for soul in souls]
        self.constants = [
            (
                *soul.persona.baseline,
                soul.persona.recovery_half_life,
                soul.persona.boredom_after,
            )
            for soul in souls
        ]

    def tick(self, now: float) -> list[str]:
        """Evolve every soul to ``now``; return the emotion_update texts."""
        bored = PROTOTYPE[Emotion.BOREDOM]
        ts = utc_ts(now)
        texts = []
        for soul_id, body, state, (bp, ba, bd, half_life, after) in zip(
            self.ids, self.bodies, self.states, self.constants, strict=True
        ):
            p, a, d, t, last, shock = state
            if now > t:
                ramp_start = last + after
                ramp_end = ramp_start + dyn.BOREDOM_RAMP
                while t < now:
                    if ramp_start <= t < ramp_end:
                        step = min(dyn._STEP, now - t, ramp_end - t)  # noqa: SLF001
                    elif t < ramp_start:
                        step = min(now, ramp_start) - t
                    else:
                        step = now - t
                    over = t + step / 2 - last - after
                    level = (
                        0.0
                        if over <= 0
                        else dyn.BOREDOM_MAX * min(1.0, over / dyn.BOREDOM_RAMP)
                    )
                    gp = bp + level * (bored.p - bp)
                    ga = ba + level * (bored.a - ba)
                    gd = bd + level * (bored.d - bd)
                    keep = math.exp(-math.log(2) * step / half_life)
                    p = gp + (p - gp) * keep
                    a = ga + (a - ga) * keep
                    d = gd + (d - gd) * keep
                    t += step
                state[:4] = p, a, d, now
            at = state[3]
            z = (
                dyn.GATE_BIAS
                + dyn.GATE_W_P * p
                + dyn.GATE_W_D * d
                - dyn.GATE_W_A * max(0.0, a - dyn.AROUSAL_COMFORT)
            )
            probability = 1 / (1 + math.exp(-z))
            if shock > at:
                probability = min(probability, dyn.SHOCK_PROBABILITY_CAP)
                mode = "blocked"
            elif probability >= dyn.AUTO_EXECUTE_AT:
                mode = "auto_execute"
            elif probability >= dyn.CONFIRM_AT:
                mode = "confirm"
            else:
                mode = "blocked"
            payload = {
                "session_id": SYSTEM_DECAY_TICK,
                "terminal_id": body,
                "soul_id": soul_id,
                "user_emotion": dict(NEUTRAL_USER_EMOTION),
                "soul_emotion": {
                    "p": round(p, 3) + 0.0,
                    "a": round(a, 3) + 0.0,
                    "d": round(d, 3) + 0.0,
                },
                "exec_probability": round(probability, 3),
                "exec_mode": mode,
                "ts": ts,
            }
            texts.append(json.dumps(payload, ensure_ascii=False))
        return texts


# -- part 1: the core tick -----------------------------------------------------


async def core_tick(
    souls: list[Soul], ticks: int
) -> tuple[list[float], list[float], list[float], list[float], bool]:
    """Return per-tick ms (wall, then CPU) of hub and baseline; whether texts match."""
    texts: list[str] = []

    async def publish(_topic: str, payload: str, _qos: int, _retain: bool) -> None:
        texts.append(payload)

    clock = Clock()
    hub = make_hub(souls, publish, clock)
    plain = PlainSouls(souls, hub.dump()["states"])
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    hub_ms: list[float] = []
    plain_ms: list[float] = []
    hub_cpu: list[float] = []
    plain_cpu: list[float] = []
    plain_texts: list[str] = []
    gc.collect()
    for _ in range(ticks):
        clock.now += INTERVAL
        texts.clear()
        start, start_cpu = wall(), cpu()
        await hub.tick()
        hub_cpu.append((cpu() - start_cpu) / 1e6)
        hub_ms.append((wall() - start) / 1e6)
        start, start_cpu = wall(), cpu()
        plain_texts = plain.tick(clock.now)
        plain_cpu.append((cpu() - start_cpu) / 1e6)
        plain_ms.append((wall() - start) / 1e6)
    return hub_ms, plain_ms, hub_cpu, plain_cpu, texts == plain_texts


# -- part 2: the loop through Home Assistant's MQTT ----------------------------


async def loop_hold(souls: list[Soul], ticks: int) -> dict[str, Any]:
    """Return the loop's longest hold per tick, and the floor's, through HA's MQTT."""
    # Home Assistant and its test helpers load only here: part 1 needs neither.
    from benchmarks.ha_harness import home_assistant  # noqa: PLC0415
    from custom_components.soul.core.registry import TerminalRegistry  # noqa: PLC0415
    from custom_components.soul.mqtt_bridge import MqttBridge  # noqa: PLC0415
    from devtools.broker import MqttBroker  # noqa: PLC0415

    broker = MqttBroker().start()
    try:
        async with home_assistant(broker) as hass:
            topics = Topics("soul")
            bridge = MqttBridge(hass, topics, TerminalRegistry())
            clock = Clock()
            hub = make_hub(souls, bridge.async_publish, clock)
            texts = PlainSouls(souls, hub.dump()["states"]).tick(T0 + INTERVAL)
            bodies = [body_of(i) for i in range(len(souls))]

            async def glue_tick() -> None:
                # As souls.async_start_souls runs it: a background task.
                clock.now += INTERVAL
                await hass.async_create_background_task(hub.tick(), "soul emotion tick")

            async def floor() -> None:
                for body, text in zip(bodies, texts, strict=True):
                    await bridge.async_publish(
                        topics.topic(body, Kind.EMOTION_UPDATE), text, 1, False
                    )

            result: dict[str, Any] = {}
            for label, scenario in (("tick", glue_tick), ("floor", floor)):
                holds, spans, collections = [], [], []
                for _ in range(ticks):
                    gc.collect()
                    started = time.perf_counter()
                    async with Ticker() as ticker:
                        await scenario()
                    spans.append(time.perf_counter() - started)
                    holds.append(ticker.worst)
                    collections.append(ticker.gc_worst)
                result[label] = (holds, spans, collections)
    finally:
        broker.stop()
    return result


def main() -> None:
    """Measure and print every figure with its baseline; PASS or FAIL per goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--souls", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--loop-ticks", type=int, default=5)
    parser.add_argument("--budget-ms", type=float, default=10.0)
    parser.add_argument("--max-ratio", type=float, default=2.0)
    parser.add_argument("--hold-ms", type=float, default=20.0)
    parser.add_argument(
        "--no-loop", action="store_true", help="skip the Home Assistant MQTT part"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 on a FAIL")
    args = parser.parse_args()
    souls = make_souls(args.souls)

    hub_ms, plain_ms, hub_cpu, plain_cpu, same = asyncio.run(
        core_tick(souls, args.ticks)
    )
    hub_p50, plain_p50 = statistics.median(hub_ms), statistics.median(plain_ms)
    ratio = hub_p50 / plain_p50
    budget_ok = hub_p50 <= args.budget_ms
    ratio_ok = ratio <= args.max_ratio
    print(
        f"emotion_tick: {args.souls} souls bound to {args.souls} online bodies,"
        f" {args.ticks} ticks {INTERVAL:g} s apart"
    )

    def row(label: str, samples: list[float], note: str) -> str:
        return (
            f"  {label:<40}: median {statistics.median(samples):7.2f} ms"
            f"   worst {max(samples):7.2f} ms   {note}"
        )

    print(row("SoulHub.tick, publish stubbed", hub_ms, "(one listener)"))
    print(row("baseline: plain decay + json.dumps", plain_ms, "(same payloads)"))
    print(row("  the same, CPU time of the tick", hub_cpu, "(time.thread_time)"))
    print(
        row(
            "  the same, CPU time of the baseline",
            plain_cpu,
            "(the machine's other processes inflate wall time)",
        )
    )
    print(
        f"  {'goal median':<40}: {hub_p50:7.2f} ms <= {args.budget_ms:g} ms:"
        f" {verdict(budget_ok)}"
    )
    print(
        f"  {'ratio tick/baseline':<40}: {ratio:7.2f}x   goal <= {args.max_ratio:g}x:"
        f" {verdict(ratio_ok)}"
    )
    print(f"  {'texts equal the baseline, byte for byte':<40}: {verdict(same)}")
    ok = budget_ok and ratio_ok and same
    if not args.no_loop:
        result = asyncio.run(loop_hold(souls, args.loop_ticks))
        holds, spans, collections = result["tick"]
        floor_holds, floor_spans, _ = result["floor"]
        hold = statistics.median(holds)
        hold_ok = hold <= args.hold_ms
        print(
            "  through Home Assistant's MQTT (MqttBridge.async_publish, QoS 1,"
            f" real broker), {args.loop_ticks} ticks:"
        )
        print(
            f"  {'longest loop hold, glue tick':<40}: median {hold:7.2f} ms"
            f"   worst {max(holds):7.2f} ms   (tick done in"
            f" {statistics.median(spans):.2f} s; longest GC {max(collections):.1f} ms)"
        )
        print(
            f"  {'baseline: bare publish loop':<40}: median"
            f" {statistics.median(floor_holds):7.2f} ms   worst {max(floor_holds):7.2f}"
            f" ms   (done in {statistics.median(floor_spans):.2f} s)"
        )
        print(
            f"  {'goal hold':<40}: {hold:7.2f} ms <= {args.hold_ms:g} ms:"
            f" {verdict(hold_ok)}"
        )
        ok = ok and hold_ok
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
