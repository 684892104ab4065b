"""Souls in Home Assistant: subentries, soul devices, HTTP API, actions, tick, events."""

from __future__ import annotations

import asyncio
from datetime import timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.device_automation import DeviceAutomationType
from homeassistant.config_entries import SOURCE_RECONFIGURE, SOURCE_USER
from homeassistant.core import Context, Event, HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
    async_get_device_automations,
)
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    MqttMockHAClient,
)
import voluptuous as vol

from custom_components.soul.const import (
    CONF_EMOTION_TICK_INTERVAL,
    CONF_TOPIC_PREFIX,
    DOMAIN,
    EVENT_EMOTION_UPDATE,
    EVENT_EXEC_MODE_CHANGED,
    EVENT_USER_EMOTION,
    SECTION_ADVANCED,
    SECTION_MCP,
    SECTION_MEMORY,
)
from custom_components.soul.core.emotion.persona import persona_from_mbti
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics
from custom_components.soul.entity import ADD_CHUNK
from custom_components.soul.helpers import find_device
from custom_components.soul.souls import STORAGE_KEY

from .core.spec_payloads import skills
from .test_terminals import T, announce

SOULS = "/api/soul/v1/souls"
SELECT = "/api/soul/v1/souls/select"
ANALYZE = "/api/soul/v1/emotion/analyze"


def emotion_updates(
    mqtt_mock: MqttMockHAClient, *, ticks: bool = False
) -> list[tuple[str, dict[str, Any]]]:
    """Return the emotion_update messages published so far: user turns, or ticks.

    (The tick runs on the loop's real clock too, so a slow test may see one.)
    """
    return [
        (c.args[0], payload)
        for c in mqtt_mock.async_publish.call_args_list
        if c.args[0].endswith("/emotion_update")
        and ((payload := json.loads(c.args[1]))["session_id"] == "system_decay_tick")
        is ticks
    ]


def capture(hass: HomeAssistant, event_type: str) -> list[Event]:
    """Record the bus events of one type."""
    events: list[Event] = []

    @callback
    def record(event: Event) -> None:
        events.append(event)

    hass.bus.async_listen(event_type, record)
    return events


async def add_soul_flow(
    hass: HomeAssistant, entry: MockConfigEntry, **data: str
) -> dict[str, Any]:
    """Add a soul through the UI flow and return the final result."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "soul"), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    return await hass.config_entries.subentries.async_configure(result["flow_id"], data)


def soul_ids(entry: MockConfigEntry) -> list[str]:
    """Return the ids of the hub's soul subentries."""
    return [
        s.subentry_id for s in entry.subentries.values() if s.subentry_type == "soul"
    ]


