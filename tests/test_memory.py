"""Memory in Home Assistant: embedded mem0 and the mem0 server, recall in chat, archival."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import timedelta
import json
import logging
from pathlib import Path
import sys
from typing import Any
from unittest.mock import patch

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.requirements import async_process_requirements
from homeassistant.util import package as pkg_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    MqttMockHAClient,
)

from custom_components.soul.const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_TOPIC_PREFIX,
    DOMAIN,
    MEM0_DEPENDENCIES,
)
from custom_components.soul.core.memory.mem0_embedded import EmbeddedMem0
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics
from devtools.fake_llm import (
    DEFAULT_MODEL,
    FakeOpenAI,
    mem0_responder,
    quiet_navigator,
    tool_call,
)
from devtools.mem0_rest import Mem0Rest

from .core.memory import make_config
from .mem0_environment import ha_pin
from .package_index import LocalIndex
from .test_terminals import T, announce

pytestmark = pytest.mark.usefixtures("mem0_installed")
CHAT = "/api/soul/v1/chat"
SENSOR = "binary_sensor.soul_memory"
DIMS = 64


def statuses(mqtt_mock: MqttMockHAClient) -> list[str]:
    """Return the §3.7 statuses published so far, in order."""
    return [
        json.loads(c.args[1])["status"]
        for c in mqtt_mock.async_publish.call_args_list
        if c.args[0].endswith("/status")
    ]


def turn(text: str, session: str = "s1") -> dict[str, Any]:
    """Return a §4.2.1 body from user u1."""
    return {
        "session_id": session,
        "terminal_id": T,
        "user_id": "u1",
        "inputs": [{"type": "keyboard_text", "text": text}],
    }


@pytest.fixture
def llm(fake_llm: FakeOpenAI) -> FakeOpenAI:
    """The fake LLM, also answering mem0's extraction prompt."""
    fake_llm.responders.append(mem0_responder)
    # The navigator reflects on idle sessions too: a scripted queue is not its.
    fake_llm.responders.append(quiet_navigator)
    return fake_llm


def options(llm: FakeOpenAI, **extra: Any) -> dict[str, Any]:
    """Hub options with the fake LLM and its embedder."""
    return {
        CONF_TOPIC_PREFIX: "soul",
        CONF_LLM_BASE_URL: llm.base_url,
        CONF_LLM_MODEL: DEFAULT_MODEL,
        CONF_EMBEDDING_MODEL: "fake-embedding",
        CONF_EMBEDDING_DIMS: DIMS,
        **extra,
    }


async def setup(hass: HomeAssistant, opts: dict[str, Any]) -> MockConfigEntry:
    """Set up the hub, announce the spec's body and wait for the health check."""
    entry = MockConfigEntry(domain=DOMAIN, data={}, options=opts)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    announce(hass)  # soul_hint binds it to a new soul
    await hass.async_block_till_done()
    return entry


