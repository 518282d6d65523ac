"""What our recorders offer beyond the eventsourcing library's `ApplicationRecorder` and
`TrackingRecorder` interfaces, and the pieces they share.

Each backend implements the library's public recorder interface (`insert_events`,
`select_events`, `select_notifications`, `max_notification_id`, `subscribe`), so the
library's own recorder test cases run against it, plus what the store needs fast and
the library's interface does not say: a stream's rows as plain tuples, a stream's
latest snapshot with the events after it in one read, appends checked per group in one
transaction (group commit), and bulk reads of the log for projections. Errors are the
library's `PersistenceError` subclasses, so callers need not know the driver.
"""

from __future__ import annotations

import contextlib
import threading
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any

from eventsourcing import persistence
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    Notification,
    PersistenceError,
    ProgrammingError,
    StoredEvent,
    Subscription,
    Tracking,
    TrackingRecorder,
)

Row = tuple[int, str, bytes]  # (version, topic, state)
# (position, stream_id, version, topic, state): an event as projections read it
Record = tuple[int, str, int, str, bytes]
# One writer's append: for each stream, the version it expects and its events.
Group = Sequence[tuple[str, int, Sequence[StoredEvent]]]
# A group's outcome: its positions, or the (stream_id, expected_version) that failed.
Outcome = "list[int] | tuple[str, int]"

TABLE = "chorus_events"
SNAPSHOTS = "chorus_snapshots"
TRACKING = "chorus_tracking"


class EventRecorder(ApplicationRecorder):
    """The library's application recorder interface, plus the store's fast paths."""

    @abstractmethod
    def stream_rows(self, stream_id: str, gt: int | None = None, lte: int | None = None) -> list[Row]:
        """The stream's events with versions in (gt, lte], oldest first, as tuples."""

    @abstractmethod
    def latest(self, stream_id: str, snapshots: SnapshotRecorder) -> tuple[Row | None, list[Row]]:
        """The stream's highest-version snapshot (or None) and its events after it, read
        together (one snapshot of the database where the backend allows)."""

    @abstractmethod
    def append_checked(self, groups: Sequence[Group]) -> list[Any]:
        """Insert `groups` in ONE transaction, each only if every stream it names stands
        at the version its writer expected (checked inside the transaction, exactly); a
        group that fails is left out and reported as `(stream_id, expected_version)`,
        one that lands gets its positions. No two groups may name the same stream."""

    @abstractmethod
    def records(
        self, after: int, head: int, limit: int, topics: Sequence[str] = (), streams: Collection[str] = ()
    ) -> list[Record]:
        """Up to `limit` events after position `after` up to `head`, of `topics` and in
        `streams` if given, in log order."""

    @abstractmethod
    def records_at(self, positions: Collection[int]) -> list[Record]:
        """The events at `positions` (those past the log are left out), in log order."""

    def close(self) -> None:
        """Release connections."""


class SnapshotRecorder(AggregateRecorder):
    """Snapshots: the library's aggregate recorder interface; a version saved twice is
    an IntegrityError (it is the same state)."""

    def close(self) -> None:
        """Release connections."""


class PositionRecorder(TrackingRecorder):
    """Tracked positions (one row per name, in `chorus_tracking (name, position)`): the
    library's tracking recorder interface, plus transactions in which a caller writes
    rows of its own and the position they bring it to, committed together.

        with positions.transaction() as cursor:
            cursor.execute(...)                       # the driver's own cursor and SQL
            positions.track(cursor, Tracking(name, position))

    A position only moves forward: tracking one at or below the recorded one is an
    IntegrityError (and rolls the transaction back).
    """

    dialect: str  # "sqlite" or "postgres": the SQL a transaction's cursor speaks

    @abstractmethod
    def transaction(self, *, commit: bool = True) -> contextlib.AbstractContextManager[Any]:
        """A context giving the driver's cursor in one transaction, its rows readable by
        column name; committed on success when `commit`, else rolled back; rolled back on
        any error. A committing transaction holds the write lock (SQLite) from its start."""

    @abstractmethod
    def track(self, cursor: Any, tracking: Tracking) -> None:
        """Record `tracking` in the transaction of `cursor`; IntegrityError unless it
        moves its name's position forward."""

    @abstractmethod
    def tracked(self, cursor: Any, name: str, *, lock: bool = False) -> int | None:
        """The recorded position of `name` in the transaction of `cursor` (None if
        none); with `lock`, its row stays locked until the transaction ends (PostgreSQL;
        a committing SQLite transaction holds the whole file)."""

    @abstractmethod
    def untrack(self, cursor: Any, name: str) -> None:
        """Forget `name`'s position, in the transaction of `cursor`."""

    # -- the library's interface, each call its own transaction ---------------------------

    def insert_tracking(self, tracking: Tracking) -> None:
        with self.transaction() as cursor:
            self.track(cursor, tracking)

    def max_tracking_id(self, application_name: str) -> int | None:
        with self.transaction(commit=False) as cursor:
            return self.tracked(cursor, application_name)

    def close(self) -> None:
        """Release connections."""


