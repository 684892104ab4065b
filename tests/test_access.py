"""Who may do what, over every view, action and Star path (docs/security.md).

An administrator, a user and a read-only user each try everything.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import WSServerHandshakeError
from homeassistant.auth.const import GROUP_ID_USER
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import (
    CLIENT_ID,
    MockConfigEntry,
    MockUser,
    async_fire_mqtt_message,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.soul.const import DOMAIN
from custom_components.soul.helpers import find_device

from .core.spec_payloads import skills
from .test_star import BASE, envelope, receive
from .test_terminals import T, announce

SOULS = "/api/soul/v1/souls"
SELECT = "/api/soul/v1/souls/select"
CHAT = "/api/soul/v1/chat"
FILTER = "/api/soul/v1/intents/filter"
ANALYZE = "/api/soul/v1/emotion/analyze"
CATALOG = [{"id": "light", "match": {"keywords_any": ["灯"]}}]


def chat_body(session_id: str = "s-1", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "terminal_id": T,
        "inputs": [{"type": "keyboard_text", "text": "你好"}],
        **extra,
    }


class Caller:
    """One Home Assistant user with an HTTP client."""

    def __init__(self, user: Any, token: str, client: Any) -> None:
        self.user = user
        self.token = token
        self.client = client

    @property
    def context(self) -> Context:
        return Context(user_id=self.user.id)


async def _caller(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, user: Any
) -> Caller:
    refresh = await hass.auth.async_create_refresh_token(user, CLIENT_ID)
    token = hass.auth.async_create_access_token(refresh)
    return Caller(user, token, await hass_client(token))


@pytest.fixture
async def callers(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_admin_user: MockUser,
    hass_read_only_user: MockUser,
) -> dict[str, Caller]:
    """An administrator, a user and a read-only user; a body bound to a soul."""
    user = await hass.auth.async_create_user("Kid", group_ids=[GROUP_ID_USER])
    announce(hass)  # the soul "friendly", bound to the body
    await hass.async_block_till_done()
    return {
        "admin": await _caller(hass, hass_client, hass_admin_user),
        "user": await _caller(hass, hass_client, user),
        "read_only": await _caller(hass, hass_client, hass_read_only_user),
    }


@pytest.mark.parametrize(
    ("method", "url", "body", "expected"),
    [
        ("get", SOULS, None, {"admin": 200, "user": 200, "read_only": 200}),
        (
            "post",
            SOULS,
            {"name": "Nova", "mbti_type": "INTJ"},
            {"admin": 201, "user": 403, "read_only": 403},
        ),
        (
            "post",
            SELECT,
            {"terminal_id": "other-body", "soul_id": "friendly"},
            {"admin": 200, "user": 403, "read_only": 403},
        ),
        (
            "post",
            FILTER,
            {"command": "开灯", "intent_catalog": CATALOG},
            {"admin": 200, "user": 200, "read_only": 200},
        ),
        (
            "post",
            FILTER,
            {"command": "开灯", "terminal_id": T},
            {"admin": 200, "user": 200, "read_only": 403},
        ),
        (
            "post",
            ANALYZE,
            {"text": "我好开心"},
            {"admin": 200, "user": 200, "read_only": 200},
        ),
        (
            "post",
            ANALYZE,
            {"text": "我好开心", "terminal_id": T},
            {"admin": 200, "user": 200, "read_only": 403},
        ),
    ],
)
async def test_every_view_for_every_kind_of_user(
    callers: dict[str, Caller],
    method: str,
    url: str,
    body: Any,
    expected: dict[str, int],
) -> None:
    for kind, caller in callers.items():
        response = await getattr(caller.client, method)(url, json=body)
        assert response.status == expected[kind], (kind, await response.text())
        assert isinstance(await response.json(), dict)


async def test_chat_is_the_callers_own(callers: dict[str, Caller]) -> None:
    admin, user, read_only = callers["admin"], callers["user"], callers["read_only"]
    # Everyone with control chats as themselves.
    response = await user.client.post(CHAT, json=chat_body("kid-session"))
    assert response.status == 200
    # A read-only user may not make a body act.
    response = await read_only.client.post(CHAT, json=chat_body("ro-session"))
    assert response.status == 403
    # Only an administrator acts for someone else.
    response = await user.client.post(
        CHAT, json=chat_body("kid-2", user_id=admin.user.id)
    )
    assert response.status == 403
    assert "administrator" in (await response.json())["error"]
    response = await admin.client.post(
        CHAT, json=chat_body("for-kid", user_id=user.user.id)
    )
    assert response.status == 200
    # Sessions belong to their user: nobody continues (or wipes) another's.
    response = await admin.client.post(CHAT, json=chat_body("dad-session"))
    assert response.status == 200
    response = await user.client.post(CHAT, json=chat_body("dad-session"))
    assert response.status == 403
    assert "another user" in (await response.json())["error"]
    # Nor tags a soul's emotion_update with it (a black-box run did, 2026-11-29).
    analyze = {"text": "好开心", "terminal_id": T}
    response = await user.client.post(
        ANALYZE, json={**analyze, "session_id": "dad-session"}
    )
    assert response.status == 403
    assert "another user" in (await response.json())["error"]
    for session_id in ("kid-session", "kid-new-one", None):
        response = await user.client.post(
            ANALYZE, json={**analyze, "session_id": session_id}
        )
        assert response.status == 200, await response.text()


async def test_listing_souls_shows_the_callers_own(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    admin, user = callers["admin"], callers["user"]
    for name, owner in (("Mine", user.user.id), ("Dads", admin.user.id)):
        response = await admin.client.post(
            SOULS, json={"name": name, "mbti_type": "ENFP", "user_id": owner}
        )
        assert response.status == 201
    listing = await (await user.client.get(SOULS)).json()
    names = {s["name"] for s in listing["souls"]}
    assert "Mine" in names
    assert "Dads" not in names
    response = await user.client.get(SOULS, params={"user_id": admin.user.id})
    assert response.status == 403
    # An administrator lists its own too (§4.1: the user's souls) …
    own = await (await admin.client.get(SOULS)).json()
    assert "Dads" in {s["name"] for s in own["souls"]}
    assert "Mine" not in {s["name"] for s in own["souls"]}
    # … and every soul when it asks; a user may not.
    everything = await (await admin.client.get(SOULS, params={"all": "true"})).json()
    assert {"Mine", "Dads"} <= {s["name"] for s in everything["souls"]}
    assert (await user.client.get(SOULS, params={"all": "true"})).status == 403


async def _private_soul(admin: Caller) -> str:
    """Create the administrator's private soul "Dads"; return its id."""
    response = await admin.client.post(
        SOULS, json={"name": "Dads", "mbti_type": "ENFP", "user_id": admin.user.id}
    )
    return str((await response.json())["soul_id"])


