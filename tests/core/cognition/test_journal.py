"""The SQLite event journal: round trip, filters, pages, retention, failures, speed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
import datetime as dt
import json
from pathlib import Path
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

from custom_components.soul.core.cognition import (
    journal as journal_module,
    journal_codec,
    journal_sql,
)
from custom_components.soul.core.cognition.events import (
    MAX_QUERY_LIMIT,
    EventQuery,
    EventType,
    Source,
    new_trace_id,
    shared_soul_readable,
)
from custom_components.soul.core.cognition.journal import JournalError, SqliteJournal

from .journal_kit import DAY, START, Clock, Opener, all_ids, event

REPO = Path(__file__).resolve().parents[3]

# The five kinds of §2.2, with the spec's payload examples.
SPEC_EVENTS = (
    (EventType.USER_INPUT, Source.USER, {"content": "你好"}),
    (
        EventType.DRIVER_RESPONSE,
        Source.DRIVER,
        {"content": "你好呀", "inner_voice": "..."},
    ),
    (
        EventType.NAVIGATOR_SUGGESTION,
        Source.NAVIGATOR,
        {"suggestion": "用户似乎很疲惫...", "intent": "comfort"},
    ),
    (
        EventType.PSYCHE_UPDATE,
        Source.PSYCHE,
        {"delta": {"joy": 0.1}, "reason": "user_praise"},
    ),
    (
        EventType.SYSTEM_NOTIFICATION,
        Source.SYSTEM,
        {"level": "info", "message": "记忆归档完成"},
    ),
)


def sizes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


# -- round trip, order, filters, pages -------------------------------------


def test_round_trip_in_the_spec_shape(open_journal: Opener) -> None:
    journal = open_journal()
    trace = new_trace_id()
    events = [
        event(
            payload,
            kind=kind,
            source=source,
            trace_id=trace,
            timestamp=START + i,
            psyche_state={"joy": 0.5, "mood": "calm"} if i % 2 else None,
        )
        for i, (kind, source, payload) in enumerate(SPEC_EVENTS)
    ]
    for item in events:
        journal.append(item)
    assert journal.flush()

    page = journal.query(EventQuery())
    assert page.next is None
    stored = page.events
    assert [{k: v for k, v in s.items() if k != "id"} for s in stored] == [
        item.as_dict() for item in reversed(events)
    ]
    ids = [s["id"] for s in stored]
    assert ids == sorted(ids, reverse=True)
    assert len(set(ids)) == 5
    # JSON all the way: what a WebSocket client would receive.
    assert json.loads(json.dumps(stored)) == stored
    assert stored[-1]["payload"] == {"content": "你好"}
    assert stored[-2]["meta"]["psyche_state"] == {"joy": 0.5, "mood": "calm"}
    assert journal.stats()["written"] == 5


def test_text_is_stored_as_utf8_not_escapes(
    tmp_path: Path, open_journal: Opener
) -> None:
    journal = open_journal()
    journal.append(event({"content": "你好"}))
    assert journal.flush()
    raw = sqlite3.connect(tmp_path / "journal.db").execute("SELECT payload FROM events")
    assert raw.fetchone()[0] == '{"content":"你好"}'


def test_newest_first_in_append_order(open_journal: Opener) -> None:
    journal = open_journal()
    # Timestamps out of order: the order is the append order, not the clock's.
    stamps = [START + 5, START + 1, START + 9, START + 3]
    for stamp in stamps:
        journal.append(event({"stamp": stamp}, timestamp=stamp))
    assert journal.flush()
    page = journal.query(EventQuery())
    assert [s["payload"]["stamp"] for s in page.events] == stamps[::-1]


def test_filters_each_and_combined(open_journal: Opener) -> None:
    journal = open_journal()
    trace = new_trace_id()
    rows = [
        ("soul-a", "s1", EventType.USER_INPUT, START, trace),
        ("soul-a", "s1", EventType.DRIVER_RESPONSE, START + 10, trace),
        ("soul-a", "s2", EventType.USER_INPUT, START + 20, None),
        ("soul-b", "s3", EventType.USER_INPUT, START + 30, None),
        ("soul-b", "s3", EventType.PSYCHE_UPDATE, START + 40, None),
        (None, None, EventType.SYSTEM_NOTIFICATION, START + 50, None),
    ]
    for number, (soul, session, kind, stamp, trace_id) in enumerate(rows):
        journal.append(
            event(
                {"n": number},
                soul_id=soul,
                session_id=session,
                kind=kind,
                timestamp=stamp,
                trace_id=trace_id,
            )
        )
    assert journal.flush()

    def numbers(**filters: Any) -> list[int]:
        page = journal.query(EventQuery(**filters))
        return [s["payload"]["n"] for s in page.events]

    assert numbers() == [5, 4, 3, 2, 1, 0]
    assert numbers(soul_ids=frozenset({"soul-a"})) == [2, 1, 0]
    assert numbers(soul_ids=frozenset({"soul-a", "soul-b"})) == [4, 3, 2, 1, 0]
    assert numbers(soul_ids=frozenset()) == []
    assert numbers(soul_ids=frozenset({"soul-z"})) == []
    assert numbers(session_id="s1") == [1, 0]
    assert numbers(trace_id=trace) == [1, 0]
    assert numbers(types=frozenset({EventType.USER_INPUT})) == [3, 2, 0]
    assert numbers(types=frozenset()) == []
    # since and until are inclusive.
    assert numbers(since=START + 20) == [5, 4, 3, 2]
    assert numbers(until=START + 20) == [2, 1, 0]
    assert numbers(since=START + 10, until=START + 30) == [3, 2, 1]
    assert numbers(
        soul_ids=frozenset({"soul-a", "soul-b"}),
        types=frozenset({EventType.USER_INPUT}),
        since=START + 5,
    ) == [3, 2]
    assert numbers(soul_ids=frozenset({"soul-b"}), session_id="s1") == []


def test_many_soul_ids_scope_like_a_few(open_journal: Opener) -> None:
    journal = open_journal()
    for number in range(300):
        journal.append(event({"n": number}, soul_id=f"soul-{number}"))
    assert journal.flush()
    wanted = frozenset(f"soul-{n}" for n in range(0, 300, 3))  # 100 ids: one JSON array
    page = journal.query(EventQuery(soul_ids=wanted, limit=MAX_QUERY_LIMIT))
    assert [s["payload"]["n"] for s in page.events] == list(range(297, -1, -3))


def test_pages_cover_everything_once(open_journal: Opener) -> None:
    journal = open_journal()
    for number in range(95):
        journal.append(
            event({"n": number}, soul_id="soul-a" if number % 2 else "soul-b")
        )
    assert journal.flush()

    seen: list[int] = []
    cursor: int | None = None
    pages = 0
    while True:
        page = journal.query(EventQuery(limit=10, before_id=cursor))
        pages += 1
        seen.extend(s["payload"]["n"] for s in page.events)
        assert len(page.events) <= 10
        if page.next is None:
            break
        assert page.next == page.events[-1]["id"]
        cursor = page.next
    assert pages == 10
    assert seen == list(range(94, -1, -1))

    # A filter pages the same way.
    seen = []
    cursor = None
    while True:
        page = journal.query(
            EventQuery(soul_ids=frozenset({"soul-a"}), limit=7, before_id=cursor)
        )
        seen.extend(s["payload"]["n"] for s in page.events)
        if page.next is None:
            break
        cursor = page.next
    assert seen == list(range(93, -1, -2))


def test_an_exact_last_page_says_there_is_no_more(open_journal: Opener) -> None:
    journal = open_journal()
    for number in range(20):
        journal.append(event({"n": number}))
    assert journal.flush()
    first = journal.query(EventQuery(limit=10))
    assert first.next is not None
    second = journal.query(EventQuery(limit=10, before_id=first.next))
    assert len(second.events) == 10
    assert second.next is None


def test_limit_is_clamped(open_journal: Opener) -> None:
    journal = open_journal()
    for number in range(MAX_QUERY_LIMIT + 5):
        journal.append(event({"n": number}))
    assert journal.flush()
    assert len(journal.query(EventQuery(limit=0)).events) == 1
    assert len(journal.query(EventQuery(limit=-3)).events) == 1
    big = journal.query(EventQuery(limit=10**9))
    assert len(big.events) == MAX_QUERY_LIMIT
    assert big.next is not None


def test_flush_makes_everything_appended_before_it_visible(
    open_journal: Opener,
) -> None:
    journal = open_journal()
    for round_ in range(5):
        for number in range(200):
            journal.append(event({"n": number}))
        assert journal.flush()
        assert journal.stats()["written"] == 200 * (round_ + 1)
        assert len(all_ids(journal)) == min(MAX_QUERY_LIMIT, 200 * (round_ + 1))


# -- restart --------------------------------------------------------------


def test_a_turns_events_arriving_over_a_few_ms_are_one_commit(
    open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer gathers for a moment before it writes, then commits once.

    A turn's events come over a few milliseconds; a writer encoding each as
    it comes would take the GIL from the event loop running the turn. (The
    window is widened so that a slow machine's sleeps stay inside it.)
    """
    monkeypatch.setattr(journal_module, "GATHER", 1.0)
    journal = open_journal()
    assert journal.flush()
    before = journal.stats()["commits"]
    for _ in range(5):
        journal.append(event())
        time.sleep(0.002)
    assert journal.flush()
    assert journal.stats()["written"] == 5
    assert journal.stats()["commits"] - before == 1


