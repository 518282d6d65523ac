"""The projection runner and the audit trail on every backend (memory, SQLite, PostgreSQL):
views in the store's own database, racing runners, restarts on a new store object, and
following the log live (LISTEN/NOTIFY on PostgreSQL, polling on SQLite)."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from events.store import EventStore
from actors.agent.events import StepDecided
from events.effects import LlmCompleted, LlmRequested
from events.runs import RunSubmitted
from projections import AuditProjection, AuditTrail, ProjectionRunner
from projections.log_reader import read_positions, read_stored


@pytest.fixture
def store(store_url):
    s = EventStore(store_url)
    yield s
    s.close()


def other_store(store: EventStore) -> EventStore:
    """A second store object on the same data (the same object for memory://)."""
    return store if store.backend == "popo" else EventStore(store.url)


def agent_turn(store: EventStore, stream: str, run: str, i: int) -> None:
    """One LLM call and one step, as the agent shell appends them."""
    version = store.stream_version(stream)
    store.append(
        stream,
        [
            LlmRequested(model="m", messages=[{"role": "user", "content": f"q{i}"}], params={"seed": i},
                         request_hash=f"h{i}", call_index=i, run_id=run),
            LlmCompleted(request_hash=f"h{i}", call_index=i, content=f"a{i}", prompt_tokens=10,
                         completion_tokens=i, latency_s=0.5, cost_usd=0.25, run_id=run),
        ],
        version,
    )
    store.append(stream, [StepDecided(iteration=i, thought="t", action="search", args={}, run_id=run)], version + 2)


def indexed(runner: ProjectionRunner) -> tuple[int, int]:
    """How many events the audit view counted, and the last position it indexed: (n, n)
    when each of the first n events was applied exactly once (twice would count it twice)."""
    [row] = runner.views.query("SELECT SUM(events) AS n, MAX(last_position) AS last FROM audit_streams")
    return int(row["n"] or 0), int(row["last"] or 0)


def test_the_audit_trail_end_to_end(store, tmp_path):
    store.append("run:1", [RunSubmitted(goal="g", run_id="1")], 0)
    for i in range(1, 4):
        agent_turn(store, "agent-1", "1", i)
    agent_turn(store, "agent-2", "2", 1)
    trail = AuditTrail.open(store)
    assert len(trail.events()) == store.max_position() == 13
    assert [e.type for e in trail.events(stream_id="agent-2")] == ["LlmRequested", "LlmCompleted", "StepDecided"]
    assert [c.seed for c in trail.llm_calls(run_id="1")] == [1, 2, 3]
    [usage] = trail.usage_by_run("1")
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens, usage.cost_usd) == (3, 30, 6, 0.75)
    assert [(u.key, u.calls) for u in trail.usage_by_actor()] == [("agent-1", 3), ("agent-2", 1)]
    assert trail.export_jsonl(tmp_path / "audit.jsonl", run_id="2") == 3
    assert trail.export_llm_calls(tmp_path / "llm_calls.jsonl") == 4
    first = json.loads((tmp_path / "llm_calls.jsonl").read_text().splitlines()[0])
    assert (first["response"], first["seed"], first["completion_tokens"]) == ("a1", 1, 1)


def test_views_live_in_the_stores_own_database(store_url, tmp_path):
    s = EventStore(store_url)
    try:
        s.append("run:1", [RunSubmitted(goal="g", run_id="1")], 0)
        ProjectionRunner(s).run_once()
        if s.backend == "sqlite":
            path = store_url.removeprefix("sqlite:///")
            with sqlite3.connect(path) as db:
                assert db.execute("SELECT run_id, stream_id, events FROM audit_streams").fetchall() == [("1", "run:1", 1)]
                assert db.execute(
                    "SELECT position FROM chorus_tracking WHERE name = 'projection:audit'"
                ).fetchone() == (1,)
        elif s.backend == "postgres":
            schema = store_url.rsplit("schema=", 1)[1]
            from tests.conftest import _connect

            with _connect() as db:
                tables = {
                    r[0]
                    for r in db.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
                    ).fetchall()
                }
                assert {"audit_streams", "llm_calls", "projection_schemas", "chorus_tracking"} <= tables
                assert "notification_tracking" not in tables  # the library's: none of its tables
                assert db.execute(f'SELECT run_id, stream_id, events FROM "{schema}".audit_streams').fetchall() == [
                    ("1", "run:1", 1)
                ]
    finally:
        s.close()


def test_a_restart_on_a_new_store_object_carries_on_where_the_last_one_stopped(durable_store_url):
    first = EventStore(durable_store_url)
    for i in range(1, 11):
        agent_turn(first, "agent-1", "1", i)
    ProjectionRunner(first, [AuditProjection()], batch_size=4).run_once(max_batches=2)  # 8 of 30
    first.close()

    second = EventStore(durable_store_url)
    try:
        runner = ProjectionRunner(second, [AuditProjection()], batch_size=4)
        [status] = runner.status()
        assert (status.position, status.head, status.lag) == (8, 30, 22)
        assert runner.run_once() == {"audit": 22}
        assert indexed(runner) == (30, 30)
        got = runner.views.dump(AuditProjection.tables)
        runner.rebuild()
        assert runner.views.dump(AuditProjection.tables) == got
    finally:
        second.close()


