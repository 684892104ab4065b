"""Onboard Home Assistant if needed, create the users and tokens, add Soul."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path
import secrets
from typing import Any

import aiohttp

from devtools.hostile.client import HA
from devtools.hostile.payloads import PREFIX


def read_json(path: Path) -> dict[str, Any]:
    """Return a JSON file's object ({} when it does not exist)."""
    return json.loads(path.read_text()) if path.exists() else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write secrets as JSON, readable by the owner only."""
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)


async def bootstrap(args: argparse.Namespace) -> int:
    """Onboard if needed, create the three users and their tokens, add Soul."""
    url = args.url.rstrip("/")
    client_id = f"{url}/"
    out = Path(args.bootstrap)
    saved = await asyncio.to_thread(read_json, out)
    async with aiohttp.ClientSession() as session:
        ha = HA(session, url)
        for _ in range(120):
            with contextlib.suppress(aiohttp.ClientError):
                if (await ha.request("GET", "/api/", None)).status in (200, 401):
                    break
            await asyncio.sleep(1)

        async def token_for(username: str, password: str) -> str:
            async with session.post(
                f"{url}/auth/login_flow",
                json={"client_id": client_id, "handler": ["homeassistant", None], "redirect_uri": client_id},
            ) as response:  # fmt: skip
                flow = await response.json()
            async with session.post(
                f"{url}/auth/login_flow/{flow['flow_id']}",
                json={"client_id": client_id, "username": username, "password": password},
            ) as response:  # fmt: skip
                done = await response.json()
            if done.get("type") != "create_entry":
                raise RuntimeError(f"login as {username} failed: {done}")
            return await exchange(done["result"])

        async def exchange(code: str) -> str:
            async with session.post(
                f"{url}/auth/token",
                data={"grant_type": "authorization_code", "code": code, "client_id": client_id},
            ) as response:  # fmt: skip
                return (await response.json())["access_token"]

        async def long_lived(access: str, name: str) -> str:
            ws = await ha.ws(access)
            token = await ws.result(
                "auth/long_lived_access_token",
                client_name=f"{name} {secrets.token_hex(3)}",
                lifespan=365,
            )
            await ws.close()
            return token

        async with session.get(f"{url}/api/onboarding") as response:
            steps = await response.json() if response.status == 200 else []
        users_done = all(s.get("done") for s in steps if s.get("step") == "user")
        if not users_done:
            saved["admin_username"] = "hostile-admin"
            saved["admin_password"] = secrets.token_urlsafe(12)
            async with session.post(
                f"{url}/api/onboarding/users",
                json={
                    "client_id": client_id,
                    "name": "Hostile Admin",
                    "username": saved["admin_username"],
                    "password": saved["admin_password"],
                    "language": "en",
                },
            ) as response:
                code = (await response.json())["auth_code"]
            access = await exchange(code)
            headers = {"Authorization": f"Bearer {access}"}
            for step, body in (
                ("core_config", {}),
                ("analytics", {}),
                ("integration", {"client_id": client_id, "redirect_uri": client_id}),
            ):
                async with session.post(
                    f"{url}/api/onboarding/{step}", json=body, headers=headers
                ) as response:
                    await response.read()
            print("bootstrap: onboarded (owner hostile-admin)")
        elif "admin_username" in saved:
            access = await token_for(saved["admin_username"], saved["admin_password"])
        elif args.token:
            access = args.token
        else:
            raise RuntimeError(
                "Home Assistant is onboarded already: pass --token (an admin's) "
                "or a --bootstrap file written earlier"
            )
        saved["token"] = await long_lived(access, "hostile-check admin")
        ws = await ha.ws(saved["token"])
        for role, group in (("user", "system-users"), ("readonly", "system-read-only")):
            username = f"hostile-{role}-{secrets.token_hex(2)}"
            password = secrets.token_urlsafe(12)
            user = (
                await ws.result(
                    "config/auth/create",
                    name=f"Hostile {role}",
                    group_ids=[group],
                    local_only=False,
                )
            )["user"]
            await ws.result(
                "config/auth_provider/homeassistant/create",
                user_id=user["id"],
                username=username,
                password=password,
            )
            saved[f"{role}_token"] = await long_lived(
                await token_for(username, password), f"hostile-check {role}"
            )
        if not await ws.result("config_entries/get", domain="soul"):
            reply = await ha.request(
                "POST",
                "/api/config/config_entries/flow",
                saved["token"],
                body={"handler": "soul", "show_advanced_options": False},
            )
            flow = reply.json() or {}
            if flow.get("type") != "form":
                raise RuntimeError(
                    f"could not start Soul's config flow: {reply.brief()}"
                )
            reply = await ha.request(
                "POST",
                f"/api/config/config_entries/flow/{flow['flow_id']}",
                saved["token"],
                body={"topic_prefix": PREFIX},
            )
            if (reply.json() or {}).get("type") != "create_entry":
                raise RuntimeError(
                    f"Soul's config flow did not finish: {reply.brief()}"
                )
            print("bootstrap: added the Soul integration")
            await asyncio.sleep(3)
        await ws.close()
    await asyncio.to_thread(write_json, out, saved)
    print(f"bootstrap: tokens written to {out}")
    return 0
