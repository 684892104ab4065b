"""The Soul panel and card in Home Assistant: served files, registration, WebSocket data."""

from __future__ import annotations

from datetime import UTC, datetime
import json
from pathlib import Path
import re
from typing import Any

from homeassistant.components import frontend
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)

from custom_components.soul import panel
from custom_components.soul.core.body_stats import DecisionLog, InvokeStats
from custom_components.soul.core.terminal import Decision
from custom_components.soul.websocket_panel import MAX_SOUL_SUBSCRIPTIONS

from .core.spec_payloads import catalog
from .test_terminals import T, announce

FRONTEND = Path(panel.__file__).parent / "frontend"
SAD = "I am so sad and lonely, everything went wrong and I want to cry"


async def _user_ws(
    hass: HomeAssistant, hass_ws_client: WebSocketGenerator, name: str = "Kid"
) -> Any:
    user = await hass.auth.async_create_user(name, group_ids=["system-users"])
    refresh = await hass.auth.async_create_refresh_token(user, "https://example.com/")
    ws = await hass_ws_client(hass, hass.auth.async_create_access_token(refresh))
    ws.user = user
    return ws


async def _send(ws: Any, message: dict[str, Any]) -> int:
    ws.next_id = getattr(ws, "next_id", 0) + 1
    await ws.send_json({"id": ws.next_id, **message})
    return int(ws.next_id)


