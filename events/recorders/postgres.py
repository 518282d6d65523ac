"""The PostgreSQL recorders (`postgresql://...[?schema=NAME]`), on psycopg 3 and
psycopg_pool's public APIs.

Tables (ours, not the eventsourcing library's), in the URL's schema:

    chorus_events     position bigserial PRIMARY KEY (the global order), stream_id,
                      version (UNIQUE together), topic, state bytea
    chorus_snapshots  stream_id, version (the primary key), topic, state
    chorus_tracking   name (the primary key), position: tracked positions (the views')

Every write is one transaction sent in ONE round trip (a pipeline): BEGIN, `LOCK TABLE
chorus_events IN EXCLUSIVE MODE` (writers commit in position order, so a reader that
sees position N has seen every position before it), NOTIFY chorus_events, the INSERT,
COMMIT. `subscribe` LISTENs on that channel on a connection of its own. Reads and
writes that lose their connection are retried (the pool replaces it), as the library's
recorders do.

A schema that holds the library's tables from an earlier Chorus (`stored_events`) and
none of ours is refused with one line saying how to copy them
(docs/decisions/0015-own-recorders.md). The library's tracking table of the views'
positions (`notification_tracking`) is copied into ours when the tracking recorder first
opens the schema: positions are the same once the events were copied as 0015 says.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, TypeVar

import psycopg
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    Notification,
    OperationalError,
    PersistenceError,
    StoredEvent,
    Subscription,
    Tracking,
)
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

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
    WaitingSubscription,
    check_group_streams,
    library_error,
    log_query,
    stream_query,
)

_RETRIES = 10
_RETRY_WAIT = 0.2
T = TypeVar("T")


class LegacyTables(OperationalError):
    """The schema holds an earlier Chorus's tables (the library's) and none of ours."""


def postgres_error(e: BaseException) -> PersistenceError:
    """The eventsourcing library's error for a psycopg (or pool) error."""
    if isinstance(e, PoolTimeout):
        return OperationalError(str(e))
    return library_error(e, psycopg)


