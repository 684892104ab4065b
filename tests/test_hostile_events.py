"""Hostile reads of the event journal: HTTP, WebSocket and the action.

Every refusal is a documented answer (HTTP 400/401/503 with ``{"error"}``, a
WebSocket error result with a code, an action's validation error), never a
500, an ``unknown_error`` or a traceback in the log; a user never sees
another user's souls' events, not even whether they exist; streams leave no
listener behind.
"""

from __future__ import annotations

from dataclasses import replace
import logging
from pathlib import Path
import threading
from typing import Any
from unittest.mock import patch
import urllib.parse

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from hypothesis import strategies as st
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)
import voluptuous as vol

from custom_components.soul import journal as journal_glue
from custom_components.soul.const import DOMAIN, JOURNAL_FILE
from custom_components.soul.core.cognition.events import (
    Event,
    EventQuery,
    EventType,
    Source,
    new_trace_id,
)
from custom_components.soul.core.cognition.journal import SqliteJournal, stored_form
from custom_components.soul.souls import async_add_soul
from custom_components.soul.websocket_api import MAX_SUBSCRIPTIONS

from .hostile import check_property, hostile_text
from .test_terminals import T, announce

EVENTS = "/api/soul/v1/events"
DOCUMENTED = {200, 400, 401, 503}


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Tracebacks and error lines, but Home Assistant's one line per refused frame."""
    return [
        r
        for r in caplog.records
        if r.exc_info
        or (
            r.levelno >= logging.ERROR
            and (
                not r.name.startswith("homeassistant.components.websocket_api")
                or "unknown_error" in r.getMessage()
            )
        )
    ]


def event(
    soul_id: str | None,
    *,
    session_id: str | None = None,
    trace_id: str | None = None,
    payload: dict[str, Any] | None = None,
    kind: EventType = EventType.SYSTEM_NOTIFICATION,
) -> Event:
    return Event(
        trace_id=trace_id or new_trace_id(),
        type=kind,
        source=Source.SYSTEM,
        payload=payload if payload is not None else {"message": "hello"},
        timestamp=1_700_000_000.0,
        soul_id=soul_id,
        session_id=session_id,
    )


