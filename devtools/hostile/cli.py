"""The command line: parse the arguments, run every check, print the summary."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
import secrets
import sys
import time

import aiohttp

from devtools.hostile.answers import check_answers
from devtools.hostile.bootstrap import bootstrap
from devtools.hostile.client import HA, Pinger
from devtools.hostile.context import Context
from devtools.hostile.fixtures import cleanup, heartbeat_loop, setup
from devtools.hostile.floods import (
    check_huge_catalog,
    check_registry_fill,
    check_schema_flood,
)
from devtools.hostile.identity import check_identity
from devtools.hostile.mqtt import Body
from devtools.hostile.recorder import RECORDER_WINDOW, check_recorder
from devtools.hostile.regexes import check_regexes, check_shared_poison
from devtools.hostile.saving import check_saving
from devtools.hostile.star import check_star
from devtools.hostile.storage import check_poisoned_storage


async def run_checks(args: argparse.Namespace, tokens: dict[str, str]) -> int:
    """Set up, run every selected check, clean up; return the exit code."""
    run = secrets.token_hex(2)
    url = args.url.rstrip("/")
    pinger = Pinger(url, tokens["token"])
    pinger.start()
    body = await asyncio.to_thread(Body, args.mqtt_host, args.mqtt_port, run)
    beating = asyncio.get_running_loop().create_task(heartbeat_loop(body))
    async with aiohttp.ClientSession() as session:
        ha = HA(session, url)
        ctx = Context(
            args=args,
            run=run,
            ha=ha,
            admin_ws=await ha.ws(tokens["token"]),
            body=body,
            pinger=pinger,
            started=time.monotonic(),
            attack_started_wall=time.time(),
            tokens=tokens,
        )
        try:
            await setup(ctx)
            for group in (
                check_poisoned_storage,
                check_regexes,
                check_shared_poison,
                check_huge_catalog,
                check_schema_flood,
                check_registry_fill,
                check_identity,
                check_answers,
                check_recorder,
                check_star,
                check_saving,
            ):
                await group(ctx)
        finally:
            beating.cancel()
            await cleanup(ctx)
            await ctx.admin_ws.close()
            await asyncio.to_thread(body.close)
            pinger.stop()
    counts = {
        s: sum(r.status == s for r in ctx.results)
        for s in ("PASS", "WARN", "FAIL", "SKIP")
    }
    worst = max(
        (r.worst_ms for r in ctx.results if r.worst_ms == r.worst_ms), default=0
    )
    print(
        f"\nsummary: {counts['PASS']} passed, {counts['WARN']} warned, "
        f"{counts['FAIL']} failed, {counts['SKIP']} skipped; worst ping {worst:.0f} ms"
    )
    for result in ctx.results:
        if result.status == "FAIL":
            print(f"  FAIL {result.key} {result.title}: {result.reason}")
    return 1 if counts["FAIL"] else 0


def build_parser() -> argparse.ArgumentParser:
    """Return the command line parser."""
    parser = argparse.ArgumentParser(
        prog="hostile-check",
        description="Attack a running Home Assistant with Soul and report PASS/FAIL.",
    )
    parser.add_argument("--url", default="http://localhost:8123")
    parser.add_argument("--mqtt-host", default="127.0.0.1")
    parser.add_argument("--mqtt-port", type=int, default=1883)
    parser.add_argument("--token", help="an administrator's long-lived access token")
    parser.add_argument("--user-token", help="a non-admin user's token")
    parser.add_argument("--readonly-token", help="a read-only user's token")
    parser.add_argument(
        "--tokens-file", help="JSON with token, user_token, readonly_token"
    )
    parser.add_argument(
        "--bootstrap",
        metavar="FILE",
        help="onboard if needed, create the users, tokens and Soul entry; write FILE",
    )
    parser.add_argument(
        "--config-dir",
        default=os.environ.get("SOUL_CONFIG_DIR"),
        help="Home Assistant's config dir (reads .storage and home-assistant.log)",
    )
    parser.add_argument("--ha-log", help="Home Assistant's log file")
    parser.add_argument(
        "--only", help="comma-separated check groups to run, e.g. 1,2,S"
    )
    parser.add_argument("--flood-terminals", type=int, default=10)
    parser.add_argument("--recorder-window", type=float, default=RECORDER_WINDOW)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the harness."""
    args = build_parser().parse_args(argv)
    args.only = set(args.only.split(",")) if args.only else None
    if args.bootstrap:
        return asyncio.run(bootstrap(args))
    tokens: dict[str, str] = {}
    if args.tokens_file:
        tokens.update(json.loads(Path(args.tokens_file).read_text()))
    for key in ("token", "user_token", "readonly_token"):
        if getattr(args, key):
            tokens[key] = getattr(args, key)
    missing = [
        k for k in ("token", "user_token", "readonly_token") if not tokens.get(k)
    ]
    if missing:
        print(
            f"hostile-check: missing {', '.join(missing)} (or --tokens-file)",
            file=sys.stderr,
        )
        return 2
    return asyncio.run(run_checks(args, tokens))
