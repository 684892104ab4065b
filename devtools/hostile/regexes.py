"""Group 2: untrusted regexes with catastrophic backtracking, through every door."""

from __future__ import annotations

import time

from devtools.hostile.context import Context, Verdict, status_is, verdict_of
from devtools.hostile.payloads import (
    EVIL_PATTERN,
    EVIL_PATTERN2,
    EVIL_TEXT,
    EVIL_TEXT2,
    SIMPLE_CATALOG,
    catalog,
    chat_body,
    choice_ladder,
    good_skills,
    regex_catalog,
)


async def check_regexes(ctx: Context) -> None:
    """Catastrophic backtracking through every door."""
    ha = ctx.ha

    async def inline() -> Verdict:
        parts = []
        for n, (pattern, text) in enumerate(
            ((EVIL_PATTERN, EVIL_TEXT), (EVIL_PATTERN2, EVIL_TEXT2))
        ):
            body = {
                "command": text,
                "intent_catalog": [
                    {"id": f"evil{n}", "match": {"regex_any": [pattern]}},
                    *SIMPLE_CATALOG,
                ],
            }
            for attempt in ("first", "again"):
                reply = await ha.request(
                    "POST", "/api/soul/v1/intents/filter", ctx.admin, body=body
                )
                meta = (reply.json() or {}).get("meta") or {}
                warnings = meta.get("warnings") or []
                parts.append(
                    (
                        status_is(reply, 200, 400) and reply.elapsed < 1.0,
                        f"{pattern[:12]}… {attempt}: {reply.status} in "
                        f"{reply.elapsed * 1000:.0f} ms, {len(warnings)} warnings",
                    )
                )
        return verdict_of(parts)

    await ctx.check("2.1", "evil regex_any inline (POST /intents/filter)", inline)

    async def choices() -> Verdict:
        # 256 literal choices at their step bound, one catalog's cap.
        text = "a" * 80 + "#"
        ladder = choice_ladder(len(text))
        body = {
            "command": text,
            "intent_catalog": regex_catalog([ladder] * 32, intents=8),
        }
        parts = []
        for attempt in ("first", "again"):
            reply = await ha.request(
                "POST", "/api/soul/v1/intents/filter", ctx.admin, body=body
            )
            parts.append(
                (
                    status_is(reply, 200) and reply.elapsed < 1.0,
                    f"{attempt}: {reply.status} in {reply.elapsed * 1000:.0f} ms",
                )
            )
        return verdict_of(parts)

    await ctx.check(
        "2.1b",
        "256 literal choices at their step bound (POST /intents/filter)",
        choices,
    )

    async def body_catalog() -> Verdict:
        terminal_id = ctx.terminals["evil"]
        parts = []
        for text in (EVIL_TEXT, EVIL_TEXT2, EVIL_TEXT2):
            reply = await ha.request(
                "POST",
                "/api/soul/v1/chat",
                ctx.admin,
                body=chat_body(terminal_id, f"hx{ctx.run}-evil", text),
            )
            decision = (reply.json() or {}).get("intent_decision")
            parts.append(
                (
                    status_is(reply, 200) and reply.elapsed < 3.0,
                    f"chat {len(text)} chars: {reply.status} in "
                    f"{reply.elapsed * 1000:.0f} ms ({decision})",
                )
            )
        return verdict_of(parts)

    await ctx.check(
        "2.2", "evil regex_any in a body's catalog, then chat", body_catalog
    )

    async def schema_pattern() -> Verdict:
        device = await ctx.device_of(ctx.terminals["evil"])
        if device is None:
            return False, "the evil body has no device"
        parts = []
        for arguments in ({"s": EVIL_TEXT}, {"s": "ab", "t": EVIL_TEXT2}):
            data = {
                "device_id": device["id"],
                "skill": "evil_pattern",
                "arguments": arguments,
            }
            reply = await ctx.call_service(
                ctx.admin, "invoke_skill", data, response=True
            )
            started = time.monotonic()
            answer = await ctx.admin_ws.call(
                "call_service",
                domain="soul",
                service="invoke_skill",
                service_data=data,
                return_response=True,
            )
            ws_time = time.monotonic() - started
            error = answer.get("error") or {}
            clear = answer.get("success") or error.get("code") in (
                "service_validation_error",
                "home_assistant_error",
            )
            parts.append(
                (
                    bool(clear) and reply.elapsed < 3.0 and ws_time < 3.0,
                    f"{sorted(arguments)}: REST {reply.status} in "
                    f"{reply.elapsed * 1000:.0f} ms; WS {ws_time * 1000:.0f} ms "
                    f"{error.get('code') or 'success'} "
                    f"{str(error.get('message'))[-60:]!r}",
                )
            )
        return verdict_of(parts)

    await ctx.check(
        "2.3", "evil schema pattern, then soul.invoke_skill", schema_pattern
    )


async def check_shared_poison(ctx: Context) -> None:
    """One body's command must not disable an identical body's pattern."""

    async def shared() -> Verdict:
        entries = [
            {
                "id": f"victim{ctx.run}",
                "name": "victim",
                "priority": 90,
                "match": {"regex_any": [EVIL_PATTERN2]},
                "slots": [{"name": "skill", "default": "say_hi"}],
            }
        ]
        bodies = [ctx.tid("twin1"), ctx.tid("twin2")]
        for terminal_id in bodies:
            ctx.body.announce(
                terminal_id, good_skills(terminal_id), catalog(terminal_id, entries)
            )
        for terminal_id in bodies:
            if (await ctx.wait_catalog(terminal_id)).status != 200:
                return False, f"the catalog of {terminal_id} never worked"

        async def decide(token: str, terminal_id: str, command: str) -> str:
            reply = await ctx.ha.request(
                "POST",
                "/api/soul/v1/intents/filter",
                token,
                body={"command": command, "terminal_id": terminal_id},
            )
            return ((reply.json() or {}).get("decision") or {}).get(
                "action", f"HTTP {reply.status}"
            )

        before = await decide(ctx.admin, bodies[1], "aaaa")
        attack = await decide(ctx.user, bodies[0], EVIL_TEXT2)
        own = await decide(ctx.admin, bodies[0], "aaaa")
        after = await decide(ctx.admin, bodies[1], "aaaa")
        return verdict_of(
            [
                (before == "execute_intents", f"twin2 'aaaa' before: {before}"),
                (True, f"non-admin's slow command on twin1: {attack}"),
                (True, f"twin1 'aaaa' after: {own}"),
                (after == before, f"twin2 (untouched) 'aaaa' after: {after}"),
            ]
        )

    await ctx.check(
        "2.4", "a pattern timed out on one body stays on for its twin", shared
    )
