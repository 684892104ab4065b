"""Soul's HTTP API under ``/api/soul/v1`` (Home Assistant authentication required)."""

from __future__ import annotations

from http import HTTPStatus
import json
from typing import Any

from aiohttp import web
from homeassistant.components.http import KEY_HASS, HomeAssistantView
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util

from .core.chat import ChatError
from .core.emotion import analyze_emotion
from .core.intent_filter import IntentFilterError, filter_intents
from .core.souls import NoSoulError, SoulError, validate_soul_fields
from .runtime import SoulConfigEntry
from .services import find_loaded_entry, find_soul

MAX_TEXT = 4096

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


def _loaded(hass: HomeAssistant) -> SoulConfigEntry:
    """Return the loaded hub entry or raise ``_NotLoadedError``."""
    if (entry := find_loaded_entry(hass)) is None:
        raise _NotLoadedError
    return entry


class _NotLoadedError(Exception):
    """Soul is not loaded."""


async def _json_object(request: web.Request) -> dict[str, Any]:
    """Return the request's JSON object, or raise ``ValueError`` with a message."""
    body = await _json_body(request)
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")  # noqa: TRY004
    return body


def _required_str(body: dict[str, Any], key: str) -> str:
    if not isinstance(value := body.get(key), str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value or None


class SoulsView(HomeAssistantView):
    """``GET /api/soul/v1/souls`` lists souls; ``POST`` creates one (§4.1).

    ``GET`` takes an optional ``user_id`` query parameter. ``POST`` takes
    ``name`` and ``mbti_type`` (and optionally ``persona`` and ``user_id``,
    which defaults to the calling Home Assistant user); it answers 201 with the
    soul, which is a new subentry of the Soul hub.
    """

    url = "/api/soul/v1/souls"
    name = "api:soul:souls"
    requires_auth = True

    async def get(self, request: web.Request) -> web.Response:
        """List the souls, optionally those of one user."""
        from .souls import soul_as_dict  # noqa: PLC0415

        try:
            entry = _loaded(request.app[KEY_HASS])
        except _NotLoadedError:
            return _error("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
        hub = entry.runtime_data.souls
        user_id = request.query.get("user_id")
        souls = [
            soul_as_dict(hub, soul)
            for soul in hub.souls.values()
            if user_id is None or soul.user_id == user_id
        ]
        return self.json({"souls": souls})

    async def post(self, request: web.Request) -> web.Response:
        """Create a soul."""
        from .souls import async_add_soul, soul_as_dict  # noqa: PLC0415

        hass = request.app[KEY_HASS]
        try:
            body = await _json_object(request)
            validate_soul_fields(
                body.get("name"), body.get("mbti_type"), body.get("persona")
            )
            user_id = _optional_str(body, "user_id")
            entry = _loaded(hass)
        except (ValueError, SoulError) as err:
            return _error(str(err))
        except _NotLoadedError:
            return _error("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
        if user_id is None and (user := request.get("hass_user")) is not None:
            user_id = user.id
        soul = async_add_soul(
            hass,
            entry,
            name=body["name"],
            mbti=body["mbti_type"],
            persona=body.get("persona"),
            user_id=user_id,
        )
        return self.json(
            soul_as_dict(entry.runtime_data.souls, soul), HTTPStatus.CREATED
        )


class SelectSoulView(HomeAssistantView):
    """``POST /api/soul/v1/souls/select``: bind a terminal to a soul (§4.1).

    Body: ``terminal_id`` (the body may not have connected yet) and
    ``soul_id`` (a soul's id, or the name of exactly one soul).
    """

    url = "/api/soul/v1/souls/select"
    name = "api:soul:souls:select"
    requires_auth = True

    async def post(self, request: web.Request) -> web.Response:
        """Bind the terminal."""
        from .souls import soul_as_dict  # noqa: PLC0415

        try:
            body = await _json_object(request)
            terminal_id = _required_str(body, "terminal_id")
            soul_key = _required_str(body, "soul_id")
            entry = _loaded(request.app[KEY_HASS])
        except ValueError as err:
            return _error(str(err))
        except _NotLoadedError:
            return _error("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
        hub = entry.runtime_data.souls
        if (soul := find_soul(hub, soul_key)) is None:
            return _error(f"unknown soul_id {soul_key!r}", HTTPStatus.NOT_FOUND)
        try:
            hub.bind(terminal_id, soul.soul_id)
        except SoulError as err:
            return _error(str(err))
        return self.json({"terminal_id": terminal_id, "soul": soul_as_dict(hub, soul)})


class EmotionAnalyzeView(HomeAssistantView):
    """``POST /api/soul/v1/emotion/analyze``: recognise the emotion of a text.

    Body ``{"text": …}`` → ``{"emotion", "p", "a", "d", "intensity"}``. Soul's
    extension: with ``terminal_id`` (and optional ``session_id``) the text
    counts as that body's user turn — its soul's emotion moves, an
    ``emotion_update`` is published, and the response adds ``soul_emotion``,
    ``exec_probability`` and ``exec_mode``.
    """

    url = "/api/soul/v1/emotion/analyze"
    name = "api:soul:emotion:analyze"
    requires_auth = True

    async def post(self, request: web.Request) -> web.Response:
        """Analyse one text."""
        try:
            body = await _json_object(request)
            text = _required_str(body, "text")
            if len(text) > MAX_TEXT:
                return _error(f"text must be at most {MAX_TEXT} characters")
            terminal_id = _optional_str(body, "terminal_id")
            session_id = _optional_str(body, "session_id") or "emotion_analyze"
        except ValueError as err:
            return _error(str(err))
        if terminal_id is None:
            return self.json(analyze_emotion(text))
        try:
            entry = _loaded(request.app[KEY_HASS])
            user_emotion, snapshot = await entry.runtime_data.souls.user_turn(
                terminal_id, text, session_id
            )
        except _NotLoadedError:
            return _error("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
        except NoSoulError as err:
            return _error(str(err))
        return self.json(
            {
                **user_emotion,
                "soul_id": snapshot.soul_id,
                "soul_emotion": snapshot.soul_emotion(),
                "exec_probability": snapshot.exec_probability,
                "exec_mode": snapshot.exec_mode.value,
            }
        )


class ChatView(HomeAssistantView):
    """``POST /api/soul/v1/chat``: one chat turn (§4.2).

    The body is a §4.2.1 request; ``user_id`` defaults to the calling Home
    Assistant user. Refusals are 400 ``{"error": …}`` as in §4.3.
    """

    url = "/api/soul/v1/chat"
    name = "api:soul:chat"
    requires_auth = True

    async def post(self, request: web.Request) -> web.Response:
        """Run the turn."""
        try:
            body = await _json_object(request)
            entry = _loaded(request.app[KEY_HASS])
        except ValueError as err:
            return web.json_response({"error": str(err)}, status=HTTPStatus.BAD_REQUEST)
        except _NotLoadedError:
            return web.json_response(
                {"error": "Soul is not set up"}, status=HTTPStatus.SERVICE_UNAVAILABLE
            )
        if (
            body.get("user_id") is None
            and (user := request.get("hass_user")) is not None
        ):
            body["user_id"] = user.id
        try:
            response = await entry.runtime_data.chat.chat(body)
        except ChatError as err:
            return web.json_response({"error": str(err)}, status=HTTPStatus.BAD_REQUEST)
        return self.json(response)


@callback
def async_register_views(hass: HomeAssistant) -> None:
    """Register Soul's HTTP views (once; views outlive config entries)."""
    hass.http.register_view(IntentFilterView())
    hass.http.register_view(SoulsView())
    hass.http.register_view(SelectSoulView())
    hass.http.register_view(EmotionAnalyzeView())
    hass.http.register_view(ChatView())
