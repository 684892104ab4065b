"""Hostile inputs against the event loop's 20 ms budget, each with a benign twin.

Every class of untrusted input (``docs/security.md``) gets its worst inputs
fed to the code Home Assistant runs, and an ordinary input of the same size
goes the same way in the same run. The figure is how long the event loop is
held for one input, in ms:

- ``loop``: the part that runs on the event loop is called directly; its wall
  time is the loop's hold (median of ``--rounds``; one round when it takes
  longer than a quarter second);
- ``stall``: where the product moves the work off the loop (the executor, a
  thread), the input goes through that path inside a running loop, and a
  ticker coroutine sleeping 1 ms records its longest lateness: what stays on
  the loop plus what the worker thread takes by holding the GIL (median of
  the rounds). Such a row notes the longest garbage collection meanwhile
  when it reached 5 ms: a collection holds the GIL in whichever thread runs it.

Classes: 1 poisoned JSON and text (``core/untrusted.py``), 2 untrusted
regexes (catalog patterns in ``filter_intents``, schema ``pattern`` in
``Skill.argument_errors``, ``safe_regex.compile_untrusted``), 3 big catalogs
through ``SnapshotIngest`` and the filter afterwards, 4 a schema flood, 5
filling the registry with phantom ids, 6 Star frames (``StarHub.receive`` and
the transport's threaded decode), 7 chat bodies and model replies, 8 other
attacks found by reading the code. Each prints its inputs, then a summary
prints one row per class: its worst input against the budget and against the
benign twin. ``--check`` exits 1 when a class misses the budget. Run with
``scripts/bench`` or ``.venv/bin/python -m benchmarks.hostile [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
import functools
import gc
import json
import logging
import os
from pathlib import Path
import platform
import statistics
import sys
import threading
import time
from typing import Any

from aiohttp import web
import regex

from custom_components.soul.core import protocol, safe_regex, untrusted
from custom_components.soul.core.chat import (
    MAX_ARGUMENTS_BYTES,
    MAX_REPLY,
    ChatPipeline,
    parse_chat_request,
)
from custom_components.soul.core.emotion import analyze_emotion
from custom_components.soul.core.ingest import SnapshotIngest
from custom_components.soul.core.intent_filter import (
    cached_catalog,
    clear_compile_cache,
    filter_intents,
)
from custom_components.soul.core.intent_filter.text import to_simplified
from custom_components.soul.core.llm import (
    LLMEndpoint,
    LLMResponseError,
    OpenAICompatibleLLM,
)
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.star.hub import (
    RATE_LIMITED,
    Connection,
    Identity,
    StarHub,
    decode_frame,
)
from custom_components.soul.core.topics import Kind
from tests.core.spec_payloads import skills as spec_skills

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
        """Return whether the hostile input stays within the budget."""
        return self.hostile <= BUDGET_MS


@dataclass(slots=True)
class Section:
    """One class of input: its rows and what they go through."""

    number: str
    title: str
    path: str
    rows: list[Row] = field(default_factory=list)

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


# -- 1. poisoned JSON and text --------------------------------------------------------


async def poisoned_json(meter: Meter) -> list[Section]:
    """Class 1: JSON and text at the boundary, on the loop and in the executor."""
    on_loop = Section(
        "1a",
        "Poisoned JSON and text ≤ 64 KiB, on the loop",
        "protocol.decode_json / untrusted.loads (MQTT result, Star frame, HTTP body "
        "≤ LOOP_JSON_BYTES); untrusted.text",
    )
    small = [
        ("lone surrogate escape \\ud800", b'{"name":"\\ud800"}'),
        ("CESU-8 surrogate bytes ED A0 80", b'{"name":"\xed\xa0\x80"}'),
        ("33 levels of nesting", chain(33).encode()),
    ]
    for name, raw in small:
        on_loop.rows.append(
            Row(
                name,
                size_label(len(raw)),
                "loop",
                meter.loop(quietly(protocol.decode_json, raw)),
                meter.loop(quietly(protocol.decode_json, json_array("0", len(raw)))),
            )
        )
    line = "x" * 4095
    for name, bad in (("control character", "\x00"), ("lone surrogate", "\ud800")):
        on_loop.rows.append(
            Row(
                f"4,096-char text, {name} last",
                "4,096 chars",
                "loop",
                meter.loop(quietly(untrusted.text, line + bad, "t", max_length=4096)),
                meter.loop(quietly(untrusted.text, line + "y", "t", max_length=4096)),
            )
        )
    benign = json_array(BENIGN_OBJECT, LOOP)
    benign_ms = meter.loop(quietly(protocol.decode_json, benign))
    big = [
        (
            "surrogate pairs, one lone one last",
            json_array('"\\ud83d\\ude00"', LOOP - 9)[:-1] + b',"\\ud800"]',
        ),
        ("depth-32 chains (legal; worst for the check)", json_array(chain(31), LOOP)),
        (
            'depth-32 object chains {"":{…}}',
            json_array('{"":' * 30 + "{}" + "}" * 30, LOOP),
        ),
        ("empty objects {}", json_array("{}", LOOP)),
        ("flat array of 0", json_array("0", LOOP)),
    ]
    for name, raw in big:
        assert len(raw) == LOOP, (name, len(raw))
        on_loop.rows.append(
            Row(
                name,
                size_label(len(raw)),
                "loop",
                meter.loop(quietly(protocol.decode_json, raw)),
                benign_ms,
            )
        )

    off_loop = Section(
        "1b",
        "JSON > 64 KiB, decoded in the executor",
        "views._json_body (512 KiB body) and Invoker.async_handle_result (256 KiB) "
        "→ untrusted.loads in a worker thread",
    )
    body = 512 * KIB
    benign_body = json_array(BENIGN_OBJECT, body)
    benign_stall = await meter.stall(
        lambda: in_executor(quietly(untrusted.loads, benign_body, max_bytes=body))
    )
    shapes = [
        ("flat array of 0", json_array("0", body)),
        ("depth-32 chains", json_array(chain(31), body)),
        ("empty objects {}", json_array("{}", body)),
        ("100,000 levels [[[…]]]", chain(100_000).encode()[:body]),
    ]
    for name, raw in shapes:
        off_loop.rows.append(
            Row(
                f"HTTP body: {name}",
                size_label(len(raw)),
                "stall",
                await meter.stall(
                    lambda raw=raw: in_executor(
                        quietly(untrusted.loads, raw, max_bytes=body)
                    )
                ),
                benign_stall,
            )
        )
    mqtt = protocol.MAX_PAYLOAD_BYTES
    chains, objects = json_array(chain(31), mqtt), json_array(BENIGN_OBJECT, mqtt)
    off_loop.rows.append(
        Row(
            "MQTT result: depth-32 chains",
            size_label(mqtt),
            "stall",
            await meter.stall(
                lambda: in_executor(quietly(protocol.decode_json, chains))
            ),
            await meter.stall(
                lambda: in_executor(quietly(protocol.decode_json, objects))
            ),
        )
    )
    return [on_loop, off_loop]


# -- 2. untrusted regexes --------------------------------------------------------------


def regex_catalog(patterns: list[str], intents: int = 1) -> list[dict[str, Any]]:
    """Return a catalog whose intents each carry ``patterns`` (made distinct)."""
    return [
        {
            "id": f"intent_{n}",
            "match": {
                "regex_any": [
                    p if intents == 1 else f"{p}(?#{n}.{k})"
                    for k, p in enumerate(patterns)
                ]
            },
        }
        for n in range(intents)
    ]


def pattern_skill(pattern: str, properties: int = 1) -> protocol.Skill:
    """Return a skill whose string arguments must match ``pattern``."""
    return protocol.parse_skill(
        {
            "name": "say",
            "input_schema": {
                "type": "object",
                "properties": {
                    f"text_{n}": {"type": "string", "pattern": pattern}
                    for n in range(properties)
                },
            },
        }
    )


def filter_fresh(entries: list[dict[str, Any]], command: str) -> tuple[Any, Any]:
    """Return (before, call): a fresh compile off the clock, then one filter call."""

    def before() -> None:
        clear_compile_cache()
        cached_catalog(entries)  # as TerminalRegistry.prepare does in the executor

    return before, quietly(
        filter_intents, {"command": command, "intent_catalog": entries, "now": NOW}
    )


async def regexes(meter: Meter) -> list[Section]:
    """Class 2: catalog patterns, schema patterns and compile bombs."""
    catalog = Section(
        "2a",
        "Untrusted regexes in a catalog, first command after it arrived",
        "filter_intents (engine.py, REGEX_TIMEOUT 10 ms, REGEX_BUDGET 12 ms a command)",
    )
    cases = [(p, [p]) for p in REDOS] + [("all four in one intent", list(REDOS))]
    for name, patterns in cases:
        benign = [ordinary_pattern(len(p)) for p in patterns]
        catalog.rows.append(
            Row(
                f"regex_any {name}",
                f"{len(REDOS_TEXT)} chars",
                "loop",
                meter.loop(
                    *reversed(filter_fresh(regex_catalog(patterns), REDOS_TEXT))
                ),
                meter.loop(*reversed(filter_fresh(regex_catalog(benign), REDOS_TEXT))),
            )
        )
    # The most a catalog may carry: 256 distinct patterns (MAX_CATALOG_PATTERNS).
    many = regex_catalog(["(a|aa)+$"] * 32, intents=8)
    literal = regex_catalog([ordinary_pattern(20)] * 32, intents=8)
    size = len(json.dumps(many))
    keywords = [
        {
            "id": f"intent_{n}",
            "match": {
                "keywords_any": [f"word{n}x{k}" for k in range(16)],
                "examples": [f"turn on lamp {n} {k}" for k in range(16)],
            },
        }
        for n in range(256)
    ]
    keyword_ms = meter.loop(*reversed(filter_fresh(keywords, REDOS_TEXT)))
    for name, entries in (
        ("8 intents × 32 × (a|aa)+$ (256, the cap)", many),
        ("8 intents × 32 literal patterns (256, the cap)", literal),
    ):
        catalog.rows.append(
            Row(
                name,
                f"{size_label(size)} catalog",
                "loop",
                meter.loop(*reversed(filter_fresh(entries, REDOS_TEXT))),
                keyword_ms,
                "benign: 256 intents × 16 keywords and 16 examples",
            )
        )

    schema = Section(
        "2b",
        "Untrusted regexes in a skill schema",
        "Skill.argument_errors (PATTERN_TIMEOUT 10 ms, PATTERN_BUDGET 15 ms); the "
        "Invoker runs it in the executor, ChatPipeline._action_intent on the loop",
    )
    for name, pattern, properties in [
        *((p, p, 1) for p in REDOS),
        ("64 properties × (a|aa)+$", "(a|aa)+$", 64),
    ]:
        hostile = pattern_skill(pattern, properties)
        benign = pattern_skill(ordinary_pattern(len(pattern)), properties)
        arguments = {f"text_{n}": REDOS_TEXT for n in range(properties)}
        schema.rows.append(
            Row(
                f"pattern {name}",
                f"{properties} × {len(REDOS_TEXT)} chars",
                "loop",
                meter.loop(lambda s=hostile, a=arguments: s.argument_errors(a)),
                meter.loop(lambda s=benign, a=arguments: s.argument_errors(a)),
            )
        )

    bombs = Section(
        "2c",
        "Regex compile bombs",
        "safe_regex.compile_untrusted (MAX_EXPANSION 4,096 atoms), cache cleared",
    )

    def clear() -> None:  # ours, and the regex module's own cache of patterns
        safe_regex.compile_untrusted.cache_clear()
        regex.purge()

    for pattern in COMPILE_BOMBS:
        bombs.rows.append(
            Row(
                pattern if len(pattern) <= 40 else pattern[:37] + "…",
                f"{len(pattern)} chars",
                "loop",
                meter.loop(quietly(safe_regex.compile_untrusted, pattern), clear),
                meter.loop(
                    quietly(
                        safe_regex.compile_untrusted, ordinary_pattern(len(pattern))
                    ),
                    clear,
                ),
            )
        )
    return [catalog, schema, bombs]


# -- 3. big catalogs ---------------------------------------------------------------------


def catalog_payload(groups: list[list[str]]) -> bytes:
    """Return an intent_catalog payload with one intent per keyword group."""
    entries = [
        {"id": f"intent_{n}", "match": {"keywords_any": words}}
        for n, words in enumerate(groups)
    ]
    return json.dumps(
        {"intent_catalog": entries}, ensure_ascii=False, separators=(",", ":")
    ).encode()


def ordinary_catalog_payload(size: int) -> bytes:
    """Return a 256-intent catalog of keywords and examples, about ``size`` bytes."""
    sentences = [
        "把客厅的灯打开",
        "十分钟后提醒我喝水",
        "点点头",
        "音量调到五十",
        "turn on the desk lamp",
        "remind me in ten minutes",
    ]
    entries: list[dict[str, Any]] = [
        {
            "id": f"intent_{n}",
            "name": f"意图 {n}",
            "match": {"keywords_any": [f"动作{n}", f"action{n}"], "examples": []},
        }
        for n in range(256)
    ]
    base = len(json.dumps({"intent_catalog": entries}, ensure_ascii=False).encode())
    per_example = 3 + len(sentences[0].encode()) + 4  # quotes, comma, a number
    count = max(0, (size - base) // per_example)
    for k in range(min(count, 256 * 64)):
        entries[k % 256]["match"]["examples"].append(
            f"{sentences[k % len(sentences)]}{k}"
        )
    return json.dumps({"intent_catalog": entries}, ensure_ascii=False).encode()


def fresh_registry() -> TerminalRegistry:
    """Return a registry where ``TERMINAL`` announced the spec's skills and is online."""
    registry = TerminalRegistry()
    payload = json.dumps(spec_skills(terminal_id=TERMINAL)).encode()
    registry.handle_message(Kind.SKILLS, TERMINAL, payload)
    registry.handle_message(Kind.ONLINE, TERMINAL, b"online")
    return registry


