"""Soul's stores read back whatever JSON a damaged or edited file holds.

A fuzz of the five stores (2026-11-29) loaded values that hung Home Assistant
at start (a soul's time of -1e18: ``test_souls``), made every later archive
fail, left a store unwritable or held the loop for seconds. Each store's
loader keeps what Soul could have written, and drops or bounds the rest.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from custom_components.soul.core import stored
from custom_components.soul.core.cognition.profiles import ProfileStore
from custom_components.soul.core.memory.manager import MAX_QUEUE, MemoryManager
from custom_components.soul.core.session import MAX_SUMMARY, Session
from custom_components.soul.core.sessions import Sessions
from custom_components.soul.core.souls import MAX_SOULS
from custom_components.soul.core.star.connections import (
    MAX_HUMAN_OWNERS,
    MAX_HUMANS_PER_USER,
    Connections,
)

from .test_memory_manager import ListMemory

NOW = 1_767_000_000.0
SESSION = {
    "session_id": "s",
    "terminal_id": "t1",
    "soul_id": "s1",
    "user_id": "u1",
    "turns": [{"role": "user", "content": "hi"}],
    "last_user_at": NOW - 60,
    "summary": "said hi",
    "summarized_for": 0.0,
    "turn_count": 1,
    "summary_turns": 0,
}
ODD = [None, True, -1, 1e308, 10**30, "nan", "", [], {}, [[[]]], "\u202e"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5, 5), (-3, 0), (10**30, stored.MAX_COUNT), (True, 0), (2.5, 0), ("7", 0)],
)
def test_a_stored_count(value: object, expected: int) -> None:
    assert stored.count(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (NOW - 1, NOW - 1),
        (NOW + 60, NOW + 60),  # the clock may start a little behind
        (NOW + 10**9, NOW + stored.CLOCK_SLACK),
        (-1e18, 0.0),
        (10**400, 0.0),
        (float("nan"), 0.0),
        ("1e999", 0.0),
        (False, 0.0),
    ],
)
def test_a_stored_time(value: object, expected: float) -> None:
    assert stored.seconds(value, NOW) == expected


def _writable(value: Any) -> None:
    """Home Assistant's writer (orjson) takes it, and it reads back the same."""
    assert orjson.loads(orjson.dumps(value)) == json.loads(json.dumps(value))


def test_a_stored_session_reads_back_the_same() -> None:
    session = Session.from_dict(SESSION, NOW)
    assert session is not None
    assert session.as_dict() == SESSION


@pytest.mark.parametrize("key", sorted(SESSION))
@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_an_odd_stored_session_value_is_dropped_or_bounded(key: str, odd: Any) -> None:
    session = Session.from_dict({**SESSION, key: odd}, NOW)
    if session is None:
        assert key in ("session_id", "terminal_id", "soul_id", "user_id") and not (
            key == "user_id" and odd is None
        )
        return
    data = session.as_dict()
    _writable(data)
    assert isinstance(data["user_id"], str | None)
    assert len(data["summary"]) <= MAX_SUMMARY
    assert 0 <= data["last_user_at"] <= NOW + stored.CLOCK_SLACK
    assert 0 <= data["summary_turns"] <= data["turn_count"] <= stored.MAX_COUNT
    assert all(isinstance(t["content"], str) for t in data["turns"])


def test_a_stored_summary_is_cut_and_cleaned() -> None:
    session = Session.from_dict(
        {**SESSION, "summary": "\u202e\x00" + "x" * 100_000}, NOW
    )
    assert session is not None
    assert session.summary.startswith("\u202e\ufffd")  # as the user's own words
    # Cut to make room for the closer of its override, within the limit.
    assert session.summary.endswith("x\u202c")
    assert MAX_SUMMARY - 16 <= len(session.summary) <= MAX_SUMMARY


def test_sessions_load_with_the_stores_clock() -> None:
    sessions = Sessions(clock=lambda: NOW, on_dirty=lambda: None)
    sessions.load({"sessions": [{**SESSION, "last_user_at": 1e300}]})
    assert sessions.get("s") is not None
    assert sessions.get("s").last_user_at == NOW + stored.CLOCK_SLACK  # type: ignore[union-attr]


ENTRY = {
    "messages": [{"role": "user", "content": "I like green"}],
    "user_id": "u1",
    "agent_id": "s1",
    "infer": True,
    "metadata": {
        "type": "fact",
        "tags": ["conversation"],
        "timestamp": 1_767_000_000,
        "soul_id": "s1",
        "terminal_id": "t1",
        "session_id": "s",
    },
}


