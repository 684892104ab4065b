"""Setting Soul up with 200 retained bodies and 50 souls: loop time and memory per body.

A real Home Assistant (``benchmarks.ha_harness``: the tests' machinery, its
MQTT integration on ``devtools.broker``). Before Soul starts, ``--bodies``
bodies have published their retained ``online``, ``skills`` and
``intent_catalog`` (each catalog its own: one intent name carries the body's
index) straight to the broker, each with a ``soul_hint`` naming one of the
``--souls`` souls (the hub entry's subentries, the 16 MBTI types in turn).

1. Event-loop time: from ``async_setup`` of the hub entry until every body is
   registered with its catalog and its entities, every callback the loop runs
   is timed (``benchmarks.loop_meter``: ``Handle._run`` wrapped). Goals: at
   most 1 s in total and no single callback over 100 ms (Home Assistant
   warns about slow setups; a long callback stalls every integration). The
   longest callbacks are printed with what they were. The baseline, in the
   same run and the same Home Assistant, is the floor of receiving those
   retained messages: a bare ``mqtt.async_subscribe`` with a callback that
   does nothing, timed the same way.
2. Memory per online body: in the same Home Assistant after part 1,
   ``tracemalloc`` snapshots (after a full collection) before and after
   ``--bodies`` more bodies come online; the difference over the bodies is
   the Python memory one body costs (registry, snapshots, compiled catalog,
   devices, entities, states), printed by where it was allocated. Goal: at
   most 50 KB. The baseline, in the same Home Assistant: as many devices with
   the same entities, bare (``benchmarks.entity_floor``: the same platforms,
   categories and disabled ones, a fixed state, nothing subscribed) — Home
   Assistant's own cost of them; the difference is Soul's own share.

Each goal prints PASS or FAIL; ``--check`` makes a FAIL exit 1; ``--profile``
prints cProfile's view of the loop during part 1. Run with ``scripts/bench``
or ``.venv/bin/python -m benchmarks.startup``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
import gc
import logging
import sys
import time
import tracemalloc
from typing import Any

from benchmarks.entity_floor import BareBodies, body_shapes
from benchmarks.ha_harness import home_assistant, run_blocking, soul_entry, until
from benchmarks.loop_meter import LoopMeter
from benchmarks.quiet_bodies import QuietBodies
from benchmarks.timing import verdict
from custom_components.soul.const import DOMAIN
from custom_components.soul.core.emotion.persona import MBTI_TYPES
from devtools.broker import MqttBroker

PREFIX = "bench"


def soul_names(count: int) -> list[tuple[str, str]]:
    """Return ``count`` souls: (name, MBTI type)."""
    return [(f"Soul {i:02d}", MBTI_TYPES[i % len(MBTI_TYPES)]) for i in range(count)]


def body_ids(start: int, count: int) -> list[str]:
    """Return the terminal ids of bodies ``start`` .. ``start + count - 1``."""
    return [f"body-{i:04d}" for i in range(start, start + count)]


def _where(filename: str) -> str:
    """Return who allocated: Soul, Home Assistant, or the library or module."""
    if "/custom_components/soul/" in filename:
        return "soul: " + filename.split("/custom_components/soul/")[1]
    if "/homeassistant/" in filename:
        return "homeassistant: " + filename.split("/homeassistant/")[1]
    if "/site-packages/" in filename:
        return filename.split("/site-packages/")[1].split("/", maxsplit=1)[0]
    return filename.rsplit("/", 1)[-1]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run both parts; return their figures."""
    broker = MqttBroker().start()
    souls = soul_names(args.souls)
    first = QuietBodies(
        broker,
        PREFIX,
        body_ids(0, args.bodies),
        [souls[i % len(souls)][0] if souls else None for i in range(args.bodies)],
        heartbeat=0,
    )
    second = QuietBodies(
        broker,
        PREFIX,
        body_ids(args.bodies, args.bodies),
        [souls[i % len(souls)][0] if souls else None for i in range(args.bodies)],
        heartbeat=0,
    )
    result: dict[str, Any] = {"broker": broker.implementation}
    try:
        first.publish()
        async with home_assistant(broker) as hass:
            from homeassistant.components import mqtt  # noqa: PLC0415
            from homeassistant.setup import async_setup_component  # noqa: PLC0415

            # The baseline: the same retained messages to a callback doing nothing.
            expected = 3 * args.bodies
            received = [0]

            def nothing(_message: object) -> None:
                received[0] += 1

            started = time.perf_counter()
            with LoopMeter() as floor:
                unsubscribe = await mqtt.async_subscribe(
                    hass, f"{PREFIX}/terminal/+/+", nothing, 1, encoding=None
                )
                await until(lambda: received[0] >= expected, step=0.05)
            result["floor"] = (floor, time.perf_counter() - started)
            unsubscribe()
            await hass.async_block_till_done()

            # Soul's dependencies are up before it, as in any installation
            # (default_config sets them up); their setup is not Soul's.
            for dependency in ("http", "conversation", "websocket_api"):
                assert await async_setup_component(hass, dependency, {})
            entry = soul_entry(hass, PREFIX, souls)
            gc.collect()
            started = time.perf_counter()
            with LoopMeter(keep=8, profile=args.profile) as meter:
                assert await hass.config_entries.async_setup(entry.entry_id)
                setup_done = time.perf_counter() - started
                registry = entry.runtime_data.registry

                def all_in() -> bool:
                    terminals = list(registry)
                    return len(terminals) == args.bodies and all(
                        t.catalog is not None for t in terminals
                    )

                await until(all_in, timeout=300, step=0.05)
                await hass.async_block_till_done()
            result["setup"] = (meter, setup_done, time.perf_counter() - started)
            result["entities"] = len(
                [
                    e
                    for e in hass.data["entity_registry"].entities.values()
                    if e.config_entry_id == entry.entry_id
                ]
            )
            bound = entry.runtime_data.souls
            result["bound"] = sum(
                1 for t in registry if bound.soul_of(t.terminal_id) is not None
            )

            # Part 2: memory of `bodies` more bodies coming online.
            tracemalloc.start()
            gc.collect()
            before = tracemalloc.take_snapshot()
            await run_blocking(hass, second.publish)
            await until(
                lambda: (
                    len(list(registry)) == 2 * args.bodies
                    and all(t.catalog is not None for t in registry)
                ),
                timeout=600,
                step=0.1,
            )
            await hass.async_block_till_done()
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            by_place: dict[str, int] = defaultdict(int)
            for stat in after.compare_to(before, "filename"):
                by_place[_where(stat.traceback[0].filename)] += stat.size_diff
            result["memory"] = by_place

            # The baseline: the same entities, bare, for as many devices.
            # A body's entities: their unique ids begin with its id and "-".
            shapes = body_shapes(hass, DOMAIN, body_ids(args.bodies, 1)[0] + "-")
            bare = BareBodies(hass, shapes)
            await bare.start()
            tracemalloc.start()
            gc.collect()
            before = tracemalloc.take_snapshot()
            await bare.add([f"floor-{i:04d}" for i in range(args.bodies)])
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            result["floor_memory"] = sum(
                stat.size_diff for stat in after.compare_to(before, "filename")
            )
            result["shapes"] = shapes
            # Their loop time too, without tracemalloc: Home Assistant's own
            # cost of adding a body's entities, for as many devices.
            with LoopMeter() as adding:
                await asyncio.sleep(0)  # the adding in a step of its own: timed
                await bare.add([f"floor-timed-{i:04d}" for i in range(args.bodies)])
            result["floor_adding"] = adding
        await run_blocking_plain(first.clear)
        await run_blocking_plain(second.clear)
    finally:
        first.stop()
        second.stop()
        broker.stop()
    return result