class Ingestion:
    """A ``SnapshotIngest`` on the loop's default executor that counts its parses."""

    def __init__(self, registry: TerminalRegistry) -> None:
        self.parsed = 0
        self.in_flight = 0
        self.futures: set[asyncio.Future[Any]] = set()
        self.last_parse = time.monotonic()
        self.ingest = SnapshotIngest(registry, run_blocking=self._run_blocking)

    async def _run_blocking(self, func: Callable[..., Any], *args: Any) -> Any:
        self.in_flight += 1
        try:
            future = asyncio.get_running_loop().run_in_executor(None, func, *args)
            self.futures.add(future)
            future.add_done_callback(self.futures.discard)
            return await future
        finally:
            self.in_flight -= 1
            self.parsed += 1
            self.last_parse = time.monotonic()

    async def settle(self, expected: int, cap: float) -> None:
        """Wait for ``expected`` parses, or for quiet (rate-limited waits), or ``cap`` s."""
        deadline = time.monotonic() + cap
        while time.monotonic() < deadline:
            if self.parsed >= expected and not self.ingest.pending:
                break
            quiet = time.monotonic() - self.last_parse > 0.2
            if not self.in_flight and quiet and self.ingest.pending:
                break  # what is left waits for a token (refill every 6 s)
            await asyncio.sleep(0.005)
        await asyncio.sleep(0)


