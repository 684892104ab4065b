"""A real Home Assistant for the benchmarks: MQTT on a real broker, Soul, HTTP.

Home Assistant runs in-process with the machinery the tests use
(``async_test_home_assistant`` of pytest-homeassistant-custom-component), its
MQTT integration connected to ``devtools.broker``. Soul is set up from a
``MockConfigEntry`` (optionally with soul subentries), and its HTTP API is
served on a free port of 127.0.0.1 for real POSTs with a real access token.
Bodies that only need to exist are retained messages published straight to
the broker (``QuietBodies``); the body that answers is ``devtools.body_sim``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
import copy
import json
from pathlib import Path
import tempfile
import threading
from typing import Any
from unittest.mock import AsyncMock, patch
import uuid

import custom_components  # noqa: F401  # isort: skip  # before the test helpers' own
from aiohttp import ClientSession, test_utils
from homeassistant import loader
from homeassistant.auth.const import GROUP_ID_ADMIN
from homeassistant.components.http import HomeAssistantHTTP
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from paho.mqtt.client import CallbackAPIVersion, Client
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_test_home_assistant,
)

from custom_components.soul.const import CONF_TOPIC_PREFIX, DOMAIN
from devtools.body_sim import default_catalog, default_skills
from devtools.broker import MqttBroker, free_port
from devtools.ha_mqtt import async_setup_mqtt

CLIENT_ID = "https://soul.bench/"


@contextlib.asynccontextmanager
async def home_assistant(broker: MqttBroker) -> AsyncIterator[HomeAssistant]:
    """Yield a running Home Assistant whose MQTT integration is connected."""
    with (
        tempfile.TemporaryDirectory(prefix="soul-bench-ha-") as name,
        # Home Assistant's own web server stays off; ``serve_http`` serves the
        # app. (``HomeAssistantHTTP.start``: the oldest and the newest Home
        # Assistant both start the server through it.)
        patch.object(HomeAssistantHTTP, "start", AsyncMock()),
    ):
        (Path(name) / "configuration.yaml").touch()
        async with async_test_home_assistant(config_dir=name) as hass:
            hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)  # load ours
            assert await async_setup_component(hass, "homeassistant", {})
            entry = await async_setup_mqtt(hass, broker)
            try:
                yield hass
            finally:
                for soul in hass.config_entries.async_entries(DOMAIN):
                    if soul.state is ConfigEntryState.LOADED:
                        await hass.config_entries.async_unload(soul.entry_id)
                await hass.config_entries.async_unload(entry.entry_id)
                await hass.async_stop(force=True)


def soul_entry(
    hass: HomeAssistant,
    prefix: str,
    souls: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> MockConfigEntry:
    """Add (not set up) a Soul hub entry on ``prefix`` with ``souls`` (name, MBTI)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Soul",
        data={},
        options={CONF_TOPIC_PREFIX: prefix},
        subentries_data=[
            {
                "data": {"name": name, "mbti_type": mbti},
                "subentry_type": "soul",
                "title": name,
                "unique_id": None,
            }
            for name, mbti in souls
        ],
    )
    entry.add_to_hass(hass)
    return entry


async def access_token(hass: HomeAssistant) -> str:
    """Return an administrator's access token, as a logged-in client holds."""
    user = await hass.auth.async_create_user("bench", group_ids=[GROUP_ID_ADMIN])
    refresh = await hass.auth.async_create_refresh_token(user, CLIENT_ID)
    return hass.auth.async_create_access_token(refresh)


@contextlib.asynccontextmanager
async def serve_http(hass: HomeAssistant) -> AsyncIterator[ClientSession]:
    """Serve Home Assistant's HTTP app on 127.0.0.1; yield an authenticated client."""
    server = test_utils.TestServer(hass.http.app, host="127.0.0.1", port=free_port())
    server.app._router.freeze = lambda: None  # type: ignore[method-assign]  # noqa: SLF001  # as the test helpers
    await server.start_server()
    token = await access_token(hass)
    try:
        async with ClientSession(
            base_url=str(server.make_url("/")),
            headers={"Authorization": f"Bearer {token}"},
        ) as session:
            yield session
    finally:
        await server.close()