class PostgresDatabase:
    """A connection pool on one database and schema, and the statements on our tables."""

    def __init__(
        self,
        *,
        dbname: str,
        host: str,
        port: int | str,
        user: str,
        password: str,
        schema: str = "",
        connect_timeout: float = 5.0,
        pool_size: int = 4,
    ) -> None:
        self.schema = schema.strip() or "public"
        self.kwargs: dict[str, Any] = {"dbname": dbname, "host": host, "port": port, "user": user, "password": password,
                                       "connect_timeout": int(connect_timeout), "autocommit": True}
        self.pool = ConnectionPool(kwargs=self.kwargs, min_size=1, max_size=max(1, pool_size) + 10,
                                   timeout=connect_timeout, open=False)
        self.table = sql.SQL("{0}.{1}").format(sql.Identifier(self.schema), sql.Identifier(TABLE))
        self.snapshots = sql.SQL("{0}.{1}").format(sql.Identifier(self.schema), sql.Identifier(SNAPSHOTS))
        self.channel = f"{self.schema}_{TABLE}"
        with self.errors():
            self.pool.open(wait=True, timeout=connect_timeout)

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except PersistenceError:
            raise
        except (psycopg.Error, PoolTimeout) as e:
            raise postgres_error(e) from e

    def retrying(self, call: Callable[[], T]) -> T:
        """`call` again when the connection was lost (the pool replaces it)."""
        for attempt in range(_RETRIES):
            try:
                with self.errors():
                    return call()
            except (InterfaceError, OperationalError) as e:
                if attempt == _RETRIES - 1 or isinstance(e, LegacyTables) or "couldn't get a connection" in str(e):
                    raise
                time.sleep(_RETRY_WAIT)
        raise AssertionError("unreachable")

    def fetch(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(query, params, prepare=True, binary=True)  # bytea as bytes, not hex
                return cur.fetchall()

        return self.retrying(run)

    def write(self, statements: Sequence[tuple[Any, Sequence[Any] | None]], returning: int | None = None) -> list[Any]:
        """BEGIN, the statements, COMMIT in one pipelined round trip; the rows of the
        statement at index `returning`. A failed statement makes the server skip the
        rest (COMMIT too): the transaction is rolled back and the error raised."""

        def run() -> list[Any]:
            exc: BaseException | None = None
            rows: list[Any] = []
            with self.pool.connection() as conn:
                with conn.pipeline() as pipeline:
                    # Only statements with parameters are prepared, each named once it has
                    # run: one skipped after a failure must not be thought prepared.
                    cursors = []
                    conn.execute("BEGIN", prepare=False)
                    for i, (statement, params) in enumerate(statements):
                        cur = conn.cursor(row_factory=tuple_row)
                        cur.execute(statement, params, prepare=params is not None, binary=i == returning)
                        cursors.append(cur)
                    conn.execute("COMMIT", prepare=False)
                    try:
                        pipeline.sync()
                        if returning is not None:
                            rows = cursors[returning].fetchall()
                    except Exception as e:  # noqa: BLE001  (re-raised below, outside the pipeline)
                        exc = e
                if exc is not None:
                    if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                        conn.execute("ROLLBACK")
                    raise exc
            return rows

        return self.retrying(run)

    def create_tables(self) -> None:
        t, sn = self.table, self.snapshots

        def run() -> None:
            with self.pool.connection() as conn:
                have = {r[0] for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (self.schema,))}
                if TABLE not in have and "stored_events" in have:
                    raise LegacyTables(
                        f"schema {self.schema!r} holds an earlier Chorus's event tables (stored_events), not "
                        f"{TABLE}: copy them first (docs/decisions/0015-own-recorders.md)"
                    )
                if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone():
                    raise OperationalError(f"schema {self.schema!r} does not exist: create it first")
                conn.execute(sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {0} (position bigserial PRIMARY KEY, stream_id text NOT NULL, "
                    "version bigint NOT NULL, topic text NOT NULL, state bytea NOT NULL, UNIQUE (stream_id, version))"
                ).format(t))
                conn.execute(sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {0} (stream_id text NOT NULL, version bigint NOT NULL, "
                    "topic text NOT NULL, state bytea NOT NULL, PRIMARY KEY (stream_id, version))"
                ).format(sn))

        self.retrying(run)

    def close(self) -> None:
        self.pool.close()


def _select_events(db: PostgresDatabase, table: Any, originator_id: Any, gt: int | None, lte: int | None,
                   desc: bool, limit: int | None) -> list[StoredEvent]:
    select = "SELECT stream_id, version, topic, state FROM {0} WHERE stream_id = %s"
    text, params = stream_query(select, "%s", str(originator_id), gt, lte, desc, limit)
    return [StoredEvent(o, v, t, _bytes(s)) for o, v, t, s in db.fetch(sql.SQL(text).format(table), params)]  # type: ignore[arg-type]


def _bytes(b: Any) -> bytes:
    return b if b.__class__ is bytes else bytes(b)


