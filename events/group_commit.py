"""Group commit: appends made at the same time by many threads share one transaction.

A single-event append on PostgreSQL costs one `LOCK TABLE ... IN EXCLUSIVE MODE`, one
commit and its WAL flush; writers queue on that lock one after another. Here the first
writer to arrive becomes the leader: it takes every append queued behind it (up to
`max_batch`), writes them in ONE transaction and wakes each with its own outcome (one
by one, not all at once); the others wait as followers, and the first still queued when
it finishes is handed the lead for the next batch.

A lone append whose writer knows its stream has no gap (the store has seen the version it
expects) needs no version check: the unique key catches a stream that moved on. On SQLite
it goes through the library recorder's own transaction, exactly as without group commit;
on PostgreSQL through a plain insert in the batch writer's one round trip (the library's
recorder takes two), so a single writer pays only the queue's few microseconds.

Each append keeps its own optimistic-concurrency check, made inside the transaction
while the table lock is held (so it is exact): every stream it names must stand at the
version its writer expected. An append that fails the check is left out of the insert
and fails alone (`Conflict`); the others land. Two appends of one batch that name the
same stream are never judged together: the later one waits for the next batch, so the
"one winner per stream and version" rule comes from the database, not from guessing.

If the batch's transaction fails for another reason (a value the database refuses, a
lost connection), it is rolled back whole and each append is retried on its own, so a
bad append fails alone and no batch writes half of itself.

The planning (`plan`, `judge`) is pure; the two writers (`PostgresBatchWriter`,
`SQLiteBatchWriter`) are the only code that talks to a database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
    StoredEvent,
)

# How many appends one transaction takes at most. Larger batches amortise the lock and the
# commit further but make every writer in them wait for the slowest insert.
DEFAULT_MAX_BATCH = 256

# A lost connection (or a server restart) is retried as the library's recorders do.
_RETRY_ERRORS = (InterfaceError, OperationalError)
_RETRY_ATTEMPTS = 10
_RETRY_WAIT = 0.2


class Conflict(Exception):
    """An append's stream was not at the version its writer expected."""

    def __init__(self, stream_id: str, expected_version: int) -> None:
        super().__init__(f"stream {stream_id!r} is not at version {expected_version}")
        self.stream_id = stream_id
        self.expected_version = expected_version


@dataclass(eq=False)
class Append:
    """One writer's append: for each stream, the version it expects and its events."""

    items: Sequence[tuple[str, int, Sequence[StoredEvent]]]
    # The writer knows no stream of it can have a gap (each expected version is one it
    # has seen): alone in a batch, a plain insert and the unique key suffice.
    known: bool = False
    positions: list[int] | None = None
    error: BaseException | None = None
    done: bool = False
    wake: threading.Event = field(default_factory=threading.Event, repr=False)
    _streams: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self._streams = frozenset(s for s, _, _ in self.items)

    @property
    def streams(self) -> frozenset[str]:
        return self._streams

    def stored(self) -> list[StoredEvent]:
        return [e for _, _, events in self.items for e in events]


# -- pure planning -----------------------------------------------------------------------


def plan(queue: Sequence[Append], max_batch: int) -> tuple[list[Append], list[Append]]:
    """Split the queue into this batch and what waits for the next: in arrival order, up
    to `max_batch` appends whose streams do not overlap an earlier one in the batch."""
    batch: list[Append] = []
    later: list[Append] = []
    taken: set[str] = set()
    for a in queue:
        if len(batch) < max_batch and not (a.streams & taken):
            batch.append(a)
            taken |= a.streams
        else:
            later.append(a)
    return batch, later


def judge(batch: Sequence[Append], current: dict[str, int]) -> tuple[list[Append], list[tuple[Append, Conflict]]]:
    """Which appends pass their check against the streams' `current` versions (a stream
    missing from `current` has no events)."""
    passed: list[Append] = []
    failed: list[tuple[Append, Conflict]] = []
    for a in batch:
        for stream_id, expected, _ in a.items:
            if current.get(stream_id, 0) != expected:
                failed.append((a, Conflict(stream_id, expected)))
                break
        else:
            passed.append(a)
    return passed, failed


