"""Snapshot ingest: parsed off the loop, in order, coalesced, rate-limited, bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import json
import threading
from typing import Any

from custom_components.soul.core.ingest import SnapshotIngest
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind

from .spec_payloads import catalog, skills


class Clock:
    """A hand-driven monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def payload(terminal_id: str = "t1", **changes: Any) -> bytes:
    return json.dumps(skills(terminal_id=terminal_id, **changes)).encode()


async def drained(ingest: SnapshotIngest) -> None:
    for _ in range(200):
        if not ingest._running and (not ingest.pending or ingest._wake is not None):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the ingest did not settle")


async def test_snapshots_are_parsed_off_the_loop_and_applied_in_order() -> None:
    registry = TerminalRegistry()
    threads: list[str] = []

    async def run_blocking(func: Callable[..., Any], *args: Any) -> Any:
        def call() -> Any:
            threads.append(threading.current_thread().name)
            return func(*args)

        return await asyncio.to_thread(call)

    ingest = SnapshotIngest(registry, run_blocking=run_blocking)
    registry.handle_message(Kind.ONLINE, "t1", "online")
    ingest.submit(Kind.SKILLS, "t1", payload(skill_version=1))
    ingest.submit(Kind.INTENT_CATALOG, "t1", json.dumps(catalog(terminal_id="t1")))
    await drained(ingest)
    terminal = registry.get("t1")
    assert terminal is not None
    assert terminal.catalog is not None
    assert threads
    assert threading.main_thread().name not in threads


async def test_a_flood_is_coalesced_and_the_newest_applies() -> None:
    registry = TerminalRegistry()
    clock = Clock()
    parsed: list[bytes] = []

    async def run_blocking(func: Callable[..., Any], *args: Any) -> Any:
        parsed.append(args[2])
        return func(*args)

    ingest = SnapshotIngest(
        registry, run_blocking=run_blocking, clock=clock, burst=2, refill=60.0
    )
    registry.handle_message(Kind.ONLINE, "t1", "online")
    for version in range(1, 301):
        ingest.submit(Kind.SKILLS, "t1", payload(skill_version=version))
        await asyncio.sleep(0)  # the worker runs between messages
    await drained(ingest)
    # Two parses within the burst, the rest waits as one coalesced snapshot.
    assert len(parsed) == 2
    assert ingest.pending == 1
    assert ingest.coalesced >= 297
    # Once a token is back, the newest snapshot applies.
    clock.now += 60
    ingest.wake()
    await drained(ingest)
    terminal = registry.get("t1")
    assert terminal is not None
    assert terminal.skills is not None
    assert terminal.skills.skill_version == 300
    assert len(parsed) == 3
    ingest.stop()


async def test_other_terminals_are_not_held_up_by_a_flooder() -> None:
    registry = TerminalRegistry()
    clock = Clock()
    ingest = SnapshotIngest(registry, clock=clock, burst=1, refill=60.0)
    for version in range(1, 5):
        ingest.submit(Kind.SKILLS, "flood", payload("flood", skill_version=version))
        await asyncio.sleep(0.01)
    ingest.submit(Kind.SKILLS, "good", payload("good"))
    try:
        await drained(ingest)
        await asyncio.sleep(0.05)
        await drained(ingest)
        assert registry.get("good") is not None
    finally:
        ingest.stop()


async def test_waiting_bytes_are_bounded() -> None:
    registry = TerminalRegistry()
    ingest = SnapshotIngest(registry, max_pending_bytes=1000, spawn=lambda c: c.close())
    ingest.submit(Kind.SKILLS, "t1", b"x" * 800)
    ingest.submit(Kind.SKILLS, "t2", b"x" * 800)
    assert ingest.pending == 1
    assert ingest.dropped == 1
    # A newer snapshot of the same terminal replaces the waiting one.
    ingest.submit(Kind.SKILLS, "t1", b"y" * 900)
    assert ingest.pending == 1
    assert ingest.dropped == 1