async def ingest_stall(meter: Meter, payload: bytes) -> float:
    """Return the loop stall while one catalog goes through ``SnapshotIngest``."""
    registries: list[TerminalRegistry] = []

    def before() -> None:
        clear_compile_cache()
        registries[:] = [fresh_registry()]

    async def ingest() -> None:
        ingestion = Ingestion(registries[0])
        ingestion.ingest.submit(Kind.INTENT_CATALOG, TERMINAL, payload)
        await ingestion.settle(1, cap=60)
        ingestion.ingest.stop()

    return await meter.stall(ingest, before)


async def catalogs(meter: Meter) -> list[Section]:
    """Class 3: a catalog over the keyword cap, one just under, and the filter after."""
    section = Section(
        "3",
        "Big catalogs: ingest (executor) and the filter afterwards (loop)",
        "SnapshotIngest → TerminalRegistry.prepare (thread) / .apply; "
        "registry.filter_command (MAX_KEYWORDS 4,096)",
    )
    over = catalog_payload(split_even(four_letter_words(20_000), 256))
    han = simplified_han(64)
    pairs = [a + b for a in han for b in han][:4000]
    under = catalog_payload(split_even(pairs, 256))
    for name, payload in (
        ("20,000 keywords (refused by the cap)", over),
        ("4,000 keywords (under the cap)", under),
    ):
        benign = ordinary_catalog_payload(len(payload))
        section.rows.append(
            Row(
                f"ingest {name}",
                size_label(len(payload)),
                "stall",
                await ingest_stall(meter, payload),
                await ingest_stall(meter, benign),
                f"benign: 256 intents, examples, {size_label(len(benign))}",
            )
        )
    registry = fresh_registry()
    registry.handle_message(Kind.INTENT_CATALOG, TERMINAL, under)
    assert registry.get(TERMINAL).catalog is not None  # type: ignore[union-attr]
    command = "".join(pairs)[:2000]
    section.rows.append(
        Row(
            "filter: 2,000 chars of its keywords",
            "2,000 chars",
            "loop",
            meter.loop(
                quietly(
                    registry.filter_command,
                    TERMINAL,
                    {"command": command, "now": NOW},
                    default_timezone="UTC",
                )
            ),
            meter.loop(
                quietly(
                    registry.filter_command,
                    TERMINAL,
                    {"command": cut(ORDINARY_ZH + "，", 2000), "now": NOW},
                    default_timezone="UTC",
                )
            ),
            "4,000-keyword catalog; benign: an ordinary 2,000-char command",
        )
    )
    return [section]


