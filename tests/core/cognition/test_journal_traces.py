"""The journal finds a trace's events through its trace spans, whatever the batches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
import sqlite3

from custom_components.soul.core.cognition import journal_sql
from custom_components.soul.core.cognition.events import EventQuery, new_trace_id

from .journal_kit import DAY, START, Clock, Opener, all_ids, event


def spans(path: Path) -> list[tuple[str, int, int]]:
    """Return the rows of ``trace_spans`` in ``path``, ordered by first id."""
    raw = sqlite3.connect(path)
    try:
        return list(
            raw.execute("SELECT trace, first_id, last_id FROM trace_spans ORDER BY 2")
        )
    finally:
        raw.close()


def make_old(path: Path, version: int, *statements: str) -> None:
    """Turn the journal at ``path`` into one of schema ``version``: no spans, ``statements``."""
    raw = sqlite3.connect(path)
    try:
        raw.execute("DROP TABLE trace_spans")
        for statement in statements:
            raw.execute(statement)
        raw.execute(f"PRAGMA user_version = {version}")
        raw.commit()
    finally:
        raw.close()


def index_names(path: Path) -> set[str]:
    """Return the names of the indexes in ``path``."""
    raw = sqlite3.connect(path)
    try:
        query = "SELECT name FROM sqlite_master WHERE type = 'index'"
        return {row[0] for row in raw.execute(query)}
    finally:
        raw.close()


def trace_payloads(journal_query: object, trace_id: str) -> list[object]:
    page = journal_query(EventQuery(trace_id=trace_id))  # type: ignore[operator]
    return [stored["payload"]["n"] for stored in page.events]


def test_a_trace_is_found_through_its_spans(
    tmp_path: Path, open_journal: Opener
) -> None:
    journal = open_journal()
    for number in range(20):
        journal.append(event({"n": number}))
    wanted = event({"n": "the one"})
    journal.append(wanted)
    assert journal.flush()
    (found,) = journal.query(EventQuery(trace_id=wanted.trace_id)).events
    assert found["payload"] == {"n": "the one"}
    # Same first 8 characters, another trace: not found.
    other = wanted.trace_id[:8] + "0" * (len(wanted.trace_id) - 8)
    assert journal.query(EventQuery(trace_id=other)).events == []
    reader = sqlite3.connect(tmp_path / "journal.db")
    sql, params = journal_sql.select_page(EventQuery(trace_id=wanted.trace_id), 50)
    plan = " ".join(
        row[3] for row in reader.execute(f"EXPLAIN QUERY PLAN {sql}", params)
    )
    reader.close()
    assert "SEARCH s USING PRIMARY KEY (trace=?)" in plan
    assert "SCAN" not in plan  # no full pass over the events or the spans


def test_one_span_per_trace_and_commit(tmp_path: Path, open_journal: Opener) -> None:
    journal = open_journal()
    first, second = new_trace_id(), new_trace_id()
    for number in range(3):  # interleaved in one commit
        journal.append(event({"n": number}, trace_id=first))
        journal.append(event({"n": number}, trace_id=second))
    assert journal.flush()
    assert sorted(spans(tmp_path / "journal.db")) == sorted(
        [(first[:8], 1, 5), (second[:8], 2, 6)]
    )


def test_a_trace_over_many_commits_is_found_whole_and_alone(
    open_journal: Opener,
) -> None:
    """A turn's events arrive in several commits, others' events between them."""
    journal = open_journal()
    turn = new_trace_id()
    # Another trace with the same first 8 characters shares its spans' key.
    twin = turn[:8] + "f" * (len(turn) - 8)
    for number in range(4):
        journal.append(event({"n": f"noise {number}"}))
        journal.append(event({"n": number}, trace_id=turn))
        journal.append(event({"n": f"twin {number}"}, trace_id=twin))
        assert journal.flush()  # one commit each
    assert trace_payloads(journal.query, turn) == [3, 2, 1, 0]
    assert trace_payloads(journal.query, twin) == [f"twin {n}" for n in (3, 2, 1, 0)]
    # With the other filters and pages.
    page = journal.query(EventQuery(trace_id=turn, soul_ids=frozenset({"soul-a"})))
    assert len(page.events) == 4
    first = journal.query(EventQuery(trace_id=turn, limit=3))
    rest = journal.query(EventQuery(trace_id=turn, before_id=first.next))
    assert [e["payload"]["n"] for e in first.events + rest.events] == [3, 2, 1, 0]


def test_a_large_batch_keeps_its_spans_exact(
    tmp_path: Path, open_journal: Opener
) -> None:
    """Past INSERT_CHUNK rows a commit, the ids the spans name are the rows'."""
    journal = open_journal()
    traces = [new_trace_id() for _ in range(7)]
    count = journal_sql.INSERT_CHUNK * 2 + 13
    for number in range(count):
        journal.append(event({"n": number}, trace_id=traces[number % 7]))
    assert journal.flush()
    for index, trace in enumerate(traces):
        expected = list(range(count))[index::7][::-1]
        assert trace_payloads(journal.query, trace) == expected
    assert len(spans(tmp_path / "journal.db")) <= 7 * 3  # at most one per commit


