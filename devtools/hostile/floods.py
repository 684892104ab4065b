"""Groups 3-5: a huge catalog, a flood of schemas, a registry full of phantoms."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from devtools.hostile.context import (
    Context,
    Verdict,
    log_lines,
    log_size,
    status_is,
    verdict_of,
)
from devtools.hostile.payloads import SIMPLE_CATALOG, catalog, good_skills


def huge_catalog(terminal_id: str, version: int) -> str:
    """Return a ~143 KB catalog of 20,000 short keywords (40 intents of 500)."""
    keywords = [f"{i:04x}" for i in range(20000)]
    return json.dumps(
        {
            "terminal_id": terminal_id,
            "catalog_version": version,
            "intent_catalog": [
                {
                    "id": f"k{n}",
                    "match": {"keywords_any": keywords[n * 500 : n * 500 + 500]},
                }
                for n in range(40)
            ],
        },
        separators=(",", ":"),
    )


async def check_huge_catalog(ctx: Context) -> None:
    """Send a retained catalog of 20,000 keywords: refused, HA responsive."""

    async def retained() -> Verdict:
        terminal_id = ctx.tid("huge")
        ctx.body.announce(
            terminal_id, good_skills(terminal_id), catalog(terminal_id, SIMPLE_CATALOG)
        )
        reply = await ctx.wait_catalog(terminal_id)
        if reply.status != 200:
            return False, f"the small catalog never worked: {reply.brief()}"
        payload = huge_catalog(terminal_id, 2)
        log_mark = log_size(ctx)
        ctx.body.publish(terminal_id, "intent_catalog", payload, retain=True)
        await asyncio.sleep(6)
        reply = await ctx.filter_on(terminal_id)
        size = ((reply.json() or {}).get("meta") or {}).get("catalog_size")
        parts = [
            (
                reply.status == 200 and size == 1,
                f"{len(payload) / 1000:.0f} KB catalog: filter still uses the old "
                f"one (catalog_size {size})",
            )
        ]
        line = log_lines(ctx, log_mark, f"intent_catalog of terminal {terminal_id}")
        if line is not None:
            parts.append((bool(line), f"log: {line[-1][:150] if line else 'no line'}"))
        return verdict_of(parts)

    await ctx.check("3.1", "retained 143 KB catalog, 20,000 keywords", retained)

    async def inline() -> Verdict:
        entries = json.loads(huge_catalog("x", 1))["intent_catalog"]
        reply = await ctx.ha.request(
            "POST",
            "/api/soul/v1/intents/filter",
            ctx.admin,
            body={"command": "turn on the light", "intent_catalog": entries},
        )
        return status_is(reply, 400) and reply.elapsed < 2, reply.brief()

    await ctx.check("3.2", "the same catalog inline (POST /intents/filter)", inline)


def schema_snapshot(terminal_id: str, n: int) -> str:
    """Return a snapshot of 64 skills whose schemas no earlier snapshot had."""
    return json.dumps(
        {
            "terminal_id": terminal_id,
            "skill_version": n + 1,
            "skills": [
                {
                    "name": f"skill_{j}",
                    "description": "flood",
                    "input_schema": {
                        "type": "object",
                        "properties": {
                            f"p{n}_{j}": {"type": "string", "maxLength": n * 64 + j + 1}
                        },
                        "required": [f"p{n}_{j}"],
                    },
                }
                for j in range(64)
            ],
        }
    )


async def check_schema_flood(ctx: Context) -> None:
    """300 snapshots of 64 new schemas each, from one terminal and from many."""

    async def flood(terminal_ids: list[str], per_terminal: int) -> Verdict:
        started = time.monotonic()
        for terminal_id in terminal_ids:
            ctx.body.publish(terminal_id, "online", "online", retain=True)
        payloads = [
            (terminal_id, schema_snapshot(terminal_id, n))
            for n in range(per_terminal)
            for terminal_id in terminal_ids
        ]
        for terminal_id, payload in payloads:
            ctx.body.publish(terminal_id, "skills", payload, retain=True, wait=False)
        # A marker body: once it has a device the flood ahead of it was parsed.
        marker = ctx.tid(f"mark{len(terminal_ids)}")
        ctx.body.announce(marker, good_skills(marker))
        device = await ctx.wait_device(marker, 120)
        await asyncio.sleep(8)  # coalesced leftovers wait up to 6 s for a token
        flooded = [await ctx.device_of(t) for t in terminal_ids]
        return device is not None and all(flooded), (
            f"{len(payloads)} snapshots ({sum(len(p) for _t, p in payloads) / 1e6:.1f} MB)"
            f" published; marker body device after "
            f"{time.monotonic() - started:.1f} s; {sum(map(bool, flooded))}/"
            f"{len(terminal_ids)} flooding terminals are devices"
        )

    await ctx.check(
        "4.1", "300 snapshots × 64 new schemas, one terminal",
        lambda: flood([ctx.tid("flood")], 300),
    )  # fmt: skip
    count = ctx.args.flood_terminals
    await ctx.check(
        "4.2", f"300 snapshots × 64 new schemas over {count} terminals",
        lambda: flood([ctx.tid(f"fl{i}") for i in range(count)], 300 // count),
    )  # fmt: skip


async def check_registry_fill(ctx: Context) -> None:
    """1,100 heartbeat-only ids, then a real body still becomes a device."""

    async def control() -> Verdict:
        terminal_id = ctx.terminals["base"]
        for _ in range(1100):
            ctx.body.publish(terminal_id, "heartbeat", "1", qos=0, wait=False)
        await asyncio.sleep(2)
        return True, "1,100 heartbeats of one known body (what MQTT alone costs)"

    await ctx.check("5.0", "control: 1,100 heartbeats of a registered body", control)

    async def fill() -> Verdict:
        for i in range(1100):
            ctx.body.publish(ctx.tid(f"ph{i:04d}"), "heartbeat", "1", qos=0, wait=False)
        await asyncio.sleep(2)
        terminal_id = ctx.tid("real")
        ctx.body.announce(terminal_id, good_skills(terminal_id))
        device = await ctx.wait_device(terminal_id, 30)
        phantoms = [
            d
            for d in await ctx.devices()
            if any(i[1].startswith(ctx.tid("ph")) for i in d.get("identifiers", []))
        ]
        return device is not None and not phantoms, (
            f"real body device: {'yes' if device else 'NO'}; "
            f"devices for heartbeat-only ids: {len(phantoms)}"
        )

    await ctx.check("5.1", "1,100 heartbeat-only ids, then a real body", fill)

    async def flap() -> Verdict:
        terminal_id = ctx.tid("flap")
        ctx.body.announce(terminal_id, good_skills(terminal_id))
        device = await ctx.wait_device(terminal_id, 30)
        if device is None:
            return False, "the flapping body never became a device"
        await asyncio.sleep(1)
        entities = {
            entry["entity_id"]
            for entry in await ctx.admin_ws.result("config/entity_registry/list")
            if entry.get("device_id") == device["id"]
        }
        changes = await ctx.admin_ws.subscribe("state_changed")
        for n in range(2000):
            state = "offline" if n % 2 == 0 else "online"
            ctx.body.publish(terminal_id, "online", state, qos=0, wait=False)
        ctx.body.publish(terminal_id, "online", "offline", qos=0, wait=False)
        await asyncio.sleep(12)  # the held change is told within 10 s
        writes: list[dict[str, Any]] = []
        while not changes.empty():
            event = changes.get_nowait()
            data = event.get("data", {})
            if data.get("entity_id") in entities:
                writes.append(data)
        last = {w["entity_id"]: (w.get("new_state") or {}).get("state") for w in writes}
        offline = [
            e for e, state in last.items() if "connectivity" in e and state == "off"
        ]
        return len(writes) <= 60 and bool(offline), (
            f"2,001 online messages: {len(writes)} state writes of its entities"
            f" (before the fix: 6 a message); connectivity off at the end: "
            f"{'yes' if offline else 'NO'}"
        )

    await ctx.check("5.2", "a body flaps its online 2,000 times", flap)

    async def churn() -> Verdict:
        terminal_id = ctx.tid("churn")

        def renamed(round_: int) -> dict[str, Any]:
            picks = [
                {
                    "name": f"pick_{round_}_{n}",
                    "description": "d",
                    "input_schema": {
                        "type": "object",
                        "properties": {"o": {"type": "string", "enum": ["a", "b"]}},
                        "required": ["o"],
                    },
                }
                for n in range(16)
            ]
            return {
                "terminal_id": terminal_id,
                "skill_version": round_,
                "skills": picks,
            }

        ctx.body.announce(terminal_id, renamed(1))
        if await ctx.wait_device(terminal_id, 30) is None:
            return False, "the renaming body never became a device"
        await asyncio.sleep(1)
        updates = await ctx.admin_ws.subscribe("entity_registry_updated")
        for round_ in range(2, 12):  # within the snapshots' burst of 10
            ctx.body.publish(terminal_id, "skills", json.dumps(renamed(round_)))
        await asyncio.sleep(8)
        removed = 0
        while not updates.empty():
            event = updates.get_nowait()
            removed += event.get("data", {}).get("action") == "remove"
        return removed <= 48, (
            f"10 snapshots renaming 16 select skills: {removed} entities removed"
            " (Home Assistant keeps each as a deleted entity; without the"
            " budget 16 a snapshot applied)"
        )

    await ctx.check("5.3", "a body renames its 16 skills in 10 snapshots", churn)