# -- 4. schema flood ------------------------------------------------------------------


def skills_payload(terminal_id: str, salt: str) -> bytes:
    """Return a skills snapshot of 64 skills whose schemas are new for each ``salt``."""
    skills = [
        {
            "name": f"skill_{k}",
            "description": "a skill",
            "input_schema": {
                "type": "object",
                "properties": {
                    f"{salt}_{k}_{p}": {
                        "type": "string",
                        "maxLength": 16 + p,
                        "description": "an argument",
                    }
                    for p in range(8)
                },
                "required": [f"{salt}_{k}_0"],
            },
        }
        for k in range(64)
    ]
    return json.dumps(
        {"terminal_id": terminal_id, "skill_version": 1, "skills": skills}
    ).encode()


@dataclass(slots=True)
class Flood:
    """What a flood did: parses, coalesced and waiting snapshots."""

    parsed: int = 0
    coalesced: int = 0
    waiting: int = 0
    seconds: float = 0.0


_salts = iter(range(10**9))


def flood_payloads(terminals: int, *, distinct: bool) -> list[tuple[str, bytes]]:
    """Return 300 (terminal id, skills payload); new schemas in each when ``distinct``."""
    run = next(_salts)
    payloads = []
    for n in range(300):
        terminal_id = f"flood-{n % terminals:03d}"
        salt = f"r{run}s{n}" if distinct else "same"
        payloads.append((terminal_id, skills_payload(terminal_id, salt)))
    return payloads


async def flood(payloads: list[tuple[str, bytes]], *, cap: float, out: Flood) -> None:
    """Publish the snapshots through one ``SnapshotIngest``, 2 ms apart."""
    ingestion = Ingestion(TerminalRegistry())
    started = time.monotonic()
    for terminal_id, payload in payloads:
        ingestion.ingest.submit(Kind.SKILLS, terminal_id, payload)
        await asyncio.sleep(0.002)
    await ingestion.settle(300, cap=cap)
    out.parsed = ingestion.parsed
    out.coalesced = ingestion.ingest.coalesced
    out.waiting = ingestion.ingest.pending
    out.seconds = time.monotonic() - started
    ingestion.ingest.stop()
    if ingestion.futures:  # the parse under way finishes in its thread anyway
        await asyncio.wait(ingestion.futures)


