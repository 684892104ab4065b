"""The profile store in Home Assistant: boots counted per start, profile actions."""

from __future__ import annotations

from typing import Any

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
import voluptuous as vol

from custom_components.soul import BOOTED
from custom_components.soul.const import DOMAIN
from custom_components.soul.diagnostics import async_get_config_entry_diagnostics

from .test_terminals import T, announce


async def test_boot_count_grows_with_each_start(
    hass: HomeAssistant, init_integration: MockConfigEntry
) -> None:
    announce(hass)  # a soul from the body's hint
    await hass.async_block_till_done()
    soul_id = init_integration.runtime_data.souls.soul_of(T).soul_id
    # The soul was created after this start: it is counted from the next one.
    assert soul_id not in init_integration.runtime_data.profiles.systems
    for expected in (1, 2):
        hass.data.pop(BOOTED)  # as after a restart of Home Assistant
        assert await hass.config_entries.async_reload(init_integration.entry_id)
        await hass.async_block_till_done()
        state = init_integration.runtime_data.profiles.systems[soul_id]
        assert state.boot_count == expected
        assert state.version
    # A reload is not a start.
    assert await hass.config_entries.async_reload(init_integration.entry_id)
    await hass.async_block_till_done()
    assert init_integration.runtime_data.profiles.systems[soul_id].boot_count == 2


async def test_profile_actions_are_the_callers(
    hass: HomeAssistant, init_integration: MockConfigEntry, hass_admin_user: Any
) -> None:
    kid = await hass.auth.async_create_user("Kid", group_ids=["system-users"])
    as_kid = Context(user_id=kid.id)
    answer = await hass.services.async_call(
        DOMAIN,
        "update_profile",
        {"name": "Kiddo", "preferences": {"color": "green"}},
        blocking=True,
        return_response=True,
        context=as_kid,
    )
    assert answer["user_id"] == kid.id
    assert answer["profile"]["preferences"] == {"color": "green"}
    read = await hass.services.async_call(
        DOMAIN, "get_profile", {}, blocking=True, return_response=True,
        context=as_kid,
    )  # fmt: skip
    assert read["profile"]["name"] == "Kiddo"
    # Only an administrator reads or changes someone else's.
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            DOMAIN, "get_profile", {"user_id": hass_admin_user.id}, blocking=True,
            return_response=True, context=as_kid,
        )  # fmt: skip
    read = await hass.services.async_call(
        DOMAIN, "get_profile", {"user_id": kid.id}, blocking=True,
        return_response=True, context=Context(user_id=hass_admin_user.id),
    )  # fmt: skip
    assert read["profile"]["name"] == "Kiddo"
    # A bad value is the schema's error (a 500 through Home Assistant 2026.2's
    # REST API when it was the store's); only the store counts the total.
    for bad in (
        {"name": "x" * 100},
        {"name": "a\nb"},
        {"preferences": {"": "v"}},
        {"preferences": {"k\n": "v"}},
        {"preferences": {"k": "v" * 300}},
    ):
        with pytest.raises(vol.Invalid):
            await hass.services.async_call(
                DOMAIN, "update_profile", bad, blocking=True, context=as_kid
            )
    with pytest.raises(ServiceValidationError):
        await hass.services.async_call(
            DOMAIN, "update_profile",
            {"preferences": {f"k{n}": "v" for n in range(33)}}, blocking=True,
            context=as_kid,
        )  # fmt: skip
    # Too many preferences are refused before one is read.
    with pytest.raises(vol.Invalid, match="length of value must be at most 64"):
        await hass.services.async_call(
            DOMAIN, "update_profile",
            {"preferences": {f"k{n}": "v" for n in range(65)}}, blocking=True,
            context=as_kid,
        )  # fmt: skip
    # Diagnostics count profiles, never show them.
    diagnostics = await async_get_config_entry_diagnostics(hass, init_integration)
    assert diagnostics["profiles"]["users"] == 1
    assert "Kiddo" not in str(diagnostics)
