"""The event store: one interface over our recorders (events/recorders/).

The recorders implement the eventsourcing library's public recorder interface on tables
of our own: streams are its originators (text ids), stream versions its originator
versions, the global log its notification sequence, and an event's type name its topic
(so the recorder filters by type for us). The backend is chosen by URL:

    sqlite:///path/to/chorus.db   a file (the embedded default)
    postgresql://user@host:port/db[?schema=NAME]
    memory://                     plain Python objects, for unit tests

Appends carry the expected version of the stream; the recorder's unique
(stream, version) key makes two racing writers conflict, and the whole batch is one
transaction, so the loser writes nothing.

On SQLite and PostgreSQL, appends made at the same time by threads sharing a store are
group-committed (events/group_commit.py): one transaction for all of them, each with its
own version check, a conflicting one failing alone. `?group_commit=off` on the URL (or
CHORUS_GROUP_COMMIT=off) turns it off; then each append is its own recorder transaction.
The store reaches its recorders only through their public methods.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    Notification,
    OperationalError,
    PersistenceError,
    StoredEvent,
)
from pydantic import BaseModel

from events.backends import (
    backend_of,
    creating_tables,
    env_for,
    group_commit_of,
    one_line,
    postgres_reason,
    redact,
    sqlite_reason,
)
from events.base import Event
from events.codec import (
    PayloadCodecs,
    decode_event,
    encode_event,
    envelope_of,
    packb,
    unpackb,
)
from events.group_commit import Append, Conflict, GroupCommitter, RecorderWriter
from events.recorders import EventRecorder, SnapshotRecorder, open_recorders


class ConcurrencyError(Exception):
    """Another writer appended to the stream first; re-read it and decide again."""


class StoreUnavailable(Exception):
    """The store cannot be reached or opened. Its message is one line for a person."""


# Errors that mean "the database is not there" rather than "this code is wrong".
_UNAVAILABLE = (OperationalError, InterfaceError)
_OPEN_ERRORS = (PersistenceError, OSError, sqlite3.Error)


class Recorded(NamedTuple):
    """An event with its position in the global log."""

    position: int
    event: Event


@dataclass(frozen=True)
class Snapshot:
    stream_id: str
    version: int
    kind: str
    schema_version: int
    data: Any  # the msgpack-decoded state payload


class EventStore:
    """Append, read and follow events; save and load snapshots."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self.backend = backend_of(url)
        env = self._env = env_for(url)
        self._group_commit = group_commit_of(url)
        self.recorder: EventRecorder  # set by _open
        self.snapshots: SnapshotRecorder
        self.group: GroupCommitter | None = None
        # The highest version seen per stream. Streams only grow, so a stream known to hold
        # `expected_version` events cannot leave a gap: append may skip its version read.
        self._known: dict[str, int] = {}
        # This store's instances of the registered payload codecs (events/codec.py), e.g.
        # LLM requests stored as deltas against their stream's previous one.
        self.codecs = PayloadCodecs(self._stored_at)
        try:
            for attempt in range(_OPEN_ATTEMPTS):
                try:
                    self._open(env)
                    break
                except _OPEN_ERRORS as e:
                    # Stores opened at once on a fresh SQLite file (actors starting
                    # together) can find it locked while another creates the tables or
                    # switches it to WAL; that PRAGMA can fail at once, without waiting
                    # out the busy timeout, and as sqlite3's own error, not the library's.
                    if "locked" not in str(e) or attempt == _OPEN_ATTEMPTS - 1:
                        raise
                    self.close()
                    time.sleep(min(2.0, 0.05 * 2**attempt))
        except _OPEN_ERRORS as e:
            self.close()  # stop the connection pool's reconnect workers
            reason = None
            if self.backend == "postgres" and "couldn't get a connection" in str(e):
                reason = postgres_reason(env)
            elif self.backend == "sqlite":
                reason = sqlite_reason(env["SQLITE_DBNAME"], e)
            raise StoreUnavailable(
                f"cannot open event store {redact(url)}: {reason or one_line(e)}"
            ) from e

    # -- writing -----------------------------------------------------------------

    def append(
        self, stream_id: str, events: Sequence[Event], expected_version: int
    ) -> list[Recorded]:
        """Append `events` to `stream_id`, which must be at `expected_version` now.

        Events get their stream_id and versions here (expected+1, expected+2, ...).
        Returns them with their global positions. Raises ConcurrencyError if the stream
        is not at `expected_version`; then nothing was written.
        """
        if expected_version < 0:
            raise ValueError(f"expected_version must be >= 0, not {expected_version}")
        if not events:
            return []
        return self._append([(stream_id, events, expected_version)])

    def append_many(self, batches: Sequence[tuple[str, Sequence[Event], int]]) -> list[Recorded]:
        """Append to several streams in ONE transaction: each `(stream_id, events,
        expected_version)` keeps its own optimistic check, and if any stream is not where
        its writer expected, nothing of any stream is written (ConcurrencyError).

        The recorders insert a list of stored events in one transaction on every backend,
        so a director's cycle reaches the world, director and synth streams together or
        not at all.
        """
        streams = [s for s, _, _ in batches]
        if len(set(streams)) != len(streams):
            raise ValueError("append_many: each stream may appear once")
        for _, _, expected_version in batches:
            if expected_version < 0:
                raise ValueError(f"expected_version must be >= 0, not {expected_version}")
        return self._append([b for b in batches if b[1]])

    def _append(self, batches: Sequence[tuple[str, Sequence[Event], int]]) -> list[Recorded]:
        """Stamped and encoded here, in the caller's thread (so a bad event fails before
        it joins anyone's batch); checked and written by `append_encoded` (with group
        commit: in a transaction shared with whatever other threads append now)."""
        stamped, encoded = encode_append(batches, self.codecs)
        positions = self.append_encoded(encoded)
        self.codecs.appended(stamped)  # durable now: later events may be stored against them
        return [Recorded(p, e) for p, e in zip(positions, stamped, strict=True)]

    def append_encoded(self, batches: Sequence[tuple[str, int, Sequence[tuple[str, bytes]]]]) -> list[int]:
        """Append events already stamped and encoded (`encode_append`): for each
        `(stream_id, expected_version, [(type_name, state), ...])`, versions expected+1,
        ...; all of them or nothing, each stream with its own check. Returns the global
        positions. This is what a store writer serving other processes calls: hosted as
        a Ray actor with `max_concurrency`, callers in every process share its group
        commit (they send bytes, not models). Raises ConcurrencyError as `append` does."""
        streams = [s for s, _, _ in batches]
        if len(set(streams)) != len(streams):
            raise ValueError("append: each stream may appear once")
        if any(expected < 0 for _, expected, _ in batches):
            raise ValueError("expected_version must be >= 0")
        items = [
            (
                stream_id,
                expected,
                [StoredEvent(stream_id, expected + i, topic, state) for i, (topic, state) in enumerate(events, 1)],
            )
            for stream_id, expected, events in batches
            if events
        ]
        if not items:
            return []
        if self.group is None:  # group commit off: one recorder transaction of its own
            return self._insert_checked(items)
        known = all(expected <= self._known.get(stream_id, 0) for stream_id, expected, _ in items)
        try:
            with self._available():
                positions = self.group.commit(Append(items, known=known))
        except Conflict as e:
            raise self._conflict(e.stream_id, e.expected_version) from None
        except IntegrityError as e:
            names = sorted(s for s, _, _ in items)
            raise ConcurrencyError(f"stream(s) {names} moved on while appending: {one_line(e)}") from e
        for stream_id, _, stored in items:
            self._saw(stream_id, stored[-1].originator_version)
        return positions

    def _insert_checked(self, items: list[tuple[str, int, list[StoredEvent]]]) -> list[int]:
        # Refuses gaps. Racing is still safe: a stream only grows, so if another writer
        # moves it on after this check, the insert below hits the unique key.
        for stream_id, expected, _ in items:
            if expected > self._known.get(stream_id, 0) and self.stream_version(stream_id) != expected:
                raise self._conflict(stream_id, expected)
        stored = [e for _, _, events in items for e in events]
        try:
            with self._available():
                positions = self.recorder.insert_events(stored)
        except IntegrityError as e:
            names = sorted(s for s, _, _ in items)
            raise ConcurrencyError(f"stream(s) {names} moved on while appending: {one_line(e)}") from e
        for stream_id, _, events in items:
            self._saw(stream_id, events[-1].originator_version)
        return list(positions or [0] * len(stored))

    def _conflict(self, stream_id: str, expected: int) -> ConcurrencyError:
        with self._available():  # only on a conflict: say where the stream is
            last = self.recorder.select_events(stream_id, desc=True, limit=1)
        current = last[0].originator_version if last else 0
        self._saw(stream_id, current)
        return ConcurrencyError(
            f"stream {stream_id!r} moved on while appending: it is at version {current}, "
            f"expected {expected}"
        )

    def group_stats(self) -> dict[str, int]:
        """Batches the group committer wrote and the appends in them (0s when off)."""
        g = self.group
        return {"batches": g.batches if g else 0, "appends": g.appends if g else 0}

    # -- reading streams -----------------------------------------------------------

    def read_stream(
        self, stream_id: str, from_version: int = 1, to_version: int | None = None
    ) -> list[Event]:
        return list(self.iter_stream(stream_id, from_version, to_version))

    def iter_stream(
        self, stream_id: str, from_version: int = 1, to_version: int | None = None
    ) -> Iterator[Event]:
        """`read_stream`, each event decoded as it is taken: what folds a stream keeps
        one event alive at a time, not thousands (which set the cyclic GC off again and
        again, a fifth of a 10,000-event load). The rows are read at once, here."""
        gt = from_version - 1 if from_version > 1 else None
        with self._available():
            rows = self.recorder.stream_rows(stream_id, gt, to_version)
        if rows:
            self._saw(stream_id, rows[-1][0])
        return _decoded(rows, stream_id, self.codecs)

    def stream_version(self, stream_id: str) -> int:
        with self._available():
            last = self.recorder.select_events(stream_id, desc=True, limit=1)
        version = last[0].originator_version if last else 0
        self._saw(stream_id, version)
        return version

    def _saw(self, stream_id: str, version: int) -> None:
        if version > self._known.get(stream_id, 0):
            self._known[stream_id] = version

    # -- reading the global log -------------------------------------------------------

    def max_position(self) -> int:
        with self._available():
            return self.recorder.max_notification_id() or 0

    def read_all(
        self,
        from_position: int = 1,
        *,
        to_position: int | None = None,
        run_id: str | None = None,
        types: Iterable[str] = (),
        batch: int = 500,
    ) -> Generator[Recorded, None, None]:
        """Events in global order from `from_position` (inclusive), optionally filtered."""
        topics = tuple(types)
        start = max(1, from_position)
        while True:
            with self._available():
                page = self.recorder.select_notifications(
                    start, batch, stop=to_position, topics=topics
                )
            for n in page:
                if run_id is not None and envelope_of(n.state)[2] != run_id:
                    continue
                yield Recorded(n.id, self._decode(n))
            if len(page) < batch:
                return
            start = page[-1].id + 1

    def follow(
        self,
        from_position: int = 1,
        *,
        run_id: str | None = None,
        types: Iterable[str] = (),
        stop: threading.Event | None = None,
        timeout: float | None = None,
        poll_interval: float = 0.2,
    ) -> Iterator[Recorded]:
        """Events from `from_position` on, then new ones as they are appended.

        PostgreSQL and memory stores use the recorder's subscription (LISTEN/NOTIFY on
        PostgreSQL); SQLite has none, so it polls. Ends when `stop` is set, when
        `timeout` seconds pass, or when the consumer stops iterating.
        """
        topics = tuple(types)
        deadline = None if timeout is None else time.monotonic() + timeout
        stop = stop or threading.Event()
        if self.backend == "sqlite":
            position = from_position - 1
            while not stop.is_set():
                with self._available():
                    page = self.recorder.select_notifications(position + 1, 500, topics=topics)
                for n in page:
                    position = n.id
                    if run_id is not None and envelope_of(n.state)[2] != run_id:
                        continue
                    yield Recorded(n.id, self._decode(n))
                    if stop.is_set():
                        return
                if len(page) == 500:
                    continue
                if deadline is not None and time.monotonic() >= deadline:
                    return
                stop.wait(poll_interval)
            return
        # `done` is ours: ending this iterator must not set the caller's `stop`, which
        # may be shared with other followers.
        done = threading.Event()
        with self._available():
            subscription = self.recorder.subscribe(gt=from_position - 1, topics=topics)
        with subscription:
            watcher = threading.Thread(
                target=_stop_when, args=(subscription, stop, done, deadline), daemon=True
            )
            watcher.start()
            try:
                with self._available():
                    for n in subscription:
                        if run_id is not None and envelope_of(n.state)[2] != run_id:
                            continue
                        yield Recorded(n.id, self._decode(n))
                        if stop.is_set():
                            return
            finally:
                done.set()

    # -- snapshots ---------------------------------------------------------------------

    def save_snapshot(self, stream_id: str, version: int, state: BaseModel) -> None:
        kind = type(state).__name__
        schema_version = getattr(type(state), "schema_version", 1)
        record = StoredEvent(
            originator_id=stream_id,
            originator_version=version,
            topic=kind,
            state=packb([schema_version, state.model_dump(mode="python")]),
        )
        try:
            with self._available():
                self.snapshots.insert_events([record])
        except IntegrityError:
            pass  # a snapshot at this version exists already: it is the same state

    def load_snapshot(self, stream_id: str, max_version: int | None = None) -> Snapshot | None:
        with self._available():
            found = self.snapshots.select_events(stream_id, lte=max_version, desc=True, limit=1)
        if not found:
            return None
        s = found[0]
        return _snapshot(stream_id, s.originator_version, s.topic, s.state)

    def load_latest(self, stream_id: str) -> tuple[Snapshot | None, Iterator[Event]]:
        """The stream's latest snapshot and the events after it (all of them when it has
        none), read together: one round trip on PostgreSQL, one transaction on SQLite."""
        with self._available():
            row, rows = self.recorder.latest(stream_id, self.snapshots)
        snap = None if row is None else _snapshot(stream_id, *row)
        if rows:
            self._saw(stream_id, rows[-1][0])
        return snap, _decoded(rows, stream_id, self.codecs)

    def list_snapshots(
        self, stream_id: str, after_version: int = 0, up_to_version: int | None = None
    ) -> list[Snapshot]:
        """Every snapshot of `stream_id` with a version in (after_version, up_to_version],
        oldest first (every saved version is kept)."""
        with self._available():
            found = self.snapshots.select_events(
                stream_id, gt=after_version or None, lte=up_to_version
            )
        return [_snapshot(stream_id, s.originator_version, s.topic, s.state) for s in found]

    # -- housekeeping ------------------------------------------------------------------

    def close(self) -> None:
        recorder = getattr(self, "recorder", None)  # None: the store did not open
        if recorder is not None:
            recorder.close()  # the snapshots share its database: this closes both

    @contextlib.contextmanager
    def _available(self) -> Iterator[None]:
        """Turn "the database went away" into StoreUnavailable, with one line."""
        try:
            yield
        except _UNAVAILABLE as e:
            reason = None
            if self.backend == "postgres" and "couldn't get a connection" in str(e):
                reason = postgres_reason(self._env)
            raise StoreUnavailable(
                f"event store {redact(self.url)} unavailable: {reason or one_line(e)}"
            ) from e

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _decode(self, s: StoredEvent | Notification) -> Event:
        return decode_event(s.topic, str(s.originator_id), s.originator_version, s.state, self.codecs)

    def _stored_at(self, stream_id: str, version: int) -> tuple[str, bytes] | None:
        """The stored (type_name, bytes) of the event at `version` of `stream_id`: what a
        payload codec reads, e.g. the base of a request stored as a delta."""
        with self._available():
            found = self.recorder.select_events(stream_id, gt=version - 1 if version > 1 else None, lte=version)
        return (found[0].topic, found[0].state) if found else None

    def _open(self, env: dict[str, str]) -> None:
        with creating_tables(env):
            # This touches the database now, so an unreachable store fails here rather
            # than at first use (later failures: see _available).
            self.recorder, self.snapshots = open_recorders(self.backend, env)
        if self._group_commit and self.backend != "popo":
            self.group = GroupCommitter(RecorderWriter(self.recorder))


