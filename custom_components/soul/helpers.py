"""Lookups and identities the glue shares: entries, devices, souls, skills, Star ids.

Everything here is small and stateless, and sits below the platforms and the
features (``docs/architecture.md`` has the layers): the loaded hub entry,
the device of a terminal, a soul or the hub, a soul by id or name, a skill
invocation with translated errors, the Star identities of souls, and the
clock the core reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
import time
from typing import Any

from homeassistant.auth.models import User
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.util import dt as dt_util
from homeassistant.util.hass_dict import HassKey
import voluptuous as vol

from .const import (
    CONF_MCP_SERVERS,
    CONF_TERMINAL,
    DOMAIN,
    ENDPOINT_KEYS,
    MAX_SETTING_LENGTH,
    MAX_SOUL_SERVERS,
    TITLE,
)
from .core import stored, untrusted
from .core.buckets import TokenBuckets
from .core.invoker import INVALID_RESULT_ERROR, TIMEOUT_ERROR, InvokeError
from .core.protocol import InvokeResult
from .core.soul import Soul
from .core.soul_names import name_key
from .core.souls import SoulHub
from .core.star.hub import Identity
from .core.terminal import Terminal
from .core.topics import valid_terminal_id
from .models import SoulConfigEntry


def entry_settings(entry: SoulConfigEntry) -> dict[str, Any]:
    """Return an entry's settings: its endpoint (``data``) and behaviour (``options``).

    The endpoint is the data's only: one left in the options (a hand edit,
    an entry an older Soul wrote) started embedded memory against it while
    the chat had no model (a fuzz of the stored entries, 2026-11-29).
    """
    behaviour = {k: v for k, v in entry.options.items() if k not in ENDPOINT_KEYS}
    return {**entry.data, **behaviour}


# An API's or a server's id in a soul's choice (the flow cuts server names to
# MAX_SERVER_NAME; API ids are Home Assistant's).
_MAX_CHOSEN_ID = 64


def soul_options(entry: SoulConfigEntry, soul_id: str) -> dict[str, Any]:
    """Return a soul's Assist settings as its flow stores them.

    A damaged subentry (a hand edit, an old backup) held a terminal id that
    was a list, a number as the Home Assistant API and MCP servers as a
    number: every Assist turn raised, and a turn's chat log task never ended
    (a fuzz of the stored entries, 2026-11-29). Such a body or API is left
    out; a damaged list of MCP servers allows none.
    """
    subentry = entry.subentries.get(soul_id)
    if subentry is None:
        return {}
    options = dict(subentry.data)
    terminal = options.get(CONF_TERMINAL)
    if terminal is not None and not (
        isinstance(terminal, str) and valid_terminal_id(terminal)
    ):
        del options[CONF_TERMINAL]
    apis = options.get(CONF_LLM_HASS_API)
    if apis is not None and not _chosen([apis] if isinstance(apis, str) else apis):
        del options[CONF_LLM_HASS_API]
    servers = options.get(CONF_MCP_SERVERS)
    if servers is not None and not _chosen(servers):
        options[CONF_MCP_SERVERS] = []
    return options


def _chosen(value: Any) -> bool:
    """Return whether ``value`` is a soul's list of chosen APIs or servers, as stored."""
    return (
        isinstance(value, list)
        and len(value) <= MAX_SOUL_SERVERS
        and all(stored.ident(item, _MAX_CHOSEN_ID) is not None for item in value)
    )


def is_url(value: str) -> bool:
    """Return whether ``value`` is an address the flows accept (``vol.Url``)."""
    try:
        vol.Schema(vol.Url())(value)
    except vol.Invalid:
        return False
    return True


def valid_api_key(value: Any) -> bool:
    """Return whether ``value`` is a key an HTTP header takes ("clé" raised in the client)."""
    return (
        isinstance(value, str)
        and len(value) <= MAX_SETTING_LENGTH
        and value.isascii()
        and value.isprintable()
    )


# Requests of one user who is not an administrator in progress at once
# (Soul's HTTP views and the panel's chats): a user's slow requests (bodies
# sent slowly, each read whole up to 512 KiB; chats waiting for the model)
# hold no more than this many handlers, buffers and model calls. An
# administrator's (bodies and scripts often share one long-lived token) are
# not counted.
MAX_IN_FLIGHT = 16
# And how often such a user may start one that makes Soul work (a POST, a
# panel chat; not a read): a burst, then so many a second. Each request is
# quick, but a burst of them is handled one after another on the event loop
# (20 analyses of 4 KiB sent together delayed Home Assistant's answers by up
# to 50 ms, and 237 ms in a black-box run on a busier machine). A body or a
# person sends one or two a turn.
REQUEST_BURST = 8
REQUESTS_PER_SECOND = 8
_IN_FLIGHT: HassKey[dict[str, int]] = HassKey(f"{DOMAIN}_in_flight")
_REQUEST_RATE: HassKey[TokenBuckets[str]] = HassKey(f"{DOMAIN}_request_rate")
IN_FLIGHT_ERROR = (
    f"this user already has {MAX_IN_FLIGHT} requests to Soul in progress;"
    " wait for one to end"
)
RATE_ERROR = (
    f"this user sent more than {REQUESTS_PER_SECOND} requests to Soul a second;"
    " wait a moment"
)