def test_runners_racing_on_one_projection_apply_each_event_once(store):
    for i in range(1, 21):
        agent_turn(store, f"agent-{i % 3}", "1", i)
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(21, 41):
                agent_turn(store, f"agent-{i % 3}", "1", i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    def runner_loop() -> None:
        own = other_store(store)
        try:
            runner = ProjectionRunner(own, [AuditProjection()], batch_size=7)
            while not done.is_set():
                runner.run_once()
            runner.run_once()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            if own is not store:
                own.close()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=runner_loop) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    runner = ProjectionRunner(store, [AuditProjection()])
    runner.run_once()
    assert indexed(runner) == (120, 120) and store.max_position() == 120
    got = runner.views.dump(AuditProjection.tables)
    runner.rebuild()
    assert runner.views.dump(AuditProjection.tables) == got


def test_a_live_runner_sees_what_another_store_object_appends(store):
    agent_turn(store, "agent-1", "1", 1)
    runner = ProjectionRunner(store)
    runner.start(idle_interval=30.0)  # so only the store's follow can wake it in time
    writer = other_store(store)
    try:
        runner.wait_until(store.max_position(), timeout=30)
        for i in range(2, 5):
            agent_turn(writer, "agent-1", "1", i)
        runner.wait_until(writer.max_position(), timeout=30)
        assert indexed(runner) == (12, 12)
    finally:
        runner.stop()
        if writer is not store:
            writer.close()
    assert runner.error is None


# -- bulk loads of stored records, read with projections.log_reader ----------------------------------


class Crash(Exception):
    pass


class Batches(AuditProjection):
    """The audit view, noting the batches it is given; dies once in batch `die_in`."""

    def __init__(self, die_in: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.die_in = die_in

    def apply_batch(self, c, records):
        self.batches.append([r.position for r in records])
        if len(self.batches) == self.die_in:
            self.die_in = None
            super().apply_batch(c, records[:2])  # part of the batch written, then killed
            raise Crash("killed mid-batch")
        super().apply_batch(c, records)


def test_a_bulk_rebuild_gives_the_incremental_view_and_a_crash_loses_only_its_batch(store):
    for i in range(1, 9):
        agent_turn(store, f"agent-{i % 3}", "1", i)  # 24 events; requests and results cut across batches
    n = store.max_position()
    incremental = ProjectionRunner(store, [AuditProjection()], batch_size=1)
    incremental.run_once()
    expected = incremental.views.dump(AuditProjection.tables)

    watching = Batches()
    bulk = ProjectionRunner(store, [watching], batch_size=1, bulk_batch_size=5, bulk_threshold=0)
    [result] = bulk.rebuild("audit")
    assert (result.events, result.position) == (n, n)
    assert watching.batches == [list(range(i, min(i + 5, n + 1))) for i in range(1, n + 1, 5)]
    assert bulk.views.dump(AuditProjection.tables) == expected

    # Killed in the second batch: the first stays, the second rolls back whole; a new
    # runner on a new store object finishes the job.
    dying = ProjectionRunner(store, [Batches(die_in=2)], batch_size=1, bulk_batch_size=5, bulk_threshold=0)
    with pytest.raises(Crash):
        dying.rebuild("audit")
    assert dying.views.position("audit") == 5
    assert indexed(dying) == (5, 5)
    again = other_store(store)
    try:
        restarted = ProjectionRunner(again, [AuditProjection()], batch_size=4)
        assert restarted.run_once() == {"audit": n - 5}
        assert restarted.views.dump(AuditProjection.tables) == expected
    finally:
        if again is not store:
            again.close()


def test_the_log_reader_gives_what_the_recorder_gives(store_url):
    store = EventStore(store_url)
    try:
        store.append("run:1", [RunSubmitted(goal="g\x00ü", run_id="1")], 0)
        for i in range(1, 4):
            agent_turn(store, "agent-1", "1", i)
            agent_turn(store, "agent-2", "1", i)
        head = store.max_position()

        def rows(records):
            return [(r.position, r.stream_id, r.version, r.type_name, bytes(r.state)) for r in records]

        def recorder(start, stop, topics=()):
            return [(n.id, n.originator_id, n.originator_version, n.topic, bytes(n.state))
                    for n in store.recorder.select_notifications(start, 100, stop=stop, topics=topics)]

        expected = recorder(3, head - 1)
        assert rows(read_stored(store, 2, head - 1, 100)) == expected
        assert rows(read_stored(store, 2, head - 1, 3)) == expected[:3]
        wanted = ("StepDecided", "RunSubmitted")
        assert rows(read_stored(store, 0, head, 100, wanted)) == recorder(1, head, wanted)
        assert read_stored(store, head, head, 100) == []
        # By stream: only those streams' events, still up to the limit.
        agent_2 = [row for row in recorder(1, head) if row[1] == "agent-2"]
        assert rows(read_stored(store, 0, head, 100, (), {"agent-2"})) == agent_2
        assert rows(read_stored(store, 0, head, 4, (), {"agent-2"})) == agent_2[:4]
        # At chosen positions (one past the end is left out).
        found = read_positions(store, [head, 2, head + 1])
        assert sorted(found) == [2, head] and rows([found[2]]) == recorder(2, 2)
    finally:
        store.close()