class PostgresRecorder(EventRecorder):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        t = db.table
        # Statements are rendered to bytes once: psycopg renders a composed statement anew
        # at every execute, in the writer's time under the GIL.
        self._lock = sql.SQL("LOCK TABLE {0} IN EXCLUSIVE MODE").format(t).as_bytes()
        self._notify = sql.SQL("NOTIFY {0}").format(sql.Identifier(db.channel)).as_bytes()
        # Planning the insert costs more than running it: keep the generic plan.
        self._generic = b"SET LOCAL plan_cache_mode = force_generic_plan"
        self._insert = sql.SQL(
            "INSERT INTO {0} (stream_id, version, topic, state)"
            " SELECT stream_id, version, topic, state"
            " FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::bytea[]) WITH ORDINALITY"
            " AS e(stream_id, version, topic, state, n) ORDER BY n"
            " RETURNING stream_id, version, position"
        ).format(t).as_bytes()
        # Each group's expected versions are checked in the INSERT's own subquery (under
        # the table lock, so exactly); the groups that fail it are left out.
        self._insert_checked = sql.SQL(
            "WITH req AS ("
            " SELECT * FROM unnest(%s::int[], %s::text[], %s::bigint[]) AS r(grp, stream_id, expected)"
            "), bad AS ("
            " SELECT DISTINCT r.grp FROM req r WHERE r.expected <> coalesce(("
            "  SELECT t.version FROM {0} t WHERE t.stream_id = r.stream_id"
            "  ORDER BY t.version DESC LIMIT 1), 0)"
            "), ev AS ("
            " SELECT * FROM unnest(%s::int[], %s::text[], %s::bigint[], %s::text[], %s::bytea[])"
            " WITH ORDINALITY AS e(grp, stream_id, version, topic, state, n)"
            ") INSERT INTO {0} (stream_id, version, topic, state)"
            " SELECT stream_id, version, topic, state FROM ev"
            " WHERE grp NOT IN (SELECT grp FROM bad) ORDER BY n"
            " RETURNING stream_id, version, position"
        ).format(t).as_bytes()
        self._rows: dict[str, Any] = {}  # composed once per shape of bounds
        self._latest = sql.SQL(
            "WITH s AS (SELECT version, topic, state FROM {0} WHERE stream_id = %s "
            "ORDER BY version DESC LIMIT 1) "
            "SELECT -1 AS k, version, topic, state FROM s UNION ALL "
            "SELECT version, version, topic, state FROM {1} WHERE stream_id = %s "
            "AND version > COALESCE((SELECT version FROM s), 0) "
            "ORDER BY k"
        ).format(db.snapshots, t).as_bytes()

    def _transact(self, insert: Any, params: Sequence[Any]) -> dict[tuple[str, int], int]:
        rows = self.db.write([(self._generic, None), (self._lock, None), (self._notify, None), (insert, params)], returning=3)
        return {(o, v): p for o, v, p in rows}

    # -- the library's interface -------------------------------------------------------

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        if not stored_events:
            return []
        ids = [str(s.originator_id) for s in stored_events]
        inserted = self._transact(self._insert, (
            ids, [s.originator_version for s in stored_events], [s.topic for s in stored_events], [s.state for s in stored_events],
        ))
        return [inserted[(o, s.originator_version)] for o, s in zip(ids, stored_events, strict=True)]

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        return _select_events(self.db, self.db.table, originator_id, gt, lte, desc, limit)

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None, topics: Sequence[str] = (), *, inclusive_of_start: bool = True
    ) -> Sequence[Notification]:
        first, after = (start, None) if inclusive_of_start else (None, start)
        text, params = log_query("SELECT position, stream_id, version, topic, state FROM {0}", "%s", limit,
                                 after=after, start=first, stop=stop, topics=topics)
        rows = self.db.fetch(sql.SQL(text).format(self.db.table), params)  # type: ignore[arg-type]
        return [Notification(id=p, originator_id=o, originator_version=v, topic=t, state=_bytes(s)) for p, o, v, t, s in rows]

    def max_notification_id(self) -> int | None:
        return self.db.fetch(sql.SQL("SELECT max(position) FROM {0}").format(self.db.table))[0][0]  # type: ignore[no-any-return]

    def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()) -> Subscription[Any]:
        with self.db.errors():
            conn = psycopg.connect(**self.db.kwargs)  # type: ignore[arg-type]
            conn.execute(sql.SQL("LISTEN {0}").format(sql.Identifier(self.db.channel)))

        def wait(timeout: float) -> None:
            with self.db.errors():
                for _ in conn.notifies(timeout=timeout, stop_after=1):
                    pass

        return WaitingSubscription(self, gt, topics, wait, conn.close)  # closed by __exit__

    # -- the store's fast paths ----------------------------------------------------------

    def stream_rows(self, stream_id: str, gt: int | None = None, lte: int | None = None) -> list[Row]:
        text, params = stream_query("SELECT version, topic, state FROM {0} WHERE stream_id = %s", "%s", stream_id, gt, lte)
        query = self._rows.get(text)
        if query is None:
            query = self._rows[text] = sql.SQL(text).format(self.db.table).as_bytes()  # type: ignore[arg-type]
        return [(v, t, _bytes(b)) for v, t, b in self.db.fetch(query, params)]

    def latest(self, stream_id: str, snapshots: SnapshotRecorder) -> tuple[Row | None, list[Row]]:
        # One statement: the snapshot and the tail come from one database snapshot. The
        # first column orders the rows: -1 for the snapshot's, the version for the tail's.
        rows = self.db.fetch(self._latest, (stream_id, stream_id))
        snap = None
        if rows and rows[0][0] == -1:
            _, v, t, b = rows[0]
            snap, rows = (v, t, _bytes(b)), rows[1:]
        return snap, [(v, t, _bytes(b)) for _, v, t, b in rows]

    def append_checked(self, groups: Sequence[Group]) -> list[Any]:
        check_group_streams(groups)
        rgrp: list[int] = []
        rids: list[str] = []
        rexp: list[int] = []
        egrp: list[int] = []
        eids: list[str] = []
        evers: list[int] = []
        topics: list[str] = []
        states: list[bytes] = []
        for g, group in enumerate(groups):
            for stream_id, expected, events in group:
                rgrp.append(g)
                rids.append(stream_id)
                rexp.append(expected)
                for s in events:
                    egrp.append(g)
                    eids.append(str(s.originator_id))
                    evers.append(s.originator_version)
                    topics.append(s.topic)
                    states.append(s.state)
        inserted = self._transact(self._insert_checked, (rgrp, rids, rexp, egrp, eids, evers, topics, states))
        out: list[Any] = []
        for group in groups:
            positions = [inserted.get((str(e.originator_id), e.originator_version)) for _, _, ev in group for e in ev]
            if all(p is not None for p in positions):
                out.append(positions)
            else:  # one INSERT inserts all rows of a group or none: the group failed its check
                out.append(next((s, x) for s, x, ev in group if ev))
        return out

    def records(
        self, after: int, head: int, limit: int, topics: Sequence[str] = (), streams: Collection[str] = ()
    ) -> list[Record]:
        text, params = log_query("SELECT position, stream_id, version, topic, state FROM {0}", "%s", limit,
                                 after=after, stop=head, topics=topics, streams=streams)
        rows = self.db.fetch(sql.SQL(text).format(self.db.table), params)  # type: ignore[arg-type]
        return [(p, o, v, t, _bytes(s)) for p, o, v, t, s in rows]

    def records_at(self, positions: Collection[int]) -> list[Record]:
        rows = self.db.fetch(
            sql.SQL("SELECT position, stream_id, version, topic, state FROM {0} WHERE position = ANY(%s) ORDER BY position")
            .format(self.db.table),
            [sorted(set(positions))],
        )
        return [(p, o, v, t, _bytes(s)) for p, o, v, t, s in rows]

    def close(self) -> None:
        self.db.close()


