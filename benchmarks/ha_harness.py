"""A real Home Assistant for the benchmarks: MQTT on a real broker, Soul, HTTP.

Home Assistant runs in-process with the machinery the tests use
(``async_test_home_assistant`` of pytest-homeassistant-custom-component), its
MQTT integration connected to ``devtools.broker``. Soul is set up from a
``MockConfigEntry`` (optionally with soul subentries), and its HTTP API is
served on a free port of 127.0.0.1 for real POSTs with a real access token.
Bodies that only need to exist are retained messages published straight to
the broker (``benchmarks.quiet_bodies``); the body that answers is
``devtools.body_sim``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
from pathlib import Path
import tempfile
from typing import NamedTuple
from unittest.mock import AsyncMock, patch

import custom_components  # noqa: F401  # isort: skip  # before the test helpers' own
from aiohttp import ClientSession, test_utils
from homeassistant import loader
from homeassistant.auth.const import GROUP_ID_ADMIN
from homeassistant.components.http import HomeAssistantHTTP
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_test_home_assistant,
)

from custom_components.soul.const import CONF_TOPIC_PREFIX, DOMAIN
from devtools.broker import MqttBroker, free_port
from devtools.ha_mqtt import async_setup_mqtt

CLIENT_ID = "https://soul.bench/"


@contextlib.asynccontextmanager
async def home_assistant(broker: MqttBroker) -> AsyncIterator[HomeAssistant]:
    """Yield a running Home Assistant whose MQTT integration is connected."""
    with (
        tempfile.TemporaryDirectory(prefix="soul-bench-ha-") as name,
        contextlib.ExitStack() as stack,
    ):
        # Home Assistant's own web server stays off; ``serve_http`` serves the
        # app. Every Home Assistant starts it with ``HomeAssistantHTTP.start``;
        # the newest binds its port earlier, at setup (``async_bind``), which
        # failed the benchmarks while a ``scripts/develop`` held port 8123.
        for method in ("start", "async_bind"):
            if hasattr(HomeAssistantHTTP, method):
                stack.enter_context(
                    patch.object(HomeAssistantHTTP, method, AsyncMock())
                )
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


class Served(NamedTuple):
    """Home Assistant's HTTP app served: a client on its loop, and how to reach it."""

    client: ClientSession  # authenticated, on Home Assistant's own loop
    port: int  # on 127.0.0.1
    token: str  # an administrator's access token


@contextlib.asynccontextmanager
async def serve_http(hass: HomeAssistant) -> AsyncIterator[Served]:
    """Serve Home Assistant's HTTP app on 127.0.0.1; yield it with an authenticated client."""
    port = free_port()
    server = test_utils.TestServer(hass.http.app, host="127.0.0.1", port=port)
    server.app._router.freeze = lambda: None  # type: ignore[method-assign]  # noqa: SLF001  # as the test helpers
    await server.start_server()
    token = await access_token(hass)
    try:
        async with ClientSession(
            base_url=str(server.make_url("/")),
            headers={"Authorization": f"Bearer {token}"},
        ) as session:
            yield Served(session, port, token)
    finally:
        await server.close()


async def until(
    predicate: Callable[[], object], timeout: float = 60.0, step: float = 0.02
) -> None:
    """Wait until ``predicate()`` holds, letting Home Assistant work meanwhile."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110  # polls state, not an event
            await asyncio.sleep(step)


async def run_blocking[T](hass: HomeAssistant, call: Callable[[], T]) -> T:
    """Run a blocking call (paho, a body's start) in Home Assistant's executor."""
    return await hass.async_add_executor_job(call)


type Step = Callable[[], Awaitable[object]]
