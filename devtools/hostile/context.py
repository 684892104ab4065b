"""What the checks share: the context, verdicts, and latency per check."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
import time
from typing import Any

from devtools.hostile.client import HA, HAWebSocket, Pinger, Reply
from devtools.hostile.mqtt import Body
from devtools.hostile.starclient import StarClient

SETTLE = 0.3  # seconds after a check whose pings still count (work it queued)
WARN_MS = 60.0
FAIL_MS = 250.0


@dataclass
class Result:
    """The outcome of one check."""

    key: str
    title: str
    status: str  # PASS, WARN, FAIL, SKIP
    reason: str
    worst_ms: float = float("nan")


Verdict = tuple[bool | None, str]  # (passed; None = skipped, reason)


def verdict_of(parts: list[tuple[bool, str]]) -> Verdict:
    """Combine sub-results: pass when all pass; the reason lists the failures first."""
    failed = [reason for ok, reason in parts if not ok]
    if failed:
        passed = [reason for ok, reason in parts if ok]
        return False, "; ".join(failed) + (
            f" (ok: {'; '.join(passed)})" if passed else ""
        )
    return True, "; ".join(reason for _ok, reason in parts)


@dataclass
class Context:
    """What the checks share."""

    args: argparse.Namespace
    run: str
    ha: HA
    admin_ws: HAWebSocket
    body: Body
    pinger: Pinger
    started: float
    attack_started_wall: float
    tokens: dict[str, str]
    user_ids: dict[str, str] = field(default_factory=dict)
    entry_id: str = ""
    souls: dict[str, str] = field(default_factory=dict)  # role → soul id
    terminals: dict[str, str] = field(default_factory=dict)  # role → terminal id
    star: dict[str, StarClient] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)

    @property
    def admin(self) -> str:
        """Return the admin token."""
        return self.tokens["token"]

    @property
    def user(self) -> str:
        """Return the non-admin token."""
        return self.tokens["user_token"]

    @property
    def readonly(self) -> str:
        """Return the read-only token."""
        return self.tokens["readonly_token"]

    def tid(self, tag: str) -> str:
        """Return a terminal id of this run."""
        return f"hx{self.run}-{tag}"

    async def devices(self) -> list[dict[str, Any]]:
        """Return the device registry."""
        return await self.admin_ws.result("config/device_registry/list")

    async def device_of(self, terminal_id: str) -> dict[str, Any] | None:
        """Return the device of a terminal, if there is one."""
        for device in await self.devices():
            if ["soul", terminal_id] in device.get("identifiers", []):
                return device
        return None

    async def wait_device(
        self, terminal_id: str, timeout: float = 30
    ) -> dict[str, Any] | None:
        """Wait for a terminal's device."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (device := await self.device_of(terminal_id)) is not None:
                return device
            await asyncio.sleep(0.5)
        return None

    async def souls_list(self) -> list[dict[str, Any]]:
        """Return every soul (admin view)."""
        reply = await self.ha.request("GET", "/api/soul/v1/souls", self.admin)
        return (reply.json() or {}).get("souls", [])

    async def filter_on(self, terminal_id: str) -> Reply:
        """Run the intent filter on a terminal's own catalog."""
        return await self.ha.request(
            "POST",
            "/api/soul/v1/intents/filter",
            self.admin,
            body={"command": "turn on the light", "terminal_id": terminal_id},
        )

    async def wait_catalog(self, terminal_id: str, timeout: float = 30) -> Reply:
        """Wait until a terminal's catalog is in use (the filter answers 200)."""
        deadline = time.monotonic() + timeout
        reply = await self.filter_on(terminal_id)
        while reply.status != 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            reply = await self.filter_on(terminal_id)
        return reply

    async def call_service(
        self, token: str, service: str, data: dict[str, Any], *, response: bool
    ) -> Reply:
        """Call a ``soul`` action over REST."""
        query = "?return_response" if response else ""
        return await self.ha.request(
            "POST", f"/api/services/soul/{service}{query}", token, body=data
        )

    async def check(
        self, key: str, title: str, run: Callable[[], Awaitable[Verdict]]
    ) -> Result:
        """Run one check, measure the worst ping during it, print and keep it."""
        if self.args.only and key.split(".", maxsplit=1)[0] not in self.args.only:
            return Result(key, title, "SKIP", "not selected")
        since = time.monotonic()
        try:
            passed, reason = await run()
        except Exception as err:  # noqa: BLE001 - a crashed check is reported
            passed, reason = False, f"harness error: {type(err).__name__}: {err}"
        await asyncio.sleep(SETTLE)
        until = time.monotonic()
        worst, pings, failed = await asyncio.to_thread(self.pinger.worst, since, until)
        status = "SKIP" if passed is None else "PASS" if passed else "FAIL"
        timing = f"worst ping {worst:.0f} ms over {pings}"
        if failed:
            timing += f", {failed} pings failed"
            if status != "SKIP":
                status = "FAIL"
        if status in ("PASS", "FAIL") and worst > FAIL_MS:
            status = "FAIL"
            reason = (
                f"event loop held: worst ping {worst:.0f} ms > {FAIL_MS:.0f}; {reason}"
            )
        elif status == "PASS" and worst > WARN_MS:
            status = "WARN"
        result = Result(key, title, status, reason, worst)
        self.results.append(result)
        print(f"{status:4} {key:5} {title} — {reason} [{timing}]", flush=True)
        return result


def status_is(reply: Reply, *codes: int) -> bool:
    """Return whether ``reply`` has one of ``codes``."""
    return reply.status in codes


def log_path(ctx: Context) -> Path | None:
    """Return Home Assistant's log file, when the harness can read it."""
    if ctx.args.ha_log:
        return Path(ctx.args.ha_log)
    if ctx.args.config_dir:
        path = Path(ctx.args.config_dir) / "home-assistant.log"
        if path.exists():
            return path
    return None


def log_size(ctx: Context) -> int:
    """Return the log's current size (to read what follows)."""
    path = log_path(ctx)
    return path.stat().st_size if path is not None and path.exists() else 0


def log_lines(ctx: Context, since: int, needle: str) -> list[str] | None:
    """Return the log lines after ``since`` that contain ``needle`` (None: no log)."""
    path = log_path(ctx)
    if path is None or not path.exists():
        return None
    with path.open("rb") as log:
        log.seek(since)
        text = log.read().decode("utf-8", "replace")
    return [line for line in text.splitlines() if needle in line]