async def test_chat_binds_only_what_the_caller_may(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """A user's chat binds no private soul of another, no id that never connected."""
    admin, user = callers["admin"], callers["user"]
    souls = init_integration.runtime_data.souls
    dads = await _private_soul(admin)
    shared = souls.soul_of(T)
    assert shared is not None and shared.user_id is None
    # Another user's soul does not exist for a user, bound or not.
    response = await user.client.post(
        CHAT, json=chat_body("k1", terminal_id="kid-body", soul_id=dads)
    )
    assert response.status == 404
    assert "unknown soul_id" in (await response.json())["error"]
    # A shared soul on a terminal that never connected: an administrator's call.
    response = await user.client.post(
        CHAT, json=chat_body("k2", terminal_id="kid-body", soul_id=shared.soul_id)
    )
    assert response.status == 404
    assert "only an administrator may bind it" in (await response.json())["error"]
    # A hint that would create a soul is not applied for a user, and says so.
    response = await user.client.post(
        CHAT, json=chat_body("k3", terminal_id="kid-body", soul_hint="ENTP")
    )
    assert response.status == 404
    assert "soul_hint 'ENTP' was not applied" in (await response.json())["error"]
    assert "kid-body" not in souls.bindings()
    assert len(souls.souls) == 2
    # The 409 names the bound soul only to those who may see it.
    souls.bind("dads-body", dads)
    response = await user.client.post(
        CHAT, json=chat_body("k4", terminal_id="dads-body", soul_id=shared.soul_id)
    )
    assert response.status == 409
    assert dads not in (await response.json())["error"]
    # An administrator binds an id before its body connects (as /souls/select).
    response = await admin.client.post(
        CHAT, json=chat_body("a1", terminal_id="new-body", soul_id=shared.soul_id)
    )
    assert response.status == 200
    assert souls.bindings()["new-body"] == shared.soul_id


async def test_a_body_is_no_way_in_to_another_users_private_soul(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """Neither a body's hint nor a terminal bound to it reaches a private soul."""
    admin, user = callers["admin"], callers["user"]
    souls = init_integration.runtime_data.souls
    dads = await _private_soul(admin)
    # A body's own hint picks shared souls only, by name or by id.
    for terminal_id, hint in (("hint-name", "dads"), ("hint-id", dads)):
        base = f"soul/terminal/{terminal_id}"
        async_fire_mqtt_message(hass, f"{base}/online", "online")
        payload = skills(terminal_id=terminal_id, soul_hint=hint)
        async_fire_mqtt_message(hass, f"{base}/skills", json.dumps(payload))
    await hass.async_block_till_done()
    assert dads not in souls.bindings().values()
    # A terminal an administrator bound to it talks to the owner only.
    souls.bind("dads-body", dads)
    for path, body in (
        (CHAT, chat_body("k5", terminal_id="dads-body")),
        (ANALYZE, {"text": "好开心", "terminal_id": "dads-body"}),
    ):
        response = await user.client.post(path, json=body)
        assert response.status == 403, path
        error = (await response.json())["error"]
        assert "another user's private soul" in error
        assert dads not in error and "Dads" not in error
        assert (await admin.client.post(path, json=body)).status == 200, path
    # Its Assist agent answers its owner, not another user.
    agent = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, f"{dads}-conversation"
    )
    assert agent is not None
    for caller, refused in ((user, True), (admin, False)):
        result = await conversation.async_converse(
            hass, "你好", None, caller.context, "zh", agent_id=agent
        )
        speech = result.response.speech["plain"]["speech"]
        assert ("unknown soul_id" in speech) is refused, speech


async def test_the_panel_and_star_session_ids_are_their_channels(
    hass: HomeAssistant,
    callers: dict[str, Caller],
    hass_ws_client: Any,
) -> None:
    """A user who took the admin's panel or Star session id first locked them out."""
    admin, user = callers["admin"], callers["user"]
    for session_id in (f"panel-{admin.user.id[:16]}-x", "star-dad01"):
        response = await user.client.post(CHAT, json=chat_body(session_id))
        assert response.status == 400
        assert "channel" in (await response.json())["error"]
        response = await user.client.post(
            ANALYZE, json={"text": "好", "terminal_id": T, "session_id": session_id}
        )
        assert response.status == 400
        assert "channel" in (await response.json())["error"]
    panel = await hass_ws_client(hass, access_token=user.token)
    await panel.send_json_auto_id(
        {
            "type": "soul/chat",
            "text": "你好",
            "terminal_id": T,
            "session_id": f"panel-{admin.user.id[:16]}-x",
        }
    )
    answer = await panel.receive_json()
    assert not answer["success"] and answer["error"]["code"] == "unauthorized"
    await panel.send_json_auto_id(
        {
            "type": "soul/chat",
            "text": "你好",
            "terminal_id": T,
            "session_id": f"panel-{user.user.id[:16]}-mine",
        }
    )
    assert (await panel.receive_json())["success"]


async def test_star_event_notes_reach_only_what_their_sender_may_speak_to(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """A black-box run put a user's note into an administrator's private chats."""
    admin, user, read_only = callers["admin"], callers["user"], callers["read_only"]
    runtime = init_integration.runtime_data
    shared = runtime.souls.soul_of(T).soul_id
    dads = await _private_soul(admin)
    sessions = runtime.chat.sessions
    sessions.open("admin-shared", T, shared, admin.user.id)
    sessions.open("admin-dads", None, dads, admin.user.id)
    sessions.open("user-shared", T, shared, user.user.id)
    sessions.open("ro-shared", T, shared, read_only.user.id)
    # (as if the soul had been the user's to talk to before it became private)
    sessions.open("user-dads", None, dads, user.user.id)
    # The user's own Star session, with another soul: a note for the shared
    # soul is not that conversation's either.
    sessions.open(f"star-human-{user.user.id[:16]}-kid02", None, dads, user.user.id)

    async def note(caller: Caller, human: str, soul_id: str, label: str) -> None:
        ws, _ = await _star(caller, f"/human/{human}")
        event = {"type": "event", "event": "note", "id": label, "data": label}
        await ws.send_json(
            envelope((human, "human"), (f"soul_{soul_id}", "agent"), event)
        )
        await ws.close()
        await hass.async_block_till_done()

    def holding(label: str) -> set[str]:
        return {
            session_id
            for session_id, session in sessions.items()
            if any(item.get("event", {}).get("id") == label for item in session.context)
        }

    await note(user, "kid01", dads, "to-private")
    await note(read_only, "ro001", shared, "read-only")
    await note(user, "kid02", shared, "from-user")
    await note(admin, "dad01", shared, "from-admin")
    for _ in range(100):  # the notes are kept in the order they came
        if holding("from-admin"):
            break
        await asyncio.sleep(0.01)
        await hass.async_block_till_done()
    assert holding("to-private") == set()
    assert holding("read-only") == set()
    assert holding("from-user") == {"user-shared"}
    assert holding("from-admin") == {"admin-shared", "user-shared", "ro-shared"}


@pytest.mark.parametrize(
    ("service", "data", "allowed"),
    [
        ("create_soul", {"name": "Nova", "mbti_type": "INTJ"}, {"admin"}),
        ("select_soul", {"terminal_id": "other", "soul_id": "friendly"}, {"admin"}),
        ("invoke_skill", None, {"admin", "user"}),
        # A read-only user changes nothing (a black-box run stored a profile).
        ("update_profile", {"preferences": {"tea": "green"}}, {"admin", "user"}),
        ("remember", {"text": "the door code is 1234"}, {"admin", "user"}),
    ],
)
async def test_actions_check_their_caller(  # noqa: PLR0917
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    callers: dict[str, Caller],
    service: str,
    data: dict[str, Any] | None,
    allowed: set[str],
) -> None:
    if data is None:  # invoke_skill needs the body's device
        device = find_device(hass, init_integration.entry_id, T)
        assert device is not None
        data = {"device_id": device.id, "skill": "no_such_skill"}
    for kind, caller in callers.items():
        call = hass.services.async_call(
            DOMAIN,
            service,
            data,
            blocking=True,
            context=caller.context,
            return_response=True,
        )
        if kind not in allowed:
            with pytest.raises(Unauthorized):
                await call
            continue
        try:
            await call
        except Unauthorized:
            pytest.fail(f"{kind} may call {service}")
        except Exception:  # noqa: BLE001, S110 - refused for another reason
            pass


async def test_memory_actions_act_for_the_caller(
    hass: HomeAssistant, callers: dict[str, Caller]
) -> None:
    """Memory is off here: the user check comes first, whatever the backend."""
    user, admin = callers["user"], callers["admin"]
    for service, data in (
        ("recall", {"query": "door code", "user_id": admin.user.id}),
        ("remember", {"text": "x", "user_id": admin.user.id}),
    ):
        with pytest.raises(Unauthorized):
            await hass.services.async_call(
                DOMAIN,
                service,
                data,
                blocking=True,
                context=user.context,
                return_response=service == "recall",
            )
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN, "forget", {"user_id": admin.user.id}, blocking=True,
            context=user.context,
        )  # fmt: skip


async def _star(caller: Caller, path: str) -> Any:
    ws = await caller.client.ws_connect(BASE + path)
    first = json.loads((await ws.receive(timeout=5)).data)
    return ws, first


async def test_star_identities_are_home_assistants(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    admin, user, read_only = callers["admin"], callers["user"], callers["read_only"]
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id
    # Soul's own identities are reserved, for every token.
    for caller in (admin, user):
        for path in (
            f"/env/home/agent/soul_{soul_id}",
            "/env/home",
            "/env/lab1/agent/soul_x1",
            # nor what reads as them (a black-box run took these)
            f"/env/home/agent/SOUL_{soul_id}",
            f"/human/soul_{soul_id}",
            "/env/Home",
        ):
            with pytest.raises(WSServerHandshakeError) as refused:
                await caller.client.ws_connect(BASE + path)
            assert refused.value.status == 403
    # A human id belongs to its first user: nobody else takes it over.
    dad, greeting = await _star(admin, "/human/dad01")
    assert greeting["type"] == "heartbeat"
    with pytest.raises(WSServerHandshakeError) as refused:
        await user.client.ws_connect(BASE + "/human/dad01")
    assert refused.value.status == 403
    await dad.close()
    await hass.async_block_till_done()
    with pytest.raises(WSServerHandshakeError):  # not even once dad is gone
        await user.client.ws_connect(BASE + "/human/dad01")
    assert init_integration.runtime_data.star.human_owners["dad01"] == admin.user.id
    # The same user takes over their own connection.
    dad, _ = await _star(admin, "/human/dad01")
    dad_again, _ = await _star(admin, "/human/dad01")
    await dad_again.close()
    await dad.close()

    async def chat(caller: Caller, human: str, **parameters: Any) -> dict[str, Any]:
        ws, _ = await _star(caller, f"/human/{human}")
        action = {
            "type": "action",
            "action": "chat",
            "id": "c1",
            "parameters": {"text": "你好", **parameters},
        }
        await ws.send_json(
            envelope((human, "human"), (f"soul_{soul_id}", "agent"), action)
        )
        outcome = (await receive(ws))["payload"]["outcome"]
        await ws.close()
        return outcome

    assert (await chat(user, "kid01"))["status"] == "success"
    refused_other = await chat(user, "kid02", user_id=admin.user.id)
    assert refused_other["status"] == "error"
    assert "administrator" in refused_other["message"]
    assert (await chat(admin, "dad01", user_id=user.user.id))["status"] == "success"
    read_only_outcome = await chat(read_only, "ro001")
    assert read_only_outcome["status"] == "error"
    assert "read-only" in read_only_outcome["message"]
    # Chat sessions of Star clients ran as their users.
    sessions = init_integration.runtime_data.chat.sessions
    assert sessions[f"star-human-{user.user.id[:16]}-kid01"].user_id == user.user.id


async def test_a_star_client_id_takes_no_other_clients_session(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """A black-box run: a user's agent "x" took the session of the admin's human "x"."""
    admin, user = callers["admin"], callers["user"]
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id

    async def chat(caller: Caller, path: str, sender: tuple[str, str]) -> Any:
        ws, _ = await _star(caller, path)
        action = {"type": "action", "action": "chat", "id": "c1"}
        action["parameters"] = {"text": "你好"}
        await ws.send_json(envelope(sender, (f"soul_{soul_id}", "agent"), action))
        outcome = (await receive(ws))["payload"]["outcome"]
        await ws.close()
        return outcome

    agent = await chat(user, "/env/home/agent/same1", ("same1", "agent"))
    assert agent["status"] == "success"
    human = await chat(admin, "/human/same1", ("same1", "human"))
    assert human["status"] == "success", human
    sessions = init_integration.runtime_data.chat.sessions
    assert sessions[f"star-agent-{user.user.id[:16]}-same1"].user_id == user.user.id
    assert sessions[f"star-human-{admin.user.id[:16]}-same1"].user_id == admin.user.id


async def test_the_soul_select_binds_for_administrators_only(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """The body's *Soul* select is configuration: users may not rebind bodies."""
    response = await callers["admin"].client.post(
        SOULS, json={"name": "Nova", "mbti_type": "INTJ"}
    )
    nova = (await response.json())["soul_id"]
    entity_id = "select.terminal_001_soul"
    for kind in ("user", "read_only"):
        with pytest.raises(Unauthorized):
            await hass.services.async_call(
                "select",
                "select_option",
                {"entity_id": entity_id, "option": "Nova"},
                blocking=True,
                context=callers[kind].context,
            )
    assert init_integration.runtime_data.souls.bindings()[T] != nova
    await hass.services.async_call(
        "select",
        "select_option",
        {"entity_id": entity_id, "option": "Nova"},
        blocking=True,
        context=callers["admin"].context,
    )
    assert init_integration.runtime_data.souls.bindings()[T] == nova


async def test_one_user_cannot_keep_a_shared_soul_shocked(
    hass: HomeAssistant, callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """A soul gets used to one caller's outbursts, whoever an administrator names."""
    admin, user = callers["admin"], callers["user"]
    souls = init_integration.runtime_data.souls
    soul_id = souls.soul_of(T).soul_id

    def shock_until() -> float:
        return souls._states[soul_id].shock_until

    shout = {"text": "气死我了！！！滚！", "terminal_id": T}
    response = await user.client.post(ANALYZE, json=shout)
    assert (await response.json())["exec_mode"] == "blocked"
    first = shock_until()
    # Another user's first outburst at once may shock it again.
    response = await admin.client.post(ANALYZE, json=shout)
    assert shock_until() > first
    second = shock_until()
    # The same user again: felt less, the shock is not drawn out.
    response = await user.client.post(ANALYZE, json=shout)
    assert response.status == 200
    assert shock_until() == second


async def test_an_administrator_naming_users_is_one_source(
    callers: dict[str, Caller], init_integration: MockConfigEntry
) -> None:
    """A new ``user_id`` an administrator names is no new source of outbursts.

    A second source's outburst right after a first may shock the soul again
    (docs/emotion.md, "Habituation"); the same source's may not.
    """
    admin = callers["admin"]
    souls = init_integration.runtime_data.souls
    soul_id = souls.soul_of(T).soul_id
    shocks = []
    for n in range(2):
        response = await admin.client.post(
            CHAT,
            json={
                **chat_body(f"guest-{n}", user_id=f"guest-{n}"),
                "inputs": [{"type": "keyboard_text", "text": "气死我了！！！滚！"}],
            },
        )
        assert response.status == 200, await response.text()
        shocks.append(souls._states[soul_id].shock_until)
    assert shocks[1] == shocks[0]