class PostgresSnapshots(SnapshotRecorder):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self._insert = sql.SQL(
            "INSERT INTO {0} (stream_id, version, topic, state)"
            " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::bytea[])"
        ).format(db.snapshots)

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        if stored_events:
            self.db.write([(self._insert, (
                [str(s.originator_id) for s in stored_events], [s.originator_version for s in stored_events],
                [s.topic for s in stored_events], [s.state for s in stored_events],
            ))])
        return None

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        return _select_events(self.db, self.db.snapshots, originator_id, gt, lte, desc, limit)


class PostgresTracking(PositionRecorder):
    """Tracked positions in `chorus_tracking`, on a pool of their own. A transaction's
    unqualified names are the schema's (`SET LOCAL search_path`)."""

    dialect = "postgres"

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        t = sql.SQL("{0}.{1}").format(sql.Identifier(db.schema), sql.Identifier(TRACKING))
        self._search_path = sql.SQL("SET LOCAL search_path TO {0}").format(sql.Identifier(db.schema))
        self._track = sql.SQL(
            "INSERT INTO {0} (name, position) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE "
            "SET position = excluded.position WHERE {0}.position < excluded.position RETURNING position"
        ).format(t)
        self._tracked = sql.SQL("SELECT position FROM {0} WHERE name = %s").format(t)
        self._locked = sql.SQL("SELECT position FROM {0} WHERE name = %s FOR UPDATE").format(t)
        self._untrack = sql.SQL("DELETE FROM {0} WHERE name = %s").format(t)

    @contextlib.contextmanager
    def transaction(self, *, commit: bool = True) -> Iterator[psycopg.Cursor[Any]]:
        with (
            self.db.errors(),
            self.db.pool.connection() as conn,
            conn.transaction(force_rollback=not commit),
            conn.cursor(row_factory=dict_row) as cursor,
        ):
            cursor.execute(self._search_path)
            yield cursor

    def track(self, cursor: psycopg.Cursor[Any], tracking: Tracking) -> None:
        if cursor.execute(self._track, (tracking.application_name, tracking.notification_id)).fetchone() is None:
            raise IntegrityError(f"{tracking.application_name} is at or past {tracking.notification_id} already")

    def tracked(self, cursor: psycopg.Cursor[Any], name: str, *, lock: bool = False) -> int | None:
        row = cursor.execute(self._locked if lock else self._tracked, (name,)).fetchone()
        return None if row is None else row["position"]  # type: ignore[no-any-return]

    def untrack(self, cursor: psycopg.Cursor[Any], name: str) -> None:
        cursor.execute(self._untrack, (name,))

    # The library's interface rides out a lost connection, as the library's recorder did
    # (a transaction of the caller's cannot be retried here: its body is the caller's).
    def insert_tracking(self, tracking: Tracking) -> None:
        self.db.retrying(lambda: super(PostgresTracking, self).insert_tracking(tracking))

    def max_tracking_id(self, application_name: str) -> int | None:
        return self.db.retrying(lambda: super(PostgresTracking, self).max_tracking_id(application_name))

    def close(self) -> None:
        self.db.close()


