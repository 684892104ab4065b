"""The terminal registry: online, heartbeat TTL, snapshots, versions, removal, limits."""

from __future__ import annotations

from datetime import UTC, datetime
import json
from typing import Any

import pytest

from custom_components.soul.core import registry as registry_module
from custom_components.soul.core.entity_churn import CHURN_BURST, CHURN_REFILL
from custom_components.soul.core.intent_filter import IntentFilterError
from custom_components.soul.core.registry import (
    FLIP_BURST,
    FLIP_REFILL,
    HEARTBEAT_TOLD_EVERY,
    MAX_SKILL_ENTITIES,
    MAX_UNREGISTERED,
    TerminalRegistry,
)
from custom_components.soul.core.skill_profiles import Profile, profile
from custom_components.soul.core.terminal import Change, Terminal
from custom_components.soul.core.topics import Kind

from .spec_payloads import catalog, skills

T = "terminal-001"


class Clock:
    """A hand-driven monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(clock: Clock) -> TerminalRegistry:
    return TerminalRegistry(clock=clock, now=lambda: datetime(2026, 2, 22, tzinfo=UTC))


@pytest.fixture
def changes(registry: TerminalRegistry) -> list[tuple[str, Change]]:
    seen: list[tuple[str, Change]] = []
    registry.subscribe(
        lambda terminal, change: seen.append((terminal.terminal_id, change))
    )
    return seen


def send(
    registry: TerminalRegistry, kind: Kind, payload: Any, terminal_id: str = T
) -> None:
    data = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    registry.handle_message(kind, terminal_id, data)


def connect(
    registry: TerminalRegistry, terminal_id: str = T, version: int = 3
) -> Terminal:
    send(registry, Kind.ONLINE, "online", terminal_id)
    send(
        registry,
        Kind.SKILLS,
        skills(terminal_id=terminal_id, skill_version=version),
        terminal_id,
    )
    send(registry, Kind.INTENT_CATALOG, catalog(terminal_id=terminal_id), terminal_id)
    send(registry, Kind.HEARTBEAT, "1", terminal_id)
    terminal = registry.get(terminal_id)
    assert terminal is not None
    return terminal


def test_connect_sequence(registry: TerminalRegistry, changes: list) -> None:
    send(registry, Kind.ONLINE, "online")
    assert registry.get(T) is None  # no device before skills
    assert changes == []
    terminal = connect(registry)
    assert terminal.available
    assert terminal.skills is not None and terminal.skills.skill_version == 3
    assert terminal.catalog is not None and terminal.catalog.catalog_version == 12
    assert terminal.last_heartbeat == datetime(2026, 2, 22, tzinfo=UTC)
    assert [c for _, c in changes] == [Change.ADDED, Change.UPDATED, Change.HEARTBEAT]
    assert [t.terminal_id for t in registry] == [T]


@pytest.mark.parametrize(
    ("on", "off"), [("online", "offline"), ("true", "false"), ("1", "0")]
)
def test_online_forms(
    registry: TerminalRegistry, changes: list, on: str, off: str
) -> None:
    terminal = connect(registry)
    changes.clear()
    send(registry, Kind.ONLINE, off)
    assert not terminal.available
    send(registry, Kind.ONLINE, on)
    assert terminal.available
    assert [c for _, c in changes] == [Change.AVAILABILITY, Change.AVAILABILITY]
    send(registry, Kind.ONLINE, on)  # no change, no event
    assert len(changes) == 2


def test_a_flapping_body_is_told_a_few_changes_then_the_latest(
    registry: TerminalRegistry, clock: Clock, changes: list
) -> None:
    """2,000 flips of ``online`` made 12,000 state writes in Home Assistant."""
    terminal = connect(registry)  # its first online change spent one
    changes.clear()
    for n in range(2000):
        send(registry, Kind.ONLINE, "offline" if n % 2 == 0 else "online")
    assert changes == [(T, Change.AVAILABILITY)] * (FLIP_BURST - 1)
    assert terminal.available  # as the last message said, told or not
    assert registry.release_held() == []  # nothing to spend before the refill
    send(registry, Kind.ONLINE, "offline")
    clock.now += FLIP_REFILL
    assert registry.release_held() == [T]
    assert changes[-1] == (T, Change.AVAILABILITY) and not terminal.available
    assert registry.release_held() == []  # told once
    # Back from silence, a body is told at once, whatever it spent.
    for n in range(10):
        send(registry, Kind.ONLINE, "online" if n % 2 == 0 else "offline")
    clock.now += 61
    assert registry.expire() == [T]
    before = len(changes)
    send(registry, Kind.ONLINE, "online")
    assert len(changes) == before + 1 and terminal.available


def test_heartbeats_are_told_at_most_once_a_second(
    registry: TerminalRegistry, clock: Clock, changes: list
) -> None:
    """The opt-in heartbeat sensor writes each one told; a body may send thousands."""
    terminal = connect(registry)  # its heartbeat was told
    changes.clear()
    for _ in range(1000):
        send(registry, Kind.HEARTBEAT, "1")
    assert changes == []
    clock.now += HEARTBEAT_TOLD_EVERY
    send(registry, Kind.HEARTBEAT, "1")
    assert changes == [(T, Change.HEARTBEAT)]
    assert terminal.last_seen == clock.now  # each one counts as being heard


def test_a_body_that_renames_its_skills_replaces_few_entities(
    registry: TerminalRegistry, clock: Clock
) -> None:
    """Home Assistant keeps every removed entity: 16 a snapshot were 230,000 a day."""
    terminal = connect(registry)
    removed = 0
    for round_ in range(100):
        before = {n for n, k in terminal.skill_kinds.items() if k is not None}
        payload = _select_skills(T, 16, 10 + round_, prefix=f"pick_{round_}")
        registry.handle_message(Kind.SKILLS, T, payload)
        after = {n for n, k in terminal.skill_kinds.items() if k is not None}
        removed += len(before - after)
    assert removed <= CHURN_BURST + 16
    assert all(k is None for k in terminal.skill_kinds.values())  # none for now
    assert terminal.skills is not None and len(terminal.skills.skills) == 16
    clock.now += CHURN_REFILL  # one more: the next snapshot's entities are made
    registry.handle_message(Kind.SKILLS, T, _select_skills(T, 16, 200, prefix="new"))
    assert sum(k is not None for k in terminal.skill_kinds.values()) == 16
    # Another body, new, makes its entities whatever this one did.
    other = connect(registry, "body-2")
    assert any(k is not None for k in other.skill_kinds.values())


def test_held_changes_are_told_a_few_at_a_time(
    registry: TerminalRegistry, clock: Clock, changes: list
) -> None:
    for n in range(3):
        connect(registry, f"body-{n}")
        for flip in range(FLIP_BURST):  # spend every change, then one held
            send(
                registry,
                Kind.ONLINE,
                "offline" if flip % 2 == 0 else "online",
                f"body-{n}",
            )
    clock.now += FLIP_REFILL
    assert registry.release_held(limit=2) == ["body-0", "body-1"]
    assert registry.release_held(limit=2) == ["body-2"]


def test_expiry_marks_a_few_at_a_time_when_asked(
    registry: TerminalRegistry, clock: Clock
) -> None:
    """The bridge marks silent bodies a few a step: each writes its entities."""
    for n in range(5):
        connect(registry, f"body-{n}")
    clock.now += 61
    assert registry.expire(limit=2) == ["body-0", "body-1"]
    assert registry.expire(limit=2) == ["body-2", "body-3"]
    assert registry.expire(limit=2) == ["body-4"]
    assert registry.expire(limit=2) == []


def test_heartbeat_ttl(registry: TerminalRegistry, clock: Clock, changes: list) -> None:
    terminal = connect(registry)
    clock.now += 59
    assert registry.expire() == []
    assert terminal.available
    clock.now += 2
    assert registry.expire() == [T]
    assert terminal.stale and not terminal.available
    assert changes[-1] == (T, Change.AVAILABILITY)
    assert registry.expire() == []  # reported once
    send(registry, Kind.HEARTBEAT, "1")
    assert terminal.available
    assert changes[-1] == (T, Change.AVAILABILITY)


def test_skill_versions(registry: TerminalRegistry, changes: list) -> None:
    terminal = connect(registry, version=3)
    for version, accepted in [(2, False), (0, False), (3, True), (4, True), (3, False)]:
        payload = skills(skill_version=version)
        payload["skills"] = payload["skills"][:1] if version % 2 else payload["skills"]
        send(registry, Kind.SKILLS, payload)
        assert terminal.skills is not None
        if accepted:
            assert terminal.skills.skill_version == version
        else:
            assert terminal.skills.skill_version != version or version == 3


def test_skill_kinds_follow_the_snapshot(registry: TerminalRegistry) -> None:
    """Each skill's entity kind is worked out with its snapshot, and replaced with it."""
    terminal = connect(registry, version=3)
    assert terminal.skills is not None
    assert terminal.skill_kinds == {s.name: profile(s) for s in terminal.skills.skills}
    assert terminal.skill_kinds["control_light"] is Profile.LIGHT
    payload = skills(skill_version=4)
    payload["skills"] = [s for s in payload["skills"] if s["name"] != "control_light"]
    send(registry, Kind.SKILLS, payload)
    assert "control_light" not in terminal.skill_kinds
    assert set(terminal.skill_kinds) == {s.name for s in terminal.skills.skills}
    assert (
        registry.prepare(Kind.INTENT_CATALOG, T, json.dumps(catalog())).skill_kinds
        == {}
    )