def test_a_flush_does_not_wait_for_the_gathering(
    open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush (or purge, or close) ends the writer's gathering at once."""
    monkeypatch.setattr(journal_module, "GATHER", 0.2)
    journal = open_journal()
    assert journal.flush()
    started = time.monotonic()
    for _ in range(20):
        journal.append(event())
        assert journal.flush()
    # Twenty gatherings of GATHER each would take 0.4 s.
    assert time.monotonic() - started < 20 * journal_module.GATHER / 2
    assert journal.stats()["written"] == 20


def test_events_survive_a_restart_and_ids_keep_growing(
    tmp_path: Path, open_journal: Opener
) -> None:
    path = tmp_path / "journal.db"
    first = open_journal(path)
    for number in range(5):
        first.append(event({"n": number}))
    first.close()

    second = open_journal(path)
    before = all_ids(second)
    assert len(before) == 5
    assert second.stats()["oldest_timestamp"] == START
    second.append(event({"n": 5}))
    assert second.flush()
    after = all_ids(second)
    assert after[0] > max(before)
    assert after[1:] == before


def test_a_large_batch_is_stored_whole_and_in_order(
    tmp_path: Path, open_journal: Opener
) -> None:
    """Rows go in ``INSERT_CHUNK`` at a time and the rest one by one, in order."""
    count = 2 * journal_sql.INSERT_CHUNK + 7
    path = tmp_path / "journal.db"
    journal = open_journal(path)
    journal.append(event({"n": -1}))
    assert journal.flush()
    # One batch, as the writer inserts what it took off the queue.
    raw = sqlite3.connect(path, isolation_level=None)
    rows = [
        journal_codec.encode_row(event({"n": n}, soul_id=f"soul-{n}"), time.time)
        for n in range(count)
    ]
    journal_sql.insert(raw, rows)
    raw.close()
    stored = journal.query(EventQuery(limit=MAX_QUERY_LIMIT)).events
    assert [e["payload"]["n"] for e in reversed(stored)] == [-1, *range(count)]
    assert [e["soul_id"] for e in stored[:2]] == [
        f"soul-{count - 1}",
        f"soul-{count - 2}",
    ]
    ids = [e["id"] for e in reversed(stored)]
    assert ids == list(range(ids[0], ids[0] + count + 1))


def test_a_failing_batch_leaves_nothing_behind(tmp_path: Path) -> None:
    """An error in the last statement rolls back the chunks before it."""
    path = tmp_path / "journal.db"
    SqliteJournal.open(path).close()
    raw = sqlite3.connect(path, isolation_level=None)
    good = journal_codec.encode_row(event({"n": 1}), time.time)
    bad = (None, *good[1:])  # trace_id NOT NULL
    rows = [good] * journal_sql.INSERT_CHUNK + [bad]
    with pytest.raises(sqlite3.IntegrityError):
        journal_sql.insert(raw, rows)
    assert raw.execute("SELECT count(*) FROM events").fetchone() == (0,)
    assert not raw.in_transaction
    raw.close()


def test_ids_are_not_reused_after_everything_was_purged(
    tmp_path: Path, open_journal: Opener
) -> None:
    clock = Clock()
    journal = open_journal(clock=clock)
    for _ in range(3):
        journal.append(event(timestamp=clock.now))
    assert journal.flush()
    highest = all_ids(journal)[0]
    clock.now += 31 * DAY
    assert journal.purge() == 3
    journal.close()
    reopened = open_journal(tmp_path / "journal.db", clock=clock)
    reopened.append(event(timestamp=clock.now))
    assert reopened.flush()
    assert all_ids(reopened) == [highest + 1]


# -- retention ---------------------------------------------------------------


def test_purge_by_age_with_a_clock(open_journal: Opener) -> None:
    clock = Clock(START + 40 * DAY)
    journal = open_journal(clock=clock, max_age_days=30)
    stamps = [
        START,
        START + 5 * DAY,
        START + 10 * DAY + 1,
        START + 20 * DAY,
        START + 39 * DAY,
    ]
    for stamp in stamps:
        journal.append(event({"stamp": stamp}, timestamp=stamp))
    assert journal.flush()
    assert len(all_ids(journal)) == 5
    # Exactly 30 days old (START + 10 days) is kept; older goes.
    clock.now = START + 40 * DAY + 1
    assert journal.purge() == 2
    kept = journal.query(EventQuery()).events
    assert [s["payload"]["stamp"] for s in kept] == stamps[:1:-1]
    assert journal.stats()["oldest_timestamp"] == START + 10 * DAY + 1
    assert journal.purge() == 0


def test_the_writer_purges_by_age_every_hour(open_journal: Opener) -> None:
    clock = Clock()
    journal = open_journal(clock=clock, max_age_days=1)
    journal.append(event({"n": "old"}, timestamp=clock.now))
    assert journal.flush()
    clock.now += 2 * DAY  # the old event is now past its age...
    journal.append(event({"n": "new"}, timestamp=clock.now))
    assert journal.flush()
    # ...and an hour of the clock has passed: the writer purged on its own.
    assert [s["payload"]["n"] for s in journal.query(EventQuery()).events] == ["new"]


def test_an_idle_writer_purges_by_age_every_hour(
    open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "IDLE_POLL", 0.02)
    clock = Clock()
    journal = open_journal(clock=clock, max_age_days=1)
    journal.append(event({"n": "old"}, timestamp=clock.now))
    assert journal.flush()
    clock.now += 2 * DAY  # nothing more is appended
    deadline = time.monotonic() + 5
    while all_ids(journal) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all_ids(journal) == []


def test_the_writer_does_not_purge_before_the_hour(open_journal: Opener) -> None:
    clock = Clock()
    journal = open_journal(clock=clock, max_age_days=1)
    journal.append(event({"n": "old"}, timestamp=clock.now - 2 * DAY))
    journal.append(event({"n": "new"}, timestamp=clock.now))
    assert journal.flush()
    clock.now += 60
    journal.append(event({"n": "newer"}, timestamp=clock.now))
    assert journal.flush()
    # The start-up purge ran before the old event arrived; no hour since.
    assert len(all_ids(journal)) == 3


def big_payload(number: int, size: int = 20_000) -> dict[str, Any]:
    return {"n": number, "blob": f"{number:08d}" * (size // 8)}


def test_purge_by_size_keeps_the_newest_and_shrinks_the_file(
    tmp_path: Path, open_journal: Opener
) -> None:
    path = tmp_path / "journal.db"
    journal = open_journal(path, max_bytes=100 * 1024 * 1024)
    for number in range(300):  # about 6 MB of payloads
        journal.append(event(big_payload(number)))
    assert journal.flush()
    assert sizes(path) > 5 * 1024 * 1024

    limit = 1024 * 1024
    journal.max_bytes = limit
    deleted = journal.purge()
    assert 0 < deleted < 300
    assert sizes(path) <= limit
    assert journal.stats()["bytes"] <= limit
    kept = [s["payload"]["n"] for s in journal.query(EventQuery(limit=100)).events]
    assert kept[0] == 299
    assert kept == list(range(299, 299 - len(kept), -1))
    assert len(kept) == 300 - deleted
    assert journal.stats()["oldest_timestamp"] == START


def test_the_writer_keeps_the_file_under_max_bytes(
    tmp_path: Path, open_journal: Opener
) -> None:
    path = tmp_path / "journal.db"
    limit = 1024 * 1024
    journal = open_journal(path, max_bytes=limit)
    for number in range(300):
        journal.append(event(big_payload(number)))
        if number % 50 == 49:
            assert journal.flush()
    assert journal.flush()
    assert sizes(path) <= limit
    newest = journal.query(EventQuery(limit=1)).events
    assert newest[0]["payload"]["n"] == 299
    assert journal.stats()["written"] == 300


# -- failures ----------------------------------------------------------------


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    path.write_bytes(b"this is not SQLite at all \x00\xff" * 500)
    with pytest.raises(JournalError, match="not a SQLite database or is corrupt"):
        SqliteJournal.open(path)
    assert not any(t.name == "soul-journal-writer" for t in threading.enumerate())


def test_a_damaged_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = SqliteJournal.open(path)
    for number in range(400):
        journal.append(event(big_payload(number, 2_000)))
    journal.close()
    data = bytearray(path.read_bytes())
    assert len(data) > 40 * 4096
    # Scribble over pages in the middle (the header stays valid).
    data[8 * 4096 : 30 * 4096] = b"\x5a" * (22 * 4096)
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match="corrupt"):
        SqliteJournal.open(path)


def test_a_database_locked_by_another_program_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "OPEN_BUSY_TIMEOUT", 0.1)
    path = tmp_path / "journal.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE other (x)")
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(JournalError, match="locked by another program"):
            SqliteJournal.open(path)
    finally:
        other.close()


