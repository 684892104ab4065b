"""Config flow for Soul: one hub entry — its LLM endpoint in ``data``, its behaviour in ``options``.

- **user** (and MQTT discovery, whose card names the body): the topic prefix
  and the optional OpenAI-compatible endpoint (URL, key, model). Memory and
  advanced settings take their defaults; they live in the options.
- **reconfigure** changes the endpoint; **reauth** asks for a new key when
  the endpoint refuses the one stored.
- **options**: the topic prefix, then the *memory* and *advanced* settings
  in collapsed sections (stored flat).
- Souls are subentries (``soul_flow.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
import json
from typing import Any

from homeassistant.components import mqtt
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlowWithReload,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import section
from homeassistant.helpers.selector import (
    BooleanSelector,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
import voluptuous as vol

from .builder import async_create_llm, llm_endpoint_from_config
from .const import (
    CONF_EMBEDDING_DIMS,
    CONF_EMBEDDING_MODEL,
    CONF_EMOTION_TICK_INTERVAL,
    CONF_FOLLOW_UP,
    CONF_INVOKE_TIMEOUT,
    CONF_JOURNAL_DAYS,
    CONF_JOURNAL_MB,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MCP_CONFIG,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_TIMEOUT,
    CONF_NAVIGATOR_MODEL,
    CONF_NAVIGATOR_SWING,
    CONF_NAVIGATOR_TURNS,
    CONF_TOPIC_PREFIX,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_FOLLOW_UP,
    DEFAULT_TOPIC_PREFIX,
    DOMAIN,
    ENDPOINT_KEYS,
    LOGGER,
    MAX_SETTING_LENGTH,
    MEMORY_BACKENDS,
    MEMORY_EMBEDDED,
    MEMORY_SERVER,
    SECTION_ADVANCED,
    SECTION_MCP,
    SECTION_MEMORY,
    SUBENTRY_SOUL,
    TITLE,
)
from .core import untrusted
from .core.llm import LLMAuthError, LLMConnectionError
from .core.mcp.config import McpConfigError, config_data, dump_config, parse_config
from .core.redaction import redact_url
from .core.topics import InvalidPrefixError, Kind, Topics, normalize_prefix
from .helpers import is_url, valid_api_key
from .models import SoulConfigEntry
from .number_options import NUMBER_OPTIONS, number_fields, number_option
from .soul_flow import SoulSubentryFlow

API_KEYS = (CONF_LLM_API_KEY, CONF_MEM0_API_KEY)
URL = TextSelector(TextSelectorConfig(type=TextSelectorType.URL))
PASSWORD = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))


ENDPOINT_FIELDS: dict[Any, Any] = {
    vol.Optional(CONF_LLM_BASE_URL): URL,
    vol.Optional(CONF_LLM_API_KEY): PASSWORD,
    vol.Optional(CONF_LLM_MODEL): TextSelector(),
}
USER_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_TOPIC_PREFIX, default=DEFAULT_TOPIC_PREFIX): TextSelector(),
        **ENDPOINT_FIELDS,
    }
)
ENDPOINT_SCHEMA = vol.Schema(ENDPOINT_FIELDS)
REAUTH_SCHEMA = vol.Schema({vol.Optional(CONF_LLM_API_KEY): PASSWORD})
MEMORY_FIELDS = vol.Schema(
    {
        vol.Optional(CONF_MEMORY_BACKEND): SelectSelector(
            SelectSelectorConfig(
                options=list(MEMORY_BACKENDS),
                translation_key=CONF_MEMORY_BACKEND,
                mode=SelectSelectorMode.DROPDOWN,
            )
        ),
        vol.Optional(CONF_MEM0_URL): URL,
        vol.Optional(CONF_MEM0_API_KEY): PASSWORD,
        vol.Optional(
            CONF_EMBEDDING_MODEL, default=DEFAULT_EMBEDDING_MODEL
        ): TextSelector(),
        **number_fields(CONF_EMBEDDING_DIMS, CONF_MEMORY_TIMEOUT),
    }
)
ADVANCED_FIELDS = vol.Schema(
    {
        **number_fields(CONF_INVOKE_TIMEOUT),
        vol.Optional(CONF_FOLLOW_UP, default=DEFAULT_FOLLOW_UP): BooleanSelector(),
        **number_fields(
            CONF_MAX_TOOL_ROUNDS,
            CONF_EMOTION_TICK_INTERVAL,
            CONF_NAVIGATOR_TURNS,
            CONF_NAVIGATOR_SWING,
        ),
        vol.Optional(CONF_NAVIGATOR_MODEL): TextSelector(),
        **number_fields(CONF_JOURNAL_DAYS, CONF_JOURNAL_MB),
    }
)
# MCP servers (docs/mcp.md): the spec's {"mcpServers": …} as JSON text.
MCP_EXAMPLE = (
    '{"mcpServers": {"files": {"command": "npx", "args": ["-y",'
    ' "@modelcontextprotocol/server-filesystem", "/share"]}, "search":'
    ' {"url": "https://example.com/mcp", "headers": {"Authorization":'
    ' "Bearer …"}}}}'
)
MCP_FIELDS = vol.Schema(
    {vol.Optional(CONF_MCP_CONFIG): TextSelector(TextSelectorConfig(multiline=True))}
)
OPTIONS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_TOPIC_PREFIX, default=DEFAULT_TOPIC_PREFIX): TextSelector(),
        vol.Required(SECTION_MEMORY): section(MEMORY_FIELDS, {"collapsed": True}),
        vol.Required(SECTION_MCP): section(MCP_FIELDS, {"collapsed": True}),
        vol.Required(SECTION_ADVANCED): section(ADVANCED_FIELDS, {"collapsed": True}),
    }
)


def _texts(user_input: Mapping[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    """Return the non-empty text fields of a form, each checked as one line."""
    texts = {
        key: value.strip()
        for key, value in user_input.items()
        if isinstance(value, str) and value.strip()
    }
    for key, value in texts.items():
        if not untrusted.is_text(value, MAX_SETTING_LENGTH):
            errors[key] = "invalid_text"
        elif key in API_KEYS and not valid_api_key(value):
            errors[key] = "invalid_api_key"
    return texts


async def _async_validate_endpoint(
    hass: HomeAssistant, user_input: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return (the endpoint's data, errors); a given endpoint is checked for real."""
    errors: dict[str, str] = {}
    texts = _texts(user_input, errors)
    data: dict[str, Any] = {key: texts[key] for key in ENDPOINT_KEYS if key in texts}
    if errors:
        return data, errors
    if (endpoint := llm_endpoint_from_config(data)) is None:
        if CONF_LLM_MODEL in data or CONF_LLM_API_KEY in data:
            errors[CONF_LLM_BASE_URL] = "base_url_required"
        return data, errors
    if not is_url(endpoint.base_url):
        errors[CONF_LLM_BASE_URL] = "invalid_url"
    if not endpoint.model:
        errors[CONF_LLM_MODEL] = "model_required"
    if errors:
        return data, errors
    try:
        llm = await async_create_llm(hass, endpoint)
        await llm.verify()
    except LLMAuthError:
        errors["base"] = "invalid_auth"
    except LLMConnectionError as err:
        LOGGER.debug("LLM endpoint %s failed: %s", redact_url(endpoint.base_url), err)
        errors["base"] = "cannot_connect"
    except Exception:  # noqa: BLE001
        LOGGER.exception("Unexpected error while checking the LLM endpoint")
        errors["base"] = "unknown"
    return data, errors


