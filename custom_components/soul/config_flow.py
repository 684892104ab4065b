"""Config flow for Soul: one hub entry with its MQTT prefix and LLM endpoint."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homeassistant.components import mqtt
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import FlowHandler
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
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
    CONF_INVOKE_TIMEOUT,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MBTI_TYPE,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_TIMEOUT,
    CONF_NAME,
    CONF_PERSONA,
    CONF_TERMINAL,
    CONF_TOPIC_PREFIX,
    CONF_USER_ID,
    DEFAULT_EMBEDDING_DIMS,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_EMOTION_TICK_INTERVAL,
    DEFAULT_INVOKE_TIMEOUT,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_MEMORY_TIMEOUT,
    DEFAULT_TOPIC_PREFIX,
    DOMAIN,
    LOGGER,
    MEMORY_BACKENDS,
    MEMORY_EMBEDDED,
    MEMORY_SERVER,
    SUBENTRY_SOUL,
    TITLE,
)
from .core import untrusted
from .core.emotion.dynamics import TICK_MAX, TICK_MIN, clamp_tick_interval
from .core.emotion.persona import MBTI_TYPES
from .core.llm import LLMAuthError, LLMConnectionError
from .core.souls import MAX_SOULS, SoulError, validate_soul_fields
from .core.topics import (
    InvalidPrefixError,
    Kind,
    Topics,
    normalize_prefix,
    valid_terminal_id,
)
from .models import SoulConfigEntry

MAX_SETTING_LENGTH = 2048  # a URL, a key, a model name
SETTINGS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_TOPIC_PREFIX, default=DEFAULT_TOPIC_PREFIX): TextSelector(),
        vol.Optional(CONF_LLM_BASE_URL): TextSelector(
            TextSelectorConfig(type=TextSelectorType.URL)
        ),
        vol.Optional(CONF_LLM_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
        vol.Optional(CONF_LLM_MODEL): TextSelector(),
        vol.Optional(
            CONF_INVOKE_TIMEOUT, default=DEFAULT_INVOKE_TIMEOUT
        ): NumberSelector(
            NumberSelectorConfig(
                min=1,
                max=60,
                step=0.5,
                unit_of_measurement="s",
                mode=NumberSelectorMode.BOX,
            )
        ),
        vol.Optional(CONF_MEMORY_BACKEND): SelectSelector(
            SelectSelectorConfig(
                options=list(MEMORY_BACKENDS),
                translation_key=CONF_MEMORY_BACKEND,
                mode=SelectSelectorMode.DROPDOWN,
            )
        ),
        vol.Optional(CONF_MEM0_URL): TextSelector(
            TextSelectorConfig(type=TextSelectorType.URL)
        ),
        vol.Optional(CONF_MEM0_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
        vol.Optional(
            CONF_EMBEDDING_MODEL, default=DEFAULT_EMBEDDING_MODEL
        ): TextSelector(),
        vol.Optional(
            CONF_EMBEDDING_DIMS, default=DEFAULT_EMBEDDING_DIMS
        ): NumberSelector(
            NumberSelectorConfig(min=8, max=8192, step=1, mode=NumberSelectorMode.BOX)
        ),
        vol.Optional(
            CONF_MEMORY_TIMEOUT, default=DEFAULT_MEMORY_TIMEOUT
        ): NumberSelector(
            NumberSelectorConfig(
                min=1,
                max=30,
                step=0.5,
                unit_of_measurement="s",
                mode=NumberSelectorMode.BOX,
            )
        ),
        vol.Optional(
            CONF_MAX_TOOL_ROUNDS, default=DEFAULT_MAX_TOOL_ROUNDS
        ): NumberSelector(
            NumberSelectorConfig(min=1, max=8, step=1, mode=NumberSelectorMode.BOX)
        ),
        vol.Optional(
            CONF_EMOTION_TICK_INTERVAL, default=DEFAULT_EMOTION_TICK_INTERVAL
        ): NumberSelector(
            NumberSelectorConfig(
                min=TICK_MIN,
                max=TICK_MAX,
                step=0.5,
                unit_of_measurement="s",
                mode=NumberSelectorMode.SLIDER,
            )
        ),
    }
)
SOUL_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_NAME): TextSelector(),
        vol.Required(CONF_MBTI_TYPE): SelectSelector(
            SelectSelectorConfig(
                options=list(MBTI_TYPES),
                mode=SelectSelectorMode.DROPDOWN,
                translation_key=CONF_MBTI_TYPE,
                custom_value=True,
            )
        ),
        vol.Optional(CONF_PERSONA): TextSelector(TextSelectorConfig(multiline=True)),
    }
)


def _soul_schema(hass: HomeAssistant, entry: ConfigEntry) -> vol.Schema:
    """Return the soul form: name, type, persona, Assist body and LLM APIs."""
    terminals: list[str] = []
    if entry.state is ConfigEntryState.LOADED:
        terminals = sorted(t.terminal_id for t in entry.runtime_data.registry)
    apis = [
        SelectOptionDict(label=api.name, value=api.id)
        for api in llm.async_get_apis(hass)
    ]
    return SOUL_SCHEMA.extend(
        {
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


async def _async_validate(
    hass: HomeAssistant, user_input: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Clean the settings and check the LLM endpoint with a real request.

    Returns the settings to store and the form errors (empty when valid).
    """
    errors: dict[str, str] = {}
    settings: dict[str, Any] = {
        key: value.strip()
        for key, value in user_input.items()
        if isinstance(value, str) and value.strip()
    }
    for key, value in settings.items():
        if not untrusted.is_text(value, MAX_SETTING_LENGTH):
            errors[key] = "invalid_text"
    settings[CONF_INVOKE_TIMEOUT] = float(
        user_input.get(CONF_INVOKE_TIMEOUT, DEFAULT_INVOKE_TIMEOUT)
    )
    for key, default in (
        (CONF_EMBEDDING_DIMS, DEFAULT_EMBEDDING_DIMS),
        (CONF_MEMORY_TIMEOUT, DEFAULT_MEMORY_TIMEOUT),
    ):
        if key in user_input:
            settings[key] = type(default)(user_input[key])
    backend = settings.get(CONF_MEMORY_BACKEND)
    if backend == MEMORY_SERVER and not settings.get(CONF_MEM0_URL):
        errors[CONF_MEM0_URL] = "mem0_url_required"
    if backend == MEMORY_EMBEDDED and not settings.get(CONF_LLM_BASE_URL):
        errors[CONF_MEMORY_BACKEND] = "memory_needs_llm"
    if settings.get(CONF_MEM0_URL):
        try:
            vol.Schema(vol.Url())(settings[CONF_MEM0_URL])
        except vol.Invalid:
            errors[CONF_MEM0_URL] = "invalid_url"
    settings[CONF_MAX_TOOL_ROUNDS] = max(
        1, min(8, int(user_input.get(CONF_MAX_TOOL_ROUNDS, DEFAULT_MAX_TOOL_ROUNDS)))
    )
    settings[CONF_EMOTION_TICK_INTERVAL] = clamp_tick_interval(
        user_input.get(CONF_EMOTION_TICK_INTERVAL, DEFAULT_EMOTION_TICK_INTERVAL)
    )
    try:
        settings[CONF_TOPIC_PREFIX] = normalize_prefix(
            settings.get(CONF_TOPIC_PREFIX, "")
        )
    except InvalidPrefixError:
        errors[CONF_TOPIC_PREFIX] = "invalid_topic_prefix"

    if (endpoint := llm_endpoint_from_config(settings)) is None:
        if CONF_LLM_MODEL in settings or CONF_LLM_API_KEY in settings:
            errors[CONF_LLM_BASE_URL] = "base_url_required"
        return settings, errors
    try:
        vol.Schema(vol.Url())(endpoint.base_url)
    except vol.Invalid:
        errors[CONF_LLM_BASE_URL] = "invalid_url"
    if not endpoint.model:
        errors[CONF_LLM_MODEL] = "model_required"
    if errors:
        return settings, errors

    try:
        llm = await async_create_llm(hass, endpoint)
        await llm.verify()
    except LLMAuthError:
        errors["base"] = "invalid_auth"
    except LLMConnectionError as err:
        LOGGER.debug("LLM endpoint %s failed: %s", endpoint.base_url, err)
        errors["base"] = "cannot_connect"
    except Exception:  # noqa: BLE001
        LOGGER.exception("Unexpected error while checking the LLM endpoint")
        errors["base"] = "unknown"
    return settings, errors