def test_a_database_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE events (what TEXT)")
    other.commit()
    other.close()
    with pytest.raises(JournalError, match="not Soul's event journal"):
        SqliteJournal.open(path)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    SqliteJournal.open(path).close()
    other = sqlite3.connect(path)
    other.execute("PRAGMA user_version = 99")
    other.close()
    with pytest.raises(JournalError, match="newer Soul"):
        SqliteJournal.open(path)


def test_a_database_broken_later_stops_the_journal_once(
    tmp_path: Path, open_journal: Opener
) -> None:
    errors: list[Exception] = []
    journal = open_journal(on_error=errors.append)
    journal.append(event({"n": 0}))
    assert journal.flush()

    other = sqlite3.connect(tmp_path / "journal.db")
    other.execute("DROP TABLE events")
    other.commit()
    other.close()

    journal.append(event({"n": 1}))  # the writer fails on this one
    assert journal.flush()
    for number in range(2, 12):
        journal.append(event({"n": number}))  # refused at once
    assert journal.flush()

    assert len(errors) == 1
    assert isinstance(errors[0], sqlite3.Error)
    assert "events" in str(errors[0])
    stats = journal.stats()
    assert stats["failed"] is True
    assert stats["written"] == 1
    assert stats["dropped"] == 11
    assert "no such table" in stats["last_error"]
    with pytest.raises(JournalError):
        journal.purge()


