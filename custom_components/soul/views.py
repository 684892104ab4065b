"""Soul's HTTP API under ``/api/soul/v1`` (Home Assistant authentication required)."""

from __future__ import annotations

from http import HTTPStatus
import json
from typing import Any

from aiohttp import web
from homeassistant.components.http import KEY_HASS, HomeAssistantView
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util

from .core.intent_filter import IntentFilterError, filter_intents
from .services import find_loaded_entry

MAX_BODY = 512 * 1024  # a catalog of 256 intents fits comfortably


def _error(message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> web.Response:
    return web.json_response({"message": message}, status=status)


async def _json_body(request: web.Request) -> Any:
    """Return the request's JSON, or raise ``ValueError`` with a message."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ValueError(f"request body larger than {MAX_BODY} bytes")
    raw = await request.content.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise ValueError(f"request body larger than {MAX_BODY} bytes")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"request body is not valid JSON: {err}") from None


class IntentFilterView(HomeAssistantView):
    """``POST /api/soul/v1/intents/filter``: the §4.4 intent filter.

    The body is a §4.4.1 request. Soul's extensions: ``now``, ``timezone``
    (default: Home Assistant's), ``locale``, and ``terminal_id`` — with it the
    terminal's cached ``intent_catalog`` is used when the body has none, and the
    decision is recorded on the terminal.
    """

    url = "/api/soul/v1/intents/filter"
    name = "api:soul:intents:filter"
    requires_auth = True

    async def post(self, request: web.Request) -> web.Response:
        """Filter one command."""
        hass = request.app[KEY_HASS]
        try:
            body = await _json_body(request)
        except ValueError as err:
            return _error(str(err))
        if not isinstance(body, dict):
            return _error("the request body must be a JSON object")
        tz_name = body.get("timezone") or hass.config.time_zone
        if isinstance(tz_name, str):
            # Loads the zone file in the executor once; the engine then finds it cached.
            await dt_util.async_get_time_zone(tz_name)
        terminal_id = body.get("terminal_id")
        try:
            if terminal_id is None:
                response = filter_intents(body, default_timezone=hass.config.time_zone)
            else:
                if not isinstance(terminal_id, str):
                    return _error("terminal_id must be a string")
                if (entry := find_loaded_entry(hass)) is None:
                    return _error("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
                response = entry.runtime_data.registry.filter_command(
                    terminal_id, body, default_timezone=hass.config.time_zone
                )
        except IntentFilterError as err:
            return _error(str(err))
        return self.json(response)


@callback
def async_register_views(hass: HomeAssistant) -> None:
    """Register Soul's HTTP views (once; views outlive config entries)."""
    hass.http.register_view(IntentFilterView())
