"""The §4.4 request: the command, the catalog, options, time zone, now and locale.

``parse_request`` checks a request body and fills in the defaults; anything
it refuses raises ``IntentFilterError`` with the message the caller returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
import functools
import itertools
import re
from typing import Any
import uuid
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import untrusted
from ..language import normalize_locale
from .entries import IntentFilterError

MAX_COMMAND_LENGTH = 2000
DEFAULT_TIMEZONE = "UTC"
DEFAULT_OPTIONS: dict[str, Any] = {
    "allow_multi_intent": True,
    "max_intents": 8,
    "max_intents_per_segment": 1,
    "min_confidence": 0.35,
    "enable_time_parser": True,
    "emit_system_intent_when_empty": True,
    "return_debug_candidates": False,
    "return_debug_entities": False,
}
_OPTION_RANGES = {"max_intents": (1, 32), "max_intents_per_segment": (1, 8)}
_MAPPINGS = (dict, Mapping)  # a dict first: the ABC check is slow
# ``now`` must leave room for the filter's date arithmetic: clock times up to
# three days on ("大后天晚上8点") and a day's wrap, in any time zone.
_EARLIEST = datetime.min + timedelta(days=7)
_LATEST = datetime.max - timedelta(days=7)
_RUN_ID = uuid.uuid4().hex[:8]
_request_numbers = itertools.count(1)


@dataclass(slots=True)
class Request:
    """A validated §4.4 request, defaults filled in."""

    request_id: str
    command: str
    entries: Any
    options: dict[str, Any]
    now: datetime
    timezone: str
    locale: str | None


def _bool_option(options: Mapping[str, Any], key: str) -> bool:
    value = options.get(key, DEFAULT_OPTIONS[key])
    if not isinstance(value, bool):
        raise IntentFilterError(f"options.{key} must be true or false")
    return value


_TIMEZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+){0,2}")


def valid_timezone_name(name: Any) -> bool:
    """Return whether ``name`` has the shape of an IANA zone ("Asia/Shanghai").

    Checked before a zone file is looked for: no absolute or parent paths,
    no trailing slash, at most 64 characters.
    """
    return (
        isinstance(name, str)
        and len(name) <= 64
        and _TIMEZONE_NAME.fullmatch(name) is not None
    )


@functools.lru_cache(maxsize=64)
def _known_zone(name: str) -> ZoneInfo:
    """Return the zone ``name`` (a valid name); raise ``IntentFilterError`` if unknown.

    Only found zones are kept (``lru_cache`` keeps no exception), so an unknown
    name is looked for again each time, as before.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise IntentFilterError(f"unknown timezone {name!r}") from None


# Zones found by a valid name (at most 64, as ``_known_zone`` keeps): a name
# found here was checked when it was kept.
_zones: dict[str, ZoneInfo] = {}


def _zone(name: Any) -> ZoneInfo:
    if type(name) is str and (zone := _zones.get(name)) is not None:
        return zone
    if not valid_timezone_name(name):
        raise IntentFilterError("timezone must be an IANA time zone name")
    zone = _known_zone(name)
    if len(_zones) >= 64:
        _zones.clear()
    _zones[name] = zone
    return zone


def parse_request(request: Any, default_timezone: str) -> Request:
    """Validate a §4.4 request body; raise ``IntentFilterError``."""
    if not isinstance(request, _MAPPINGS):
        raise IntentFilterError("the request body must be a JSON object")
    command = request.get("command")
    if not isinstance(command, str) or not command.strip():
        raise IntentFilterError("command is required and must be a non-empty string")
    if len(command) > MAX_COMMAND_LENGTH:
        raise IntentFilterError(
            f"command is longer than {MAX_COMMAND_LENGTH} characters"
        )
    try:
        untrusted.text(
            command, "command", max_length=MAX_COMMAND_LENGTH, multiline=True
        )
    except untrusted.UntrustedInputError as err:
        raise IntentFilterError(str(err)) from None
    if "intent_catalog" not in request:
        raise IntentFilterError("intent_catalog is required")
    raw_options = request.get("options")
    if raw_options is None:
        raw_options = {}
    if not isinstance(raw_options, _MAPPINGS):
        raise IntentFilterError("options must be an object")
    options = dict(DEFAULT_OPTIONS)
    for key, default in DEFAULT_OPTIONS.items() if raw_options else ():
        if key in _OPTION_RANGES:
            value = raw_options.get(key, default)
            low, high = _OPTION_RANGES[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not low <= value <= high
            ):
                raise IntentFilterError(
                    f"options.{key} must be an integer from {low} to {high}"
                )
            options[key] = value
        elif key == "min_confidence":
            value = raw_options.get(key, default)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= 1
            ):
                raise IntentFilterError(
                    "options.min_confidence must be a number from 0 to 1"
                )
            options[key] = float(value)
        else:
            options[key] = _bool_option(raw_options, key)
    request_id = request.get("request_id")
    if request_id is not None and (
        not isinstance(request_id, str) or len(request_id) > 128
    ):
        raise IntentFilterError("request_id must be a string of at most 128 characters")
    tz_name = request.get("timezone") or default_timezone
    zone = _zone(tz_name)
    now_raw = request.get("now")
    if now_raw is None:
        now = datetime.now(zone)
    else:
        if not isinstance(now_raw, str):
            raise IntentFilterError("now must be an ISO 8601 date and time")
        try:
            parsed = datetime.fromisoformat(now_raw)
        except ValueError:
            raise IntentFilterError(
                f"now {now_raw!r} is not an ISO 8601 date and time"
            ) from None
        if not _EARLIEST <= parsed.replace(tzinfo=None) <= _LATEST:
            raise IntentFilterError(
                f"now {now_raw!r} is too close to the ends of the calendar "
                f"(from {_EARLIEST.date()} to {_LATEST.date()})"
            )
        # Within the range, a conversion (offsets under a day) cannot overflow.
        now = (
            parsed.replace(tzinfo=zone)
            if parsed.tzinfo is None
            else parsed.astimezone(zone)
        )
    locale = request.get("locale")
    if locale is not None and (
        not isinstance(locale, str) or (locale := normalize_locale(locale)) is None
    ):
        raise IntentFilterError(
            "locale must be one of zh-CN, zh-TW, en-US, ja-JP, ko-KR"
        )
    return Request(  # positional (in field order): cheaper than by keyword
        request_id or f"ifr_{_RUN_ID}{next(_request_numbers):x}",
        command,
        request["intent_catalog"],
        options,
        now,
        tz_name,
        locale,
    )
