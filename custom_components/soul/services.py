"""Soul's actions (``invoke_skill``, ``create_soul``, ``select_soul``) and their helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homeassistant.const import ATTR_DEVICE_ID
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import async_register_admin_service
from homeassistant.util import dt as dt_util
from homeassistant.util.json import JsonValueType
import voluptuous as vol

from .access import async_principal_of_call, unauthorized
from .const import CONF_MBTI_TYPE, CONF_NAME, CONF_PERSONA, CONF_USER_ID, DOMAIN
from .core import untrusted
from .core.access import AccessError
from .core.cognition.events import MAX_EVENT_ID, MAX_EVENT_TYPES, EventType, parse_query
from .core.cognition.profiles import (
    MAX_KEY,
    MAX_NAME,
    MAX_PREFERENCES,
    MAX_VALUE,
    ProfileError,
)
from .core.invoker import MAX_ARGUMENTS_BYTES
from .core.memory import MEMORY_TYPES, MemoryBackendError
from .core.memory.manager import MemoryManager
from .core.soul import (
    MAX_NAME_LENGTH,
    MAX_PERSONA_LENGTH,
    SoulError,
    validate_soul_fields,
)
from .helpers import (
    async_invoke_or_raise,
    find_soul,
    loaded_entry,
    terminal_id_of_device,
)
from .journal import async_read_events
from .models import SoulConfigEntry
from .souls import async_add_soul, soul_as_dict

SERVICE_INVOKE_SKILL = "invoke_skill"
SERVICE_CREATE_SOUL = "create_soul"
SERVICE_SELECT_SOUL = "select_soul"
SERVICE_REMEMBER = "remember"
SERVICE_RECALL = "recall"
SERVICE_FORGET = "forget"
SERVICE_GET_EVENTS = "get_events"
SERVICE_GET_PROFILE = "get_profile"
SERVICE_UPDATE_PROFILE = "update_profile"
ATTR_TEXT = "text"
ATTR_QUERY = "query"
ATTR_LIMIT = "limit"
ATTR_MEMORY_ID = "memory_id"
ATTR_TYPE = "type"
ATTR_TAGS = "tags"
ATTR_SKILL = "skill"
ATTR_ARGUMENTS = "arguments"
ATTR_SOUL_ID = "soul_id"
ATTR_TERMINAL_ID = "terminal_id"

MAX_ID = 128
MAX_DEVICES = 16  # device ids an invoke_skill call may name (one is used)
MAX_MEMORY_TEXT = 4096


def text(
    max_length: int = MAX_ID, *, multiline: bool = False, required: bool = True
) -> Callable[[Any], str]:
    """Return a voluptuous validator: ``core.untrusted.text`` within ``max_length``."""

    def validate(value: Any) -> str:
        try:
            return untrusted.text(
                cv.string(value),
                "value",
                max_length=max_length,
                multiline=multiline,
                required=required,
            )
        except untrusted.UntrustedInputError as err:
            raise vol.Invalid(str(err)) from None

    return validate


def json_object(value: Any) -> dict[str, Any]:
    """Validate skill arguments: a plain JSON object within the size limit."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise vol.Invalid("arguments must be an object")
    try:
        return untrusted.check_json(
            value, max_bytes=MAX_ARGUMENTS_BYTES, max_depth=16, what="arguments"
        )
    except untrusted.UntrustedInputError as err:
        raise vol.Invalid(str(err)) from None


INVOKE_SKILL_SCHEMA = vol.Schema(
    {
        # Bounded before each id is read: one id is allowed (a clear error
        # says so for a few), 150,000 held the loop for 100 ms (black box).
        vol.Required(ATTR_DEVICE_ID): vol.All(
            cv.ensure_list, vol.Length(max=MAX_DEVICES), [text()]
        ),
        vol.Required(ATTR_SKILL): text(),
        vol.Optional(ATTR_ARGUMENTS, default=dict): json_object,
    },
    extra=vol.ALLOW_EXTRA,
)


