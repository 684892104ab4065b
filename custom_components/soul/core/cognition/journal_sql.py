"""The journal's SQLite side: schema, pragmas, the page query, inserts, purges.

Functions of the writer's connection (``prepare``, ``insert``, the purges)
and of a reader's (``select_page``); ``journal.SqliteJournal`` calls them.
``prepare`` sets WAL mode, ``synchronous=FULL`` (every commit fsynced) and
``auto_vacuum=INCREMENTAL``, checks the file and creates or upgrades the
schema (1: a whole-``trace_id`` index; 2: its first 8 characters; 3: the
``user_id`` of an event of one user's session; 4: no index of the type; 5:
``trace_spans`` in place of an index of the trace id).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
import sqlite3
from typing import Any, Final

from .events import MAX_EVENT_ID, EventQuery
from .journal_codec import Row

SCHEMA_VERSION: Final = 5
BUSY_CODES: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL,
    type TEXT NOT NULL,
    source TEXT NOT NULL,
    soul_id TEXT,
    session_id TEXT,
    terminal_id TEXT,
    timestamp REAL NOT NULL,
    payload TEXT NOT NULL,
    psyche_state TEXT,
    user_id TEXT
);
CREATE INDEX IF NOT EXISTS events_soul_id ON events (soul_id, id);
CREATE INDEX IF NOT EXISTS events_session_id ON events (session_id);
CREATE INDEX IF NOT EXISTS events_timestamp ON events (timestamp);
CREATE TABLE IF NOT EXISTS trace_spans (
    trace TEXT NOT NULL,
    first_id INTEGER NOT NULL,
    last_id INTEGER NOT NULL,
    PRIMARY KEY (trace, first_id)
) WITHOUT ROWID;
"""
# Where a trace's events are: one row per trace and commit, keyed by the
# trace id's first 8 characters (as selective for UUID4s), holding the first
# and the last event id of that trace in that commit. A turn's three to five
# events cost one random-key insert, not one each (docs/cognition.md).
_SPAN_INSERT: Final = "INSERT OR REPLACE INTO trace_spans VALUES (?, ?, ?)"
_SPANS_FROM_EVENTS: Final = (
    "INSERT OR REPLACE INTO trace_spans"
    " SELECT substr(trace_id, 1, 8), min(id), max(id) FROM events GROUP BY trace_id"
)
TRACE_KEY_CHARS: Final = 8
_ROW_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_INTO = (
    "INSERT INTO events (trace_id, type, source, soul_id, session_id,"
    " terminal_id, timestamp, payload, psyche_state, user_id) VALUES "
)
INSERT: Final = _INSERT_INTO + _ROW_VALUES
# Rows one INSERT statement carries (one VALUES list): a statement's fixed
# cost — AUTOINCREMENT's sqlite_sequence read and write, the step and reset —
# is paid once for them, about 12 % of a row's insert (docs/cognition.md).
INSERT_CHUNK: Final = 100
_INSERT_MANY: Final = _INSERT_INTO + ", ".join([_ROW_VALUES] * INSERT_CHUNK)
COLUMNS: Final = (
    "id, trace_id, type, source, soul_id, session_id, terminal_id, timestamp,"
    " payload, psyche_state"
)


# What a page reads of each row: a text cut to what Soul writes (ids 256
# characters, JSON 64 KiB), so an edited row of 10 MB is not read whole.
# A text is cut only when its bytes say it is longer (``substr`` stops at a
# NUL, which an id may hold); the reader cuts it to the exact length.
def _capped(column: str, characters: int) -> str:
    return (
        f"CASE WHEN length(CAST({column} AS BLOB)) > {4 * characters}"
        f" THEN substr({column}, 1, {characters}) ELSE {column} END"
    )


SELECTED: Final = ", ".join(
    [
        "id",
        *(
            _capped(column, 256)
            for column in (
                "trace_id",
                "type",
                "source",
                "soul_id",
                "session_id",
                "terminal_id",
            )
        ),
        "timestamp",
        _capped("payload", 65536),
        _capped("psyche_state", 65536),
    ]
)
# Past this event id the journal stops at open: SQLite's ids are running out.
LAST_EVENT_ID: Final = MAX_EVENT_ID - 2**20
# A timestamp as Soul writes it (an edited row may hold text or a blob).
NUMERIC_TIME: Final = "typeof(timestamp) IN ('real', 'integer')"
LATEST_TIME: Final = 1e11  # seconds (the year 5138): no clock writes later
# More soul ids than this go to SQLite as one JSON array, not one parameter each.
_INLINE_IDS = 64

# Rows one DELETE removes when purging by age (short transactions).
PURGE_CHUNK: Final = 5_000
# Up to this size ``open`` runs a full integrity_check, above a quick_check.
FULL_CHECK_BYTES: Final = 8 * 1024 * 1024
# After a checkpoint the WAL file is cut back to this size.
WAL_SIZE_LIMIT: Final = 4 * 1024 * 1024


