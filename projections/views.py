"""Where views live: the store's own database, with the library's tracking table.

Positions are the eventsourcing library's tracking records (`Tracking(application_name,
notification_id)`), written by its own `SQLiteTrackingRecorder` /
`PostgresTrackingRecorder` (single-row tracking: a position only moves forward, else
IntegrityError). As its process recorders do for events, we call its `_insert_tracking`
on the cursor of a transaction that also holds the view writes, so both commit together.

    sqlite:///PATH      the store's file, through connections of the views' own
    postgresql://...    the store's database and schema (?schema=), a pool of the views' own
    memory://           an in-memory SQLite database per EventStore object, so that
                        projections are the same SQL everywhere and unit tests need no file

Each view transaction takes its lock first: on PostgreSQL a row lock on the tracking
row (or an advisory lock), on SQLite a write that starts the write transaction (a WAL
read snapshot taken before a write can fail at once with "database is locked"). Two
runners on one projection therefore serialize, and a runner whose expected position
moved underneath it (another runner, a rebuild) rolls back and re-reads.

The views open the library's tracking recorder on a datastore of their own (the library's
public factory on the store's settings); they read stored events through the store's
recorder (`projections.log_reader`).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from eventsourcing.persistence import (
    InfrastructureFactory,
    InterfaceError,
    OperationalError,
    Tracking,
)
from eventsourcing.sqlite import SQLiteDatastore, SQLiteTrackingRecorder

from events.backends import creating_tables, env_for, one_line, redact
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


class SQLiteViewRecorder(SQLiteTrackingRecorder):
    """The library's SQLite tracking recorder, plus the table of view schema versions."""

    def construct_create_table_statements(self) -> list[str]:
        return [*super().construct_create_table_statements(), _CREATE_SCHEMAS]


def _postgres_view_recorder() -> type[Any]:
    """`PostgresViewRecorder`, defined on first use: its base class's module loads psycopg
    (0.1-0.2 s), which SQLite and in-memory stores, and `chorus --help`, never need."""
    global _PG_RECORDER
    with _PG_RECORDER_LOCK:
        if _PG_RECORDER is not None:
            return _PG_RECORDER
        from eventsourcing.postgres import PostgresTrackingRecorder

        class PostgresViewRecorder(PostgresTrackingRecorder):
            """The library's PostgreSQL tracking recorder, plus the table of view schema versions."""

            def __init__(self, datastore: Any, **kwargs: Any) -> None:
                super().__init__(datastore, **kwargs)
                from psycopg.sql import (  # lazily: only PostgreSQL needs the driver
                    SQL,
                    Identifier,
                )

                self.sql_create_statements.append(
                    SQL(
                        "CREATE TABLE IF NOT EXISTS {0}.{1} "
                        "(name TEXT PRIMARY KEY, schema_version INTEGER NOT NULL)"
                    ).format(Identifier(self.datastore.schema), Identifier(SCHEMAS_TABLE))
                )

        PostgresViewRecorder.__qualname__ = "PostgresViewRecorder"
        _PG_RECORDER = PostgresViewRecorder
        return _PG_RECORDER


_PG_RECORDER: type[Any] | None = None
_PG_RECORDER_LOCK = threading.Lock()