def _manager(backend: ListMemory) -> MemoryManager:
    return MemoryManager(backend, clock=lambda: NOW)


BODILESS = {
    **ENTRY,
    "user_id": "default_user",
    "metadata": {**ENTRY["metadata"], "terminal_id": "", "session_id": "panel-u1"},
}


def test_a_stored_queue_entry_reads_back_the_same() -> None:
    """A bodiless session's (the panel's, Star's) too: the first loader lost them."""
    manager = _manager(ListMemory())
    manager.load({"queue": [ENTRY, BODILESS]})
    assert manager.dump() == {"queue": [ENTRY, BODILESS]}


def test_a_stored_session_keeps_the_users_marks_in_its_summary() -> None:
    """A summary may quote the user, whose own words keep their bidi controls."""
    quoted = {**SESSION, "summary": "quote: \u2067שלום\u2069"}
    session = Session.from_dict(quoted, NOW)
    assert session is not None
    assert session.summary == quoted["summary"]


@pytest.mark.parametrize(
    "messages", [["hi"], [None], [[]], [{"role": "x", "content": "a"}], [], "a"]
)
async def test_a_stored_entry_that_cannot_be_archived_is_dropped(
    messages: Any,
) -> None:
    """One made every later archive fail, first in the queue for good."""
    backend = ListMemory()
    manager = _manager(backend)
    manager.load({"queue": [{**ENTRY, "messages": messages}, ENTRY]})
    assert await manager.flush() == 1
    assert [add["messages"] for add in backend.adds] == [ENTRY["messages"]]


@pytest.mark.parametrize("key", ["user_id", "agent_id", "infer", "metadata"])
@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_an_odd_stored_entry_is_dropped_or_bounded(key: str, odd: Any) -> None:
    manager = _manager(ListMemory())
    manager.load({"queue": [{**ENTRY, key: odd}] * (MAX_QUEUE + 1)})
    for entry in manager.queue:
        _writable(entry)
        assert isinstance(entry["user_id"], str)
        assert isinstance(entry["agent_id"], str | None)
        assert isinstance(entry["infer"], bool)
        assert set(entry["metadata"]) == set(ENTRY["metadata"])
    assert len(manager.queue) in (0, MAX_QUEUE)


def test_stored_human_owners_are_bounded_as_kept() -> None:
    """100,000 of them made a human's first connection hold the loop 2.6 s."""
    hub = Connections()
    owners = {f"human{i:06d}": f"user{i % 7}" for i in range(100_000)}
    owners |= {"x": "user1", "ok_id": "", "bad id": "user1", "h_1.a": ["u"]}
    hub.load_owners(owners)
    assert len(hub.human_owners) == 7 * MAX_HUMANS_PER_USER <= MAX_HUMAN_OWNERS
    # The newest of each user, in their stored order.
    assert list(hub.human_owners)[-1] == "human099999"
    assert "human000000" not in hub.human_owners
    assert not {"x", "ok_id", "bad id", "h_1.a"} & hub.human_owners.keys()
    hub.load_owners([1])  # not an object: nothing changes
    assert len(hub.human_owners) == 7 * MAX_HUMANS_PER_USER


def test_stored_system_states_are_bounded_and_clean() -> None:
    """100,000 of them took half a second to read."""
    profiles = ProfileStore(clock=lambda: NOW, on_dirty=lambda: None)
    states = {
        f"soul{i}": {
            "version": "1.0\u202e\x00" + "x" * 100,
            "boot_count": 10**30,
            "first_boot": -5,
            "last_boot": 1e300,
        }
        for i in range(100_000)
    }
    profiles.load({"system_states": states, "user_profiles": {"u": {"updated": 1e300}}})
    assert len(profiles.systems) == MAX_SOULS
    state = profiles.systems["soul99999"]
    assert (state.boot_count, state.first_boot, state.last_boot) == (
        stored.MAX_COUNT,
        0.0,
        NOW + stored.CLOCK_SLACK,
    )
    assert state.version == "1.0\ufffd\ufffdxxxxxxxxxxxxxxxxxxxxxxxxxxx"[:32]
    assert profiles.users["u"].updated == NOW + stored.CLOCK_SLACK
    _writable(profiles.dump())