async def schema_flood(meter: Meter, cap: float) -> list[Section]:
    """Class 4: 300 snapshots of 64 new schemas each, from 1 and from 300 terminals."""
    section = Section(
        "4",
        "Schema flood: 300 skills snapshots × 64 new schemas",
        "SnapshotIngest (burst 10, refill 6 s, latest wins) → parse_skills in the "
        "executor (jsonschema check_schema per new schema)",
    )
    size = len(skills_payload("flood-000", "r0s0"))
    for terminals in (1, 300):
        seen, baseline = Flood(), Flood()
        hostile_payloads = flood_payloads(terminals, distinct=True)
        benign_payloads = flood_payloads(terminals, distinct=False)
        hostile = await meter.stall(
            lambda p=hostile_payloads, s=seen: flood(p, cap=cap, out=s), rounds=1
        )
        benign = await meter.stall(
            lambda p=benign_payloads, b=baseline: flood(p, cap=cap, out=b), rounds=1
        )
        section.rows.append(
            Row(
                f"from {terminals} terminal{'s' if terminals > 1 else ''}",
                f"300 × {size_label(size)}",
                "stall",
                hostile,
                benign,
                f"{seen.parsed} parsed, {seen.coalesced} coalesced, "
                f"{seen.waiting} waiting after {seen.seconds:.1f} s"
                f" (cap {cap:g} s); benign (same schemas): {baseline.parsed} parsed "
                f"in {baseline.seconds:.1f} s",
            )
        )
    return [section]


# -- 5. registry fill ------------------------------------------------------------------


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


def registry_fill(registered: int) -> tuple[float, float, float, bool]:
    """Fill a registry with ``registered`` bodies, then 1,100 phantom ids, then a body.

    Returns (worst phantom ms, mean phantom ms, benign worst ms, whether the
    new body got in); benign: the same number of heartbeats from known bodies.
    """
    registry = TerminalRegistry(max_terminals=1024)
    known = [f"body-{n:04d}" for n in range(max(registered, 1))]
    for terminal_id in known[:registered]:
        registry.handle_message(
            Kind.SKILLS,
            terminal_id,
            json.dumps(spec_skills(terminal_id=terminal_id)).encode(),
        )
        registry.handle_message(Kind.ONLINE, terminal_id, b"online")
    phantoms = [
        functools.partial(
            registry.handle_message, Kind.HEARTBEAT, f"phantom-{n:04d}", b"1"
        )
        for n in range(1100)
    ]
    worst, mean = worst_message(phantoms)
    benign_ids = known if registered else ["phantom-1099"]
    benign, _ = worst_message(
        [
            functools.partial(
                registry.handle_message,
                Kind.HEARTBEAT,
                benign_ids[n % len(benign_ids)],
                b"1",
            )
            for n in range(1100)
        ]
    )
    prepared = TerminalRegistry.prepare(
        Kind.SKILLS,
        "real-body",
        json.dumps(spec_skills(terminal_id="real-body")).encode(),
    )
    registry.apply(prepared)
    return worst, mean, benign, registry.get("real-body") is not None


async def registry(_meter: Meter) -> list[Section]:
    """Class 5: heartbeat-only ids filling the registry, then a real body."""
    section = Section(
        "5",
        "Registry fill: 1,100 heartbeat-only ids, then a real body",
        "TerminalRegistry.handle_message (MAX_UNREGISTERED 256, oldest evicted)",
    )
    for registered in (0, 1000):
        worst, mean, benign, got_in = registry_fill(registered)
        section.rows.append(
            Row(
                f"phantoms, {registered:,} bodies registered",
                "1,100 msgs",
                "loop",
                worst,
                benign,
                f"worst message; mean {mean * 1000:.0f} µs; real body got in: "
                f"{'yes' if got_in else 'NO'}",
            )
        )
    return [section]


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
    """Do what ``transport.pump`` does with one frame."""
    decoded = None
    if len(raw) > untrusted.LOOP_JSON_BYTES:
        decoded = await asyncio.to_thread(decode_frame, raw, hub.max_message_bytes)
    hub.receive(agent, raw, decoded=decoded)


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


# -- 7. chat bodies and model replies ------------------------------------------------


