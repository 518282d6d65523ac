"""The views' tracked positions in our tracking recorder (`chorus_tracking`), on SQLite and
PostgreSQL (and memory where it applies): they outlive the store object, a view's rows
and its position commit together or not at all, and a database an earlier Chorus wrote
(the eventsourcing library's tracking table) keeps its positions when first opened."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from eventsourcing.persistence import (
    InfrastructureFactory,
    IntegrityError,
    ProgrammingError,
    Tracking,
)

from events.backends import env_for
from events.runs import RunSubmitted
from events.store import EventStore, Recorded
from projections import Projection, ProjectionRunner, ViewCursor
from projections.views import ViewStore, tracking_name


class Seen(Projection):
    """One row per event: applying an event twice breaks the primary key."""

    name = "seen"
    schema_version = 1
    tables = ("seen",)

    def create(self, c: ViewCursor) -> None:
        c.execute("CREATE TABLE IF NOT EXISTS seen (position BIGINT PRIMARY KEY)")

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        c.executemany("INSERT INTO seen (position) VALUES (?)", [(r.position,) for r in records])


def submit(store: EventStore, runs: range) -> None:
    for i in runs:
        store.append(f"run:{i}", [RunSubmitted(goal="g", run_id=str(i))], 0)


@pytest.fixture
def views(store_url):
    """The views of a fresh store of each backend (`views.store` is the store)."""
    store = EventStore(store_url)
    opened = ViewStore.for_store(store)
    yield opened
    opened.close()
    store.close()


def seen(views: ViewStore) -> list[int]:
    return [r["position"] for r in views.query("SELECT position FROM seen ORDER BY position")]


def test_positions_outlive_the_store_object(durable_store_url):
    first = EventStore(durable_store_url)
    submit(first, range(1, 8))
    ProjectionRunner(first, [Seen()], batch_size=3).run_once(max_batches=2)
    assert ViewStore.for_store(first).position("seen") == 6
    ViewStore.for_store(first).close()
    first.close()

    second = EventStore(durable_store_url)
    try:
        views = ViewStore.for_store(second)
        assert views.position("seen") == 6
        assert views.tracking.max_tracking_id(tracking_name("seen")) == 6
        assert ProjectionRunner(second, [Seen()]).run_once() == {"seen": 1}
        assert seen(views) == list(range(1, 8))
    finally:
        ViewStore.for_store(second).close()
        second.close()


class Boom(Exception):
    pass


def test_rows_and_position_commit_together_or_not_at_all(views):
    with views.transaction() as c:
        c.execute("CREATE TABLE rows_of_view (n INTEGER PRIMARY KEY)")
    name = tracking_name("atomic")

    def rows() -> list[int]:
        return [r["n"] for r in views.query("SELECT n FROM rows_of_view ORDER BY n")]

    # A failure after the rows, before the position: neither is kept.
    with pytest.raises(Boom), views.transaction() as c:
        c.execute("INSERT INTO rows_of_view (n) VALUES (1)")
        raise Boom
    # A failure after both: neither is kept.
    with pytest.raises(Boom), views.transaction() as c:
        c.execute("INSERT INTO rows_of_view (n) VALUES (1)")
        views.tracking.track(c.raw, Tracking(name, 1))
        raise Boom
    assert (rows(), views.tracking.max_tracking_id(name)) == ([], None)

    with views.transaction() as c:
        c.execute("INSERT INTO rows_of_view (n) VALUES (1)")
        views.tracking.track(c.raw, Tracking(name, 1))
    assert (rows(), views.tracking.max_tracking_id(name)) == ([1], 1)

    # A position that does not move forward fails the transaction, rows and all.
    with pytest.raises(IntegrityError), views.transaction() as c:
        c.execute("INSERT INTO rows_of_view (n) VALUES (2)")
        views.tracking.track(c.raw, Tracking(name, 1))
    assert (rows(), views.tracking.max_tracking_id(name)) == ([1], 1)

    # A transaction that does not commit keeps nothing either.
    with views.transaction(commit=False) as c:
        c.execute("INSERT INTO rows_of_view (n) VALUES (3)")
        views.tracking.track(c.raw, Tracking(name, 3))
    assert (rows(), views.tracking.max_tracking_id(name)) == ([1], 1)


def test_a_runner_whose_position_fails_to_record_leaves_no_rows_and_carries_on(views, monkeypatch):
    store = views.store
    submit(store, range(1, 6))
    runner = ProjectionRunner(store, [Seen()], batch_size=2)
    assert runner.run_once(max_batches=1) == {"seen": 2}

    real = views.tracking.track

    def fail_after_rows(cursor, tracking):
        raise Boom("between the view's rows and its position")

    monkeypatch.setattr(views.tracking, "track", fail_after_rows)
    with pytest.raises(Boom):
        runner.run_once(max_batches=1)
    assert (seen(views), views.position("seen")) == ([1, 2], 2)

    monkeypatch.setattr(views.tracking, "track", real)
    assert runner.run_once() == {"seen": 3}
    assert (seen(views), views.position("seen")) == ([1, 2, 3, 4, 5], 5)


def test_a_view_transaction_inside_another_on_one_thread_fails_at_once(views):
    # SQLite (and memory) use one connection per thread: a nested transaction would wait
    # on its own write lock forever. PostgreSQL takes another connection from its pool.
    with views.transaction() as c:
        c.execute("CREATE TABLE outer_rows (n INTEGER PRIMARY KEY)")
        if views.dialect == "sqlite":
            with pytest.raises(ProgrammingError, match="do not nest"):
                views.position("seen")
            with pytest.raises(ProgrammingError, match="do not nest"), views.transaction():
                pass
        c.execute("INSERT INTO outer_rows (n) VALUES (1)")
    assert views.query("SELECT n FROM outer_rows") == [{"n": 1}]


def _legacy_tracking(url: str, positions: dict[str, int]) -> None:
    """Write positions the way an earlier Chorus's views did: the library's own tracking
    recorder on the store's file or schema (`tracking` on SQLite, `notification_tracking`
    on PostgreSQL, with the library's `__migration__` row)."""
    factory = InfrastructureFactory.construct(env=env_for(url))
    try:
        recorder = factory.tracking_recorder()
        for name, position in positions.items():
            recorder.insert_tracking(Tracking(name, position))
    finally:
        factory.close()


