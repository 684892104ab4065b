"""Shared plumbing of ``benchmarks.hostile``: the budget, inputs and the meter.

The constants and hostile inputs several classes share; builders of sizes and
shapes (JSON arrays of a unit, nesting chains, ordinary patterns, labels); and
the measuring: ``Meter.loop`` (median wall time of a call on the loop),
``Meter.stall`` (the longest lateness of a 1 ms ``Ticker`` while the input
goes through its path, with the longest garbage collection meanwhile),
``worst_message`` (the slowest of many calls, each timed alone), and ``Row`` /
``Section``, which hold the figures. A helper module, not a benchmark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
import gc
from pathlib import Path
import statistics
import threading
import time
from typing import Any

from custom_components.soul.core import untrusted
from custom_components.soul.core.language import to_simplified

BUDGET_MS = 20.0
TICK = 0.001  # the ticker's sleep, in seconds
LONG_NS = 250_000_000  # a call this slow is measured once
KIB = 1024
LOOP = untrusted.LOOP_JSON_BYTES
ROOT = Path(__file__).resolve().parent.parent
DESK_ROBOT = ROOT / "tests" / "data" / "eval" / "catalog_desk_robot.json"
TERMINAL = "terminal-001"
NOW = "2025-01-01T08:00:00"

# The regexes of the issue: nested bounded repeats and the classic backtrackers.
REDOS = ("a{0,64}" * 6 + "b", "(a|aa)+$", "(a+)+b", r"(\w+\s?)+$")
# No match anywhere, so every start position backtracks; "#" ends no clause.
REDOS_TEXT = "a" * 80 + "#"
COMPILE_BOMBS = (
    "(?:(?:(?:a{100}){100}){100}){100}",
    "(?:a{64}){64}",  # exactly MAX_EXPANSION atoms: allowed, compiled
    "(?:(?:a{1,65535}){1,65535}){1,65535}",
    "(?:" * 100 + "a" + ")" * 100,
    # 11 levels of a small counted repeat: 80 characters, 4,096 atoms; regex
    # took 210 ms to compile it, holding the GIL (a hostile body, 2026-11-27)
    "(?:" * 11 + "a|b" + "){2}" * 11,
)
BENIGN_OBJECT = (
    '{"name":"set_light","description":"Turn the desk lamp on or off",'
    '"brightness":72,"on":true,"tags":["light","desk"]}'
)
ORDINARY_ZH = "请帮我把客厅的灯打开然后放一点轻音乐"
ORDINARY_EN = "please turn on the light in the living room "


# -- sizes and shapes ------------------------------------------------------------------


def json_array(unit: str, size: int) -> bytes:
    """Return a JSON array of ``unit`` (ASCII) padded with a string to ``size`` bytes."""
    count = max(0, (size - 5) // (len(unit) + 1))
    text = "[" + ",".join([unit] * count)
    room = size - len(text) - 1
    if room >= 3:
        text += ("," if count else "") + '"' + "x" * (room - 2 - bool(count)) + '"'
    return (text + "]").encode()


def chain(depth: int) -> str:
    """Return ``depth`` nested empty arrays: the costliest bytes for a depth check."""
    return "[" * depth + "]" * depth


def ordinary_pattern(length: int) -> str:
    """Return an ordinary pattern (literal words) of ``length`` characters."""
    return ("turn the light on " * (length // 18 + 1))[:length]


def cut(text: str, length: int) -> str:
    """Return ``text`` repeated and cut to ``length`` characters."""
    return (text * (length // len(text) + 1))[:length]


def simplified_han(count: int) -> list[str]:
    """Return ``count`` Han characters that fold to themselves."""
    chars: list[str] = []
    code = 0x4E00
    while len(chars) < count:
        char = chr(code)
        if to_simplified(char) == char:
            chars.append(char)
        code += 7
    return chars


def four_letter_words(count: int) -> list[str]:
    """Return ``count`` distinct lower-case four-letter keywords."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        "".join(letters[n // 26**k % 26] for k in (3, 2, 1, 0)) for n in range(count)
    ]


def split_even(items: list[str], parts: int) -> list[list[str]]:
    """Split ``items`` into ``parts`` lists of nearly equal length."""
    return [items[n::parts] for n in range(parts)]


def size_label(size: int) -> str:
    """Return a size as bytes, KiB or MB."""
    if size >= 1_000_000:
        return f"{size / 1_048_576:.1f} MiB"
    if size >= 10 * KIB:
        return f"{size / KIB:.0f} KiB"
    return f"{size:,} B"


