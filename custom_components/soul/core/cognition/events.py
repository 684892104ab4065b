"""The event journal's events (XingChen-V §2.1) and the bus that carries them.

Every soul-level happening is an ``Event``: the spec's ``trace_id``, ``type``,
``source``, ``payload`` and ``meta`` (``timestamp`` in Unix seconds and the
``psyche_state`` of the soul at that moment), plus the indexed ``soul_id``,
``session_id`` and ``terminal_id``. One ``trace_id`` (UUID4) is shared by
every event of a user turn. An event of one user's session also keeps that
``user_id`` (stored, not shown): on a soul shared by every user, a user reads
only their own sessions' events (``shared_soul_readable``).

``EventBus.emit`` is what the rest of Soul calls: it never blocks and never
raises; it hands the event to the journal (``Journal.append``, a put on a
queue) and to live listeners (the WebSocket stream, the logbook's bus events).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
import math
from typing import Any, Protocol

from .. import untrusted
from ..logs import trace_logger
from ..random_ids import uuid4_text

_LOGGER = trace_logger(__name__)

MAX_QUERY_LIMIT = 500
DEFAULT_QUERY_LIMIT = 100
MAX_ID = 128  # a soul, session or trace id in a query
MAX_EVENT_TYPES = 16  # names in a query's type list (duplicates allowed)
MAX_EVENT_ID = 2**63 - 1  # SQLite's largest INTEGER: a ``before`` cursor's range


class EventType(StrEnum):
    """The five event types of §2.2."""

    USER_INPUT = "user_input"
    DRIVER_RESPONSE = "driver_response"
    NAVIGATOR_SUGGESTION = "navigator_suggestion"
    PSYCHE_UPDATE = "psyche_update"
    SYSTEM_NOTIFICATION = "system_notification"


class Source(StrEnum):
    """Who produced an event (§2.1 ``source``)."""

    USER = "user"
    DRIVER = "driver"
    NAVIGATOR = "navigator"
    PSYCHE = "psyche"
    SYSTEM = "system"


def new_trace_id() -> str:
    """Return a new trace id (UUID4, §2.1)."""
    return uuid4_text()


@dataclass(frozen=True, slots=True)
class Event:
    """One journal event (§2.1), with Soul's indexed ids."""

    trace_id: str
    type: EventType
    source: Source
    payload: Mapping[str, Any]
    timestamp: float
    psyche_state: Mapping[str, Any] | None = None
    soul_id: str | None = None
    session_id: str | None = None
    terminal_id: str | None = None
    # The Home Assistant user whose session this event belongs to (None: no one's).
    user_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the event in the spec's JSON shape, with the indexed ids."""
        return {
            "trace_id": self.trace_id,
            "type": self.type.value,
            "source": self.source.value,
            "payload": dict(self.payload),
            "meta": {
                "timestamp": self.timestamp,
                "psyche_state": (
                    dict(self.psyche_state) if self.psyche_state is not None else None
                ),
            },
            "soul_id": self.soul_id,
            "session_id": self.session_id,
            "terminal_id": self.terminal_id,
        }


@dataclass(frozen=True, slots=True)
class EventQuery:
    """A read of the journal: filters, newest first, ``limit`` at a time.

    ``soul_ids`` limits the result to those souls (None: every soul, for
    administrators); the souls of ``shared_soul_ids`` are read as
    ``reader_id`` (``shared_soul_readable``). ``before_id`` continues a page
    (the ``next`` cursor of the previous one). ``since``/``until`` are Unix
    seconds, inclusive.
    """

    soul_ids: frozenset[str] | None = None
    shared_soul_ids: frozenset[str] = frozenset()
    reader_id: str | None = None
    session_id: str | None = None
    trace_id: str | None = None
    types: frozenset[EventType] | None = None
    since: float | None = None
    until: float | None = None
    limit: int = DEFAULT_QUERY_LIMIT
    before_id: int | None = None


def shared_soul_readable(
    user_id: str | None, session_id: str | None, reader_id: str | None
) -> bool:
    """Return whether a user reads an event of a soul every user shares.

    Their own sessions' events, and events of no session (a body online, a
    server failing); never another user's conversation, nor a session's event
    that names no user. ``journal_sql.select_page`` asks the same in SQL.
    """
    if user_id is None:
        return session_id is None
    return user_id == reader_id


