"""The event journal in Home Assistant: one trace per turn, read back every way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_capture_events,
)
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)

from custom_components.soul.const import (
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MEMORY_BACKEND,
    CONF_NAVIGATOR_TURNS,
    CONF_TOPIC_PREFIX,
    DOMAIN,
    EVENT_EVOLUTION_REQUEST,
    EVENT_EXEC_MODE_CHANGED,
    EVENT_MOOD_CHANGED,
    EVENT_USER_EMOTION,
    ISSUE_JOURNAL_UNAVAILABLE,
    JOURNAL_FILE,
)
from custom_components.soul.core.access import Principal
from custom_components.soul.journal import for_reader
from custom_components.soul.logbook import async_describe_events
from devtools.fake_llm import DEFAULT_MODEL, Reply

from .test_star import Clients, clients, envelope, receive  # noqa: F401  # fixture
from .test_terminals import T, announce

TURN = ["user_input", "psyche_update", "driver_response"]
EVENTS = "/api/soul/v1/events"


def chat_body(session_id: str, text: str = "把灯调成绿色") -> dict[str, Any]:
    return {
        "session_id": session_id,
        "terminal_id": T,
        "inputs": [{"type": "keyboard_text", "text": text}],
    }


async def flush(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    journal = entry.runtime_data.journal
    assert journal is not None
    assert await hass.async_add_executor_job(journal.flush)


async def trace_of(client: Any, trace_id: str) -> list[dict[str, Any]]:
    response = await client.get(EVENTS, params={"trace_id": trace_id})
    assert response.status == 200, await response.text()
    return (await response.json())["events"]


async def test_every_way_in_leaves_one_trace(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_ws_client: WebSocketGenerator,
    clients: Clients,  # noqa: F811
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/events/subscribe"})
    assert (await ws.receive_json())["success"]
    # HTTP
    response = await client.post("/api/soul/v1/chat", json=chat_body("http-1"))
    assert response.status == 200
    http_trace = (await response.json())["trace_id"]
    # Assist
    result = await conversation.async_converse(
        hass, "把灯调成红色", None, Context(), language="zh-cn",
        agent_id="conversation.friendly",
    )  # fmt: skip
    assert result.response.speech["plain"]["speech"] == "好的。"
    # Star
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id
    human = await clients.connect("/human/dad01")
    await human.send_json(
        envelope(
            ("dad01", "human"),
            (f"soul_{soul_id}", "agent"),
            {
                "type": "action",
                "action": "chat",
                "id": "c1",
                "parameters": {"text": "把灯调成白色"},
            },
        )
    )
    outcome = (await receive(human))["payload"]["outcome"]
    star_trace = outcome["data"]["trace_id"]
    await flush(hass, init_integration)
    channels = {}
    for trace_id in (http_trace, star_trace):
        events = await trace_of(client, trace_id)
        assert [e["type"] for e in reversed(events)] == TURN
        assert {e["trace_id"] for e in events} == {trace_id}
        assert {e["soul_id"] for e in events} == {soul_id}
        user = events[-1]
        channels[trace_id] = user["payload"]["channel"]
        assert set(user["meta"]) == {"timestamp", "psyche_state"}
    assert channels == {http_trace: "http", star_trace: "star"}
    response = await client.get(EVENTS, params={"type": "user_input"})
    inputs = (await response.json())["events"]
    assert [e["payload"]["channel"] for e in inputs] == ["star", "assist", "http"]
    assist_trace = inputs[1]["trace_id"]
    assert [e["type"] for e in reversed(await trace_of(client, assist_trace))] == TURN
    # The WebSocket stream saw the same nine events as they happened.
    streamed = []
    while len(streamed) < 9:
        message = await ws.receive_json()
        streamed.append(message["event"]["event"])
    assert [e["trace_id"] for e in streamed] == [http_trace] * 3 + [
        assist_trace
    ] * 3 + [star_trace] * 3
    # The list command reads the journal too.
    await ws.send_json(
        {"id": 2, "type": "soul/events/list", "trace_id": http_trace,
         "event_types": ["driver_response"]}
    )  # fmt: skip
    listed = await ws.receive_json()
    assert listed["success"]
    (reply,) = listed["result"]["events"]
    assert reply["payload"]["executed_skills"] == ["control_light"]
    # And the action.
    answer = await hass.services.async_call(
        DOMAIN, "get_events", {"trace_id": star_trace}, blocking=True,
        return_response=True,
    )  # fmt: skip
    assert [e["type"] for e in reversed(answer["events"])] == TURN


async def test_paging_and_bad_queries(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    for index in range(4):
        await client.post("/api/soul/v1/chat", json=chat_body(f"p-{index}", "你好"))
    await flush(hass, init_integration)
    seen: list[int] = []
    before = None
    while True:
        params = {"type": "user_input,driver_response", "limit": "3"}
        if before is not None:
            params["before"] = str(before)
        page = await (await client.get(EVENTS, params=params)).json()
        seen += [e["id"] for e in page["events"]]
        if (before := page["next"]) is None:
            break
    assert len(seen) == 8 and seen == sorted(seen, reverse=True)
    for params in (
        {"type": "nonsense"},
        {"limit": "0"},
        {"limit": "x"},
        # int() and float() read these as 10; a number here is ASCII digits.
        {"limit": "\uff11\uff10"},
        {"limit": "1_0"},
        {"limit": " 10"},
        {"before": "+5"},
        {"since": "1_700_000_000"},
        {"since": "\u0661\u0667\u0660\u0660"},
        {"since": "yesterday"},
        {"until": "nan"},
        {"trace_id": "x" * 200},
    ):
        response = await client.get(EVENTS, params=params)
        assert response.status == 400, params
        assert "error" in await response.json()


async def test_users_read_their_own_souls_events(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_ws_client: WebSocketGenerator,
    hass_admin_user: Any,
) -> None:
    """A user reads their souls' events, and on a shared soul their own sessions'."""
    announce(hass)  # the shared soul "friendly"
    await hass.async_block_till_done()
    admin = await hass_client()
    response = await admin.post(
        "/api/soul/v1/souls",
        json={"name": "Dads", "mbti_type": "INTJ", "user_id": hass_admin_user.id},
    )
    dads = (await response.json())["soul_id"]
    init_integration.runtime_data.souls.bind("dads-body", dads)
    await admin.post(
        "/api/soul/v1/chat",
        json={**chat_body("d-1", "你好"), "terminal_id": "dads-body"},
    )
    # The administrator's conversation with the soul everyone shares.
    await admin.post("/api/soul/v1/chat", json=chat_body("s-1", "我今天很难过"))
    await flush(hass, init_integration)
    kid = await hass.auth.async_create_user("Kid", group_ids=["system-users"])
    refresh = await hass.auth.async_create_refresh_token(kid, "https://example.com/app")
    token = hass.auth.async_create_access_token(refresh)
    user = await hass_client(token)
    ws = await hass_ws_client(hass, access_token=token)
    await ws.send_json({"id": 1, "type": "soul/events/subscribe"})
    assert (await ws.receive_json())["success"]
    before = await (await user.get(EVENTS)).json()
    assert {e["session_id"] for e in before["events"]} <= {None}
    assert "s-1" not in str(before) and "难过" not in str(before)
    theirs = await (await user.get(EVENTS, params={"soul_id": dads})).json()
    assert theirs["events"] == []
    # The kid talks to the shared soul: their turn is theirs to read and stream.
    assert (await user.post("/api/soul/v1/chat", json=chat_body("k-1"))).status == 200
    await admin.post("/api/soul/v1/chat", json=chat_body("s-2", "还是难过"))
    await flush(hass, init_integration)
    streamed = []
    while len(streamed) < len(TURN):
        streamed.append((await ws.receive_json())["event"]["event"])
    assert {e["session_id"] for e in streamed} == {"k-1"}
    mine = await (await user.get(EVENTS)).json()
    sessions = {e["session_id"] for e in mine["events"]}
    assert sessions - {None} == {"k-1"}
    with pytest.raises(TimeoutError):  # nothing of the administrator's s-2
        async with asyncio.timeout(0.2):
            await ws.receive_json()
    everything = await (await admin.get(EVENTS)).json()
    assert dads in {e["soul_id"] for e in everything["events"]}
    assert {"s-1", "s-2", "k-1"} <= {e["session_id"] for e in everything["events"]}


async def test_events_survive_a_restart(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    trace_id = (
        await (await client.post("/api/soul/v1/chat", json=chat_body("r-1"))).json()
    )["trace_id"]
    assert await hass.config_entries.async_reload(init_integration.entry_id)
    await hass.async_block_till_done()
    assert len(await trace_of(client, trace_id)) == 3


async def test_a_broken_journal_is_a_repair_and_soul_keeps_working(
    hass: HomeAssistant,
    soul_entry: MockConfigEntry,
    mqtt_mock: Any,
    hass_client: ClientSessionGenerator,
    issue_registry: ir.IssueRegistry,
) -> None:
    path = Path(hass.config.path(JOURNAL_FILE))
    await hass.async_add_executor_job(path.write_bytes, b"not a database" * 100)
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    await hass.async_block_till_done()
    issue = issue_registry.async_get_issue(DOMAIN, ISSUE_JOURNAL_UNAVAILABLE)
    assert issue is not None
    assert issue.translation_placeholders["path"] == hass.config.path(JOURNAL_FILE)
    assert soul_entry.runtime_data.journal is None
    announce(hass)
    await hass.async_block_till_done()
    client = await hass_client()
    response = await client.post("/api/soul/v1/chat", json=chat_body("b-1"))
    assert response.status == 200
    assert (await response.json())["executed_skills"] == ["control_light"]
    events = await (await client.get(EVENTS)).json()
    assert events == {"events": [], "next": None}


async def test_the_logbook_tells_what_happened_in_words(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id
    describers: dict[str, Any] = {}
    async_describe_events(
        hass, lambda domain, kind, describe: describers.__setitem__(kind, describe)
    )

    class Fired:
        def __init__(self, data: dict[str, Any]) -> None:
            self.data = data

    said = describers[EVENT_USER_EMOTION](
        Fired({"soul_id": soul_id, "emotion": "joy", "intensity": 0.8,
               "terminal_id": T})
    )  # fmt: skip
    assert said == {
        "name": "friendly",
        "message": f"heard joy (intensity 0.8) through {T}",
    }
    mood = describers[EVENT_MOOD_CHANGED](
        Fired({"soul_id": soul_id, "mood": "relaxed", "previous_mood": "neutral"})
    )
    assert mood["message"] == "felt relaxed (was neutral)"
    mode = describers[EVENT_EXEC_MODE_CHANGED](
        Fired({"soul_id": soul_id, "exec_mode": "blocked"})
    )
    assert mode["message"] == "now refuses to act"
    # The navigator's words come from one user's conversation: not for all.
    grow = describers[EVENT_EVOLUTION_REQUEST](
        Fired({"soul_id": soul_id, "request": "my door code is 4711"})
    )
    assert grow["message"] == "wishes it could grow"


async def test_the_navigator_runs_in_home_assistant(
    hass: HomeAssistant,
    fake_llm: Any,
    mqtt_mock: Any,
    hass_client: ClientSessionGenerator,
) -> None:
    """A turn starts the navigator; its advice is journalled and fires an event."""
    advice = {
        "suggestion": "Be gentle.",
        "psyche_delta": {"pleasure": 0.1, "arousal": 0.0, "dominance": 0.0},
        "memory_archival": False,
        "evolution_request": "need_calendar_tool",
    }
    fake_llm.responders.append(
        lambda body: (
            Reply(content=json.dumps(advice))
            if body["messages"][0]["content"].startswith("You are the navigator")
            else Reply(content="嗯，我在听。")
        )
    )
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_LLM_BASE_URL: fake_llm.base_url, CONF_LLM_MODEL: DEFAULT_MODEL},
        options={
            CONF_TOPIC_PREFIX: "soul",
            CONF_MEMORY_BACKEND: "none",
            CONF_NAVIGATOR_TURNS: 1,
        },
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    announce(hass)
    await hass.async_block_till_done()
    fired = async_capture_events(hass, EVENT_EVOLUTION_REQUEST)
    client = await hass_client()
    response = await client.post(
        "/api/soul/v1/chat", json=chat_body("n-1", "你觉得人生的意义是什么？")
    )
    assert (await response.json())["reply"] == "嗯，我在听。"
    await hass.async_block_till_done(wait_background_tasks=True)
    await flush(hass, entry)
    events = (await (await client.get(EVENTS)).json())["events"]
    kinds = [e["type"] for e in events]
    assert "navigator_suggestion" in kinds
    nudged = [
        e for e in events
        if e["type"] == "psyche_update" and e["source"] == "navigator"
    ]  # fmt: skip
    assert nudged and nudged[0]["payload"]["reason"] == "navigator"
    (evolution,) = fired
    assert evolution.data["request"] == "need_calendar_tool"
    assert evolution.data["soul_id"] == entry.runtime_data.souls.soul_of(T).soul_id
    await hass.config_entries.async_unload(entry.entry_id)


def test_the_inner_voice_is_for_administrators() -> None:
    event = {
        "type": "driver_response",
        "payload": {"content": "hi", "inner_voice": "tired"},
    }
    user = for_reader(Principal("u1"), event)
    assert user["payload"] == {"content": "hi", "inner_voice": None}
    assert event["payload"]["inner_voice"] == "tired"  # the stored event is untouched
    assert for_reader(Principal("a1", is_admin=True), event) is event


def test_a_damaged_replys_preview_is_for_administrators() -> None:
    """Its text may hold the inner voice (a fuzz of the journal's rows)."""
    damaged = {
        "type": "driver_response",
        "payload": {"undecodable": True, "preview": '{"inner_voice":"secret'},
    }
    assert for_reader(Principal("u1"), damaged)["payload"] == {
        "undecodable": True,
        "preview": "",
    }
    assert for_reader(Principal("a1", is_admin=True), damaged) is damaged
    said = {**damaged, "type": "user_input"}
    assert for_reader(Principal("u1"), said) is said