def quietly(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """Return a call of ``func`` that swallows refusals (every one is a ValueError)."""

    def call() -> Any:
        try:
            return func(*args, **kwargs)
        except ValueError as err:
            return err

    return call


# -- measuring ---------------------------------------------------------------------------


class Stall(float):
    """A ticker stall in ms that remembers the longest garbage collection inside it."""

    gc_ms: float

    def __new__(cls, ms: float, gc_ms: float) -> Stall:
        """Return ``ms`` with its longest collection ``gc_ms``."""
        stall = super().__new__(cls, ms)
        stall.gc_ms = gc_ms
        return stall


@dataclass(slots=True)
class Row:
    """One hostile input and its same-size benign twin, in ms of event-loop time."""

    name: str
    size: str
    how: str  # "loop" or "stall"
    hostile: float
    benign: float | None
    note: str = ""

    def __post_init__(self) -> None:
        pauses = [
            (label, value.gc_ms)
            for label, value in (("hostile", self.hostile), ("benign", self.benign))
            if isinstance(value, Stall) and value.gc_ms >= 5
        ]
        if pauses:
            gc_note = "longest GC pause " + ", ".join(
                f"{label} {ms:.0f} ms" for label, ms in pauses
            )
            self.note = f"{self.note}; {gc_note}" if self.note else gc_note

    @property
    def ratio(self) -> str:
        """Return hostile / benign."""
        if self.benign is None:
            return "-"
        return f"{self.hostile / max(self.benign, 0.001):,.1f}"

    @property
    def ok(self) -> bool:
        """Return whether the hostile input and its benign twin stay within the budget.

        The budget is for every input: an ordinary one over it is a finding too
        (52 ordinary skills once stalled the loop for 150 ms).
        """
        return self.hostile <= BUDGET_MS and (
            self.benign is None or self.benign <= BUDGET_MS
        )


@dataclass(slots=True)
class Section:
    """One class of input: its rows and what they go through."""

    number: str
    title: str
    path: str
    rows: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Return whether every input of the class, hostile or benign, is within budget."""
        return all(row.ok for row in self.rows)

    @property
    def worst(self) -> Row:
        """Return the row with the longest hostile hold."""
        return max(self.rows, key=lambda row: row.hostile)


class Ticker:
    """A coroutine that wakes every millisecond; ``worst`` is its longest lateness.

    ``gc_worst`` is the longest garbage collection meanwhile, in any thread:
    a collection holds the GIL, so it stalls the loop wherever it runs.
    """

    def __init__(self) -> None:
        self.worst = 0.0
        self.gc_worst = 0.0
        self._running = False
        self._task: asyncio.Task[None] | None = None
        self._gc_started: dict[int, float] = {}

    def _gc(self, phase: str, _info: dict[str, int]) -> None:
        thread, now = threading.get_ident(), time.perf_counter()
        if phase == "start":
            self._gc_started[thread] = now
        elif (started := self._gc_started.pop(thread, None)) is not None:
            self.gc_worst = max(self.gc_worst, (now - started) * 1000)

    async def __aenter__(self) -> Ticker:
        self._running = True
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0.01)
        self.worst = 0.0
        gc.callbacks.append(self._gc)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await asyncio.sleep(0.005)  # the gap that ends with the input is recorded
        gc.callbacks.remove(self._gc)
        self._running = False
        assert self._task is not None
        await self._task

    async def _tick(self) -> None:
        clock = time.perf_counter
        last = clock()
        while self._running:
            await asyncio.sleep(TICK)
            now = clock()
            self.worst = max(self.worst, (now - last - TICK) * 1000)
            last = now


class Meter:
    """Times inputs on the loop (wall time) or through their path (ticker stall)."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def loop(
        self, call: Callable[[], object], before: Callable[[], object] | None = None
    ) -> float:
        """Return the median wall time of ``call`` in ms (``before`` is not timed)."""
        clock = time.perf_counter_ns
        samples: list[int] = []
        for _ in range(self.rounds):
            if before is not None:
                before()
            gc.collect()
            start = clock()
            call()
            samples.append(clock() - start)
            if samples[-1] > LONG_NS:
                break
        return statistics.median(samples) / 1e6

    async def stall(
        self,
        scenario: Callable[[], Awaitable[object]],
        before: Callable[[], object] | None = None,
        *,
        rounds: int | None = None,
    ) -> Stall:
        """Return the median of the ticker's worst lateness while ``scenario`` runs."""
        samples: list[float] = []
        collections: list[float] = []
        for _ in range(rounds or self.rounds):
            if before is not None:
                before()
            gc.collect()
            started = time.perf_counter_ns()
            async with Ticker() as ticker:
                await scenario()
            samples.append(ticker.worst)
            collections.append(ticker.gc_worst)
            if time.perf_counter_ns() - started > 4 * LONG_NS:
                break
        return Stall(statistics.median(samples), statistics.median(collections))


async def in_executor(call: Callable[[], object]) -> object:
    """Run ``call`` in the loop's default executor, as Home Assistant's executor would."""
    return await asyncio.get_running_loop().run_in_executor(None, call)


def worst_message(calls: list[Callable[[], object]]) -> tuple[float, float]:
    """Return the slowest and the mean duration of ``calls`` in ms, each timed alone."""
    clock = time.perf_counter_ns
    samples = []
    gc.collect()
    for call in calls:
        start = clock()
        call()
        samples.append(clock() - start)
    return max(samples) / 1e6, statistics.fmean(samples) / 1e6