class JournalError(Exception):
    """The journal cannot be used; ``str()`` says why and what to do."""


def select_page(q: EventQuery, limit: int) -> tuple[str, list[Any]]:
    """Return the SELECT of one page of ``q`` (``limit`` + 1 rows) and its parameters."""
    where: list[str] = []
    params: list[Any] = []
    if q.soul_ids is not None:
        souls = _in_souls(q.soul_ids, params)
        if q.shared_soul_ids:
            # events.shared_soul_readable, in SQL.
            shared = _in_souls(q.shared_soul_ids, params)
            params.append(q.reader_id)
            souls = (
                f"({souls} OR ({shared} AND (user_id = ?"
                " OR (user_id IS NULL AND session_id IS NULL))))"
            )
        where.append(souls)
    if q.session_id is not None:
        where.append("session_id = ?")
        params.append(q.session_id)
    if q.trace_id is not None:
        # The trace's spans give ranges of ids; the whole id is checked on
        # the rows inside them (other traces' events may sit between).
        where.append(
            "id IN (SELECT e.id FROM trace_spans AS s JOIN events AS e"
            " ON e.id BETWEEN s.first_id AND s.last_id WHERE s.trace = ?)"
            " AND trace_id = ?"
        )
        params.extend((q.trace_id[:TRACE_KEY_CHARS], q.trace_id))
    if q.types is not None:
        types = sorted(str(t) for t in q.types)
        where.append(f"type IN ({', '.join('?' * len(types))})")
        params.extend(types)
    if q.since is not None:
        where.append("timestamp >= ?")
        params.append(float(q.since))
    if q.until is not None:
        where.append("timestamp <= ?")
        params.append(float(q.until))
    if q.before_id is not None and int(q.before_id) <= MAX_EVENT_ID:
        # Beyond SQLite's INTEGER every id is before it (no OverflowError).
        where.append("id < ?")
        params.append(int(q.before_id))
    sql = f"SELECT {SELECTED} FROM events"  # noqa: S608 - fixed fragments only
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(limit + 1)
    return sql, params


def _in_souls(soul_ids: frozenset[str], params: list[Any]) -> str:
    """Return ``soul_id IN (…)`` for ``soul_ids``, adding its parameters."""
    ids = sorted(soul_ids)
    if len(ids) <= _INLINE_IDS:
        params.extend(ids)
        return f"soul_id IN ({', '.join('?' * len(ids))})"
    params.append(json.dumps(ids))
    return "soul_id IN (SELECT value FROM json_each(?))"


def prepare(connection: sqlite3.Connection, path: Path) -> float | None:
    """Set the pragmas, create or check the schema; return the oldest timestamp."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"The event journal {path} was written by a newer Soul (schema"
            f" {version}, this one knows {SCHEMA_VERSION}); update Soul or move"
            " the file away"
        )
    if connection.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        # Only takes effect on an empty file, or through a VACUUM.
        connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
        connection.execute("VACUUM")
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise JournalError(
            f"The event journal {path} cannot use WAL mode (got {mode});"
            " is it on a network file system?"
        )
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    size = file_bytes(path)
    check = "integrity_check" if size <= FULL_CHECK_BYTES else "quick_check"
    problems = [row[0] for row in connection.execute(f"PRAGMA {check}").fetchall()]
    if problems != ["ok"]:
        raise JournalError(
            f"The event journal {path} is corrupt ({'; '.join(problems[:3])});"
            " move it away and Soul starts a new one"
        )
    columns = {row[1] for row in connection.execute("PRAGMA table_info(events)")}
    if columns and not {name.strip() for name in COLUMNS.split(",")} <= columns:
        raise JournalError(
            f"{path} holds an 'events' table that is not Soul's event journal;"
            " choose another file"
        )
    # Schema 1 indexed whole trace ids, 2 to 4 their first 8 characters; 5
    # keeps trace spans instead, built here from the events already stored.
    drop = "DROP INDEX IF EXISTS events_trace_id;" if version < 2 else ""
    if version < 5:
        drop += " DROP INDEX IF EXISTS events_trace;"
    # Schema 4 has no index of the type: five values, read newest first by id
    # within a soul or a session, it cost a sixth of every write.
    if version < 4:
        drop += " DROP INDEX IF EXISTS events_type;"
    # Schema 3 added user_id; older rows keep none (no user reads them on a
    # shared soul).
    add = (
        "ALTER TABLE events ADD COLUMN user_id TEXT;"
        if columns and "user_id" not in columns
        else ""
    )
    spans = f"{_SPANS_FROM_EVENTS};" if columns and version < 5 else ""
    connection.executescript(f"BEGIN; {drop} {add} {_SCHEMA} {spans} COMMIT;")
    if version < SCHEMA_VERSION:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    # An edited row's timestamp of text, a blob or infinity would never be
    # purged by age (text and blobs sort after every number, as in the index).
    # Through the index (a NULL, possible only in a table rebuilt without its
    # NOT NULL, would make it a scan of the table: it stays, read as none).
    connection.execute(f"DELETE FROM events WHERE timestamp > {LATEST_TIME}")  # noqa: S608
    last = connection.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'events'"
    ).fetchone()
    if last is not None and isinstance(last[0], int) and last[0] >= LAST_EVENT_ID:
        raise JournalError(
            f"The event journal {path} has used up its event ids; move it away"
            " and Soul starts a new one"
        )
    return oldest_timestamp(connection)


def oldest_timestamp(connection: sqlite3.Connection) -> float | None:
    """Return the oldest event's timestamp (of those with one), or None."""
    row = connection.execute(
        f"SELECT timestamp FROM events WHERE {NUMERIC_TIME} ORDER BY id LIMIT 1"  # noqa: S608
    ).fetchone()
    return float(row[0]) if row is not None else None


