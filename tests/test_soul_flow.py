"""The soul subentry flow's checks: the body for Assist, the LLM APIs, the limit."""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.soul import soul_flow

from .test_souls import add_soul_flow, soul_ids


async def test_the_body_and_the_apis_are_kept(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    entry = init_integration
    result = await add_soul_flow(
        hass, entry, name="Aria", mbti_type="enfp", terminal_id="bad/id"
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"terminal_id": "invalid_terminal"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            "name": "Aria",
            "mbti_type": "enfp",
            "terminal_id": " terminal-001 ",
            "llm_hass_api": ["assist"],
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    (soul_id,) = soul_ids(entry)
    assert entry.subentries[soul_id].data == {
        "name": "Aria",
        "mbti_type": "ENFP",
        "terminal_id": "terminal-001",
        "llm_hass_api": ["assist"],
    }


async def test_no_soul_past_the_limit(
    hass: HomeAssistant,
    init_integration: MockConfigEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(soul_flow, "MAX_SOULS", 1)
    result = await add_soul_flow(hass, init_integration, name="One", mbti_type="INTP")
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    result = await hass.config_entries.subentries.async_init(
        (init_integration.entry_id, "soul"), context={"source": "user"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "too_many_souls"
    assert result["description_placeholders"] == {"max": "1"}


async def test_reconfiguring_a_soul_that_is_not_there_aborts(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """A black-box run got a 500 and a traceback for a made-up subentry id."""
    for made_up in ("nope", ["x"], {"x": 1}):
        result = await hass.config_entries.subentries.async_init(
            (init_integration.entry_id, "soul"),
            context={"source": "reconfigure", "subentry_id": made_up},
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "unknown_soul"


async def test_a_name_that_shows_nothing_is_refused(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    """A black-box run named souls of joiners and accents alone."""
    result = await add_soul_flow(
        hass, init_integration, name="\u200d\u200d", mbti_type="INTP"
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"name": "invalid_name"}
