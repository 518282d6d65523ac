"""The SQLite recorders (`sqlite:///PATH`), on the standard library's `sqlite3`.

Tables (ours, not the eventsourcing library's):

    chorus_events     position INTEGER PRIMARY KEY (the rowid: the global order),
                      stream_id, version (UNIQUE together), topic, state
    chorus_snapshots  stream_id, version (the primary key), topic, state
    chorus_tracking   name (the primary key), position: tracked positions (the views')

Each thread has its own connection (autocommit mode; transactions are explicit), the
file is in WAL mode (readers never wait for the writer), and the threads of one process
write one at a time behind a lock, so they queue here rather than spinning on SQLite's
busy timeout (which remains for other processes). SQLite has no notifications:
`subscribe` raises NotImplementedError and the store polls.

A file written by an earlier Chorus holds the library's tables (`stored_events`,
`snapshots`); opening it copies them into ours once, keeping positions (the library's
rowids), so views tracking those positions stay right (docs/decisions/0015-own-recorders.md).
Its tracking table (`tracking`, the views' positions) is copied into ours the same way
when the tracking recorder first opens it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from eventsourcing.persistence import (
    IntegrityError,
    Notification,
    ProgrammingError,
    StoredEvent,
    Subscription,
    Tracking,
)

from events.recorders.base import (
    SNAPSHOTS,
    TABLE,
    TRACKING,
    EventRecorder,
    Group,
    PositionRecorder,
    Record,
    Row,
    SnapshotRecorder,
    check_group_streams,
    library_error,
    log_query,
    stream_query,
)

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, "
    "version INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL, UNIQUE (stream_id, version))",
    f"CREATE TABLE IF NOT EXISTS {SNAPSHOTS} (stream_id TEXT NOT NULL, version INTEGER NOT NULL, "
    "topic TEXT NOT NULL, state BLOB NOT NULL, PRIMARY KEY (stream_id, version)) WITHOUT ROWID",
)
# The eventsourcing library's tables, as an earlier Chorus wrote them: copied once.
_LEGACY = (
    f"INSERT INTO {TABLE} (position, stream_id, version, topic, state) "
    "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events ORDER BY rowid",
    f"INSERT INTO {SNAPSHOTS} (stream_id, version, topic, state) "
    "SELECT originator_id, originator_version, topic, state FROM snapshots",
)
_ROWS = f"SELECT version, topic, state FROM {TABLE} WHERE stream_id = ?"
_HEAD = f"SELECT version FROM {TABLE} WHERE stream_id = ? ORDER BY version DESC LIMIT 1"
_INSERT = f"INSERT INTO {TABLE} (stream_id, version, topic, state) VALUES (?, ?, ?, ?)"
_RECORD = f"SELECT position, stream_id, version, topic, state FROM {TABLE}"
_CREATE_TRACKING = (
    f"CREATE TABLE IF NOT EXISTS {TRACKING} (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID"
)
# The library's tracking table, as an earlier Chorus's views wrote it: copied once (its
# own "__migration__" row is not a position).
_LEGACY_TRACKING = (
    f"INSERT INTO {TRACKING} (name, position) SELECT application_name, max(notification_id) "
    "FROM tracking WHERE application_name <> '__migration__' GROUP BY application_name"
)
_TRACK = (
    f"INSERT INTO {TRACKING} (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE "
    f"SET position = excluded.position WHERE {TRACKING}.position < excluded.position RETURNING position"
)


class SQLiteDatabase:
    """Connections to one file: one per thread, and a lock the writers take. `path` may
    be an SQLite URI (`file:NAME?mode=memory&cache=shared`): an in-memory database,
    whose readers take the writers' lock too (its connections share one cache, where a
    read beside a write fails at once instead of waiting)."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.memory = "mode=memory" in path
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        with self.errors():
            conn = self.connection()
            if not self.memory and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")  # a property of the file

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False,
                                   uri=True)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _idle(self) -> sqlite3.Connection:
        """This thread's connection, outside any transaction: a transaction begun inside
        another on the same thread is an error at once, not a wait on our own lock."""
        with self.errors():
            conn = self.connection()
        if conn.in_transaction:
            raise ProgrammingError("a transaction is open on this thread already: transactions do not nest")
        return conn

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as e:
            raise library_error(e, sqlite3) from e

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (one snapshot of the file for all its statements), rolled
        back at its end: it writes nothing."""
        conn = self._idle()
        with self.write_lock if self.memory else contextlib.nullcontext(), self.errors():
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed on success, rolled back on any error."""
        conn = self._idle()
        with self.write_lock, self.errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def create_tables(self) -> None:
        with self.writing() as conn:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for statement in _CREATE:
                conn.execute(statement)
            if TABLE not in have and {"stored_events", "snapshots"} <= have:
                for statement in _LEGACY:
                    conn.execute(statement)

    def close(self) -> None:
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


def _select_events(db: SQLiteDatabase, table: str, originator_id: Any, gt: int | None, lte: int | None,
                   desc: bool, limit: int | None) -> list[StoredEvent]:
    select = f"SELECT stream_id, version, topic, state FROM {table} WHERE stream_id = ?"
    text, params = stream_query(select, "?", str(originator_id), gt, lte, desc, limit)
    with db.errors():
        rows = db.connection().execute(text, params).fetchall()
    return [StoredEvent(*row) for row in rows]


def _insert(conn: sqlite3.Connection, stored: Sequence[StoredEvent]) -> list[int]:
    positions = []
    for s in stored:
        cur = conn.execute(_INSERT, (str(s.originator_id), s.originator_version, s.topic, s.state))
        positions.append(cur.lastrowid)
    return positions  # type: ignore[return-value]  # an INSERT's rowid is set