async def test_add_soul_in_the_ui(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    entry = init_integration
    result = await add_soul_flow(hass, entry, name="Aria", mbti_type="XXXX")
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"mbti_type": "invalid_mbti_type"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Aria", "mbti_type": "enfp", "persona": "Warm."}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    (soul_id,) = soul_ids(entry)
    assert entry.subentries[soul_id].data == {
        "name": "Aria", "mbti_type": "ENFP", "persona": "Warm."
    }  # fmt: skip
    device = find_device(hass, entry.entry_id, f"soul/{soul_id}")
    assert device is not None
    assert (device.name, device.model) == ("Aria", "ENFP")
    baseline = persona_from_mbti("ENFP").baseline
    assert float(hass.states.get("sensor.aria_pleasure").state) == round(baseline.p, 1)
    assert float(hass.states.get("sensor.aria_dominance").state) == round(baseline.d, 1)
    assert hass.states.get("sensor.aria_mood").state == "exuberant"
    assert hass.states.get("sensor.aria_execution_mode").state == "auto_execute"
    probability = hass.states.get("sensor.aria_execution_probability")
    assert probability.attributes["unit_of_measurement"] == "%"
    assert 90 <= float(probability.state) <= 100
    # A soul's device offers the soul's triggers, not a body's actions.
    assert await async_setup_component(hass, "device_automation", {})
    actions = await async_get_device_automations(
        hass, DeviceAutomationType.ACTION, device.id
    )
    assert not [a for a in actions if a["domain"] == DOMAIN]
    triggers = await async_get_device_automations(
        hass, DeviceAutomationType.TRIGGER, device.id
    )
    assert sorted(t["type"] for t in triggers if t["domain"] == DOMAIN) == [
        "execution_blocked", "execution_unblocked", "mood_changed"
    ]  # fmt: skip

    # Reconfigure: a new type and name reach the device and the temperament.
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "soul"),
        context={"source": SOURCE_RECONFIGURE, "subentry_id": soul_id},
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Bo", "mbti_type": "ISTJ"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.runtime_data.souls.soul(soul_id).mbti == "ISTJ"
    device = find_device(hass, entry.entry_id, f"soul/{soul_id}")
    assert (device.name, device.model) == ("Bo", "ISTJ")
    # The hub was not reloaded for that.
    assert entry.runtime_data.souls.soul(soul_id) is not None

    # Deleting the subentry removes the soul's device and entities.
    assert hass.config_entries.async_remove_subentry(entry, soul_id)
    await hass.async_block_till_done()
    assert find_device(hass, entry.entry_id, f"soul/{soul_id}") is None
    assert er.async_get(hass).async_get("sensor.aria_pleasure") is None
    assert entry.runtime_data.souls.souls == {}


async def test_http_souls(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_admin_user: Any,
) -> None:
    client = await hass_client()
    response = await client.post(SOULS, json={"name": "Aria", "mbti_type": "INFJ-T"})
    assert response.status == 201
    aria = await response.json()
    assert aria["name"] == "Aria" and aria["mbti_type"] == "INFJ-T"
    assert aria["soul_id"] in init_integration.subentries
    assert aria["emotion"]["exec_mode"] == "auto_execute"
    response = await client.post(
        SOULS, json={"name": "Bo", "mbti_type": "ESTP", "user_id": "kid"}
    )
    bo = await response.json()
    await hass.async_block_till_done()
    assert hass.states.get("sensor.bo_mood") is not None

    listing = await (await client.get(SOULS)).json()
    assert {s["name"] for s in listing["souls"]} == {"Aria"}  # the caller's
    listing = await (await client.get(SOULS, params={"all": "1"})).json()
    assert {s["name"] for s in listing["souls"]} == {"Aria", "Bo"}
    kid = await (await client.get(SOULS, params={"user_id": "kid"})).json()
    assert [s["soul_id"] for s in kid["souls"]] == [bo["soul_id"]]
    # The caller owns what it creates unless told otherwise.
    assert aria["user_id"] == hass_admin_user.id

    response = await client.post(
        SELECT, json={"terminal_id": T, "soul_id": aria["soul_id"]}
    )
    assert response.status == 200
    assert (await response.json())["soul"]["terminal_ids"] == [T]
    # Several terminals may share a soul; a soul's name works as its id.
    response = await client.post(SELECT, json={"terminal_id": "t2", "soul_id": "aria"})
    assert (await response.json())["soul"]["terminal_ids"] == ["t2", T]
    assert init_integration.runtime_data.souls.bindings() == {
        T: aria["soul_id"], "t2": aria["soul_id"]
    }  # fmt: skip