@dataclass(frozen=True, slots=True)
class EventPage:
    """A page of stored events (``as_dict()`` shapes plus their ``id``), newest first.

    ``next`` is the ``before_id`` of the following page, None on the last.
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    next: int | None = None


class Journal(Protocol):
    """Where events are kept (``journal.SqliteJournal``, or nothing)."""

    def append(self, event: Event) -> None:
        """Queue the event for storage; never block, never raise."""


class EventBus:
    """Hands every event to the journal and to live listeners."""

    def __init__(self, journal: Journal | None = None) -> None:
        """Start with ``journal`` (None: events are only streamed)."""
        self.journal = journal
        self._listeners: list[Callable[[Event], None]] = []

    @property
    def listener_count(self) -> int:
        """Return how many live listeners are subscribed."""
        return len(self._listeners)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` with every event from now on; return the unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        """Journal and stream one event; a failing listener is logged, not raised."""
        if self.journal is not None:
            try:
                self.journal.append(event)
            except Exception:
                _LOGGER.exception("The event journal refused an event")
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                _LOGGER.exception("Error in an event listener")


def parse_time(value: Any, what: str) -> float | None:
    """Return Unix seconds from a number or an ISO 8601 text (with or without Z)."""
    if value is None or value == "":
        return None
    wrong = f"{what} must be Unix seconds or an ISO 8601 time"
    text = str(value).strip()
    # float reads "１０" and "1_0" as 10: a time is ASCII without "_".
    if isinstance(value, bool) or len(text) > 64 or not text.isascii() or "_" in text:
        raise ValueError(wrong)
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(wrong) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    if not math.isfinite(seconds):
        raise ValueError(wrong)
    return seconds


def _whole(value: Any) -> int:
    """Return a whole number given as one or as ASCII digits; raise ``ValueError``.

    ``int`` also reads "１０", " 10 " and "1_0".
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ValueError(value)


def _id(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    return untrusted.text(value, what, max_length=MAX_ID)


def parse_query(params: Mapping[str, Any]) -> EventQuery:
    """Return the ``EventQuery`` of untrusted parameters; raise ``ValueError``.

    ``soul_id``, ``session_id``, ``trace_id``, ``type`` (one type, or several
    separated by commas, or a list), ``since``/``until`` (Unix seconds or ISO
    8601), ``limit`` (1-500, default 100) and ``before`` (a page's ``next``:
    1 to ``MAX_EVENT_ID``).
    """
    raw_types = params.get("type")
    names: list[Any] = (
        list(raw_types)
        if isinstance(raw_types, list | tuple)
        else str(raw_types).split(",")
        if raw_types not in (None, "")
        else []
    )
    if len(names) > MAX_EVENT_TYPES:
        raise ValueError(f"type names at most {MAX_EVENT_TYPES} types")
    try:
        types = frozenset(EventType(str(name).strip()) for name in names)
    except ValueError:
        known = ", ".join(t.value for t in EventType)
        raise ValueError(f"type must be one of {known}") from None
    soul_id = _id(params.get("soul_id"), "soul_id")
    limit_raw = params.get("limit", DEFAULT_QUERY_LIMIT)
    before_raw = params.get("before")
    try:
        limit = _whole(limit_raw)
        before = _whole(before_raw) if before_raw not in (None, "") else None
    except (TypeError, ValueError):
        raise ValueError("limit and before must be whole numbers") from None
    if not 1 <= limit <= MAX_QUERY_LIMIT:
        raise ValueError(f"limit must be 1 to {MAX_QUERY_LIMIT}")
    if before is not None and not 1 <= before <= MAX_EVENT_ID:
        raise ValueError("before must be the next of a previous page")
    return EventQuery(
        soul_ids=frozenset({soul_id}) if soul_id else None,
        session_id=_id(params.get("session_id"), "session_id"),
        trace_id=_id(params.get("trace_id"), "trace_id"),
        types=types or None,
        since=parse_time(params.get("since"), "since"),
        until=parse_time(params.get("until"), "until"),
        limit=limit,
        before_id=before,
    )