async def _call(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    await _send(ws, message)
    return await ws.receive_json()


async def test_the_served_files_are_the_sources(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
) -> None:
    """Every frontend file is served under the hash of the current sources."""
    version = panel.frontend_version()
    assert re.fullmatch(r"[0-9a-f]{16}", version)
    panels = hass.data[frontend.DATA_PANELS]
    module_url = panels["soul"].config["_panel_custom"]["module_url"]
    assert module_url == f"/soul_static/{version}/soul-panel.js"
    assert panels["soul"].require_admin is False
    assert panels["soul"].sidebar_title == "Soul"
    client = await hass_client()
    files = sorted(FRONTEND.glob("*.js"))
    assert {f.name for f in files} >= {
        "soul-panel.js",
        "soul-card.js",
        "emotion-form.js",
        "soul-common.js",
    }
    for path in files:
        response = await client.get(f"/soul_static/{version}/{path.name}")
        assert response.status == 200, path.name
        assert await response.read() == path.read_bytes(), path.name
        assert "javascript" in response.headers["Content-Type"]
    # Another version (older code) is not served.
    assert (
        await client.get("/soul_static/0000000000000000/soul-panel.js")
    ).status == 404
    # Relative imports only: they stay under the versioned folder.
    for path in files:
        for target in re.findall(r'from "([^"]+)"|import "([^"]+)"', path.read_text()):
            name = next(t for t in target if t)
            assert name.startswith("./") and (FRONTEND / name[2:]).exists(), name


def test_the_card_module_waits_for_home_assistants_registry() -> None:
    """soul-card.js: no static import, its parts exist, defined after the app.

    Home Assistant's app swaps ``window.customElements`` for a polyfill as it
    starts; an element defined earlier is never seen by Lovelace (the browser
    test ``test_the_card_comes_on_a_slow_first_load`` shows it end to end).
    """
    text = (FRONTEND / "soul-card.js").read_text()
    assert not re.search(r"^\s*import\s*[\"{*\w]", text, re.MULTILINE)
    parts = re.search(r"const PARTS = \[([^\]]*)\]", text)
    assert parts is not None
    names = re.findall(r'"\./([^"]+)"', parts.group(1))
    assert names == ["soul-common.js", "emotion-form.js"]
    assert all((FRONTEND / name).exists() for name in names)
    assert 'customElements.whenDefined("home-assistant").then(define)' in text


def test_the_version_follows_the_contents(tmp_path: Path) -> None:
    (tmp_path / "a.js").write_text("one")
    before = panel.frontend_version(tmp_path)
    (tmp_path / "a.js").write_text("two")
    assert panel.frontend_version(tmp_path) != before
    (tmp_path / "a.js").write_text("one")
    assert panel.frontend_version(tmp_path) == before


async def test_panel_and_card_come_and_go_with_soul(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    version = panel.frontend_version()
    card = f"/soul_static/{version}/soul-card.js"
    assert "soul" in hass.data[frontend.DATA_PANELS]
    assert card in hass.data[frontend.DATA_EXTRA_MODULE_URL].urls
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    assert "soul" not in hass.data[frontend.DATA_PANELS]
    assert card not in hass.data[frontend.DATA_EXTRA_MODULE_URL].urls
    assert await hass.config_entries.async_setup(init_integration.entry_id)
    await hass.async_block_till_done()
    assert "soul" in hass.data[frontend.DATA_PANELS]
    assert card in hass.data[frontend.DATA_EXTRA_MODULE_URL].urls


def test_translations_have_the_same_keys() -> None:
    text = (FRONTEND / "soul-common.js").read_text()
    en = text[text.index("  en: {") + 7 : text.index('  "zh-Hans": {')]
    zh = text[text.index('  "zh-Hans": {') + 14 :]
    key = re.compile(r'^\s+"?([\w.]+)"?: ', re.MULTILINE)
    assert set(key.findall(en)) == set(key.findall(zh[: zh.index("\n  },")]))


async def test_users_see_their_own_souls_live(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_admin_user: Any,
) -> None:
    """A user lists and follows their own and shared souls, never another's."""
    announce(hass)  # the shared soul "friendly", bound to T
    await hass.async_block_till_done()
    runtime = init_integration.runtime_data
    admin = await hass_ws_client(hass)
    kid = await _user_ws(hass, hass_ws_client)
    for name, owner in (("Dads", hass_admin_user.id), ("Kids", kid.user.id)):
        created = await _call(
            admin,
            {"type": "soul/chat", "text": "hi"},  # nothing bound yet: refused
        )
        assert not created["success"]
        soul = await hass.services.async_call(
            "soul", "create_soul", {"name": name, "mbti_type": "INTJ", "user_id": owner},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert soul
    await hass.async_block_till_done()
    listed = await _call(kid, {"type": "soul/souls/list"})
    assert listed["success"]
    names = [s["name"] for s in listed["result"]["souls"]]
    assert names == ["friendly", "Kids"]
    everything = await _call(admin, {"type": "soul/souls/list"})
    assert [s["name"] for s in everything["result"]["souls"]] == [
        "Dads",
        "friendly",
        "Kids",
    ]
    friendly = listed["result"]["souls"][0]
    assert friendly["bodies"] == [
        {"terminal_id": T, "known": True, "connected": True, "online": True,
         "stale": False}
    ]  # fmt: skip
    assert set(friendly["emotion"]) >= {"p", "a", "d", "mood", "exec_probability"}
    assert friendly["user_emotion"] is None

    await _send(kid, {"type": "soul/souls/subscribe"})
    assert (await kid.receive_json())["success"]
    first = await kid.receive_json()
    assert [s["name"] for s in first["event"]["souls"]] == ["friendly", "Kids"]
    before = first["event"]["souls"][0]["emotion"]["p"]
    # A sad chat through the panel's command moves the soul; the stream says so.
    answer = await _call(kid, {"type": "soul/chat", "text": SAD, "terminal_id": T})
    while answer.get("id") != kid.next_id:  # pushes come in between
        answer = await kid.receive_json()
    assert answer["success"], answer
    assert answer["result"]["soul_id"] == friendly["soul_id"]
    assert answer["result"]["trace_id"]
    pushed = None
    for _ in range(10):
        message = await kid.receive_json()
        soul = message["event"].get("soul")
        if soul and soul["user_emotion"]:
            pushed = soul
            break
    assert pushed is not None
    assert pushed["name"] == "friendly"
    assert pushed["emotion"]["p"] < before
    assert pushed["user_emotion"]["trace_id"] == answer["result"]["trace_id"]
    # Another user's soul changes: nothing reaches the kid.
    dads = next(s for s in runtime.souls.souls.values() if s.name == "Dads")
    runtime.souls.nudge(dads.soul_id, {"p": -0.3})
    kids = next(s for s in runtime.souls.souls.values() if s.name == "Kids")
    runtime.souls.nudge(kids.soul_id, {"p": 0.2})
    await hass.async_block_till_done()
    message = await kid.receive_json()
    assert message["event"]["soul"]["name"] == "Kids"


async def test_what_a_user_said_without_a_body_is_theirs(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """The emotion heard in a chat without a body is the speaker's (and admins').

    A black-box run: every user of a shared soul saw "anger · +1.00" that an
    administrator's panel chat had made. Through a body it is the body's
    event entity's, which every user sees anyway.
    """
    announce(hass)  # the shared soul "friendly", bound to T
    await hass.async_block_till_done()
    admin = await hass_ws_client(hass)
    kid = await _user_ws(hass, hass_ws_client)
    (friendly,) = (await _call(kid, {"type": "soul/souls/list"}))["result"]["souls"]
    soul_id = friendly["soul_id"]

    async def heard(ws: Any) -> Any:
        (soul,) = [
            s
            for s in (await _call(ws, {"type": "soul/souls/list"}))["result"]["souls"]
            if s["soul_id"] == soul_id
        ]
        return soul["user_emotion"]

    answer = await _call(admin, {"type": "soul/chat", "text": SAD, "soul_id": soul_id})
    assert answer["success"], answer
    assert (await heard(admin))["trace_id"] == answer["result"]["trace_id"]
    assert await heard(kid) is None
    answer = await _call(kid, {"type": "soul/chat", "text": SAD, "soul_id": soul_id})
    assert answer["success"], answer
    assert (await heard(kid))["trace_id"] == answer["result"]["trace_id"]
    assert (await heard(admin))["trace_id"] == answer["result"]["trace_id"]
    answer = await _call(admin, {"type": "soul/chat", "text": SAD, "terminal_id": T})
    assert answer["success"], answer
    assert (await heard(kid))["terminal_id"] == T


async def test_soul_pushes_are_throttled_and_the_last_one_arrives(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    hub = init_integration.runtime_data.souls
    soul_id = hub.soul_of(T).soul_id
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/souls/subscribe"})
    assert (await ws.receive_json())["success"]
    assert "souls" in (await ws.receive_json())["event"]
    for _ in range(20):
        hub.nudge(soul_id, {"p": 0.01})
    last = hub.snapshot(soul_id)
    await hass.async_block_till_done()
    message = await ws.receive_json()  # the 20 changes: one push now, one later
    pushed = [message["event"]["soul"]]
    while pushed[-1]["emotion"]["p"] != last.p:
        pushed.append((await ws.receive_json())["event"]["soul"])
    assert len(pushed) <= 2


async def test_soul_streams_are_bounded(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    ws = await hass_ws_client(hass)
    for i in range(MAX_SOUL_SUBSCRIPTIONS):
        await ws.send_json({"id": i + 1, "type": "soul/souls/subscribe"})
        assert (await ws.receive_json())["success"]
        await ws.receive_json()  # the list
    await ws.send_json({"id": 99, "type": "soul/souls/subscribe"})
    answer = await ws.receive_json()
    assert answer["error"]["code"] == "too_many_subscriptions"


async def test_bodies_list_is_scoped_and_counts_invocations(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_admin_user: Any,
) -> None:
    announce(hass)
    announce(hass, "dads-body")
    await hass.async_block_till_done()
    runtime = init_integration.runtime_data
    dads = await hass.services.async_call(
        "soul", "create_soul",
        {"name": "Dads", "mbti_type": "INTJ", "user_id": hass_admin_user.id},
        blocking=True, return_response=True,
    )  # fmt: skip
    runtime.souls.bind("dads-body", dads["soul_id"])
    admin = await hass_ws_client(hass)
    kid = await _user_ws(hass, hass_ws_client)
    # An intent decision through a chat (the intent filter: no model).
    chat = await _call(
        admin, {"type": "soul/chat", "text": "把灯调成绿色", "terminal_id": T}
    )
    assert chat["success"], chat
    assert chat["result"]["reply"] == "好的。"
    # An invocation that times out is a failure and a timeout.
    runtime.invoker.timeout = 0.01
    await runtime.invoker.invoke(T, "control_light", {"mode": "on"})
    answer = await _call(admin, {"type": "soul/bodies/list"})
    bodies = {b["terminal_id"]: b for b in answer["result"]["bodies"]}
    assert set(bodies) == {T, "dads-body"}
    body = bodies[T]
    assert body["connected"] is True
    assert "control_light" in {s["name"] for s in body["skills"]}
    assert body["intents"]
    assert body["decisions"][0]["action"]
    assert body["invoke"]["invocations"] == 1
    assert body["invoke"]["failures"] == body["invoke"]["timeouts"] == 1
    mine = await _call(kid, {"type": "soul/bodies/list"})
    assert [b["terminal_id"] for b in mine["result"]["bodies"]] == [T]
    one = await _call(admin, {"type": "soul/bodies/list", "terminal_id": "dads-body"})
    assert [b["terminal_id"] for b in one["result"]["bodies"]] == ["dads-body"]


async def test_a_catalogs_unchecked_intent_name_is_not_shown(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """A catalog's "intent_name" (a response's field) showed unchecked (black box).

    "Door\u2069\u202ekcol" read as "Door lock" on the Bodies tab; a
    catalog intent's name is checked as one line, so the tab shows that, or
    the intent's id.
    """
    announce(hass)
    await hass.async_block_till_done()
    hostile = catalog(terminal_id=T, catalog_version=13)
    for intent in hostile["intent_catalog"]:
        intent.pop("name", None)
        intent["intent_name"] = "Door\u2069\u202ekcol <b>\n"
    async_fire_mqtt_message(
        hass, f"soul/terminal/{T}/intent_catalog", json.dumps(hostile)
    )
    await hass.async_block_till_done()
    admin = await hass_ws_client(hass)
    answer = await _call(admin, {"type": "soul/bodies/list", "terminal_id": T})
    [body] = answer["result"]["bodies"]
    assert body["intents"]
    assert [i["name"] for i in body["intents"]] == [i["id"] for i in body["intents"]]


async def test_chat_refusals_are_error_codes(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_access_token: str,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    ws = await hass_ws_client(hass)
    cases = [
        ({"text": ""}, "invalid_format"),
        ({"text": "x" * 5000, "terminal_id": T}, "invalid_format"),
        ({"text": "hi", "terminal_id": "a" * 200}, "invalid_format"),
        ({"text": "hi", "terminal_id": "bad id!"}, "invalid_format"),
        ({"text": "hi", "soul_id": "nobody"}, "not_found"),
        ({"text": "hi", "terminal_id": T, "extra": 1}, "invalid_format"),
        ({"text": 5, "terminal_id": T}, "invalid_format"),
    ]
    for fields, code in cases:
        answer = await _call(ws, {"type": "soul/chat", **fields})
        assert answer["error"]["code"] == code, (fields, answer)
    reader = await hass_ws_client(hass, hass_read_only_access_token)
    answer = await _call(reader, {"type": "soul/chat", "text": "hi", "terminal_id": T})
    assert answer["error"]["code"] == "unauthorized"
    # The panel says so before: a read-only user's souls say they may not chat.
    listed = await _call(reader, {"type": "soul/souls/list"})
    assert [s["may_chat"] for s in listed["result"]["souls"]] == [False]
    listed = await _call(ws, {"type": "soul/souls/list"})
    assert [s["may_chat"] for s in listed["result"]["souls"]] == [True]


def test_invoke_stats_and_decision_log_are_bounded() -> None:
    stats = InvokeStats(max_terminals=2)
    stats.record("a", "s", ok=True, elapsed=0.010)
    stats.record("a", "s", ok=True, elapsed=0.030)
    stats.record("a", "s", ok=False, elapsed=0.020, error="broken")
    counts = stats.of("a").as_dict()
    assert counts["invocations"] == 3
    assert counts["failures"] == 1
    assert counts["mean_ms"] == 20.0
    assert counts["last_ms"] == 20.0
    assert counts["last_error"] == "broken"
    stats.record("b", "s", ok=True, elapsed=None)
    stats.record("c", "s", ok=True, elapsed=None)
    assert stats.of("a").invocations == 0  # forgotten, least recently used
    log = DecisionLog(max_terminals=1, max_decisions=2)
    decisions = [
        Decision("execute", "match", f"i{n}", (f"i{n}",), 0.9, datetime.now(UTC))
        for n in range(3)
    ]
    for decision in decisions:
        log.record("a", decision)
    log.record("a", decisions[-1])  # the same decision again: kept once
    assert [d["trigger_intent_id"] for d in log.of("a")] == ["i2", "i1"]
    log.record("b", decisions[0])
    assert log.of("a") == []


async def test_streams_end_when_soul_reloads(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """A reload gives Soul a new runtime: its streams say so and can start again."""
    announce(hass)
    await hass.async_block_till_done()
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/souls/subscribe"})
    assert (await ws.receive_json())["success"]
    assert "souls" in (await ws.receive_json())["event"]
    await ws.send_json({"id": 2, "type": "soul/events/subscribe"})
    assert (await ws.receive_json())["success"]
    # A third stream, unsubscribed before the reload, is not told anything.
    await ws.send_json({"id": 3, "type": "soul/events/subscribe"})
    assert (await ws.receive_json())["success"]
    await ws.send_json({"id": 4, "type": "unsubscribe_events", "subscription": 3})
    assert (await ws.receive_json())["success"]
    old_events = init_integration.runtime_data.events
    listening = old_events.listener_count
    assert await hass.config_entries.async_reload(init_integration.entry_id)
    await hass.async_block_till_done()
    ended = {}
    for _ in range(2):
        message = await ws.receive_json()
        ended[message["id"]] = message["event"]
    assert ended == {1: {"ended": True}, 2: {"ended": True}}
    assert old_events.listener_count < listening  # the old runtime is let go
    # Subscribing again reaches the new runtime.
    await ws.send_json({"id": 5, "type": "soul/souls/subscribe"})
    assert (await ws.receive_json())["success"]
    assert "souls" in (await ws.receive_json())["event"]
    # The client's unsubscribe of an ended stream still answers.
    await ws.send_json({"id": 6, "type": "unsubscribe_events", "subscription": 1})
    assert (await ws.receive_json())["success"]


async def test_a_users_panel_chats_in_progress_are_bounded(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """Chats waiting for the model count as the user's requests in progress (a review)."""
    from custom_components.soul import helpers

    announce(hass)
    await hass.async_block_till_done()
    kid = await _user_ws(hass, hass_ws_client)
    # The user already has as many requests in progress as they may.
    hass.data[helpers._IN_FLIGHT] = {kid.user.id: helpers.MAX_IN_FLIGHT}
    answer = await _call(kid, {"type": "soul/chat", "text": "开灯", "terminal_id": T})
    assert answer["error"]["code"] == "too_many_requests"
    hass.data[helpers._IN_FLIGHT] = {}
    answer = await _call(kid, {"type": "soul/chat", "text": "开灯", "terminal_id": T})
    assert answer["success"], answer
    assert helpers.requests_in_flight(hass) == 0
