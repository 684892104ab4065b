"""Fixtures shared by all tests.

``custom_components`` is imported first, before pytest-homeassistant-custom-component
puts its own ``testing_config/custom_components`` package in the way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
import logging
from pathlib import Path
from typing import Any
from unittest.mock import Mock, PropertyMock, patch

import custom_components  # noqa: F401  # isort: skip
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    MqttMockHAClient,
    MqttMockPahoClient,
)
import pytest_socket

from custom_components.soul.const import CONF_TOPIC_PREFIX, DOMAIN
from custom_components.soul.core.logs import THROTTLE
from devtools.broker import MqttBroker
from devtools.fake_llm import FakeOpenAI
from devtools.ha_mqtt import async_setup_mqtt

from .mem0_environment import prepare_mem0


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: None) -> None:
    """Let Home Assistant load custom_components/soul in every test."""


@pytest.fixture(autouse=True)
def fresh_log_throttle() -> None:
    """Each test's warnings count from none (``core.logs.THROTTLE``)."""
    THROTTLE.forget()


class _SoulUsageReports(logging.Handler):
    """Keeps what Home Assistant's frame helper reports about Soul."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "integration 'soul'" in (message := record.getMessage()):
            self.reports.append(message)


@pytest.fixture(autouse=True)
def no_deprecated_home_assistant_calls() -> Generator[None]:
    """Soul calls nothing Home Assistant reports as deprecated or misused.

    Home Assistant's ``report_usage`` logs "Detected that custom integration
    'soul' calls …" for an API it is retiring (the newest lane shows those of
    tomorrow's Home Assistant); any such line fails the test.
    """
    handler = _SoulUsageReports()
    logger = logging.getLogger("homeassistant.helpers.frame")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert not handler.reports, handler.reports


@pytest.fixture
async def hass(hass: HomeAssistant, tmp_path: Path) -> HomeAssistant:
    """Home Assistant with its core integration set up.

    `conversation`, a dependency of Soul, needs the exposed-entities store it creates.
    """
    # Files Soul writes (mem0's store) go to this test's own directory, not to
    # the plugin's shared testing_config.
    hass.config.config_dir = str(tmp_path / "config")
    (tmp_path / "config").mkdir()
    assert await async_setup_component(hass, "homeassistant", {})
    return hass


@pytest.fixture
async def mqtt_mock(
    mqtt_mock: MqttMockHAClient, mqtt_client_mock: MqttMockPahoClient
) -> AsyncGenerator[MqttMockHAClient]:
    """The plugin's mocked MQTT client, whose socket closes after the test.

    The mock opens a socket but never closes it, so newer Home Assistant keeps
    the client's periodic timer running past the test; close it as paho would.
    """
    yield mqtt_mock
    mqtt_client_mock.on_socket_close(
        mqtt_client_mock, None, Mock(fileno=Mock(return_value=-1))
    )


@pytest.fixture
async def fake_llm(socket_enabled: None) -> AsyncGenerator[FakeOpenAI]:
    """Serve a scripted OpenAI-compatible API on 127.0.0.1 (no API key required).

    Requesting it allows the test to open sockets (to 127.0.0.1 only).
    """
    server = FakeOpenAI()
    await server.start()
    yield server
    await server.close()


@pytest.fixture(scope="session")
def mem0_installed() -> None:
    """mem0ai installed as Soul installs it in Home Assistant (tests/mem0_environment.py)."""
    prepare_mem0()


@pytest.fixture(scope="session")
def _session_mqtt_broker() -> Generator[MqttBroker]:
    """One real broker for the whole session, started on first use."""
    # pytest-socket blocks sockets during tests; starting the broker needs them.
    pytest_socket.enable_socket()
    try:
        broker = MqttBroker().start()
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)
    yield broker
    broker.stop()


@pytest.fixture
def mqtt_broker(_session_mqtt_broker: MqttBroker, socket_enabled: None) -> MqttBroker:
    """A real MQTT broker (mosquitto when on PATH, else amqtt) on 127.0.0.1."""
    return _session_mqtt_broker


@pytest.fixture
async def real_mqtt(
    hass: HomeAssistant, mqtt_broker: MqttBroker, mock_hass_config: None
) -> AsyncGenerator[MockConfigEntry]:
    """Home Assistant's MQTT integration, connected to the real broker."""
    entry = await async_setup_mqtt(hass, mqtt_broker, timeout=10)
    yield entry
    assert await hass.config_entries.async_unload(entry.entry_id)


@pytest.fixture
def entity_registry_enabled_by_default() -> Generator[None]:
    """Enable the entities that are disabled by default (request it before setup)."""
    with patch(
        "homeassistant.helpers.entity.Entity.entity_registry_enabled_default",
        new_callable=PropertyMock,
        return_value=True,
    ):
        yield


@pytest.fixture
def soul_options() -> dict[str, Any]:
    """The options of the Soul hub entry; override in a test module to change them."""
    return {CONF_TOPIC_PREFIX: "soul"}


@pytest.fixture
def soul_entry(hass: HomeAssistant, soul_options: dict[str, Any]) -> MockConfigEntry:
    """A Soul hub entry added to Home Assistant but not set up."""
    entry = MockConfigEntry(domain=DOMAIN, title="Soul", data={}, options=soul_options)
    entry.add_to_hass(hass)
    return entry


@pytest.fixture(autouse=True)
async def unload_soul_after_test(
    request: pytest.FixtureRequest,
) -> AsyncGenerator[None]:
    """Unload every loaded Soul entry before Home Assistant stops.

    Newer Home Assistant leaves MQTT's cooldown timer behind when Soul is
    still loaded at the end of a test (and Soul's journal writer would run
    until the stop's final write). Taking ``hass`` before the test makes this
    teardown run before Home Assistant's own.
    """
    hass = request.getfixturevalue("hass") if "hass" in request.fixturenames else None
    yield
    if hass is None or not hass.is_running:
        return
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry.state is ConfigEntryState.LOADED:
            await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()


@pytest.fixture
async def init_integration(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, soul_entry: MockConfigEntry
) -> MockConfigEntry:
    """Set Soul up on a mocked MQTT client and return its entry."""
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    await hass.async_block_till_done()
    return soul_entry
