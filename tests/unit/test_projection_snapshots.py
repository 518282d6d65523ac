"""The snapshots view: it indexes the snapshots actor shells take (running no actor code)
and writes them as JSON files, maintained by the projection runner, with a chain of
format migrations; `chorus snapshot`; and the runner's speed paths the view relies on
(stored records, bulk rebuild with indexes dropped).

Logs are written as the runtime writes them: through ActorShells with real behaviours
(RunLifecycle, ReactAgent) and a small `snapshot_every`, so the shells save snapshots;
each actor snapshots again when its run finishes, as the runtime's actors do.

Memory store by default; the tests that take `store_url` run on SQLite and PostgreSQL too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from actors.agent.react import AgentState, ReactAgent, StartAgent
from actors.runtime.effects import LlmReturned, StopAgent, ToolFinished
from actors.runtime.run import Complete, Fail, RunLifecycle, RunState, Start, Submit
from actors.runtime.shell import ActorShell, rebuild
from events import ErrorInfo, Event
from actors.agent.events import AgentStarted, AnswerGiven, StepDecided, ToolSpec
from events.base import ENVELOPE_FIELDS
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.runs import RunCompleted, RunStarted, RunSubmitted
from events.store import EventStore
from projections import (
    AuditProjection,
    AuditTrail,
    ProjectionRunner,
    ViewCursor,
    registered_projections,
)
from projections import snapshots as snap
from projections.projection import StoredRecord
from projections.snapshot_files import (
    SNAPSHOT_SCHEMA,
    ActorSnapshot,
    SnapshotFormatError,
    migrate,
    migration,
    migration_chain,
    read_snapshot,
    snapshot_directory,
    stream_folder,
    write_snapshot,
)
from projections.snapshots import SnapshotProjection

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
TOOLS = [ToolSpec(name="search", signature="search(query: str)", description="grep")]
BEHAVIOURS = {"run": RunLifecycle(), "react": ReactAgent()}


# -- building logs -------------------------------------------------------------------------


class Log:
    """Runs as the runtime writes them: a run:ID and an agent:ID stream per run, each
    through its ActorShell (snapshots every `every` versions, and when the run ends),
    plus noise streams that no shell writes."""

    def __init__(self, store: EventStore, prefix: str = "r", every: int = 5) -> None:
        self.store, self.prefix, self.every = store, prefix, every
        self.shells: dict[str, ActorShell] = {}
        self.noise: dict[str, int] = {}
        self.tick = 0

    def clock(self, version: int) -> datetime:
        self.tick += 1
        return T0 + timedelta(seconds=self.tick, microseconds=self.tick * 7)

    def shell(self, stream: str, behaviour, run_id: str) -> ActorShell:
        if stream not in self.shells:
            self.shells[stream] = ActorShell(
                behaviour, stream, self.store, run_id=run_id, snapshot_every=self.every, clock=self.clock
            ).load()
        return self.shells[stream]

    def act(self, run: int, kind: str, text: str = "x") -> None:
        rid = f"{self.prefix}{run}"
        if kind == "noise":
            stream = f"misc-{rid}"
            v = self.noise.get(stream, 0)
            event = LlmCompleted(request_hash="h", call_index=1, content=text, run_id=rid)
            self.store.append(stream, [event.stamp(timestamp=self.clock(v + 1))], v)
            self.noise[stream] = v + 1
            return
        lifecycle = self.shell(f"run:{rid}", RunLifecycle(), rid)
        lifecycle.handle(Submit(key="submit", goal=f"goal {text}"))
        agent = self.shell(f"agent:{rid}", ReactAgent(), rid)
        if agent.version == 0:
            agent.handle(StartAgent(key="start", goal=f"goal {text}", root=".", tools=TOOLS, model="m"))
            lifecycle.handle(Start(key="start", lead_stream=agent.stream_id))
        if agent.state.finished:
            return
        n, i = agent.version, agent.state.llm_calls + 1
        request = LlmRequested(model="m", messages=[{"role": "user", "content": text}], request_hash=f"h{i}",
                               call_index=i)

        def reply(parsed: dict | None, content: str = "") -> None:
            completed = LlmCompleted(request_hash=f"h{i}", call_index=i, content=content or json.dumps(parsed),
                                     parsed=parsed, prompt_tokens=10 + i, completion_tokens=i)
            agent.handle(LlmReturned(key=f"llm{n}", events=[request, completed]))

        if kind == "step":
            reply({"thought": f"think {text}", "action": "search", "args": {"query": text}})
            pending = agent.state.pending
            if pending is not None:
                c = agent.state.tool_calls + 1
                agent.handle(ToolFinished(key=f"tool{n}", events=[
                    ToolCalled(tool=pending.action, args=pending.args, call_index=c),
                    ToolReturned(tool=pending.action, call_index=c, ok=True, output=f"found {text}"),
                ]))
        elif kind == "reject":
            reply(None, f"no json here {text}")
        elif kind == "fail_llm":
            failed = LlmFailed(request_hash=f"h{i}", call_index=i,
                               error=ErrorInfo(type="llm_error", reason="timeout", message=text))
            agent.handle(LlmReturned(key=f"llm{n}", events=[request, failed]))
        elif kind == "answer":
            reply({"thought": text, "action": "answer", "args": {"answer": f"a{text}"}})
        elif kind == "fail":
            agent.handle(StopAgent(key=f"stop{n}", error=ErrorInfo(type="agent_error", reason="stuck", message=text)))
        if agent.state.finished:  # the run ends: its actors snapshot their final states
            agent.snapshot()
            if agent.state.status == "completed":
                lifecycle.handle(Complete(key="finish", result=agent.state.answer or ""))
            else:
                lifecycle.handle(Fail(key="finish", error=agent.state.error))
            lifecycle.snapshot()


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def files(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative path -> text); temporary files would show too."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def view(runner: ProjectionRunner) -> dict:
    return runner.views.dump(SnapshotProjection.tables)


def rows(runner: ProjectionRunner, table: str) -> dict:
    key = (lambda r: r["stream_id"]) if table == "actor_heads" else (lambda r: (r["stream_id"], r["version"]))
    return {key(r): r for r in runner.views.query(f"SELECT * FROM {table}")}


def check_files(store: EventStore, folder: Path, streams: Sequence[str]) -> None:
    """The files of `streams` are their shells' snapshots, one per snapshot plus the
    newest as latest.json, and each holds the fold of the stream up to its version."""
    where = {(r.event.stream_id, r.event.version): r for r in store.read_all()}
    for stream in streams:
        taken = store.list_snapshots(stream)
        assert taken, stream
        names = {p.name for p in (folder / stream_folder(stream)).iterdir()}
        assert names == {f"{s.version}.json" for s in taken} | {"latest.json"}
        for s in taken:
            doc = read_snapshot(folder / stream_folder(stream) / f"{s.version}.json")
            behaviour = BEHAVIOURS[doc.actor]
            events = store.read_stream(stream, 1, s.version)
            assert doc.typed_state(behaviour) == rebuild(behaviour, events)
            assert doc.state == json.loads(rebuild(behaviour, events).model_dump_json())
            assert (doc.stream, doc.version, doc.state_type) == (stream, s.version, behaviour.state_type.__name__)
            assert doc.timestamp == events[-1].timestamp.isoformat(timespec="microseconds")
            assert doc.position == where[(stream, s.version)].position
        latest = read_snapshot(folder / stream_folder(stream) / "latest.json")
        assert latest == read_snapshot(folder / stream_folder(stream) / f"{taken[-1].version}.json")


# -- the shell takes the snapshots ------------------------------------------------------------


def test_shell_snapshots_say_what_they_are(store):
    log = Log(store, every=5)
    log.act(0, "step", "alpha")
    agent = log.shells["agent:r0"]
    [taken] = store.list_snapshots("agent:r0")  # versions 1..6: crossed 5 at 6
    assert (taken.kind, taken.version) == ("ShellSnapshot", 6)
    body = taken.data
    event = store.read_stream("agent:r0", 6, 6)[0]
    position = next(r.position for r in store.read_all() if r.event.event_id == event.event_id)
    assert (body["actor"], body["state_type"], body["schema_version"]) == ("react", "AgentState", 1)
    assert body["timestamp"] == event.timestamp.isoformat(timespec="microseconds")
    assert body["position"] == position == agent.position
    assert AgentState.model_validate(body["state"]) == rebuild(ReactAgent(), store.read_stream("agent:r0"))


def test_snapshot_is_a_no_op_before_the_first_event_and_saved_once_per_version(store):
    shell = ActorShell(RunLifecycle(), "run:x", store).load()
    shell.snapshot()
    assert store.list_snapshots("run:x") == []
    shell.handle(Submit(key="s", goal="g"))
    shell.snapshot()
    shell.snapshot()
    assert [s.version for s in store.list_snapshots("run:x")] == [1]
    # Loaded with a tail, the shell knows the last event's time but not its position.
    shell.handle(Start(key="t", lead_stream="agent:x"))
    again = ActorShell(RunLifecycle(), "run:x", store).load()
    assert again.replayed_on_load == 1 and again.position is None
    assert again.timestamp == store.read_stream("run:x")[-1].timestamp
    again.snapshot()
    assert store.load_snapshot("run:x").data["position"] is None
    # Loaded from a snapshot at its head, it knows the position too.
    third = ActorShell(RunLifecycle(), "run:x", store).load()
    assert third.replayed_on_load == 0 and third.version == 2


def test_snapshots_saved_before_they_said_what_they_are_still_rehydrate_and_are_indexed(store, tmp_path):
    class ShellSnapshot(BaseModel):  # the shell's snapshot before actor, state_type, timestamp, position
        schema_version: int = 1
        state: dict
        keys: list[str]
        first: list[int]
        last: list[int]

    shell = ActorShell(RunLifecycle(), "run:old", store, snapshot_every=0).load()
    shell.handle(Submit(key="s", goal="g"))
    shell.handle(Start(key="t", lead_stream="agent:old"))
    store.save_snapshot("run:old", 2, ShellSnapshot(state=shell.state.model_dump(mode="python"),
                                                    keys=["s", "t"], first=[1, 2], last=[1, 2]))
    shell.handle(Complete(key="c", result="done"))
    loaded = ActorShell(RunLifecycle(), "run:old", store).load()
    assert loaded.replayed_on_load == 1 and loaded.state == shell.state
    assert loaded.applied("t") is not None  # the keys came from the old snapshot

    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    doc = read_snapshot(tmp_path / "run:old" / "latest.json")
    assert (doc.version, doc.actor, doc.state_type, doc.position, doc.timestamp) == (2, None, None, None, None)
    assert doc.typed_state(RunState) == rebuild(RunLifecycle(), store.read_stream("run:old", 1, 2))


# -- the view ------------------------------------------------------------------------------


def test_the_view_indexes_the_shells_snapshots_and_writes_them_as_files(store, tmp_path):
    log = Log(store, every=5)
    for text in ("alpha", "beta", "gamma"):
        log.act(0, "step", text)
    log.act(0, "answer", "done")
    log.act(1, "noise")
    log.act(2, "step", "beta")
    folder = tmp_path / "snaps"
    runner = ProjectionRunner(store, [SnapshotProjection(folder)], batch_size=4)
    runner.run_once()

    agent_events = store.read_stream("agent:r0")
    assert len(agent_events) == 19
    assert [s.version for s in store.list_snapshots("agent:r0")] == [6, 11, 16, 19]  # 19: the run ended
    assert sorted(files(folder)) == [
        "agent:r0/11.json", "agent:r0/16.json", "agent:r0/19.json", "agent:r0/6.json", "agent:r0/latest.json",
        "agent:r2/6.json", "agent:r2/latest.json",
        "run:r0/3.json", "run:r0/latest.json",
    ]  # misc-r1 has no shell; run:r2 (2 events, running) has no snapshot yet
    check_files(store, folder, ["agent:r0", "agent:r2", "run:r0"])
    latest = read_snapshot(folder / "agent:r0" / "latest.json")
    assert (latest.schema_version, latest.version, latest.actor) == (SNAPSHOT_SCHEMA, 19, "react")
    assert latest.typed_state(ReactAgent()).status == "completed"
    run = read_snapshot(folder / "run:r0" / "latest.json")
    assert run.actor == "run" and run.typed_state(RunState).status == "completed"

    # The rows hold what the files hold, copied from the shells' snapshots.
    snapshots = rows(runner, "actor_snapshots")
    for (stream, version), row in snapshots.items():
        taken = store.list_snapshots(stream, version - 1, version)[0].data
        assert (row["actor"], row["state_type"], row["position"], row["timestamp"]) == (
            taken["actor"], taken["state_type"], taken["position"], taken["timestamp"])
        assert snap.snapshot_of(row) == read_snapshot(folder / stream_folder(stream) / f"{version}.json")
    # Every stream has a head; streams without snapshots have no snapshot version.
    heads = rows(runner, "actor_heads")
    assert set(heads) == {"agent:r0", "run:r0", "misc-r1", "agent:r2", "run:r2"}
    assert (heads["agent:r0"]["version"], heads["agent:r0"]["snapshot_version"], heads["agent:r0"]["actor"]) == (
        19, 19, "react")
    assert heads["agent:r0"]["timestamp"] == agent_events[-1].timestamp.isoformat(timespec="microseconds")
    assert (heads["run:r2"]["version"], heads["run:r2"]["snapshot_version"], heads["run:r2"]["actor"]) == (
        2, None, None)
    assert (heads["misc-r1"]["version"], heads["misc-r1"]["snapshot_version"]) == (1, None)
    assert heads["agent:r2"]["snapshot_version"] == 6 and heads["agent:r2"]["version"] == 6
    # Nothing is left to do.
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []
    assert runner.views.query("SELECT * FROM snapshot_pending") == []


def test_streams_no_shell_snapshots_get_heads_but_no_files(store, tmp_path):
    store.append("run:z", [RunSubmitted(goal="g", kind="martian", run_id="z")], 0)
    store.append("agent:z", [AgentStarted(goal="g", root=".", tools=[], max_iterations=3, model="m", run_id="z")], 0)
    Log(store).act(0, "noise")
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    assert files(tmp_path) == {}
    heads = rows(runner, "actor_heads")
    assert {s: (h["version"], h["actor"], h["snapshot_version"]) for s, h in heads.items()} == {
        "run:z": (1, None, None), "agent:z": (1, None, None), "misc-r0": (1, None, None)}
    assert rows(runner, "actor_snapshots") == {}


def test_the_view_runs_no_actor_code(store, tmp_path, monkeypatch):
    log = Log(store, every=3)
    log.act(0, "step", "a")
    log.act(0, "answer", "b")

    def no(*args, **kwargs):
        raise AssertionError("the view folded a stream")

    for behaviour in (RunLifecycle, ReactAgent):
        monkeypatch.setattr(behaviour, "evolve", no)
        monkeypatch.setattr(behaviour, "decide", no)
    ProjectionRunner(store, [SnapshotProjection(tmp_path)]).run_once()
    assert "agent:r0/latest.json" in files(tmp_path)


def test_a_snapshot_saved_after_the_view_passed_its_stream_is_indexed_later(store, tmp_path):
    log = Log(store, every=100)
    log.act(0, "step", "a")
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    assert files(tmp_path) == {}  # no shell snapshot yet
    # The actor finishes serving and snapshots after the view went past its last event.
    log.shells["agent:r0"].snapshot()
    assert runner.run_once() == {"snapshots": 0}
    assert files(tmp_path) == {}  # nothing committed, so nothing re-checked yet
    # The next runner to open the view finds it ...
    ProjectionRunner(store, [SnapshotProjection(tmp_path)]).run_once()
    assert sorted(files(tmp_path)) == ["agent:r0/6.json", "agent:r0/latest.json"]
    # ... and so does a running one at its next commit (here: another stream's event).
    log.shells["run:r0"].snapshot()
    log.act(1, "noise")
    runner.run_once()
    assert "run:r0/latest.json" in files(tmp_path)
    check_files(store, tmp_path, ["agent:r0", "run:r0"])
    # A later event of the stream finds it too (from the newest indexed snapshot on).
    log.act(0, "step", "b")
    log.shells["agent:r0"].snapshot()
    log.act(0, "reject", "c")
    runner.run_once()
    assert [s.version for s in store.list_snapshots("agent:r0")] == [6, 11]
    check_files(store, tmp_path, ["agent:r0", "run:r0"])
    # And all is as a rebuild makes it.
    got, written = view(runner), files(tmp_path)
    rebuilt = ProjectionRunner(store, [SnapshotProjection(tmp_path / "rebuilt")])
    rebuilt.rebuild("snapshots")
    assert view(rebuilt) == got
    assert files(tmp_path / "rebuilt") == written


def test_re_checks_are_bounded(store, tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(snap.time, "monotonic", lambda: clock[0])
    log = Log(store, every=100)
    log.act(0, "step", "a")
    p = SnapshotProjection(tmp_path)
    runner = ProjectionRunner(store, [p])
    runner.run_once()
    assert set(p._behind) == {"agent:r0", "run:r0"}  # behind their heads
    looked: list[str] = []
    real = store.list_snapshots

    def spy(stream, *args):
        looked.append(stream)
        return real(stream, *args)

    monkeypatch.setattr(store, "list_snapshots", spy)
    for _, wait in zip(range(5), (0.0, 0.5, 1.0, 5.0, 10.0)):
        clock[0] += wait
        log.act(9, "noise")  # a commit
        runner.run_once()
    # The stopped streams are re-checked 3 times (0, 1 and 10 s after), then no more.
    assert looked.count("agent:r0") == looked.count("run:r0") == 3
    assert looked.count("misc-r9") == 5  # moving: its batches look, no re-check needed
    assert set(p._behind) == {"misc-r9"}


KINDS = ("step", "step", "reject", "fail_llm", "answer", "fail", "noise")
plans = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(KINDS), st.text(max_size=8)), min_size=1, max_size=25)


class Crash(Exception):
    pass


class CrashingSnapshots(SnapshotProjection):
    """Dies after `after` more events: inside a batch, with it half applied, or (`after_commit`)
    just after the commit of the batch that reaches it, before its snapshots are indexed."""

    def __init__(self, directory: Path, after: int, after_commit: bool = False) -> None:
        super().__init__(directory, durable=False)
        self.left, self.after_commit = after, after_commit

    def apply_batch(self, c: ViewCursor, records: Sequence[StoredRecord]) -> None:
        if self.left < len(records) and not self.after_commit:
            super().apply_batch(c, records[: self.left])
            raise Crash("killed")
        super().apply_batch(c, records)
        self.left -= len(records)

    def committed(self, views) -> None:
        if self.left < 0:
            raise Crash("killed after the commit")
        super().committed(views)


_examples = iter(range(10**6))


def test_incremental_crashed_and_rebuilt_views_and_files_are_the_same(store_url, tmp_path):
    """On every backend, with random runs cut into random batches: files and rows are the
    shells' snapshots, which are the fold of the stream at their versions."""
    store = EventStore(store_url)
    try:

        @settings(max_examples=20 if store_url == "memory://" else 5, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
        @given(plan=plans, cuts=st.sets(st.integers(0, 24)), batch=st.integers(1, 6), crash=st.integers(0, 60),
               after_commit=st.booleans())
        def check(plan, cuts, batch, crash, after_commit):
            n = next(_examples)
            folder = tmp_path / f"ex{n}"
            live = ProjectionRunner(store, [SnapshotProjection(folder / "live", durable=False)], batch_size=batch)
            log = Log(store, prefix=f"e{n}-", every=3)
            for i, (run, kind, text) in enumerate(plan):
                log.act(run, kind, text)
                if i in cuts:
                    live.run_once()
            live.run_once()
            # The store holds earlier examples too (the view is the store's): this
            # example's streams are the ones named e{n}-.
            incremental, written = view(live), files(folder / "live")
            assert all(f":e{n}-" in name for name in written)
            snapshotted = [s for s in log.shells if store.list_snapshots(s)]
            check_files(store, folder / "live", snapshotted)
            assert {name.split("/")[0] for name in written} == {stream_folder(s) for s in snapshotted}

            def mine(folder: Path) -> dict[str, str]:
                return {k: v for k, v in files(folder).items() if f":e{n}-" in k}

            # Killed mid-batch or between a commit and its snapshots, then restarted by
            # a new runner: the same view and files.
            try:
                ProjectionRunner(store, [CrashingSnapshots(folder / "crashed", after=crash, after_commit=after_commit)],
                                 batch_size=batch + 1).rebuild("snapshots")
            except Crash:
                pass
            again = ProjectionRunner(store, [SnapshotProjection(folder / "crashed", durable=False)],
                                     batch_size=batch + 2)
            again.run_once()
            assert view(again) == incremental
            assert mine(folder / "crashed") == written

            # And a rebuild from 0 in one bulk load.
            bulk = ProjectionRunner(store, [SnapshotProjection(folder / "rebuilt", durable=False)],
                                    bulk_threshold=0)
            bulk.rebuild("snapshots")
            assert view(bulk) == incremental
            assert mine(folder / "rebuilt") == written

        check()
    finally:
        store.close()


# -- exactly-once files ----------------------------------------------------------------------


def test_runners_racing_on_the_view_write_each_file_right(durable_store_url, tmp_path):
    """Two runners (as two processes would, each with its store) follow a log being
    written, flushing files concurrently: the files end as a rebuild makes them."""
    import threading

    store = EventStore(durable_store_url)
    done = threading.Event()
    errors: list[BaseException] = []
    folder = tmp_path / "raced"

    def writer() -> None:
        try:
            log = Log(store, every=4)
            for i in range(24):
                log.act(i % 4, ("step", "reject", "step", "answer")[i // 6 % 4] if i < 20 else "step", str(i))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    def follow() -> None:
        own = EventStore(durable_store_url)
        try:
            runner = ProjectionRunner(own, [SnapshotProjection(folder, durable=False)], batch_size=5)
            while not done.is_set():
                runner.run_once()
            runner.run_once()
            # A snapshot saved after its stream's last event was passed: a runner that
            # opens the view re-checks (a running one, at its next commit).
            ProjectionRunner(own, [SnapshotProjection(folder, durable=False)]).run_once()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            own.close()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=follow) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        raced = files(folder)
        runner = ProjectionRunner(store, [SnapshotProjection(tmp_path / "rebuilt", durable=False)])
        runner.run_once()
        got = view(runner)
        runner.rebuild("snapshots")
        assert view(runner) == got
        assert raced == files(tmp_path / "rebuilt") and "agent:r0/latest.json" in raced
    finally:
        store.close()


def test_a_crash_after_the_commit_leaves_the_files_queued_and_the_next_runner_writes_them(store, tmp_path, monkeypatch):
    log = Log(store, every=5)
    log.act(0, "step")
    real = snap.write_snapshot

    def broken(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(snap, "write_snapshot", broken)
    with pytest.raises(OSError):
        ProjectionRunner(store, [SnapshotProjection(tmp_path)]).run_once()
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    assert runner.views.position("snapshots") == store.max_position()  # the view committed
    assert files(tmp_path) == {}
    queued = runner.views.query("SELECT stream_id, file, version FROM snapshot_outbox ORDER BY stream_id, file")
    assert queued == [
        {"stream_id": "agent:r0", "file": "6", "version": 6},
        {"stream_id": "agent:r0", "file": "latest", "version": 6},
    ]
    monkeypatch.setattr(snap, "write_snapshot", real)
    assert runner.run_once() == {"snapshots": 0}  # opening the view flushes the queue
    assert sorted(files(tmp_path)) == ["agent:r0/6.json", "agent:r0/latest.json"]
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_a_crash_between_the_commit_and_the_snapshots_leaves_them_pending(store, tmp_path):
    log = Log(store, every=5)
    log.act(0, "step")
    with pytest.raises(Crash):
        ProjectionRunner(store, [CrashingSnapshots(tmp_path, after=0, after_commit=True)]).run_once()
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    pending = [r["stream_id"] for r in runner.views.query("SELECT stream_id FROM snapshot_pending ORDER BY stream_id")]
    assert pending == ["agent:r0", "run:r0"] and rows(runner, "actor_snapshots") == {}
    runner.run_once()  # opening the view indexes them
    assert runner.views.query("SELECT * FROM snapshot_pending") == []
    assert sorted(files(tmp_path)) == ["agent:r0/6.json", "agent:r0/latest.json"]


def test_a_crash_inside_the_batch_writes_no_files(store, tmp_path):
    Log(store, every=1).act(0, "step")
    with pytest.raises(Crash):
        ProjectionRunner(store, [CrashingSnapshots(tmp_path, after=3)]).run_once()
    assert files(tmp_path) == {}


def test_a_queue_entry_is_removed_only_for_the_version_written(store, tmp_path):
    log = Log(store, every=3)
    log.act(0, "step")
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    p = runner.get("snapshots")
    assert rows(runner, "actor_heads")["agent:r0"]["snapshot_version"] == 6
    # A writer that read the queue at version 3 while the newest snapshot moved to 6
    # rewrites latest.json from the newest (6), and leaves the newer entry queued.
    with runner.views.transaction() as c:
        c.execute("INSERT INTO snapshot_outbox (stream_id, file, version) VALUES ('agent:r0', 'latest', 6)")
        p_docs = list(p._documents(c, [{"stream_id": "agent:r0", "file": "latest", "version": 3}]))
        c.execute("DELETE FROM snapshot_outbox WHERE stream_id = ? AND file = ? AND version = ?",
                  ("agent:r0", "latest", 3))
    [(doc, name)] = p_docs
    assert (doc.version, name) == (6, "latest.json")
    assert runner.views.query("SELECT version FROM snapshot_outbox") == [{"version": 6}]
    p.committed(runner.views)
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_memory_stores_keep_rows_but_write_no_files_unless_told_where(store, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    Log(store, every=5).act(0, "step")
    runner = ProjectionRunner(store, [SnapshotProjection()])
    runner.run_once()
    assert len(runner.views.query("SELECT * FROM actor_heads")) == 2
    assert len(runner.views.query("SELECT * FROM actor_snapshots")) == 1
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_where_snapshots_go(monkeypatch, tmp_path):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    monkeypatch.delenv("CHORUS_DATA_DIR", raising=False)
    assert snapshot_directory(f"sqlite:///{tmp_path}/data/chorus.db") == tmp_path / "data" / "snapshots"
    assert snapshot_directory("memory://") is None
    assert snapshot_directory("postgresql://u@h:5432/db") is None  # say where: no home-folder guess
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    assert snapshot_directory("postgresql://u@h:5432/db") == tmp_path / "snapshots"
    assert snapshot_directory("postgresql://u@h:5432/db?schema=prod") == tmp_path / "snapshots-prod"
    monkeypatch.setenv("CHORUS_SNAPSHOT_DIR", str(tmp_path / "x"))
    assert snapshot_directory("memory://") == tmp_path / "x"


def test_sqlite_snapshots_go_beside_the_database(tmp_path, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    with EventStore(f"sqlite:///{tmp_path}/chorus.db") as store:
        Log(store).act(0, "answer", "42")
        ProjectionRunner(store, [SnapshotProjection()]).run_once()
    assert sorted(files(tmp_path / "snapshots")) == [
        "agent:r0/4.json", "agent:r0/latest.json", "run:r0/3.json", "run:r0/latest.json",
    ]


def test_stream_folders_are_safe_file_names():
    assert stream_folder("agent:abc123") == "agent:abc123"
    assert stream_folder("a/b c") == "a%2Fb%20c"
    assert stream_folder("..") == "%2E."
    assert stream_folder(".hidden") == "%2Ehidden"


def test_files_are_written_atomically(tmp_path, monkeypatch):
    path = tmp_path / "latest.json"
    first = ActorSnapshot(stream="run:x", version=1, actor="run", state={"status": "submitted"})
    write_snapshot(path, first)
    assert read_snapshot(path) == first and oct(path.stat().st_mode & 0o777) == "0o644"

    def no_rename(*args):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError):
        write_snapshot(path, first.model_copy(update={"version": 2}))
    assert read_snapshot(path) == first  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["latest.json"]  # no temporary file left
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_snapshot(tmp_path / "missing" / "x.json", first)


# -- migrations ------------------------------------------------------------------------------


def test_a_stored_0_1_0_snapshot_loads_through_the_chain():
    old = json.loads((FIXTURES / "agent_0.1.0.json").read_text())
    assert old["schema_version"] == "0.1.0" and "stream_id" in old
    loaded = read_snapshot(FIXTURES / "agent_0.1.0.json")
    assert loaded.schema_version == SNAPSHOT_SCHEMA == "0.3.0"
    assert (loaded.stream, loaded.version, loaded.actor, loaded.state_type) == (
        "agent:r-2025-03-01", 6, "react", "AgentState",
    )
    assert (loaded.position, loaded.timestamp, loaded.state_schema_version) == (None, None, 1)
    state = loaded.typed_state(ReactAgent())
    assert isinstance(state, AgentState)
    assert (state.goal, state.iteration, state.tokens, state.tool_calls) == (
        "Which file defines the Registry class?", 1, 450, 1,
    )
    assert state.history[0].observation.startswith("actors/runtime/registry.py")
    # Fields added to the state since are filled with their defaults; the file is unchanged.
    assert state.same_thought_in_a_row == 0
    assert json.loads((FIXTURES / "agent_0.1.0.json").read_text()) == old


def test_a_stored_0_2_0_snapshot_takes_one_step():
    loaded = read_snapshot(FIXTURES / "run_0.2.0.json")
    assert (loaded.stream, loaded.actor, loaded.state_type) == ("run:r-2025-03-01", "run", "RunState")
    assert loaded.typed_state(RunState) == RunState(
        status="running", goal="Which file defines the Registry class?", kind="react",
        lead_stream="agent:r-2025-03-01",
    )


def test_the_chain_and_its_errors():
    assert migration_chain() == ["0.1.0", "0.2.0", "0.3.0"]
    current = ActorSnapshot(stream="s", version=1, actor="run", state={}).model_dump()
    assert migrate(current) == current
    with pytest.raises(SnapshotFormatError, match="newer than this code's 0.3.0"):
        migrate({**current, "schema_version": "0.4.0"})
    with pytest.raises(SnapshotFormatError, match=r"no migration from snapshot schema 0\.0\.9 \(known: 0\.1\.0, 0\.2\.0, 0\.3\.0\)"):
        migrate({**current, "schema_version": "0.0.9"})
    with pytest.raises(SnapshotFormatError, match="not a Chorus snapshot"):
        migrate({"stream": "s"})
    with pytest.raises(SnapshotFormatError, match="not a version"):
        migrate({**current, "schema_version": "latest"})
    with pytest.raises(SnapshotFormatError, match="invalid snapshot"):
        ActorSnapshot.from_document({**current, "version": "seven"})
    with pytest.raises(ValueError, match="exists already"):
        migration("0.1.0", "0.2.0")(lambda d: d)
    with pytest.raises(ValueError, match="goes forward"):
        migration("0.3.0", "0.2.0")
    with pytest.raises(SnapshotFormatError, match="state stored at schema v2"):
        ActorSnapshot(stream="s", version=1, actor="run", state_schema_version=2, state={}).typed_state(RunState)


def test_a_file_that_is_not_json_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SnapshotFormatError, match="is not JSON"):
        read_snapshot(bad)


# -- on demand: the runtime's snapshot_at agrees with the view ------------------------------------


def test_snapshot_at_a_snapshotted_version_is_the_views_file(store, tmp_path):
    from actors.runtime.replay import snapshot_at

    log = Log(store, every=4)
    for kind in ("step", "reject", "step", "fail_llm"):
        log.act(0, kind, kind)
    ProjectionRunner(store, [SnapshotProjection(tmp_path)]).run_once()
    stream = "agent:r0"
    taken = {s.version for s in store.list_snapshots(stream)}
    for v in range(1, store.stream_version(stream) + 1):
        on_demand = snapshot_at(store, stream, v)
        assert on_demand.typed_state(ReactAgent()) == rebuild(ReactAgent(), store.read_stream(stream, 1, v))
        if v in taken:
            assert on_demand == read_snapshot(tmp_path / stream / f"{v}.json")


# -- chorus snapshot -------------------------------------------------------------------------


def chorus(argv: list[str], capsys) -> tuple[int, str, str]:
    from actors.cli.views import add_parsers

    parser = argparse.ArgumentParser(prog="chorus")
    add_parsers(parser.add_subparsers(metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or 0)
    except (ValueError, LookupError, FileNotFoundError) as e:
        print(f"chorus: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


def test_the_snapshot_command(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    url = f"sqlite:///{tmp_path}/chorus.db"
    with EventStore(url) as store:
        log = Log(store)
        log.act(0, "step", "a")
        log.act(0, "answer", "b")
        latest = store.stream_version("agent:r0")
        expected = {v: rebuild(ReactAgent(), store.read_stream("agent:r0", 1, v)) for v in (3, latest)}
        events = store.max_position()

    code, out, err = chorus(["snapshot", "agent:r0", "--store", url], capsys)
    assert (code, err) == (0, "")
    doc = ActorSnapshot.from_document(json.loads(out))
    assert doc.version == latest and doc.typed_state(ReactAgent()) == expected[latest]

    code, out, _ = chorus(["snapshot", "agent:r0", "--at", "3", "--store", url], capsys)
    assert ActorSnapshot.from_document(json.loads(out)).typed_state(ReactAgent()) == expected[3]

    target = tmp_path / "out" / "agent-3.json"
    code, _, err = chorus(["snapshot", "agent:r0", "--at", "3", "--out", str(target), "--store", url], capsys)
    assert (code, err) == (2, f"chorus: error: cannot write {target}: folder {target.parent} does not exist\n")
    target.parent.mkdir()
    code, out, _ = chorus(["snapshot", "agent:r0", "--at", "3", "--out", str(target), "--store", url], capsys)
    assert code == 0 and out == f"wrote agent:r0 at version 3 to {target}\n"
    assert read_snapshot(target).typed_state(ReactAgent()) == expected[3]

    code, out, err = chorus(["snapshot", "agent:nope", "--store", url], capsys)
    assert (code, out, err) == (2, "", "chorus: error: no stream with id 'agent:nope'\n")
    code, _, err = chorus(["snapshot", "agent:r0", "--at", "0", "--store", url], capsys)
    assert err == f"chorus: error: stream 'agent:r0' has versions 1..{latest}; --at 0 is outside\n"

    # The command writes nothing to the store: no view was built by it.
    code, out, _ = chorus(["projections", "status", "--store", url], capsys)
    line = next(line for line in out.splitlines() if line.startswith("snapshots "))
    assert "not built yet" in line
    code, out, _ = chorus(["projections", "rebuild", "snapshots", "--store", url], capsys)
    assert out.startswith(f"rebuilt snapshots: {events} events up to position {events}")
    assert read_snapshot(tmp_path / "snapshots" / "agent:r0" / "latest.json").typed_state(ReactAgent()) == expected[latest]


def test_the_snapshots_view_is_registered():
    assert any(isinstance(p, SnapshotProjection) for p in registered_projections())


# -- the runner's speed paths --------------------------------------------------------------------


def test_stored_records_decode_on_demand_to_what_the_store_reads(store):
    log = Log(store)
    log.act(0, "step", "ü\x00")
    runner = ProjectionRunner(store, [SnapshotProjection()])
    stored = runner._read(runner.get("snapshots"), 0, store.max_position())
    typed = list(store.read_all())
    assert [type(r) for r in stored] == [StoredRecord] * len(typed)
    assert [(r.position, r.stream_id, r.version, r.type_name) for r in stored] == [
        (t.position, t.event.stream_id, t.event.version, t.event.type_name) for t in typed
    ]
    assert [r.event for r in stored] == [t.event for t in typed]
    assert stored[0].unpacked()[0] == type(typed[0].event).schema_version and "position 1" in repr(stored[0])


def odd_events() -> list[Event]:
    """Every event type the audit view sees, with values that test the JSON path."""
    error = ErrorInfo(type="e", reason="r", message="m\x00", details={"at": T0, "n": (1, 2)})
    return [
        RunSubmitted(goal="ünïcode \x00 \u2028 \"quoted\"", params={"nan": float("nan"), "inf": float("inf"),
                                                                     "big": 2**70, "t": (1, "a")}),
        AgentStarted(goal="g", root="/", tools=TOOLS, max_iterations=3, model="m", params={"temperature": 0.1}),
        LlmRequested(model="m", messages=[{"role": "user", "content": "x\x00y"}], params={"seed": 7, "temperature": 1},
                     response_schema={"type": "object"}, request_hash="h", call_index=1),
        LlmCompleted(request_hash="h", call_index=1, content="c", parsed={"b": 1.5e-7, "a": [None, True]},
                     prompt_tokens=3, completion_tokens=4, latency_s=1e16, cost_usd=None),
        LlmFailed(request_hash="h2", call_index=2, error=error),
        StepDecided(iteration=1, thought="t", action="a", args={"when": T0, "x": b"bytes"}),
        ToolCalled(tool="t", args={}, call_index=1),
        ToolReturned(tool="t", call_index=1, ok=False, output="", error=error),
        AnswerGiven(iteration=2, thought="", answer=""),
        RunCompleted(result="r"),
    ]


def test_audit_rows_from_stored_records_are_the_rows_from_typed_events(store):
    envelope = set(ENVELOPE_FIELDS)
    events = odd_events()
    for i, e in enumerate(events):
        store.append(f"s{i % 3}", [e.stamp(run_id="run-ü", causation_id=None if i % 2 else "c", command_id="k")],
                     store.stream_version(f"s{i % 3}"))
    # A naive and a non-UTC timestamp, and one without microseconds.
    for j, t in enumerate((datetime(2026, 1, 1), T0.astimezone(timezone(timedelta(hours=5))) + timedelta(microseconds=5),
                           T0.replace(microsecond=0))):
        store.append("t", [RunStarted(lead_stream="x", timestamp=t)], j)
    typed = list(store.read_all())
    # The trail shows each event's payload as pydantic's own JSON.
    trail = AuditTrail.open(store)
    for e, r in zip(trail.events(), typed, strict=True):
        assert e.payload == json.loads(r.event.model_dump_json(exclude=envelope))
    # And the whole view, both ways.
    fast = ProjectionRunner(store, [AuditProjection()])
    fast.run_once()
    # Times in any zone or none are spanned as UTC text.
    [span] = fast.views.query("SELECT first_at, last_at, events FROM audit_streams WHERE stream_id = 't'")
    assert (span["first_at"], span["last_at"], span["events"]) == (
        "2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000005+00:00", 3,
    )

    class TypedAudit(AuditProjection):
        stored = False

    other = EventStore("memory://")
    try:
        for r in typed:
            other.append(r.event.stream_id, [r.event], r.event.version - 1)
        slow = ProjectionRunner(other, [TypedAudit()])
        slow.run_once()
        assert fast.views.dump(AuditProjection.tables) == slow.views.dump(AuditProjection.tables)
    finally:
        other.close()


def sqlite_indexes(c) -> set[str]:
    rows = c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").fetchall()
    return {r["name"] for r in rows}


def indexes_now(runner: ProjectionRunner) -> set[str]:
    with runner.views.transaction(commit=False) as c:
        return sqlite_indexes(c)


AUDIT_INDEXES = {name for name, _, _ in AuditProjection.indexes}


def pages(n: int, size: int) -> list[int]:
    return [size] * (n // size) + ([n % size] if n % size else [])


class Watching(AuditProjection):
    """Notes each batch's size and which secondary indexes exist while it is applied."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, set[str]]] = []

    def apply_batch(self, c, records):
        self.seen.append((len(records), AUDIT_INDEXES & sqlite_indexes(c)))
        super().apply_batch(c, records)


def test_a_bulk_rebuild_drops_the_indexes_while_it_loads_and_makes_them_again(store):
    log = Log(store)
    for i in range(6):
        log.act(i % 2, "step", str(i))
    n = store.max_position()
    incremental = ProjectionRunner(store, [AuditProjection()], batch_size=4)
    incremental.run_once()
    expected = incremental.views.dump(AuditProjection.tables)
    assert AUDIT_INDEXES <= indexes_now(incremental)

    watching = Watching()
    runner = ProjectionRunner(store, [watching], batch_size=2, bulk_batch_size=9, bulk_threshold=10)
    [result] = runner.rebuild("audit")
    assert result.events == n
    assert [size for size, _ in watching.seen] == pages(n, 9)  # bulk batches, not 2
    assert all(found == set() for _, found in watching.seen)  # no secondary index while loading
    assert AUDIT_INDEXES <= indexes_now(runner)
    assert runner.views.dump(AuditProjection.tables) == expected

    # Under the threshold, a rebuild keeps its indexes and its batch size.
    watching = Watching()
    ProjectionRunner(store, [watching], batch_size=16, bulk_threshold=n + 1).rebuild("audit")
    assert [size for size, _ in watching.seen] == pages(n, 16)
    assert all(found == AUDIT_INDEXES for _, found in watching.seen)


def test_indexes_a_crashed_bulk_load_left_dropped_come_back_with_the_next_runner(store):
    log = Log(store)
    for i in range(4):
        log.act(i, "step")

    class Dying(AuditProjection):
        def apply_batch(self, c, records):
            if records[0].position > 10:
                raise Crash("killed")
            super().apply_batch(c, records)

    dying = ProjectionRunner(store, [Dying()], batch_size=2, bulk_batch_size=10, bulk_threshold=0)
    with pytest.raises(Crash):
        dying.rebuild("audit")
    assert dying.views.position("audit") == 10 and not AUDIT_INDEXES & indexes_now(dying)
    runner = ProjectionRunner(store, [AuditProjection()], bulk_threshold=0)
    runner.run_once()
    assert AUDIT_INDEXES <= indexes_now(runner)
    assert runner.views.position("audit") == store.max_position()
    fresh = runner.views.dump(AuditProjection.tables)
    runner.rebuild("audit")
    assert runner.views.dump(AuditProjection.tables) == fresh


def test_bulk_batch_size_must_be_positive(store):
    with pytest.raises(ValueError, match="bulk_batch_size"):
        ProjectionRunner(store, [AuditProjection()], bulk_batch_size=0)