def test_a_failing_on_error_does_not_kill_the_writer(
    tmp_path: Path, open_journal: Opener
) -> None:
    def explode(err: Exception) -> None:
        raise RuntimeError("boom")

    journal = open_journal(on_error=explode)
    other = sqlite3.connect(tmp_path / "journal.db")
    other.execute("DROP TABLE events")
    other.commit()
    other.close()
    journal.append(event())
    assert journal.flush()
    journal.append(event())
    assert journal.flush()  # the writer still answers
    assert journal.stats()["dropped"] == 2


def test_a_lock_held_too_long_stops_the_journal(
    tmp_path: Path, open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "BUSY_BUDGET", 0.2)
    errors: list[Exception] = []
    journal = open_journal(on_error=errors.append)
    other = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        journal.append(event())
        assert journal.flush(timeout=10)
    finally:
        other.close()
    assert len(errors) == 1
    assert "locked" in str(errors[0])
    assert journal.stats()["dropped"] == 1


# -- payloads ----------------------------------------------------------------


class Opaque:
    """A value JSON cannot hold."""

    def __str__(self) -> str:
        return "<opaque thing>"


class Unprintable:
    """A value even ``str`` cannot hold."""

    def __str__(self) -> str:
        raise RuntimeError("no")


def stored_payload(journal: SqliteJournal, payload: Any) -> Any:
    journal.append(event(payload))
    assert journal.flush()
    return journal.query(EventQuery(limit=1)).events[0]["payload"]