async def flush(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    journal = entry.runtime_data.journal
    assert journal is not None
    assert await hass.async_add_executor_job(journal.flush)


async def user_token(hass: HomeAssistant, name: str = "Kid") -> tuple[str, str]:
    """Return a new non-administrator's id and access token."""
    user = await hass.auth.async_create_user(name, group_ids=["system-users"])
    refresh = await hass.auth.async_create_refresh_token(user, "https://example.com/")
    return user.id, hass.auth.async_create_access_token(refresh)


@pytest.fixture
async def setup(
    hass: HomeAssistant, init_integration: MockConfigEntry, hass_admin_user: Any
) -> dict[str, str]:
    """The shared soul of ``T`` with a user's session, an administrator's soul.

    The user ("Kid": ``kid_id``, ``kid_token``) had the shared soul's session
    ``s-shared``; someone else's session on it (``s-other``) is not theirs.
    """
    kid_id, kid_token = await user_token(hass)
    announce(hass)
    await hass.async_block_till_done()
    runtime = init_integration.runtime_data
    shared = runtime.souls.soul_of(T).soul_id
    private = async_add_soul(
        hass, init_integration, name="Dads", mbti="INTJ", user_id=hass_admin_user.id
    ).soul_id
    runtime.events.emit(
        replace(
            event(
                shared,
                session_id="s-shared",
                trace_id="t-shared",
                payload={"content": "hi", "inner_voice": "psst"},
                kind=EventType.DRIVER_RESPONSE,
            ),
            user_id=kid_id,
        )
    )
    runtime.events.emit(
        replace(
            event(
                shared,
                session_id="s-other",
                trace_id="t-other",
                payload={"content": "someone else's words"},
                kind=EventType.DRIVER_RESPONSE,
            ),
            user_id="someone-else",
        )
    )
    runtime.events.emit(
        event(
            private,
            session_id="s-private",
            trace_id="t-private",
            payload={"content": "secret", "inner_voice": "hush"},
            kind=EventType.DRIVER_RESPONSE,
        )
    )
    await flush(hass, init_integration)
    return {
        "shared": shared,
        "private": private,
        "kid_id": kid_id,
        "kid_token": kid_token,
    }


# -- HTTP ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "word"),
    [
        # A cursor beyond SQLite's INTEGER was a 500 (OverflowError).
        ({"before": str(2**63)}, "before"),
        ({"before": str(-(2**63) - 1)}, "before"),
        ({"before": "0"}, "before"),
        ({"before": "-5"}, "before"),
        ({"before": "9" * 5000}, "before"),
        ({"before": "1.5"}, "before"),
        ({"limit": "1e308"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "nan"}, "limit"),
        ({"limit": "inf"}, "limit"),
        ({"since": "1e309"}, "since"),
        ({"since": "-inf"}, "since"),
        ({"since": "NaN"}, "since"),
        ({"since": "0000-01-01"}, "since"),
        ({"until": "x" * 65}, "until"),
        ({"type": "user_input,,"}, "type"),
        ({"type": "user_input,nope"}, "type"),
        ({"type": ",".join(["user_input"] * 17)}, "type"),
        ({"soul_id": "x" * 129}, "soul_id"),
        ({"session_id": "s" * 129}, "session_id"),
    ],
)
async def test_bad_queries_are_400(
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
    caplog: pytest.LogCaptureFixture,
    params: dict[str, str],
    word: str,
) -> None:
    response = await (await hass_client()).get(EVENTS, params=params)
    assert response.status == 400, await response.text()
    assert word in (await response.json())["error"]
    assert not errors(caplog)


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ({"until": "1e308"}, 4),
        ({"until": "-1e308"}, 0),
        ({"since": "1e308"}, 0),
        ({"since": "-1e308"}, 4),
        ({"since": "0001-01-01T00:00:00+14:00"}, 4),
        ({"until": "9999-12-31T23:59:59-14:00"}, 4),
        ({"since": "2023-11-14T22:13:20Z", "until": "1700000000"}, 3),
        ({"before": str(2**63 - 1)}, 4),
        ({"soul_id": "%"}, 0),
        ({"soul_id": "_"}, 0),
        ({"trace_id": "' OR 1=1 --"}, 0),
        ({"session_id": "s-%"}, 0),
        ({"unknown": "1", "limit": "2"}, 2),
    ],
)
async def test_extreme_but_valid_queries(
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
    params: dict[str, str],
    count: int,
) -> None:
    response = await (await hass_client()).get(EVENTS, params=params)
    assert response.status == 200, await response.text()
    assert len((await response.json())["events"]) == count