@pytest.mark.parametrize(
    ("url", "body", "status", "message"),
    [
        (SOULS, {"mbti_type": "ENFP"}, 400, "name must be"),
        (SOULS, {"name": "A", "mbti_type": "ABCD"}, 400, "mbti_type must be one of"),
        (SOULS, {"name": "A"}, 400, "mbti_type must be one of"),
        (SOULS, {"name": "A", "mbti_type": "ENFP", "persona": 3}, 400, "persona"),
        (SOULS, {"name": "A", "mbti_type": "ENFP", "user_id": 3}, 400, "user_id"),
        (SOULS, [1], 400, "JSON object"),
        (SELECT, {"terminal_id": T}, 400, "soul_id must be"),
        (SELECT, {"soul_id": "x"}, 400, "terminal_id must be"),
        (SELECT, {"terminal_id": T, "soul_id": "nobody"}, 404, "unknown soul_id"),
        (ANALYZE, {}, 400, "text must be a non-empty string"),
        (ANALYZE, {"text": "  "}, 400, "text must be a non-empty string"),
        (ANALYZE, {"text": 5}, 400, "text must be a non-empty string"),
        (ANALYZE, {"text": "x" * 5000}, 400, "at most 4096"),
        (ANALYZE, {"text": "hi", "terminal_id": "unbound"}, 400, "soul selection is required"),
        (ANALYZE, {"text": "hi", "terminal_id": 7}, 400, "terminal_id must be a string"),
    ],
)  # fmt: skip
async def test_http_errors(  # noqa: PLR0917
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    url: str,
    body: Any,
    status: int,
    message: str,
) -> None:
    client = await hass_client()
    response = await client.post(url, json=body)
    assert response.status == status
    assert message in (await response.json())["error"]


async def test_http_bad_json_and_bad_terminal(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    client = await hass_client()
    for url in (SOULS, SELECT, ANALYZE):
        response = await client.post(url, data=b"{nope")
        assert response.status == 400
        assert "not valid JSON" in (await response.json())["error"]
    soul = await (
        await client.post(SOULS, json={"name": "A", "mbti_type": "ENFP"})
    ).json()
    response = await client.post(
        SELECT, json={"terminal_id": "bad/id", "soul_id": soul["soul_id"]}
    )
    assert response.status == 400
    assert "invalid terminal_id" in (await response.json())["error"]


async def test_http_needs_auth(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client_no_auth: ClientSessionGenerator,
) -> None:
    client = await hass_client_no_auth()
    assert (await client.get(SOULS)).status == 401
    assert (await client.post(ANALYZE, json={"text": "hi"})).status == 401


async def test_analyze_is_pure_without_terminal(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    mqtt_mock: MqttMockHAClient,
) -> None:
    client = await hass_client()
    response = await client.post(ANALYZE, json={"text": "我好难过"})
    assert response.status == 200
    body = await response.json()
    assert set(body) == {"emotion", "p", "a", "d", "intensity"}
    assert body["emotion"] == "sadness"
    assert body["p"] < 0 < body["intensity"] <= 1
    assert emotion_updates(mqtt_mock) == []


async def test_user_turn_moves_soul_fires_events_and_triggers(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    mqtt_mock: MqttMockHAClient,
) -> None:
    entry = init_integration
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    soul = await (
        await client.post(SOULS, json={"name": "Aria", "mbti_type": "ENFP"})
    ).json()
    await client.post(SELECT, json={"terminal_id": T, "soul_id": soul["soul_id"]})
    await hass.async_block_till_done()
    terminal_device = find_device(hass, entry.entry_id, T)
    soul_device = find_device(hass, entry.entry_id, f"soul/{soul['soul_id']}")

    # Automations on the device triggers: the user is sad; the soul refuses.
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": [
                {
                    "triggers": [{
                        "platform": "device", "domain": DOMAIN,
                        "device_id": terminal_device.id,
                        "type": "user_emotion_group", "group": "sad",
                    }],
                    "actions": [{"event": "test_user_sad"}],
                },
                {
                    "triggers": [{
                        "platform": "device", "domain": DOMAIN,
                        "device_id": terminal_device.id,
                        "type": "user_emotion", "emotion": "anger",
                    }],
                    "actions": [{"event": "test_user_angry"}],
                },
                {
                    "triggers": [{
                        "platform": "device", "domain": DOMAIN,
                        "device_id": soul_device.id, "type": "execution_blocked",
                    }],
                    "actions": [{"event": "test_blocked"}],
                },
                {
                    "triggers": [{
                        "platform": "device", "domain": DOMAIN,
                        "device_id": soul_device.id, "type": "mood_changed",
                    }],
                    "actions": [{"event": "test_mood"}],
                },
            ]
        },
    )  # fmt: skip
    sad = capture(hass, "test_user_sad")
    angry = capture(hass, "test_user_angry")
    blocked = capture(hass, "test_blocked")
    moods = capture(hass, "test_mood")
    updates = capture(hass, EVENT_EMOTION_UPDATE)
    user_events = capture(hass, EVENT_USER_EMOTION)
    exec_changes = capture(hass, EVENT_EXEC_MODE_CHANGED)

    response = await client.post(
        ANALYZE, json={"text": "我好难过", "terminal_id": T, "session_id": "s1"}
    )
    assert response.status == 200
    body = await response.json()
    assert body["emotion"] == "sadness"
    assert body["soul_id"] == soul["soul_id"]
    await hass.async_block_till_done()
    ((topic, payload),) = emotion_updates(mqtt_mock)
    assert topic == f"soul/terminal/{T}/emotion_update"
    assert payload["session_id"] == "s1"
    assert payload["user_emotion"]["emotion"] == "sadness"
    assert payload["soul_emotion"] == body["soul_emotion"]
    assert [e.data for e in updates if e.data["session_id"] == "s1"] == [payload]
    assert user_events[0].data["group"] == "sad"
    assert user_events[0].data["device_id"] == terminal_device.id
    assert len(sad) == 1 and not angry
    event_state = hass.states.get("event.terminal_001_user_emotion")
    assert event_state.attributes["event_type"] == "sadness"
    assert event_state.attributes["group"] == "sad"
    assert float(hass.states.get("sensor.aria_pleasure").state) < soul["emotion"]["p"]

    # Intense anger shocks the soul: execution blocked, trigger fires.
    await client.post(ANALYZE, json={"text": "气死我了！！！滚！", "terminal_id": T})
    await hass.async_block_till_done()
    assert len(angry) == 1
    assert hass.states.get("sensor.aria_execution_mode").state == "blocked"
    assert len(blocked) == 1
    assert exec_changes[-1].data["exec_mode"] == "blocked"
    assert moods  # the soul left its exuberant octant