def test_values_json_cannot_hold_are_stored_as_strings(open_journal: Opener) -> None:
    journal = open_journal()
    when = dt.datetime(2026, 2, 22, 9, 30, tzinfo=dt.UTC)
    assert stored_payload(
        journal, {"when": when, "thing": Opaque(), "raw": b"\x01", "ok": [1, "a"]}
    ) == {
        "when": str(when),
        "thing": "<opaque thing>",
        "raw": "b'\\x01'",
        "ok": [1, "a"],
    }
    assert stored_payload(journal, {"bad": Unprintable()}) == {
        "bad": "<unprintable Unprintable>"
    }
    # Keys that are not strings, non-finite numbers.
    assert stored_payload(journal, {1: "one", (2, 3): "pair", "x": float("nan")}) == {
        "1": "one",
        "(2, 3)": "pair",
        "x": None,
    }
    # Non-finite numbers are null on both paths (plain keys: the fast one).
    assert stored_payload(journal, {"inf": [float("inf")], "nan": float("nan")}) == {
        "inf": [None],
        "nan": None,
    }
    # Past 64 bits (orjson refuses them): the slow path keeps the number.
    assert stored_payload(journal, {"big": 2**70}) == {"big": 2**70}


def test_cycles_depth_and_surrogates_do_not_stop_the_writer(
    open_journal: Opener,
) -> None:
    journal = open_journal()
    cycle: dict[str, Any] = {"name": "loop"}
    cycle["self"] = cycle
    stored = stored_payload(journal, cycle)
    assert stored["name"] == "loop"
    assert json.dumps(stored)  # plain JSON

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5_000):
        node["d"] = {}
        node = node["d"]
    stored = stored_payload(journal, deep)
    depth = 0
    while isinstance(stored, dict):
        stored = stored["d"]
        depth += 1
    assert depth <= 33

    assert stored_payload(journal, {"text": "a\ud800b"}) == {"text": "a\ufffdb"}
    journal.append(event(soul_id="soul-\udc00", session_id="x" * 10_000))
    assert journal.flush()
    latest = journal.query(EventQuery(limit=1)).events[0]
    assert latest["soul_id"] == "soul-\ufffd"
    assert len(latest["session_id"]) == journal_codec.MAX_ID_CHARS
    assert journal.stats()["dropped"] == 0
    assert journal.stats()["failed"] is False