def _soul_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Check a soul's fields as every way of making one does, in the schema.

    A bad type or a name that shows nothing is then the schema's error, not
    a 500 with a traceback through Home Assistant 2026.2's REST API.
    """
    try:
        validate_soul_fields(
            data[CONF_NAME], data[CONF_MBTI_TYPE], data.get(CONF_PERSONA)
        )
    except SoulError as err:
        raise vol.Invalid(str(err)) from None
    return data


CREATE_SOUL_SCHEMA = vol.All(
    vol.Schema(
        {
            vol.Required(CONF_NAME): text(MAX_NAME_LENGTH),
            vol.Required(CONF_MBTI_TYPE): text(16),
            vol.Optional(CONF_PERSONA): text(MAX_PERSONA_LENGTH, multiline=True),
            vol.Optional(CONF_USER_ID): text(),
        }
    ),
    _soul_fields,
)
SELECT_SOUL_SCHEMA = vol.All(
    vol.Schema(
        {
            vol.Required(ATTR_SOUL_ID): text(),
            vol.Exclusive(ATTR_DEVICE_ID, "terminal"): text(),
            vol.Exclusive(ATTR_TERMINAL_ID, "terminal"): text(),
        }
    ),
    cv.has_at_least_one_key(ATTR_DEVICE_ID, ATTR_TERMINAL_ID),
)


REMEMBER_SCHEMA = vol.Schema(
    {
        vol.Required(ATTR_TEXT): text(MAX_MEMORY_TEXT, multiline=True),
        vol.Optional(CONF_USER_ID): text(),
        vol.Optional(ATTR_SOUL_ID): text(),
        vol.Optional(ATTR_TYPE, default="fact"): vol.In(MEMORY_TYPES),
        vol.Optional(ATTR_TAGS, default=list): vol.All(
            cv.ensure_list, vol.Length(max=32), [text(64)]
        ),
        vol.Optional("infer", default=False): cv.boolean,
    }
)
RECALL_SCHEMA = vol.Schema(
    {
        vol.Required(ATTR_QUERY): text(MAX_MEMORY_TEXT, multiline=True),
        vol.Optional(CONF_USER_ID): text(),
        vol.Optional(ATTR_SOUL_ID): text(),
        vol.Optional(ATTR_LIMIT, default=5): vol.All(vol.Coerce(int), vol.Range(1, 50)),
    }
)
FORGET_SCHEMA = vol.All(
    vol.Schema(
        {
            vol.Exclusive(CONF_USER_ID, "what"): text(),
            vol.Exclusive(ATTR_MEMORY_ID, "what"): text(),
        }
    ),
    cv.has_at_least_one_key(CONF_USER_ID, ATTR_MEMORY_ID),
)


def moment(value: Any) -> float:
    """Validate a time of ``soul.get_events``: Unix seconds (UTC) of a date-time."""
    try:
        return dt_util.as_utc(cv.datetime(value)).timestamp()
    except OverflowError:  # year 1 or 9999 moved out of range by its time zone
        raise vol.Invalid("the time is out of range") from None


GET_EVENTS_SCHEMA = vol.Schema(
    {
        vol.Optional(ATTR_SOUL_ID): text(),
        vol.Optional("session_id"): text(),
        vol.Optional("trace_id"): text(),
        vol.Optional(ATTR_TYPE): vol.All(
            cv.ensure_list,
            vol.Length(max=MAX_EVENT_TYPES),
            [vol.In([t.value for t in EventType])],
        ),
        vol.Optional("since"): moment,
        vol.Optional("until"): moment,
        vol.Optional(ATTR_LIMIT, default=100): vol.All(
            vol.Coerce(int), vol.Range(min=1, max=500)
        ),
        vol.Optional("before"): vol.All(
            vol.Coerce(int), vol.Range(min=1, max=MAX_EVENT_ID)
        ),
    }
)


GET_PROFILE_SCHEMA = vol.Schema({vol.Optional(CONF_USER_ID): text()})
UPDATE_PROFILE_SCHEMA = vol.Schema(
    {
        vol.Optional(CONF_USER_ID): text(),
        # Checked here as the profile store checks them, so that a bad value
        # is the schema's error (Home Assistant 2026.2's REST API answers a
        # ServiceValidationError with a 500 and logs its traceback).
        vol.Optional(CONF_NAME): vol.Any(None, text(MAX_NAME, required=False)),
        # Counted before a key is read (a profile keeps MAX_PREFERENCES; one
        # call may forget them all and set as many): 150,000 keys held the
        # loop for up to 900 ms (black box, 2026-11-27).
        vol.Optional("preferences"): vol.All(
            dict,
            vol.Length(max=2 * MAX_PREFERENCES),
            vol.Schema({text(MAX_KEY): vol.Any(None, text(MAX_VALUE, required=False))}),
        ),
    }
)


async def _acting_for(call: ServiceCall) -> str | None:
    """Return the user an action acts for: the caller, or whom an administrator names."""
    principal = await async_principal_of_call(call.hass, call)
    try:
        return principal.acting_for(call.data.get(CONF_USER_ID))
    except AccessError as err:
        raise unauthorized(call, err) from err


async def _require_control(call: ServiceCall) -> None:
    """Refuse read-only users: they change nothing (a body, a profile, memories)."""
    principal = await async_principal_of_call(call.hass, call)
    if not principal.may_control:
        raise unauthorized(call, AccessError("read-only"))


async def _async_invoke_skill(call: ServiceCall) -> ServiceResponse:
    await _require_control(call)
    entry = loaded_entry(call.hass)
    devices = call.data[ATTR_DEVICE_ID]
    if len(devices) != 1:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="one_device_required"
        )
    terminal_id = terminal_id_of_device(call.hass, devices[0])
    result = await async_invoke_or_raise(
        entry,
        terminal_id,
        call.data[ATTR_SKILL],
        call.data[ATTR_ARGUMENTS] or {},
        raise_on_failure=False,
    )
    return {
        "terminal_id": terminal_id,
        "request_id": result.request_id,
        "ok": result.ok,
        "output": result.output,
        "error": result.error,
    }


async def _async_create_soul(call: ServiceCall) -> ServiceResponse:

    entry = loaded_entry(call.hass)
    data = call.data
    try:
        soul = async_add_soul(
            call.hass,
            entry,
            name=data[CONF_NAME],
            mbti=data[CONF_MBTI_TYPE],
            persona=data.get(CONF_PERSONA),
            user_id=data.get(CONF_USER_ID) or call.context.user_id,
        )
    except SoulError as err:
        raise ServiceValidationError(
            str(err),
            translation_domain=DOMAIN,
            translation_key="invalid_soul",
            translation_placeholders={"error": str(err)},
        ) from err
    return soul_as_dict(entry.runtime_data.souls, soul)


async def _async_select_soul(call: ServiceCall) -> ServiceResponse:

    entry = loaded_entry(call.hass)
    hub = entry.runtime_data.souls
    if ATTR_DEVICE_ID in call.data:
        terminal_id = terminal_id_of_device(call.hass, call.data[ATTR_DEVICE_ID])
    else:
        terminal_id = call.data[ATTR_TERMINAL_ID]
    if (soul := find_soul(hub, call.data[ATTR_SOUL_ID])) is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="unknown_soul",
            translation_placeholders={"soul": call.data[ATTR_SOUL_ID]},
        )
    try:
        hub.bind(terminal_id, soul.soul_id)
    except SoulError as err:
        raise ServiceValidationError(
            str(err),
            translation_domain=DOMAIN,
            translation_key="invalid_terminal",
            translation_placeholders={"terminal": terminal_id},
        ) from err
    return {"terminal_id": terminal_id, "soul": soul_as_dict(hub, soul)}


def _memory(call: ServiceCall) -> tuple[SoulConfigEntry, MemoryManager]:
    entry = loaded_entry(call.hass)
    memory = entry.runtime_data.memory
    if memory is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="memory_off"
        )
    return entry, memory


def _soul_id(entry: SoulConfigEntry, call: ServiceCall) -> str | None:
    if (key := call.data.get(ATTR_SOUL_ID)) is None:
        return None
    if (soul := find_soul(entry.runtime_data.souls, key)) is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="unknown_soul",
            translation_placeholders={"soul": key},
        )
    return soul.soul_id


def _memory_failed(err: MemoryBackendError) -> HomeAssistantError:
    return HomeAssistantError(
        str(err),
        translation_domain=DOMAIN,
        translation_key="memory_failed",
        translation_placeholders={"error": str(err)},
    )


async def _async_remember(call: ServiceCall) -> ServiceResponse:
    await _require_control(call)
    user_id = await _acting_for(call)
    entry, memory = _memory(call)
    try:
        ids = await memory.remember(
            call.data[ATTR_TEXT],
            user_id=user_id,
            soul_id=_soul_id(entry, call),
            memory_type=call.data[ATTR_TYPE],
            tags=call.data[ATTR_TAGS],
            infer=call.data["infer"],
        )
    except MemoryBackendError as err:
        raise _memory_failed(err) from err
    return {"ids": list(ids)}


async def _async_recall(call: ServiceCall) -> ServiceResponse:
    user_id = await _acting_for(call)
    entry, memory = _memory(call)
    try:
        found = await memory.recall(
            call.data[ATTR_QUERY],
            user_id=user_id,
            soul_id=_soul_id(entry, call),
            limit=call.data[ATTR_LIMIT],
        )
    except MemoryBackendError as err:
        raise _memory_failed(err) from err
    return {"memories": [item.as_dict() for item in found]}


async def _async_get_events(call: ServiceCall) -> ServiceResponse:
    """Return a page of the event journal that the caller may read."""
    entry = loaded_entry(call.hass)
    principal = await async_principal_of_call(call.hass, call)
    data = dict(call.data)
    if (key := data.get(ATTR_SOUL_ID)) is not None:
        soul = find_soul(entry.runtime_data.souls, key)
        if soul is None or not principal.sees(soul.user_id):
            # Another user's soul is as unknown as one that does not exist.
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="unknown_soul",
                translation_placeholders={"soul": key},
            )
        data[ATTR_SOUL_ID] = soul.soul_id
    query = parse_query(data)
    runtime = entry.runtime_data
    page = await async_read_events(
        call.hass, runtime.journal, runtime.souls, principal, query
    )
    events: list[JsonValueType] = list(page.events)
    return {"events": events, "next": page.next}


async def _async_get_profile(call: ServiceCall) -> ServiceResponse:
    """Return a user's profile (the caller's; an administrator may name anyone)."""
    user_id = await _acting_for(call)
    profile = loaded_entry(call.hass).runtime_data.profiles.profile(user_id)
    return {"user_id": user_id, "profile": profile.as_dict() if profile else None}


async def _async_update_profile(call: ServiceCall) -> ServiceResponse:
    """Change a user's profile; an empty preference value forgets it."""
    await _require_control(call)
    if (user_id := await _acting_for(call)) is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="profile_needs_user"
        )
    profiles = loaded_entry(call.hass).runtime_data.profiles
    try:
        profile = profiles.update(
            user_id,
            name=call.data.get(CONF_NAME),
            preferences=call.data.get("preferences"),
        )
    except ProfileError as err:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="invalid_profile",
            translation_placeholders={"error": str(err)},
        ) from err
    return {"user_id": user_id, "profile": profile.as_dict()}