def test_purging_drops_the_spans_of_deleted_events(
    tmp_path: Path, open_journal: Opener
) -> None:
    clock = Clock(START + 40 * DAY)
    journal = open_journal(clock=clock, max_age_days=30)
    old, new = new_trace_id(), new_trace_id()
    journal.append(event({"n": "old"}, trace_id=old, timestamp=START))
    assert journal.flush()
    journal.append(event({"n": "new"}, trace_id=new, timestamp=START + 39 * DAY))
    assert journal.flush()
    assert len(spans(tmp_path / "journal.db")) == 2
    assert journal.purge() == 1
    assert [key for key, _, _ in spans(tmp_path / "journal.db")] == [new[:8]]
    assert trace_payloads(journal.query, new) == ["new"]
    assert trace_payloads(journal.query, old) == []


def test_a_schema_1_journal_is_upgraded_in_place(
    tmp_path: Path, open_journal: Opener
) -> None:
    path = tmp_path / "journal.db"
    old = open_journal(path)  # the clock at START: nothing is purged by age
    kept = event({"n": "old"})
    old.append(kept)
    assert old.flush()
    old.close()
    # What Soul's first journal looked like: a whole-trace_id index, an
    # index of the type, no user_id column, no trace spans, version 1.
    make_old(
        path,
        1,
        "CREATE INDEX events_trace_id ON events (trace_id)",
        "CREATE INDEX events_type ON events (type)",
        "ALTER TABLE events DROP COLUMN user_id",
    )
    upgraded = open_journal(path)
    (found,) = upgraded.query(EventQuery(trace_id=kept.trace_id)).events
    assert found["payload"] == {"n": "old"}
    mine = replace(event({"n": "new"}), user_id="user-a")
    upgraded.append(mine)
    assert upgraded.flush()
    upgraded.close()
    names = index_names(path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone() == (5,)
    users = dict(raw.execute("SELECT trace_id, user_id FROM events"))
    raw.close()
    assert "events_trace_id" not in names
    assert "events_type" not in names  # schema 4
    # Schema 3: the user of an event's session; older rows name none.
    assert users == {kept.trace_id: None, mine.trace_id: "user-a"}


def test_a_schema_4_journal_gets_spans_for_its_events(
    tmp_path: Path, open_journal: Opener
) -> None:
    path = tmp_path / "journal.db"
    old = open_journal(path)
    turn = new_trace_id()
    for number in range(3):
        old.append(event({"n": "noise"}))
        old.append(event({"n": number}, trace_id=turn))
        assert old.flush()
    old.close()
    # Schema 4 indexed the first 8 characters of the trace id, no spans.
    make_old(path, 4, "CREATE INDEX events_trace ON events (substr(trace_id, 1, 8))")
    upgraded = open_journal(path)
    assert trace_payloads(upgraded.query, turn) == [2, 1, 0]
    assert len(all_ids(upgraded)) == 6
    upgraded.close()
    assert "events_trace" not in index_names(path)
    # One span per trace over what was stored: its first and last event.
    assert (turn[:8], 2, 6) in spans(path)