def test_a_non_finite_timestamp_takes_the_clock(open_journal: Opener) -> None:
    clock = Clock()
    journal = open_journal(clock=clock)
    journal.append(event(timestamp=float("nan")))
    assert journal.flush()
    assert journal.query(EventQuery()).events[0]["meta"]["timestamp"] == clock.now


def test_a_huge_payload_is_truncated(open_journal: Opener) -> None:
    journal = open_journal()
    huge = {"text": "字" * 40_000}  # 120,000 bytes of UTF-8
    journal.append(event(huge, psyche_state={"notes": "x" * 70_000}))
    journal.append(event({"text": "y" * 60_000}))  # under the limit: whole
    assert journal.flush()
    small, big = journal.query(EventQuery()).events
    assert small["payload"] == {"text": "y" * 60_000}
    payload = big["payload"]
    assert payload["truncated"] is True
    compact = json.dumps(huge, ensure_ascii=False, separators=(",", ":"))
    assert payload["bytes"] == len(compact.encode())
    assert payload["preview"].startswith('{"text":"字字')
    assert len(payload["preview"].encode()) <= journal_codec.PREVIEW_BYTES
    assert big["meta"]["psyche_state"]["truncated"] is True


class ExplodingMapping(Mapping[str, Any]):
    """A mapping that fails when read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")

    def __iter__(self) -> Any:
        raise RuntimeError("no")

    def __len__(self) -> int:
        return 1


def test_an_unstorable_event_is_lost_alone(
    open_journal: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """The batch's other events are stored; the one that cannot be is counted."""
    journal = open_journal()
    journal.append(event({"n": 1}))
    journal.append(event(ExplodingMapping()))  # type: ignore[arg-type]
    journal.append(event({"n": 2}))
    assert journal.flush()
    stored = [e["payload"] for e in reversed(journal.query(EventQuery()).events)]
    assert stored == [{"n": 1}, {"n": 2}]
    assert journal.stats()["dropped"] == 1
    assert journal.stats()["failed"] is False
    assert "could not be stored" in caplog.text