@contextmanager
def request_in_flight(
    hass: HomeAssistant, user: User | None, *, rated: bool = True
) -> Iterator[str | None]:
    """Count a request of ``user`` while it runs; yield why it is refused, or None.

    Refused: one more than ``MAX_IN_FLIGHT`` in progress, or, when ``rated``
    (a request that makes Soul work: not a read), past the user's rate
    (``REQUEST_BURST``, then ``REQUESTS_PER_SECOND``).
    """
    if user is not None and user.is_admin:
        yield None
        return
    key = "" if user is None else user.id
    in_flight = hass.data.setdefault(_IN_FLIGHT, {})
    if in_flight.get(key, 0) >= MAX_IN_FLIGHT:
        yield IN_FLIGHT_ERROR
        return
    if rated and request_rate(hass).take(key):
        yield RATE_ERROR
        return
    in_flight[key] = in_flight.get(key, 0) + 1
    try:
        yield None
    finally:
        if (left := in_flight[key] - 1) > 0:
            in_flight[key] = left
        else:
            del in_flight[key]


def request_rate(hass: HomeAssistant) -> TokenBuckets[str]:
    """Return the users' request budgets (made on first use)."""
    if (rate := hass.data.get(_REQUEST_RATE)) is None:
        rate = hass.data[_REQUEST_RATE] = TokenBuckets(
            REQUEST_BURST, 1 / REQUESTS_PER_SECOND, time.monotonic
        )
    return rate


def requests_in_flight(hass: HomeAssistant) -> int:
    """Return how many counted requests are in progress (for tests and diagnostics)."""
    return sum(hass.data.get(_IN_FLIGHT, {}).values())


def find_loaded_entry(hass: HomeAssistant) -> SoulConfigEntry | None:
    """Return the loaded Soul hub entry, if there is one."""
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry.state is ConfigEntryState.LOADED:
            return entry
    return None


def loaded_entry(hass: HomeAssistant) -> SoulConfigEntry:
    """Return the loaded Soul hub entry, or raise."""
    if (entry := find_loaded_entry(hass)) is not None:
        return entry
    raise ServiceValidationError(
        translation_domain=DOMAIN, translation_key="not_loaded"
    )


def hub_device_info(entry: SoulConfigEntry) -> DeviceInfo:
    """Return the device that stands for the Soul hub itself."""
    return DeviceInfo(
        # "/" never occurs in a terminal id, so this is no terminal's identifier.
        identifiers={(DOMAIN, f"hub/{entry.entry_id}")},
        entry_type=DeviceEntryType.SERVICE,
        manufacturer=TITLE,
        name=TITLE,
    )


def terminal_device_info(terminal: Terminal) -> DeviceInfo:
    """Return the device of a terminal, with model and firmware when it told them."""
    info = DeviceInfo(
        identifiers={(DOMAIN, terminal.terminal_id)}, name=terminal.terminal_id
    )
    if (skills := terminal.skills) is not None:
        if skills.model:
            info["model"] = skills.model
        if skills.manufacturer:
            info["manufacturer"] = skills.manufacturer
        if skills.firmware:
            info["sw_version"] = skills.firmware
    return info


def find_device(
    hass: HomeAssistant, entry_id: str, identifier: str
) -> dr.DeviceEntry | None:
    """Return the hub entry's device with identifier ``(DOMAIN, identifier)``.

    A terminal's identifier is its id, a soul's ``soul/<soul_id>``. Home
    Assistant 2026.10 finds it by identifier per config entry
    (``async_get_device_by_identifier``) and reports ``async_get_device`` as
    deprecated; 2026.2 has only the latter (identifiers are unique there),
    so there it is asked and the device checked to be the entry's. Both are
    index lookups: a chat turn asks for its body's device.
    """
    devices = dr.async_get(hass)
    key = (DOMAIN, identifier)
    by_identifier = getattr(devices, "async_get_device_by_identifier", None)
    if by_identifier is not None:  # Home Assistant ≥ 2026.10
        found: dr.DeviceEntry | None = by_identifier(key, entry_id)
        return found
    device = devices.async_get_device(identifiers={key})
    return device if device is not None and entry_id in device.config_entries else None


