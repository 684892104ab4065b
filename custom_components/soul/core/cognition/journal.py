"""The persistent event journal (XingChen-V §2): SQLite, WAL, group commit.

``SqliteJournal`` keeps every ``Event`` in one SQLite file (the glue puts it
at ``<config>/soul_journal.db``). The event loop only ever calls ``append``:
a put on a ``queue.SimpleQueue`` (about a microsecond) that never blocks and
never raises. One writer thread (``soul-journal-writer``, not a daemon) takes
whatever is waiting, up to ``BATCH_SIZE`` events, encodes it (JSON with
``ensure_ascii=False``) and inserts it with one ``executemany`` in ONE
transaction: one commit for a thousand events instead of a thousand commits.

The database runs in WAL mode with ``synchronous=FULL``: every commit is
fsynced, so a committed event survives a crash of Home Assistant and a power
cut alike; group commit pays that fsync once per batch, not per event.
Readers (``query``) use their own read-only connection per
call and never wait for the writer.

Retention: events older than ``max_age_days`` (30) are deleted, then, while
the file and its WAL are larger than ``max_bytes`` (100 MiB), the oldest tenth
of what is left, until they fit; the database is created with
``auto_vacuum=INCREMENTAL`` and the WAL is checkpointed (``TRUNCATE``), so
the file really shrinks. The writer purges by age every hour (of ``clock``)
and every ``PURGE_EVERY_COMMITS`` commits, by size whenever a commit leaves
the files over ``max_bytes``; ``purge()`` asks for one now.

Failures: ``open`` raises ``JournalError`` (with what to do) when the file is
not a SQLite database, is corrupt, is locked by another program or was
written by a newer Soul. A SQLite error later (a full disk, a file deleted or
damaged behind Soul's back) makes the writer call ``on_error`` once, from the
writer thread, and stop writing: every later event is dropped and counted in
``stats()["dropped"]``; Home Assistant keeps running. A lock held by another
program (``database is locked``) is waited out for up to ``BUSY_BUDGET``
seconds before it counts as a failure.

Rows are made by ``journal_codec`` and SQLite is spoken by ``journal_sql``.
Payloads are untrusted (docs/security.md): values JSON cannot hold are
stored as their ``str``, keys as strings, lone UTF-16 surrogates as U+FFFD,
non-finite numbers as strings, nesting deeper than 32 levels as a string,
and a payload (or psyche state) over ``MAX_PAYLOAD_BYTES`` of JSON as
``{"truncated": true, "bytes": <size>, "preview": <its first KiB>}``.
Callers must not change a payload after emitting it: the writer encodes it
later, in its own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import os
from pathlib import Path
import queue
import sqlite3
import threading
import time
from typing import Any, Final, Self

from ..logs import trace_logger
from . import journal_sql
from .events import MAX_QUERY_LIMIT, Event, EventPage, EventQuery
from .journal_codec import Row, encode_row, row_to_dict, stored_form
from .journal_sql import JournalError

__all__ = ["JournalError", "SqliteJournal", "stored_form"]

_LOGGER = trace_logger(__name__)

# Events the writer takes into one transaction.
BATCH_SIZE: Final = 1_000
# Woken by an event with less than a batch waiting, the writer first lets
# the rest of its turn come: a chat turn's events arrive over a few ms, and a
# writer encoding them meanwhile takes the GIL from the event loop running
# the turn (HTTP turn to intent_action, p50: 4.7 → 4.3 ms). A flush, a purge
# or a stop is never held back.
GATHER: Final = 0.02
# Events waiting for the writer; beyond, ``append`` drops the new one.
MAX_QUEUED: Final = 100_000
MAX_PAGE_CHARS: Final = 1024 * 1024  # the texts of one page's events, at most
# The writer purges by age every PURGE_EVERY_COMMITS commits or PURGE_EVERY
# seconds of ``clock``, whichever comes first.
PURGE_EVERY_COMMITS: Final = 1_000
PURGE_EVERY: Final = 3600.0
# How long a SQLite call waits for a lock held by someone else, and how long
# the writer keeps retrying a locked database before it gives up.
BUSY_TIMEOUT: Final = 1.0
OPEN_BUSY_TIMEOUT: Final = 5.0
BUSY_BUDGET: Final = 60.0
# How often the idle writer looks whether the interpreter is shutting down.
IDLE_POLL: Final = 1.0


@dataclass(slots=True)
class _Flush:
    """A marker: set ``done`` once everything queued before it is committed."""

    done: threading.Event = field(default_factory=threading.Event)


@dataclass(slots=True)
class _Purge:
    """A request to purge now; ``deleted`` is the number of events removed."""

    done: threading.Event = field(default_factory=threading.Event)
    deleted: int = 0
    error: str | None = None


@dataclass(slots=True)
class _Stop:
    """The last item the writer takes: write what came before, then end."""


class SqliteJournal:
    """The journal in one SQLite file; see the module docstring.

    Build it with ``SqliteJournal.open`` (blocking). ``append`` is for the
    event loop; ``query``, ``flush``, ``purge`` and ``close`` block and belong
    in an executor; ``stats`` is cheap from any thread.
    """

    def __init__(
        self,
        path: Path,
        connection: sqlite3.Connection,
        *,
        max_age_days: float,
        max_bytes: int,
        clock: Callable[[], float],
        on_error: Callable[[Exception], None] | None,
        oldest: float | None,
    ) -> None:
        """Take over an opened, checked connection; ``open`` is the way in."""
        self.path = path
        self.max_age_days = max_age_days
        self.max_bytes = max_bytes
        self._clock = clock
        self._on_error = on_error
        self._connection = connection
        self._queue: queue.SimpleQueue[Event | _Flush | _Purge | _Stop] = (
            queue.SimpleQueue()
        )
        # Written by ``append`` (the event loop) only.
        self._appended = 0
        self._refused = 0
        # Written by the writer thread only.
        self._written = 0
        self._lost = 0
        self._commits = 0
        self._last_purge = clock()
        self._purged_at = 0
        self._oldest = oldest
        self._last_error: str | None = None
        # Set once, read by ``append``: no more events are taken.
        self._closed = False
        self._failed = False
        # Set by ``close`` when the writer did not finish in time: give up.
        self._abandon = False
        self._error_reported = False
        self._close_lock = threading.Lock()
        # Set by a flush, a purge or a stop: the writer stops gathering.
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="soul-journal-writer", daemon=False
        )

    # -- opening -----------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        max_age_days: float = 30,
        max_bytes: int = 100 * 1024 * 1024,
        clock: Callable[[], float] = time.time,
        on_error: Callable[[Exception], None] | None = None,
    ) -> Self:
        """Open (or create) the journal at ``path`` and start its writer; blocking.

        Sets WAL mode, ``synchronous=FULL`` and ``auto_vacuum=INCREMENTAL``,
        creates the schema and checks the file (``integrity_check`` up to
        8 MiB, ``quick_check`` above). Raises ``JournalError`` when the file
        is not a SQLite database, is corrupt, is locked by another program
        or holds a newer schema. ``on_error`` is called once, from the writer
        thread, when a later SQLite error stops the journal.
        """
        db_path = Path(path)
        connection: sqlite3.Connection | None = None
        try:
            connection = sqlite3.connect(
                db_path,
                timeout=OPEN_BUSY_TIMEOUT,
                isolation_level=None,
                check_same_thread=False,
            )
            oldest = journal_sql.prepare(connection, db_path)
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        except (sqlite3.Error, OSError) as err:
            if connection is not None:
                connection.close()
            raise JournalError(journal_sql.describe_open_error(db_path, err)) from err
        except JournalError:
            if connection is not None:
                connection.close()
            raise
        journal = cls(
            db_path,
            connection,
            max_age_days=max_age_days,
            max_bytes=max_bytes,
            clock=clock,
            on_error=on_error,
            oldest=oldest,
        )
        journal._thread.start()
        return journal

    # -- the event loop's side ---------------------------------------------

    def append(self, event: Event) -> None:
        """Queue ``event`` for the writer; never blocks, never raises.

        After ``close``, after a fatal error, or with ``MAX_QUEUED`` events
        already waiting, the event is dropped and counted. Meant for one
        thread (the event loop): from several, events are still queued
        safely but the ``appended``/``dropped`` counts may miss some.
        """
        if self._closed or self._failed or self._queue.qsize() >= MAX_QUEUED:
            self._refused += 1
            return
        self._appended += 1
        self._queue.put(event)

    def stats(self) -> dict[str, Any]:
        """Return the journal's counters and size; cheap, any thread.

        ``appended`` events were queued, ``written`` committed, ``dropped``
        refused or lost (closed, failed, queue full, unstorable); ``queued``
        wait for the writer; ``bytes`` is the file plus its WAL.
        """
        return {
            "appended": self._appended,
            "written": self._written,
            "dropped": self._refused + self._lost,
            "queued": self._queue.qsize(),
            "commits": self._commits,
            "failed": self._failed,
            "closed": self._closed,
            "last_error": self._last_error,
            "bytes": journal_sql.file_bytes(self.path),
            "oldest_timestamp": self._oldest,
        }

    # -- blocking calls (executor) -----------------------------------------

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event appended before the call is committed (or dropped).

        Returns False when ``timeout`` seconds pass first; True at once when
        the writer has already stopped.
        """
        if not self._thread.is_alive():
            return True
        marker = _Flush()
        self._queue.put(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def purge(self, timeout: float = 60.0) -> int:
        """Apply the retention now (in the writer thread); return the events deleted.

        Raises ``JournalError`` when the journal is closed or failed, when
        the purge fails, or when it takes longer than ``timeout`` seconds (it
        then still finishes in the background).
        """
        if self._closed or self._failed or not self._thread.is_alive():
            raise JournalError("The event journal is closed or stopped; nothing purged")
        request = _Purge()
        self._queue.put(request)
        self._wake.set()
        if not request.done.wait(timeout):
            raise JournalError(f"Purging the event journal took over {timeout:g} s")
        if request.error is not None:
            raise JournalError(f"Purging the event journal failed: {request.error}")
        return request.deleted

    def query(self, q: EventQuery) -> EventPage:
        """Return one page of stored events, newest first; blocking.

        ``soul_ids`` None means every soul, an empty set none. Each event is
        ``Event.as_dict()``'s shape plus its ``id``; ``next`` is the
        ``before_id`` of the following page (None on the last one). Events
        not yet committed (see ``flush``) are not seen. Raises
        ``JournalError`` when the database cannot be read.
        """
        if (
            (q.soul_ids is not None and not q.soul_ids and not q.shared_soul_ids)
            or (q.types is not None and not q.types)
            or (q.before_id is not None and int(q.before_id) < 1)
        ):
            return EventPage()
        limit = max(1, min(int(q.limit), MAX_QUERY_LIMIT))
        sql, params = journal_sql.select_page(q, limit)
        try:
            reader = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=OPEN_BUSY_TIMEOUT,
            )
            try:
                try:
                    rows = reader.execute(sql, params).fetchall()
                except sqlite3.OperationalError as err:
                    if "decode" not in str(err):
                        raise
                    # Text that is not UTF-8 (Soul writes none; an edited or
                    # damaged row): read again, its bad bytes replaced. It
                    # made every page holding it fail until it was purged.
                    reader.text_factory = _replacing
                    rows = reader.execute(sql, params).fetchall()
            finally:
                reader.close()
        except sqlite3.Error as err:
            raise JournalError(f"Reading the event journal failed: {err}") from err
        more = len(rows) > limit
        events: list[dict[str, Any]] = []
        size = 0
        for row in rows[:limit]:
            # Home Assistant encodes a service's answer on the event loop: 500
            # events of 64 KiB (33 MB) held it 49 ms. A page ends before its
            # texts pass MAX_PAGE_CHARS; ``next`` reads on.
            size += sum(len(value) for value in row if type(value) is str)
            if events and size > MAX_PAGE_CHARS:
                more = True
                break
            events.append(row_to_dict(row))
        return EventPage(events=events, next=events[-1]["id"] if more else None)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, stop the writer, close the database; idempotent.

        Events appended from now on are dropped. When the writer does not
        finish within ``timeout`` (a lock held elsewhere), it is told to give
        up: it drops what is left, closes its connection and ends as soon as
        its SQLite call returns.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive():
            self._queue.put(_Stop())
            self._wake.set()
            self._thread.join(timeout)
            if self._thread.is_alive():
                _LOGGER.warning(
                    "The event journal's writer did not finish within %s s;"
                    " the events still queued are dropped",
                    timeout,
                )
                self._abandon = True

    # -- the writer thread -------------------------------------------------

    def _run(self) -> None:
        """Take batches off the queue and commit them until told to stop."""
        connection = self._connection
        try:
            self._purge(connection)
            while True:
                try:
                    first = self._queue.get(timeout=IDLE_POLL)
                except queue.Empty:
                    if not threading.main_thread().is_alive():
                        # The interpreter is exiting and nobody closed us:
                        # write what is left and let the process end.
                        self._closed = True
                        self._drain(connection)
                        return
                    self._purge_if_due(connection)
                    continue
                if isinstance(first, Event) and self._queue.qsize() < BATCH_SIZE:
                    self._wake.wait(GATHER)
                if self._handle(connection, first):
                    return
                # Every flush, purge or stop queued before this is answered.
                self._wake.clear()
        except Exception as err:  # noqa: BLE001 - the thread must not die silently
            self._fail(err)
        finally:
            connection.close()

    def _handle(self, connection: sqlite3.Connection, first: object) -> bool:
        """Write ``first`` and what else is waiting; return True on a stop."""
        rows: list[Row] = []
        item: object = first
        while True:
            if isinstance(item, Event):
                row = self._row(item)
                if row is not None:
                    rows.append(row)
            else:
                self._write(connection, rows)
                rows = []
                if isinstance(item, _Flush):
                    item.done.set()
                elif isinstance(item, _Purge):
                    self._answer_purge(connection, item)
                elif isinstance(item, _Stop):
                    self._drain(connection)
                    return True
            if len(rows) >= BATCH_SIZE:
                break
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
        self._write(connection, rows)
        return False

    def _drain(self, connection: sqlite3.Connection) -> None:
        """Write everything still queued (the last act of the writer)."""
        rows: list[Row] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Event):
                row = self._row(item)
                if row is not None:
                    rows.append(row)
            elif isinstance(item, (_Flush, _Purge)):
                self._write(connection, rows)
                rows = []
                item.done.set()
            if len(rows) >= BATCH_SIZE:
                self._write(connection, rows)
                rows = []
        self._write(connection, rows)

    def _row(self, event: Event) -> Row | None:
        """Return ``event`` as a row, or None (counted lost) when it cannot be."""
        if self._failed or self._abandon:
            self._lost += 1
            return None
        try:
            return encode_row(event, self._clock)
        except Exception:
            _LOGGER.exception("An event could not be stored in the journal")
            self._lost += 1
            return None

    def _write(self, connection: sqlite3.Connection, rows: list[Row]) -> None:
        """Commit ``rows`` in one transaction; a failure stops the journal."""
        if not rows:
            return
        if self._failed or self._abandon:
            self._lost += len(rows)
            return
        try:
            self._with_retry(lambda: journal_sql.insert(connection, rows))
        except sqlite3.Error as err:
            self._lost += len(rows)
            if not self._abandon:
                self._fail(err)
            return
        self._written += len(rows)
        self._commits += 1
        if self._oldest is None:
            self._oldest = rows[0][6]
        if journal_sql.file_bytes(self.path) > self.max_bytes:
            self._purge(connection)
        else:
            self._purge_if_due(connection)

    def _purge_if_due(self, connection: sqlite3.Connection) -> None:
        """Purge when an hour of ``clock`` or ``PURGE_EVERY_COMMITS`` commits passed."""
        if (
            self._clock() - self._last_purge >= PURGE_EVERY
            or self._commits - self._purged_at >= PURGE_EVERY_COMMITS
        ):
            self._purge(connection)

    def _with_retry[T](self, call: Callable[[], T]) -> T:
        """Run ``call``, retrying while another program holds the lock.

        Gives up (re-raises) after ``BUSY_BUDGET`` seconds, or at once once
        ``close`` has given up on the writer.
        """
        deadline = time.monotonic() + BUSY_BUDGET
        while True:
            try:
                return call()
            except sqlite3.OperationalError as err:
                busy = getattr(err, "sqlite_errorcode", None) in journal_sql.BUSY_CODES
                if not busy or time.monotonic() >= deadline or self._abandon:
                    raise
                time.sleep(0.05)

    def _answer_purge(self, connection: sqlite3.Connection, request: _Purge) -> None:
        try:
            request.deleted = self._purge(connection, raise_errors=True)
        except sqlite3.Error as err:
            request.error = str(err)
        finally:
            request.done.set()

    def _purge(
        self, connection: sqlite3.Connection, *, raise_errors: bool = False
    ) -> int:
        """Delete by age, then by size; return the number of events deleted.

        A lock held elsewhere skips the purge (the next one retries); another
        SQLite error stops the journal.
        """
        if self._failed or self._abandon:
            return 0
        self._last_purge, self._purged_at = self._clock(), self._commits
        try:
            deleted = journal_sql.purge_age(
                connection, self._clock() - self.max_age_days * 86400
            )
            if deleted:
                journal_sql.shrink(connection)
            deleted += journal_sql.purge_size(connection, self.path, self.max_bytes)
            oldest = journal_sql.oldest_timestamp(connection)
        except sqlite3.Error as err:
            if connection.in_transaction:
                connection.rollback()
            if getattr(err, "sqlite_errorcode", None) in journal_sql.BUSY_CODES:
                _LOGGER.debug("Event journal purge skipped: %s", err)
            else:
                self._fail(err)
            if raise_errors:
                raise
            return 0
        self._oldest = oldest
        return deleted

    def _fail(self, err: Exception) -> None:
        """Stop writing for good and tell ``on_error`` (once)."""
        self._failed = True
        self._last_error = f"{type(err).__name__}: {err}"
        if self._error_reported:
            return
        self._error_reported = True
        _LOGGER.error(
            "The event journal %s stopped writing: %s; new events are dropped",
            self.path,
            err,
        )
        if self._on_error is not None:
            try:
                self._on_error(err)
            except Exception:
                _LOGGER.exception("Error in the event journal's on_error callback")


def _replacing(data: bytes) -> str:
    """Decode a text column, its bytes that are not UTF-8 replaced."""
    return data.decode("utf-8", "replace")