def describe_open_error(path: Path, err: Exception) -> str:
    """Say what went wrong opening ``path`` and what to do about it."""
    code = getattr(err, "sqlite_errorcode", None)
    if code in BUSY_CODES:
        return (
            f"The event journal {path} is locked by another program ({err});"
            " close it or restart Home Assistant"
        )
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return (
            f"The event journal {path} is not a SQLite database or is corrupt"
            f" ({err}); move it away and Soul starts a new one"
        )
    return f"The event journal {path} cannot be opened: {err}"


def insert(connection: sqlite3.Connection, rows: list[Row]) -> None:
    """Insert ``rows`` and their trace spans in one transaction, in order.

    ``INSERT_CHUNK`` rows a statement, the rest one each; rolled back on an
    error.
    """
    connection.execute("BEGIN IMMEDIATE")
    try:
        whole = len(rows) - len(rows) % INSERT_CHUNK
        for start in range(0, whole, INSERT_CHUNK):
            connection.execute(
                _INSERT_MANY,
                list(itertools.chain.from_iterable(rows[start : start + INSERT_CHUNK])),
            )
        if whole < len(rows):
            connection.executemany(INSERT, rows[whole:])
        connection.executemany(_SPAN_INSERT, _spans(connection, rows))
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.rollback()
        raise


def _spans(
    connection: sqlite3.Connection, rows: list[Row]
) -> list[tuple[str, int, int]]:
    """Return the trace spans of ``rows``, just inserted in this transaction.

    One writer inserts them in one transaction, so AUTOINCREMENT gave them
    consecutive ids ending at ``last_insert_rowid()``.
    """
    first = connection.execute("SELECT last_insert_rowid()").fetchone()[0] - len(rows)
    spans: dict[str, list[int]] = {}
    for offset, row in enumerate(rows, first + 1):
        key = row[0][:TRACE_KEY_CHARS]
        span = spans.get(key)
        if span is None:
            spans[key] = [offset, offset]
        else:
            span[1] = offset
    return [(key, span[0], span[1]) for key, span in spans.items()]


def drop_spans(connection: sqlite3.Connection) -> None:
    """Delete the trace spans that end before the oldest event left."""
    connection.execute(
        "DELETE FROM trace_spans WHERE last_id <"
        " coalesce((SELECT min(id) FROM events), 9223372036854775807)"
    )


def purge_age(connection: sqlite3.Connection, cutoff: float) -> int:
    """Delete events older than ``cutoff``, ``PURGE_CHUNK`` per transaction."""
    deleted = 0
    while True:
        cursor = connection.execute(
            "DELETE FROM events WHERE id IN"
            " (SELECT id FROM events WHERE timestamp < ? LIMIT ?)",
            (cutoff, PURGE_CHUNK),
        )
        deleted += cursor.rowcount
        if cursor.rowcount < PURGE_CHUNK:
            if deleted:
                drop_spans(connection)
            return deleted


def purge_size(connection: sqlite3.Connection, path: Path, max_bytes: int) -> int:
    """Delete the oldest tenth of the events while the files exceed ``max_bytes``."""
    deleted = 0
    if file_bytes(path) <= max_bytes:
        return 0
    if not shrink(connection):
        return 0
    while file_bytes(path) > max_bytes:
        count = connection.execute("SELECT count(*) FROM events").fetchone()[0]
        if not count:
            break
        cursor = connection.execute(
            "DELETE FROM events WHERE id IN"
            " (SELECT id FROM events ORDER BY id LIMIT ?)",
            (max(1, count // 10),),
        )
        deleted += cursor.rowcount
        drop_spans(connection)
        if not shrink(connection):
            break  # a reader holds the WAL: deleting more would not help now
    return deleted


def shrink(connection: sqlite3.Connection) -> bool:
    """Give free pages back to the file system; False when a reader blocked it."""
    connection.execute("PRAGMA incremental_vacuum").fetchall()
    busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return not busy


def file_bytes(path: Path) -> int:
    """Return the size of the database and its WAL (0 for missing files)."""
    total = 0
    for name in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            total += name.stat().st_size
    return total