def chat_body(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return a §4.2.1 chat body with ``inputs``."""
    return {"session_id": "s1", "terminal_id": TERMINAL, "inputs": inputs}


async def _serve_llm(kind: str) -> None:
    """Serve one 20 MiB completion (``kind`` "hostile" or "benign") until stdin closes."""
    size = 20 * 1024 * 1024
    content = "\x00\ud800" * (size // 12) if kind == "hostile" else "x" * size
    body = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()

    async def completion(_request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completion)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], len(body), flush=True)  # noqa: SLF001
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def model_reply_stall(meter: Meter, kind: str) -> tuple[float, int]:
    """Return the loop stall of one 20 MiB completion through ``OpenAICompatibleLLM``."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.hostile",
        "--serve-llm",
        kind,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        port, size = map(
            int, (await asyncio.wait_for(child.stdout.readline(), 60)).split()
        )
        llm = await asyncio.to_thread(
            OpenAICompatibleLLM, LLMEndpoint(f"http://127.0.0.1:{port}/v1", "m")
        )

        async def turn() -> None:
            try:
                reply = await llm.chat([{"role": "user", "content": "hi"}])
            except LLMResponseError:
                return  # over MAX_COMPLETION_BYTES: refused while reading
            untrusted.clean(reply.content, MAX_REPLY)

        await turn()  # warm the client up
        stall = await meter.stall(turn, rounds=min(meter.rounds, 3))
        await llm.close()
        return stall, size
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            await asyncio.wait_for(child.wait(), 10)
        except TimeoutError:
            child.kill()
            await child.wait()


async def chat(meter: Meter) -> list[Section]:
    """Class 7: chat bodies, tool-call arguments and a 20 MiB model reply."""
    section = Section(
        "7",
        "Chat bodies and model replies",
        "parse_chat_request and ChatPipeline._tool (untrusted.loads, depth 16) on the "
        "loop; untrusted.clean; OpenAICompatibleLLM.chat",
    )
    text = "x" * 4095
    hostile = chat_body(
        [{"type": "speech_text", "text": text + "y"}] * 31
        + [{"type": "speech_text", "text": text + "\x00"}]
    )
    benign = chat_body([{"type": "speech_text", "text": text + "y"}] * 32)
    section.rows.append(
        Row(
            "32 inputs × 4,096 chars, control char last",
            "128 Ki chars",
            "loop",
            meter.loop(quietly(parse_chat_request, hostile)),
            meter.loop(quietly(parse_chat_request, benign)),
        )
    )
    item_bytes = 500 * KIB  # what a 512 KiB HTTP body can carry

    def as_the_view(body: dict[str, Any]) -> Callable[[], object]:
        """Return the on-loop part of ChatView: parsing what the executor decoded."""
        raw = json.dumps(body).encode()
        try:
            decoded = untrusted.loads(raw, max_bytes=512 * KIB)
        except untrusted.UntrustedInputError:
            return lambda: None  # refused in the executor: a 400, nothing on the loop
        return quietly(parse_chat_request, decoded)

    for name, unit in (("depth-8 chains", chain(6)), ("empty arrays", "[]")):
        data = json.loads(json_array(unit, item_bytes))
        hostile = chat_body(
            [
                {"type": "speech_text", "text": "hi"},
                {"type": "sensor_state", "data": data},
            ]
        )
        benign = chat_body(
            [
                {"type": "speech_text", "text": "hi"},
                {"type": "sensor_state", "data": "x" * item_bytes},
            ]
        )
        section.rows.append(
            Row(
                f"context item of {name}",
                size_label(item_bytes),
                "loop",
                meter.loop(as_the_view(hostile)),
                meter.loop(as_the_view(benign)),
                "as ChatView: decoded in the executor (refused there past 10,000 "
                "containers), parsed on the loop; benign: a string of the same size",
            )
        )
    arguments = json_array(chain(15), MAX_ARGUMENTS_BYTES).decode()
    benign_arguments = json_array(BENIGN_OBJECT, MAX_ARGUMENTS_BYTES).decode()
    section.rows.append(
        Row(
            "tool-call arguments, depth-16 chains",
            size_label(MAX_ARGUMENTS_BYTES),
            "loop",
            meter.loop(
                quietly(
                    untrusted.loads,
                    arguments,
                    max_bytes=MAX_ARGUMENTS_BYTES,
                    max_depth=16,
                )
            ),
            meter.loop(
                quietly(
                    untrusted.loads,
                    benign_arguments,
                    max_bytes=MAX_ARGUMENTS_BYTES,
                    max_depth=16,
                )
            ),
        )
    )
    huge = "\x00\ud800" * (10 * 1024 * 1024)
    plain = "x" * (20 * 1024 * 1024)
    section.rows.append(
        Row(
            "untrusted.clean of a 20 Mi-char reply",
            "20 Mi chars",
            "loop",
            meter.loop(lambda: untrusted.clean(huge, MAX_REPLY)),
            meter.loop(lambda: untrusted.clean(plain, MAX_REPLY)),
        )
    )
    hostile_stall, size = await model_reply_stall(meter, "hostile")
    benign_stall, _ = await model_reply_stall(meter, "benign")
    section.rows.append(
        Row(
            "20 MiB completion (\\u0000\\ud800…) via openai",
            size_label(size),
            "stall",
            hostile_stall,
            benign_stall,
            "OpenAICompatibleLLM.chat + clean; benign: 20 MiB of x",
        )
    )
    return [section]


# -- 8. found by reading the code -----------------------------------------------------


_WORDS = [
    "开灯",
    "关灯",
    "闹钟",
    "提醒",
    "点头",
    "摇头",
    "音乐",
    "音量",
    "亮度",
    "颜色",
    "窗帘",
    "空调",
    "温度",
    "风扇",
    "电视",
    "播放",
]


def all_rules_intent(n: int) -> dict[str, Any]:
    """Return a catalog intent that uses every rule kind and every slot source."""
    word = _WORDS[n % len(_WORDS)]
    return {
        "id": f"intent_{n}",
        "name": f"意图{n}",
        "priority": n % 100,
        "match": {
            "keywords_any": [word, _WORDS[(n + 3) % 16], f"词{n}"],
            "negative_keywords": ["不要"],
            "regex_any": [r"(\d+)\s*(?:分钟|秒|小时)", r"(?:调到|设为)\s*(\d+)"],
            "entity_types_any": ["number", "time", "color"],
            "examples": [
                f"{word}然后{_WORDS[(n + 5) % 16]}三分钟后提醒我",
                f"把{word}调到50",
            ],
        },
        "slots": [
            {"name": "value", "regex": r"(\d+)", "regex_group": 1},
            {"name": "when", "from_time_key": "seconds", "time_kind": "duration"},
            {"name": "at", "from_time_key": "iso", "time_kind": "time_point"},
            {"name": "color", "from_entity_types": ["color"]},
            {"name": "brightness_level"},
            {"name": "mode"},
        ],
    }


def chat_validation(pattern: str) -> Callable[[], object]:
    """Return the synchronous span of a chat turn: filter, then 8 argument checks.

    As ``ChatPipeline._route`` → ``_execute`` do on the loop: the intent filter
    on the terminal's catalog, then ``_action_intent`` (``Skill.argument_errors``)
    for each ready intent, before the first ``await``.
    """
    registry = TerminalRegistry()
    schema = {
        "type": "object",
        "properties": {
            name: {"type": "string", "pattern": pattern} for name in ("text", "text2")
        },
    }
    skills = {"skills": [{"name": "say", "input_schema": schema}]}
    registry.handle_message(Kind.SKILLS, TERMINAL, json.dumps(skills).encode())
    registry.handle_message(Kind.ONLINE, TERMINAL, b"online")
    catalog = [
        {
            "id": f"say_{n}",
            "match": {"keywords_any": [f"kw{n}"]},
            "slots": [
                {"name": "skill", "default": "say"},
                {"name": "text", "regex": "(a+x)"},
                {"name": "text2", "regex": "(a+x)"},
            ],
        }
        for n in range(8)
    ]
    registry.handle_message(
        Kind.INTENT_CATALOG, TERMINAL, json.dumps({"intent_catalog": catalog}).encode()
    )
    pipeline = ChatPipeline(registry, None, None, None, None, clock=time.monotonic)  # type: ignore[arg-type]
    command = "，".join(f"kw{n} {'a' * 80}x" for n in range(8))

    def turn() -> None:
        response = registry.filter_command(
            TERMINAL, {"command": command}, default_timezone="UTC"
        )
        ready = [i for i in response["intents"] if i.get("status") == "ready"]
        pipeline._valid_intents(TERMINAL, ready)  # noqa: SLF001

    return turn


async def found(meter: Meter) -> list[Section]:
    """Class 8: attacks found by reading the code."""
    section = Section(
        "8",
        "Found by reading the code",
        "filter_intents / registry.filter_command, ChatPipeline._action_intent, "
        "analyze_emotion, Invoker (argument_errors in the executor)",
    )
    desk = json.loads(DESK_ROBOT.read_text(encoding="utf-8"))
    ordinary = cut(ORDINARY_ZH + "，", 2000)
    shared = [
        {"id": f"intent_{n}", "match": {"keywords_any": [*_WORDS[:10], "灯"]}}
        for n in range(16)
    ]
    for name, entries, command in (
        ("one keyword 2,000 times, desk-robot catalog", desk, "灯" * 2000),
        ("one keyword 2,000 times, 16 intents share it", shared, "灯" * 2000),
    ):
        cached_catalog(entries)
        section.rows.append(
            Row(
                name,
                "2,000 chars",
                "loop",
                meter.loop(
                    quietly(
                        filter_intents, {"command": command, "intent_catalog": entries}
                    )
                ),
                meter.loop(
                    quietly(
                        filter_intents, {"command": ordinary, "intent_catalog": entries}
                    )
                ),
                "benign: an ordinary 2,000-char command",
            )
        )
    rules = [all_rules_intent(n) for n in range(256)]
    cached_catalog(rules)
    timey = cut("明天早上8点半，3分钟后，1.5小时，二十五，下午三点一刻，", 2000)
    section.rows.append(
        Row(
            "times, numbers, separators vs 256 all-rule intents",
            "2,000 chars",
            "loop",
            meter.loop(
                quietly(
                    filter_intents,
                    {"command": timey, "intent_catalog": rules, "now": NOW},
                )
            ),
            meter.loop(
                quietly(
                    filter_intents,
                    {"command": ordinary, "intent_catalog": rules, "now": NOW},
                )
            ),
            "benign: an ordinary 2,000-char command, same catalog",
        )
    )
    section.rows.append(
        Row(
            "chat turn: 8 intents × schema pattern (a|aa)+$",
            "8 × 85 chars",
            "loop",
            meter.loop(chat_validation("(a|aa)+$")),
            meter.loop(chat_validation(ordinary_pattern(len("(a|aa)+$")))),
            "filter_command + ChatPipeline._action_intent × 8",
        )
    )
    cues = cut("太开心了！！！好难过啊真的很生气，", 4096)
    section.rows.append(
        Row(
            "analyze_emotion on 4,096 chars of cues",
            "4,096 chars",
            "loop",
            meter.loop(lambda: analyze_emotion(cues)),
            meter.loop(
                lambda: analyze_emotion(cut("今天天气一般我们去吃饭吧，", 4096))
            ),
        )
    )
    unique = protocol.parse_skill(
        {
            "name": "store",
            "input_schema": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {"type": "object"},
                    }
                },
            },
        }
    )
    plain = protocol.parse_skill(
        {
            "name": "store",
            "input_schema": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "object"}}},
            },
        }
    )
    items = [{"k": 0, "v": [0, n]} for n in range(800)]
    size = len(json.dumps({"items": items}))
    busy: list[float] = []

    async def check(skill: protocol.Skill) -> None:
        started = time.perf_counter()
        await in_executor(lambda: skill.argument_errors({"items": items}))
        busy.append(time.perf_counter() - started)

    section.rows.append(
        Row(
            "uniqueItems over 800 objects (Invoker)",
            size_label(size),
            "stall",
            await meter.stall(lambda: check(unique), rounds=1),
            await meter.stall(lambda: check(plain), rounds=1),
            f"executor busy {busy[0] * 1000:,.0f} ms (quadratic: 64 KiB ≈ 16×); "
            f"benign: no uniqueItems",
        )
    )
    return [section]