def open_postgres_tracking(env: dict[str, str]) -> PostgresTracking:
    """Tracked positions in the schema of `env` (events.backends.env_for); the library's
    tracking table there (an earlier Chorus's views) is copied in on first open. Tables
    are created here without a lock: callers opening a fresh schema concurrently hold
    `events.backends.creating_tables`."""
    db = _database(env)
    t = sql.SQL("{0}.{1}").format(sql.Identifier(db.schema), sql.Identifier(TRACKING))

    def run() -> None:
        with db.pool.connection() as conn, conn.transaction():
            have = {r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (db.schema,))}
            conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {0} (name text PRIMARY KEY, position bigint NOT NULL)")
                         .format(t))
            if TRACKING not in have and "notification_tracking" in have:
                conn.execute(sql.SQL(
                    "INSERT INTO {0} (name, position) SELECT application_name, max(notification_id) "
                    "FROM {1}.notification_tracking WHERE application_name <> '__migration__' "
                    "GROUP BY application_name"
                ).format(t, sql.Identifier(db.schema)))

    try:
        db.retrying(run)
    except BaseException:
        db.close()
        raise
    return PostgresTracking(db)


def _database(env: dict[str, str]) -> PostgresDatabase:
    return PostgresDatabase(
        dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"],
        user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"], schema=env.get("POSTGRES_SCHEMA", ""),
        connect_timeout=float(env.get("POSTGRES_CONNECT_TIMEOUT", "5")), pool_size=int(env.get("POSTGRES_POOL_SIZE", "4")),
    )


def open_postgres(env: dict[str, str]) -> tuple[PostgresRecorder, PostgresSnapshots]:
    """The recorders of a store whose settings `env` holds (events.backends.env_for)."""
    db = _database(env)
    try:
        db.create_tables()
    except BaseException:
        db.close()
        raise
    return PostgresRecorder(db), PostgresSnapshots(db)