async def _async_forget(call: ServiceCall) -> None:
    _entry, memory = _memory(call)
    try:
        await memory.forget(
            user_id=call.data.get(CONF_USER_ID), memory_id=call.data.get(ATTR_MEMORY_ID)
        )
    except MemoryBackendError as err:
        raise _memory_failed(err) from err


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register Soul's actions."""
    hass.services.async_register(
        DOMAIN,
        SERVICE_INVOKE_SKILL,
        _async_invoke_skill,
        schema=INVOKE_SKILL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    # Configuration changes and forgetting are for administrators (and for
    # automations, which an administrator set up).
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_CREATE_SOUL,
        _async_create_soul,
        schema=CREATE_SOUL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_REMEMBER,
        _async_remember,
        schema=REMEMBER_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_RECALL,
        _async_recall,
        schema=RECALL_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    async_register_admin_service(
        hass, DOMAIN, SERVICE_FORGET, _async_forget, schema=FORGET_SCHEMA
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_GET_PROFILE,
        _async_get_profile,
        schema=GET_PROFILE_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_UPDATE_PROFILE,
        _async_update_profile,
        schema=UPDATE_PROFILE_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_GET_EVENTS,
        _async_get_events,
        schema=GET_EVENTS_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_SELECT_SOUL,
        _async_select_soul,
        schema=SELECT_SOUL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