async def _async_settings_step(
    flow: FlowHandler[Any, ConfigFlowResult, Any],
    step_id: str,
    user_input: dict[str, Any] | None,
    current: Mapping[str, Any],
    finish: Callable[[dict[str, Any]], ConfigFlowResult],
) -> ConfigFlowResult:
    """Show the settings form, validate it, and hand valid settings to ``finish``."""
    errors: dict[str, str] = {}
    if user_input is not None:
        settings, errors = await _async_validate(flow.hass, user_input)
        if not errors:
            return finish(settings)
    return flow.async_show_form(
        step_id=step_id,
        data_schema=flow.add_suggested_values_to_schema(
            SETTINGS_SCHEMA, user_input if user_input is not None else current
        ),
        errors=errors,
    )


class SoulConfigFlow(ConfigFlow, domain=DOMAIN):
    """Create the Soul hub entry."""

    VERSION = 1

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the topic prefix and the optional LLM endpoint."""
        if not mqtt.mqtt_config_entry_enabled(self.hass):
            return self.async_abort(reason="mqtt_not_configured")
        return await _async_settings_step(
            self,
            "user",
            user_input,
            {},
            lambda settings: self.async_create_entry(
                title=TITLE, data={}, options=settings
            ),
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the same settings from the integration's menu."""
        entry = self._get_reconfigure_entry()
        return await _async_settings_step(
            self,
            "reconfigure",
            user_input,
            entry.options,
            # The entry's update listener reloads it when the options changed.
            lambda settings: self.async_update_and_abort(entry, options=settings),
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


class SoulOptionsFlow(OptionsFlow):
    """Change the hub settings; the update listener reloads the entry when they change."""

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Show and validate the settings form."""
        return await _async_settings_step(
            self,
            "init",
            user_input,
            self.config_entry.options,
            lambda settings: self.async_create_entry(data=settings),
        )


def _soul_settings(
    user_input: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Clean a soul form and return (data, errors)."""
    data = {
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
    try:
        validate_soul_fields(data[CONF_NAME], data[CONF_MBTI_TYPE], persona)
    except SoulError as err:  # the message starts with the field's name
        field = str(err).split(" ", 1)[0]
        key = {"name": CONF_NAME, "mbti_type": CONF_MBTI_TYPE}.get(field, CONF_PERSONA)
        return data, {key: f"invalid_{key}"}
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
                _soul_schema(self.hass, self._get_entry()), user_input
            ),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a soul; its emotion then settles towards the new temperament."""
        subentry = self._get_reconfigure_subentry()
        errors: dict[str, str] = {}
        if user_input is not None:
            data, errors = _soul_settings(user_input)
            if not errors:
                if CONF_USER_ID in subentry.data:  # the owner stays
                    data[CONF_USER_ID] = subentry.data[CONF_USER_ID]
                return self.async_update_and_abort(
                    self._get_entry(), subentry, title=data[CONF_NAME], data=data
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                _soul_schema(self.hass, self._get_entry()),
                user_input if user_input is not None else subentry.data,
            ),
            errors=errors,
        )
