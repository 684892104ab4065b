"""Soul's HTTP API under ``/api/soul/v1`` (Home Assistant authentication required).

Every failure is a JSON answer ``{"error": message}`` (§4.3's shape, for
every view) with a documented code (docs/security.md):
400 for invalid input, 401 without a valid token (Home Assistant's), 403 for
what only an administrator may do, for acting for another user, on another
user's session or as a read-only user, 404 for an unknown soul (or a chat
on an unknown terminal without a soul), 409 for a chat whose ``soul_id`` is
not the terminal's soul, 413 for a body over 512 KiB, 429 when a user who
is not an administrator already has ``helpers.MAX_IN_FLIGHT`` requests to
these views in progress, 503 while Soul is not set up or its event journal
cannot be read. Bodies are read whole
up to the limit, decoded as strict UTF-8 JSON without lone surrogates and at
most 32 levels deep; large ones are decoded in the executor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import DecompressSizeError, HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from homeassistant.components.http import KEY_HASS, KEY_HASS_USER, HomeAssistantView
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util

from .access import principal_of_request
from .core import untrusted
from .core.access import AccessError
from .core.chat_request import ChatError, refuse_private_soul
from .core.cognition.events import parse_query
from .core.emotion import analyze_emotion
from .core.intent_filter import (
    IntentFilterError,
    cached_catalog,
    filter_intents,
    valid_timezone_name,
)
from .core.soul import MAX_NAME_LENGTH, NoSoulError, SoulError, validate_soul_fields
from .helpers import find_loaded_entry, find_soul, request_in_flight
from .journal import JournalReadError, async_read_events_json
from .models import SoulConfigEntry
from .souls import async_add_soul, soul_as_dict

MAX_TEXT = 4096
MAX_ID = 128
MAX_BODY = 512 * 1024  # a catalog of 256 intents fits comfortably


class _HttpError(Exception):
    """An answer other than 200: a status and a message.

    ``close``: the body could not be read, so the connection ends after the
    answer (aiohttp would otherwise read the broken body again).
    """

    def __init__(
        self,
        message: str,
        status: HTTPStatus = HTTPStatus.BAD_REQUEST,
        *,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.close = close


def _error(message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> web.Response:
    return web.json_response({"error": message}, status=status)


type _Handler = Callable[..., Awaitable[web.Response]]


async def _answered(
    handler: _Handler, view: HomeAssistantView, request: web.Request, *args: Any
) -> web.Response:
    """Return the handler's answer, its errors as JSON answers."""
    try:
        return await handler(view, request, *args)
    except _HttpError as err:
        response = _error(str(err), err.status)
        if err.close:
            response.force_close()
        return response
    except AccessError as err:
        return _error(str(err), HTTPStatus.FORBIDDEN)
    except ChatError as err:  # a ValueError with a status of its own
        return _error(str(err), HTTPStatus(err.status))
    except (untrusted.UntrustedInputError, ValueError) as err:
        return _error(str(err), HTTPStatus.BAD_REQUEST)


def _answers() -> Callable[[_Handler], _Handler]:
    """Turn the errors of a handler into JSON answers (``{"error": message}``)."""

    def decorate(handler: _Handler) -> _Handler:
        @wraps(handler)
        async def answer(
            view: HomeAssistantView, request: web.Request, *args: Any
        ) -> web.Response:
            hass = request.app[KEY_HASS]
            with request_in_flight(
                hass, request.get(KEY_HASS_USER), rated=request.method != "GET"
            ) as refused:
                if refused is not None:
                    return _error(refused, HTTPStatus.TOO_MANY_REQUESTS)
                return await _answered(handler, view, request, *args)

        return answer

    return decorate


