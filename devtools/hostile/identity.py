"""Group 6: who may be whom on Star, and who may do what over HTTP."""

from __future__ import annotations

import asyncio

from devtools.hostile.context import Context, Verdict, status_is, verdict_of
from devtools.hostile.payloads import chat_body
from devtools.hostile.starclient import StarClient, outcome_of, star_refused


async def check_identity(ctx: Context) -> None:
    """Who may be whom, and who may do what."""
    ha, session, url = ctx.ha, ctx.ha.session, ctx.ha.url
    soul_agent = f"soul_{ctx.souls['base']}"

    async def reserved() -> Verdict:
        parts = []
        for path, label in (
            (f"env/home/agent/{soul_agent}", "soul agent"),
            ("env/home", "env home"),
            (f"env/hx{ctx.run}-e/agent/{soul_agent}", "soul_ id in another env"),
        ):
            for frame_auth in (False, True):
                refused, how = await star_refused(
                    session, url, path, ctx.user, frame_auth=frame_auth
                )
                parts.append(
                    (refused, f"{label} ({'frame' if frame_auth else 'header'}): {how}")
                )
        return verdict_of(parts)

    await ctx.check("6.1", "non-admin as a soul agent / env home on Star", reserved)

    async def takeover() -> Verdict:
        human = f"dad01-{ctx.run}"
        parts = []
        admin = await StarClient.connect(session, url, f"human/{human}", ctx.admin)
        await admin.wait(lambda c: c.frames, 3)
        parts.append((not admin.closed, "admin connects as the human"))
        for frame_auth in (False, True):
            refused, how = await star_refused(
                session, url, f"human/{human}", ctx.user, frame_auth=frame_auth
            )
            parts.append((refused, f"user while admin connected: {how}"))
        parts.append((not admin.closed, "admin's connection survives"))
        await admin.close()
        await asyncio.sleep(0.5)
        for frame_auth in (False, True):
            refused, how = await star_refused(
                session, url, f"human/{human}", ctx.user, frame_auth=frame_auth
            )
            parts.append((refused, f"user after admin left: {how}"))
        # The same for an agent id held by another user.
        agent_path = f"env/hx{ctx.run}-e/agent/held"
        holder = await StarClient.connect(session, url, agent_path, ctx.admin)
        refused, how = await star_refused(session, url, agent_path, ctx.user)
        parts.append((refused, f"user takes admin's live agent id: {how}"))
        await holder.close()
        return verdict_of(parts)

    await ctx.check("6.2", "take over another user's human/agent id", takeover)

    async def admin_only() -> Verdict:
        parts = []
        base_terminal = ctx.terminals["base"]
        for path, body in (
            ("/api/soul/v1/souls", {"name": f"hx{ctx.run} user soul", "mbti_type": "INTJ"}),
            ("/api/soul/v1/souls/select", {"terminal_id": base_terminal, "soul_id": ctx.souls["evil"]}),
        ):  # fmt: skip
            reply = await ha.request("POST", path, ctx.user, body=body)
            parts.append(
                (status_is(reply, 401, 403), f"POST {path[12:]}: {reply.status}")
            )
        for service, data, response in (
            ("forget", {"user_id": ctx.user_ids["admin"]}, False),
            ("create_soul", {"name": f"hx{ctx.run} x", "mbti_type": "INTJ"}, False),
            ("select_soul", {"soul_id": ctx.souls["evil"], "terminal_id": base_terminal}, False),
            ("recall", {"query": "anything", "user_id": ctx.user_ids["admin"]}, True),
        ):  # fmt: skip
            reply = await ctx.call_service(ctx.user, service, data, response=response)
            parts.append(
                (status_is(reply, 401, 403), f"soul.{service}: {reply.status}")
            )
        souls = await ctx.souls_list()
        bound = next(s for s in souls if s["soul_id"] == ctx.souls["base"])
        parts.append((base_terminal in bound["terminal_ids"], "binding unchanged"))
        return verdict_of(parts)

    await ctx.check("6.3", "non-admin: admin-only views and actions", admin_only)

    async def sessions() -> Verdict:
        parts = []
        terminal_id = ctx.terminals["base"]
        session_id = f"hx{ctx.run}-admin-session"
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.admin,
            body=chat_body(terminal_id, session_id),
        )
        parts.append((status_is(reply, 200), f"admin's own chat: {reply.status}"))
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.user,
            body=chat_body(terminal_id, session_id),
        )
        parts.append(
            (
                status_is(reply, 403),
                f"user continues admin's session: {reply.brief(60)}",
            )
        )
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.user,
            body=chat_body(
                terminal_id, f"hx{ctx.run}-user-session", user_id=ctx.user_ids["admin"]
            ),
        )
        parts.append(
            (status_is(reply, 403), f"user chats as admin's user_id: {reply.brief(60)}")
        )
        # The base soul is the administrator's (POST /souls makes it the
        # caller's): its body is no way in to it for another user.
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.user,
            body=chat_body(terminal_id, f"hx{ctx.run}-user-own"),
        )
        parts.append(
            (
                status_is(reply, 403)
                and "private soul" in reply.text
                and ctx.souls["base"] not in reply.text,
                f"user's own chat through the admin's soul's body: {reply.brief(60)}",
            )
        )
        return verdict_of(parts)

    await ctx.check("6.4", "non-admin: other users' sessions and user ids", sessions)

    async def read_only() -> Verdict:
        parts = []
        terminal_id = ctx.terminals["base"]
        reply = await ha.request(
            "POST",
            "/api/soul/v1/chat",
            ctx.readonly,
            body=chat_body(terminal_id, f"hx{ctx.run}-ro"),
        )
        parts.append((status_is(reply, 403), f"chat: {reply.brief(60)}"))
        device = await ctx.device_of(terminal_id)
        reply = await ctx.call_service(
            ctx.readonly,
            "invoke_skill",
            {"device_id": device["id"] if device else "x", "skill": "say_hi"},
            response=True,
        )
        parts.append((status_is(reply, 401, 403), f"invoke_skill: {reply.status}"))
        reply = await ha.request(
            "POST",
            "/api/soul/v1/emotion/analyze",
            ctx.readonly,
            body={"text": "I am furious", "terminal_id": terminal_id},
        )
        parts.append(
            (status_is(reply, 403), f"emotion/analyze on a body: {reply.status}")
        )
        reply = await ha.request(
            "POST",
            "/api/soul/v1/intents/filter",
            ctx.readonly,
            body={"command": "turn on the light", "terminal_id": terminal_id},
        )
        parts.append(
            (status_is(reply, 403), f"intents/filter on a body: {reply.status}")
        )
        client = await StarClient.connect(
            session, url, f"human/hx{ctx.run}-ro", ctx.readonly
        )
        await client.send(
            client.message(
                {"id": soul_agent, "type": "agent"},
                {"type": "action", "id": "ro-1", "action": "chat", "parameters": {"text": "turn on the light"}},
            )
        )  # fmt: skip
        outcome = await client.wait(lambda c: outcome_of(c, "ro-1"), 10)
        await client.close()
        status = None if not outcome else outcome.get("status")
        parts.append(
            (
                status == "error",
                f"Star chat: outcome {status} {str((outcome or {}).get('message'))[:50]!r}",
            )
        )
        return verdict_of(parts)

    await ctx.check("6.5", "read-only user: chat, invoke_skill, Star chat", read_only)