async def test_any_query_string_gets_a_documented_answer(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any bytes, percent-encoded, in any parameter (invalid UTF-8, CESU surrogates)."""
    client = await hass_client()
    names = ["soul_id", "session_id", "trace_id", "type", "since", "until", "limit",
             "before"]  # fmt: skip
    values = st.one_of(
        st.binary(max_size=60),
        hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.sampled_from(
            [b"\xed\xa0\x80", b"\xff", b"1e308", b"-1e308", str(2**64).encode()]
        ),
    )
    queries = st.lists(st.tuples(st.sampled_from(names), values), max_size=4)

    async def get(pairs: list[tuple[str, bytes]]) -> None:
        query = "&".join(f"{k}={urllib.parse.quote_from_bytes(v)}" for k, v in pairs)
        response = await client.get(f"{EVENTS}?{query}")
        assert response.status in DOCUMENTED, (query, await response.text())
        if response.content_type == "application/json":
            assert isinstance(await response.json(), dict)
        else:  # Home Assistant's own filter refuses control characters first
            assert response.status == 400

    await check_property(hass, queries, get, max_examples=120)
    assert not errors(caplog)


async def test_repeated_parameters_take_the_first(
    setup: dict[str, str], hass_client: ClientSessionGenerator
) -> None:
    client = await hass_client()
    response = await client.get(f"{EVENTS}?limit=1&limit=100000")
    assert response.status == 200
    assert len((await response.json())["events"]) == 1
    response = await client.get(f"{EVENTS}?limit=100000&limit=1")
    assert response.status == 400


async def test_unauthenticated_calls_are_401(
    setup: dict[str, str], hass_client_no_auth: ClientSessionGenerator
) -> None:
    client = await hass_client_no_auth()
    assert (await client.get(EVENTS)).status == 401
    bad = {"Authorization": "Bearer nope"}
    assert (await client.get(EVENTS, headers=bad)).status == 401


async def test_users_see_nothing_of_other_users_souls(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
) -> None:
    """Another user's soul, session and trace read exactly like ones that do not exist."""
    token = setup["kid_token"]
    client = await hass_client(token)

    async def read(**params: str) -> dict[str, Any]:
        response = await client.get(EVENTS, params=params)
        assert response.status == 200
        return dict(await response.json())

    nothing = {"events": [], "next": None}
    for params in (
        {"soul_id": setup["private"]},
        {"session_id": "s-private"},
        {"trace_id": "t-private"},
        {"soul_id": setup["private"], "trace_id": "t-private"},
        {"before": str(2**63 - 1), "trace_id": "t-private"},
        # Another user's session on the soul every user shares.
        {"session_id": "s-other"},
        {"trace_id": "t-other"},
        {"soul_id": setup["shared"], "trace_id": "t-other"},
    ):
        assert await read(**params) == nothing, params
        missing = {k: v + "-missing" if k != "before" else v for k, v in params.items()}
        assert await read(**missing) == nothing
    mine = (await read())["events"]
    assert {e["soul_id"] for e in mine} == {setup["shared"]}
    # The shared soul's inner voice is the administrators'.
    (reply,) = [e for e in mine if e["trace_id"] == "t-shared"]
    assert reply["payload"] == {"content": "hi", "inner_voice": None}
    admin = await (await hass_client()).get(EVENTS, params={"trace_id": "t-private"})
    (theirs,) = (await admin.json())["events"]
    assert theirs["payload"]["inner_voice"] == "hush"


async def test_an_unreadable_journal_is_503(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
    hass_ws_client: WebSocketGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database file gone under Soul: a 503, an error code, no traceback."""
    path = Path(hass.config.path(JOURNAL_FILE))
    for name in (path, path.with_name(path.name + "-wal")):
        await hass.async_add_executor_job(name.unlink, True)
    response = await (await hass_client()).get(EVENTS)
    assert response.status == 503
    assert "journal" in (await response.json())["error"]
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/events/list"})
    answer = await ws.receive_json()
    assert answer["error"]["code"] == "journal_unavailable"
    with pytest.raises(HomeAssistantError, match="journal"):
        await hass.services.async_call(
            DOMAIN, "get_events", {}, blocking=True, return_response=True
        )
    assert not errors(caplog)


async def test_no_journal_reads_as_no_events(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_client: ClientSessionGenerator,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """Without a journal (it could not be opened: a repair issue) reads are empty."""
    runtime = init_integration.runtime_data
    journal, runtime.journal = runtime.journal, None
    response = await (await hass_client()).get(EVENTS)
    assert await response.json() == {"events": [], "next": None}
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/events/list"})
    assert (await ws.receive_json())["result"] == {"events": [], "next": None}
    runtime.journal = journal  # closed at the unload


async def test_a_page_is_blanked_and_encoded_off_the_event_loop(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_client: ClientSessionGenerator,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """500 payloads of 64 KiB cost the loop ~100 ms to blank and encode: executor."""
    threads: list[str] = []
    blank = journal_glue.for_reader
    encode = journal_glue.json_bytes

    def for_reader(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return blank(*args)

    def json_bytes(*args: Any) -> bytes:
        threads.append(threading.current_thread().name)
        return encode(*args)

    with (
        patch.object(journal_glue, "for_reader", for_reader),
        patch.object(journal_glue, "json_bytes", json_bytes),
    ):
        response = await (await hass_client()).get(EVENTS)
        assert len((await response.json())["events"]) == 4
        ws = await hass_ws_client(hass)
        await ws.send_json({"id": 1, "type": "soul/events/list"})
        assert len((await ws.receive_json())["result"]["events"]) == 4
    assert len(threads) == 2 * (4 + 1)
    assert threading.main_thread().name not in threads


# -- WebSocket --------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"before": 2**64 - 1},  # was unknown_error (OverflowError) and a traceback
        {"before": 2**63},
        {"before": 0},
        {"limit": 2**64 - 1},
        {"limit": 1e300},
        {"limit": "many"},
        {"since": "1e999"},
        {"since": [1]},
        {"since": True},  # was 1970 (a black-box run)
        {"limit": 2.9},  # was 2
        {"before": False},
        {"until": {"a": 1}},
        {"event_types": "user_input"},
        {"event_types": ["nope"]},
        {"event_types": ["user_input"] * 100_000},
        {"soul_id": 5},
        {"soul_id": "\x00"},
        {"soul_id": "x" * (1024 * 1024)},
        {"trace_id": "a\u2028" * 100},
        {"unknown": 1},
    ],
)
async def test_bad_list_messages_are_invalid_format(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_ws_client: WebSocketGenerator,
    caplog: pytest.LogCaptureFixture,
    extra: dict[str, Any],
) -> None:
    ws = await hass_ws_client(hass)
    await ws.send_json({"id": 1, "type": "soul/events/list", **extra})
    answer = await ws.receive_json()
    assert answer["success"] is False
    assert answer["error"]["code"] == "invalid_format", answer
    assert not errors(caplog)


async def test_subscriptions_are_bounded_and_leave_no_listener(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    setup: dict[str, str],
    hass_ws_client: WebSocketGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = init_integration.runtime_data.events
    before = bus.listener_count
    ws = await hass_ws_client(hass)
    codes = []
    for index in range(1, 301):
        await ws.send_json({"id": index, "type": "soul/events/subscribe"})
        answer = await ws.receive_json()
        codes.append("ok" if answer["success"] else answer["error"]["code"])
    assert codes == ["ok"] * MAX_SUBSCRIPTIONS + ["too_many_subscriptions"] * (
        300 - MAX_SUBSCRIPTIONS
    )
    assert bus.listener_count == before + MAX_SUBSCRIPTIONS
    # Unsubscribing frees a place.
    await ws.send_json({"id": 301, "type": "unsubscribe_events", "subscription": 1})
    assert (await ws.receive_json())["success"]
    assert bus.listener_count == before + MAX_SUBSCRIPTIONS - 1
    await ws.send_json({"id": 302, "type": "soul/events/subscribe"})
    assert (await ws.receive_json())["success"]
    # A soul id is kept while the stream lives: one of a megabyte is refused.
    huge = {"id": 303, "type": "soul/events/subscribe", "soul_id": "s" * 2**20}
    await ws.send_json(huge)
    answer = await ws.receive_json()
    assert answer["error"]["code"] == "invalid_format"
    assert bus.listener_count == before + MAX_SUBSCRIPTIONS
    # An event in the middle of the stream, then the connection closes.
    bus.emit(event(setup["shared"]))
    await ws.close()
    await hass.async_block_till_done()
    assert bus.listener_count == before
    bus.emit(event(setup["shared"]))  # nobody to send it to: no error
    await hass.async_block_till_done()
    assert not errors(caplog)


async def test_the_stream_shows_what_a_read_would(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    setup: dict[str, str],
    hass_ws_client: WebSocketGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A user's stream held events of no soul (unbound bodies) that reads hide."""
    token = setup["kid_token"]
    user = await hass_ws_client(hass, access_token=token)
    admin = await hass_ws_client(hass)
    for ws in (user, admin):
        await ws.send_json({"id": 1, "type": "soul/events/subscribe"})
        assert (await ws.receive_json())["success"]
    bus = init_integration.runtime_data.events
    bus.emit(event(None, payload={"message": "body offline"}))
    bus.emit(event("a-deleted-soul"))
    bus.emit(event(setup["private"], payload={"inner_voice": "hush"}))
    other = event(setup["shared"], session_id="s-other", payload={"n": 1})
    bus.emit(replace(other, user_id="someone-else"))
    bus.emit(other)  # a session's event that names no user: nobody's to read
    hostile = {"inner_voice": "x", "text": "bad\ud800", "set": {1}, "n": float("nan")}
    bus.emit(event(setup["shared"], payload=hostile, trace_id="last"))
    seen = []
    while not seen or seen[-1]["trace_id"] != "last":
        seen.append((await user.receive_json())["event"]["event"])
    (only,) = seen
    assert only["soul_id"] == setup["shared"]
    # A payload JSON cannot hold arrives as the journal stores it, not as an error.
    assert only["payload"] == {
        "inner_voice": None, "text": "bad\ufffd", "set": "{1}", "n": None
    }  # fmt: skip
    everything = [(await admin.receive_json())["event"]["event"] for _ in range(6)]
    assert [e["soul_id"] for e in everything] == [
        None, "a-deleted-soul", setup["private"], *[setup["shared"]] * 3
    ]  # fmt: skip
    assert everything[2]["payload"]["inner_voice"] == "hush"
    assert not errors(caplog)


async def test_enormous_subscribe_messages_are_refused(
    hass: HomeAssistant,
    setup: dict[str, str],
    hass_ws_client: WebSocketGenerator,
) -> None:
    ws = await hass_ws_client(hass)
    await ws.send_json(
        {"id": 1, "type": "soul/events/subscribe",
         "event_types": ["psyche_update"] * 200_000}
    )  # fmt: skip
    answer = await ws.receive_json()
    assert answer["error"]["code"] == "invalid_format"
    await ws.send_json({"id": 2, "type": "soul/events/subscribe", "soul_id": 7})
    assert (await ws.receive_json())["error"]["code"] == "invalid_format"


async def test_commands_before_soul_is_set_up_are_not_ready(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_client: ClientSessionGenerator,
) -> None:
    assert await hass.config_entries.async_unload(init_integration.entry_id)
    ws = await hass_ws_client(hass)
    for index, kind in enumerate(("soul/events/list", "soul/events/subscribe"), 1):
        await ws.send_json({"id": index, "type": kind})
        assert (await ws.receive_json())["error"]["code"] == "not_ready"
    assert (await (await hass_client()).get(EVENTS)).status == 503


# -- the action ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"before": 2**63},  # was an OverflowError from SQLite
        {"before": 0},
        {"since": "0001-01-01T00:00:00+14:00"},  # was an OverflowError (as_utc)
        {"until": "9999-12-31T23:59:59-14:00"},
        {"since": "yesterday"},
        {"limit": 0},
        {"type": ["user_input"] * 17},
        {"trace_id": "x" * 129},
    ],
)
async def test_bad_action_data_is_invalid(
    hass: HomeAssistant, setup: dict[str, str], data: dict[str, Any]
) -> None:
    with pytest.raises(vol.Invalid):
        await hass.services.async_call(
            DOMAIN, "get_events", data, blocking=True, return_response=True
        )


