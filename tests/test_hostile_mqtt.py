"""Property: no MQTT message breaks Soul, impersonates a body or poisons a store.

Hostile bodies publish anything on every topic Soul listens to: random
bytes, hostile JSON, and the reference body's own snapshots with fields
dropped or made hostile. Soul drops what is invalid with a log line (never
an error or a traceback), keeps the rest, and every Home Assistant registry
and Soul store still serialises afterwards.
"""

from __future__ import annotations

from datetime import timedelta
import json
import logging
from typing import Any

from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import HomeAssistant
from hypothesis import strategies as st
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
)

from custom_components.soul.core.registry import FLIP_BURST, FLIP_REFILL
from custom_components.soul.mqtt_bridge import EXPIRE_INTERVAL

from .core.spec_payloads import catalog, skills
from .hostile import (
    assert_stores_serialise,
    check_property,
    hostile_text,
    json_values,
    mutated,
    raw_payloads,
)
from .test_terminals import CONNECTIVITY, T, announce

KINDS = ["online", "heartbeat", "skills", "intent_catalog", "result/r1"]
TERMINALS = st.one_of(
    st.sampled_from(["body-2", "x", "soul_x", "a" * 64, "a" * 65]),
    # Topics are UTF-8 on the wire: no lone surrogates there.
    hostile_text.filter(
        lambda t: (
            t
            and not any(c in t for c in "/+#\x00")
            and not any("\ud800" <= c <= "\udfff" for c in t)
        )
    ),
)


def _skill_snapshots() -> st.SearchStrategy[bytes]:
    valid = skills(terminal_id="body-2")
    hostile_skill = mutated(valid["skills"][0])
    return st.one_of(
        mutated(valid),
        st.lists(hostile_skill, max_size=3).map(
            lambda items: {**valid, "skills": items}
        ),
        st.builds(
            lambda hint: {**valid, "soul_hint": hint},
            st.one_of(hostile_text, json_values),
        ),
    ).map(lambda body: json.dumps(body).encode())


def _catalogs() -> st.SearchStrategy[bytes]:
    valid = catalog(terminal_id="body-2")
    entry = valid["intent_catalog"][0]
    return st.one_of(
        mutated(valid),
        st.lists(mutated(entry), max_size=3).map(
            lambda items: {**valid, "intent_catalog": items}
        ),
        st.builds(
            lambda rule, pattern: {
                **valid,
                "intent_catalog": [
                    {**entry, "match": {rule: [pattern]}},
                ],
            },
            st.sampled_from(["regex_any", "regex_all", "keywords_any"]),
            hostile_text,
        ),
    ).map(lambda body: json.dumps(body).encode())


messages = st.tuples(
    TERMINALS,
    st.sampled_from(KINDS),
    st.one_of(raw_payloads, _skill_snapshots(), _catalogs()),
)


async def test_any_message_on_any_topic(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    announce(hass)
    await hass.async_block_till_done()
    registry = init_integration.runtime_data.registry
    original = registry.get(T)
    assert original is not None
    original_skills = original.skills

    async def publish(message: tuple[str, str, bytes]) -> None:
        terminal_id, kind, payload = message
        async_fire_mqtt_message(hass, f"soul/terminal/{terminal_id}/{kind}", payload)
        await hass.async_block_till_done()

    await check_property(hass, messages, publish, max_examples=150)
    await hass.async_block_till_done()
    # No error, no traceback: invalid messages are one warning line each.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Dropped" in caplog.text
    # Other ids' messages never changed this body (on its own topics, any
    # client of the broker is the body: that is the broker's ACLs' job).
    terminal = registry.get(T)
    assert terminal is not None
    assert terminal.skills is original_skills or terminal.skills == original_skills
    assert_stores_serialise(hass, init_integration)
    # Every soul a hint created has a valid name, and a body still gets in.
    for soul in init_integration.runtime_data.souls.souls.values():
        soul.name.encode("utf-8")
    announce(hass, "late-body")
    await hass.async_block_till_done()
    assert registry.get("late-body") is not None
    # Flooded bodies' snapshots may still wait for their turn: unloading stops them.
    assert await hass.config_entries.async_unload(init_integration.entry_id)


async def test_a_poisoned_soul_hint_creates_nothing(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Issue 13: a hint with a lone surrogate became a soul no registry could save."""
    payload = json.dumps(skills(terminal_id="body-9", soul_hint="evil\ud800"))
    async_fire_mqtt_message(hass, "soul/terminal/body-9/online", "online")
    async_fire_mqtt_message(hass, "soul/terminal/body-9/skills", payload)
    await hass.async_block_till_done()
    assert init_integration.runtime_data.registry.get("body-9") is None
    assert init_integration.runtime_data.souls.souls == {}
    assert_stores_serialise(hass, init_integration)


async def test_heartbeat_only_ids_never_fill_the_registry(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """Issue 13: 1,100 heartbeat-only ids kept every new body out."""
    for n in range(1100):
        async_fire_mqtt_message(hass, f"soul/terminal/junk-{n}/heartbeat", "1")
    await hass.async_block_till_done()
    announce(hass, "real-body")
    await hass.async_block_till_done()
    assert init_integration.runtime_data.registry.get("real-body") is not None


async def test_a_flapping_body_writes_a_few_states(
    hass: HomeAssistant, init_integration: MockConfigEntry, freezer: Any
) -> None:
    """2,000 flips of ``online`` were 12,000 state writes (2.2 s of the loop).

    Now a few at once, then the latest every ``FLIP_REFILL`` seconds, told
    when the bridge next looks (every ``EXPIRE_INTERVAL``).
    """
    announce(hass)
    await hass.async_block_till_done()
    writes: list[str] = []
    hass.bus.async_listen(
        EVENT_STATE_CHANGED, lambda event: writes.append(event.data["entity_id"])
    )
    for n in range(2000):
        async_fire_mqtt_message(
            hass, f"soul/terminal/{T}/online", "offline" if n % 2 == 0 else "online"
        )
    async_fire_mqtt_message(hass, f"soul/terminal/{T}/online", "offline")
    await hass.async_block_till_done()
    assert writes.count(CONNECTIVITY) < FLIP_BURST
    assert len(writes) < 10 * FLIP_BURST
    freezer.tick(timedelta(seconds=FLIP_REFILL) + EXPIRE_INTERVAL)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert hass.states.get(CONNECTIVITY).state == "off"  # the latest, told