# -- lifecycle and concurrency -------------------------------------------------


def test_append_after_close_is_dropped_quietly(open_journal: Opener) -> None:
    journal = open_journal()
    journal.append(event())
    journal.close()
    journal.close()  # idempotent
    journal.append(event())
    stats = journal.stats()
    assert stats["closed"] is True
    assert stats["written"] == 1  # close wrote what was queued
    assert stats["dropped"] == 1
    assert journal.flush()
    assert len(all_ids(journal)) == 1  # still readable
    assert not any(t.name == "soul-journal-writer" for t in threading.enumerate())


def test_one_named_non_daemon_writer(open_journal: Opener) -> None:
    journal = open_journal()
    writers = [t for t in threading.enumerate() if t.name == "soul-journal-writer"]
    assert len(writers) == 1
    assert writers[0].daemon is False
    journal.close()
    assert not writers[0].is_alive()


def test_a_process_that_never_closes_still_writes_and_exits(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    script = textwrap.dedent(
        f"""
        from custom_components.soul.core.cognition.events import (
            Event, EventType, Source,
        )
        from custom_components.soul.core.cognition.journal import SqliteJournal

        journal = SqliteJournal.open({str(path)!r})
        for n in range(1000):
            journal.append(
                Event("t", EventType.USER_INPUT, Source.USER, {{"n": n}}, 1.0)
            )
        """
    )
    started = time.monotonic()
    subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], cwd=REPO, check=True, timeout=30
    )
    assert time.monotonic() - started < 20
    count = sqlite3.connect(path).execute("SELECT count(*) FROM events").fetchone()
    assert count == (1000,)


def test_append_does_not_wait_for_a_blocked_writer(
    tmp_path: Path, open_journal: Opener
) -> None:
    journal = open_journal()
    other = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # the writer cannot commit now
    try:
        durations = []
        for number in range(2_000):
            start = time.perf_counter()
            journal.append(event({"n": number}))
            durations.append(time.perf_counter() - start)
        # A writing append would wait at least the writer's 1 s busy timeout.
        assert sum(durations) < 0.5
        assert max(durations) < 0.1
        assert not journal.flush(timeout=0.3)  # nothing can be committed yet
        assert journal.stats()["written"] == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert journal.flush(timeout=10)
    assert journal.stats()["written"] == 2_000
    assert journal.stats()["failed"] is False


def test_a_lock_held_a_while_is_waited_out(
    tmp_path: Path, open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "BUSY_TIMEOUT", 0.05)
    errors: list[Exception] = []
    journal = open_journal(on_error=errors.append)
    other = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        journal.append(event())
        assert not journal.flush(timeout=0.5)  # ten busy timeouts and more
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert journal.flush(timeout=10)
    assert errors == []
    assert journal.stats()["written"] == 1


def test_a_full_queue_drops_new_events(
    tmp_path: Path, open_journal: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "MAX_QUEUED", 50)
    inserting = threading.Event()
    real_insert = journal_sql.insert

    def insert(connection: sqlite3.Connection, rows: list[Any]) -> None:
        inserting.set()
        real_insert(connection, rows)

    monkeypatch.setattr(journal_sql, "insert", insert)
    journal = open_journal()
    other = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        journal.append(event({"n": -1}))
        # The writer took it and now waits for the lock, taking nothing else.
        assert inserting.wait(5)
        for number in range(60):
            journal.append(event({"n": number}))
        assert journal.stats()["queued"] == 50
        assert journal.stats()["dropped"] == 10
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert journal.flush(timeout=10)
    stored = [s["payload"]["n"] for s in journal.query(EventQuery(limit=100)).events]
    assert stored == list(range(49, -2, -1))


def test_close_gives_up_on_a_writer_that_cannot_finish(
    tmp_path: Path, open_journal: Opener
) -> None:
    errors: list[Exception] = []
    journal = open_journal(on_error=errors.append)
    writers = [t for t in threading.enumerate() if t.name == "soul-journal-writer"]
    other = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        journal.append(event())
        start = time.monotonic()
        journal.close(timeout=0.2)
        assert time.monotonic() - start < 1
        # Still locked: the writer gives up after its current attempt (1 s)
        # instead of retrying for BUSY_BUDGET (60 s).
        for writer in writers:
            writer.join(5)
        assert not any(w.is_alive() for w in writers)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert errors == []  # giving up at close is not a failure to report
    assert journal.stats()["dropped"] == 1
    assert journal.stats()["written"] == 0