def settle(batch: Sequence[Append], inserted: dict[tuple[str, int], int]) -> None:
    """Give each append its positions from the rows the transaction inserted, or a
    Conflict if none of its rows went in (the database judged it)."""
    for a in batch:
        if a.done:
            continue
        stored = a.stored()
        positions = [inserted.get((str(s.originator_id), s.originator_version)) for s in stored]
        if all(p is not None for p in positions):
            a.positions = positions  # type: ignore[assignment]
        elif not any(p is not None for p in positions):
            stream_id, expected, _ = next(
                (s, v, ev) for s, v, ev in a.items
                if ev and any(inserted.get((str(e.originator_id), e.originator_version)) is None for e in ev)
            )
            a.error = Conflict(stream_id, expected)
        else:  # cannot happen: one INSERT statement inserts all of its rows or none
            a.error = PersistenceError("group commit inserted part of an append")
        a.done = True


# -- the leader/follower queue ----------------------------------------------------------------


class GroupCommitter:
    """Commit appends from many threads in shared transactions (see the module doc)."""

    def __init__(self, write: Callable[[list[Append]], None], max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, not {max_batch}")
        self.write = write
        self.max_batch = max_batch
        self._cv = threading.Lock()  # guards the queue and who leads
        self._queue: list[Append] = []
        self._leading = False
        # Counters for benchmarks: batches written, appends in them.
        self.batches = 0
        self.appends = 0

    def commit(self, append: Append) -> list[int]:
        """Write `append` (alone or with others); return its global positions.

        Raises Conflict if a stream it names is not at the expected version, or the
        database's error for this append."""
        with self._cv:
            self._queue.append(append)
            lead = not self._leading
            self._leading = True
        while True:
            if not lead:
                # Woken either with an outcome, or to lead the next batch.
                append.wake.wait()
                append.wake.clear()
                if append.done:
                    break
            lead = self._lead_round(append)
            if append.done and not lead:
                break
        if append.error is not None:
            raise append.error
        assert append.positions is not None
        return append.positions

    def _lead_round(self, me: Append) -> bool:
        """Write one batch from the queue; wake each of its writers alone (not everyone);
        hand the lead to the first still queued. True: `me` is that one, lead on."""
        with self._cv:
            batch, self._queue = plan(self._queue, self.max_batch)
        try:
            self._lead(batch)
        except BaseException:
            if me in batch:
                raise
            # Not ours: the batch's writers have it as their error; `me` is still queued.
        finally:
            for a in batch:
                if a is not me:
                    a.wake.set()
            with self._cv:
                nxt = self._queue[0] if self._queue else None
                if nxt is None:
                    self._leading = False
                elif nxt is not me:
                    nxt.wake.set()  # not done: it wakes as the leader
        return nxt is me

    def _lead(self, batch: list[Append]) -> None:
        self.batches += 1
        self.appends += len(batch)
        try:
            write_isolating(self.write, batch)
        except BaseException as e:  # noqa: BLE001  (KeyboardInterrupt too: nobody may hang)
            for a in batch:
                if not a.done:
                    a.error, a.done = _copy(e), True
            raise
        finally:
            for a in batch:  # a writer that forgot one must not leave it waiting forever
                if not a.done:
                    a.error, a.done = PersistenceError("group commit left an append unanswered"), True


def write_isolating(write: Callable[[list[Append]], None], batch: list[Append]) -> None:
    """Write the batch in one transaction; if that fails, each append on its own, so a
    bad one fails alone."""
    try:
        write(batch)
    except PersistenceError as e:
        if len(batch) == 1:
            batch[0].error, batch[0].done = e, True
            return
        for a in batch:
            if a.done:
                continue
            try:
                write([a])
            except PersistenceError as one:
                a.error, a.done = one, True


def retrying(write: Callable[[list[Append]], None], batch: list[Append]) -> None:
    """Retry a lost connection (or a server restart) as the library's recorders do."""
    for attempt in range(_RETRY_ATTEMPTS):
        try:
            write(batch)
            return
        except _RETRY_ERRORS:
            if attempt == _RETRY_ATTEMPTS - 1:
                raise
            time.sleep(_RETRY_WAIT)


def _copy(e: BaseException) -> BaseException:
    """The same error for another thread to raise (one instance raised in many threads
    would collect all their tracebacks)."""
    try:
        copy = type(e)(*e.args)
    except Exception:  # noqa: BLE001
        return e
    copy.__cause__ = e
    return copy


# -- writers -------------------------------------------------------------------------------------


class PostgresBatchWriter:
    """One transaction per batch, in ONE round trip: BEGIN, the library's table lock and
    NOTIFY, a single INSERT, and COMMIT go out pipelined and are answered together (the
    library's recorder waits twice: for its insert, then for its commit). The INSERT's own
    subquery checks every append's expected versions (under the lock, so exactly) and
    leaves out the appends that fail it; a lone append whose writer knows its stream has
    no gap skips that check (the unique key catches a stream that moved on)."""

    def __init__(self, recorder: Any) -> None:
        from psycopg.sql import SQL, Identifier  # lazily: only PostgreSQL needs the driver

        self.recorder = recorder
        self.datastore = recorder.datastore
        table = SQL("{0}.{1}").format(Identifier(self.datastore.schema), Identifier(recorder.events_table_name))
        self.begin, self.commit, self.rollback = SQL("BEGIN"), SQL("COMMIT"), SQL("ROLLBACK")
        # Planning the insert costs more than running it (~0.5 ms against ~0.3 ms for one
        # event): keep the prepared statement's generic plan, for this transaction only.
        self.lock_statements = [SQL("SET LOCAL plan_cache_mode = force_generic_plan"), *recorder.lock_table_statements]
        self.notify = SQL("NOTIFY {0}").format(Identifier(recorder.channel_name))
        self.insert = SQL(
            "WITH req AS ("
            " SELECT * FROM unnest(%s::int[], %s::text[], %s::bigint[]) AS r(grp, originator_id, expected)"
            "), bad AS ("
            " SELECT DISTINCT r.grp FROM req r WHERE r.expected <> coalesce(("
            "  SELECT t.originator_version FROM {table} t WHERE t.originator_id = r.originator_id"
            "  ORDER BY t.originator_version DESC LIMIT 1), 0)"
            "), ev AS ("
            " SELECT * FROM unnest(%s::int[], %s::text[], %s::bigint[], %s::text[], %s::bytea[])"
            " WITH ORDINALITY AS e(grp, originator_id, originator_version, topic, state, n)"
            ") INSERT INTO {table} (originator_id, originator_version, topic, state)"
            " SELECT originator_id, originator_version, topic, state FROM ev"
            " WHERE grp NOT IN (SELECT grp FROM bad) ORDER BY n"
            " RETURNING originator_id, originator_version, notification_id"
        ).format(table=table)
        self.insert_known = SQL(
            "INSERT INTO {table} (originator_id, originator_version, topic, state)"
            " SELECT originator_id, originator_version, topic, state"
            " FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::bytea[]) WITH ORDINALITY"
            " AS e(originator_id, originator_version, topic, state, n) ORDER BY n"
            " RETURNING originator_id, originator_version, notification_id"
        ).format(table=table)

    def __call__(self, batch: list[Append]) -> None:
        if len(batch) == 1 and batch[0].known:
            retrying(self._write_known, batch)
        else:
            retrying(self._write, batch)

    def _write_known(self, batch: list[Append]) -> None:
        [a] = batch
        stored = a.stored()
        params = (
            [str(s.originator_id) for s in stored], [s.originator_version for s in stored],
            [s.topic for s in stored], [s.state for s in stored],
        )  # fmt: skip
        try:
            rows = self._transact(self.insert_known, params)
        except IntegrityError as e:  # a stream moved on: which one, the database does not say
            a.error = Conflict(a.items[0][0], a.items[0][1]) if len(a.items) == 1 else e
            a.done = True
            return
        settle(batch, {(r["originator_id"], r["originator_version"]): r["notification_id"] for r in rows})

    def _write(self, batch: list[Append]) -> None:
        rgrp: list[int] = []
        rids: list[str] = []
        rexp: list[int] = []
        egrp: list[int] = []
        eids: list[str] = []
        evers: list[int] = []
        topics: list[str] = []
        states: list[bytes] = []
        for g, a in enumerate(batch):
            for stream_id, expected, events in a.items:
                rgrp.append(g)
                rids.append(stream_id)
                rexp.append(expected)
                for s in events:
                    egrp.append(g)
                    eids.append(str(s.originator_id))
                    evers.append(s.originator_version)
                    topics.append(s.topic)
                    states.append(s.state)
        rows = self._transact(self.insert, (rgrp, rids, rexp, egrp, eids, evers, topics, states))
        settle(batch, {(r["originator_id"], r["originator_version"]): r["notification_id"] for r in rows})

    def _transact(self, insert: Any, params: Sequence[Any]) -> list[Any]:
        """BEGIN, lock, NOTIFY, `insert`, COMMIT in one pipelined round trip; the inserted
        rows. A statement that fails makes the server skip the rest (COMMIT too): the
        transaction is rolled back and the error raised (as the library's, by
        `get_connection`)."""
        from psycopg.pq import TransactionStatus

        exc: BaseException | None = None
        rows: list[Any] = []
        with self.datastore.get_connection() as conn:
            with conn.pipeline() as pipeline, conn.cursor() as head, conn.cursor() as body:
                head.execute(self.begin)
                for statement in self.lock_statements:
                    head.execute(statement, prepare=True)
                head.execute(self.notify)
                body.execute(insert, params, prepare=True)
                head.execute(self.commit)
                try:
                    pipeline.sync()  # the one round trip; errors surface here
                    rows = body.fetchall()
                except Exception as e:  # noqa: BLE001  (re-raised below, outside the pipeline)
                    exc = e
            if exc is not None:
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.execute(self.rollback)  # the failed transaction is still open: end it
                raise exc
        return rows


class SQLiteBatchWriter:
    """One `BEGIN IMMEDIATE` transaction per batch on the library's writer connection:
    read each stream's version, insert the appends that pass, commit once."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.datastore = recorder.datastore
        table = recorder.events_table_name
        self.select_version = (
            f"SELECT originator_version FROM {table} WHERE originator_id=? "
            "ORDER BY originator_version DESC LIMIT 1"
        )
        self.insert = f"INSERT INTO {table} VALUES (?,?,?,?)"

    def __call__(self, batch: list[Append]) -> None:
        if len(batch) == 1 and batch[0].known:
            alone(self.recorder, batch[0])
        else:
            retrying(self._write, batch)

    def _write(self, batch: list[Append]) -> None:
        try:
            with self.datastore.get_connection(commit=True) as conn:
                raw: sqlite3.Connection = conn._sqlite_conn
                raw.execute("BEGIN IMMEDIATE")
                try:
                    current: dict[str, int] = {}
                    for a in batch:
                        for stream_id, _, _ in a.items:
                            row = raw.execute(self.select_version, (stream_id,)).fetchone()
                            current[stream_id] = row[0] if row else 0
                    passed, failed = judge(batch, current)
                    inserted: list[tuple[Append, list[int]]] = []
                    for a in passed:
                        positions: list[int] = []
                        for s in a.stored():
                            cur = raw.execute(
                                self.insert, (str(s.originator_id), s.originator_version, s.topic, s.state)
                            )
                            positions.append(cast(int, cur.lastrowid))  # an INSERT's rowid
                        inserted.append((a, positions))
                    raw.execute("COMMIT")
                except BaseException:
                    if raw.in_transaction:
                        raw.execute("ROLLBACK")
                    raise
        except sqlite3.Error as e:
            raise _sqlite_error(e) from e
        for a, conflict in failed:
            a.error, a.done = conflict, True
        for a, positions in inserted:
            a.positions, a.done = positions, True


def alone(recorder: Any, append: Append) -> None:
    """A lone append whose writer knows its streams have no gap: exactly what an append
    without group commit does (the recorder's transaction; its unique key catches a
    stream that moved on), so a single writer is never slower."""
    try:
        positions = recorder.insert_events(append.stored())
    except IntegrityError as e:
        if len(append.items) == 1:
            append.error = Conflict(append.items[0][0], append.items[0][1])
        else:  # which of its streams moved on, the database does not say
            append.error = e
        append.done = True
        return
    append.positions, append.done = list(positions), True


def _sqlite_error(e: sqlite3.Error) -> PersistenceError:
    for theirs, ours in (
        (sqlite3.IntegrityError, IntegrityError),
        (sqlite3.OperationalError, OperationalError),
        (sqlite3.InterfaceError, InterfaceError),
        (sqlite3.DataError, DataError),
        (sqlite3.InternalError, InternalError),
        (sqlite3.ProgrammingError, ProgrammingError),
        (sqlite3.DatabaseError, DatabaseError),
    ):
        if isinstance(e, theirs):
            return ours(str(e))
    return PersistenceError(str(e))


def writer_for(backend: str, recorder: Any) -> Callable[[list[Append]], None] | None:
    """The batch writer for a backend's application recorder, or None (memory)."""
    if backend == "postgres":
        return PostgresBatchWriter(recorder)
    if backend == "sqlite":
        return SQLiteBatchWriter(recorder)
    return None