def __getattr__(name: str) -> Any:
    if name == "PostgresViewRecorder":  # `from projections.views import PostgresViewRecorder`
        return _postgres_view_recorder()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ViewCursor:
    """A cursor inside one view transaction. SQL uses `?` placeholders on every backend
    (no literal `?` in statements); rows come back as dicts.
    """

    def __init__(self, raw: Any, dialect: str) -> None:
        self.raw = raw  # the library's cursor, for its own recorder methods
        self.dialect = dialect
        self._cur = raw.sqlite_cursor if dialect == "sqlite" else raw
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

    def __init__(self, recorder: Any, dialect: str, url: str, *, owns_datastore: bool, factory: Any = None) -> None:
        self.recorder = recorder  # SQLiteViewRecorder | PostgresViewRecorder
        self.dialect = dialect
        self.url = url
        self._owns_datastore = owns_datastore
        self._factory = factory  # the library's, when these views opened their own
        if dialect == "postgres":
            self.tracking_table = recorder.tracking_table_name
            self.schema = recorder.datastore.schema
        else:
            self.tracking_table = "tracking"
            self.schema = ""
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
        try:
            if store.backend == "popo":
                name = f"file:chorus-views-{uuid.uuid4().hex}?mode=memory&cache=shared"
                datastore = SQLiteDatastore(name, lock_timeout=30, originator_id_type="text")
                recorder = SQLiteViewRecorder(datastore)
                recorder.create_table()
                return cls(recorder, "sqlite", store.url, owns_datastore=True)
            # The library's tracking recorder on a datastore of its own (its public
            # factory, on the store's settings): the store's recorders are ours.
            env = {**env_for(store.url), "POSTGRES_POOL_SIZE": "1"}  # views use one connection at a time
            factory = InfrastructureFactory.construct(env=env)
            if store.backend == "sqlite":
                return cls(factory.tracking_recorder(SQLiteViewRecorder), "sqlite", store.url,
                           owns_datastore=True, factory=factory)
            with creating_tables(env):
                tracking = factory.tracking_recorder(_postgres_view_recorder())
            return cls(tracking, "postgres", store.url, owns_datastore=True, factory=factory)
        except (OperationalError, InterfaceError) as e:
            raise StoreUnavailable(
                f"cannot open views in {redact(store.url)}: {one_line(e)}"
            ) from e

    # -- transactions --------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, commit: bool = True) -> Iterator[ViewCursor]:
        """One database transaction; commits on success when `commit`, else rolls back."""
        with self.available(), self.recorder.datastore.transaction(commit=commit) as raw:
            c = ViewCursor(raw, self.dialect)
            if self.dialect == "postgres":
                # Views are unqualified tables of the store's schema; LOCAL: this
                # transaction only, so the pool's connections stay as the library left them.
                from psycopg.sql import (  # lazily: only PostgreSQL needs the driver
                    SQL,
                    Identifier,
                )

                raw.execute(SQL("SET LOCAL search_path TO {0}").format(Identifier(self.schema)))
            yield c

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
            return self.recorder.max_tracking_id(tracking_name(projection)) or 0

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
                "SELECT pg_advisory_xact_lock(hashtext(?))",
                (f"chorus.projection:{self.schema}:{projection}",),
            )
        else:  # any write takes SQLite's write lock, waiting up to the lock timeout
            c.execute(
                f"UPDATE {SCHEMAS_TABLE} SET schema_version = schema_version WHERE name = ?",
                (projection,),
            )

    def hold(self, c: ViewCursor, projection: str) -> None:
        """Lock the projection's tracked position, whatever it is, before changing its
        tables' structure (indexes, drop, create). Batches lock it first too (`claim`),
        so both take their locks in the same order: tracked position, then tables."""
        name = tracking_name(projection)
        if self.dialect == "postgres":
            c.execute(
                f"SELECT notification_id FROM {self.tracking_table} WHERE application_name = ? FOR UPDATE",
                (name,),
            )
        else:
            c.execute(
                f"UPDATE {self.tracking_table} SET notification_id = notification_id "
                "WHERE application_name = ?",
                (name,),
            )

    def claim(self, c: ViewCursor, projection: str, expected: int) -> None:
        """Lock the projection's tracked position; raise PositionMoved unless it is `expected`."""
        name = tracking_name(projection)
        if self.dialect == "postgres":
            sql = f"SELECT notification_id FROM {self.tracking_table} WHERE application_name = ? FOR UPDATE"
        else:
            c.execute(
                f"UPDATE {self.tracking_table} SET notification_id = notification_id "
                "WHERE application_name = ?",
                (name,),
            )
            sql = f"SELECT notification_id FROM {self.tracking_table} WHERE application_name = ?"
        row = c.execute(sql, (name,)).fetchone()
        found = None if row is None else row["notification_id"]
        if found != expected:
            raise PositionMoved(f"{projection}: expected position {expected}, found {found}")

    def track(self, c: ViewCursor, projection: str, position: int) -> None:
        """Record `position` as processed, in the transaction of `c` (the library's insert)."""
        self.recorder._insert_tracking(c.raw, Tracking(tracking_name(projection), position))

    def stored_schema(self, c: ViewCursor, projection: str) -> int | None:
        row = c.execute(
            f"SELECT schema_version FROM {SCHEMAS_TABLE} WHERE name = ?", (projection,)
        ).fetchone()
        return None if row is None else row["schema_version"]

    def has_position(self, c: ViewCursor, projection: str) -> bool:
        row = c.execute(
            f"SELECT 1 AS found FROM {self.tracking_table} WHERE application_name = ?",
            (tracking_name(projection),),
        ).fetchone()
        return row is not None

    def reset(self, c: ViewCursor, projection: str, schema_version: int) -> None:
        """Position back to 0 and the stored schema version set, in `c`'s transaction."""
        c.execute(
            f"DELETE FROM {self.tracking_table} WHERE application_name = ?",
            (tracking_name(projection),),
        )
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
        if self._factory is not None:
            self._factory.close()
        elif self._owns_datastore:
            self.recorder.datastore.close()


_LOCK = threading.Lock()
_VIEWS: weakref.WeakKeyDictionary[EventStore, ViewStore] = weakref.WeakKeyDictionary()

_SQLITE_OUTAGE = ("unable to open", "locked", "disk i/o", "readonly", "read-only", "busy", "closed")


def _sqlite_unavailable(e: BaseException) -> bool:
    text = str(e).lower()
    return any(word in text for word in _SQLITE_OUTAGE)
