"""Group 1: lone surrogates in a soul name, a soul_hint, chat fields, a Star frame."""

from __future__ import annotations

import asyncio
import json

from devtools.hostile.context import Context, Verdict, status_is, verdict_of
from devtools.hostile.payloads import chat_body, good_skills


async def check_poisoned_storage(ctx: Context) -> None:
    """Lone surrogates in a soul name, a soul_hint and chat fields."""
    ha = ctx.ha

    async def soul_name() -> Verdict:
        parts = []
        escaped = b'{"name": "hx evil \\ud800 soul", "mbti_type": "INTJ"}'
        reply = await ha.request("POST", "/api/soul/v1/souls", ctx.admin, raw=escaped)
        parts.append((status_is(reply, 400), f"\\ud800 escape: {reply.brief(60)}"))
        encoded = b'{"name": "hx evil ' + b"\xed\xa0\x80" + b'", "mbti_type": "INTJ"}'
        reply = await ha.request("POST", "/api/soul/v1/souls", ctx.admin, raw=encoded)
        parts.append((status_is(reply, 400), f"CESU-8 bytes: {reply.brief(60)}"))
        return verdict_of(parts)

    await ctx.check("1.1", "surrogate in a soul name (POST /souls, admin)", soul_name)

    async def soul_hint() -> Verdict:
        terminal_id = ctx.tid("hint")
        before = {s["soul_id"] for s in await ctx.souls_list()}
        # Devices named before (an older Soul's names, cleaned to U+FFFD by
        # entry 1.3) are not this input's doing.
        known = {d["id"] for d in await ctx.devices()}
        poisoned = (
            json.dumps(good_skills(terminal_id))[:-1] + ', "soul_hint": "x\\ud800"}'
        )
        ctx.body.publish(terminal_id, "online", "online", retain=True)
        ctx.body.publish(terminal_id, "skills", poisoned, retain=True)
        await asyncio.sleep(3)
        device = await ctx.device_of(terminal_id)
        bad_names = [
            d.get("name")
            for d in await ctx.devices()
            if d["id"] not in known
            and any(
                0xD800 <= ord(ch) <= 0xDFFF or ch == "\ufffd"
                for ch in (d.get("name") or "") + (d.get("model") or "")
            )
        ]
        after = await ctx.souls_list()
        new = [s for s in after if s["soul_id"] not in before]
        parts = [
            (device is None, "no device from the poisoned snapshot"),
            (not new, f"no soul created (new: {[s['name'] for s in new]})"),
            (not bad_names, f"no device with a bad name {bad_names[:3]}"),
        ]
        # Control: the same body without the hint is heard (the message was processed).
        ctx.body.publish(
            terminal_id, "skills", json.dumps(good_skills(terminal_id, 2)), retain=True
        )
        ctx.body.alive.add(terminal_id)
        device = await ctx.wait_device(terminal_id, 20)
        name = None if device is None else device.get("name")
        parts.append(
            (
                device is not None and name == terminal_id,
                f"control snapshot without hint → device {name!r}",
            )
        )
        return verdict_of(parts)

    await ctx.check("1.2", "surrogate in a body's soul_hint (MQTT)", soul_hint)

    async def chat_fields() -> Verdict:
        terminal_id = ctx.terminals["base"]
        parts = []
        body = json.dumps(chat_body(terminal_id, "SESSION")).replace(
            "SESSION", "hx\\ud800s"
        )
        reply = await ha.request(
            "POST", "/api/soul/v1/chat", ctx.admin, raw=body.encode()
        )
        parts.append((status_is(reply, 400), f"session_id: {reply.brief(60)}"))
        body = json.dumps(chat_body(terminal_id, f"hx{ctx.run}-s", "TEXT")).replace(
            "TEXT", "hi \\udfff there"
        )
        reply = await ha.request(
            "POST", "/api/soul/v1/chat", ctx.admin, raw=body.encode()
        )
        parts.append((status_is(reply, 400), f"text: {reply.brief(60)}"))
        reply = await ha.request("GET", "/api/soul/v1/souls", ctx.admin)
        parts.append((status_is(reply, 200), f"GET /souls {reply.status}"))
        return verdict_of(parts)

    await ctx.check("1.3", "surrogate in chat session_id and text", chat_fields)

    async def star_frame() -> Verdict:
        client = ctx.star["human"]
        seen = len(client.errors("VALIDATION_ERROR"))
        frame = json.dumps(
            client.message({"id": "nobody-here", "type": "agent"}, {"t": "SUR"})
        ).replace("SUR", "\\ud800")
        await client.send(frame)
        got = await client.wait(lambda c: len(c.errors("VALIDATION_ERROR")) > seen, 5)
        return bool(got) and not client.closed, (
            "VALIDATION_ERROR, still connected" if got else "no VALIDATION_ERROR"
        )

    await ctx.check("1.4", "surrogate in a Star frame", star_frame)
