"""The in-memory recorders (`memory://`): Python lists and dicts behind one lock, for
unit tests and throwaway stores. Each stream keeps its versions sorted, so reading the
tail after a snapshot costs the tail, not the stream. Events are kept as plain tuples
`(position, stream_id, version, topic, state)`; the library's `Notification` and
`StoredEvent` objects are made only for reads through its interface.

Tracked positions of a memory store are SQLite's, in an in-memory database of their own
(`open_memory_tracking`): they commit with rows of the views, which are SQL tables on
every backend, so the views and their unit tests need no file."""

from __future__ import annotations

import bisect
import threading
import uuid
from collections.abc import Collection, Sequence
from typing import Any

from eventsourcing.persistence import (
    IntegrityError,
    Notification,
    StoredEvent,
    Subscription,
)

from events.recorders.base import (
    EventRecorder,
    Group,
    PositionRecorder,
    Record,
    Row,
    SnapshotRecorder,
    WaitingSubscription,
    check_group_streams,
)


class _Streams:
    """Rows by stream and version; versions kept sorted per stream."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[int, Any]] = {}
        self.versions: dict[str, list[int]] = {}

    def head(self, stream_id: str) -> int:
        versions = self.versions.get(stream_id)
        return versions[-1] if versions else 0

    def has(self, stream_id: str, version: int) -> bool:
        return version in self.rows.get(stream_id, ())

    def put(self, stream_id: str, version: int, row: Any) -> None:
        self.rows.setdefault(stream_id, {})[version] = row
        versions = self.versions.setdefault(stream_id, [])
        if not versions or version > versions[-1]:
            versions.append(version)
        else:
            bisect.insort(versions, version)

    def select(self, stream_id: str, gt: int | None, lte: int | None, desc: bool = False, limit: int | None = None) -> list[Any]:
        versions = self.versions.get(stream_id)
        if not versions:
            return []
        lo = 0 if gt is None else bisect.bisect_right(versions, gt)
        hi = len(versions) if lte is None else bisect.bisect_right(versions, lte)
        if limit is not None:  # slice only what is asked for: the head of a long stream is one row
            lo, hi = (max(lo, hi - limit), hi) if desc else (lo, min(hi, lo + limit))
        chosen = versions[lo:hi]
        if desc:
            chosen.reverse()
        rows = self.rows[stream_id]
        return [rows[v] for v in chosen]


def _refuse_duplicates(streams: _Streams, stored: Sequence[StoredEvent]) -> None:
    if len(stored) == 1:
        s = stored[0]
        if streams.has(str(s.originator_id), s.originator_version):
            raise IntegrityError(f"an event at {s.originator_id}@{s.originator_version} exists already")
        return
    keys = [(str(s.originator_id), s.originator_version) for s in stored]
    if len(set(keys)) != len(keys) or any(streams.has(*k) for k in keys):
        raise IntegrityError(f"an event at one of {sorted(keys)} exists already")


def _notification(r: Record) -> Notification:
    return Notification(id=r[0], originator_id=r[1], originator_version=r[2], topic=r[3], state=r[4])


class MemoryRecorder(EventRecorder):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._added = threading.Condition(self._lock)
        self._log: list[Record] = []  # position p at index p - 1
        self._streams = _Streams()
        self._waiting = 0  # subscriptions waiting for an insert

    # -- the library's interface -------------------------------------------------------

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        with self._lock:
            _refuse_duplicates(self._streams, stored_events)
            return self._insert(stored_events)

    def _insert(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        positions = []
        for s in stored_events:
            r = (len(self._log) + 1, str(s.originator_id), s.originator_version, s.topic, s.state)
            self._log.append(r)
            self._streams.put(r[1], r[2], r)
            positions.append(r[0])
        if positions and self._waiting:
            self._added.notify_all()
        return positions

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        with self._lock:
            found = self._streams.select(str(originator_id), gt, lte, desc, limit)
        return [StoredEvent(r[1], r[2], r[3], r[4]) for r in found]

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None, topics: Sequence[str] = (), *, inclusive_of_start: bool = True
    ) -> Sequence[Notification]:
        first = 1 if start is None else (start if inclusive_of_start else start + 1)
        wanted = set(topics)
        out: list[Notification] = []
        with self._lock:
            last = len(self._log) if stop is None else min(stop, len(self._log))
            for r in self._log[max(first, 1) - 1 : last]:
                if not wanted or r[3] in wanted:
                    out.append(_notification(r))
                    if len(out) == limit:
                        break
        return out

    def max_notification_id(self) -> int | None:
        with self._lock:
            return len(self._log) or None

    def subscribe(self, gt: int | None = None, topics: Sequence[str] = ()) -> Subscription[Any]:
        return WaitingSubscription(self, gt, topics, self._wait)

    def _wait(self, timeout: float) -> None:
        with self._added:
            self._waiting += 1
            try:
                self._added.wait(timeout)
            finally:
                self._waiting -= 1

    # -- the store's fast paths ----------------------------------------------------------

    def stream_rows(self, stream_id: str, gt: int | None = None, lte: int | None = None) -> list[Row]:
        with self._lock:
            found = self._streams.select(stream_id, gt, lte)
        return [(r[2], r[3], r[4]) for r in found]

    def latest(self, stream_id: str, snapshots: SnapshotRecorder) -> tuple[Row | None, list[Row]]:
        found = snapshots.select_events(stream_id, desc=True, limit=1)
        snap = (found[0].originator_version, found[0].topic, found[0].state) if found else None
        return snap, self.stream_rows(stream_id, snap[0] if snap else None)

    def append_checked(self, groups: Sequence[Group]) -> list[Any]:
        check_group_streams(groups)
        out: list[Any] = []
        with self._lock:
            for group in groups:
                failed = next(((s, e) for s, e, _ in group if self._streams.head(s) != e), None)
                if failed is not None:
                    out.append(failed)
                    continue
                stored = [e for _, _, events in group for e in events]
                _refuse_duplicates(self._streams, stored)
                out.append(self._insert(stored))
        return out

    def records(
        self, after: int, head: int, limit: int, topics: Sequence[str] = (), streams: Collection[str] = ()
    ) -> list[Record]:
        wanted, of = set(topics), set(streams)
        out: list[Record] = []
        with self._lock:
            for r in self._log[max(after, 0) : min(head, len(self._log))]:
                if (not wanted or r[3] in wanted) and (not of or r[1] in of):
                    out.append(r)
                    if len(out) == limit:
                        break
        return out

    def records_at(self, positions: Collection[int]) -> list[Record]:
        with self._lock:
            return [self._log[p - 1] for p in sorted(set(positions)) if 1 <= p <= len(self._log)]


class MemorySnapshots(SnapshotRecorder):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams = _Streams()

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        with self._lock:
            _refuse_duplicates(self._streams, stored_events)
            for s in stored_events:
                self._streams.put(str(s.originator_id), s.originator_version,
                                  StoredEvent(str(s.originator_id), s.originator_version, s.topic, s.state))
        return None

    def select_events(
        self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False, limit: int | None = None
    ) -> Sequence[StoredEvent]:
        with self._lock:
            return self._streams.select(str(originator_id), gt, lte, desc, limit)


def open_memory_tracking() -> PositionRecorder:
    """Tracked positions in a new in-memory SQLite database (gone when closed)."""
    from events.recorders.sqlite import open_sqlite_tracking

    return open_sqlite_tracking(f"file:chorus-views-{uuid.uuid4().hex}?mode=memory&cache=shared")