async def _json_body(request: web.Request) -> Any:
    """Return the request's JSON, read whole (up to ``MAX_BODY``)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise _HttpError(
            f"request body larger than {MAX_BODY} bytes",
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        )
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_any():
            size += len(chunk)
            if size > MAX_BODY:
                raise _HttpError(
                    f"request body larger than {MAX_BODY} bytes",
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                )
            chunks.append(chunk)
    except (HttpProcessingError, RequestPayloadError) as err:
        # A body its Content-Encoding does not describe (bad gzip, a bomb, …):
        # nothing more is read from it, and the connection ends after the answer.
        request.content.feed_eof()
        if isinstance(err.__cause__ or err, DecompressSizeError):
            raise _HttpError(
                f"request body larger than {MAX_BODY} bytes once decompressed",
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                close=True,
            ) from None
        raise _HttpError(
            "the request body cannot be read (its Content-Encoding does not match it)",
            close=True,
        ) from None
    return await untrusted.loads_off_loop(
        b"".join(chunks),
        request.app[KEY_HASS].async_add_executor_job,
        max_bytes=MAX_BODY,
        what="request body",
    )


async def _json_object(request: web.Request) -> dict[str, Any]:
    """Return the request's JSON object."""
    body = await _json_body(request)
    if not isinstance(body, dict):
        raise _HttpError("the request body must be a JSON object")
    return body


def _loaded(hass: HomeAssistant) -> SoulConfigEntry:
    """Return the loaded hub entry, or answer 503."""
    if (entry := find_loaded_entry(hass)) is None:
        raise _HttpError("Soul is not set up", HTTPStatus.SERVICE_UNAVAILABLE)
    return entry


def _required_str(body: dict[str, Any], key: str, max_length: int = MAX_ID) -> str:
    if not isinstance(value := body.get(key), str) or not value.strip():
        raise _HttpError(f"{key} must be a non-empty string")
    return untrusted.text(value, key, max_length=max_length)


def _optional_str(
    body: dict[str, Any], key: str, max_length: int = MAX_ID
) -> str | None:
    return untrusted.optional_text(body.get(key), key, max_length=max_length)


class IntentFilterView(HomeAssistantView):
    """``POST /api/soul/v1/intents/filter``: the §4.4 intent filter.

    The body is a §4.4.1 request. Soul's extensions: ``now``, ``timezone``
    (default: Home Assistant's), ``locale``, and ``terminal_id`` — with it the
    terminal's cached ``intent_catalog`` is used when the body has none, and the
    decision is recorded on the terminal (not for read-only users). A catalog
    in the body is compiled in the executor.
    """

    url = "/api/soul/v1/intents/filter"
    name = "api:soul:intents:filter"
    requires_auth = True

    @_answers()
    async def post(self, request: web.Request) -> web.Response:
        """Filter one command."""
        hass = request.app[KEY_HASS]
        principal = principal_of_request(request)
        body = await _json_object(request)
        tz_name = body.get("timezone") or hass.config.time_zone
        if not valid_timezone_name(tz_name):
            raise _HttpError("timezone must be an IANA time zone name")
        # Loads the zone file in the executor once; the engine then finds it cached.
        await dt_util.async_get_time_zone(tz_name)
        try:
            compiled = None
            if (entries := body.get("intent_catalog")) is not None:
                compiled, _cached = await hass.async_add_executor_job(
                    cached_catalog, entries
                )
            terminal_id = body.get("terminal_id")
            if terminal_id is None:
                return self.json(
                    filter_intents(
                        body, default_timezone=hass.config.time_zone, compiled=compiled
                    )
                )
            if not isinstance(terminal_id, str):
                raise _HttpError("terminal_id must be a string")
            principal.require_control("record a decision on a body")
            response = _loaded(hass).runtime_data.registry.filter_command(
                terminal_id, body, default_timezone=hass.config.time_zone
            )
        except IntentFilterError as err:
            raise _HttpError(str(err)) from None
        return self.json(response)


