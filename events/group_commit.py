"""Group commit: appends made at the same time by many threads share one transaction.

A single-event append on PostgreSQL costs one `LOCK TABLE ... IN EXCLUSIVE MODE`, one
commit and its WAL flush; writers queue on that lock one after another. Here the first
writer to arrive becomes the leader: it takes every append queued behind it (up to
`max_batch`), writes them in ONE transaction and wakes each with its own outcome (one
by one, not all at once); the others wait as followers, and the first still queued when
it finishes is handed the lead for the next batch.

A lone append whose writer knows its stream has no gap (the store has seen the version it
expects) needs no version check: the unique key catches a stream that moved on. It goes
through the recorder's plain insert, exactly as without group commit, so a single writer
pays only the queue's few microseconds.

Each append keeps its own optimistic-concurrency check, made inside the transaction
while the table lock is held (so it is exact): every stream it names must stand at the
version its writer expected. An append that fails the check is left out of the insert
and fails alone (`Conflict`); the others land. Two appends of one batch that name the
same stream are never judged together: the later one waits for the next batch, so the
"one winner per stream and version" rule comes from the database, not from guessing.

If the batch's transaction fails for another reason (a value the database refuses, a
lost connection), it is rolled back whole and each append is retried on its own, so a
bad append fails alone and no batch writes half of itself.

The planning (`plan`) is pure; the writer (`RecorderWriter`) talks to the
database only through the recorder's public methods (events/recorders/): on PostgreSQL
each transaction is one round trip, its lock, NOTIFY and insert pipelined.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    PersistenceError,
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
    # A lock held until the writer is to wake: `wait` blocks on it, `wake` releases it
    # (one C call; `threading.Event.set` takes a Condition and costs several Python frames
    # under the GIL, which the leader pays for every writer of its batch).
    _wake: Any = field(default_factory=threading.Lock, repr=False)
    _streams: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self._streams = frozenset(s for s, _, _ in self.items)
        self._wake.acquire()

    def wait(self) -> None:
        """Block until `wake` (each wake lets one wait through)."""
        self._wake.acquire()

    def wake(self) -> None:
        self._wake.release()

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
                append.wait()
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
        """Write one batch from the queue; hand the lead to the first still queued (so
        its transaction starts while this batch's writers are being woken), then wake
        each of this batch's writers alone (not everyone). True: `me` is that one, lead on."""
        with self._cv:
            batch, self._queue = plan(self._queue, self.max_batch)
        try:
            self._lead(batch)
        except BaseException:
            if me in batch:
                raise
            # Not ours: the batch's writers have it as their error; `me` is still queued.
        finally:
            with self._cv:
                nxt = self._queue[0] if self._queue else None
                if nxt is None:
                    self._leading = False
                elif nxt is not me:
                    nxt.wake()  # not done: it wakes as the leader
            for a in batch:
                if a is not me:
                    a.wake()
        return nxt is me

    def _lead(self, batch: list[Append]) -> None:
        self.batches += 1
        self.appends += len(batch)
        try:
            write_isolating(self.write, batch)
        except BaseException as e:
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


# -- the writer ------------------------------------------------------------------------------


class RecorderWriter:
    """Writes a batch through the recorder's public methods (events/recorders/): ONE
    transaction for the whole batch, each append checked in it (`append_checked`); a
    lone append whose writer knows its streams have no gap goes in as a plain insert
    (`insert_events`: the unique key catches a stream that moved on), so a single
    writer pays nothing for the check."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder

    def __call__(self, batch: list[Append]) -> None:
        if len(batch) == 1 and batch[0].known:
            retrying(self._alone, batch)
        else:
            retrying(self._write, batch)

    def _alone(self, batch: list[Append]) -> None:
        [append] = batch
        try:
            positions = self.recorder.insert_events(append.stored())
        except IntegrityError as e:
            if len(append.items) == 1:
                append.error = Conflict(append.items[0][0], append.items[0][1])
            else:  # which of its streams moved on, the database does not say
                append.error = e
            append.done = True
            return
        append.positions, append.done = list(positions), True

    def _write(self, batch: list[Append]) -> None:
        outcomes = self.recorder.append_checked([a.items for a in batch])
        for a, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, tuple):
                a.error = Conflict(*outcome)
            else:
                a.positions = outcome
            a.done = True