# -- report ------------------------------------------------------------------------------


def print_section(section: Section) -> None:
    """Print a class's inputs."""
    print(f"\n{section.number}. {section.title}")
    print(f"   path: {section.path}")
    print(
        f"   {'input':<56}{'size':>16}{'how':>7}{'hostile':>11}{'benign':>10}"
        f"{'ratio':>9}  verdict"
    )
    for row in section.rows:
        benign = "-" if row.benign is None else f"{row.benign:.3f}"
        print(
            f"   {row.name:<56}{row.size:>16}{row.how:>7}{row.hostile:>11.3f}"
            f"{benign:>10}{row.ratio:>9}  {'PASS' if row.ok else 'FAIL'}"
        )
        if row.note:
            print(f"   {'':<4}↳ {row.note}")


def print_summary(sections: list[Section]) -> None:
    """Print one row per class: its worst input against the budget and the benign twin."""
    print(f"\nSummary: the worst input of each class against {BUDGET_MS:g} ms (ms)")
    print(
        f"   {'class':<48}  {'worst input':<50}{'hostile':>10}{'benign':>10}"
        f"{'ratio':>9}  verdict"
    )
    for section in sections:
        row = section.worst
        benign = "-" if row.benign is None else f"{row.benign:.2f}"
        print(
            f"   {section.number + ' ' + section.title:<48.48}  {row.name:<50.50}"
            f"{row.hostile:>10.2f}{benign:>10}{row.ratio:>9}"
            f"  {'PASS' if row.ok else 'FAIL'}"
        )
    failed = [s.number for s in sections if not s.worst.ok]
    print(
        f"{len(sections) - len(failed)} of {len(sections)} classes within "
        f"{BUDGET_MS:g} ms" + (f"; over it: {', '.join(failed)}" if failed else "")
    )