class SoulsView(HomeAssistantView):
    """``GET /api/soul/v1/souls`` lists souls; ``POST`` creates one (§4.1).

    ``GET`` lists the caller's souls and the shared ones (no owner), as §4.1
    says ("the user's souls"); an administrator may ask for another user's
    with ``?user_id=`` or for every soul with ``?all=true``. ``POST`` is for
    administrators: ``name`` and ``mbti_type`` (and optionally ``persona`` and
    ``user_id``, which defaults to the caller); it answers 201 with the soul,
    a new subentry of the Soul hub.
    """

    url = "/api/soul/v1/souls"
    name = "api:soul:souls"
    requires_auth = True

    @_answers()
    async def get(self, request: web.Request) -> web.Response:
        """List the souls the caller may see."""
        principal = principal_of_request(request)
        entry = _loaded(request.app[KEY_HASS])
        hub = entry.runtime_data.souls
        requested = untrusted.optional_text(
            request.query.get("user_id"), "user_id", max_length=MAX_ID
        )
        user_id = principal.acting_for(requested)
        every = request.query.get("all", "").lower() in ("1", "true", "yes")
        if every:
            principal.require_admin("list every user's souls")
        souls = [
            soul_as_dict(hub, soul)
            for soul in hub.souls.values()
            if every
            or soul.user_id == user_id
            or (soul.user_id is None and requested is None)
        ]
        return self.json({"souls": souls})

    @_answers()
    async def post(self, request: web.Request) -> web.Response:
        """Create a soul."""
        hass = request.app[KEY_HASS]
        principal = principal_of_request(request)
        principal.require_admin("create souls")
        body = await _json_object(request)
        try:
            validate_soul_fields(
                body.get("name"), body.get("mbti_type"), body.get("persona")
            )
            user_id = _optional_str(body, "user_id") or principal.user_id
            entry = _loaded(hass)
            soul = async_add_soul(
                hass,
                entry,
                name=body["name"],
                mbti=body["mbti_type"],
                persona=body.get("persona"),
                user_id=user_id,
            )
        except SoulError as err:
            raise _HttpError(str(err)) from None
        return self.json(
            soul_as_dict(entry.runtime_data.souls, soul), HTTPStatus.CREATED
        )


class SelectSoulView(HomeAssistantView):
    """``POST /api/soul/v1/souls/select``: bind a terminal to a soul (§4.1).

    For administrators. Body: ``terminal_id`` (the body may not have
    connected yet) and ``soul_id`` (a soul's id, or the name of exactly one
    soul).
    """

    url = "/api/soul/v1/souls/select"
    name = "api:soul:souls:select"
    requires_auth = True

    @_answers()
    async def post(self, request: web.Request) -> web.Response:
        """Bind the terminal."""
        principal_of_request(request).require_admin("bind bodies to souls")
        body = await _json_object(request)
        terminal_id = _required_str(body, "terminal_id")
        soul_key = _required_str(body, "soul_id", MAX_NAME_LENGTH * 2)
        entry = _loaded(request.app[KEY_HASS])
        hub = entry.runtime_data.souls
        if (soul := find_soul(hub, soul_key)) is None:
            raise _HttpError(f"unknown soul_id {soul_key!r}", HTTPStatus.NOT_FOUND)
        try:
            hub.bind(terminal_id, soul.soul_id)
        except SoulError as err:
            raise _HttpError(str(err)) from None
        return self.json({"terminal_id": terminal_id, "soul": soul_as_dict(hub, soul)})