def test_unversioned_terminal_accepts_anything(registry: TerminalRegistry) -> None:
    send(registry, Kind.SKILLS, skills(skill_version=0))
    send(registry, Kind.SKILLS, skills()["skills"][:1])  # legacy array
    terminal = registry.get(T)
    assert terminal is not None and terminal.skills is not None
    assert len(terminal.skills.skills) == 1
    send(registry, Kind.SKILLS, skills(skill_version=5))
    send(registry, Kind.SKILLS, skills()["skills"][:1])  # now refused: 0 over 5
    assert terminal.skills.skill_version == 5


def test_catalog_versions_and_clear(registry: TerminalRegistry, changes: list) -> None:
    terminal = connect(registry)
    send(registry, Kind.INTENT_CATALOG, catalog(catalog_version=11))
    assert terminal.catalog is not None and terminal.catalog.catalog_version == 12
    send(registry, Kind.INTENT_CATALOG, catalog(catalog_version=13, intent_catalog=[]))
    assert terminal.catalog.catalog_version == 13
    assert terminal.catalog.intents == ()
    send(registry, Kind.INTENT_CATALOG, b"")
    assert terminal.catalog is None


def test_cleared_skills_remove_the_terminal(
    registry: TerminalRegistry, changes: list
) -> None:
    connect(registry)
    send(registry, Kind.SKILLS, b"")
    assert registry.get(T) is None
    assert changes[-1] == (T, Change.REMOVED)
    send(registry, Kind.SKILLS, b"")  # again: nothing to remove
    assert changes[-1] == (T, Change.REMOVED)
    assert sum(1 for _, c in changes if c is Change.REMOVED) == 1
    terminal = connect(registry)  # re-registers as new
    assert terminal.available
    assert changes[-3][1] is Change.ADDED


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        (Kind.SKILLS, b"{not json"),
        (Kind.SKILLS, skills(terminal_id="someone-else")),
        (Kind.SKILLS, "null"),
        (Kind.INTENT_CATALOG, b"\xff"),
        (Kind.INTENT_CATALOG, catalog(terminal_id="someone-else")),
        (Kind.ONLINE, "maybe"),
        (Kind.RESULT, "{}"),
    ],
)
def test_malformed_messages_change_nothing(
    registry: TerminalRegistry,
    changes: list,
    caplog: pytest.LogCaptureFixture,
    kind: Kind,
    payload: Any,
) -> None:
    terminal = connect(registry)
    before = (terminal.online, terminal.skills, terminal.catalog)
    changes.clear()
    send(registry, kind, payload)
    assert (terminal.online, terminal.skills, terminal.catalog) == before
    assert changes == []
    assert f"of terminal {T}" in caplog.text


