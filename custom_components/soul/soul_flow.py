"""The soul subentry flow: add a soul (name, MBTI type, persona) or change one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigSubentryFlow,
    SubentryFlowResult,
    UnknownSubEntry,
)
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
)
import voluptuous as vol

from .const import (
    CONF_MBTI_TYPE,
    CONF_MCP_SERVERS,
    CONF_NAME,
    CONF_PERSONA,
    CONF_TERMINAL,
    CONF_USER_ID,
    MAX_SERVER_NAME,
    MAX_SOUL_SERVERS,
)
from .core.emotion.persona import MBTI_TYPES
from .core.soul import InvalidSoulFieldError, validate_soul_fields
from .core.souls import MAX_SOULS
from .core.topics import valid_terminal_id
from .mcp_servers import mcp_servers

# Selector option keys must be lower case (hassfest); the translations show
# the types as people write them ("ENFP").
MBTI_OPTIONS = [mbti.lower() for mbti in MBTI_TYPES]
SOUL_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_NAME): TextSelector(),
        vol.Required(CONF_MBTI_TYPE): SelectSelector(
            SelectSelectorConfig(
                options=MBTI_OPTIONS,
                mode=SelectSelectorMode.DROPDOWN,
                translation_key=CONF_MBTI_TYPE,
                custom_value=True,
            )
        ),
        vol.Optional(CONF_PERSONA): TextSelector(TextSelectorConfig(multiline=True)),
    }
)


def _soul_schema(hass: HomeAssistant, entry: ConfigEntry) -> vol.Schema:
    """Return the soul form: name, type, persona, MCP servers, Assist body, LLM APIs."""
    terminals: list[str] = []
    if entry.state is ConfigEntryState.LOADED:
        terminals = sorted(t.terminal_id for t in entry.runtime_data.registry)
    apis = [
        SelectOptionDict(label=api.name, value=api.id)
        for api in llm.async_get_apis(hass)
    ]
    servers = sorted(mcp_servers(entry.options))
    mcp: dict[Any, Any] = (
        {
            vol.Optional(CONF_MCP_SERVERS, default=servers): SelectSelector(
                SelectSelectorConfig(options=servers, multiple=True)
            )
        }
        if servers
        else {}
    )
    return SOUL_SCHEMA.extend(
        {
            **mcp,
            vol.Optional(CONF_TERMINAL): SelectSelector(
                SelectSelectorConfig(
                    options=terminals,
                    mode=SelectSelectorMode.DROPDOWN,
                    custom_value=True,
                )
            ),
            vol.Optional(CONF_LLM_HASS_API): SelectSelector(
                SelectSelectorConfig(options=apis, multiple=True)
            ),
        }
    )


def _shown(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return a soul's data as the form shows it (the type as its option key)."""
    shown = dict(data)
    if (
        isinstance(mbti := shown.get(CONF_MBTI_TYPE), str)
        and mbti.lower() in MBTI_OPTIONS
    ):
        shown[CONF_MBTI_TYPE] = mbti.lower()
    return shown


def _soul_settings(
    user_input: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Clean a soul form and return (data, errors)."""
    data: dict[str, Any] = {
        CONF_NAME: str(user_input.get(CONF_NAME, "")).strip(),
        CONF_MBTI_TYPE: str(user_input.get(CONF_MBTI_TYPE, "")).strip().upper(),
    }
    if persona := str(user_input.get(CONF_PERSONA) or "").strip():
        data[CONF_PERSONA] = persona
    if terminal := str(user_input.get(CONF_TERMINAL) or "").strip():
        if not valid_terminal_id(terminal):
            return data, {CONF_TERMINAL: "invalid_terminal"}
        data[CONF_TERMINAL] = terminal
    if apis := user_input.get(CONF_LLM_HASS_API):
        data[CONF_LLM_HASS_API] = list(apis)
    if isinstance(servers := user_input.get(CONF_MCP_SERVERS), list):
        # The servers this soul may use; without the field, all of them.
        data[CONF_MCP_SERVERS] = [
            str(name)[:MAX_SERVER_NAME] for name in servers[:MAX_SOUL_SERVERS]
        ]
    try:
        validate_soul_fields(data[CONF_NAME], data[CONF_MBTI_TYPE], persona)
    except InvalidSoulFieldError as err:
        return data, {err.field: f"invalid_{err.field}"}
    return data, {}


class SoulSubentryFlow(ConfigSubentryFlow):
    """Add a soul (name, MBTI type, persona) or change one."""

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the new soul's name, type and persona."""
        entry = self._get_entry()
        if (
            entry.state is ConfigEntryState.LOADED
            and len(entry.runtime_data.souls.souls) >= MAX_SOULS
        ):
            return self.async_abort(
                reason="too_many_souls",
                description_placeholders={"max": str(MAX_SOULS)},
            )
        errors: dict[str, str] = {}
        if user_input is not None:
            data, errors = _soul_settings(user_input)
            if not errors:
                return self.async_create_entry(title=data[CONF_NAME], data=data)
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(
                _soul_schema(self.hass, entry), user_input
            ),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a soul; its emotion then settles towards the new temperament."""
        # A stale link, or a hand-made request (a list as the id): not a 500.
        if not isinstance(self.context.get("subentry_id"), str):
            return self.async_abort(reason="unknown_soul")
        try:
            subentry = self._get_reconfigure_subentry()
        except UnknownSubEntry:
            return self.async_abort(reason="unknown_soul")
        errors: dict[str, str] = {}
        if user_input is not None:
            data, errors = _soul_settings(user_input)
            if not errors:
                if CONF_USER_ID in subentry.data:  # the owner stays
                    data[CONF_USER_ID] = subentry.data[CONF_USER_ID]
                if (
                    CONF_MCP_SERVERS not in user_input
                    and CONF_MCP_SERVERS in subentry.data
                ):
                    # No server to choose from now (none configured, or the
                    # stored ones do not parse): the soul's choice stays, or
                    # it could use every server once they are back (a review).
                    data[CONF_MCP_SERVERS] = subentry.data[CONF_MCP_SERVERS]
                return self.async_update_and_abort(
                    self._get_entry(), subentry, title=data[CONF_NAME], data=data
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                _soul_schema(self.hass, self._get_entry()),
                user_input if user_input is not None else _shown(subentry.data),
            ),
            errors=errors,
        )
