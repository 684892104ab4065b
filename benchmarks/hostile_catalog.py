"""Classes 3-5 of ``benchmarks.hostile``: catalogs, skills and the registry.

3 big catalogs through ``SnapshotIngest`` (parsed in the executor) and the
filter afterwards, 4 a flood of skills snapshots with new schemas, 5 filling
the registry with heartbeat-only ids before a real body arrives. ``Ingestion``
(a ``SnapshotIngest`` that counts its parses) serves 3 and 4. A helper module,
not a benchmark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import functools
import json
import time
from typing import Any

from benchmarks.hostile_meter import (
    NOW,
    ORDINARY_ZH,
    TERMINAL,
    Meter,
    Row,
    Section,
    cut,
    four_letter_words,
    quietly,
    simplified_han,
    size_label,
    split_even,
    worst_message,
)
from custom_components.soul.core.ingest import SnapshotIngest
from custom_components.soul.core.intent_filter import clear_compile_cache
from custom_components.soul.core.registry import TerminalRegistry
from custom_components.soul.core.topics import Kind
from tests.core.spec_payloads import skills as spec_skills

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
