"""A real Home Assistant (scripts/develop's) and Debian's Chromium for the browser tests.

``soul_ha`` (once per session) starts ``devtools.develop`` on free ports in a
new configuration directory, with the body simulator (``terminal-001``) and
``devtools.fake_llm`` as Soul's model, onboards it with an owner, a user and a
read-only user (``devtools.hostile.bootstrap``), and creates three souls:
"Aria" (shared, bound to ``terminal-001``), "Dad's soul" (the owner's) and
"Kid's soul" (the user's). ``browser`` is Chromium (``/usr/bin/chromium``)
driven through Playwright's Python API; ``page_as(role)`` opens a page signed
in as the owner, the user or the read-only user ("admin", "user",
"read_only": their token where the frontend keeps it).

Screenshots go to ``$SOUL_SCREENSHOT_DIR`` (docs/screenshots/ to update the
docs), else to a temporary folder. Everything is skipped, with the reason,
without Chromium or Playwright.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time
from typing import Any
import urllib.error
import urllib.request

import aiohttp
import pytest
import pytest_socket

from devtools.broker import free_port
from devtools.screenshots import stop

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SOUL_CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT = 420.0
# Within pytest-timeout's 120 s, so that a process that does not stop is
# killed here and its log shown, not cut off with the teardown.
STOP_TIMEOUT = 90.0
NAMES = ("llm", "develop")  # the processes started, in order
# How each stops. Not SIGINT for the fake LLM: a run started in the
# background (nohup, a CI job) ignores SIGINT, its children inherit that, and
# only develop handles it itself (as Ctrl-C).
STOP_SIGNALS = {"llm": signal.SIGTERM, "develop": signal.SIGINT}
BODY = "terminal-001"

try:
    from playwright.async_api import Page, async_playwright
except ImportError:  # pragma: no cover - scripts/setup installs it
    async_playwright = None  # type: ignore[assignment]


def _chromium() -> str | None:
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def _skip_reason() -> str | None:
    if async_playwright is None:
        return "Playwright's Python package is missing (scripts/setup installs it)"
    if _chromium() is None:
        return f"no Chromium at {CHROMIUM}: apt-get install -y chromium"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the browser tests, with the reason, where they cannot run."""
    if (reason := _skip_reason()) is None:
        return
    for item in items:
        if "tests/browser" in str(item.path):
            item.add_marker(pytest.mark.skip(reason=reason))


@dataclass
class SoulHA:
    """The running Home Assistant and what the tests need of it."""

    url: str
    tokens: dict[str, str]
    souls: dict[str, str]  # name → soul_id
    config: Path
    shots: Path
    users: dict[str, str] = field(default_factory=dict)  # role → user id

    def ws(self, role: str, *commands: dict[str, Any]) -> list[Any]:
        """Run WebSocket commands as ``role``; return their results (raise on error)."""
        return _run(_ws(self.url, self.tokens[role], list(commands)))

    async def async_ws(self, role: str, *commands: dict[str, Any]) -> list[Any]:
        """``ws`` inside a running event loop."""
        return await _ws(self.url, self.tokens[role], list(commands))

    def request(
        self, method: str, path: str, role: str = "admin", body: Any = None
    ) -> tuple[int, Any]:
        """Call Home Assistant's HTTP API as ``role``."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - our own local server
            self.url + path, data=data, method=method
        )
        request.add_header("Authorization", f"Bearer {self.tokens[role]}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")


def _run[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in a loop of its own, leaving the thread's event loop be."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


async def _ws(url: str, token: str, commands: list[dict[str, Any]]) -> list[Any]:
    from devtools.hostile.client import HAWebSocket

    async with aiohttp.ClientSession() as session:
        ws = await HAWebSocket.connect(session, url, token)
        try:
            return [
                await ws.result(
                    c["type"], **{k: v for k, v in c.items() if k != "type"}
                )
                for c in commands
            ]
        finally:
            await ws.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/manifest.json", timeout=3):  # noqa: S310
            return True
    except urllib.error.HTTPError:
        return False
    except OSError:
        return False


def _until[T](what: str, check: Callable[[], T | None], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while (result := check()) is None or result is False:
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(1)
    return result


def _prepare(ha: SoulHA, llm_url: str) -> None:
    """Soul's model is the fake LLM; create and bind the souls."""
    from devtools.fake_llm import DEFAULT_MODEL

    flows = "/api/config/config_entries/flow"

    def entries() -> Any:
        status, body = ha.request("GET", "/api/config/config_entries/entry?domain=soul")
        return body if status == 200 and body else None

    entry_id = _until("Soul's entry", entries, 90)[0]["entry_id"]
    _, flow = ha.request("POST", flows, body={"handler": "soul", "entry_id": entry_id})
    endpoint = {"llm_base_url": llm_url, "llm_model": DEFAULT_MODEL}
    _, done = ha.request("POST", f"{flows}/{flow['flow_id']}", body=endpoint)
    assert done.get("type") == "abort", done
    # The user's id, for their soul.
    (user,) = ha.ws("user", {"type": "auth/current_user"})
    (admin,) = ha.ws("admin", {"type": "auth/current_user"})
    ha.users = {"user": user["id"], "admin": admin["id"]}

    def souls_api() -> Any:
        status, body = ha.request("GET", "/api/soul/v1/souls")
        return body if status == 200 else None

    _until("Soul's API", souls_api, 90)
    for name, mbti, owner in (
        ("Aria", "INFP", None),
        ("Dad's soul", "ESTJ", admin["id"]),
        ("Kid's soul", "ENFP", user["id"]),
    ):
        body = {"name": name, "mbti_type": mbti, "persona": "A gentle companion."}
        if owner:
            body["user_id"] = owner
        status, soul = ha.request("POST", "/api/soul/v1/souls", body=body)
        assert status == 201, soul
        ha.souls[name] = soul["soul_id"]

    def bound() -> Any:
        status, body = ha.request(
            "POST",
            "/api/soul/v1/souls/select",
            body={"terminal_id": BODY, "soul_id": ha.souls["Aria"]},
        )
        return body if status == 200 else None

    _until(f"{BODY} bound to Aria", bound, 120)

    def connected() -> Any:
        (answer,) = ha.ws("admin", {"type": "soul/bodies/list", "terminal_id": BODY})
        return (answer["bodies"] and answer["bodies"][0]["connected"]) or None

    _until(f"{BODY} connected", connected, 120)
    # A new instance asks for its country (a repair): answer it.
    ha.ws("admin", {"type": "config/core/update", "country": "US"})


