"""Take the docs' screenshots of Soul in Home Assistant: the integration, a body, a soul.

Called by ``scripts/screenshots``. It opens a running ``scripts/develop``
(``--start``: starts one and stops it at the end) in headless Chromium
(Debian's ``chromium``) over the Chrome DevTools Protocol, and writes
``integration.png``, ``body.png`` and ``soul.png`` into ``docs/screenshots/``.
First it prepares the instance where needed: onboarding, an owner and the Soul
entry (``devtools.hostile.bootstrap``, tokens kept in
``config/.soul-screenshots.json``), ``devtools.fake_llm`` as the LLM endpoint
(started here unless its port answers), the soul "Aria" (INFP) bound to
``terminal-001``, one chat turn so the sensors have values. The browser signs
in with the owner's token, put where the frontend keeps it (``hassTokens``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
import contextlib
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any
import urllib.parse

import aiohttp

from devtools.broker import port_open
from devtools.fake_llm import DEFAULT_MODEL
from devtools.hostile.bootstrap import bootstrap, read_json
from devtools.hostile.client import HA

type Process = subprocess.Popen[bytes]
ROOT = Path(__file__).resolve().parent.parent
BODY = "terminal-001"
SOUL = {"name": "Aria", "mbti_type": "INFP", "persona": "A gentle, curious companion."}
CHAT = "Hi Aria! I'm so happy to see you today."
LLM_HOST, LLM_PORT = "127.0.0.1", 8765
LLM_URL = f"http://{LLM_HOST}:{LLM_PORT}/v1"
ENDPOINT = {"llm_base_url": LLM_URL, "llm_model": DEFAULT_MODEL}
FLOWS = "/api/config/config_entries/flow"
NO_STATE = ("unknown", "unavailable")
PAGES = {  # file: (path, texts it must show); {body} and {soul} are device ids
    "integration.png": ("/config/integrations/integration/soul", ("Soul", BODY)),
    "body.png": ("/config/devices/device/{body}", (BODY, "Connectivity")),
    "soul.png": ("/config/devices/device/{soul}", (SOUL["name"], "Mood")),
}
WIDTH, HEIGHT, MAX_HEIGHT = 1400, 1000, 2000
CHROMIUM_FLAGS = f"""--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage
    --disable-background-networking --hide-scrollbars --window-size={WIDTH},{HEIGHT}
    --force-device-scale-factor=1 --lang=en-US --no-first-run
    --no-default-browser-check --remote-debugging-port=0""".split()
# Through every shadow root: the page's text, whether a spinner shows, and by
# how much the page's scrolling containers overflow (the frontend scrolls
# inside the page: a taller window shows all of it).
PAGE_STATE = """(() => {
  const texts = [], spinners = ["ha-spinner", "ha-circular-progress", "hass-loading-screen"];
  let busy = false, overflow = 0;
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) texts.push(node.nodeValue);
    if (node.nodeType !== Node.ELEMENT_NODE) return node.childNodes.forEach(walk);
    busy ||= spinners.includes(node.localName) && node.checkVisibility();
    if (node.clientHeight > innerHeight / 2 && /auto|scroll/.test(getComputedStyle(node).overflowY))
      overflow = Math.max(overflow, node.scrollHeight - node.clientHeight);
    if (node.shadowRoot) walk(node.shadowRoot);
    node.childNodes.forEach(walk);
  };
  walk(document);
  return {path: location.pathname, busy, overflow, text: texts.join(" ")};
})()"""


def say(message: str) -> None:
    """Print a screenshots: line at once."""
    print(f"screenshots: {message}", flush=True)


def spawn(command: Sequence[str | Path], log: Path) -> Process:
    """Start a command in its own process group, its output going to ``log``."""
    args = [str(part) for part in command]
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603
            args,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            process_group=0,
        )


def stop(process: Process, signum: int, timeout: float) -> bool:
    """Send ``signum`` to the process's group; kill the group after ``timeout`` s.

    Return whether the process ended in time (False: it was killed).
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False
    return True


async def until[T](
    what: str, check: Callable[[], Awaitable[T | None]], timeout: float = 90
) -> T:
    """Call ``check`` every second until it returns something; raise after ``timeout``."""
    deadline = time.monotonic() + timeout
    while (result := await check()) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(1)
    return result