_OPEN_ATTEMPTS = 8


def _snapshot(stream_id: str, version: int, kind: str, state: bytes) -> Snapshot:
    schema_version, data = unpackb(state)
    return Snapshot(stream_id, version, kind, schema_version, data)


def _decoded(rows: list[tuple[int, str, bytes]], stream_id: str, codecs: PayloadCodecs) -> Iterator[Event]:
    for version, topic, state in rows:
        yield decode_event(topic, stream_id, version, state, codecs)


def encode_append(
    batches: Sequence[tuple[str, Sequence[Event], int]],
    codecs: PayloadCodecs | None = None,
) -> tuple[list[Event], list[tuple[str, int, list[tuple[str, bytes]]]]]:
    """Stamp events with their streams and versions and encode them, for
    `EventStore.append_encoded` (in this process or a store writer's): the stamped
    events, and `(stream_id, expected_version, [(type_name, state), ...])` per stream.
    An event that cannot be encoded fails here, before anything is sent. With a store's
    `codecs`, payloads are stored in their registered codecs' forms (tell `codecs` once
    appended: `codecs.appended(stamped)`)."""
    stamped: list[Event] = []
    encoded = []
    for stream_id, events, expected_version in batches:
        if expected_version < 0:
            raise ValueError(f"expected_version must be >= 0, not {expected_version}")
        mine = [e.stamp(stream_id=stream_id, version=expected_version + i) for i, e in enumerate(events, start=1)]
        stamped.extend(mine)
        encoded.append((stream_id, expected_version, [(e.type_name, encode_event(e, codecs)) for e in mine]))
    return stamped, encoded


def _stop_when(
    subscription: Any, stop: threading.Event, done: threading.Event, deadline: float | None
) -> None:
    while not (stop.is_set() or done.is_set()):
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        done.wait(0.05 if remaining is None else min(0.05, remaining))
    subscription.stop()