def find_terminal_id(hass: HomeAssistant, device_id: str) -> str | None:
    """Return the terminal id behind a device, or None (other or soul devices)."""
    device = dr.async_get(hass).async_get(device_id)
    if device is not None:
        for domain, identifier in device.identifiers:
            if domain == DOMAIN and valid_terminal_id(identifier):
                return identifier
    return None


def terminal_id_of_device(hass: HomeAssistant, device_id: str) -> str:
    """Return the terminal id behind a device, or raise."""
    if (terminal_id := find_terminal_id(hass, device_id)) is not None:
        return terminal_id
    raise ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="not_a_terminal",
        translation_placeholders={"device": device_id},
    )


SOUL_IDENTIFIER_PREFIX = "soul/"  # "/" never occurs in a terminal id


def signal_souls_changed(entry_id: str) -> str:
    """Return the dispatcher signal sent after the set of souls changed."""
    return f"{DOMAIN}_{entry_id}_souls_changed"


def soul_identifier(soul_id: str) -> tuple[str, str]:
    """Return the device identifier of a soul."""
    return (DOMAIN, f"{SOUL_IDENTIFIER_PREFIX}{soul_id}")


def soul_id_of_device(device: dr.DeviceEntry) -> str | None:
    """Return the soul id behind a device, or None for other devices."""
    for domain, identifier in device.identifiers:
        if domain == DOMAIN and identifier.startswith(SOUL_IDENTIFIER_PREFIX):
            return identifier.removeprefix(SOUL_IDENTIFIER_PREFIX)
    return None


def soul_device_info(soul: Soul) -> DeviceInfo:
    """Return the device that stands for a soul."""
    return DeviceInfo(
        identifiers={soul_identifier(soul.soul_id)},
        name=soul.name,
        manufacturer=TITLE,
        model=soul.mbti,
        entry_type=dr.DeviceEntryType.SERVICE,
    )


def find_soul(hub: SoulHub, key: str) -> Soul | None:
    """Return the soul with this id, or else the only soul with this name."""
    if (soul := hub.soul(key)) is not None:
        return soul
    looks = name_key(key)
    named = [s for s in hub.souls.values() if name_key(s.name) == looks]
    return named[0] if len(named) == 1 else None


MAX_SHOWN_ERROR = 300  # characters of a body's error in an action's message


async def async_invoke_or_raise(
    entry: SoulConfigEntry,
    terminal_id: str,
    skill: str,
    arguments: dict[str, Any],
    *,
    raise_on_failure: bool,
) -> InvokeResult:
    """Invoke a skill; refusals and timeouts raise translated errors.

    With ``raise_on_failure`` a result with ``ok=false`` raises too (entities);
    otherwise it is returned for the caller to report (the action's response).
    """
    try:
        result = await entry.runtime_data.invoker.invoke(terminal_id, skill, arguments)
    except InvokeError as err:
        raise ServiceValidationError(
            str(err),
            translation_domain=DOMAIN,
            translation_key=err.key,
            translation_placeholders={
                "terminal": terminal_id,
                "skill": skill,
                **err.placeholders,
            },
        ) from err
    if result.by_soul and result.error == TIMEOUT_ERROR:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="timeout",
            translation_placeholders={"terminal": terminal_id, "skill": skill},
        )
    if result.by_soul and result.error == INVALID_RESULT_ERROR:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="invalid_result",
            translation_placeholders={"terminal": terminal_id, "skill": skill},
        )
    if not result.ok and raise_on_failure:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="skill_failed",
            translation_placeholders={
                "terminal": terminal_id,
                "skill": skill,
                # Shown in a toast: a body's 1,000 characters ran out of it.
                "error": untrusted.shortened(result.error or "", MAX_SHOWN_ERROR),
            },
        )
    return result


# Every soul is the Star agent soul_<id> in the environment "home" (star.py);
# no client may take those identities.
HOME_ENV = "home"


SOUL_AGENT_PREFIX = "soul_"


def soul_agent_id(soul_id: str) -> str:
    """Return the Star agent id of a soul."""
    return f"{SOUL_AGENT_PREFIX}{soul_id}"


def star_identity_reserved(identity: Identity) -> bool:
    """Return whether a Star identity is, or reads as, Soul's own (souls, ``home``).

    In any case, and for humans too: "SOUL_<id>" or a human "soul_<id>" read as
    a soul's agent to the people watching (a black-box run took both).
    """
    folded = identity.client_id.casefold()
    if identity.client_type == "environment":
        return folded == HOME_ENV
    return folded.startswith(SOUL_AGENT_PREFIX)


def now_timestamp() -> float:
    """Return the time for the core (Home Assistant's clock, patched in tests)."""
    return dt_util.utcnow().timestamp()
