"""The event journal in Home Assistant (docs/cognition.md).

``async_open_journal`` opens ``<config>/soul_journal.db`` in the executor and
returns the hub's ``EventBus``; when the file cannot be used (corrupt, locked,
not a database) a repair issue says so and Soul goes on without the journal
(events are still streamed). A failure later, reported from the writer
thread, raises the same issue. ``async_read_events`` reads a page for a
``Principal`` (``scoped``): users see their own souls' events and, on a
shared soul, their own sessions' and those of no session; administrators
every soul's; a soul's inner voice is for administrators only. The read, the
blanking and (``async_read_events_json``) the JSON of a page, which may reach
500 payloads of 64 KiB, run in the executor; a journal that cannot be read
now raises ``JournalReadError`` (HTTP 503, WebSocket ``journal_unavailable``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.json import json_bytes

from .const import (
    CONF_JOURNAL_DAYS,
    CONF_JOURNAL_MB,
    DOMAIN,
    ISSUE_JOURNAL_UNAVAILABLE,
    JOURNAL_FILE,
    LOGGER,
)
from .core.access import Principal
from .core.cognition.events import (
    Event,
    EventBus,
    EventPage,
    EventQuery,
    EventType,
    shared_soul_readable,
)
from .core.cognition.journal import JournalError, SqliteJournal
from .core.souls import SoulHub
from .helpers import now_timestamp
from .number_options import number_option


async def async_open_journal(
    hass: HomeAssistant, options: Any
) -> tuple[EventBus, SqliteJournal | None]:
    """Open the journal (executor) and return the bus that feeds it."""
    path = hass.config.path(JOURNAL_FILE)

    def failed(err: Exception) -> None:  # the writer thread
        hass.loop.call_soon_threadsafe(_raise_issue, hass, path, str(err))

    try:
        journal = await hass.async_add_executor_job(
            lambda: SqliteJournal.open(
                path,
                max_age_days=float(number_option(options, CONF_JOURNAL_DAYS)),
                max_bytes=number_option(options, CONF_JOURNAL_MB) * 1024 * 1024,
                clock=now_timestamp,
                on_error=failed,
            )
        )
    except JournalError as err:
        _raise_issue(hass, path, str(err))
        return EventBus(), None
    ir.async_delete_issue(hass, DOMAIN, ISSUE_JOURNAL_UNAVAILABLE)
    return EventBus(journal), journal


def _raise_issue(hass: HomeAssistant, path: str, error: str) -> None:
    LOGGER.error("The event journal %s cannot be used: %s", path, error)
    ir.async_create_issue(
        hass,
        DOMAIN,
        ISSUE_JOURNAL_UNAVAILABLE,
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_JOURNAL_UNAVAILABLE,
        translation_placeholders={"path": path, "error": error[:300]},
    )


async def async_close_journal(
    hass: HomeAssistant, journal: SqliteJournal | None
) -> None:
    """Write what is queued and stop the writer (executor)."""
    if journal is not None:
        await hass.async_add_executor_job(journal.close)


def may_read(principal: Principal, souls: SoulHub, event: Event) -> bool:
    """Return whether ``principal`` may read ``event`` (as ``scoped`` reads the journal)."""
    if principal.is_admin:
        return True
    soul = souls.soul(event.soul_id) if event.soul_id else None
    if soul is None or not principal.sees(soul.user_id):
        return False
    return soul.user_id is not None or shared_soul_readable(
        event.user_id, event.session_id, principal.user_id
    )


def for_reader(principal: Principal, event: dict[str, Any]) -> dict[str, Any]:
    """Return a stored event as ``principal`` may read it: the inner voice is admins'.

    So is the preview of a damaged ``driver_response`` (its text may hold the
    inner voice: a fuzz of the journal's rows, 2026-11-29).
    """
    payload = event.get("payload")
    if principal.is_admin or not isinstance(payload, dict):
        return event
    if "inner_voice" in payload:
        return {**event, "payload": {**payload, "inner_voice": None}}
    if "preview" in payload and event.get("type") == EventType.DRIVER_RESPONSE:
        return {**event, "payload": {**payload, "preview": ""}}
    return event


def scoped(query: EventQuery, principal: Principal, souls: SoulHub) -> EventQuery:
    """Return ``query`` limited to what ``principal`` may read (administrators: all).

    A user reads every event of their own souls, and of the souls every user
    shares only their own sessions' (``events.shared_soul_readable``).
    """
    if principal.is_admin:
        return query
    own: set[str] = set()
    shared: set[str] = set()
    for soul_id, soul in souls.souls.items():
        if soul.user_id is None:
            shared.add(soul_id)
        elif principal.sees(soul.user_id):
            own.add(soul_id)
    if query.soul_ids is not None:
        own &= query.soul_ids
        shared &= query.soul_ids
    return replace(
        query,
        soul_ids=frozenset(own),
        shared_soul_ids=frozenset(shared),
        reader_id=principal.user_id,
    )


class JournalReadError(HomeAssistantError):
    """The journal cannot be read now (its file gone, damaged or locked)."""


def _read(
    journal: SqliteJournal | None, principal: Principal, query: EventQuery
) -> EventPage:
    """Read a page of a ``scoped`` query as ``principal`` may see it (executor)."""
    if journal is None:
        return EventPage()
    try:
        page = journal.query(query)
    except JournalError as err:
        LOGGER.warning("%s", err)
        raise JournalReadError(
            "The event journal cannot be read now; try again later",
            translation_domain=DOMAIN,
            translation_key="journal_unavailable",
        ) from None
    return EventPage([for_reader(principal, e) for e in page.events], page.next)


async def async_read_events(
    hass: HomeAssistant,
    journal: SqliteJournal | None,
    souls: SoulHub,
    principal: Principal,
    query: EventQuery,
) -> EventPage:
    """Read a page of events the caller may see (executor); empty without a journal.

    Raises ``JournalReadError`` when the journal cannot be read now.
    """
    if journal is None:
        return EventPage()
    scope = scoped(query, principal, souls)
    return await hass.async_add_executor_job(_read, journal, principal, scope)


async def async_read_events_json(
    hass: HomeAssistant,
    journal: SqliteJournal | None,
    souls: SoulHub,
    principal: Principal,
    query: EventQuery,
) -> bytes:
    """Return ``async_read_events``' page as JSON ``{"events", "next"}`` (executor)."""
    scope = scoped(query, principal, souls)

    def read() -> bytes:
        page = _read(journal, principal, scope)
        return json_bytes({"events": page.events, "next": page.next})

    return await hass.async_add_executor_job(read)
