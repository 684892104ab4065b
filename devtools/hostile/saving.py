"""Group S: Home Assistant still answers, and its stores still serialise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
import time

from devtools.hostile.context import Context, Verdict, status_is, verdict_of

STORAGE_FILES = ("core.device_registry", "core.config_entries")


def storage_problem(path: Path) -> str | None:
    """Return what is wrong with a ``.storage`` file, or None."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")  # strict: no encoded surrogates
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return f"{path.name}: {type(err).__name__}: {err}"
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return f"{path.name}: holds a lone surrogate"
    return None


async def wait_written(path: Path, after: float, timeout: float) -> bool:
    """Wait until ``path`` was modified after ``after`` (a wall-clock time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mtime(path) > after:
            return True
        await asyncio.sleep(0.5)
    return mtime(path) > after


def mtime(path: Path) -> float:
    """Return when ``path`` was last written (0 when it does not exist)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


async def check_saving(ctx: Context) -> None:
    """Home Assistant still answers and its stores still serialise."""

    async def answering() -> Verdict:
        parts = []
        for path in ("/api/config/config_entries/entry", "/api/soul/v1/souls"):
            reply = await ctx.ha.request("GET", path, ctx.admin)
            parts.append((status_is(reply, 200), f"GET {path}: {reply.status}"))
        return verdict_of(parts)

    await ctx.check("S.1", "Home Assistant still answers", answering)

    async def saving() -> Verdict:
        if not ctx.args.config_dir:
            return None, "no --config-dir: cannot read .storage"
        storage = Path(ctx.args.config_dir) / ".storage"
        if not storage.is_dir():
            return None, f"{storage} does not exist"
        parts = []
        device = await ctx.device_of(ctx.terminals["base"])
        marker = time.time()
        await asyncio.sleep(1.1)  # mtime granularity
        if device is not None:
            await ctx.admin_ws.result(
                "config/device_registry/update",
                device_id=device["id"],
                name_by_user=f"hx{ctx.run} renamed",
            )
        entry = (
            await ctx.admin_ws.result(
                "config_entries/get_single", entry_id=ctx.entry_id
            )
        )["config_entry"]
        flag = bool(entry.get("pref_disable_new_entities"))
        await ctx.admin_ws.result(
            "config_entries/update",
            entry_id=ctx.entry_id,
            pref_disable_new_entities=not flag,
        )
        for name in STORAGE_FILES:
            path = storage / name
            written = await wait_written(path, marker, 30)
            parts.append(
                (
                    written,
                    f"{name} {'written' if written else 'NOT written'} after the attack",
                )
            )
        text = (storage / "core.device_registry").read_text("utf-8", "replace")
        parts.append((f"hx{ctx.run} renamed" in text, "the rename is on disk"))
        await ctx.admin_ws.result(
            "config_entries/update",
            entry_id=ctx.entry_id,
            pref_disable_new_entities=flag,
        )
        if device is not None:
            await ctx.admin_ws.result(
                "config/device_registry/update",
                device_id=device["id"],
                name_by_user=None,
            )
        for name in ("soul.souls", "soul.sessions"):
            path = storage / name
            written = await wait_written(path, ctx.attack_started_wall, 20)
            parts.append(
                (
                    written,
                    f"{name} {'written' if written else 'NOT written'} since the attack began",
                )
            )
        files = sorted({*storage.glob("soul.*"), *(storage / n for n in STORAGE_FILES)})
        problems = [p for p in map(storage_problem, files) if p]
        parts.append(
            (not problems, "; ".join(problems) or f"{len(files)} files valid JSON without lone surrogates")
        )  # fmt: skip
        return verdict_of(parts)

    await ctx.check("S.2", "stores still serialise (.storage written, valid)", saving)