async def until(
    predicate: Callable[[], object], timeout: float = 60.0, step: float = 0.02
) -> None:
    """Wait until ``predicate()`` holds, letting Home Assistant work meanwhile."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110  # polls state, not an event
            await asyncio.sleep(step)


def body_id(index: int) -> str:
    """Return the terminal id of the ``index``-th quiet body."""
    return f"quiet-{index:04d}"


def body_snapshots(
    terminal_id: str, index: int, soul_hint: str | None
) -> dict[str, Any]:
    """Return a body's retained reports (skills with device info, its own catalog).

    Each catalog differs (one intent's name carries the index), so every
    body's catalog is compiled and held on its own: the worst case for memory.
    """
    skills = default_skills(terminal_id)
    if soul_hint is None:
        skills.pop("soul_hint", None)
    else:
        skills["soul_hint"] = soul_hint
    catalog = copy.deepcopy(default_catalog(terminal_id))
    catalog["intent_catalog"][-1]["name"] = f"头部动作 {index}"
    return {"online": "online", "skills": skills, "intent_catalog": catalog}


class QuietBodies:
    """Bodies that announce themselves and heartbeat, over one paho client.

    Their ``online``, ``skills`` and ``intent_catalog`` are retained (QoS 1),
    as a body publishes them; a thread sends every body's heartbeat each
    ``heartbeat`` seconds so none goes stale.
    """

    def __init__(
        self,
        broker: MqttBroker,
        prefix: str,
        ids: list[str],
        hints: list[str | None],
        *,
        heartbeat: float = 10.0,
    ) -> None:
        """Describe the bodies; nothing is sent before ``publish``."""
        self.prefix = prefix
        self.ids = ids
        self.hints = hints
        self.heartbeat = heartbeat
        self._client = Client(
            CallbackAPIVersion.VERSION2, client_id=f"quiet-{uuid.uuid4().hex[:12]}"
        )
        self._client.connect(broker.host, broker.port)
        self._client.loop_start()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _topic(self, terminal_id: str, kind: str) -> str:
        return f"{self.prefix}/terminal/{terminal_id}/{kind}"

    def publish(self) -> None:
        """Publish every body's retained reports, wait for the broker, heartbeat."""
        infos = []
        for index, (terminal_id, hint) in enumerate(
            zip(self.ids, self.hints, strict=True)
        ):
            for kind, payload in body_snapshots(terminal_id, index, hint).items():
                text = (
                    payload
                    if isinstance(payload, str)
                    else json.dumps(payload, ensure_ascii=False)
                )
                infos.append(
                    self._client.publish(
                        self._topic(terminal_id, kind), text, qos=1, retain=True
                    )
                )
        for info in infos:
            info.wait_for_publish(30)
        self._beat()
        if self.heartbeat > 0:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        for terminal_id in self.ids:
            self._client.publish(self._topic(terminal_id, "heartbeat"), "1", qos=0)

    def _loop(self) -> None:
        while not self._stop.wait(self.heartbeat):
            self._beat()

    def clear(self) -> None:
        """Clear the retained reports (the broker is shared by the phases)."""
        infos = [
            self._client.publish(self._topic(t, kind), b"", qos=1, retain=True)
            for t in self.ids
            for kind in ("intent_catalog", "skills", "online")
        ]
        for info in infos:
            info.wait_for_publish(30)

    def stop(self) -> None:
        """Stop heartbeating and disconnect."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._client.disconnect()
        self._client.loop_stop()


async def run_blocking[T](hass: HomeAssistant, call: Callable[[], T]) -> T:
    """Run a blocking call (paho, a body's start) in Home Assistant's executor."""
    return await hass.async_add_executor_job(call)


type Step = Callable[[], Awaitable[object]]