# DB-API 2 error names, most specific first: the library has an error of each name.
_DBAPI_ERRORS = ("IntegrityError", "OperationalError", "InterfaceError", "DataError", "InternalError",
                 "ProgrammingError", "DatabaseError")


def library_error(e: BaseException, driver: Any) -> PersistenceError:
    """The eventsourcing library's error for `e`, an error of the DB-API 2 `driver`
    module (sqlite3, psycopg), so callers need not know the driver."""
    for name in _DBAPI_ERRORS:
        if isinstance(e, getattr(driver, name)):
            return getattr(persistence, name)(str(e))  # type: ignore[no-any-return]
    return PersistenceError(str(e))


def stream_query(
    select: str, mark: str, stream_id: str, gt: int | None, lte: int | None, desc: bool = False, limit: int | None = None
) -> tuple[str, list[Any]]:
    """`select` (which ends in `WHERE stream_id = <mark>`) bounded to versions in (gt, lte],
    in version order, at most `limit` rows; and its parameters. `mark`: the driver's
    placeholder."""
    text, params = select, list[Any]([stream_id])
    for bound, op in ((gt, ">"), (lte, "<=")):
        if bound is not None:
            text += f" AND version {op} {mark}"
            params.append(bound)
    text += " ORDER BY version DESC" if desc else " ORDER BY version ASC"
    if limit is not None:
        text += f" LIMIT {mark}"
        params.append(limit)
    return text, params


def log_query(
    select: str,
    mark: str,
    limit: int,
    *,
    after: int | None = None,
    start: int | None = None,
    stop: int | None = None,
    topics: Collection[str] = (),
    streams: Collection[str] = (),
) -> tuple[str, list[Any]]:
    """`select` (rows of the events table) at positions > `after`, >= `start`, <= `stop`,
    of `topics` and in `streams` when given, in log order, at most `limit` rows; and its
    parameters. `mark`: the driver's placeholder."""
    where: list[str] = []
    params: list[Any] = []
    for condition, value in (("position >", after), ("position >=", start), ("position <=", stop)):
        if value is not None:
            where.append(f"{condition} {mark}")
            params.append(value)
    for column, values in (("topic", topics), ("stream_id", streams)):
        if values:
            where.append(f"{column} IN ({', '.join([mark] * len(values))})")
            params.extend(values)
    text = select + (" WHERE " + " AND ".join(where) if where else "") + f" ORDER BY position LIMIT {mark}"
    return text, [*params, limit]


def check_group_streams(groups: Sequence[Group]) -> None:
    streams = [s for g in groups for s, _, _ in g]
    if len(set(streams)) != len(streams):
        raise ProgrammingError("append_checked: each stream may appear in one group once")


class WaitingSubscription(Subscription[ApplicationRecorder]):
    """Notifications after `gt`, then new ones as they are recorded: reads pages with
    `select_notifications` and, when caught up, calls `wait(timeout)` (woken by the
    backend's signal of a new event, or by the timeout) until stopped."""

    POLL = 0.1  # how soon a stop() from another thread is seen while waiting

    def __init__(
        self,
        recorder: ApplicationRecorder,
        gt: int | None,
        topics: Sequence[str],
        wait: Callable[[float], None],
        close: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(recorder, gt, topics)
        self._source = recorder
        self._halted = False
        self._position = gt or 0
        self._topics_wanted = tuple(topics)
        self._page: deque[Notification] = deque()
        self._wait = wait
        self._close = close
        self._closed = threading.Event()

    def stop(self) -> None:
        """Stop (from any thread): the iterating thread ends at its next step."""
        super().stop()
        self._halted = True

    def __exit__(self, *args: object, **kwargs: Any) -> None:
        try:
            super().__exit__(*args, **kwargs)
        finally:  # the iterating thread's own exit: nothing uses the backend's waiter now
            if not self._closed.is_set():
                self._closed.set()
                self._close()

    def __next__(self) -> Notification:
        while True:
            if self._halted:
                raise StopIteration
            if self._page:
                n = self._page.popleft()
                self._position = n.id
                return n
            page = self._source.select_notifications(
                self._position, 500, topics=self._topics_wanted, inclusive_of_start=False
            )
            if page:
                self._page = deque(page)
                continue
            try:
                self._wait(self.POLL)
            except Exception:
                if self._halted:  # stopped while waiting
                    raise StopIteration from None
                raise