def _drop_our_tracking(views: ViewStore) -> None:
    with views.transaction() as c:
        c.execute("DROP TABLE chorus_tracking")


def test_an_earlier_chorus_tracking_table_is_copied_on_first_open(durable_store_url):
    # An earlier Chorus's database: the events (ours since 0015), a view built to
    # position 4 with its schema version, and the position in the library's table.
    first = EventStore(durable_store_url)
    submit(first, range(1, 5))
    ProjectionRunner(first, [Seen()]).run_once()
    views = ViewStore.for_store(first)
    _drop_our_tracking(views)
    views.close()
    first.close()
    _legacy_tracking(durable_store_url, {tracking_name("seen"): 4, tracking_name("other"): 9})

    second = EventStore(durable_store_url)
    try:
        submit(second, range(5, 7))
        views = ViewStore.for_store(second)
        assert (views.position("seen"), views.position("other")) == (4, 9)
        assert views.tracking.max_tracking_id("__migration__") is None  # the library's, not a position
        # Carries on from there: no rebuild, no event applied twice.
        assert ProjectionRunner(second, [Seen()]).run_once() == {"seen": 2}
        assert (seen(views), views.position("seen")) == ([1, 2, 3, 4, 5, 6], 6)
        views.close()
    finally:
        second.close()

    # Copied once: the old table, left in place, is not read again.
    _legacy_tracking(durable_store_url, {tracking_name("other"): 20})
    third = EventStore(durable_store_url)
    try:
        views = ViewStore.for_store(third)
        assert (views.position("seen"), views.position("other")) == (6, 9)
        views.close()
    finally:
        third.close()