def clear_caches() -> None:
    """Empty the product's compile caches, so one class does not warm the next."""
    clear_compile_cache()
    safe_regex.compile_untrusted.cache_clear()
    protocol._compile_schema.cache_clear()  # noqa: SLF001
    gc.collect()


async def idle_stall() -> float:
    """Return the ticker's worst lateness on an idle loop over 200 ms."""
    async with Ticker() as ticker:
        await asyncio.sleep(0.2)
    return ticker.worst


CLASSES: dict[str, Callable[..., Awaitable[list[Section]]]] = {
    "1": poisoned_json,
    "2": regexes,
    "3": catalogs,
    "4": schema_flood,
    "5": registry,
    "6": star_frames,
    "7": chat,
    "8": found,
}


async def _main(args: argparse.Namespace) -> int:
    meter = Meter(args.rounds)
    chosen = args.classes.split(",") if args.classes else list(CLASSES)
    print(
        f"Hostile inputs against the event loop's budget of {BUDGET_MS:g} ms per input"
    )
    print(
        f"Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, GIL switch interval "
        f"{sys.getswitchinterval() * 1000:g} ms, idle ticker lateness "
        f"{await idle_stall():.2f} ms; loop = median wall time of {args.rounds} "
        "rounds, stall = worst lateness of a 1 ms ticker"
    )
    sections: list[Section] = []
    started = time.perf_counter()
    for key in chosen:
        clear_caches()
        measure = CLASSES[key]
        new = await (
            measure(meter, args.flood_seconds) if key == "4" else measure(meter)
        )
        for section in new:
            print_section(section)
        sections += new
    print_summary(sections)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 1 if args.check and any(not s.worst.ok for s in sections) else 0


def main() -> None:
    """Measure and print; with ``--check`` exit 1 when a class misses the budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per input")
    parser.add_argument(
        "--quick", action="store_true", help="one round per input, shorter floods"
    )
    parser.add_argument(
        "--flood-seconds", type=float, default=6.0, help="cap of each schema flood"
    )
    parser.add_argument("--classes", help="comma-separated class numbers (1-8)")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a class misses the budget"
    )
    parser.add_argument(
        "--serve-llm", choices=("hostile", "benign"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve_llm:
        asyncio.run(_serve_llm(args.serve_llm))
        return
    if args.quick:
        args.rounds = 1
        args.flood_seconds = min(args.flood_seconds, 2.0)
    logging.disable(logging.CRITICAL)
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
