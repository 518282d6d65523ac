"""Where views live: the store's own database, with the positions they have reached.

Positions are tracking records (`Tracking(application_name, notification_id)`, the
eventsourcing library's public type) in our tracking recorder's table `chorus_tracking`
(`events.recorders`, `PositionRecorder`: single-row tracking, a position only moves
forward, else IntegrityError). A view transaction is the recorder's transaction: the
view writes its rows on its cursor and `track` records the position on the same cursor,
so both commit together or not at all.

    sqlite:///PATH      the store's file, through connections of the views' own
    postgresql://...    the store's database and schema (?schema=), a pool of the views' own
    memory://           an in-memory SQLite database per EventStore object, so that
                        projections are the same SQL everywhere and unit tests need no file

Each view transaction takes its lock first: on PostgreSQL a row lock on the tracking
row (or an advisory lock), on SQLite the write lock (the recorder begins a committing
transaction IMMEDIATE: a WAL read snapshot taken before a write could fail at once with
"database is locked"). Two runners on one projection therefore serialize, and a runner
whose expected position moved underneath it (another runner, a rebuild) rolls back and
re-reads.

The views read stored events through the store's recorder (`projections.log_reader`).
A database an earlier Chorus wrote holds the library's tracking table instead: its
positions are copied into ours on first open (docs/decisions/0015-own-recorders.md).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, Tracking

from events.backends import creating_tables, env_for, one_line, redact
from events.recorders import PositionRecorder, open_tracking
from events.store import EventStore, StoreUnavailable

SCHEMAS_TABLE = "projection_schemas"
_CREATE_SCHEMAS = (
    f"CREATE TABLE IF NOT EXISTS {SCHEMAS_TABLE} ("
    "name TEXT PRIMARY KEY, schema_version INTEGER NOT NULL)"
)


class PositionMoved(Exception):
    """The tracked position is not the one this runner read: someone else moved it."""


def tracking_name(projection: str) -> str:
    """The tracking record's application name for a projection."""
    return f"projection:{projection}"


