"""The projection runner on the in-memory store: batches, exactly-once position tracking,
crashes, concurrent runners, schema versions, rebuild, status and live following."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from events import Event, event_type
from events.store import EventStore, Recorded
from projections import (
    AuditProjection,
    Projection,
    ProjectionRunner,
    UnknownProjection,
    ViewCursor,
    projection_names,
    register_projection,
    registered_projections,
)
from projections.views import PositionMoved


@event_type("test.projection.Noted")
class Noted(Event):
    text: str


@event_type("test.projection.Ignored")
class Ignored(Event):
    n: int = 0


class Tally(Projection):
    """Counts Noted events per stream and keeps the order it saw them in."""

    name = "tally"
    schema_version = 1
    types = ("test.projection.Noted",)
    tables = ("tally", "tally_seen")

    def create(self, c: ViewCursor) -> None:
        c.execute("CREATE TABLE IF NOT EXISTS tally (stream_id TEXT PRIMARY KEY, events INTEGER NOT NULL)")
        c.execute("CREATE TABLE IF NOT EXISTS tally_seen (position BIGINT PRIMARY KEY, text TEXT NOT NULL)")

    def apply(self, c: ViewCursor, recorded: Recorded) -> None:
        e = recorded.event
        row = c.execute("SELECT events FROM tally WHERE stream_id = ?", (e.stream_id,)).fetchone()
        if row is None:
            c.execute("INSERT INTO tally (stream_id, events) VALUES (?, 1)", (e.stream_id,))
        else:
            c.execute("UPDATE tally SET events = ? WHERE stream_id = ?", (row["events"] + 1, e.stream_id))
        c.execute("INSERT INTO tally_seen (position, text) VALUES (?, ?)", (recorded.position, e.text))


class Crash(Exception):
    pass


class CrashingTally(Tally):
    """Raises inside apply after `after` events, with the batch half written."""

    def __init__(self, after: int) -> None:
        self.left = after

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        for r in records:
            if self.left == 0:
                raise Crash("killed")
            self.apply(c, r)
            self.left -= 1


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def fill(store: EventStore, n: int, streams: int = 3, noise_every: int = 0) -> None:
    for i in range(n):
        stream = f"s{i % streams}"
        events: list[Event] = [Noted(text=f"t{i}", run_id="r")]
        if noise_every and i % noise_every == 0:
            events.append(Ignored(n=i, run_id="r"))
        store.append(stream, events, store.stream_version(stream))


def seen(runner: ProjectionRunner) -> list[int]:
    return [r["position"] for r in runner.views.query("SELECT position FROM tally_seen ORDER BY position")]


def noted_positions(store: EventStore, upto: int | None = None) -> list[int]:
    return [r.position for r in store.read_all(types=["test.projection.Noted"]) if upto is None or r.position <= upto]


# -- catching up ------------------------------------------------------------------------------


def test_run_once_catches_up_in_batches_and_tracks_the_head(store):
    fill(store, 23, noise_every=4)
    runner = ProjectionRunner(store, [Tally()], batch_size=5)
    assert runner.run_once() == {"tally": 23}
    assert seen(runner) == noted_positions(store)
    [status] = runner.status()
    # It wants only Noted, yet it tracked the head: nothing it wants is left.
    assert (status.position, status.head, status.lag) == (store.max_position(), store.max_position(), 0)
    assert runner.run_once() == {"tally": 0}
    fill(store, 4)
    assert runner.run_once() == {"tally": 4}
    assert seen(runner) == noted_positions(store)


def test_a_crash_inside_apply_rolls_back_the_whole_batch_and_a_restart_finishes(store):
    fill(store, 30)
    crashing = ProjectionRunner(store, [CrashingTally(after=12)], batch_size=5)
    with pytest.raises(Crash):
        crashing.run_once()
    # Two batches (10 events) committed; the third's two applied events rolled back with it.
    position = crashing.views.position("tally")
    assert seen(crashing) == noted_positions(store, upto=position)
    assert len(seen(crashing)) == 10

    restarted = ProjectionRunner(store, [Tally()], batch_size=7)
    assert restarted.run_once() == {"tally": 20}
    incremental = restarted.views.dump(Tally.tables)
    restarted.rebuild("tally")
    assert restarted.views.dump(Tally.tables) == incremental
    assert seen(restarted) == noted_positions(store)


def test_stopping_between_batches_then_resuming(store):
    fill(store, 20)
    runner = ProjectionRunner(store, [Tally()], batch_size=6)
    assert runner.run_once(max_batches=2) == {"tally": 12}
    assert runner.views.position("tally") == noted_positions(store)[11]
    stop = threading.Event()
    stop.set()
    assert runner.run_once(stop=stop) == {"tally": 0}
    assert runner.run_once() == {"tally": 8}
    assert seen(runner) == noted_positions(store)


def test_a_runner_whose_position_moved_underneath_it_writes_nothing_and_carries_on(store):
    fill(store, 10)
    a = ProjectionRunner(store, [Tally()], batch_size=4)
    b = ProjectionRunner(store, [Tally()], batch_size=4)
    b.ensure(b.get("tally"))
    a.ensure(a.get("tally"))
    read = a._read
    raced = []

    def read_then_let_b_run(p, position, head):
        records = read(p, position, head)
        if not raced:
            raced.append(b.run_once())  # b processes everything while a holds its batch
        return records

    a._read = read_then_let_b_run  # type: ignore[method-assign]
    assert a.run_once() == {"tally": 0}
    assert raced == [{"tally": 10}]
    assert seen(a) == noted_positions(store)


def test_claim_refuses_a_position_other_than_the_expected_one(store):
    fill(store, 3)
    runner = ProjectionRunner(store, [Tally()])
    runner.run_once()
    with pytest.raises(PositionMoved), runner.views.transaction() as c:
        runner.views.claim(c, "tally", 1)


# -- rebuild, schema versions, status -----------------------------------------------------------


def test_rebuild_gives_the_incremental_view_and_reports_what_it_did(store):
    runner = ProjectionRunner(store, [Tally()], batch_size=3)
    for _ in range(4):
        fill(store, 5, noise_every=2)
        runner.run_once()
    incremental = runner.views.dump(Tally.tables)
    [result] = runner.rebuild()
    assert (result.name, result.events, result.position) == ("tally", 20, store.max_position())
    assert result.seconds >= 0 and "rebuilt tally: 20 events" in result.line()
    assert runner.views.dump(Tally.tables) == incremental


def test_a_new_schema_version_drops_and_rebuilds_the_view(store):
    fill(store, 5)
    ProjectionRunner(store, [Tally()]).run_once()

    class TallyV2(Tally):
        schema_version = 2

        def create(self, c: ViewCursor) -> None:
            super().create(c)
            c.execute("CREATE TABLE IF NOT EXISTS tally_v2 (x INTEGER)")

    runner = ProjectionRunner(store, [TallyV2()])
    [before] = runner.status()
    assert (before.stored_schema_version, before.needs_rebuild) == (1, True)
    assert "rebuilds on next run" in before.line()
    assert runner.run_once() == {"tally": 5}  # all of them again, into a fresh view
    assert seen(runner) == noted_positions(store)
    assert runner.views.schema_version("tally") == 2
    # Code older than the view refuses to touch it.
    with pytest.raises(ValueError, match="newer than this code"):
        ProjectionRunner(store, [Tally()]).run_once()


def test_status_before_anything_ran(store):
    fill(store, 2)
    [s] = ProjectionRunner(store, [Tally()]).status()
    assert (s.position, s.head, s.lag, s.stored_schema_version) == (0, 2, 2, None)
    assert "not built yet" in s.line()


def test_bad_names_and_arguments(store):
    runner = ProjectionRunner(store, [Tally()])
    with pytest.raises(UnknownProjection, match="unknown projection 'nope' \\(known: tally\\)"):
        runner.rebuild("nope")
    assert isinstance(UnknownProjection("x"), ValueError)
    with pytest.raises(ValueError, match="two projections named"):
        ProjectionRunner(store, [Tally(), Tally()])
    with pytest.raises(ValueError, match="batch_size"):
        ProjectionRunner(store, [Tally()], batch_size=0)


def test_the_registry_holds_the_audit_trail():
    assert "audit" in projection_names()
    assert any(isinstance(p, AuditProjection) for p in registered_projections())

    class Impostor(Projection):
        name = "audit"

    with pytest.raises(ValueError, match="already used"):
        register_projection(Impostor)


# -- live ------------------------------------------------------------------------------------


def test_a_background_runner_follows_the_log_live(store):
    fill(store, 3)
    runner = ProjectionRunner(store, [Tally()])
    thread = runner.start(idle_interval=5.0)  # wakes come from the store's subscription
    try:
        runner.wait_until(store.max_position(), timeout=10)
        fill(store, 4)
        runner.wait_until(store.max_position(), timeout=10)
        assert seen(runner) == noted_positions(store)
    finally:
        runner.stop()
    assert not thread.is_alive()
    assert runner.error is None


def test_a_background_runner_error_surfaces(store):
    fill(store, 3)
    runner = ProjectionRunner(store, [CrashingTally(after=1)])
    runner.start()
    try:
        with pytest.raises(Crash):
            runner.wait_until(store.max_position(), timeout=10)
    finally:
        runner.stop()


def test_run_forever_returns_after_its_timeout(store):
    fill(store, 2)
    runner = ProjectionRunner(store, [Tally()])
    runner.run_forever(timeout=0.3, idle_interval=0.1)
    assert runner.views.position("tally") == store.max_position()
