"""Group 7: Star liveness, a burst within the rate limit, a flooder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import aiohttp

from devtools.hostile.context import Context, Verdict, verdict_of
from devtools.hostile.starclient import StarClient, not_found, outcome_of

LIVENESS_AFTER = 95.0  # seconds after the start: soul agents must still answer


async def check_star(ctx: Context) -> None:
    """Soul agents stay alive; bursts within the limit are fair; flooders are limited."""
    session, url = ctx.ha.session, ctx.ha.url

    async def liveness() -> Verdict:
        wait = LIVENESS_AFTER - (time.monotonic() - ctx.started)
        if wait > 0:
            print(
                f"      (waiting {wait:.0f} s: {LIVENESS_AFTER:.0f} s after the start)"
            )
            await asyncio.sleep(wait)
        client = ctx.star["human"]
        parts = [
            (
                not client.closed,
                f"harness human connected for {time.monotonic() - ctx.started:.0f} s"
                + (f" (closed {client.close_code})" if client.closed else ""),
            )
        ]
        if client.closed:
            client = ctx.star["human"] = await StarClient.connect(
                session, url, f"human/hx{ctx.run}-h", ctx.admin
            )
        message = client.message(
            {"id": f"soul_{ctx.souls['base']}", "type": "agent"},
            {"type": "action", "id": "live-1", "action": "chat", "parameters": {"text": "hello, are you there?"}},
        )  # fmt: skip
        message["message_id"] = "live-1"
        await client.send(message)
        found = await client.wait(
            lambda c: outcome_of(c, "live-1") or not_found(c, "live-1"), 30
        )
        outcome = outcome_of(client, "live-1")
        if outcome is None:
            reason = "RECIPIENT_NOT_FOUND" if found else "no outcome within 30 s"
            parts.append((False, f"soul agent: {reason}"))
        else:
            parts.append(
                (
                    True,
                    f"outcome {outcome.get('status')}: "
                    f"{str(outcome.get('message'))[:60]!r}",
                )
            )
        return verdict_of(parts)

    await ctx.check(
        "7.1", f"soul agent answers chat after {LIVENESS_AFTER:.0f} s", liveness
    )

    env = f"hx{ctx.run}-b"

    async def burst() -> Verdict:
        receiver = await StarClient.connect(
            session, url, f"env/{env}/agent/rcv", ctx.admin
        )
        sender = await StarClient.connect(
            session, url, f"env/{env}/agent/snd", ctx.admin
        )
        environment = await StarClient.connect(session, url, f"env/{env}", ctx.admin)
        await asyncio.sleep(1)  # every bucket full again after the greetings
        parts = []
        target = {"id": "rcv", "type": "agent"}
        for i in range(90):  # nearly the bucket's burst (100) at once …
            await sender.send(sender.message(target, {"n": i}))
        for i in range(90, 200):  # … then at half the refill rate (200/s)
            await sender.send(sender.message(target, {"n": i}))
            await asyncio.sleep(1 / 100)
        got = await receiver.wait(lambda c: len(c.messages_from("snd")) >= 200, 10)
        parts.append(
            (
                bool(got) and not receiver.closed,
                f"agent burst: receiver got {len(receiver.messages_from('snd'))}/200"
                + (f", closed {receiver.close_code}" if receiver.closed else ""),
            )
        )
        parts.append(
            (
                not sender.errors("RATE_LIMITED"),
                f"sender rate-limited {len(sender.errors('RATE_LIMITED'))}×",
            )
        )
        for i in range(200):  # an environment's burst is 200
            await environment.send(environment.message(target, {"n": i}))
        got = await receiver.wait(lambda c: len(c.messages_from(env)) >= 200, 10)
        parts.append(
            (
                bool(got) and not receiver.closed,
                f"environment burst of 200 at once: receiver got "
                f"{len(receiver.messages_from(env))}/200"
                + (f", closed {receiver.close_code}" if receiver.closed else ""),
            )
        )
        for client in (receiver, sender, environment):
            await client.close()
        return verdict_of(parts)

    await ctx.check("7.2", "a burst within the rate limit to a reading receiver", burst)

    async def flooder() -> Verdict:
        receiver = await StarClient.connect(
            session, url, f"env/{env}/agent/rcv2", ctx.admin
        )
        flood = await StarClient.connect(
            session, url, f"env/{env}/agent/fld", ctx.admin
        )
        await asyncio.sleep(0.3)
        target = {"id": "rcv2", "type": "agent"}
        frame = json.dumps(flood.message(target, {"flood": True}))
        sent, started = 0, time.monotonic()
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            for _ in range(5000):
                if flood.closed:
                    break
                await flood.ws.send_str(frame)
                sent += 1
        elapsed = time.monotonic() - started
        await asyncio.sleep(2)
        limited = flood.errors("RATE_LIMITED")
        first_limit = limited[0]["_at"] if limited else None
        closed_first = flood.closed and (
            first_limit is None or (flood.closed_at or 0) < first_limit
        )
        parts = [
            (
                bool(limited),
                f"sent {sent} frames in {elapsed:.2f} s; {len(limited)} RATE_LIMITED",
            ),
            (
                not closed_first and flood.close_code != 1013,
                "flooder "
                + (f"closed {flood.close_code}" if flood.closed else "still connected"),
            ),
            (
                not receiver.closed,
                f"receiver got {len(receiver.messages_from('fld'))}"
                + (
                    f", closed {receiver.close_code}"
                    if receiver.closed
                    else ", connected"
                ),
            ),
        ]
        for client in (receiver, flood):
            await client.close()
        return verdict_of(parts)

    await ctx.check("7.3", "a flooder gets RATE_LIMITED, not 1013", flooder)