class ViewCursor:
    """A cursor inside one view transaction. SQL uses `?` placeholders on every backend
    (no literal `?` in statements); rows come back as dicts.
    """

    def __init__(self, raw: Any, dialect: str) -> None:
        self.raw = raw  # the tracking recorder's (the driver's) cursor, for its methods
        self.dialect = dialect
        self._cur = raw
        self._pg = dialect == "postgres"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> ViewCursor:
        self._cur.execute(pg_sql(sql) if self._pg else sql, params)
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._cur.executemany(pg_sql(sql) if self._pg else sql, rows)

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Plain inserts of many rows (no ON CONFLICT): COPY on PostgreSQL, where it is
        several times faster than executemany; executemany on SQLite."""
        if not rows:
            return
        if self._pg:
            with self._cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            self._cur.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                rows,
            )

    def fetchone(self) -> dict[str, Any] | None:
        row = self._cur.fetchone()
        return None if row is None else dict(row)

    def fetchall(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._cur.fetchall()]

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount


_PG_SQL: dict[str, str] = {}


def pg_sql(sql: str) -> str:
    converted = _PG_SQL.get(sql)
    if converted is None:
        converted = _PG_SQL[sql] = sql.replace("%", "%%").replace("?", "%s")
    return converted


class ViewStore:
    """The views' database: transactions, tracked positions and view schema versions."""

    def __init__(self, tracking: PositionRecorder, url: str) -> None:
        self.tracking = tracking
        self.dialect = tracking.dialect
        self.url = url
        self._store: weakref.ref[EventStore] | None = None  # set by for_store; weak, as _VIEWS is

    @property
    def store(self) -> EventStore | None:
        """The event store these views are of (None once it is gone, or if opened without one)."""
        return self._store() if self._store is not None else None

    @classmethod
    def for_store(cls, store: EventStore) -> ViewStore:
        """The views of `store`'s database (one ViewStore per EventStore object)."""
        with _LOCK:
            views = _VIEWS.get(store)
            if views is None:
                views = _VIEWS[store] = cls._open(store)
                views._store = weakref.ref(store)
            return views

    @classmethod
    def _open(cls, store: EventStore) -> ViewStore:
        env = {**env_for(store.url), "POSTGRES_POOL_SIZE": "1"}  # views use one connection at a time
        try:
            with creating_tables(env):
                tracking = open_tracking(store.backend, env)
                try:
                    with tracking.transaction() as cursor:
                        cursor.execute(_CREATE_SCHEMAS)
                except BaseException:
                    tracking.close()
                    raise
            return cls(tracking, store.url)
        except (OperationalError, InterfaceError) as e:
            raise StoreUnavailable(
                f"cannot open views in {redact(store.url)}: {one_line(e)}"
            ) from e

    # -- transactions --------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, commit: bool = True) -> Iterator[ViewCursor]:
        """One database transaction; commits on success when `commit`, else rolls back.
        Unqualified table names are the store's schema's (PostgreSQL)."""
        with self.available(), self.tracking.transaction(commit=commit) as raw:
            yield ViewCursor(raw, self.dialect)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self.transaction(commit=False) as c:
            return c.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def available(self) -> Iterator[None]:
        """Turn "the database went away" into StoreUnavailable, with one line."""
        try:
            yield
        except InterfaceError as e:
            raise StoreUnavailable(f"views in {redact(self.url)} unavailable: {one_line(e)}") from e
        except OperationalError as e:
            if self.dialect == "sqlite" and not _sqlite_unavailable(e):
                raise  # a statement's error (syntax, no such table): a bug, not an outage
            raise StoreUnavailable(f"views in {redact(self.url)} unavailable: {one_line(e)}") from e

    # -- positions and schema versions (outside a transaction) -----------------------------

    def position(self, projection: str) -> int:
        with self.available():
            return self.tracking.max_tracking_id(tracking_name(projection)) or 0

    def schema_version(self, projection: str) -> int | None:
        rows = self.query(
            f"SELECT schema_version FROM {SCHEMAS_TABLE} WHERE name = ?", (projection,)
        )
        return rows[0]["schema_version"] if rows else None

    # -- inside a view transaction ---------------------------------------------------------

    def lock(self, c: ViewCursor, projection: str) -> None:
        """Serialize changes to one projection's tables (create, drop, reset)."""
        if self.dialect == "postgres":
            c.execute(
                "SELECT pg_advisory_xact_lock(hashtext('chorus.projection:' || current_schema() || ':' || ?))",
                (projection,),
            )
        # SQLite: a committing transaction holds the file's write lock from its start.

    def hold(self, c: ViewCursor, projection: str) -> None:
        """Lock the projection's tracked position, whatever it is, before changing its
        tables' structure (indexes, drop, create). Batches lock it first too (`claim`),
        so both take their locks in the same order: tracked position, then tables."""
        self.tracking.tracked(c.raw, tracking_name(projection), lock=True)

    def claim(self, c: ViewCursor, projection: str, expected: int) -> None:
        """Lock the projection's tracked position; raise PositionMoved unless it is `expected`."""
        found = self.tracking.tracked(c.raw, tracking_name(projection), lock=True)
        if found != expected:
            raise PositionMoved(f"{projection}: expected position {expected}, found {found}")

    def track(self, c: ViewCursor, projection: str, position: int) -> None:
        """Record `position` as processed, in the transaction of `c`."""
        self.tracking.track(c.raw, Tracking(tracking_name(projection), position))

    def stored_schema(self, c: ViewCursor, projection: str) -> int | None:
        row = c.execute(
            f"SELECT schema_version FROM {SCHEMAS_TABLE} WHERE name = ?", (projection,)
        ).fetchone()
        return None if row is None else row["schema_version"]

    def has_position(self, c: ViewCursor, projection: str) -> bool:
        return self.tracking.tracked(c.raw, tracking_name(projection)) is not None

    def reset(self, c: ViewCursor, projection: str, schema_version: int) -> None:
        """Position back to 0 and the stored schema version set, in `c`'s transaction."""
        self.tracking.untrack(c.raw, tracking_name(projection))
        self.track(c, projection, 0)
        c.execute(f"DELETE FROM {SCHEMAS_TABLE} WHERE name = ?", (projection,))
        c.execute(
            f"INSERT INTO {SCHEMAS_TABLE} (name, schema_version) VALUES (?, ?)",
            (projection, schema_version),
        )

    # -- inspection ------------------------------------------------------------------------

    def dump(self, tables: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of `tables`, sorted: what "the same view" means in tests."""
        out: dict[str, list[tuple[Any, ...]]] = {}
        with self.transaction(commit=False) as c:
            for table in tables:
                rows = c.execute(f"SELECT * FROM {table}").fetchall()
                out[table] = sorted((tuple(r.items()) for r in rows), key=repr)
        return out

    def close(self) -> None:
        self.tracking.close()


_LOCK = threading.Lock()
_VIEWS: weakref.WeakKeyDictionary[EventStore, ViewStore] = weakref.WeakKeyDictionary()

_SQLITE_OUTAGE = ("unable to open", "locked", "disk i/o", "readonly", "read-only", "busy", "closed")


def _sqlite_unavailable(e: BaseException) -> bool:
    text = str(e).lower()
    return any(word in text for word in _SQLITE_OUTAGE)
