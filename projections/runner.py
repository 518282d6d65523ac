"""The projection runner: reads the log from each projection's tracked position and
folds it into the view, moving view and position in one transaction (rule 3).

A batch is one transaction: lock the tracked position and check it is the one we read,
apply the batch's events, record the new position (the library's tracking insert,
which refuses to go backwards). A crash anywhere rolls the whole batch back, so no
event is applied twice or skipped; a second runner on the same projection waits for
the lock, sees the position moved and carries on from there.

A projection that reads only some event types still tracks the log head it caught up
to, so its lag is zero when nothing it wants is left. That is safe because the store
never commits a lower position after a higher one (PostgreSQL: the library locks the
events table on insert; SQLite and memory: writes are serialized).

Rebuilding a long log (`rebuild`, or a view found at another schema version, or a view
new to a log of at least `bulk_threshold` events) is a bulk load: the projection's
secondary `indexes` are dropped while it loads, batches are `bulk_batch_size` events,
and the indexes come back when it has caught up (or, after a crash mid-load, when the
next runner opens the view). Each batch is still one transaction with the position,
so exactly-once holds the same way; only the indexes are late.

A projection with `stored = True` is read straight from the recorder's rows and
decodes what it needs itself (`projections.log_reader`: SQL on the store's table when
the views share its database, plain tuples, not the library's `Notification`s;
`select_notifications` on the in-memory store); others get typed events through
`EventStore.read_all`. After each
commit the runner calls `committed(views)`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from events.store import EventStore, Recorded
from projections.log_reader import read_stored
from projections.projection import (
    Projection,
    StoredRecord,
    UnknownProjection,
    projection_names,
    registered_projections,
)
from projections.views import PositionMoved, ViewCursor, ViewStore


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    schema_version: int  # of this code
    stored_schema_version: int | None  # of the view in the database (None: never built)
    position: int
    head: int

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    @property
    def needs_rebuild(self) -> bool:
        return self.stored_schema_version is not None and self.stored_schema_version != self.schema_version

    def line(self) -> str:
        note = ""
        if self.stored_schema_version is None:
            note = "  (not built yet)"
        elif self.needs_rebuild:
            note = f"  (built at schema v{self.stored_schema_version}: rebuilds on next run)"
        return (
            f"{self.name:<16} v{self.schema_version}  position {self.position:>8}  "
            f"head {self.head:>8}  lag {self.lag:>8}{note}"
        )


@dataclass(frozen=True)
class RebuildResult:
    name: str
    events: int  # events applied
    position: int  # where it ended
    seconds: float

    def line(self) -> str:
        rate = f", {self.events / self.seconds:,.0f} events/s" if self.seconds >= 0.1 else ""
        return f"rebuilt {self.name}: {self.events} events up to position {self.position} in {self.seconds:.2f}s{rate}"


class ProjectionRunner:
    """Runs projections over one event store; views live in the store's database."""

    def __init__(
        self,
        store: EventStore,
        projections: Iterable[Projection] | None = None,
        *,
        views: ViewStore | None = None,
        batch_size: int = 500,
        bulk_batch_size: int = 5_000,
        bulk_threshold: int = 10_000,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if bulk_batch_size < 1:
            raise ValueError(f"bulk_batch_size must be at least 1, not {bulk_batch_size}")
        self.store = store
        chosen = list(registered_projections() if projections is None else projections)
        self.projections: dict[str, Projection] = {}
        for p in chosen:
            if not p.name:
                raise ValueError(f"{p!r} has no name")
            if p.name in self.projections:
                raise ValueError(f"two projections named {p.name!r}")
            self.projections[p.name] = p
        self.views = views or ViewStore.for_store(store)
        self.batch_size = batch_size
        self.bulk_batch_size = bulk_batch_size
        self.bulk_threshold = bulk_threshold  # events behind, from 0, that make a bulk load
        self._ensured: set[str] = set()
        self._bulk: set[str] = set()  # projections loading in bulk (their indexes dropped)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # what ended a background runner

    # -- choosing ---------------------------------------------------------------------------

    def get(self, name: str) -> Projection:
        try:
            return self.projections[name]
        except KeyError:
            known = ", ".join(self.projections) or "none"
            raise UnknownProjection(f"unknown projection {name!r} (known: {known})") from None

    def _chosen(self, name: str | None) -> list[Projection]:
        return list(self.projections.values()) if name is None else [self.get(name)]

    # -- status -----------------------------------------------------------------------------

    def status(self) -> list[ProjectionStatus]:
        head = self.store.max_position()
        return [
            ProjectionStatus(
                name=p.name,
                schema_version=p.schema_version,
                stored_schema_version=self.views.schema_version(p.name),
                position=self.views.position(p.name),
                head=head,
            )
            for p in self.projections.values()
        ]

    # -- catching up ------------------------------------------------------------------------

    def run_once(
        self, *, stop: threading.Event | None = None, max_batches: int | None = None
    ) -> dict[str, int]:
        """Catch every projection up to the end of the log, in batches.

        Returns how many events each applied. Stops early between batches when `stop`
        is set or after `max_batches` batches per projection.
        """
        applied: dict[str, int] = {}
        for p in self.projections.values():
            self.ensure(p)
            applied[p.name] = self._catch_up(p, stop=stop, max_batches=max_batches)
        return applied

    def rebuild(self, name: str | None = None) -> list[RebuildResult]:
        """Drop the view(s), reset the position to 0 and catch up from the start."""
        results = []
        for p in self._chosen(name):
            started = time.perf_counter()
            bulk = self.store.max_position() >= self.bulk_threshold
            with self.views.transaction() as c:
                self.views.lock(c, p.name)
                self.views.hold(c, p.name)
                self._reset(c, p, bulk)
            self._ensured.add(p.name)
            events = self._catch_up(p)
            results.append(
                RebuildResult(p.name, events, self.views.position(p.name), time.perf_counter() - started)
            )
        return results

    def ensure(self, p: Projection) -> None:
        """Create the view on first use; rebuild it from 0 if built at another schema version."""
        if p.name in self._ensured:
            return
        bulk = self.store.max_position() >= self.bulk_threshold
        with self.views.transaction() as c:
            self.views.lock(c, p.name)
            self.views.hold(c, p.name)  # no batch of another runner is half-way now
            stored = self.views.stored_schema(c, p.name)
            if stored is not None and stored > p.schema_version:
                raise ValueError(
                    f"projection {p.name}'s view is at schema v{stored}, newer than this "
                    f"code's v{p.schema_version}: upgrade, or rebuild it with this version"
                )
            if stored != p.schema_version or not self.views.has_position(c, p.name):
                self._reset(c, p, bulk)
            elif p.name not in self._bulk:
                p.create_indexes(c)  # back, if a bulk load died before making them
        self._ensured.add(p.name)
        p.committed(self.views)  # finish what a crash after a commit left undone

    def _reset(self, c: ViewCursor, p: Projection, bulk: bool) -> None:
        p.drop(c)
        p.create(c)
        self.views.reset(c, p.name, p.schema_version)
        if bulk:
            p.drop_indexes(c)
            self._bulk.add(p.name)
        else:
            self._bulk.discard(p.name)

    def _batch_size(self, p: Projection) -> int:
        return max(self.batch_size, self.bulk_batch_size) if p.name in self._bulk else self.batch_size

    def _catch_up(
        self, p: Projection, *, stop: threading.Event | None = None, max_batches: int | None = None
    ) -> int:
        head = self.store.max_position()
        position = self.views.position(p.name)
        applied = batches = 0
        while position < head:
            if (stop is not None and stop.is_set()) or (max_batches is not None and batches >= max_batches):
                break
            size = self._batch_size(p)
            records = self._read(p, position, head)
            # A short page holds every wanted event up to head: the position may move there.
            last = records[-1].position if len(records) == size else head
            done = self._apply(p, position, last, records)
            if done is None:
                # Another runner (or a rebuild) moved it: nothing of ours was written.
                position = self.views.position(p.name)
                continue
            position = last
            applied += done
            batches += 1
        if p.name in self._bulk:
            self._end_bulk(p)
        return applied

    def _apply(self, p: Projection, position: int, last: int, records: list[Any]) -> int | None:
        """One batch in one transaction; None if the position was not `position` any more."""
        try:
            with self.views.transaction() as c:
                self.views.claim(c, p.name, position)
                if records:
                    p.apply_batch(c, records)
                self.views.track(c, p.name, last)
        except PositionMoved:
            return None
        p.committed(self.views)
        return len(records)

    def _end_bulk(self, p: Projection) -> None:
        """Make the indexes a bulk load dropped (also when it stopped early: a runner
        that resumes later loads with them, more slowly but correctly)."""
        with self.views.transaction() as c:
            self.views.lock(c, p.name)
            self.views.hold(c, p.name)
            p.create_indexes(c)
        self._bulk.discard(p.name)

    def _read(self, p: Projection, position: int, head: int) -> list[Recorded] | list[StoredRecord]:
        size = self._batch_size(p)
        if p.stored:
            return read_stored(self.store, position, head, size, p.types)
        pages = self.store.read_all(position + 1, to_position=head, types=p.types, batch=size)
        try:
            return list(islice(pages, size))
        finally:
            pages.close()

    # -- following the log live ---------------------------------------------------------------

    def run_forever(
        self,
        stop: threading.Event | None = None,
        *,
        timeout: float | None = None,
        idle_interval: float = 1.0,
    ) -> None:
        """Catch up, then follow the log: each new event wakes the runner, which catches
        up again in batches (so a burst is one transaction per batch, not per event).

        Wakes come from `EventStore.follow` (LISTEN/NOTIFY on PostgreSQL, polling on
        SQLite); `idle_interval` is a safety net. Ends when `stop` is set or after `timeout`.
        """
        stop = stop or self._stop
        deadline = None if timeout is None else time.monotonic() + timeout
        start = self.store.max_position()  # before catching up: nothing slips between
        self.run_once(stop=stop)
        wake = threading.Event()
        done = threading.Event()
        failure: list[BaseException] = []
        types = self._followed_types()

        def watch() -> None:
            try:
                for _ in self.store.follow(start + 1, types=types, stop=done):
                    wake.set()
            except BaseException as e:  # noqa: BLE001 - handed to the loop below
                failure.append(e)
                wake.set()

        watcher = threading.Thread(target=watch, name="projection-follow", daemon=True)
        watcher.start()
        next_idle = time.monotonic() + idle_interval
        try:
            while not stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                # Short waits, so that a set `stop` ends the loop promptly.
                woken = wake.wait(0.05)
                if not woken and time.monotonic() < next_idle:
                    continue
                wake.clear()
                if failure:
                    raise failure[0]
                if stop.is_set():
                    break
                self.run_once(stop=stop)
                if not woken:  # an idle tick: what waits on no new event (a late snapshot, say)
                    for p in self.projections.values():
                        p.committed(self.views)
                next_idle = time.monotonic() + idle_interval
        finally:
            done.set()
            watcher.join(timeout=5)

    def _followed_types(self) -> tuple[str, ...]:
        wanted: set[str] = set()
        for p in self.projections.values():
            if not p.types:
                return ()  # someone wants every event
            wanted.update(p.types)
        return tuple(sorted(wanted))

    def start(self, *, idle_interval: float = 1.0) -> threading.Thread:
        """Run `run_forever` in a background thread until `stop()`; its error is in `error`."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("this runner is already running")
        self._stop.clear()
        self.error = None

        def run() -> None:
            try:
                self.run_forever(self._stop, idle_interval=idle_interval)
            except BaseException as e:  # noqa: BLE001 - kept for the caller
                self.error = e

        self._thread = threading.Thread(target=run, name="projection-runner", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_until(self, position: int, timeout: float = 10.0, names: Sequence[str] | None = None) -> None:
        """Block until the projections (all, or `names`) have processed `position`.

        Raises TimeoutError after `timeout` seconds, and a background runner's error at once.
        """
        deadline = time.monotonic() + timeout
        chosen = list(names) if names is not None else list(self.projections)
        for n in chosen:
            self.get(n)
        while True:
            if self.error is not None:
                raise self.error
            if all(self.views.position(n) >= position for n in chosen):
                return
            if time.monotonic() >= deadline:
                behind = {n: self.views.position(n) for n in chosen}
                raise TimeoutError(f"projections not at position {position} after {timeout}s: {behind}")
            time.sleep(0.02)


def caught_up(store: EventStore, projection: Projection, *, catch_up: bool = True) -> ViewStore:
    """The views of `store` with `projection`'s view created, and caught up with the log
    unless `catch_up` is false. A view already current is only read: the runner's checks
    take write locks, whose commit (an fsync) would cost more than the query."""
    views = ViewStore.for_store(store)
    name = projection.name
    if views.schema_version(name) == projection.schema_version and (
        not catch_up or views.position(name) >= store.max_position()
    ):
        return views
    runner = ProjectionRunner(store, [projection], views=views)
    if catch_up:
        runner.run_once()
    else:
        runner.ensure(runner.get(name))
    return runner.views


def known_projection(name: str) -> str:
    """`name` if a projection of that name is registered, else UnknownProjection."""
    if name not in projection_names():
        known = ", ".join(projection_names()) or "none"
        raise UnknownProjection(f"unknown projection {name!r} (known: {known})")
    return name