class EmotionAnalyzeView(HomeAssistantView):
    """``POST /api/soul/v1/emotion/analyze``: recognise the emotion of a text.

    Body ``{"text": …}`` → ``{"emotion", "p", "a", "d", "intensity"}``. Soul's
    extension: with ``terminal_id`` (and optional ``session_id``) the text
    counts as that body's user turn — its soul's emotion moves, an
    ``emotion_update`` is published, and the response adds ``soul_emotion``,
    ``exec_probability`` and ``exec_mode`` (not for read-only users). A
    ``session_id`` is refused as in a chat turn: another user's session (403),
    or one of the panel's or Star's (400).
    """

    url = "/api/soul/v1/emotion/analyze"
    name = "api:soul:emotion:analyze"
    requires_auth = True

    @_answers()
    async def post(self, request: web.Request) -> web.Response:
        """Analyse one text."""
        principal = principal_of_request(request)
        body = await _json_object(request)
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _HttpError("text must be a non-empty string")
        if len(text) > MAX_TEXT:
            raise _HttpError(f"text must be at most {MAX_TEXT} characters")
        untrusted.text(text, "text", max_length=MAX_TEXT, multiline=True)
        terminal_id = _optional_str(body, "terminal_id")
        session_id = _optional_str(body, "session_id")
        if terminal_id is None:
            return self.json(analyze_emotion(text))
        principal.require_control("move a soul's emotion")
        entry = _loaded(request.app[KEY_HASS])
        if session_id is None:
            session_id = "emotion_analyze"
        else:  # a chat session's id is its user's, as in a chat turn
            entry.runtime_data.chat.check_session(session_id, principal.user_id)
        if (soul := entry.runtime_data.souls.soul_of(terminal_id)) is not None:
            refuse_private_soul(principal, terminal_id, soul.user_id)
        try:
            user_emotion, snapshot = await entry.runtime_data.souls.user_turn(
                terminal_id, text, session_id, user_id=principal.user_id
            )
        except NoSoulError as err:
            raise _HttpError(str(err)) from None
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

    The body is a §4.2.1 request; ``user_id`` is the caller (an administrator
    may name another user). A session belongs to its user. Refusals are
    ``{"error": …}``: 400 as in §4.3, 403 for another user's session or a
    read-only caller, 404 for an unknown ``soul_id`` or an unknown terminal
    without a soul, 409 for a ``soul_id`` other than the terminal's soul.
    """

    url = "/api/soul/v1/chat"
    name = "api:soul:chat"
    requires_auth = True

    @_answers()
    async def post(self, request: web.Request) -> web.Response:
        """Run the turn."""
        principal = principal_of_request(request)
        principal.require_control("chat with a soul")
        body = await _json_object(request)
        entry = _loaded(request.app[KEY_HASS])
        requested = untrusted.optional_text(
            body.get("user_id"), "user_id", max_length=MAX_ID
        )
        body["user_id"] = principal.acting_for(requested)
        return self.json(await entry.runtime_data.chat.chat(body, caller=principal))


class EventsView(HomeAssistantView):
    """``GET /api/soul/v1/events``: the event journal, newest first (XingChen-V §2).

    Query: ``soul_id``, ``session_id``, ``trace_id``, ``type`` (comma-separated),
    ``since``/``until`` (Unix seconds or ISO 8601), ``limit`` (1-500, 100) and
    ``before`` (the ``next`` of the previous page). A user reads their own
    souls' events and, on a shared soul, their own sessions' (``journal.scoped``);
    an administrator every soul's. Answers
    ``{"events": [...], "next": id | null}``; without a journal, no events;
    503 when the journal cannot be read now. The page is read and encoded
    in the executor (500 events of up to 64 KiB each).
    """

    url = "/api/soul/v1/events"
    name = "api:soul:events"
    requires_auth = True

    @_answers()
    async def get(self, request: web.Request) -> web.Response:
        """Read a page of events."""
        hass = request.app[KEY_HASS]
        principal = principal_of_request(request)
        query = parse_query(request.query)
        entry = _loaded(hass)
        runtime = entry.runtime_data
        try:
            body = await async_read_events_json(
                hass, runtime.journal, runtime.souls, principal, query
            )
        except JournalReadError as err:
            raise _HttpError(str(err), HTTPStatus.SERVICE_UNAVAILABLE) from None
        return web.Response(body=body, content_type="application/json")


@callback
def async_register_views(hass: HomeAssistant) -> None:
    """Register Soul's HTTP views (once; views outlive config entries)."""
    hass.http.register_view(IntentFilterView())
    hass.http.register_view(SoulsView())
    hass.http.register_view(SelectSoulView())
    hass.http.register_view(EmotionAnalyzeView())
    hass.http.register_view(ChatView())
    hass.http.register_view(EventsView())