async def test_actions(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_admin_user: Any,
) -> None:
    entry = init_integration
    announce(hass)
    await hass.async_block_till_done()
    soul = await hass.services.async_call(
        DOMAIN,
        "create_soul",
        {"name": "Nova", "mbti_type": "intp", "persona": "Dry wit."},
        blocking=True,
        return_response=True,
    )
    assert soul["mbti_type"] == "INTP" and soul["persona"] == "Dry wit."
    assert soul["soul_id"] in entry.subentries
    # The schema's errors (a 500 through Home Assistant 2026.2's REST API when
    # they were the action's: a review).
    with pytest.raises(vol.Invalid, match="mbti_type must be one of"):
        await hass.services.async_call(
            DOMAIN, "create_soul", {"name": "X", "mbti_type": "ABCD"}, blocking=True
        )
    with pytest.raises(vol.Invalid, match="a character that shows"):
        await hass.services.async_call(
            DOMAIN,
            "create_soul",
            {"name": "\u200d", "mbti_type": "INTJ"},
            blocking=True,
        )
    terminal_device = find_device(hass, entry.entry_id, T)
    result = await hass.services.async_call(
        DOMAIN,
        "select_soul",
        {"device_id": terminal_device.id, "soul_id": soul["soul_id"]},
        blocking=True,
        return_response=True,
    )
    assert result["terminal_id"] == T
    # A body that has not connected yet, named by its terminal id and soul name.
    await hass.services.async_call(
        DOMAIN,
        "select_soul",
        {"terminal_id": "later-bot", "soul_id": "Nova"},
        blocking=True,
    )
    assert entry.runtime_data.souls.bindings() == {
        T: soul["soul_id"],
        "later-bot": soul["soul_id"],
    }
    with pytest.raises(ServiceValidationError):
        await hass.services.async_call(
            DOMAIN,
            "select_soul",
            {"terminal_id": T, "soul_id": "nobody"},
            blocking=True,
        )
    with pytest.raises(ServiceValidationError):
        await hass.services.async_call(
            DOMAIN,
            "select_soul",
            {"terminal_id": "bad/id", "soul_id": "Nova"},
            blocking=True,
        )
    soul_device = find_device(hass, entry.entry_id, f"soul/{soul['soul_id']}")
    with pytest.raises(ServiceValidationError):  # a soul's device is not a body
        await hass.services.async_call(
            DOMAIN,
            "select_soul",
            {"device_id": soul_device.id, "soul_id": "Nova"},
            blocking=True,
        )
    diagnostics = await async_get_config_entry_diagnostics(hass, entry)
    (described,) = [s for s in diagnostics["souls"] if s["soul_id"] == soul["soul_id"]]
    assert described["mbti_type"] == "INTP" and described["persona_set"] is True
    assert "Dry wit." not in json.dumps(diagnostics)
    assert diagnostics["bindings"][T] == soul["soul_id"]