class SQLiteRecorder(EventRecorder):
    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    # -- the library's interface -------------------------------------------------------

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        with self.db.writing() as conn:
            return _insert(conn, stored_events)

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        return _select_events(self.db, TABLE, originator_id, gt, lte, desc, limit)

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None, topics: Sequence[str] = (), *, inclusive_of_start: bool = True
    ) -> Sequence[Notification]:
        first, after = (start, None) if inclusive_of_start else (None, start)
        text, params = log_query(_RECORD, "?", limit, after=after, start=first, stop=stop, topics=topics)
        with self.db.errors():
            rows = self.db.connection().execute(text, params).fetchall()
        return [Notification(id=p, originator_id=o, originator_version=v, topic=t, state=s) for p, o, v, t, s in rows]

    def max_notification_id(self) -> int | None:
        with self.db.errors():
            row = self.db.connection().execute(f"SELECT max(position) FROM {TABLE}").fetchone()
        return row[0] if row else None

    def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()) -> Subscription[Any]:
        raise NotImplementedError("SQLite has no notifications: poll select_notifications")

    # -- the store's fast paths ----------------------------------------------------------

    def stream_rows(self, stream_id: str, gt: int | None = None, lte: int | None = None) -> list[Row]:
        text, params = stream_query(_ROWS, "?", stream_id, gt, lte)
        with self.db.errors():
            return self.db.connection().execute(text, params).fetchall()

    def latest(self, stream_id: str, snapshots: SnapshotRecorder) -> tuple[Row | None, list[Row]]:
        with self.db.reading() as conn:
            snap = conn.execute(
                f"SELECT version, topic, state FROM {SNAPSHOTS} WHERE stream_id = ? ORDER BY version DESC LIMIT 1",
                (stream_id,),
            ).fetchone()
            rows = conn.execute(_ROWS + " AND version > ? ORDER BY version ASC", (stream_id, snap[0] if snap else 0)).fetchall()
        return snap, rows

    def append_checked(self, groups: Sequence[Group]) -> list[Any]:
        check_group_streams(groups)
        out: list[Any] = []
        with self.db.writing() as conn:
            for group in groups:
                failed = None
                for stream_id, expected, _ in group:
                    row = conn.execute(_HEAD, (stream_id,)).fetchone()
                    if (row[0] if row else 0) != expected:
                        failed = (stream_id, expected)
                        break
                out.append(failed or _insert(conn, [e for _, _, events in group for e in events]))
        return out

    def records(
        self, after: int, head: int, limit: int, topics: Sequence[str] = (), streams: Collection[str] = ()
    ) -> list[Record]:
        text, params = log_query(_RECORD, "?", limit, after=after, stop=head, topics=topics, streams=streams)
        with self.db.errors():
            return self.db.connection().execute(text, params).fetchall()

    def records_at(self, positions: Collection[int]) -> list[Record]:
        wanted = sorted(set(positions))
        found: list[Record] = []
        with self.db.reading() as conn:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                found += conn.execute(
                    _RECORD + f" WHERE position IN ({', '.join('?' * len(part))}) ORDER BY position", part
                ).fetchall()
        return found

    def close(self) -> None:
        self.db.close()


class SQLiteSnapshots(SnapshotRecorder):
    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        with self.db.writing() as conn:
            conn.executemany(
                f"INSERT INTO {SNAPSHOTS} (stream_id, version, topic, state) VALUES (?, ?, ?, ?)",
                [(str(s.originator_id), s.originator_version, s.topic, s.state) for s in stored_events],
            )
        return None

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        return _select_events(self.db, SNAPSHOTS, originator_id, gt, lte, desc, limit)


class SQLiteTracking(PositionRecorder):
    """Tracked positions in `chorus_tracking`, on connections of their own."""

    dialect = "sqlite"

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    @contextlib.contextmanager
    def transaction(self, *, commit: bool = True) -> Iterator[sqlite3.Cursor]:
        with self.db.writing() if commit else self.db.reading() as conn:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row
            yield cursor

    def track(self, cursor: sqlite3.Cursor, tracking: Tracking) -> None:
        if cursor.execute(_TRACK, (tracking.application_name, tracking.notification_id)).fetchone() is None:
            raise IntegrityError(f"{tracking.application_name} is at or past {tracking.notification_id} already")

    def tracked(self, cursor: sqlite3.Cursor, name: str, *, lock: bool = False) -> int | None:
        # A committing transaction began IMMEDIATE: it holds the file's write lock already.
        row = cursor.execute(f"SELECT position FROM {TRACKING} WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]  # type: ignore[no-any-return]

    def untrack(self, cursor: sqlite3.Cursor, name: str) -> None:
        cursor.execute(f"DELETE FROM {TRACKING} WHERE name = ?", (name,))

    def close(self) -> None:
        self.db.close()


def open_sqlite_tracking(path: str, timeout: float = 30.0) -> SQLiteTracking:
    """Tracked positions in the SQLite file (or URI) at `path`; an earlier Chorus's
    tracking table there is copied in on first open."""
    db = SQLiteDatabase(path, timeout)
    try:
        with db.writing() as conn:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            conn.execute(_CREATE_TRACKING)
            if TRACKING not in have and "tracking" in have:
                conn.execute(_LEGACY_TRACKING)
    except BaseException:
        db.close()
        raise
    return SQLiteTracking(db)


def open_sqlite(path: str, timeout: float = 30.0) -> tuple[SQLiteRecorder, SQLiteSnapshots]:
    db = SQLiteDatabase(path, timeout)
    try:
        db.create_tables()
    except BaseException:
        db.close()
        raise
    return SQLiteRecorder(db), SQLiteSnapshots(db)
