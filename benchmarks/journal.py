"""Event journal throughput and append latency, against same-run baselines.

1. Durable events per second: ``--events`` events (spec-shaped payloads and a
   psyche state, one soul) are appended to a ``SqliteJournal`` in a temporary
   directory and ``flush`` waits until the last is committed; the clock runs
   from the first append to the end of the flush. The baseline, in the same
   run, on an identical table (the journal's own schema and pragmas: WAL,
   ``synchronous=FULL``, so a committed event survives a power cut) and with
   the same encoding of each event (``journal_codec.encode_row``) and the same
   ``journal_sql.insert``, called with one event: one transaction — one
   fsync — per event, the naive durable journal. Goal: at least
   20,000 events/s and 20x the baseline. A second baseline, for scale only,
   commits each event with ``synchronous=NORMAL`` (no fsync: a power cut may
   lose the last commits), what group commit cannot beat by much.
2. How long ``append`` holds its caller: ``--appends`` calls, each timed on
   its own, while the writer thread commits behind them; p50, p99 (goal:
   50 µs), p99.9 and the worst. The baseline is a bare ``SimpleQueue.put``
   of the same events with no writer, the floor of any queue hand-off.

Each figure prints PASS or FAIL; ``--check`` makes a FAIL exit 1. Run with
``scripts/bench`` or ``.venv/bin/python -m benchmarks.journal``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import queue
import sqlite3
import statistics
import sys
import tempfile
import time

from benchmarks.timing import verdict
from custom_components.soul.core.cognition import journal, journal_codec, journal_sql
from custom_components.soul.core.cognition.events import (
    Event,
    EventType,
    Source,
    new_trace_id,
)
from custom_components.soul.core.cognition.journal import SqliteJournal

KINDS = (
    (EventType.USER_INPUT, Source.USER, {"content": "你好，今天有点累"}),
    (
        EventType.DRIVER_RESPONSE,
        Source.DRIVER,
        {"content": "你好呀，要不要休息一下？", "inner_voice": "语气放轻一些"},
    ),
    (
        EventType.NAVIGATOR_SUGGESTION,
        Source.NAVIGATOR,
        {"suggestion": "用户似乎很疲惫，建议安慰", "intent": "comfort"},
    ),
    (
        EventType.PSYCHE_UPDATE,
        Source.PSYCHE,
        {"delta": {"joy": 0.1}, "reason": "user_praise"},
    ),
    (
        EventType.SYSTEM_NOTIFICATION,
        Source.SYSTEM,
        {"level": "info", "message": "记忆归档完成"},
    ),
)
PSYCHE = {"joy": 0.42, "sadness": 0.1, "energy": 0.7, "mood": "calm"}


def make_events(count: int) -> list[Event]:
    """Return ``count`` spec-shaped events, five per trace."""
    events: list[Event] = []
    trace = new_trace_id()
    now = time.time()
    for i in range(count):
        kind, source, payload = KINDS[i % len(KINDS)]
        if i % len(KINDS) == 0:
            trace = new_trace_id()
        events.append(
            Event(
                trace_id=trace,
                type=kind,
                source=source,
                payload=payload,
                timestamp=now + i * 0.001,
                psyche_state=PSYCHE,
                soul_id="soul-bench",
                session_id=f"session-{i // 100}",
                terminal_id="desk-1",
            )
        )
    return events


def journal_rate(directory: Path, events: list[Event]) -> float:
    """Return events/s appended and committed through ``SqliteJournal``."""
    store = SqliteJournal.open(directory / "journal.db")
    try:
        start = time.perf_counter()
        for event in events:
            store.append(event)
        if not store.flush(timeout=300):
            raise RuntimeError("the journal did not flush")
        elapsed = time.perf_counter() - start
        written = store.stats()["written"]
    finally:
        store.close()
    if written != len(events):
        raise RuntimeError(f"{written} of {len(events)} events written")
    return len(events) / elapsed


def baseline_rate(directory: Path, events: list[Event], synchronous: str) -> float:
    """Return events/s with one transaction per event, same table and insert."""
    path = directory / f"baseline-{synchronous}.db"
    SqliteJournal.open(path).close()  # the identical schema and pragmas
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute(f"PRAGMA synchronous = {synchronous}")
    try:
        start = time.perf_counter()
        for event in events:
            row = journal_codec.encode_row(event, time.time)  # the same encoding
            journal_sql.insert(connection, [row])  # one transaction, one event
        elapsed = time.perf_counter() - start
    finally:
        connection.close()
    return len(events) / elapsed


def time_appends(put: object, events: list[Event]) -> list[int]:
    """Time each ``put(event)`` on its own; return the durations in ns."""
    clock = time.perf_counter_ns
    call = put  # a local name: no attribute lookup inside the timed span
    samples = [0] * len(events)
    for i, event in enumerate(events):
        start = clock()
        call(event)  # type: ignore[operator]
        samples[i] = clock() - start
    return samples


def cuts(samples: list[int]) -> tuple[float, float, float, float]:
    """Return p50, p99, p99.9 and the worst of ``samples`` (ns) in µs."""
    points = statistics.quantiles(samples, n=1000, method="inclusive")
    return (
        points[499] / 1000,
        points[989] / 1000,
        points[998] / 1000,
        max(samples) / 1000,
    )


def append_latency(
    directory: Path, events: list[Event]
) -> tuple[tuple[float, float, float, float], tuple[float, float, float, float], int]:
    """Return the cuts of ``append`` with a live writer, of a bare put, and commits."""
    store = SqliteJournal.open(directory / "latency.db")
    try:
        time_appends(store.append, events[:2_000])  # warm up
        store.flush(timeout=60)
        before = store.stats()["commits"]
        journal_samples = time_appends(store.append, events)
        store.flush(timeout=300)
        commits = store.stats()["commits"] - before
    finally:
        store.close()
    floor: queue.SimpleQueue[Event] = queue.SimpleQueue()
    time_appends(floor.put, events[:2_000])
    floor_samples = time_appends(floor.put, events)
    return cuts(journal_samples), cuts(floor_samples), commits


def main() -> None:
    """Measure and print both figures, their baselines and the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--baseline-events", type=int, default=2_000)
    parser.add_argument("--normal-events", type=int, default=5_000)
    parser.add_argument("--appends", type=int, default=100_000)
    parser.add_argument("--min-rate", type=float, default=20_000.0)
    parser.add_argument("--min-ratio", type=float, default=20.0)
    parser.add_argument("--budget-us", type=float, default=50.0)
    parser.add_argument("--check", action="store_true", help="exit 1 on a FAIL")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="soul-journal-bench-") as name:
        directory = Path(name)
        events = make_events(max(args.events, args.appends))
        rate = journal_rate(directory, events[: args.events])
        naive = baseline_rate(directory, events[: args.baseline_events], "FULL")
        no_fsync = baseline_rate(directory, events[: args.normal_events], "NORMAL")
        held, floor, commits = append_latency(directory, events[: args.appends])

    ratio = rate / naive
    rate_ok = rate >= args.min_rate
    ratio_ok = ratio >= args.min_ratio
    held_ok = held[1] <= args.budget_us

    print(
        f"journal: SQLite {sqlite3.sqlite_version}, WAL, synchronous=FULL,"
        f" batches of up to {journal.BATCH_SIZE}"
    )
    print(
        f"  {'durable events/s, group commit':<36}: {rate:>10,.0f}"
        f"   ({args.events} events, append + flush)"
    )
    print(
        f"  {'baseline: one commit per event':<36}: {naive:>10,.0f}"
        f"   ({args.baseline_events} events, same table, pragmas, encoding:"
        " an fsync per event)"
    )
    print(
        f"  {'baseline B: same, synchronous=NORMAL':<36}: {no_fsync:>10,.0f}"
        f"   ({args.normal_events} events, no fsync: not durable; for scale)"
    )
    print(
        f"  {'goal rate':<36}: {rate:>10,.0f}/s >= {args.min_rate:,.0f}/s:"
        f" {verdict(rate_ok)}"
    )
    print(
        f"  {'ratio group/baseline':<36}: {ratio:>10.1f}x"
        f"   goal >= {args.min_ratio:g}x: {verdict(ratio_ok)}"
    )
    print(f"  {'ratio group/baseline B':<36}: {rate / no_fsync:>10.1f}x   (no goal)")

    def row(label: str, c: tuple[float, float, float, float]) -> str:
        return (
            f"  {label:<36}: p50 {c[0]:6.2f} µs   p99 {c[1]:6.2f} µs"
            f"   p99.9 {c[2]:7.2f} µs   max {c[3]:9.1f} µs"
        )

    print(row(f"append, writer running ({commits} commits)", held))
    print(row("baseline: bare SimpleQueue.put", floor))
    print(
        f"  {'ratio append/put':<36}: p50 {held[0] / floor[0]:6.1f}x"
        f"   p99 {held[1] / floor[1]:6.1f}x"
        f"   goal p99 <= {args.budget_us:g} µs: {verdict(held_ok)}"
    )
    print(f"  ({time.perf_counter() - started:.0f} s, {args.appends} appends timed)")
    if args.check and not (rate_ok and ratio_ok and held_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
