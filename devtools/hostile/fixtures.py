"""The run's fixtures: its souls, bodies and Star human, and their clean-up."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from devtools.hostile.context import Context
from devtools.hostile.mqtt import Body
from devtools.hostile.payloads import (
    EVIL_PATTERN,
    EVIL_PATTERN2,
    SIMPLE_CATALOG,
    catalog,
    good_skills,
)
from devtools.hostile.starclient import StarClient


async def setup(ctx: Context) -> None:
    """Find the Soul entry, make the run's souls and bodies, connect the Star human."""
    ha = ctx.ha
    for role, token in (
        ("admin", ctx.admin),
        ("user", ctx.user),
        ("readonly", ctx.readonly),
    ):
        ws = await ha.ws(token)
        me = await ws.result("auth/current_user")
        await ws.close()
        ctx.user_ids[role] = me["id"]
        if (role == "admin") != bool(me.get("is_admin")):
            raise RuntimeError(
                f"the {role} token belongs to {me['name']!r}: is_admin={me.get('is_admin')}"
            )
    entries = await ctx.admin_ws.result("config_entries/get", domain="soul")
    loaded = [e for e in entries if e.get("state") == "loaded"]
    if not loaded:
        raise RuntimeError(
            "Soul is not set up (no loaded soul config entry); try --bootstrap"
        )
    ctx.entry_id = loaded[0]["entry_id"]
    for role in ("base", "evil"):
        reply = await ha.request(
            "POST",
            "/api/soul/v1/souls",
            ctx.admin,
            body={"name": f"hx{ctx.run}-{role}", "mbti_type": "ENFP"},
        )
        if reply.status != 201:
            raise RuntimeError(f"could not create a soul: {reply.brief()}")
        ctx.souls[role] = reply.json()["soul_id"]
    bodies: dict[str, tuple[dict[str, Any], str | None]] = {}
    base = ctx.terminals["base"] = ctx.tid("base")
    bodies[base] = (good_skills(base), catalog(base, SIMPLE_CATALOG))
    evil = ctx.terminals["evil"] = ctx.tid("evil")
    evil_skill = {
        "name": "evil_pattern",
        "description": "a pattern that backtracks",
        "input_schema": {
            "type": "object",
            "properties": {
                "s": {"type": "string", "pattern": EVIL_PATTERN},
                "t": {"type": "string", "pattern": EVIL_PATTERN2},
            },
            "required": ["s"],
        },
    }
    evil_catalog = [
        {
            "id": "evil",
            "name": "evil",
            "match": {"regex_any": [EVIL_PATTERN, EVIL_PATTERN2]},
        },
        *SIMPLE_CATALOG,
    ]
    bodies[evil] = (good_skills(evil, extra=[evil_skill]), catalog(evil, evil_catalog))
    refs = ctx.terminals["refs"] = ctx.tid("refs")
    laughs = {
        "$defs": {
            f"d{i}": {
                "anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]
            }
            for i in range(24)
        }
        | {"d24": {"type": "integer"}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d0"}},
    }
    bodies[refs] = (
        good_skills(
            refs,
            extra=[
                {"name": "ref_self", "input_schema": {"$ref": "#"}},
                {
                    "name": "ref_dangling",
                    "input_schema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}},
                },
                {"name": "ref_laughs", "input_schema": laughs},
            ],
        ),
        None,
    )  # fmt: skip
    for terminal_id, role in ((base, "base"), (evil, "evil")):
        reply = await ha.request(
            "POST",
            "/api/soul/v1/souls/select",
            ctx.admin,
            body={"terminal_id": terminal_id, "soul_id": ctx.souls[role]},
        )
        if reply.status != 200:
            raise RuntimeError(f"could not bind {terminal_id}: {reply.brief()}")
    for terminal_id, (skills, catalog_payload) in bodies.items():
        ctx.body.announce(terminal_id, skills, catalog_payload)
    for terminal_id in bodies:
        if await ctx.wait_device(terminal_id, 30) is None:
            raise RuntimeError(f"body {terminal_id} never became a device")
    for terminal_id in (base, evil):
        reply = await ctx.wait_catalog(terminal_id)
        if reply.status != 200:
            raise RuntimeError(
                f"the catalog of {terminal_id} never worked: {reply.brief()}"
            )
    ctx.star["human"] = await StarClient.connect(
        ha.session, ha.url, f"human/hx{ctx.run}-h", ctx.admin
    )
    print(
        f"setup: run {ctx.run}; Soul entry {ctx.entry_id}; souls {ctx.souls}; "
        f"bodies {sorted(bodies)}",
        flush=True,
    )


async def cleanup(ctx: Context) -> None:
    """Remove what the run created: retained messages (terminals) and souls."""
    for client in ctx.star.values():
        await client.close()
    await asyncio.to_thread(ctx.body.clear)
    for soul_id in ctx.souls.values():
        with contextlib.suppress(Exception):
            await ctx.admin_ws.result(
                "config_entries/subentries/delete",
                entry_id=ctx.entry_id,
                subentry_id=soul_id,
            )


async def heartbeat_loop(body: Body) -> None:
    """Keep the run's live terminals fresh (§3.5: every 10 s)."""
    while True:
        await asyncio.to_thread(body.heartbeats)
        await asyncio.sleep(10)