def _prefix(user_input: Mapping[str, Any], errors: dict[str, str]) -> str:
    try:
        return normalize_prefix(str(user_input.get(CONF_TOPIC_PREFIX, "")))
    except InvalidPrefixError:
        errors[CONF_TOPIC_PREFIX] = "invalid_topic_prefix"
        return str(user_input.get(CONF_TOPIC_PREFIX, ""))


def _validate_mcp(
    user_input: Mapping[str, Any], errors: dict[str, str], placeholders: dict[str, str]
) -> dict[str, Any] | None:
    """Return the MCP servers as stored data, or None; name a bad field's problem."""
    text = (user_input.get(SECTION_MCP) or {}).get(CONF_MCP_CONFIG)
    try:
        servers = parse_config(text if isinstance(text, str) else None)
    except McpConfigError as err:
        errors[CONF_MCP_CONFIG] = "invalid_mcp_config"
        placeholders["mcp_field"] = err.field
        placeholders["mcp_error"] = err.message
        return None
    return config_data(servers) if servers else None


def _number(section: Mapping[str, Any], key: str, errors: dict[str, str]) -> Any:
    """Return a numeric option of the form in its range; name a value that is no number.

    Home Assistant's number field lets "nan" through (its range check compares).
    """
    option = NUMBER_OPTIONS[key]
    if key not in section:
        return option.default
    if (value := option.read(section[key])) is None:
        errors[key] = "invalid_number"
        return option.default
    return value