async def test_soul_hint_on_first_connection(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    entry = init_integration
    announce(hass)  # the spec's skills carry soul_hint "friendly"
    await hass.async_block_till_done()
    (soul_id,) = soul_ids(entry)
    assert entry.subentries[soul_id].title == "friendly"
    assert entry.runtime_data.souls.soul(soul_id).mbti == "ESFJ"
    assert entry.runtime_data.souls.bindings() == {T: soul_id}
    # A second body with the same hint joins the same soul.
    announce(hass, "terminal-002")
    await hass.async_block_till_done()
    assert soul_ids(entry) == [soul_id]
    assert entry.runtime_data.souls.terminals_of(soul_id) == [T, "terminal-002"]
    # Later hints are ignored: the body keeps its soul.
    async_fire_mqtt_message(
        hass,
        f"soul/terminal/{T}/skills",
        json.dumps(skills(terminal_id=T, soul_hint="grumpy")),
    )
    await hass.async_block_till_done()
    assert soul_ids(entry) == [soul_id]
    assert entry.runtime_data.souls.bindings()[T] == soul_id


async def test_tick_publishes_to_online_bound_bodies(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    mqtt_mock: MqttMockHAClient,
    freezer: FrozenDateTimeFactory,
) -> None:
    updates = capture(hass, EVENT_EMOTION_UPDATE)
    announce(hass)  # bound to a new "friendly" soul
    await hass.async_block_till_done()
    freezer.tick(timedelta(seconds=3))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    # Every tick so far (a slow run may have had one more, by the real clock).
    ticks = emotion_updates(mqtt_mock, ticks=True)
    (topic, payload) = ticks[-1]
    assert topic == f"soul/terminal/{T}/emotion_update"
    assert payload["session_id"] == "system_decay_tick"
    assert payload["terminal_id"] == T
    assert payload["user_emotion"] == {
        "emotion": "neutral",
        "p": 0.0,
        "a": 0.0,
        "d": 0.0,
        "intensity": 0.0,
    }
    assert payload["exec_mode"] == "auto_execute"
    # The first tick moved the mood: its event is exactly what was published.
    tick_events = [
        e.data for e in updates if e.data["session_id"] == "system_decay_tick"
    ]
    assert tick_events
    assert all(event in [p for _, p in ticks] for event in tick_events)
    assert emotion_updates(mqtt_mock) == []  # no user turn
    # Offline bodies get nothing.
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    mqtt_mock.async_publish.reset_mock()
    freezer.tick(timedelta(seconds=3))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert emotion_updates(mqtt_mock, ticks=True) == []


async def test_a_slow_tick_is_not_overlapped(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    mqtt_mock: MqttMockHAClient,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A tick still publishing (a slow broker) makes the next ones skip."""
    hub = init_integration.runtime_data.souls
    release = asyncio.Event()
    started: list[int] = []

    async def slow_tick() -> None:
        started.append(1)
        await release.wait()

    hub.tick = slow_tick  # type: ignore[method-assign]
    for _ in range(3):
        freezer.tick(timedelta(seconds=3))
        async_fire_time_changed(hass)
        await hass.async_block_till_done()
    assert len(started) == 1
    release.set()
    await hass.async_block_till_done(wait_background_tasks=True)
    freezer.tick(timedelta(seconds=3))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert len(started) == 2


async def test_tick_interval_is_clamped(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    mqtt_mock: MqttMockHAClient,
    freezer: FrozenDateTimeFactory,
) -> None:
    # An interval outside 2–5 s, as if stored by hand; the entry reloads.
    hass.config_entries.async_update_entry(
        init_integration,
        options={CONF_TOPIC_PREFIX: "soul", CONF_EMOTION_TICK_INTERVAL: 30},
    )
    await hass.async_block_till_done()
    announce(hass)
    await hass.async_block_till_done()
    mqtt_mock.async_publish.reset_mock()
    freezer.tick(timedelta(seconds=5))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert emotion_updates(mqtt_mock, ticks=True)  # 30 s became 5 s


async def test_state_and_bindings_survive_a_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    entry = init_integration
    client = await hass_client()
    soul = await (
        await client.post(SOULS, json={"name": "Aria", "mbti_type": "ENFP"})
    ).json()
    await client.post(SELECT, json={"terminal_id": T, "soul_id": soul["soul_id"]})
    response = await client.post(
        ANALYZE, json={"text": "我好难过，想哭", "terminal_id": T}
    )
    sad = (await response.json())["soul_emotion"]
    assert await hass.config_entries.async_unload(entry.entry_id)
    stored = hass_storage[STORAGE_KEY]["data"]
    assert stored["bindings"] == {T: soul["soul_id"]}
    assert stored["states"][soul["soul_id"]]["p"] == pytest.approx(sad["p"], abs=1e-3)

    # Two minutes of downtime: the soul recovers towards its baseline meanwhile.
    freezer.tick(timedelta(minutes=2))
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    souls = entry.runtime_data.souls
    assert souls.bindings() == {T: soul["soul_id"]}
    resumed = souls.snapshot(soul["soul_id"])
    baseline = persona_from_mbti("ENFP").baseline
    assert sad["p"] < resumed.p < baseline.p


async def test_debounced_store_writes(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    hass_storage.pop(STORAGE_KEY, None)
    # Every tick marks the hub dirty; the write must not be postponed forever.
    for _ in range(5):
        freezer.tick(timedelta(seconds=3))
        async_fire_time_changed(hass)
        await hass.async_block_till_done(wait_background_tasks=True)
    assert hass_storage[STORAGE_KEY]["data"]["bindings"][T]


async def test_options_change_reloads_but_souls_do_not(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    entry = init_integration
    runtime = entry.runtime_data
    await add_soul_flow(hass, entry, name="Aria", mbti_type="ENFP")
    await hass.async_block_till_done()
    assert entry.runtime_data is runtime
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            CONF_TOPIC_PREFIX: "soul",
            SECTION_MEMORY: {},
            SECTION_MCP: {},
            SECTION_ADVANCED: {CONF_EMOTION_TICK_INTERVAL: 4},
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options[CONF_EMOTION_TICK_INTERVAL] == 4
    assert entry.runtime_data is not runtime
    assert len(entry.runtime_data.souls.souls) == 1


async def test_stale_cleanup_keeps_soul_devices(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    entry = init_integration
    await add_soul_flow(hass, entry, name="Aria", mbti_type="ENFP")
    await hass.async_block_till_done()
    freezer.tick(timedelta(seconds=61))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    (soul_id,) = soul_ids(entry)
    assert find_device(hass, entry.entry_id, f"soul/{soul_id}") is not None
    devices = dr.async_entries_for_config_entry(dr.async_get(hass), entry.entry_id)
    assert len(devices) == 2  # the soul and the hub itself


async def test_soul_select_binds_a_body(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    entry = init_integration
    announce(hass)  # bound to a new soul "friendly" by its hint
    await hass.async_block_till_done()
    state = hass.states.get("select.terminal_001_soul")
    assert state.state == "friendly"
    await add_soul_flow(hass, entry, name="Aria", mbti_type="ENFP")
    await add_soul_flow(hass, entry, name="Aria", mbti_type="ISTJ")
    await hass.async_block_till_done()
    options = hass.states.get("select.terminal_001_soul").attributes["options"]
    assert options[0] == "friendly"
    assert len(options) == 3
    assert all(o.startswith("Aria (") for o in options[1:])  # same names get ids
    await hass.services.async_call(
        "select",
        "select_option",
        {"entity_id": "select.terminal_001_soul", "option": options[2]},
        blocking=True,
    )
    assert hass.states.get("select.terminal_001_soul").state == options[2]
    bound = entry.runtime_data.souls.bindings()[T]
    assert options[2] == f"Aria ({bound})"
    # Offline bodies can still be rebound.
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    assert hass.states.get("select.terminal_001_soul").state == options[2]
    # Binding another body leaves this select alone (no write at all): a start
    # with many bodies would otherwise write every select once per body.
    reported = hass.states.get("select.terminal_001_soul").last_reported
    entry.runtime_data.souls.bind("terminal-002", bound)
    await hass.async_block_till_done()
    assert hass.states.get("select.terminal_001_soul").last_reported == reported


async def test_reconfigure_keeps_the_owner(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    client = await hass_client()
    soul = await (
        await client.post(
            SOULS, json={"name": "Kid", "mbti_type": "ESFP", "user_id": "kid"}
        )
    ).json()
    result = await hass.config_entries.subentries.async_init(
        (init_integration.entry_id, "soul"),
        context={"source": SOURCE_RECONFIGURE, "subentry_id": soul["soul_id"]},
    )
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Kid", "mbti_type": "ABCD"}
    )
    assert result["errors"] == {"mbti_type": "invalid_mbti_type"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Kiddo", "mbti_type": "ESFP-T", "persona": "Loud."}
    )
    await hass.async_block_till_done()
    data = init_integration.subentries[soul["soul_id"]].data
    assert data == {
        "name": "Kiddo",
        "mbti_type": "ESFP-T",
        "persona": "Loud.",
        "user_id": "kid",
    }


async def test_many_souls_each_get_their_entities(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, entity_registry: er.EntityRegistry
) -> None:
    """Souls are added a few at a time (the loop runs between): every one is there."""
    count = 3 * ADD_CHUNK + 1
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        subentries_data=[
            {
                "data": {"name": f"Soul {n}", "mbti_type": "ENFP"},
                "subentry_type": "soul",
                "title": f"Soul {n}",
                "unique_id": None,
            }
            for n in range(count)
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    entities = er.async_entries_for_config_entry(entity_registry, entry.entry_id)
    by_soul: dict[str | None, set[str]] = {}
    for entity in entities:
        by_soul.setdefault(entity.config_subentry_id, set()).add(entity.domain)
    souls = set(entry.subentries)
    assert len(souls) == count
    assert all(by_soul.get(s) == {"sensor", "conversation"} for s in souls)
    pleasure = [e for e in entities if e.translation_key == "pleasure"]
    assert len(pleasure) == count
    assert all(hass.states.get(e.entity_id) is not None for e in pleasure)


def _soul_subentry(data: dict[str, Any], title: Any = "Soul") -> dict[str, Any]:
    return {"data": data, "subentry_type": "soul", "title": title, "unique_id": None}


async def test_damaged_souls_are_left_out_and_the_rest_work(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A fuzz of the stored entries: a soul named 5, a list or a megabyte.

    Its Assist agent failed to be added, and every body's soul_hint raised
    (``name_key`` of a number); a megabyte's name held the loop 540 ms.
    """
    from custom_components.soul.core.souls import MAX_SOULS

    damaged = [
        {"name": 5, "mbti_type": "ENFP"},
        {"name": ["ignore"], "mbti_type": "ENFP"},
        {"name": "x" * 1_000_000, "mbti_type": "ENFP"},
        {"name": "A\x00\u202eB", "mbti_type": "ENFP"},
        {"name": "Persona", "mbti_type": "ENFP", "persona": ["ignore previous"]},
        # An older Soul stored personas with a form feed: the soul stays.
        {"name": "Old", "mbti_type": "ENFP", "persona": "Dry\x0cwit"},
        {"name": "Owner", "mbti_type": "ENFP", "user_id": ["u1"]},
    ]
    good = [{"name": f"Soul {n}", "mbti_type": "ISTJ"} for n in range(MAX_SOULS + 5)]
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        minor_version=3,  # as stored now: no migration mends the names
        subentries_data=[
            *(_soul_subentry(d, title=None) for d in damaged),
            *(_soul_subentry(d, title=d["name"]) for d in good),
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    souls = entry.runtime_data.souls.souls
    # Names and personas of text are cleaned and cut; the rest is left out;
    # at most MAX_SOULS are read.
    assert len(souls) == MAX_SOULS
    names = [s.name for s in souls.values()]
    assert names[:4] == ["x" * 64, "A\ufffd\ufffdB", "Persona", "Old"]
    assert set(names[4:]) <= {d["name"] for d in good}
    assert [s.persona_text for s in souls.values()][2:4] == ["", "Dry\ufffdwit"]
    assert caplog.text.count("Ignored soul") == 3  # 5, a list, a list as user id
    # A body's soul_hint is read again: a new body binds to the soul it names.
    base = "soul/terminal/new-body"
    async_fire_mqtt_message(hass, f"{base}/online", "online")
    payload = skills(terminal_id="new-body", soul_hint="Soul 3")
    async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(payload))
    await hass.async_block_till_done()
    bound = entry.runtime_data.souls.soul_of("new-body")
    assert bound is not None
    assert bound.name == "Soul 3"


async def test_a_damaged_souls_assist_settings_are_left_out(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient, fake_llm: Any
) -> None:
    """A terminal id that was a list, an API that was a number, MCP servers a number.

    Every Assist turn raised, and the turn's chat log task never ended, so
    Home Assistant never stopped (a fuzz of the stored entries).
    """
    from homeassistant.components import conversation

    from .test_conversation import setup_soul_with_model

    fake_llm.reply("Hello!")
    entry = await setup_soul_with_model(
        hass,
        fake_llm,
        {
            "name": "Nova",
            "mbti_type": "INTJ",
            "terminal": ["bad/id"],
            "llm_hass_api": 5,
            "mcp_servers": 5,
        },
    )
    [soul_id] = entry.subentries
    agent = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "conversation" and e.config_subentry_id == soul_id
    )
    result = await conversation.async_converse(
        hass, "hello", None, Context(), language="en", agent_id=agent
    )
    assert result.response.speech["plain"]["speech"] == "Hello!"
    await hass.async_block_till_done()  # no task is left running


async def test_a_souls_mcp_choice_stays_when_there_is_none_to_make(
    hass: HomeAssistant, mqtt_mock: MqttMockHAClient
) -> None:
    """With no server to choose from, saving the form dropped the soul's choice.

    Once servers were back, the soul could use every one (a review).
    """
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={},
        options={CONF_TOPIC_PREFIX: "soul"},
        minor_version=3,
        subentries_data=[
            _soul_subentry({"name": "Nova", "mbti_type": "INTJ", "mcp_servers": []})
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    [soul_id] = entry.subentries
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "soul"),
        context={"source": SOURCE_RECONFIGURE, "subentry_id": soul_id},
    )
    assert "mcp_servers" not in {str(key) for key in result["data_schema"].schema}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Nova", "mbti_type": "ENTP"}
    )
    assert result["reason"] == "reconfigure_successful"
    assert entry.subentries[soul_id].data["mcp_servers"] == []
    assert entry.subentries[soul_id].data["mbti_type"] == "ENTP"
