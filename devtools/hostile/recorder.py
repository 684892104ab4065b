"""Group 9: ``soul_emotion_update`` events per minute of an idle bound body."""

from __future__ import annotations

import asyncio
from typing import Any

from devtools.hostile.context import Context, Verdict, verdict_of

RECORDER_WINDOW = 60.0
MAX_EMOTION_EVENTS = 6  # per idle bound soul and minute (ticks every 3 s: 20)


async def check_recorder(ctx: Context) -> None:
    """Count soul_emotion_update events of an idle bound online body."""

    async def events() -> Verdict:
        ws = await ctx.ha.ws(ctx.admin)
        queue = await ws.subscribe("soul_emotion_update")
        terminal_id = ctx.terminals["base"]
        mqtt_before = ctx.body.count(terminal_id, "emotion_update")
        await asyncio.sleep(ctx.args.recorder_window)
        await ws.close()
        seen: list[dict[str, Any]] = []
        while not queue.empty():
            seen.append(queue.get_nowait())
        mine = [
            e for e in seen if e.get("data", {}).get("soul_id") == ctx.souls["base"]
        ]
        mqtt = ctx.body.count(terminal_id, "emotion_update") - mqtt_before
        window = ctx.args.recorder_window
        parts = [
            (mqtt >= window / 6, f"the body got {mqtt} emotion_update over MQTT"),
            (
                len(mine) <= MAX_EMOTION_EVENTS * window / 60,
                f"{len(mine)} soul_emotion_update events for its soul in {window:.0f} s "
                f"({len(seen)} for all souls)",
            ),
        ]
        return verdict_of(parts)

    await ctx.check("9.1", "soul_emotion_update events of an idle body", events)
