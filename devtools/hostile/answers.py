"""Group 8: hostile inputs get 4xx answers (or Star errors), never 500s."""

from __future__ import annotations

import json

from devtools.hostile.context import Context, Verdict, status_is, verdict_of
from devtools.hostile.payloads import SIMPLE_CATALOG, chat_body
from devtools.hostile.starclient import PERMISSION, StarClient, outcome_of

BAD_TIMEZONES = ("/etc/passwd", "../x", "Asia/Shanghai/", "A" * 5000)

VIEWS = (
    "/api/soul/v1/intents/filter",
    "/api/soul/v1/souls",
    "/api/soul/v1/souls/select",
    "/api/soul/v1/emotion/analyze",
    "/api/soul/v1/chat",
)


async def check_answers(ctx: Context) -> None:
    """Hostile inputs that used to end in 500s get 4xx answers."""
    ha = ctx.ha

    async def deep_json() -> Verdict:
        parts = []
        for name, raw in (
            ("100,000 '['", b"[" * 100_000),
            ("30,000 '{\"a\":'", b'{"a":' * 30_000),
            ("depth 40, balanced", b"[" * 40 + b"]" * 40),
            ("not JSON", b"<html>nope</html>"),
            ("invalid UTF-8", b'{"text": "\xff\xfe"}'),
        ):
            for view in VIEWS:
                reply = await ha.request("POST", view, ctx.admin, raw=raw)
                ok = 400 <= reply.status < 500
                if not ok or view == VIEWS[0]:
                    parts.append((ok, f"{name} → {view[12:]}: {reply.status}"))
        return verdict_of(parts)

    await ctx.check("8.1", "deep / broken JSON on every view", deep_json)

    async def timezones() -> Verdict:
        parts = []
        for tz in BAD_TIMEZONES:
            reply = await ha.request(
                "POST",
                "/api/soul/v1/intents/filter",
                ctx.admin,
                body={"command": "wake me at 8", "intent_catalog": SIMPLE_CATALOG, "timezone": tz},
            )  # fmt: skip
            parts.append((status_is(reply, 400), f"{tz[:16]!r}: {reply.status}"))
        return verdict_of(parts)

    await ctx.check("8.2", "bad timezone values", timezones)

    async def bad_terminal() -> Verdict:
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.admin,
            body=chat_body("bad id!", f"hx{ctx.run}-bt", soul_id=ctx.souls["base"]),
        )
        return status_is(reply, 400), reply.brief()

    await ctx.check("8.3", "chat: valid soul_id, invalid terminal_id", bad_terminal)

    async def refs() -> Verdict:
        terminal_id = ctx.terminals["refs"]
        device = await ctx.device_of(terminal_id)
        if device is None:
            return False, "the $ref body has no device"
        parts = []
        for skill in ("ref_self", "ref_dangling", "ref_laughs"):
            data = {"device_id": device["id"], "skill": skill, "arguments": {"x": 1}}
            answer = await ctx.admin_ws.call(
                "call_service",
                domain="soul",
                service="invoke_skill",
                service_data=data,
                return_response=True,
            )
            error = answer.get("error") or {}
            code = error.get("code") or "success"
            reply = await ctx.call_service(
                ctx.admin, "invoke_skill", data, response=True
            )
            parts.append(
                (
                    code in ("service_validation_error", "home_assistant_error"),
                    f"{skill}: WS {code} {str(error.get('message'))[:50]!r}, REST {reply.status}",
                )
            )
        reply = await ctx.call_service(
            ctx.admin, "invoke_skill", {"device_id": device["id"], "skill": "say_hi"}, response=True
        )  # fmt: skip
        parts.append(
            (
                status_is(reply, 200),
                f"the body's valid skill still works: {reply.status}",
            )
        )
        return verdict_of(parts)

    await ctx.check("8.4", "skill schemas with $ref '#', dangling, exponential", refs)

    async def star_parameters() -> Verdict:
        client = ctx.star["human"]
        await client.send(
            client.message(
                {"id": f"soul_{ctx.souls['base']}", "type": "agent"},
                {"type": "action", "id": "str-1", "action": "chat", "parameters": "text=hello"},
            )
        )  # fmt: skip
        outcome = await client.wait(lambda c: outcome_of(c, "str-1"), 10)
        status = None if not outcome else outcome.get("status")
        return status == "error", (
            f"outcome {status}: {str((outcome or {}).get('message'))[:60]!r}"
            if outcome
            else "no outcome within 10 s"
        )

    await ctx.check("8.5", "Star chat action with string parameters", star_parameters)

    async def star_frames() -> Verdict:
        client = await StarClient.connect(
            ctx.ha.session, ctx.ha.url, f"env/hx{ctx.run}-f/agent/bad", ctx.admin
        )
        await client.wait(lambda c: c.frames, 3)
        parts = []
        spoof = client.message({"id": "someone", "type": "agent"}, {})
        spoof["sender"] = {"id": "other-agent", "type": "agent"}
        for name, frame, code in (
            ("spoofed sender", spoof, PERMISSION),
            ("depth 100", "[" * 100 + "]" * 100, "VALIDATION_ERROR"),
            ("not JSON", "{nope", "VALIDATION_ERROR"),
            ("no payload", {"type": "message", "sender": client.party, "recipient": client.party}, "VALIDATION_ERROR"),
        ):  # fmt: skip
            before = len(client.errors(code))
            await client.send(frame)
            got = await client.wait(lambda c, b=before, k=code: len(c.errors(k)) > b, 5)
            parts.append(
                (
                    bool(got) and not client.closed,
                    f"{name}: {code if got else 'nothing'}",
                )
            )
        await client.send(
            json.dumps(client.message(client.party, "x" * (1024 * 1024 + 10)))
        )
        got = await client.wait(
            lambda c: c.errors("MESSAGE_TOO_LARGE") and c.closed, 10
        )
        parts.append(
            (bool(got) and client.close_code == 1009, f"1 MiB frame: MESSAGE_TOO_LARGE {bool(client.errors('MESSAGE_TOO_LARGE'))}, close {client.close_code}")
        )  # fmt: skip
        await client.close()
        return verdict_of(parts)

    await ctx.check("8.6", "hostile Star frames", star_frames)

    async def big_bodies() -> Verdict:
        parts = []
        body = {
            "command": "turn on the light",
            "intent_catalog": SIMPLE_CATALOG,
            "padding": "x" * (300 * 1024),
        }
        raw = json.dumps(body).encode()
        reply = await ha.request(
            "POST", "/api/soul/v1/intents/filter", ctx.admin, raw=raw
        )
        whole = reply.status == 200 or (
            reply.status == 400 and "json" not in reply.text.lower()
        )
        parts.append((whole, f"{len(raw) // 1024} KiB: {reply.brief(60)}"))
        reply = await ha.request(
            "POST", "/api/soul/v1/intents/filter", ctx.admin, raw=raw, chunked=True
        )
        whole = reply.status == 200 or (
            reply.status == 400 and "json" not in reply.text.lower()
        )
        parts.append((whole, f"{len(raw) // 1024} KiB chunked: {reply.status}"))
        big = json.dumps({**body, "padding": "x" * (600 * 1024)}).encode()
        for chunked in (False, True):
            reply = await ha.request(
                "POST",
                "/api/soul/v1/intents/filter",
                ctx.admin,
                raw=big,
                chunked=chunked,
            )
            parts.append(
                (status_is(reply, 413), f"{len(big) // 1024} KiB{' chunked' if chunked else ''}: {reply.status}")
            )  # fmt: skip
        return verdict_of(parts)

    await ctx.check("8.7", "300 KiB read whole, 600 KiB → 413", big_bodies)