async def test_the_action_hides_other_users_souls(
    hass: HomeAssistant, setup: dict[str, str]
) -> None:
    """Naming another user's soul answered differently from naming none that exists."""
    context = Context(user_id=setup["kid_id"])
    refusals = []
    for soul in ("Dads", setup["private"], "Nobody"):
        with pytest.raises(ServiceValidationError) as refused:
            await hass.services.async_call(
                DOMAIN, "get_events", {"soul_id": soul}, blocking=True,
                return_response=True, context=context,
            )  # fmt: skip
        refusals.append(refused.value.translation_key)
    assert refusals == ["unknown_soul"] * 3
    answer = await hass.services.async_call(
        DOMAIN, "get_events", {"soul_id": "friendly"}, blocking=True,
        return_response=True, context=context,
    )  # fmt: skip
    assert answer is not None
    assert [e["trace_id"] for e in answer["events"]] == ["t-shared"]
    admin = await hass.services.async_call(
        DOMAIN, "get_events", {"soul_id": "Dads", "since": "0001-01-01T00:00:00"},
        blocking=True, return_response=True,
    )  # fmt: skip
    assert admin is not None
    assert [e["trace_id"] for e in admin["events"]] == ["t-private"]


# -- the core ---------------------------------------------------------------------


def test_the_core_journal_takes_any_cursor(tmp_path: Path) -> None:
    """``query`` called with an out-of-range ``before_id`` by the core's own callers."""
    journal = SqliteJournal.open(tmp_path / "journal.db")
    try:
        for _ in range(3):
            journal.append(event("s"))
        assert journal.flush()
        for before, count in ((2**70, 3), (2**63, 3), (2**63 - 1, 3), (3, 2),
                              (1, 0), (0, 0), (-(2**70), 0)):  # fmt: skip
            page = journal.query(EventQuery(before_id=before))
            assert len(page.events) == count, before
    finally:
        journal.close()


def test_stored_form_is_what_a_read_gives_back() -> None:
    hostile = event("s", payload={"a\ud800": "b\udfff", 1: {2}, "x": float("inf")})
    stored = stored_form(hostile)
    assert stored["payload"] == {"a\ufffd": "b\ufffd", "1": "{2}", "x": None}
    assert stored["soul_id"] == "s"
    assert "id" not in stored