async def run_blocking_plain(call: Any) -> None:
    """Run a blocking call in a thread (Home Assistant has stopped)."""
    await asyncio.to_thread(call)


def main() -> None:
    """Measure and print every figure with its baseline; PASS or FAIL per goal."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=200)
    parser.add_argument("--souls", type=int, default=50)
    parser.add_argument("--budget-s", type=float, default=1.0)
    parser.add_argument("--callback-ms", type=float, default=100.0)
    parser.add_argument("--body-kb", type=float, default=50.0)
    parser.add_argument("--profile", action="store_true", help="cProfile the loop")
    parser.add_argument("--profile-lines", type=int, default=40)
    parser.add_argument("--check", action="store_true", help="exit 1 on a FAIL")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    result = asyncio.run(measure(args))

    meter, setup_s, wall = result["setup"]
    floor, floor_wall = result["floor"]
    longest_ms = meter.longest[0][0] * 1000
    total_ok = meter.total <= args.budget_s
    longest_ok = longest_ms <= args.callback_ms
    print(
        f"startup: {args.bodies} retained bodies (own catalogs), {args.souls} souls,"
        f" broker {result['broker']}"
    )
    print(
        f"  {'loop time, setup until all registered':<40}: {meter.total * 1000:8.1f} ms"
        f"   ({meter.count} callbacks; async_setup returned after"
        f" {setup_s * 1000:.0f} ms, all in after {wall:.2f} s wall;"
        f" {result['entities']} entities, {result['bound']} bodies bound)"
    )
    print(
        f"  {'baseline: bare subscribe, same messages':<40}: {floor.total * 1000:8.1f} ms"
        f"   ({floor.count} callbacks, {floor_wall:.2f} s wall;"
        f" longest {floor.longest[0][0] * 1000:.1f} ms)"
    )
    adding = result["floor_adding"]
    print(
        f"  {'baseline: their entities, added bare':<40}: {adding.total * 1000:8.1f} ms"
        f"   (Home Assistant alone: {args.bodies} devices of a body's"
        f" {len(result['shapes'])} entities, no souls; {adding.count} callbacks)"
    )
    print(
        f"  {'ratio setup/baseline':<40}: {meter.total / floor.total:8.1f}x   (no goal)"
    )
    print(
        f"  {'of which the loop thread ran':<40}: {meter.cpu * 1000:8.1f} ms"
        "   (its CPU time; the rest it waited: another thread held the GIL,"
        " or the machine ran something else)"
    )
    print(
        f"  {'of which garbage collection':<40}: {meter.gc_time * 1000:8.1f} ms"
        f"   ({meter.gc_full} full collections; each runs inside the callback"
        " whose allocation set it off)"
    )
    print(
        f"  {'goal total loop time':<40}: {meter.total * 1000:8.1f} ms"
        f" <= {args.budget_s * 1000:g} ms: {verdict(total_ok)}"
    )
    print(
        f"  {'goal longest callback':<40}: {longest_ms:8.1f} ms"
        f" <= {args.callback_ms:g} ms: {verdict(longest_ok)}"
    )
    for spent, what in meter.longest:
        print(f"      {spent * 1000:7.1f} ms  {what}")
    memory: dict[str, int] = result["memory"]
    total = sum(memory.values())
    per_body = total / args.bodies / 1024
    memory_ok = per_body <= args.body_kb
    print(
        f"  {'memory per online body (tracemalloc)':<40}: {per_body:8.1f} KB"
        f"   ({args.bodies} more bodies: {total / 1024 / 1024:.2f} MiB)"
    )
    for place, size in sorted(memory.items(), key=lambda kv: -kv[1])[:10]:
        print(f"      {size / args.bodies / 1024:7.1f} KB  {place}")
    shapes = result["shapes"]
    floor_kb = result["floor_memory"] / args.bodies / 1024
    print(
        f"  {'baseline: the same entities, bare':<40}: {floor_kb:8.1f} KB"
        f"   (Home Assistant alone: {len(shapes)} entities a device,"
        f" {sum(s.enabled for s in shapes)} enabled:"
        f" {', '.join(sorted(s.domain for s in shapes))})"
    )
    print(
        f"  {'Soul own, body minus baseline':<40}: {per_body - floor_kb:8.1f} KB"
        "   (no goal)"
    )
    print(
        f"  {'goal memory per body':<40}: {per_body:8.1f} KB <= {args.body_kb:g} KB:"
        f" {verdict(memory_ok)}"
        + (
            "   (Home Assistant's own cost of the same entities is over it)"
            if floor_kb > args.body_kb
            else ""
        )
    )
    if args.profile:
        print(meter.profile_text(args.profile_lines, "tottime"))
        print(meter.profile_text(args.profile_lines, "cumulative"))
    if args.check and not (total_ok and longest_ok and memory_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
