"""A journal whose rows were damaged or edited is still read, page by page.

A fuzz of the journal's rows (2026-11-29) kept the file a valid SQLite
database with Soul's schema and changed its rows: text that is not UTF-8, a
blob or a 10 MB text in a column, JSON that Home Assistant's writer refuses,
a timestamp of text. Every page holding such a row failed (503 or 500), or
Soul did not start, or a page held the loop for half a second.
"""

from __future__ import annotations

from pathlib import Path
import sqlite3

import orjson
import pytest

from custom_components.soul.core.cognition.events import EventQuery
from custom_components.soul.core.cognition.journal import (
    MAX_PAGE_CHARS,
    JournalError,
    SqliteJournal,
)
from custom_components.soul.core.cognition.journal_codec import PREVIEW_BYTES

from .journal_kit import START, Opener, event


def _journal_with(open_journal: Opener, tmp_path: Path, *updates: str) -> SqliteJournal:
    """Write three events, change their rows with ``updates``, open it again."""
    journal = open_journal()
    for n in range(3):
        journal.append(event({"content": f"event {n}"}))
    journal.flush()
    journal.close()
    with sqlite3.connect(tmp_path / "journal.db") as db:
        for update in updates:
            db.execute(update)
    return open_journal()


def _page(journal: SqliteJournal) -> list[dict[str, object]]:
    events = journal.query(EventQuery(limit=10)).events
    orjson.dumps(events)  # what Home Assistant's writer makes of the page
    return events


@pytest.mark.parametrize(
    ("update", "column", "shown"),
    [
        (
            "UPDATE events SET payload = CAST(x'7b22612233ff7d' AS TEXT) WHERE id = 2",
            "payload",
            {"undecodable": True, "preview": '{"a"3\ufffd}'},
        ),
        ("UPDATE events SET trace_id = x'00ff10' WHERE id = 2", "trace_id", None),
        ("UPDATE events SET soul_id = 42 WHERE id = 2", "soul_id", "42"),
        (
            """UPDATE events SET payload = '{"content":"\\ud800"}' WHERE id = 2""",
            "payload",
            {"undecodable": True, "preview": '{"content":"\\ud800"}'},
        ),
        (
            "UPDATE events SET payload = '[1]' WHERE id = 2",
            "payload",
            {"undecodable": True, "preview": "[1]"},
        ),
        (
            "UPDATE events SET payload = '" + "[" * 300 + "]" * 300 + "' WHERE id = 2",
            "payload",
            {"undecodable": True, "preview": ("[" * 300 + "]" * 300)[:PREVIEW_BYTES]},
        ),
        (
            """UPDATE events SET payload = '{"n":18446744073709551616}' WHERE id = 2""",
            "payload",
            {"n": 1.8446744073709552e19},
        ),
    ],
    ids=[
        "not-utf-8",
        "a-blob-id",
        "an-integer-id",
        "a-lone-surrogate",
        "not-an-object",
        "300-deep",
        "past-64-bits",
    ],
)
def test_an_odd_row_is_read_with_the_others(
    open_journal: Opener, tmp_path: Path, update: str, column: str, shown: object
) -> None:
    events = _page(_journal_with(open_journal, tmp_path, update))
    assert [e["id"] for e in events] == [3, 2, 1]
    assert events[1][column] == shown
    assert events[0]["payload"] == {"content": "event 2"}


def test_a_huge_row_is_read_as_far_as_soul_writes(
    open_journal: Opener, tmp_path: Path
) -> None:
    """30 rows of 10 MB held the loop 504 ms to send one page."""
    events = _page(
        _journal_with(
            open_journal,
            tmp_path,
            'UPDATE events SET payload = \'{"c":"\' || hex(zeroblob(5000000))'
            " || '\"}', trace_id = hex(zeroblob(5000)) WHERE id = 2",
        )
    )
    assert events[1]["payload"] == {
        "undecodable": True,
        "preview": '{"c":"' + "0" * (PREVIEW_BYTES - 6),
    }
    assert len(events[1]["trace_id"]) == 256  # type: ignore[arg-type]


def test_soul_reads_back_an_integer_past_64_bits_it_wrote(open_journal: Opener) -> None:
    """No edit needed: such a payload made every page holding it a 500."""
    journal = open_journal()
    journal.append(event({"n": 2**64}))
    journal.flush()
    (stored,) = _page(journal)
    assert stored["payload"] == {"n": float(2**64)}


@pytest.mark.parametrize("timestamp", ["''", "'abc'", "x'ff'", "9e999", "NULL"])
def test_an_odd_timestamp_on_the_oldest_row_neither_stops_soul_nor_stays(
    open_journal: Opener, tmp_path: Path, timestamp: str
) -> None:
    """A text timestamp there made opening fail with a ValueError: no Soul at all."""
    journal = open_journal()
    for n in range(2):
        journal.append(event({"content": f"event {n}"}))
    journal.close()
    with sqlite3.connect(tmp_path / "journal.db") as db:
        # A table rebuilt without NOT NULL can hold a NULL.
        db.executescript(
            "CREATE TABLE copy AS SELECT * FROM events; DROP TABLE events;"
            " ALTER TABLE copy RENAME TO events;"
        )
        db.execute(f"UPDATE events SET timestamp = {timestamp} WHERE id = 1")  # noqa: S608
    reopened = open_journal()
    if timestamp == "NULL":  # kept (deleting it would scan the table), read as none
        assert [e["meta"]["timestamp"] for e in _page(reopened)] == [START, None]  # type: ignore[index]
    else:  # never purged by age: gone
        assert [e["id"] for e in _page(reopened)] == [2]
    assert reopened.stats()["oldest_timestamp"] == START


def test_a_journal_whose_ids_run_out_is_refused_at_open(
    open_journal: Opener, tmp_path: Path
) -> None:
    """Its writer stopped at the next event, reporting a full disk."""
    open_journal().close()
    with sqlite3.connect(tmp_path / "journal.db") as db:
        db.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT 'events', 0"
            " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')"
        )
        db.execute(
            "UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (2**63 - 1,)
        )
    with pytest.raises(JournalError, match="used up its event ids"):
        SqliteJournal.open(tmp_path / "journal.db")


def test_a_page_ends_before_its_texts_pass_a_mebibyte(open_journal: Opener) -> None:
    """500 events of 64 KiB (33 MB) held the loop 49 ms as a service's answer."""
    journal = open_journal()
    for n in range(40):
        journal.append(event({"content": f"{n:02d}" + "x" * 60_000}))
    journal.flush()
    read: list[int] = []
    before = None
    while True:
        page = journal.query(EventQuery(limit=500, before_id=before))
        assert 1 <= len(page.events) <= MAX_PAGE_CHARS // 60_000
        read += [e["id"] for e in page.events]
        if (before := page.next) is None:
            break
    assert read == list(range(40, 0, -1))


def test_ids_holding_a_nul_read_back_whole(open_journal: Opener) -> None:
    """SQLite's substr stops at a NUL: an id is cut only when it is too long."""
    journal = open_journal()
    journal.append(
        event(trace_id="tr\x00ace", session_id="se\x00s", soul_id="so\x00ul")
    )
    journal.flush()
    (stored,) = _page(journal)
    assert (stored["trace_id"], stored["session_id"], stored["soul_id"]) == (
        "tr\x00ace",
        "se\x00s",
        "so\x00ul",
    )
