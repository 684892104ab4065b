"""Config flow for Soul: one hub entry with its MQTT prefix and LLM endpoint."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from homeassistant.components import mqtt
from homeassistant.config_entries import (
    ConfigFlow,
    ConfigFlowResult,
    OptionsFlowWithReload,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import FlowHandler
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
import voluptuous as vol

from .const import (
    CONF_INVOKE_TIMEOUT,
    CONF_LLM_API_KEY,
    CONF_LLM_BASE_URL,
    CONF_LLM_MODEL,
    CONF_TOPIC_PREFIX,
    DEFAULT_INVOKE_TIMEOUT,
    DEFAULT_TOPIC_PREFIX,
    DOMAIN,
    LOGGER,
    TITLE,
)
from .core.llm import LLMAuthError, LLMConnectionError
from .core.topics import InvalidPrefixError, Kind, Topics, normalize_prefix
from .runtime import SoulConfigEntry, async_create_llm, llm_endpoint_from_config

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
    settings[CONF_INVOKE_TIMEOUT] = float(
        user_input.get(CONF_INVOKE_TIMEOUT, DEFAULT_INVOKE_TIMEOUT)
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
            lambda settings: self.async_update_reload_and_abort(
                entry, options=settings
            ),
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


class SoulOptionsFlow(OptionsFlowWithReload):
    """Change the hub settings; the entry reloads when they change."""

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