def test_queries_while_writing(open_journal: Opener) -> None:
    journal = open_journal()
    problems: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                page = journal.query(EventQuery(limit=50))
                ids = [s["id"] for s in page.events]
                assert ids == sorted(ids, reverse=True)
                assert len(ids) == len(set(ids))
        except BaseException as err:  # noqa: BLE001 - reported below
            problems.append(err)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for number in range(5_000):
            journal.append(event({"n": number}, soul_id=f"soul-{number % 3}"))
            if number % 500 == 0:
                time.sleep(0.005)
        assert journal.flush(timeout=30)
    finally:
        stop.set()
        for thread in readers:
            thread.join(10)
    assert problems == []
    assert journal.stats()["written"] == 5_000
    assert journal.query(EventQuery(limit=1)).events[0]["payload"]["n"] == 4_999


def test_stats_are_cheap_and_complete(tmp_path: Path, open_journal: Opener) -> None:
    journal = open_journal()
    for _ in range(3):
        journal.append(event())
    assert journal.flush()
    stats = journal.stats()
    assert stats["appended"] == 3
    assert stats["written"] == 3
    assert stats["dropped"] == 0
    assert stats["queued"] == 0
    assert stats["last_error"] is None
    assert stats["bytes"] == sizes(tmp_path / "journal.db")
    assert stats["oldest_timestamp"] == START
    start = time.perf_counter()
    for _ in range(100):
        journal.stats()
    assert time.perf_counter() - start < 0.1


def test_the_database_is_wal_with_incremental_vacuum(
    tmp_path: Path, open_journal: Opener
) -> None:
    open_journal()
    other = sqlite3.connect(tmp_path / "journal.db")
    assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert other.execute("PRAGMA auto_vacuum").fetchone() == (2,)
    indexed = {
        row[0]
        for row in other.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }
    tables = {
        row[0]
        for row in other.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    other.close()
    # soul, session, timestamp: the filters that find few rows; a trace is
    # found through trace_spans (test_journal_traces).
    assert len(indexed) == 3
    assert any("(soul_id, id)" in sql for sql in indexed)
    assert "trace_spans" in tables


@pytest.mark.parametrize("other_shared_souls", [0, 70])
def test_a_shared_soul_is_read_as_its_reader(
    open_journal: Opener, other_shared_souls: int
) -> None:
    """On a soul every user shares, a user reads their sessions and no session's."""
    journal = open_journal()
    stored = [
        replace(event({"n": "mine"}, soul_id="soul-s"), user_id="user-a"),
        replace(event({"n": "theirs"}, soul_id="soul-s"), user_id="user-b"),
        event({"n": "a session of no one"}, soul_id="soul-s"),
        event({"n": "a body online"}, soul_id="soul-s", session_id=None),
        replace(event({"n": "own soul"}, soul_id="soul-a"), user_id="user-b"),
        replace(event({"n": "not mine"}, soul_id="soul-b"), user_id="user-a"),
    ]
    for item in stored:
        journal.append(item)
    assert journal.flush()
    shared = frozenset({"soul-s", *(f"other-{n}" for n in range(other_shared_souls))})
    query = EventQuery(
        soul_ids=frozenset({"soul-a"}), shared_soul_ids=shared, reader_id="user-a"
    )
    read = [e["payload"]["n"] for e in journal.query(query).events]
    assert read == ["own soul", "a body online", "mine"]
    # The live stream's rule says the same, event by event.
    assert [
        e.payload["n"]
        for e in reversed(stored)
        if e.soul_id == "soul-a"
        or (
            e.soul_id == "soul-s"
            and shared_soul_readable(e.user_id, e.session_id, "user-a")
        )
    ] == read
    # Nothing of one's own, the shared souls still read as their reader.
    only_shared = replace(query, soul_ids=frozenset())
    assert [e["payload"]["n"] for e in journal.query(only_shared).events] == [
        "a body online",
        "mine",
    ]
    assert not shared_soul_readable(None, "session-1", None)