@pytest.fixture(scope="session")
def soul_ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SoulHA]:
    """Start scripts/develop's Home Assistant with Soul, a body and the fake LLM."""
    pytest_socket.enable_socket()
    base = tmp_path_factory.mktemp("soul-browser")
    config = base / "config"
    shots = Path(os.environ.get("SOUL_SCREENSHOT_DIR") or base / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    http_port, mqtt_port, llm_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "SOUL_CONFIG_DIR": str(config),
        "SOUL_HTTP_PORT": str(http_port),
        "SOUL_MQTT_PORT": str(mqtt_port),
        "PYTHONPATH": str(ROOT),
    }
    logs = base / "logs"
    logs.mkdir()
    processes = []
    try:
        for name, command in zip(
            NAMES,
            (
                [sys.executable, "-m", "devtools.fake_llm", "--port", str(llm_port)],
                [sys.executable, "-m", "devtools.develop"],
            ),
            strict=True,
        ):
            with (logs / f"{name}.log").open("wb") as out:
                processes.append(
                    subprocess.Popen(  # noqa: S603
                        command,
                        cwd=ROOT,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        process_group=0,
                    )
                )
        url = f"http://127.0.0.1:{http_port}"
        develop = processes[-1]

        def up() -> bool | None:
            if develop.poll() is not None:
                log = (logs / "develop.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"scripts/develop stopped:\n{log}")
            return _answers(url) or None

        _until("Home Assistant", up, START_TIMEOUT)
        from devtools.hostile.bootstrap import bootstrap, read_json

        tokens_file = base / "tokens.json"
        options = {"url": url, "bootstrap": tokens_file, "token": None}
        _run(bootstrap(argparse.Namespace(**options)))
        saved = read_json(tokens_file)
        tokens = {
            "admin": saved["token"],
            "user": saved["user_token"],
            "read_only": saved["readonly_token"],
        }
        ha = SoulHA(url, tokens, {}, config, shots)
        _prepare(ha, f"http://127.0.0.1:{llm_port}/v1")
        yield ha
    finally:
        late = [
            name
            for name, process in reversed(list(zip(NAMES, processes, strict=False)))
            if not stop(process, STOP_SIGNALS[name], STOP_TIMEOUT)
        ]
        pytest_socket.disable_socket(allow_unix_socket=True)
        if late:  # killed: say what the log said last (it is gone with the run)
            tail = (logs / "develop.log").read_text(errors="replace")[-6000:]
            pytest.fail(
                f"{' and '.join(late)} did not stop within {STOP_TIMEOUT:g} s;"
                f" develop.log ends:\n{tail}"
            )


@pytest.fixture
def socket_on() -> Iterator[None]:
    """Sockets for the test (Home Assistant's test plugin disables them)."""
    pytest_socket.enable_socket()
    yield
    pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture
async def page_as(
    soul_ha: SoulHA, socket_on: None
) -> AsyncIterator[Callable[..., Awaitable[Page]]]:
    """Return ``await open(role, dark=False, narrow=False)``: a signed-in page.

    Debian's Chromium, headless, through Playwright's async API (its sync API
    marks the thread's event loop as running, which the test plugins' async
    fixtures cannot share).
    """
    executable = _chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )

        async def open_page(
            role: str, *, dark: bool = False, narrow: bool = False
        ) -> Page:
            size = (
                {"width": 390, "height": 844}
                if narrow
                else {"width": 1280, "height": 860}
            )
            context = await browser.new_context(
                viewport=size,
                color_scheme="dark" if dark else "light",
                locale="en-US",
                device_scale_factor=1,
            )
            url = soul_ha.url
            tokens = {
                "access_token": soul_ha.tokens[role],
                "token_type": "Bearer",
                "expires_in": 1800,
                "refresh_token": "",
                "expires": int(time.time() * 1000) + 10 * 365 * 86400 * 1000,
                "hassUrl": url,
                "clientId": f"{url}/",
            }
            storage = {
                "hassTokens": json.dumps(tokens),
                "dockedSidebar": json.dumps("docked"),
            }
            await context.add_init_script(
                f"""if (location.origin === {json.dumps(url)})
                  for (const [k, v] of Object.entries({json.dumps(storage)})) localStorage.setItem(k, v);"""
            )
            page = await context.new_page()
            page.set_default_timeout(30_000)
            page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
            page.on(
                "console",
                lambda m: (
                    m.type == "error"
                    and "soul" in m.text.lower()
                    and errors.append(m.text)
                ),
            )
            return page

        errors: list[str] = []
        try:
            yield open_page
        finally:
            await browser.close()
        # Soul's code threw nothing in the browser.
        assert not [e for e in errors if "soul" in e.lower()], errors