def test_rejected_skills_are_logged(
    registry: TerminalRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    payload = skills()
    payload["skills"].append({"name": "Bad Name"})
    send(registry, Kind.SKILLS, payload)
    terminal = registry.get(T)
    assert terminal is not None and terminal.skills is not None
    assert len(terminal.skills.skills) == 3
    assert "skill Bad Name rejected" in caplog.text


def test_invalid_terminal_ids_and_limit(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    registry = TerminalRegistry(clock=clock, max_terminals=2)
    send(registry, Kind.SKILLS, skills(terminal_id="bad id"), "bad id")
    assert registry.get("bad id") is None
    for n in range(3):
        send(registry, Kind.ONLINE, "online", f"t{n}")
        send(registry, Kind.SKILLS, skills(terminal_id=f"t{n}"), f"t{n}")
    assert [t.terminal_id for t in registry] == ["t0", "t1"]
    assert "2 bodies are registered and all are online" in caplog.text


def test_phantom_ids_never_keep_a_real_body_out(clock: Clock) -> None:
    """Issue 13: 1,100 heartbeat-only ids filled the cap for good."""
    registry = TerminalRegistry(clock=clock, max_terminals=4)
    for n in range(1100):
        send(registry, Kind.HEARTBEAT, "1", f"junk{n}")
    assert len(registry._terminals) <= MAX_UNREGISTERED
    connect(registry, "real")
    assert registry.get("real") is not None
    # Once their heartbeat expired, phantoms hold no slot at all.
    clock.now += registry.ttl + 1
    registry.expire()
    assert [t.terminal_id for t in registry._terminals.values()] == ["real"]


def test_a_stale_body_makes_way_for_a_new_one(clock: Clock) -> None:
    registry = TerminalRegistry(clock=clock, max_terminals=2)
    connect(registry, "old")
    clock.now += 10
    connect(registry, "busy")
    clock.now += registry.ttl - 5
    send(registry, Kind.HEARTBEAT, "1", "busy")
    clock.now += 10
    registry.expire()  # "old" is stale now, "busy" is not
    connect(registry, "new")
    assert {t.terminal_id for t in registry} == {"busy", "new"}


def test_listeners_of_one_terminal(registry: TerminalRegistry) -> None:
    mine: list[Change] = []
    unsubscribe = registry.subscribe(lambda t, c: mine.append(c), "t2")
    connect(registry)
    assert mine == []
    connect(registry, "t2")
    assert mine[0] is Change.ADDED
    unsubscribe()
    send(registry, Kind.ONLINE, "offline", "t2")
    assert Change.AVAILABILITY not in mine


def test_a_failing_listener_does_not_break_others(registry: TerminalRegistry) -> None:
    seen = []

    def broken(terminal: Terminal, change: Change) -> None:
        raise RuntimeError("listener bug")

    registry.subscribe(broken)
    unsubscribe = registry.subscribe(lambda t, c: seen.append(c))
    connect(registry)
    assert seen[0] is Change.ADDED
    unsubscribe()
    send(registry, Kind.ONLINE, "offline")
    assert Change.AVAILABILITY not in seen


def test_filter_command_uses_the_cached_catalog_and_records_the_decision(
    registry: TerminalRegistry, changes: list
) -> None:
    with pytest.raises(IntentFilterError, match="unknown terminal"):
        registry.filter_command("nobody", {"command": "开灯"}, default_timezone="UTC")
    send(registry, Kind.SKILLS, skills())
    with pytest.raises(IntentFilterError, match="has not published an intent_catalog"):
        registry.filter_command(T, {"command": "开灯"}, default_timezone="UTC")
    connect(registry)
    changes.clear()
    response = registry.filter_command(
        T, {"command": "关灯"}, default_timezone="Asia/Shanghai"
    )
    assert response["meta"]["timezone"] == "Asia/Shanghai"
    decision = registry.get(T).last_decision
    assert decision is not None
    assert (decision.action, decision.intent_ids) == (
        "execute_intents",
        ("intent_light_control",),
    )
    assert changes == [(T, Change.DECISION)]
    registry.filter_command(T, {"command": "唉，累死了"}, default_timezone="UTC")
    assert registry.get(T).last_decision.action == "no_action"
    assert registry.get(T).last_decision.intent_ids == ()


def test_invalid_catalog_is_dropped_and_the_previous_one_kept(
    registry: TerminalRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    terminal = connect(registry)
    bad = catalog(catalog_version=99)
    bad["intent_catalog"][0]["match"]["regex_any"] = ["(unclosed"]
    send(registry, Kind.INTENT_CATALOG, bad)
    assert "invalid intent_catalog" in caplog.text
    assert terminal.catalog.catalog_version != 99


def test_the_snapshots_of_all_bodies_have_a_memory_budget(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from custom_components.soul.core import registry as module

    size = len(json.dumps(skills(terminal_id="b0")))
    monkeypatch.setattr(module, "MAX_HELD_BYTES", size * 3 + 10)
    registry = TerminalRegistry(clock=clock)
    for n in range(5):
        send(registry, Kind.ONLINE, "online", f"b{n}")
        send(registry, Kind.SKILLS, skills(terminal_id=f"b{n}"), f"b{n}")
    assert len(list(registry)) == 3
    assert "would exceed" in caplog.text
    # A body that leaves gives its bytes back.
    send(registry, Kind.SKILLS, "", "b0")
    send(registry, Kind.SKILLS, skills(terminal_id="b4"), "b4")
    assert registry.get("b4") is not None
    assert registry._held_bytes <= module.MAX_HELD_BYTES


def test_unavailable_and_back_are_logged_once_each(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    registry = TerminalRegistry(clock=clock)
    connect(registry, "t1")
    send(registry, Kind.ONLINE, "offline", "t1")
    clock.now += registry.ttl + 1
    registry.expire()
    send(registry, Kind.ONLINE, "offline", "t1")
    assert caplog.text.count("t1 is unavailable") == 1
    send(registry, Kind.ONLINE, "online", "t1")
    send(registry, Kind.HEARTBEAT, "1", "t1")
    assert caplog.text.count("t1 is available again") == 1


def test_bodies_of_one_model_share_their_skills_and_intents(
    registry: TerminalRegistry,
) -> None:
    """Equal skills and intents are held once, whatever body published them."""

    def parsed(kind: Kind, terminal_id: str, payload: dict[str, Any]) -> Any:
        prepared = registry.prepare(kind, terminal_id, json.dumps(payload))
        assert prepared.error is None
        return prepared.snapshot

    first = parsed(Kind.SKILLS, "body-1", skills(terminal_id="body-1"))
    second = parsed(Kind.SKILLS, "body-2", skills(terminal_id="body-2"))
    assert len(first.skills) > 1
    assert all(a is b for a, b in zip(first.skills, second.skills, strict=True))
    # A skill of other content is its own, the rest still shared.
    changed = skills(terminal_id="body-3")
    changed["skills"][0]["description"] = "something else"
    third = parsed(Kind.SKILLS, "body-3", changed)
    assert third.skills[0] is not first.skills[0]
    assert third.skills[0].description == "something else"
    assert all(a is b for a, b in zip(first.skills[1:], third.skills[1:], strict=True))

    one = parsed(Kind.INTENT_CATALOG, "body-1", catalog(terminal_id="body-1"))
    other = catalog(terminal_id="body-2")
    other["intent_catalog"][-1]["name"] = "renamed"
    two = parsed(Kind.INTENT_CATALOG, "body-2", other)
    assert len(one.intents) > 1
    assert all(a is b for a, b in zip(one.intents[:-1], two.intents[:-1], strict=True))
    assert one.intents[-1] is not two.intents[-1]
    assert two.intents[-1]["name"] == "renamed"
    # Each catalog is compiled from its own content.
    assert one.compiled is not two.compiled


def test_equal_looking_values_are_not_shared(registry: TerminalRegistry) -> None:
    """1, 1.0 and true are other content: a skill holding one is not another's."""
    snapshots = []
    for number, value in enumerate((1, 1.0, True)):
        payload = skills(terminal_id=f"body-{number}")
        payload["skills"][0]["input_schema"]["properties"]["x"] = {"default": value}
        prepared = registry.prepare(Kind.SKILLS, f"body-{number}", json.dumps(payload))
        assert prepared.error is None
        snapshots.append(prepared.snapshot)
    defaults = [
        s.skills[0].input_schema["properties"]["x"]["default"] for s in snapshots
    ]
    assert [type(d) for d in defaults] == [int, float, bool]


def _select_skills(
    terminal_id: str, count: int, version: int = 3, prefix: str = "pick"
) -> str:
    """A skills payload of ``count`` skills that each make a select (``prefix_n``)."""
    pick = {"type": "string", "enum": ["a", "b"]}
    return json.dumps(
        skills(
            terminal_id=terminal_id,
            skill_version=version,
            skills=[
                {
                    "name": f"{prefix}_{n}",
                    "input_schema": {
                        "type": "object",
                        "properties": {"o": pick},
                        "required": ["o"],
                    },
                }
                for n in range(count)
            ],
        )
    )


def test_skills_make_entities_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 made-up bodies of 60 select skills each held the loop 450 ms (black box)."""
    monkeypatch.setattr(registry_module, "MAX_ALL_SKILL_ENTITIES", 40)
    registry = TerminalRegistry()
    for terminal_id in ("body-1", "body-2", "body-3"):
        registry.handle_message(Kind.ONLINE, terminal_id, "online")
        registry.handle_message(
            Kind.SKILLS, terminal_id, _select_skills(terminal_id, 20)
        )

    def entities(terminal_id: str) -> list[str]:
        terminal = registry.get(terminal_id)
        assert terminal is not None and terminal.skills is not None
        assert len(terminal.skills.skills) == 20  # every skill stays callable
        return [n for n, kind in terminal.skill_kinds.items() if kind is not None]

    # A body's first MAX_SKILL_ENTITIES, then what all bodies together may hold.
    assert entities("body-1") == [f"pick_{n}" for n in range(MAX_SKILL_ENTITIES)]
    assert len(entities("body-2")) == MAX_SKILL_ENTITIES
    assert len(entities("body-3")) == 40 - 2 * MAX_SKILL_ENTITIES


def test_a_forgotten_body_gives_its_entities_back(
    monkeypatch: pytest.MonkeyPatch, registry: TerminalRegistry
) -> None:
    monkeypatch.setattr(registry_module, "MAX_ALL_SKILL_ENTITIES", 20)
    for terminal_id in ("body-1", "body-2"):
        registry.handle_message(Kind.ONLINE, terminal_id, "online")
        registry.handle_message(
            Kind.SKILLS, terminal_id, _select_skills(terminal_id, 16)
        )
    second = registry.get("body-2")
    assert second is not None
    assert sum(k is not None for k in second.skill_kinds.values()) == 4
    # body-1 clears its skills (it is removed); body-2's next snapshot has room.
    registry.handle_message(Kind.SKILLS, "body-1", "")
    assert registry.get("body-1") is None
    registry.handle_message(Kind.SKILLS, "body-2", _select_skills("body-2", 16, 4))
    assert sum(k is not None for k in second.skill_kinds.values()) == 16


def test_a_prepared_snapshot_keeps_its_kind(registry: TerminalRegistry) -> None:
    """Its skills' entity kinds are apart from the message's kind (bytes held by it)."""
    payload = _select_skills(T, 3)
    prepared = registry.prepare(Kind.SKILLS, T, payload)
    assert prepared.kind is Kind.SKILLS
    registry.handle_message(Kind.ONLINE, T, "online")
    registry.handle_message(Kind.SKILLS, T, payload)
    registry.handle_message(Kind.SKILLS, T, _select_skills(T, 3, 4))
    terminal = registry.get(T)
    assert terminal is not None
    assert set(terminal.held_bytes) == {Kind.SKILLS}
