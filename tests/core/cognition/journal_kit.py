"""Shared by the journal's tests: a clock, an event maker, an opener."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from custom_components.soul.core.cognition.events import (
    MAX_QUERY_LIMIT,
    Event,
    EventQuery,
    EventType,
    Source,
    new_trace_id,
)
from custom_components.soul.core.cognition.journal import SqliteJournal

DAY = 86400.0
START = 1_771_753_200.0


class Clock:
    """A hand-driven wall clock."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def event(
    payload: dict[str, Any] | None = None,
    *,
    kind: EventType = EventType.USER_INPUT,
    source: Source = Source.USER,
    timestamp: float = START,
    soul_id: str | None = "soul-a",
    session_id: str | None = "session-1",
    trace_id: str | None = None,
    terminal_id: str | None = "desk-1",
    psyche_state: dict[str, Any] | None = None,
) -> Event:
    return Event(
        trace_id=trace_id or new_trace_id(),
        type=kind,
        source=source,
        payload={"content": "hi"} if payload is None else payload,
        timestamp=timestamp,
        psyche_state=psyche_state,
        soul_id=soul_id,
        session_id=session_id,
        terminal_id=terminal_id,
    )


type Opener = Callable[..., SqliteJournal]


def open_journals(tmp_path: Path) -> Iterator[Opener]:
    """Open journals (default ``tmp_path / "journal.db"``, clock at START); close them after."""
    opened: list[SqliteJournal] = []

    def opener(path: Path | None = None, **options: Any) -> SqliteJournal:
        options.setdefault("clock", Clock())
        journal = SqliteJournal.open(path or tmp_path / "journal.db", **options)
        opened.append(journal)
        return journal

    yield opener
    for journal in opened:
        journal.close()


def all_ids(journal: SqliteJournal, **filters: Any) -> list[int]:
    page = journal.query(EventQuery(limit=MAX_QUERY_LIMIT, **filters))
    return [stored["id"] for stored in page.events]