@contextlib.asynccontextmanager
async def chromium(session: aiohttp.ClientSession) -> AsyncIterator[Tab]:
    """Start headless Chromium; yield its tab; stop it and remove its profile."""
    if (binary := shutil.which("chromium")) is None:
        raise RuntimeError("no chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="soul-chromium-") as directory:
        profile = Path(directory)
        command = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        process = spawn([*command, "about:blank"], profile / "chromium.log")

        async def port() -> int | None:  # Chromium writes the file once it listens
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int((profile / "DevToolsActivePort").read_text().split()[0])
            return None

        try:
            base = f"http://127.0.0.1:{await until('Chromium', port, 30)}"
            async with session.get(f"{base}/json/list") as response:
                tab = next(t for t in await response.json() if t["type"] == "page")
            async with session.ws_connect(tab["webSocketDebuggerUrl"]) as ws:
                yield Tab(ws)
        finally:
            await asyncio.to_thread(stop, process, signal.SIGTERM, 10)


class Tab:
    """A Chromium tab, driven over the DevTools Protocol."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Drive the tab at the other end of ``ws``."""
        self.ws = ws
        self._next = 0

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command; return its result (events are skipped)."""
        self._next += 1
        await self.ws.send_json({"id": self._next, "method": method, "params": params})
        async for message in self.ws:
            data = json.loads(message.data)
            if data.get("id") == self._next:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})
        raise RuntimeError("Chromium closed the DevTools connection")

    async def sign_in(self, url: str, token: str) -> None:
        """Have the pages of ``url`` find ``token`` and a collapsed sidebar."""
        expires = int(time.time() * 1000) + 10 * 365 * 86400 * 1000
        tokens = {"access_token": token, "token_type": "Bearer", "expires_in": 1800}
        tokens |= {"refresh_token": "", "expires": expires, "hassUrl": url}
        storage = {"hassTokens": json.dumps(tokens | {"clientId": f"{url}/"})}
        storage["dockedSidebar"] = json.dumps("auto")
        source = f"""if (location.origin === {json.dumps(url)})
            for (const [key, value] of Object.entries({json.dumps(storage)}))
                localStorage.setItem(key, value);"""
        await self.send("Page.enable")
        await self.send("Page.addScriptToEvaluateOnNewDocument", source=source)

    async def shoot(self, url: str, expect: Sequence[str], path: Path) -> None:
        """Open ``url``, wait until it shows every text of ``expect``, save it whole."""
        metrics = {"width": WIDTH, "deviceScaleFactor": 1, "mobile": False}
        await self.send("Emulation.setDeviceMetricsOverride", **metrics, height=HEIGHT)
        await self.send("Page.navigate", url=url)
        await self.settle(url, expect)
        # Away and back inside the app: what rendered before the integration's
        # translations arrived (the activity log) renders again with them.
        for there in ("/config/dashboard", urllib.parse.urlsplit(url).path):
            go = f"history.pushState(null, '', {json.dumps(there)}); window.dispatchEvent(new CustomEvent('location-changed'))"
            await self.send("Runtime.evaluate", expression=go)
        state = await self.settle(url, expect)
        height = min(MAX_HEIGHT, HEIGHT + state["overflow"])
        await self.send("Emulation.setDeviceMetricsOverride", **metrics, height=height)
        await asyncio.sleep(1.5)
        shot = await self.send("Page.captureScreenshot", format="png")
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))

    async def settle(self, url: str, expect: Sequence[str]) -> dict[str, Any]:
        """Wait until the page shows ``expect`` and no spinner; return its state."""
        deadline, ready = time.monotonic() + 60, 0
        while ready < 2:  # ready at two looks in a row
            await asyncio.sleep(1.5)
            evaluate = {"expression": PAGE_STATE, "returnByValue": True}
            state = (await self.send("Runtime.evaluate", **evaluate))["result"]["value"]
            if state["path"].startswith("/auth/"):
                raise RuntimeError(f"{url} asked to log in: the token was refused")
            missing = [text for text in expect if text not in state["text"]]
            ready = ready + 1 if not missing and not state["busy"] else 0
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} lacks {missing} or shows a spinner")
        return state


async def prepare(ha: HA, args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """Make the instance show Soul with a body and a soul; return (token, device ids)."""
    saved = await asyncio.to_thread(read_json, args.tokens_file)

    async def call(method: str, path: str, body: Any = None, want: int = 200) -> Any:
        """Return the JSON answer, None when the status is not ``want``."""
        reply = await ha.request(method, path, saved.get("token"), body=body)
        return (reply.json() or None) if reply.status == want else None

    entries = "/api/config/config_entries/entry?domain=soul"
    if not (saved.get("token") and await call("GET", entries)):
        options = {"url": ha.url, "bootstrap": args.tokens_file, "token": args.token}
        await bootstrap(argparse.Namespace(**options))
        saved = await asyncio.to_thread(read_json, args.tokens_file)
    entry_id = (await until("Soul", lambda: call("GET", entries)))[0]["entry_id"]

    # The fake LLM as the endpoint, unless the entry has one (reconfigure flow).
    flow = await call("POST", FLOWS, {"handler": "soul", "entry_id": entry_id})
    fields = {field["name"]: field for field in flow["data_schema"]}
    step = f"{FLOWS}/{flow['flow_id']}"
    if (fields["llm_base_url"].get("description") or {}).get("suggested_value"):
        await call("DELETE", step)
    elif (await call("POST", step, ENDPOINT) or {}).get("type") != "abort":
        raise RuntimeError(f"could not set Soul's LLM endpoint to {ENDPOINT}")
    else:
        say(f"Soul's LLM endpoint: {LLM_URL}")

    souls = await until("Soul's API", lambda: call("GET", "/api/soul/v1/souls"))
    soul = next((s for s in souls["souls"] if s["name"] == SOUL["name"]), None)
    if soul is None:
        if (soul := await call("POST", "/api/soul/v1/souls", SOUL, 201)) is None:
            raise RuntimeError(f"could not create the soul {SOUL}")
        say(f"created the soul {SOUL['name']} ({SOUL['mbti_type']})")
    select = {"terminal_id": BODY, "soul_id": soul["soul_id"]}
    if await call("POST", "/api/soul/v1/souls/select", select) is None:
        raise RuntimeError(f"could not bind {BODY} to {SOUL['name']}")

    ws = await ha.ws(saved["token"])
    try:
        # A new instance has no country yet (a repair issue), and a
        # notification about the bootstrap's unauthenticated probe.
        if (await ws.result("get_config")).get("country") is None:
            await ws.result("config/core/update", country="US")
        notification = {"notification_id": "http-login"}
        dismiss = {"domain": "persistent_notification", "service": "dismiss"}
        await ws.result("call_service", **dismiss, service_data=notification)

        async def devices() -> dict[str, str] | None:
            registry = await ws.result("config/device_registry/list")
            mine = [d for d in registry if entry_id in d["config_entries"]]
            found = {d["name"]: d["id"] for d in mine}
            return found if BODY in found and SOUL["name"] in found else None

        ids = await until(f"the devices {BODY} and {SOUL['name']}", devices)
        text = [{"type": "keyboard_text", "text": CHAT}]
        turn = {"session_id": "screenshots", "terminal_id": BODY, "inputs": text}
        answer = await call("POST", "/api/soul/v1/chat", turn) or {}
        say(f"chat: {CHAT!r} -> {answer.get('reply')!r}")
        shown = {
            e["entity_id"]
            for e in await ws.result("config/entity_registry/list")
            if e["device_id"] in (ids[BODY], ids[SOUL["name"]])
            and e["disabled_by"] is None
            and e["entity_id"].split(".")[0] in ("sensor", "binary_sensor")
        }

        async def have_states() -> bool | None:
            states = await ws.result("get_states")
            known = {s["entity_id"] for s in states if s["state"] not in NO_STATE}
            return True if shown <= known else None

        with contextlib.suppress(RuntimeError):  # else take the pages as they are
            await until("the sensors' states", have_states, 60)
    finally:
        await ws.close()
    return saved["token"], {"body": ids[BODY], "soul": ids[SOUL["name"]]}


async def run(args: argparse.Namespace, develop: Process | None) -> list[Path]:
    """Prepare the instance and take the three screenshots; return their paths."""
    url = args.url.rstrip("/")
    async with aiohttp.ClientSession() as session:
        ha = HA(session, url)

        async def answers() -> bool | None:
            if develop is not None and develop.poll() is not None:
                raise RuntimeError(f"scripts/develop stopped ({develop.returncode})")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                reply = await ha.request("GET", "/manifest.json", None, timeout=5)
                return reply.status == 200 or None
            return None

        await until(f"Home Assistant on {url}", answers, 900 if develop else 10)
        token, devices = await prepare(ha, args)
        args.out.mkdir(parents=True, exist_ok=True)
        async with chromium(session) as tab:
            await tab.sign_in(url, token)
            for name, (path, expect) in PAGES.items():
                await tab.shoot(url + path.format(**devices), expect, args.out / name)
        return [args.out / name for name in PAGES]


def main() -> int:
    """Parse the arguments, start what is missing, take the screenshots."""
    config = Path(os.environ.get("SOUL_CONFIG_DIR", ROOT / "config"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--url", default="http://localhost:8123", help="default: %(default)s")
    add("--out", type=Path, default=ROOT / "docs" / "screenshots", help="PNGs' folder")
    add("--start", action="store_true", help="start scripts/develop, stop it after")
    tokens = config / ".soul-screenshots.json"
    add("--tokens-file", type=Path, default=tokens, help="the owner's login, tokens")
    add("--token", help="an admin's token, for an instance onboarded elsewhere")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="soul-screenshots-"))
    develop = llm = None
    try:
        if args.start:
            parts = urllib.parse.urlsplit(args.url)
            if port_open(parts.hostname or "localhost", parts.port or 80):
                say(f"something already answers on {args.url}: leave out --start")
                return 1
            develop = spawn([ROOT / "scripts" / "develop"], logs / "develop.log")
            say(f"started scripts/develop (log: {logs / 'develop.log'})")
        if not port_open(LLM_HOST, LLM_PORT):
            llm = spawn([sys.executable, "-m", "devtools.fake_llm"], logs / "llm.log")
        written = asyncio.run(run(args, develop))
    finally:
        if llm is not None:
            stop(llm, signal.SIGTERM, 10)
        if develop is not None:
            say("stopping scripts/develop")
            stop(develop, signal.SIGINT, 240)
    for path in written:
        say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
