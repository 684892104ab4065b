"""Quiet on the recorder: an idle soul with an online body writes few database rows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from homeassistant.components.recorder import Recorder
from homeassistant.components.recorder.db_schema import Events, States
from homeassistant.components.recorder.util import session_scope
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
)
from pytest_homeassistant_custom_component.components.recorder.common import (
    async_wait_recording_done,
)
from pytest_homeassistant_custom_component.typing import MqttMockHAClient

from custom_components.soul.const import EVENT_EMOTION_UPDATE

from .test_terminals import T, announce

HOUR = 3600
TICK = 3  # the default emotion tick
HEARTBEAT = 30  # how often the body says it is alive
MAX_ROWS_PER_HOUR = 200


@pytest.fixture
def mock_recorder_before_hass(async_test_recorder: Any) -> None:
    """Prepare the recorder's database before Home Assistant starts."""


@pytest.fixture
def recorder_config() -> dict[str, Any]:
    """Record everything, commit at once (the default: as a user has it)."""
    return {"commit_interval": 0}


def _rows(hass: HomeAssistant) -> tuple[int, int, dict[str, int]]:
    """Return (state rows, event rows, event rows by type)."""
    from homeassistant.components.recorder.db_schema import EventTypes

    with session_scope(hass=hass, read_only=True) as session:
        states = session.query(States).count()
        events = session.query(Events).count()
        by_type: dict[str, int] = {}
        for (event_type,) in session.query(EventTypes.event_type).join(
            Events, Events.event_type_id == EventTypes.event_type_id
        ):
            by_type[event_type] = by_type.get(event_type, 0) + 1
    return states, events, by_type


async def test_an_idle_hour_writes_fewer_than_200_rows(
    recorder_mock: Recorder,
    hass: HomeAssistant,
    mqtt_mock: MqttMockHAClient,
    soul_entry: MockConfigEntry,
    freezer: Any,
) -> None:
    """Issue 13: a bus event every 3 s was ~28,800 rows a day per body.

    The soul starts upset (a user turn), then an hour passes with no one
    talking: the body stays online (a heartbeat every 30 s) and the soul
    settles towards its baseline, publishing ``emotion_update`` every 3 s.
    """
    assert await hass.config_entries.async_setup(soul_entry.entry_id)
    await hass.async_block_till_done()
    announce(hass)  # a body with the soul_hint "friendly": a soul, bound
    await hass.async_block_till_done()
    souls = soul_entry.runtime_data.souls
    assert souls.soul_of(T) is not None
    await souls.user_turn(T, "气死我了！你怎么又把事情搞砸了", "s1")
    await async_wait_recording_done(hass)
    states_before, events_before, by_type_before = _rows(hass)

    published = 0
    for second in range(TICK, HOUR + 1, TICK):
        freezer.tick(timedelta(seconds=TICK))
        if second % HEARTBEAT == 0:
            async_fire_mqtt_message(hass, f"soul/terminal/{T}/heartbeat", "1")
        async_fire_time_changed(hass)
        # The tick runs as a background task; a tick still running skips the next.
        await hass.async_block_till_done(wait_background_tasks=True)
        published = len(
            [
                c
                for c in mqtt_mock.async_publish.call_args_list
                if "emotion_update" in c[0][0]
            ]
        )
    await async_wait_recording_done(hass)
    states, events, by_type = _rows(hass)
    state_rows, event_rows = states - states_before, events - events_before
    # The body heard the soul all along …
    assert published >= HOUR // TICK - 5
    # … but the recorder got only what a user can see change.
    assert state_rows + event_rows < MAX_ROWS_PER_HOUR, (state_rows, by_type)
    emotion_events = by_type.get(EVENT_EMOTION_UPDATE, 0) - by_type_before.get(
        EVENT_EMOTION_UPDATE, 0
    )
    assert emotion_events < 20  # mood or execution-mode changes only
    assert state_rows > 0  # the soul did settle, and its sensors showed it