def _validate_options(
    user_input: Mapping[str, Any],
    endpoint: Mapping[str, Any],
    placeholders: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return (the options, stored flat, errors) of the options form."""
    errors: dict[str, str] = {}
    mcp = _validate_mcp(
        user_input, errors, {} if placeholders is None else placeholders
    )
    memory = dict(user_input.get(SECTION_MEMORY) or {})
    advanced = dict(user_input.get(SECTION_ADVANCED) or {})
    options: dict[str, Any] = {CONF_TOPIC_PREFIX: _prefix(user_input, errors)}
    options.update(_texts(memory, errors))
    for key in (CONF_EMBEDDING_DIMS, CONF_MEMORY_TIMEOUT):
        if key in memory:
            options[key] = _number(memory, key, errors)
    backend = options.get(CONF_MEMORY_BACKEND)
    if backend == MEMORY_SERVER and not options.get(CONF_MEM0_URL):
        errors[CONF_MEM0_URL] = "mem0_url_required"
    if backend == MEMORY_EMBEDDED and not endpoint.get(CONF_LLM_BASE_URL):
        errors[CONF_MEMORY_BACKEND] = "memory_needs_llm"
    if options.get(CONF_MEM0_URL) and not is_url(options[CONF_MEM0_URL]):
        errors[CONF_MEM0_URL] = "invalid_url"
    options[CONF_FOLLOW_UP] = bool(advanced.get(CONF_FOLLOW_UP, DEFAULT_FOLLOW_UP))
    for key in (
        CONF_INVOKE_TIMEOUT,
        CONF_MAX_TOOL_ROUNDS,
        CONF_EMOTION_TICK_INTERVAL,
        CONF_NAVIGATOR_TURNS,
        CONF_NAVIGATOR_SWING,
        CONF_JOURNAL_DAYS,
        CONF_JOURNAL_MB,
    ):
        options[key] = _number(advanced, key, errors)
    if model := _texts(
        {CONF_NAVIGATOR_MODEL: advanced.get(CONF_NAVIGATOR_MODEL)}, errors
    ).get(CONF_NAVIGATOR_MODEL):
        options[CONF_NAVIGATOR_MODEL] = model
    if mcp is not None:
        options[CONF_MCP_CONFIG] = mcp
    return options, errors


def _mcp_text(stored: Any) -> str:
    """Return the stored MCP servers as the form's text.

    One that does not parse (a hand edit, an old backup) is shown as stored:
    shown as no servers, saving the form unchanged deleted every server (a
    fuzz of the stored entries, 2026-11-29); now saving it says what is wrong.
    """
    try:
        return dump_config(parse_config(stored))
    except McpConfigError:
        if isinstance(stored, str):
            return stored
        return json.dumps(stored, indent=2, default=str)


def _sections(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return flat options as the options form shows them, in its sections.

    A number shows as Soul reads it (in range, else its default): a damaged
    stored one ("x", 1e9) would fill the field with what Soul does not use
    and the field cannot hold.
    """

    def shown(key: str, value: Any) -> Any:
        return number_option(options, key) if key in NUMBER_OPTIONS else value

    return {
        CONF_TOPIC_PREFIX: options.get(CONF_TOPIC_PREFIX, DEFAULT_TOPIC_PREFIX),
        SECTION_MEMORY: {
            k: shown(k, v) for k, v in options.items() if k in MEMORY_FIELDS.schema
        },
        SECTION_MCP: (
            {CONF_MCP_CONFIG: _mcp_text(options[CONF_MCP_CONFIG])}
            if options.get(CONF_MCP_CONFIG)
            else {}
        ),
        SECTION_ADVANCED: {
            k: shown(k, v) for k, v in options.items() if k in ADVANCED_FIELDS.schema
        },
    }


class SoulConfigFlow(ConfigFlow, domain=DOMAIN):
    """Create the Soul hub entry."""

    VERSION = 1
    MINOR_VERSION = 3

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the topic prefix and the optional LLM endpoint."""
        if not mqtt.mqtt_config_entry_enabled(self.hass):
            return self.async_abort(reason="mqtt_not_configured")
        errors: dict[str, str] = {}
        if user_input is not None:
            prefix = _prefix(user_input, errors)
            data, endpoint_errors = await _async_validate_endpoint(
                self.hass, user_input
            )
            errors.update(endpoint_errors)
            if not errors:
                return self.async_create_entry(
                    title=TITLE, data=data, options={CONF_TOPIC_PREFIX: prefix}
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(USER_SCHEMA, user_input),
            errors=errors,
        )

    @callback
    def _async_store_endpoint(
        self, entry: SoulConfigEntry, data: dict[str, Any]
    ) -> ConfigFlowResult:
        """Store the endpoint and finish; a loaded entry's update listener reloads it.

        Home Assistant (2026.10+) reports a flow that reloads an entry that has
        an update listener. An unchanged endpoint calls no listener, so a loaded
        entry is reloaded here (a reauth retries the key); an entry that is not
        loaded (its setup failed) has no listener and is reloaded by the flow.
        """
        if not entry.update_listeners:
            return self.async_update_reload_and_abort(entry, data=data)
        unchanged = dict(entry.data) == data
        result = self.async_update_and_abort(entry, data=data)
        if unchanged:
            self.hass.config_entries.async_schedule_reload(entry.entry_id)
        return result

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the LLM endpoint (empty URL: no model)."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            data, errors = await _async_validate_endpoint(self.hass, user_input)
            if not errors:
                return self._async_store_endpoint(entry, data)
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                ENDPOINT_SCHEMA, user_input if user_input is not None else entry.data
            ),
            errors=errors,
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """Ask for another key: the endpoint refused the stored one."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the key and check it against the stored endpoint."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            data, errors = await _async_validate_endpoint(
                self.hass,
                {
                    **entry.data,
                    CONF_LLM_API_KEY: user_input.get(CONF_LLM_API_KEY, ""),
                },
            )
            if not errors:
                return self._async_store_endpoint(entry, data)
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            description_placeholders={
                "url": str(entry.data.get(CONF_LLM_BASE_URL, ""))
            },
            errors=errors,
        )

    async def async_step_mqtt(
        self, discovery_info: MqttServiceInfo
    ) -> ConfigFlowResult:
        """Offer Soul when a body first announces itself on the default prefix."""
        parsed = Topics(DEFAULT_TOPIC_PREFIX).parse(discovery_info.topic)
        if parsed is None or parsed.kind is not Kind.ONLINE:
            return self.async_abort(reason="invalid_discovery_info")
        await self.async_set_unique_id(DOMAIN)
        self._abort_if_unique_id_configured()
        # The discovery card's title names the body (flow_title).
        self.context["title_placeholders"] = {"terminal": parsed.terminal_id}
        return await self.async_step_mqtt_confirm()

    async def async_step_mqtt_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Confirm, then ask for the usual settings."""
        if user_input is None:
            return self.async_show_form(
                step_id="mqtt_confirm",
                description_placeholders=self.context["title_placeholders"],
            )
        return await self.async_step_user()

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: SoulConfigEntry) -> SoulOptionsFlow:
        """Return the options flow."""
        return SoulOptionsFlow()

    @classmethod
    @callback
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Souls are subentries of the hub."""
        return {SUBENTRY_SOUL: SoulSubentryFlow}


class SoulOptionsFlow(OptionsFlowWithReload):
    """Change the hub's behaviour; the update listener reloads the entry."""

    automatic_reload = False

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Show the topic prefix and the memory and advanced sections."""
        errors: dict[str, str] = {}
        placeholders = {"mcp_field": "", "mcp_error": "", "mcp_example": MCP_EXAMPLE}
        if user_input is not None:
            options, errors = _validate_options(
                user_input, self.config_entry.data, placeholders
            )
            if not errors:
                # Loaded, Soul's update listener reloads it (or only its souls);
                # when it did not start (a stored prefix it refused), it has no
                # listener, and Home Assistant reloads it with the new options.
                self.automatic_reload = (
                    self.config_entry.state is not ConfigEntryState.LOADED
                )
                return self.async_create_entry(data=options)
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                OPTIONS_SCHEMA,
                user_input
                if user_input is not None
                else _sections(self.config_entry.options),
            ),
            errors=errors,
            description_placeholders=placeholders,
        )