async def test_embedded_memory(
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    hass_client: ClientSessionGenerator,
) -> None:
    with patch(
        "custom_components.soul.memory.async_process_requirements",
        wraps=async_process_requirements,
    ) as process_requirements:
        # embedded is the default with an LLM
        entry = await setup(hass, options(llm))
    # mem0's real requirements went through Home Assistant's requirements helper,
    # and mem0 runs next to the protobuf this Home Assistant pins (7 on >= 2026.10).
    process_requirements.assert_awaited_once_with(
        hass, DOMAIN, list(MEM0_DEPENDENCIES), is_built_in=False
    )
    pin = ha_pin("protobuf")
    assert pin and await hass.async_add_executor_job(pkg_util.is_installed, pin)
    assert ir.async_get(hass).async_get_issue(DOMAIN, "mem0_unavailable") is None
    try:
        assert hass.states.get(SENSOR).state == "on"
        assert hass.states.get(SENSOR).attributes["backend"] == "mem0_embedded"
        stored = await hass.services.async_call(
            DOMAIN, "remember", {"text": "我家猫叫咪咪", "user_id": "u1", "soul_id": "friendly"},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert len(stored["ids"]) == 1
        # The model recalls, then answers with the memory.
        llm.reply(tool_calls=[tool_call("recall_memory", {"query": "猫叫什么"})])
        llm.reply("你家猫叫咪咪。")
        client = await hass_client()
        body = await (await client.post(CHAT, json=turn("我家的猫叫什么名字？"))).json()
        assert body["reply"] == "你家猫叫咪咪。"
        assert body["executed_skills"] == ["recall_memory"]
        assert statuses(mqtt_mock) == ["mem0_searching", "mem0_search_done"]
        recalled = json.loads(llm.chat_requests[-1]["messages"][-1]["content"])
        assert "我家猫叫咪咪" in recalled["memories"]
        found = await hass.services.async_call(
            DOMAIN, "recall", {"query": "猫", "user_id": "u1"},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert found["memories"][0]["memory"] == "我家猫叫咪咪"
        assert found["memories"][0]["metadata"]["type"] == "fact"
        # A restart keeps the memories (mem0's store is on disk).
        assert await hass.config_entries.async_unload(entry.entry_id)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done(wait_background_tasks=True)
        found = await hass.services.async_call(
            DOMAIN, "recall", {"query": "猫", "user_id": "u1"},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert [m["memory"] for m in found["memories"]] == ["我家猫叫咪咪"]
        diagnostics = await async_get_config_entry_diagnostics(hass, entry)
        assert diagnostics["memory"]["ready"] is True
        assert diagnostics["memory"]["memories_per_user"] == {"u1": 1}
        await hass.services.async_call(
            DOMAIN, "forget", {"user_id": "u1"}, blocking=True
        )
        found = await hass.services.async_call(
            DOMAIN, "recall", {"query": "猫", "user_id": "u1"},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert found["memories"] == []
    finally:
        assert await hass.config_entries.async_unload(entry.entry_id)


@pytest.fixture
async def mem0_server(
    tmp_path: Path, llm: FakeOpenAI
) -> AsyncGenerator[tuple[Mem0Rest, EmbeddedMem0]]:
    """A mem0 REST server on a real embedded mem0 (its own store)."""
    import asyncio

    backend = EmbeddedMem0(make_config(tmp_path / "server", llm), asyncio.to_thread)
    server = Mem0Rest(backend, api_key="k1")
    await server.start()
    yield server, backend
    await server.close()
    await backend.close()


async def test_server_memory_outage_archival_and_restart(  # noqa: PLR0917
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    hass_client: ClientSessionGenerator,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
    mem0_server: tuple[Mem0Rest, EmbeddedMem0],
) -> None:
    server, backend = mem0_server
    entry = await setup(
        hass,
        options(
            llm,
            **{CONF_MEMORY_BACKEND: "mem0_server", CONF_MEM0_URL: server.base_url},
            **{CONF_MEM0_API_KEY: "k1"},
        ),
    )
    assert hass.states.get(SENSOR).state == "on"
    client = await hass_client()
    # A first session, archived after 3 idle minutes.
    # (Every model call is scripted: a retry's back-off would wait on the frozen clock.)
    llm.reply("你好，小明！")
    llm.reply("用户叫小明。")  # the summary
    await client.post(CHAT, json=turn("你觉得我叫小明这个名字好听吗？"))
    freezer.tick(timedelta(minutes=3, seconds=15))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    kept = await backend.get_all(user_id="u1")
    assert any("小明" in item.text for item in kept)
    episode = [i for i in kept if i.metadata.get("type") == "episode"]
    assert episode and episode[0].metadata["session_id"] == "s1"
    assert episode[0].agent_id == entry.runtime_data.souls.soul_of(T).soul_id

    # The server goes down: the search fails, the answer still comes.
    await server.close()
    llm.reply(tool_calls=[tool_call("recall_memory", {"query": "我叫什么"})])
    llm.reply("抱歉，我一时想不起来。")
    llm.reply("用户问自己的名字。")  # the summary
    body = await (await client.post(CHAT, json=turn("我叫什么？", "s2"))).json()
    assert body["reply"] == "抱歉，我一时想不起来。"
    assert statuses(mqtt_mock)[-2:] == ["mem0_searching", "mem0_search_failed"]
    assert hass.states.get(SENSOR).state == "off"
    # A session ending while the server is down is queued, on disk across a restart.
    freezer.tick(timedelta(minutes=3, seconds=15))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert entry.runtime_data.memory.queue
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert hass_storage["soul.memory"]["data"]["queue"]

    await server.start(port=server.port)  # back on the same address
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert entry.runtime_data.memory.queue == []
    assert hass.states.get(SENSOR).state == "on"
    sessions = {
        i.metadata.get("session_id") for i in await backend.get_all(user_id="u1")
    }
    assert {"s1", "s2"} <= sessions
    assert await hass.config_entries.async_unload(entry.entry_id)


def repair_error(hass: HomeAssistant) -> str:
    """Return the error the ``mem0_unavailable`` repair issue shows."""
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "mem0_unavailable")
    assert issue is not None
    return issue.translation_placeholders["error"]


async def assert_without_memory(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Soul runs without memory; unload it."""
    assert hass.states.get(SENSOR).state == "off"
    assert entry.runtime_data.chat.memory is None
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_repair_issue_when_mem0_s_requirements_cannot_be_installed(
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Home Assistant's requirements helper really fails (an empty local index)."""
    LocalIndex(tmp_path / "index", monkeypatch)
    with patch(
        "custom_components.soul.memory.MEM0_DEPENDENCIES", ("soul-missing-dep==1.0",)
    ):
        entry = await setup(hass, options(llm))
    assert "soul-missing-dep==1.0" in repair_error(hass)
    await assert_without_memory(hass, entry)


async def test_repair_issue_when_mem0ai_cannot_be_installed_then_cleared(
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The --no-deps install really fails; the next good setup clears the issue."""
    LocalIndex(tmp_path / "index", monkeypatch)
    with patch(
        "custom_components.soul.memory.MEM0_REQUIREMENT", "soul-missing-mem0==1.0"
    ):
        entry = await setup(hass, options(llm))
    error = repair_error(hass)
    assert error.startswith("cannot install soul-missing-mem0==1.0: ")
    assert "not found" in error  # uv's own words
    await assert_without_memory(hass, entry)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert ir.async_get(hass).async_get_issue(DOMAIN, "mem0_unavailable") is None
    assert hass.states.get(SENSOR).state == "on"
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_repair_issue_when_mem0_does_not_import(
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Installed (its metadata is there) but not importable: the import check says so."""
    monkeypatch.setitem(sys.modules, "mem0", None)
    entry = await setup(hass, options(llm))
    assert repair_error(hass) == "mem0ai is not importable"
    await assert_without_memory(hass, entry)


async def test_skip_pip_packages_skips_the_mem0ai_install(  # noqa: PLR0917
    hass: HomeAssistant,
    llm: FakeOpenAI,
    mqtt_mock: MqttMockHAClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Listed in Home Assistant's skip_pip_packages, mem0ai is never installed."""
    LocalIndex(tmp_path / "index", monkeypatch)  # an install would fail
    hass.config.skip_pip_packages = ["mem0ai"]
    # Another version than the installed one: without the skip, uv would run.
    with (
        caplog.at_level(logging.WARNING),
        patch("custom_components.soul.memory.MEM0_REQUIREMENT", "mem0ai==0.0.1"),
    ):
        entry = await setup(hass, options(llm))
    assert "Skipping requirement mem0ai==0.0.1" in caplog.text
    assert ir.async_get(hass).async_get_issue(DOMAIN, "mem0_unavailable") is None
    assert hass.states.get(SENSOR).state == "on"
    assert await hass.config_entries.async_unload(entry.entry_id)
